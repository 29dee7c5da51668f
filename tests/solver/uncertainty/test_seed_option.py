"""A scenario draw's seed is a whole number from 0 on every command that takes ``--seed``.

numpy's generators refuse a negative seed with a ValueError, which the CLI printed
as an internal error (exit 1); ``risk.check_seed`` refuses it first, in one line
naming the flag (exit 2). The service's fields go through the same check
(``tests/solver/service/test_service_portfolio.py``).
"""

import pytest
from typer.testing import CliRunner

from planopt.cli import app
from planopt.errors import InputError
from planopt.uncertainty.risk import check_seed
from tests.support.common import INSTANCES

TINY, PORTFOLIO = str(INSTANCES / "tiny.json"), str(INSTANCES / "portfolio-small.json")


@pytest.mark.parametrize("args", [
    ["solve", TINY, "--scenarios", "10"],
    ["solve", TINY, "--confidence", "0.5"],
    ["solve", PORTFOLIO, "--scenarios", "10"],
    ["solve", PORTFOLIO, "--confidence", "0.5"],
    ["evaluate", TINY, TINY],
    ["frontier", TINY, "--x", "cost_usd", "--y", "probability"],
    ["sweep", TINY, "--confidence", "0.5", "--serial"],
], ids=lambda a: " ".join(x.rsplit("/", 1)[-1] for x in a))
def test_a_negative_seed_is_one_line_naming_the_flag(args):
    result = CliRunner().invoke(app, [*args, "--seed", "-1"])
    assert result.exit_code == 2, (result.exit_code, result.output)
    assert result.stderr.strip() == "error: --seed: expected a whole number from 0, got -1"


@pytest.mark.parametrize("value", [-1, True, 1.5, "3", None])
def test_check_seed_refuses_what_numpy_cannot_seed_with(value):
    with pytest.raises(InputError, match=r"^seed: expected a whole number from 0"):
        check_seed(value, "seed")


def test_check_seed_takes_zero_and_large_whole_numbers():
    assert check_seed(0) == 0 and check_seed(2**40) == 2**40
