"""Every option of `planopt solve portfolio.json` is honoured or refused (issue 11 item 5)."""

from __future__ import annotations

import json
import math
import time

import pytest
from typer.testing import CliRunner

from planopt.cli import app
from planopt.job.budget import TimeBudget
from planopt.portfolio.solve import PortfolioModel, PortfolioResult, load_portfolio, solve_portfolio

from tests.support.common import INSTANCES

# integration tests (real servers, clusters or long MIPs): run by .ci/run with `pytest -m slow`
pytestmark = pytest.mark.slow

runner = CliRunner()
SMALL = INSTANCES / "portfolio-small.json"


def run(*args):
    return runner.invoke(app, [str(a) for a in args])


def one_line_error(res, flag: str) -> None:
    assert res.exit_code == 2, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and flag in lines[0], res.output


@pytest.fixture(scope="module")
def optimum():
    res = solve_portfolio(SMALL)
    assert res.status == "optimal"
    return res


@pytest.mark.parametrize("args, flag", [
    (("--objective", "quality"), "--objective"),
    (("--objective", "time"), "--objective"),
    (("--deadline-hours", "100"), "--deadline-hours"),
    (("--min-quality", "50"), "--min-quality"),
    (("--max-forgetting", "2"), "--max-forgetting"),
    (("--budget-usd", "nan"), "--budget-usd"),
    (("--budget-usd", "-5"), "--budget-usd"),
    (("--time-limit", "-1"), "--time-limit"),
    (("--time-limit", "nan"), "--time-limit"),
    (("--time-limit", "0"), "--time-limit"),
])
def test_options_a_portfolio_does_not_take_are_refused_in_one_line(args, flag):
    one_line_error(run("solve", SMALL, *args), flag)


def test_objective_cost_is_the_portfolio_objective(optimum):
    res = run("solve", SMALL, "--objective", "cost", "--json")
    assert res.exit_code == 0, res.output
    assert math.isclose(json.loads(res.stdout)["cost_usd"], optimum.cost_usd, rel_tol=1e-6)


def test_a_budget_below_the_least_cost_is_infeasible_and_says_what_would_do(optimum):
    res = run("solve", SMALL, "--budget-usd", "100", "--json")
    assert res.exit_code == 3, res.output
    out = json.loads(res.stdout)
    assert out["status"] == "infeasible" and "budget_usd" in out["message"]
    assert f"${math.ceil(optimum.cost_usd):,.0f}" in out["message"], out["message"]   # the budget that would do


def test_a_budget_is_a_cap_on_the_total(optimum):
    above = solve_portfolio(SMALL, budget_usd=optimum.cost_usd * 1.001)
    assert above.status == "optimal" and math.isclose(above.cost_usd, optimum.cost_usd, rel_tol=1e-6)
    below = solve_portfolio(SMALL, budget_usd=optimum.cost_usd * 0.999)
    assert below.status == "infeasible" and "budget_usd" in below.message


def test_the_portfolio_file_budget_is_honoured(optimum, tmp_path):
    p = json.loads(SMALL.read_text())
    p["budget_usd"] = round(optimum.cost_usd * 0.99)
    f = tmp_path / "p.json"
    f.write_text(json.dumps(p))
    assert solve_portfolio(f).status == "infeasible"


def test_the_warm_start_stops_at_the_time_limit():
    """Past the time limit the warm start adds no floor and no start."""
    pm = PortfolioModel(SMALL)
    pm.warm_start(floors=True, starts=True, budget=TimeBudget(end=time.perf_counter()))
    assert not hasattr(pm.model, "JSHARE") and pm.solver.pending is None and not pm.plan_fixes
    fresh = PortfolioModel(SMALL)
    fresh.warm_start(floors=True, starts=True)   # without a time limit every job gets both
    assert len(fresh.model.JSHARE) == len(fresh.data.instances) and len(fresh.solver.pending[0]) > 0


def test_json_never_holds_infinity_or_nan():
    res = PortfolioResult("time_limit", gap=math.inf, bound_usd=-math.inf, buckets=2, bucket_hours=24.0)
    out = res.to_dict()
    text = json.dumps(out, allow_nan=False)   # raises on Infinity or NaN
    assert out["gap"] is None and out["bound_usd"] is None and out["bound_missing_reason"]
    assert "Infinity" not in text and "NaN" not in text


