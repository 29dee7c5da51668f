"""Portfolio and procurement: the MIP against a brute-force oracle, the CLI, the API."""

from __future__ import annotations

import json

import pyomo.environ as pyo
import pytest
from typer.testing import CliRunner

from planopt.cli import app
from planopt.models.cost.evaluator import Evaluator
from planopt.instance import parse_instance
from planopt.portfolio.solve import PortfolioModel, load_portfolio, solve_portfolio
from planopt.job.model import solve

from tests.support.common import INSTANCES, split_seeds
from tests.support.portfolio_oracle import (assert_time_limited_path_matches_brute_force, best_portfolio_cost, close, tiny_portfolio,
                                            twin_portfolio)

runner = CliRunner()
SMALL = str(INSTANCES / "portfolio-small.json")


# --- the MIP against the oracle ----------------------------------------------
@pytest.mark.parametrize("seed", split_seeds(range(30), 6))
def test_small_portfolio_matches_brute_force(seed):
    p = tiny_portfolio(seed)
    oracle = best_portfolio_cost(load_portfolio(p))
    res = solve_portfolio(p, rel_gap=1e-9)
    if oracle is None:
        assert res.status == "infeasible", (res.status, res.cost_usd)
        return
    assert res.status == "optimal", res.message
    assert close(res.cost_usd, oracle), (res.cost_usd, oracle)
    assert close(res.mip_cost_usd, res.cost_usd)          # the MIP's objective is the evaluated cost
    assert res.violations == [] and res.big_m_breaches == []


@pytest.mark.parametrize("seed", split_seeds(range(12), 6))
def test_symmetry_breaking_keeps_the_optimum_of_twin_jobs(seed):
    p = twin_portfolio(seed)
    oracle = best_portfolio_cost(load_portfolio(p))
    pm = PortfolioModel(p, symmetry_breaking=True)
    assert len(pm.model.identical_jobs_ordered) == 1, "the twins must be ordered, or this test checks nothing"
    res = pm.solve(rel_gap=1e-9)
    if oracle is None:
        assert res.status == "infeasible"
        return
    assert res.status == "optimal" and close(res.cost_usd, oracle), (res.cost_usd, oracle)


@pytest.mark.parametrize("seed", split_seeds(range(12), 6))
def test_loose_linking_keeps_the_optimum(seed):
    p = tiny_portfolio(seed)
    oracle = best_portfolio_cost(load_portfolio(p))
    res = PortfolioModel(p, tight_linking=False).solve(rel_gap=1e-9)
    if oracle is None:
        assert res.status == "infeasible"
        return
    assert res.status == "optimal" and close(res.cost_usd, oracle), (res.cost_usd, oracle)


@pytest.mark.parametrize("seed", split_seeds(range(30), 6))
def test_lagrangian_floors_hold_at_the_optimum(seed):
    """The warm start's Lagrangian (solver/portfolio/lagrange.py) against the optimum found without
    it: each job's share at the multipliers, recomputed here from the optimal schedule (its
    non-compute money, its on-demand and spot GPU-hours at their prices, and the multiplier of
    every (bucket, tier) it holds times its GPU count), is at least the job's floor; the
    Lagrangian bound is at most the optimum (and at most the oracle's); the reserved GPUs are at
    least the reservation floors; and with the floors the optimum is the same."""
    p = tiny_portfolio(seed)
    free = PortfolioModel(p).solve(rel_gap=1e-9, cost_floors=False, warm_start=False)
    if free.status == "infeasible":
        return
    pm = PortfolioModel(p)
    pm.warm_start(floors=True, starts=False)
    floors = {j: pyo.value(pm.model.job_share_floor[j].lower) for j in pm.model.JSHARE}
    assert floors, "no floor was derived"
    lam = pm.lagrange.multipliers
    d = pm.data
    for j, job in enumerate(free.jobs):
        g, n = job.plan.gpu, job.plan.gpu_count
        share = job.noncompute_usd + sum(v * (d.od_price if k == "on_demand" else d.spot_price)[g][b]
                                         for (b, k), v in job.gpu_hours.items() if k != "reserved")
        share += sum(lam.get((b, g, k), 0.0) * n for (b, k) in job.gpu_hours)
        if j in floors:
            assert share >= floors[j] - 1e-6 * max(1.0, abs(floors[j])), (job.name, share, floors[j])
    assert pm.lagrange.bound_usd <= free.cost_usd * (1 + 1e-9) + 1e-6, (pm.lagrange.bound_usd, free.cost_usd)
    for g, least in pm.reserved_floor.items():
        assert free.reserved[g] >= least, (g, free.reserved[g], least)
    floored = pm.solve(rel_gap=1e-9)
    assert floored.status == "optimal"
    assert close(floored.cost_usd, free.cost_usd), (floored.cost_usd, free.cost_usd)


