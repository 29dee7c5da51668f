"""What a person reads: units in the Limits table, and the price a plan is billed at (issue 13, items 4 and 9)."""

import json

from typer.testing import CliRunner

from planopt.cli import app

from conftest import INSTANCES


def solve_text(path, *args):
    res = CliRunner().invoke(app, ["solve", str(path), *args])
    assert res.exit_code == 0, res.stderr
    return res.stdout


def test_limits_table_reads_in_dollars_hours_and_points():
    out = solve_text(INSTANCES / "qwen3-8b-math.json")
    limits = out[out.index("Limits"):out.index("Cost breakdown")]
    assert "$60,000" in limits and "168.0 h" in limits and "3.00 pts" in limits and "70.00 pts" in limits
    assert "e+0" not in limits  # no scientific notation where a person reads


def test_report_names_the_price_and_where_it_comes_from(tmp_path):
    out = solve_text(INSTANCES / "qwen3-8b-math.json")
    assert "GPU price            $1.50 per GPU-hour (catalog, on-demand" in out
    data = json.loads((INSTANCES / "tiny.json").read_text())
    data["hardware"]["gpus"][0]["price_usd_per_gpu_hour"] = 2.5
    path = tmp_path / "priced.json"
    path.write_text(json.dumps(data))
    out = solve_text(path)
    assert "per GPU-hour (" in out


def test_a_plan_that_does_not_fit_reports_no_work(tmp_path):
    """Issue 13 item 8: a 1 x L4-style misfit showed 0 GPU-hours and a cost; it is reported as not fitting."""
    from planopt.oracle import all_plans
    from planopt.instance import load_instance
    inst = load_instance(INSTANCES / "tiny.json")
    misfit = next(p.plan for p in all_plans(inst) if not p.metrics.fits_memory)
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"plan": misfit.to_dict()}))
    res = CliRunner().invoke(app, ["evaluate", str(INSTANCES / "tiny.json"), str(plan), "--json"])
    out = json.loads(res.stdout)
    assert out["fits_memory"] is False and out["metrics"] is None and out["feasible"] is False
    assert out["violations"][0].startswith("memory:")
    text = CliRunner().invoke(app, ["evaluate", str(INSTANCES / "tiny.json"), str(plan)]).stdout
    assert "Does not fit in memory" in text and "Cost breakdown" not in text
    listing = CliRunner().invoke(app, ["enumerate", str(INSTANCES / "tiny.json"), "--all", "--json"]).stdout
    rows = json.loads(listing)["plans"]
    assert any(r["fits_memory"] is False and r["metrics"] is None for r in rows)
    assert all(r["metrics"] is not None for r in rows if r["fits_memory"])