def test_a_job_runs_only_on_the_gpu_types_it_lists(optimum):
    data = load_portfolio(SMALL)
    listed = {name: {o["name"] for o in job["instance"]["hardware"]["gpus"]}
              for name, job in zip(data.names, json.loads(SMALL.read_text())["jobs"])}
    for job in optimum.jobs:
        assert job.plan.gpu in listed[job.name], (job.name, job.plan.gpu)
    assert {job.plan.gpu for job in optimum.jobs} != {optimum.jobs[0].plan.gpu}, "all jobs on one type: the test checks little"


def test_a_job_listing_no_portfolio_gpu_type_is_refused(tmp_path):
    p = json.loads(SMALL.read_text())
    p["jobs"][0]["instance"]["hardware"]["gpus"] = [{"name": "B200", "counts": [8]}]
    f = tmp_path / "p.json"
    f.write_text(json.dumps(p))
    one_line_error(run("solve", f), "jobs.0.instance.hardware.gpus")


def test_an_infeasible_deadline_is_explained_with_one_that_would_do(tmp_path):
    import re
    p = json.loads(SMALL.read_text())
    p["jobs"][0]["deadline_bucket"] = 3   # its labels arrive after 6.4 days (24-hour buckets)
    res = solve_portfolio(p)
    assert res.status == "infeasible"
    found = re.search(r"qwen3-0.6b-sft-new-labels \(deadline_bucket 3: (\d+) would do\)", res.message)
    assert found, res.message
    later = int(found.group(1))
    p["jobs"][0]["deadline_bucket"] = later
    assert solve_portfolio(p).status == "optimal"          # the stated deadline does let it run
    p["jobs"][0]["deadline_bucket"] = later - 1
    assert solve_portfolio(p).status == "infeasible"       # and it is the earliest


def test_a_job_over_the_model_cap_is_refused_by_name_before_the_portfolio_is_built(tmp_path):
    """issue 13 item 26 for portfolios: `solve` refuses in one line, naming the job and the option."""
    data = json.loads((INSTANCES / "portfolio-small.json").read_text())
    job = data["jobs"][0]
    job["instance"]["hardware"]["gpus"][0]["counts"] = list(range(1, 20_001))
    path = tmp_path / "huge.json"
    path.write_text(json.dumps(data))
    res = CliRunner().invoke(app, ["solve", str(path)])
    assert res.exit_code == 2, res.output
    line = res.output.strip()
    assert line.count("\n") == 0 and f"job {job['name']!r}" in line and "counts" in line


@pytest.mark.parametrize("edit, field, args", [
    (lambda d: d["horizon"].update(bucket_hours=1e308), "horizon.bucket_hours", ()),
    (lambda d: d["horizon"].update(buckets=1000, bucket_hours=168), "bucket_hours", ()),
    (lambda d: [g.update(spot_preemptions_per_gpu_hour=1e6) for g in d["gpus"]], "spot_preemptions_per_gpu_hour", ("--scenarios", "20")),
    (lambda d: d["jobs"][0].update(instance=json.dumps({"name": "x" * 5000})), "jobs.0.instance", ()),
])
def test_a_portfolio_no_schedule_can_have_is_one_line_exit_2(tmp_path, edit, field, args):
    """Issue 28 item 6: a bucket of 1e308 h (HiGHS errors on stdout, then an internal error), a spot GPU preempted a
    million times an hour (an IndexError under --scenarios) and a job's instance given as JSON text (a file name too
    long) are each one line naming the field, exit 2, and --json prints one error object."""
    from tests.support.common import INSTANCES
    data = json.loads((INSTANCES / "portfolio-small.json").read_text())
    edit(data)
    path = tmp_path / "p.json"
    path.write_text(json.dumps(data))
    res = CliRunner().invoke(app, ["solve", str(path), "--json", *args])
    assert res.exit_code == 2, res.output
    assert field in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.output
    assert json.loads(res.stdout)["status"] == "error" and field in json.loads(res.stdout)["error"]
