"""One rule for ``--budget-usd`` across single jobs and portfolios (issue 23 item 6): the single
job's ``instance.check_limit`` with the schema's bound (``MAX_MAGNITUDE``), used by
``portfolio.loading.check_budget`` too. Before, ``--budget-usd 5e12`` was refused for a job and
accepted for a portfolio."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from planopt.cli import app
from planopt.errors import InputError
from planopt.instance import check_limit
from planopt.models.schema.instance import MAX_MAGNITUDE, Constraints
from planopt.portfolio.loading import check_budget
from planopt.portfolio.options import FIELD_NAMES, check_portfolio_options

from tests.support.common import INSTANCES

TINY = INSTANCES / "tiny.json"
SMALL = INSTANCES / "portfolio-small.json"
# Values no budget override may take: over the schema's bound, negative, not finite.
BAD_BUDGETS = ["5e12", "1.000001e12", "-1", "nan", "inf"]
runner = CliRunner()


def run(*args):
    return runner.invoke(app, [str(a) for a in args])


@pytest.mark.parametrize("value", BAD_BUDGETS)
def test_a_budget_flag_is_refused_alike_for_a_job_and_a_portfolio(value):
    """Exit 2 and the same one-line error naming the flag, before any solve; with ``--json`` the
    same error object."""
    outputs = []
    for path in (TINY, SMALL):
        res = run("solve", path, "--budget-usd", value)
        assert res.exit_code == 2, res.output
        lines = res.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: --budget-usd: "), res.output
        outputs.append(lines[0])
        res = run("solve", path, "--budget-usd", value, "--json")
        assert res.exit_code == 2, res.output
        outputs.append(json.loads(res.stdout))
    assert outputs[0] == outputs[2] and outputs[1] == outputs[3]
    assert outputs[1]["status"] == "error" and outputs[1]["error"].startswith("--budget-usd: ")


def test_the_largest_budget_is_the_schemas_for_jobs_and_portfolios():
    """``MAX_MAGNITUDE`` is accepted by the schema, the single job's check and the portfolio's;
    just above it all three refuse, the two checks with the same message."""
    assert Constraints(budget_usd=MAX_MAGNITUDE).budget_usd == MAX_MAGNITUDE
    assert check_budget(MAX_MAGNITUDE) == check_limit("budget_usd", MAX_MAGNITUDE, "--budget-usd") == MAX_MAGNITUDE
    over = MAX_MAGNITUDE * (1 + 1e-6)
    with pytest.raises(ValidationError):
        Constraints(budget_usd=over)
    messages = []
    for check in (check_budget, lambda v, label: check_limit("budget_usd", v, label)):
        with pytest.raises(InputError) as err:
            check(over, "budget_usd")
        messages.append(str(err.value))
    assert messages[0] == messages[1] and messages[0].startswith("budget_usd: ")


def test_the_service_field_takes_the_same_rule():
    """The service's portfolio options (``budget_usd`` field) refuse what the CLI flag refuses."""
    with pytest.raises(InputError, match=r"^budget_usd: expected a finite number from 0 to 1e\+12"):
        check_portfolio_options(SMALL, names=FIELD_NAMES, budget_usd=5e12)
    assert check_portfolio_options(SMALL, names=FIELD_NAMES, budget_usd=1e12).budget_usd == 1e12