def test_a_reservation_floor_is_derived_and_holds():
    """A job whose count no on-demand or spot pool holds must reserve: the floor sees it."""
    for seed in range(30):
        p = tiny_portfolio(seed)
        for g in p["gpus"]:
            g["on_demand_available_gpus"] = 0
            g["spot_available_gpus"] = 0
        p["gpus"] = p["gpus"][:1]
        try:
            pm = PortfolioModel(p)
        except Exception:
            continue
        if pm.model is None:
            continue
        pm.warm_start(floors=True, starts=False)
        if not pm.reserved_floor:
            continue
        res = PortfolioModel(p).solve(rel_gap=1e-9, cost_floors=False, warm_start=False)
        if res.status != "optimal":
            continue
        for g, least in pm.reserved_floor.items():
            assert least > 0 and res.reserved[g] >= least, (seed, g, res.reserved[g], least)
        return
    raise AssertionError("no tiny portfolio with only reserved GPUs gave a reservation floor")


@pytest.mark.slow  # 5 s on 2 cores (the default run's heaviest); .ci/run runs it with -m slow
def test_tiny_portfolios_exercise_reserved_spot_and_infeasible():
    """The oracle cases above are not all alike: some reserve, some use spot, some are infeasible."""
    seen = {"reserved": 0, "spot": 0, "infeasible": 0}
    for seed in range(12):
        res = solve_portfolio(tiny_portfolio(seed), rel_gap=1e-9)
        seen["infeasible"] += res.status == "infeasible"
        seen["reserved"] += any(res.reserved.values())
        seen["spot"] += any(j.spot_share > 0 for j in res.jobs)
    assert all(v > 0 for v in seen.values()), seen


def test_one_job_on_demand_equals_single_job_solve():
    job = json.loads((INSTANCES / "tiny.json").read_text())
    job["constraints"].pop("deadline_hours", None)  # a portfolio replaces it with the deadline bucket
    job["constraints"].pop("budget_usd", None)      # and the job budget with the portfolio's
    gpus = [{"name": o["name"], "reserved_usd_per_gpu_hour": 1.0, "max_reserved_gpus": 0,
             "on_demand_usd_per_gpu_hour": Evaluator(parse_instance(job)).hardware(
                 next(h for h in Evaluator(parse_instance(job)).space()[1] if h.gpu == o["name"])).price_usd_per_gpu_hour,
             "on_demand_available_gpus": 64} for o in job["hardware"]["gpus"]]
    p = {"kind": "portfolio", "horizon": {"buckets": 4, "bucket_hours": 1000}, "gpus": gpus,
         "jobs": [{"instance": job, "release_bucket": 0, "deadline_bucket": 3}]}
    single = solve(parse_instance(job))
    res = solve_portfolio(p, rel_gap=1e-9)
    assert single.status == res.status == "optimal"
    assert close(res.cost_usd, single.metrics.cost_usd), (res.cost_usd, single.metrics.cost_usd)
    assert close(res.jobs[0].cost_usd, single.metrics.cost_usd)
    assert res.reserved == {g["name"]: 0 for g in gpus}


def test_reserved_capacity_is_never_exceeded():
    from planopt.portfolio.generate import random_portfolio
    p = random_portfolio(jobs=8, gpu_types=3, buckets=6, seed=3, bucket_hours=24)
    res = solve_portfolio(p, time_limit=60)
    assert res.status in ("optimal", "time_limit") and res.jobs
    assert res.violations == []
    H = res.bucket_hours
    for g, n in res.reserved.items():
        for b in range(res.buckets):
            used = sum(v for j in res.jobs if j.plan.gpu == g for (bb, k), v in j.gpu_hours.items() if bb == b and k == "reserved")
            assert used <= n * H * (1 + 1e-7) + 1e-6, (g, b, used, n)
        for j in res.jobs:  # a job on reserved GPUs fits in the reservation
            if j.plan.gpu == g and any(k == "reserved" for (_, k) in j.gpu_hours):
                assert n >= j.plan.gpu_count
    assert any(res.reserved.values()), "the generated portfolio should reserve something"
    assert close(res.mip_cost_usd, res.cost_usd)


# --- CLI and API -------------------------------------------------------------
def run(*args):
    return runner.invoke(app, [str(a) for a in args])


