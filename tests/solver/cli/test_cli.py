"""The CLI as a user meets it: exit codes, JSON shapes, one-line errors."""

import json

import pytest
from typer.testing import CliRunner

from planopt.cli import app
from tests.support.common import INSTANCES

runner = CliRunner()
TINY = str(INSTANCES / "tiny.json")


def run(*args):
    return runner.invoke(app, [str(a) for a in args])


def test_solve_json_has_the_promised_keys():
    res = run("solve", TINY, "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["status"] == "optimal"
    assert {"status", "plan", "metrics", "cost_breakdown_usd", "hours_breakdown", "gap"} <= set(out)
    assert {"cost_usd", "wall_hours", "quality", "forgetting_points"} <= set(out["metrics"])
    assert out["metrics"]["cost_usd"] == pytest.approx(sum(out["cost_breakdown_usd"].values()))
    assert out["metrics"]["wall_hours"] == pytest.approx(sum(out["hours_breakdown"].values()))


def test_solve_text_names_plan_limits_and_breakdowns():
    res = run("solve", TINY)
    assert res.exit_code == 0
    for heading in ("Plan", "Results", "Limits", "Cost breakdown", "Time breakdown"):
        assert heading in res.stdout


def test_evaluate_reproduces_solve_metrics(tmp_path):
    out = json.loads(run("solve", TINY, "--json").stdout)
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps(out["plan"]))
    res = run("evaluate", TINY, plan_file, "--json")
    assert res.exit_code == 0, res.output
    ev = json.loads(res.stdout)
    for key in ("cost_usd", "wall_hours", "quality", "forgetting_points"):
        assert ev["metrics"][key] == pytest.approx(out["metrics"][key], rel=1e-9)
    # the whole `solve --json` output is accepted too
    whole = tmp_path / "whole.json"
    whole.write_text(json.dumps(out))
    assert run("evaluate", TINY, whole, "--json").exit_code == 0


def test_enumerate_agrees_with_solve_and_lists_all_plans():
    solved = json.loads(run("solve", TINY, "--json").stdout)
    enum = run("enumerate", TINY, "--json")
    assert enum.exit_code == 0
    assert json.loads(enum.stdout)["metrics"]["cost_usd"] == pytest.approx(solved["metrics"]["cost_usd"], rel=1e-6)
    listing = json.loads(run("enumerate", TINY, "--all", "--json").stdout)
    feasible = [p for p in listing["plans"] if p["feasible"]]
    assert len(listing["plans"]) > len(feasible) > 0
    assert min(p["metrics"]["cost_usd"] for p in feasible) == pytest.approx(solved["metrics"]["cost_usd"], rel=1e-6)


def test_overrides_change_the_answer_and_infeasible_exits_3():
    res = run("solve", TINY, "--json", "--min-quality", "99")
    assert res.exit_code == 3
    out = json.loads(res.stdout)
    assert out["status"] == "infeasible" and out["plan"] is None
    assert run("enumerate", TINY, "--min-quality", "99").exit_code == 3


def test_objective_override():
    cheap = json.loads(run("solve", TINY, "--json").stdout)
    best = json.loads(run("solve", TINY, "--json", "--objective", "quality").stdout)
    assert best["metrics"]["quality"] >= cheap["metrics"]["quality"]
    assert best["metrics"]["cost_usd"] >= cheap["metrics"]["cost_usd"]


def test_time_limit_flag_is_accepted():
    res = run("solve", TINY, "--json", "--time-limit", "30")
    assert res.exit_code == 0


def test_validate_and_schema():
    res = run("validate", TINY)
    assert res.exit_code == 0 and "valid" in res.stdout
    res = run("validate", INSTANCES / "portfolio-small.json")
    assert res.exit_code == 0 and "valid portfolio" in res.stdout
    schema = json.loads(run("schema").stdout)
    assert "student" in schema["properties"] and "hardware" in schema["properties"]
    portfolio = json.loads(run("schema", "--kind", "portfolio").stdout)
    assert "jobs" in portfolio["properties"]
    assert run("schema", "--kind", "fleet").exit_code == 2


def test_the_plan_by_plan_oracle_refuses_large_instances_and_the_array_oracle_solves_them(tmp_path):
    data = json.loads((INSTANCES / "qwen3-8b-math.json").read_text())
    data["checkpointing"]["interval_minutes_options"] = list(range(1, 601))
    big = tmp_path / "big.json"
    big.write_text(json.dumps(data))
    res = run("enumerate", big, "--by-plan")
    assert res.exit_code == 2
    assert "over the oracle's limit" in res.output
    # 11 million plans: the default (array) oracle enumerates them and agrees with the MIP
    fast = run("enumerate", big, "--json")
    assert fast.exit_code == 0, fast.output
    mip = run("solve", big, "--json", "--no-sensitivity")
    assert json.loads(fast.stdout)["plan"] == json.loads(mip.stdout)["plan"]


