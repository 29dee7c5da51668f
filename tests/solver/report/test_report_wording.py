"""What the solve report says a newcomer might misread (issue 25 item 7): the objective a chance-constrained
solve takes over its scenarios (items 8), and a binding limit whose one-step relaxation buys nothing (item 9)."""

from types import SimpleNamespace

from typer.testing import CliRunner

from planopt.cli import app
from planopt.report.text import limit_rows, objective_text
from tests.support.common import INSTANCES

TINY = str(INSTANCES / "tiny.json")


def header(*args) -> str:
    """The first line of ``planopt solve`` on ``args``."""
    res = CliRunner().invoke(app, ["solve", *map(str, args)])
    assert res.exit_code in (0, 3), res.output
    return res.stdout.splitlines()[0]


# item 8: the header names CVaR under --cvar, the expected value under --confidence alone

def test_cvar_header_says_cvar_not_expected():
    head = header(TINY, "--confidence", "0.9", "--cvar", "0.8", "--scenarios", "50", "--no-sensitivity")
    assert "objective: least CVaR at 0.8 of cost" in head and "expected" not in head
    infeasible = header(TINY, "--confidence", "0.99", "--cvar", "0.8", "--scenarios", "50", "--no-sensitivity")
    assert "infeasible" in infeasible and "CVaR at 0.8" in infeasible


def test_confidence_header_says_expected_and_a_point_solve_says_neither():
    assert header(TINY, "--confidence", "0.5", "--scenarios", "50", "--no-sensitivity").endswith("objective: least expected cost")
    assert header(TINY, "--no-sensitivity").endswith("objective: least cost")


def test_objective_text_of_each_measure():
    result = SimpleNamespace(objective="quality", risk={"objective_measure": "expected"})
    assert objective_text(result) == "most expected quality"
    result = SimpleNamespace(objective="cost", risk={"objective_measure": "cvar_0.95"})
    assert objective_text(result) == "least CVaR at 0.95 of cost (the mean of its worst 5% of scenarios)"
    assert objective_text(SimpleNamespace(objective="time", risk=None)) == "least time"


# item 9: a binding limit whose one-step relaxation buys nothing says so, in words

def limits_section(text: str) -> str:
    """The Limits table of a solve report."""
    return text[text.index("Limits"):text.index("Cost breakdown")]


def test_a_binding_limit_that_one_step_does_not_help_says_so():
    res = CliRunner().invoke(app, ["solve", TINY, "--json"])
    rows = {r["constraint"]: r for r in __import__("json").loads(res.stdout)["binding"]}
    quality = rows["min_quality"]
    assert quality["binding"] and not quality["improvement"]   # tiny.json: binding, and 37 points buy nothing
    limits = limits_section(CliRunner().invoke(app, ["solve", TINY]).stdout)
    line = next(line for line in limits.splitlines() if "min_quality" in line)
    assert "yes" in line and "to 37.00 pts buys nothing: a better plan needs a larger relaxation" in line
    assert "no better plan" not in limits


def test_relaxation_wording_of_each_case():
    row = {"constraint": "budget_usd", "limit": 1000.0, "plan_value": 1000.0, "binding": True, "relaxed_to": 1100.0}
    assert "to $1,100: better by $55.00" in limit_rows([{**row, "objective_after": 945.0, "improvement": 55.0}])
    assert "to $1,100 buys nothing" in limit_rows([{**row, "objective_after": 1000.0, "improvement": 0.0}])
    assert "to $1,100: not re-solved" in limit_rows([{**row, "objective_after": None, "improvement": None}])
    free = limit_rows([{"constraint": "budget_usd", "limit": 1000.0, "plan_value": 500.0, "binding": False}])
    assert "buys" not in free and "better" not in free
