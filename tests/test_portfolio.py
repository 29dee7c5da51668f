"""Portfolio and procurement: the MIP against a brute-force oracle, the CLI, the API."""

from __future__ import annotations

import copy
import itertools
import json
import math
import random

import highspy
import numpy as np
import pyomo.environ as pyo
import pytest
from typer.testing import CliRunner

from planopt.cli import app
from planopt.models.costs import Evaluator
from planopt.models.formulation.portfolio import hourly_noncompute_usd, spot_overhead_share
from planopt.models.schema import Instance
from planopt.portfolio import PortfolioModel, load_portfolio, solve_portfolio
from planopt.run import solve

from conftest import INSTANCES

runner = CliRunner()
SMALL = str(INSTANCES / "portfolio-small.json")
GPUS = {"H100-SXM": 1.87, "A100-80GB": 1.79, "L40S": 1.86}


# --- the brute-force oracle ------------------------------------------------
# A brute-force oracle for tiny portfolios, written apart from the MIP.
#
# Every discrete choice is enumerated: each job's plan (recipe, hardware,
# checkpoint interval, scored by the single-job evaluator) and the reserved count
# of every GPU type. What is left for a fixed choice is a small linear program in
# *fractions of each job's work* done in each (bucket, tier) -- a different
# parameterisation from the MIP's GPU-hours -- handed straight to HiGHS as an LP
# (highspy, no Pyomo).


def job_plans(ev: Evaluator):
    """(plan tuple, metrics) of every plan that meets the job's own limits."""
    recipes, hardware, intervals = ev.space()
    out = []
    for r, h, t in itertools.product(recipes, hardware, intervals):
        m = ev.metrics(r, h, t)
        if m.feasible:
            out.append(((r, h, t), m))
    return out


def _schedule_lp(pdata, chosen, reserved, evs):
    """Least cost of the schedule for fixed plans and reservations (None if infeasible)."""
    H = pdata.bucket_hours
    cols, cost, job_rows = [], [], []
    for j, ((r, h, t), m) in enumerate(chosen):
        ev, job = evs[j], pdata.portfolio.jobs[j]
        g, n = h.gpu, h.count
        T = sum(ev.compute_hours_by_component(r, h).values())
        o = ev.hardware(h).overhead_share(t)
        o_s = spot_overhead_share(ev, h, t, pdata.preempt[g])
        lead = ev.recipe(r).lead_hours
        for b in range(job.release_bucket, job.deadline_bucket + 1):
            if lead > (b - job.release_bucket) * H * (1 + 1e-12):
                continue
            tiers = []
            if reserved.get(g, 0) >= n:
                tiers.append(("reserved", n * (1 + o) * T, 0.0))
            if pdata.od_avail[g][b] >= n:
                tiers.append(("on_demand", n * (1 + o) * T, pdata.od_price[g][b]))
            if pdata.spot_avail[g][b] >= n:
                gh = n * (1 + o_s) * T
                tiers.append(("spot", gh, pdata.spot_price[g][b]
                              + hourly_noncompute_usd(ev.inst) * (o_s - o) * T / gh if gh else 0.0))
            for k, gh, price in tiers:
                cols.append((j, b, g, k, gh, n))
                cost.append(gh * price)
    if not cols:
        return None
    nj = len(chosen)
    A_eq = np.zeros((nj, len(cols)))
    for c, (j, *_rest) in enumerate(cols):
        A_eq[j, c] = 1.0
    rows, rhs = [], []
    # a job's GPU-hours in a bucket <= its count x bucket hours
    for j, b in sorted({(c[0], c[1]) for c in cols}):
        rows.append([c[4] if (c[0], c[1]) == (j, b) else 0.0 for c in cols])
        rhs.append(chosen[j][0][1].count * H)
    # tier capacity per (bucket, type)
    for b, g, k in sorted({(c[1], c[2], c[3]) for c in cols}):
        rows.append([c[4] if (c[1], c[2], c[3]) == (b, g, k) else 0.0 for c in cols])
        cap = {"reserved": reserved.get(g, 0), "on_demand": pdata.od_avail[g][b], "spot": pdata.spot_avail[g][b]}[k]
        rhs.append(cap * H)
    if any(not A_eq[j].any() for j in range(nj)):
        return None
    return _lp_min(np.array(cost), np.vstack([A_eq, np.array(rows)]),
                   np.concatenate([np.ones(nj), np.full(len(rows), -np.inf)]), np.concatenate([np.ones(nj), rhs]))