def _bad(tmp_path, mutate):
    data = json.loads((INSTANCES / "tiny.json").read_text())
    mutate(data)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("mutate, expected", [
    (lambda d: d["task"].pop("baseline_score"), "task.baseline_score: required field is missing"),
    (lambda d: d["task"].update(baseline_score="high"), "task.baseline_score"),
    (lambda d: d["constraints"].update(budget_usd=-5), "constraints.budget_usd"),
    (lambda d: d["hardware"]["gpus"][0].update(name="H10O"), "did you mean 'H100-SXM'"),
    (lambda d: d["student"].update(preset="Qwen3-8C"), "did you mean 'Qwen3-8B'"),
    (lambda d: d["task"].update(baseline_scor=3), "task.baseline_scor: unknown field"),
    (lambda d: d["hardware"].update(pricing="spot", offers="reference", gpus=[{"name": "L40S", "counts": [8]}]),
     "hardware.gpus.0.price_usd_per_gpu_hour: the catalog has no spot price for L40S"),
    (lambda d: d["training"]["methods"].update(opd=d["training"]["methods"]["opd"]) or d.pop("teacher"),
     "training.methods has 'opd' but teacher is missing"),
])
def test_bad_input_is_one_line_exit_2(tmp_path, mutate, expected):
    res = run("solve", _bad(tmp_path, mutate))
    assert res.exit_code == 2
    assert expected in res.output
    assert "Traceback" not in res.output
    assert len(res.output.strip().splitlines()) == 1


def test_missing_file_and_non_json(tmp_path):
    res = run("solve", tmp_path / "nope.json")
    assert res.exit_code == 2 and "file not found" in res.output
    junk = tmp_path / "junk.json"
    junk.write_text("{not json")
    res = run("solve", junk)
    assert res.exit_code == 2 and "not valid JSON" in res.output and len(res.output.strip().splitlines()) == 1


def test_bad_plan_names_the_field(tmp_path):
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"method": "rl", "gpu": "H100-SXM", "gpu_count": 3, "steps": 100,
                                "samples_per_prompt": [8, 8, 8], "teacher_precision": None,
                                "checkpoint_interval_minutes": 60, "external_data_share": None}))
    res = run("evaluate", TINY, plan)
    assert res.exit_code == 2 and "plan.gpu_count" in res.output


def test_plot_paths_are_checked_before_solving(tmp_path):
    res = run("solve", INSTANCES / "portfolio-small.json", "--plot", tmp_path / "chart.txt")
    assert res.exit_code == 2 and "--plot: expected a .png" in res.output
    res = run("solve", INSTANCES / "portfolio-small.json", "--plot", tmp_path / "missing" / "chart.png")
    assert res.exit_code == 2 and "does not exist" in res.output
    res = run("solve", TINY, "--plot", tmp_path / "chart.png")
    assert res.exit_code == 2 and "portfolio" in res.output


def test_negative_budget_flag_is_rejected():
    res = run("solve", TINY, "--budget-usd", "-1")
    assert res.exit_code == 2 and "--budget-usd" in res.output


def test_an_instance_whose_gpus_cannot_be_bought_is_infeasible_and_says_why(tmp_path):
    """The catalog sells L40S at no spot tier: nothing can be bought, exit 3, and the report says so."""
    res = run("solve", _bad(tmp_path, lambda d: d["hardware"].update(pricing="spot", gpus=[{"name": "L40S", "counts": [8]}])))
    assert res.exit_code == 3
    assert "no (GPU, count) option of the instance can be bought: hardware.gpus.0: L40S × 8 (no spot offer" in res.output


def test_a_plan_of_a_candidate_student_reports_its_spend(tmp_path):
    """The spend timeline of a plan that trains a candidate (not the instance's own student) once crashed solve
    (exit 1: the candidate's evaluator was asked for the candidate again); its lines must add up to its cost."""
    import json
    data = json.loads((INSTANCES / "math-8b-or-32b.json").read_text())
    data["candidate_students"] = [{"name": "small", "architecture": {"preset": "Qwen3-0.6B"},
                                   "baseline_score": 61.8, "general_score_baseline": 88.0}]
    path = tmp_path / "small-candidate.json"
    path.write_text(json.dumps(data))
    res = run("solve", str(path), "--json", "--no-sensitivity")
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["plan"]["student"] == "small"
    assert abs(out["spend"]["total_usd"] - out["metrics"]["cost_usd"]) <= 1e-6 * out["metrics"]["cost_usd"]