def test_cli_json_keys_and_plot(tmp_path):
    png = tmp_path / "schedule.png"
    res = run("solve", SMALL, "--json", "--plot", png)
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert {"version", "status", "gap", "bucket_hours", "procurement", "jobs", "cost_usd"} <= set(out)
    assert out["status"] == "optimal"
    assert out["procurement"] and all({"provider", "gpu", "tier", "term", "start_bucket", "end_bucket", "gpus"} <= set(p)
                                      for p in out["procurement"])
    for job in out["jobs"]:
        assert {"name", "plan", "metrics", "release_bucket", "start_bucket", "finish_bucket", "deadline_bucket", "schedule"} <= set(job)
        assert job["release_bucket"] <= job["start_bucket"] <= job["finish_bucket"] <= job["deadline_bucket"]
        for row in job["schedule"]:
            assert {"bucket", "provider", "gpu", "tier", "gpus", "hours"} <= set(row)
            assert row["gpus"] == job["plan"]["gpu_count"] and 0 < row["hours"] <= out["bucket_hours"] * (1 + 1e-9)
    assert len(out["jobs"]) == 5
    assert png.exists() and png.read_bytes()[:4] == b"\x89PNG"


def test_cli_text_report():
    res = run("solve", SMALL)
    assert res.exit_code == 0, res.output
    for heading in ("Procurement", "Jobs", "Cost", "total"):
        assert heading in res.stdout


@pytest.mark.parametrize("mutate, field", [
    (lambda p: p["gpus"][0].update(on_demand_avaliable_gpus=3), "gpus.0.on_demand_avaliable_gpus"),
    (lambda p: p["jobs"][1].update(deadline_bucket=99), "jobs.1.deadline_bucket"),
    (lambda p: p["gpus"][2].pop("reserved_usd_per_gpu_hour"), "reserved_usd_per_gpu_hour"),
    (lambda p: p["gpus"][0].update(on_demand_available_gpus=[1, 2]), "gpus.0.on_demand_available_gpus"),
    (lambda p: p["jobs"][0].update(instance="missing.json"), "jobs.0.instance"),
    (lambda p: p["jobs"][0].update(instance="job.json", name="from-file") or p["jobs"][0].update(release_bucket=-1), "jobs.0.release_bucket"),
    (lambda p: p["jobs"][2]["instance"]["task"].pop("response_tokens"), "task.response_tokens"),
])
def test_bad_input_exits_2_with_one_line_naming_the_field(tmp_path, mutate, field):
    p = json.loads((INSTANCES / "portfolio-small.json").read_text())
    mutate(p)
    f = tmp_path / "p.json"
    f.write_text(json.dumps(p))
    res = run("solve", f)
    assert res.exit_code == 2, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and field in lines[0], res.output


def test_infeasible_exits_3_and_names_the_job(tmp_path):
    p = json.loads((INSTANCES / "portfolio-small.json").read_text())
    p["jobs"][0]["deadline_bucket"] = 3   # its labels arrive after 6.4 days at the earliest
    f = tmp_path / "p.json"
    f.write_text(json.dumps(p))
    res = run("solve", f, "--json")
    assert res.exit_code == 3, res.output
    out = json.loads(res.stdout)
    assert out["status"] == "infeasible" and "qwen3-0.6b-sft-new-labels" in out["message"]


def test_generate_portfolio_cli(tmp_path):
    f = tmp_path / "gen.json"
    res = run("generate", "portfolio", "--jobs", 3, "--gpu-types", 2, "--buckets", 4, "--seed", 7, "--out", f)
    assert res.exit_code == 0, res.output
    data = json.loads(f.read_text())
    assert data["kind"] == "portfolio" and len(data["jobs"]) == 3 and len(data["gpus"]) == 2
    assert load_portfolio(f).names  # it validates
    again = tmp_path / "gen2.json"
    run("generate", "portfolio", "--jobs", 3, "--gpu-types", 2, "--buckets", 4, "--seed", 7, "--out", again)
    assert again.read_text() == f.read_text()  # reproducible from the seed
    assert run("generate", "portfolio", "--gpu-types", 99).exit_code == 2


def test_job_instance_from_a_relative_path(tmp_path):
    p = json.loads((INSTANCES / "portfolio-small.json").read_text())
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "rl.json").write_text(json.dumps(p["jobs"][2]["instance"]))
    inline = solve_portfolio(p)
    p["jobs"][2]["instance"] = "jobs/rl.json"
    f = tmp_path / "p.json"
    f.write_text(json.dumps(p))
    from_file = solve_portfolio(f)
    assert from_file.status == "optimal" and close(from_file.cost_usd, inline.cost_usd)


def test_python_api_frames():
    import planopt
    res = planopt.solve_portfolio(SMALL)
    jobs, proc = res.jobs_frame(), res.procurement_frame()
    assert list(jobs["job"]) == [j.name for j in res.jobs] and len(jobs) == 5
    assert {"gpu", "reserved", "utilisation"} <= set(proc.columns)
    assert jobs["cost_usd"].sum() <= res.cost_usd + 1e-6 + res.cost_breakdown_usd["reserved"]
    assert (jobs["finish_bucket"] <= jobs["deadline_bucket"]).all()


@pytest.mark.parametrize("seed", split_seeds(range(30), 6))
def test_the_time_limited_path_matches_brute_force(seed):
    assert_time_limited_path_matches_brute_force(tiny_portfolio(seed))
