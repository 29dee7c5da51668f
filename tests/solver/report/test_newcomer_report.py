"""What a person reads: units in the Limits table, and the price a plan is billed at (issue 13, items 4 and 9)."""

import json

from typer.testing import CliRunner

from planopt.cli import app

from tests.support.common import INSTANCES


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
    # the plan's 32 x MI300X are bought from the catalog's one on-demand MI300X offer, named with its date
    from planopt.models.catalog.prices import load_prices
    row = next(r for r in load_prices() if r.gpu == "MI300X" and r.tier == "on_demand")
    assert (f"GPU price            ${row.usd_per_gpu_hour:.2f} per GPU-hour ({row.provider} {row.region}, on-demand, "
            f"as of {row.as_of})") in out
    data = json.loads((INSTANCES / "tiny.json").read_text())
    data["hardware"]["gpus"][0]["price_usd_per_gpu_hour"] = 2.5
    path = tmp_path / "priced.json"
    path.write_text(json.dumps(data))
    out = solve_text(path)
    assert "per GPU-hour (" in out


def test_a_plan_that_does_not_fit_reports_no_work(tmp_path):
    """Issue 13 item 8: a 1 x L4-style misfit showed 0 GPU-hours and a cost; it is reported as not fitting."""
    from planopt.oracles.by_plan import all_plans
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


def test_sweep_table_keeps_whole_numbers_whole_when_a_row_is_infeasible(tmp_path):
    """Issue 13 item 5: gpu_count 32 became 32.0 in CSV/Parquet once any row had no plan."""
    import pandas as pd
    out = tmp_path / "sweep.csv"
    res = CliRunner().invoke(app, ["sweep", str(INSTANCES / "tiny.json"), "--budget-usd", "100,800,2000", "--out", str(out)])
    assert res.exit_code in (0, 3), res.stderr
    frame = pd.read_csv(out)
    assert frame["status"].eq("infeasible").any() and frame["status"].eq("optimal").any()
    text = out.read_text()
    assert ",8," in text and ",8.0," not in text  # 8 x H100 stays 8
    parquet = tmp_path / "sweep.parquet"
    CliRunner().invoke(app, ["sweep", str(INSTANCES / "tiny.json"), "--budget-usd", "100,800", "--out", str(parquet)])
    assert str(pd.read_parquet(parquet)["gpu_count"].dtype) == "Int64"


def test_plots_by_extension_svg_and_pdf(tmp_path):
    """Issue 13 item 13: plots are PNG, SVG or PDF by the file name."""
    for suffix in ("svg", "pdf"):
        path = tmp_path / f"frontier.{suffix}"
        res = CliRunner().invoke(app, ["frontier", str(INSTANCES / "tiny.json"), "--x", "cost_usd", "--y", "quality",
                                       "--plot", str(path)])
        assert res.exit_code == 0, res.stderr
        head = path.read_bytes()[:5]
        assert head == (b"<?xml" if suffix == "svg" else b"%PDF-")
    bad = CliRunner().invoke(app, ["frontier", str(INSTANCES / "tiny.json"), "--plot", str(tmp_path / "f.gif")])
    assert bad.exit_code == 2 and ".png, .svg or .pdf" in bad.stderr


def test_sweep_time_limit_nan_is_refused():
    res = CliRunner().invoke(app, ["sweep", str(INSTANCES / "tiny.json"), "--budget-usd", "800,900", "--time-limit", "nan"])
    assert res.exit_code == 2 and "--time-limit" in res.stderr


def test_frontier_takes_solve_limit_overrides_and_names_the_option_that_caps_it():
    """Issue 13 item 6: qwen3-8b-math's frontier had one point with no word why."""
    shipped = json.loads(CliRunner().invoke(app, ["frontier", str(INSTANCES / "qwen3-8b-math.json"), "--json"]).stdout)
    assert len(shipped["points"]) == 1
    assert any("steps_options" in c for c in shipped["capped_by_options"])
    looser = CliRunner().invoke(app, ["frontier", str(INSTANCES / "qwen3-8b-math.json"), "--min-quality", "60", "--json"])
    assert looser.exit_code == 0
    assert len(json.loads(looser.stdout)["points"]) > 5
    text = CliRunner().invoke(app, ["frontier", str(INSTANCES / "qwen3-8b-math.json")]).stdout
    assert "the option grid, not cost, ends the frontier there" in text
    bad = CliRunner().invoke(app, ["frontier", str(INSTANCES / "qwen3-8b-math.json"), "--budget-usd", "-5"])
    assert bad.exit_code == 2 and "--budget-usd" in bad.stderr


def test_frontier_confidence_is_refused_with_the_way_to_get_it():
    res = CliRunner().invoke(app, ["frontier", str(INSTANCES / "tiny.json"), "--confidence", "0.9"])
    assert res.exit_code == 2 and "--y probability" in res.stderr and res.stderr.count("\n") == 1


def test_frontier_points_and_sweep_rows_say_how_uncertain_they_are():
    """Estimates come with their uncertainty: every frontier point and sweep row carries its risk."""
    from planopt.instance import load_instance
    from planopt.uncertainty.risk import REPORT_SCENARIOS, plan_risk
    from planopt.models.schema.plan import read_plan
    front = json.loads(CliRunner().invoke(app, ["frontier", str(INSTANCES / "tiny.json"), "--json"]).stdout)
    inst = load_instance(INSTANCES / "tiny.json")
    for point in front["points"]:
        expected = plan_risk(inst, read_plan(point["plan"]), REPORT_SCENARIOS).share()
        assert point["risk"]["scenarios"] == REPORT_SCENARIOS
        assert point["risk"]["share_meeting_all_limits"] == expected
    sweep = json.loads(CliRunner().invoke(app, ["sweep", str(INSTANCES / "tiny.json"), "--budget-usd", "600,800,2000",
                                                "--json"]).stdout)
    shares = {row["budget_usd"]: row["risk"] and row["risk"]["share_meeting_all_limits"] for row in sweep["rows"]}
    assert shares[600] is None                     # infeasible: no plan, no risk
    assert shares[800] < shares[2000]              # the same plan breaks a tight budget in more scenarios
    text = CliRunner().invoke(app, ["sweep", str(INSTANCES / "tiny.json"), "--budget-usd", "800,2000"]).stdout
    assert "limits met" in text and "point estimates" in text