def _lp_min(cost, A, lower, upper):
    """min cost·x s.t. lower <= A x <= upper, x >= 0, by HiGHS's LP solver (None if infeasible)."""
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)  # HiGHS has one global scheduler: every instance must ask for the same threads
    inf = highspy.kHighsInf
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = A.shape[1], A.shape[0]
    lp.col_cost_ = cost
    lp.col_lower_, lp.col_upper_ = np.zeros(A.shape[1]), np.full(A.shape[1], inf)
    lp.row_lower_ = np.where(np.isfinite(lower), lower, -inf)
    lp.row_upper_ = upper
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    starts, index, value = [0], [], []
    for row in A:
        nz = np.nonzero(row)[0]
        index.extend(nz.tolist())
        value.extend(row[nz].tolist())
        starts.append(len(index))
    lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = starts, index, value
    lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = A.shape[1], A.shape[0]
    h.passModel(lp)
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    return h.getInfo().objective_function_value


def best_portfolio_cost(pdata) -> float | None:
    """The least total cost over every plan of every job and every reservation (None: infeasible)."""
    evs = [Evaluator(inst) for inst in pdata.instances]
    plans = [job_plans(ev) for ev in evs]
    H, B = pdata.bucket_hours, len(pdata.buckets)
    best = None
    for chosen in itertools.product(*plans):
        noncompute = sum(m.cost_usd - m.cost_breakdown_usd["compute"] for _, m in chosen)
        used = sorted({p[1].gpu for p, _ in chosen})
        ranges = []
        for g in used:
            top = sum(p[1].count for p, _ in chosen if p[1].gpu == g)
            cap = pdata.gpu[g].max_reserved_gpus
            ranges.append(range(0, (top if cap is None else min(top, cap)) + 1))
        for counts in itertools.product(*ranges):
            reserved = dict(zip(used, counts))
            commit = sum(pdata.reserved_price[g] * H * B * n for g, n in reserved.items())
            if best is not None and noncompute + commit >= best:
                continue
            lp = _schedule_lp(pdata, chosen, reserved, evs)
            if lp is None:
                continue
            total = noncompute + commit + lp
            budget = pdata.portfolio.budget_usd
            if budget is not None and total > budget * (1 + 1e-9):
                continue
            if best is None or total < best:
                best = total
    return best


def tiny_job(rng: random.Random, name: str) -> dict:
    method = rng.choice(["sft", "rl", "opd"])
    job = {
        "name": name, "student": {"preset": rng.choice(["Qwen3-0.6B", "Qwen3-1.7B"])},
        "task": {"baseline_score": 30.0, "general_score_baseline": 70.0, "prompt_tokens": 200,
                 "response_tokens": rng.choice([500, 1500]), "max_response_tokens": 4096, "prompts_available": 20000},
        "training": {"methods": {method: {"steps_options": sorted(rng.sample([100, 300, 1000], 2)), "prompts_per_step": 64}},
                     "phases": 1, "samples_per_prompt_options": [4]},
        "hardware": {"gpus": [{"name": g, "counts": sorted(rng.sample([1, 2, 4], rng.randint(1, 2)))} for g in GPUS]},
        "checkpointing": {"interval_minutes_options": sorted(rng.sample([15, 60, 240], 2))},
        "reliability": {"failures_per_gpu_hour": rng.choice([2e-5, 2e-3])},
        "operations": {"fixed_usd": 100, "usd_per_wall_hour": rng.choice([0, 20])},
    }
    if method == "sft":
        job["sft_data"] = {"examples_available": rng.choice([0, 100000]), "usd_per_labeled_example": 0.1,
                           "labeled_examples_per_day": rng.choice([20000, 2000000]), "example_tokens": 1000}
    if method == "opd":
        job["teacher"] = {"architecture": {"preset": "Qwen3-8B"}, "score": 60.0}
    return job


