"""What a newcomer touches first (issue 13): strict JSON on stdout for every exit code, flags that are
validated (limits, --time-limit), `validate` arithmetic that adds up, `enumerate` on a portfolio, and
the Python API's input errors."""

import json
import math
import re
import sys

import pytest
from typer.testing import CliRunner

import planopt
from planopt.cli import app, emit_json, main
from planopt.instance import LIMIT_RANGES, TIME_LIMIT_RANGE_SECONDS, load_instance
from planopt.job.model import PlanModel
from tests.support.common import INSTANCES

runner = CliRunner()
TINY = str(INSTANCES / "tiny.json")
PORTFOLIO = str(INSTANCES / "portfolio-small.json")
LIMIT_FLAGS = {"--budget-usd": "budget_usd", "--deadline-hours": "deadline_hours",
               "--max-forgetting": "max_forgetting_points", "--min-quality": "min_quality"}


def run(*args):
    return runner.invoke(app, [str(a) for a in args])


def strict_json(text: str):
    """Parse exactly one JSON object; Infinity and NaN are not JSON and fail."""
    def refuse(token):
        raise ValueError(f"non-strict JSON constant {token}")
    return json.loads(text, parse_constant=refuse)


def assert_one_line_error(res, *fragments):
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), res.stderr
    for fragment in fragments:
        assert fragment in lines[0]


# --- --json: exactly one strict JSON object on stdout, whatever the exit code ----------

@pytest.mark.parametrize("args, code", [
    (("--min-quality", "99"), 3),                 # infeasible
    (("--budget-usd", "nan"), 2),                 # bad flag value
    (("--time-limit", "-1"), 2),
    ((), 0),
])
def test_json_stdout_is_one_strict_object_for_every_exit_code(args, code):
    res = run("solve", TINY, "--json", "--no-sensitivity", *args)
    assert res.exit_code == code, res.output
    out = strict_json(res.stdout)
    assert out["status"] == {0: "optimal", 2: "error", 3: "infeasible"}[code]
    if code == 2:
        assert out["error"] == res.stderr.strip().removeprefix("error: ")


def test_json_error_object_for_a_missing_file(tmp_path):
    res = run("evaluate", TINY, tmp_path / "nope.json", "--json")
    assert res.exit_code == 2
    assert strict_json(res.stdout) == {"status": "error", "error": f"{tmp_path / 'nope.json'}: file not found"}