def tiny_portfolio(seed: int) -> dict:
    """2 jobs, 2 buckets, 1-2 GPU types, tiny option lists; buckets sized to the jobs' run times."""
    rng = random.Random(seed)
    gpus = rng.sample(sorted(GPUS), rng.randint(1, 2))
    jobs = [tiny_job(rng, f"j{k}") for k in range(2)]
    for job in jobs:  # restrict to the portfolio's types, then a target some plans miss
        job["hardware"]["gpus"] = [o for o in job["hardware"]["gpus"] if o["name"] in gpus]
        ev = Evaluator(Instance.model_validate(job))
        qualities = sorted({ev.recipe(r).quality for r in ev.space()[0]})
        job["constraints"] = {"min_quality": qualities[rng.randrange(len(qualities))] - 1e-6}
    ev0 = Evaluator(Instance.model_validate(jobs[0]))
    recipes, hardware, _ = ev0.space()
    hours = [ev0.metrics(r, hardware[0], 60.0).wall_hours for r in recipes]
    bucket_hours = max(0.5, round(sorted(hours)[len(hours) // 2] * rng.uniform(0.3, 1.5), 3))
    entries = []
    for g in gpus:
        e = {"name": g, "reserved_usd_per_gpu_hour": round(GPUS[g] * rng.uniform(0.4, 0.8), 3),
             "on_demand_usd_per_gpu_hour": [round(GPUS[g] * rng.uniform(0.9, 1.2), 3) for _ in range(2)],
             "on_demand_available_gpus": [rng.choice([0, 1, 2, 4, 4]) for _ in range(2)]}
        if rng.random() < 0.6:
            e.update({"spot_usd_per_gpu_hour": round(GPUS[g] * 0.4, 3), "spot_available_gpus": [rng.choice([0, 2, 4]) for _ in range(2)],
                      "spot_preemptions_per_gpu_hour": rng.choice([0.0, 0.01, 0.05])})
        entries.append(e)
    windows = rng.choice([((0, 1), (0, 1)), ((0, 0), (0, 1)), ((0, 1), (1, 1))])
    return {"kind": "portfolio", "name": f"tiny-{seed}", "horizon": {"buckets": 2, "bucket_hours": bucket_hours},
            "gpus": entries, "jobs": [{"instance": j, "release_bucket": w[0], "deadline_bucket": w[1]} for j, w in zip(jobs, windows)]}


def close(a, b, rel=1e-6):
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-6)


# --- the MIP against the oracle ----------------------------------------------
@pytest.mark.parametrize("seed", range(30))
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


def twin_portfolio(seed: int) -> dict:
    """A tiny portfolio whose second job repeats the first (same instance and window), so that
    the symmetry-breaking order of identical jobs is in force."""
    p = tiny_portfolio(seed)
    first = p["jobs"][0]
    twin = copy.deepcopy(first)
    twin["instance"]["name"] = first["instance"]["name"] + "-twin"
    p["jobs"] = [first, twin]
    return p


@pytest.mark.parametrize("seed", range(12))
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


@pytest.mark.parametrize("seed", range(12))
def test_loose_linking_keeps_the_optimum(seed):
    p = tiny_portfolio(seed)
    oracle = best_portfolio_cost(load_portfolio(p))
    res = PortfolioModel(p, tight_linking=False).solve(rel_gap=1e-9)
    if oracle is None:
        assert res.status == "infeasible"
        return
    assert res.status == "optimal" and close(res.cost_usd, oracle), (res.cost_usd, oracle)


@pytest.mark.parametrize("seed", range(30))
def test_job_cost_floors_hold_at_the_optimum(seed):
    """Each job's cost floor (its least cost alone, reserved GPU-hours at the reservation rate) is
    below its cost share in the optimal schedule found without the floors, and the floors do not
    change the optimum (the oracle test above solves with them)."""
    p = tiny_portfolio(seed)
    free = PortfolioModel(p).solve(rel_gap=1e-9, cost_floors=False)
    if free.status == "infeasible":
        return
    pm = PortfolioModel(p)
    pm.warm_start(floors=True, starts=False)
    floors = {j: pyo.value(pm.model.job_cost_floor[j].lower) for j in pm.model.JFLOOR}
    assert floors, "no floor was derived"
    for j, job in enumerate(free.jobs):
        if j in floors:
            assert job.cost_usd >= floors[j] - 1e-6 * max(1.0, abs(floors[j])), (job.name, job.cost_usd, floors[j])
    assert sum(floors.values()) <= free.cost_usd * (1 + 1e-9)
    floored = pm.solve(rel_gap=1e-9)
    assert floored.status == "optimal"
    assert close(floored.cost_usd, free.cost_usd), (floored.cost_usd, free.cost_usd)


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
             "on_demand_usd_per_gpu_hour": Evaluator(Instance.model_validate(job)).hardware(
                 next(h for h in Evaluator(Instance.model_validate(job)).space()[1] if h.gpu == o["name"])).price_usd_per_gpu_hour,
             "on_demand_available_gpus": 64} for o in job["hardware"]["gpus"]]
    p = {"kind": "portfolio", "horizon": {"buckets": 4, "bucket_hours": 1000}, "gpus": gpus,
         "jobs": [{"instance": job, "release_bucket": 0, "deadline_bucket": 3}]}
    single = solve(Instance.model_validate(job))
    res = solve_portfolio(p, rel_gap=1e-9)
    assert single.status == res.status == "optimal"
    assert close(res.cost_usd, single.metrics.cost_usd), (res.cost_usd, single.metrics.cost_usd)
    assert close(res.jobs[0].cost_usd, single.metrics.cost_usd)
    assert res.reserved == {g["name"]: 0 for g in gpus}


def test_reserved_capacity_is_never_exceeded():
    from planopt.generate import random_portfolio
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
    assert {"status", "gap", "procurement", "jobs", "cost_usd"} <= set(out)
    assert out["status"] == "optimal"
    assert all({"gpu", "reserved"} <= set(p) for p in out["procurement"])
    for job in out["jobs"]:
        assert {"name", "plan", "metrics", "start_bucket", "finish_bucket", "deadline_bucket"} <= set(job)
        assert job["start_bucket"] <= job["finish_bucket"] <= job["deadline_bucket"]
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