def test_json_error_object_for_an_internal_error(monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("boom")
    monkeypatch.setattr("planopt.api.solve_instance", broken)
    res = run("solve", TINY, "--json")
    assert res.exit_code == 1
    assert strict_json(res.stdout) == {"status": "error", "error": "internal error: RuntimeError: boom"}
    assert res.stderr.startswith("internal error: RuntimeError: boom")


@pytest.mark.parametrize("argv, message", [
    (["solve", TINY, "--json", "--objective", "bogus"], "--objective"),
    (["solve", TINY, "--json", "--budget-usd", "lots"], "--budget-usd"),
    (["solve", "--json"], "Missing argument"),
])
def test_json_error_object_for_usage_errors(monkeypatch, capsys, argv, message):
    """Errors the argument parser raises before any command runs go through `main` (the `planopt` script)."""
    monkeypatch.setattr(sys, "argv", ["planopt", *argv])
    with pytest.raises(SystemExit) as exit_:
        main()
    assert exit_.value.code == 2
    captured = capsys.readouterr()
    out = strict_json(captured.out)
    assert out["status"] == "error" and message in out["error"]
    assert len(captured.err.strip().splitlines()) == 1 and message in captured.err


def test_json_exit_codes_pass_through_main(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["planopt", "solve", TINY, "--json", "--no-sensitivity", "--min-quality", "99"])
    with pytest.raises(SystemExit) as exit_:
        main()
    assert exit_.value.code == 3
    assert strict_json(capsys.readouterr().out)["status"] == "infeasible"


def test_emit_json_writes_null_for_infinity_and_nan(capsys):
    emit_json({"gap": math.inf, "bound_usd": -math.inf, "values": [1.5, math.nan], "nested": {"limit": math.inf}})
    assert strict_json(capsys.readouterr().out) == {"gap": None, "bound_usd": None, "values": [1.5, None],
                                                    "nested": {"limit": None}}


def test_the_solver_writes_nothing_to_stdout(capfd):
    """HiGHS warned on stdout about bounds over 1e20 (`--budget-usd 1e308`) when a persistent model was re-solved."""
    pm = PlanModel(load_instance(TINY))
    pm.solve()
    pm.set_limits(budget_usd=1e308)
    assert pm.solve().status == "optimal"
    assert capfd.readouterr().out == ""


# --- limit flags and --time-limit --------------------------------------------------------

@pytest.mark.parametrize("command", ["solve", "enumerate"])
@pytest.mark.parametrize("flag", list(LIMIT_FLAGS))
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e308", "-1e308"])
def test_absurd_limit_flags_are_one_line_exit_2(command, flag, value):
    res = run(command, TINY, flag, value)
    low, high, unit = LIMIT_RANGES[LIMIT_FLAGS[flag]]
    assert_one_line_error(res, flag, f"from {low:g} to {high:g}")


@pytest.mark.parametrize("flag", ["--budget-usd", "--deadline-hours", "--max-forgetting"])
def test_negative_limits_are_refused(flag):
    assert_one_line_error(run("solve", TINY, flag, "-1"), flag)


@pytest.mark.parametrize("flag", list(LIMIT_FLAGS))
def test_limits_at_the_ends_of_their_range_are_accepted(flag):
    low, high, _ = LIMIT_RANGES[LIMIT_FLAGS[flag]]
    for value in (low, high):
        assert run("enumerate", TINY, flag, repr(value)).exit_code in (0, 3)


@pytest.mark.parametrize("file", [TINY, PORTFOLIO])
@pytest.mark.parametrize("value", ["-1", "0", "1e-9", "nan", "inf"])
def test_bad_time_limits_are_one_line_exit_2(file, value):
    assert_one_line_error(run("solve", file, "--time-limit", value), "--time-limit", "seconds")


def test_the_smallest_time_limit_is_accepted():
    res = run("solve", TINY, "--json", "--no-sensitivity", "--time-limit", repr(TIME_LIMIT_RANGE_SECONDS[0]))
    assert res.exit_code in (0, 4), res.output


# --- validate, enumerate --------------------------------------------------------------------

@pytest.mark.parametrize("name", ["tiny.json", "qwen3-8b-math.json"])
def test_validate_arithmetic_adds_up(name):
    res = run("validate", INSTANCES / name)
    assert res.exit_code == 0, res.output
    products = re.findall(r"([\d,]+) (?:recipes )?× ([\d,]+) (?:hardware options )?× ([\d,]+)(?: checkpoint intervals)? = ([\d,]+)",
                          res.stdout)
    assert products, res.stdout

    def number(text):
        return int(text.replace(",", ""))
    for r, h, i, total in products:
        assert number(r) * number(h) * number(i) == number(total), res.stdout
    pm = PlanModel(load_instance(INSTANCES / name))
    offered = tuple(len(options) for options in pm.evaluator.space())
    assert tuple(number(x) for x in products[0][:3]) == offered
    if len(products) > 1:
        kept = tuple(number(x) for x in products[1][:3])
        assert kept == (len(pm.space.recipes), len(pm.space.hardware), len(pm.space.intervals))
        # the reasons given account for every recipe and hardware option left out
        reasons = re.findall(r"(recipes|hardware)[^:;()]*: ([\d,]+)", res.stdout.split("the model keeps", 1)[1])
        for kind, position in (("recipes", 0), ("hardware", 1)):
            assert sum(number(n) for k, n in reasons if k == kind) == offered[position] - kept[position], res.stdout


def test_enumerate_on_a_portfolio_says_it_plans_single_jobs():
    assert_one_line_error(run("enumerate", PORTFOLIO), "enumerate plans single jobs", "kind")


# --- the Python API ---------------------------------------------------------------------------

def test_api_evaluate_refuses_a_plan_of_another_instance_with_an_input_error():
    plan = planopt.solve(INSTANCES / "qwen3-8b-math.json", sensitivity=False).plan
    with pytest.raises(planopt.InputError, match=r"tiny\.json: plan\.\w+"):
        planopt.evaluate(TINY, plan)


def test_api_solve_refuses_absurd_limits_and_time_limits():
    with pytest.raises(planopt.InputError, match="budget_usd"):
        planopt.solve(TINY, budget_usd=math.nan)
    with pytest.raises(planopt.InputError, match="time_limit"):
        planopt.solve(TINY, time_limit=0)
