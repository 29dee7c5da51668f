"""Portfolio scale benchmark: time and gap from 5 to 100 jobs, and what the formulation choices buy.

Run: ``.venv/bin/python benchmarks/bench_portfolio.py [--quick] [--out results.json]``;
``--part seeds --jobs 50 --seeds 1,2,3 [--gpu-types 10] [--time-limit 60] [--whole-time]`` runs one
size over several seeds (``--whole-time``: the limit counts from before the model is built, as in
``solve_portfolio``; each row also records the load average before and after it), ``--part wall``
measures the whole wall time of ``solve_portfolio(time_limit=...)`` (loading, building and warm
start included) against the limit. ``--part capacity --jobs 5,10 --seeds 1,2 [--scenarios 50,200]``
measures capacity risk and ``--confidence 0.9`` (``capacity_rows``): each generated portfolio gets an
on-demand shortfall of ``SHORTFALL`` on every GPU type. ``--part later --jobs 5,10 --seeds 1,2,3``
solves each generated portfolio (``--gpu-types``, 26 weekly buckets) as is and with reservations
that may also start every ``LATER_EVERY`` buckets (``with_later_starts``: the MIP alone, the
Lagrangian and search bypassed).
Each row builds the MIP of a generated portfolio (``planopt generate portfolio``,
10 GPU types, 26 weekly buckets) and solves it with HiGHS (1 thread) until the
relative gap is at most 1 % or 120 s pass. ``time_to_1pct_s`` is the solve time when
the 1 % gap was proven (blank when it was not). Ablations switch one choice off at a time
on the 50-job portfolio:

- ``warm_start``: the Lagrangian relaxation of the shared capacity (``solver/portfolio/lagrange.py``):
  per-job share floors in the MIP, and each job's minimising plan as HiGHS's partial start; with
  it the search (greedy, best responses, sub-MIPs for fixed plans) and, under a time limit,
  column generation, the integer master and one branching on a reservation (the time is in
  ``solve_s``; ``search_s`` is the search's part);
- ``tight_linking``: a job's GPU-hours per bucket capped per GPU type by its count of that
  type, and its use of reserved GPUs bounded per bucket (off: one cap over all types, one
  bound over the window);
- ``symmetry_breaking``: identical jobs (same instance and window) ordered by a plan key;
  measured on a portfolio where every job has an identical twin (recurring jobs), since
  generated jobs are otherwise all different.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import time
from pathlib import Path

from planopt.portfolio.generate import random_portfolio
from planopt.portfolio.solve import PortfolioModel, solve_portfolio
from planopt.portfolio.replay import replay_schedule

TIME_LIMIT = 120.0
TARGET_GAP = 0.01


def with_twins(p: dict) -> dict:
    """Half the jobs, each twice (same instance and window): recurring jobs."""
    q = copy.deepcopy(p)
    half = q["jobs"][: len(q["jobs"]) // 2]
    q["jobs"] = [j for job in half for j in (job, copy.deepcopy(job))]
    return q


def run(p: dict, label: str, warm_start=True, tight_linking=True, symmetry_breaking=True, rel_gap=TARGET_GAP,
        time_limit=TIME_LIMIT, cost_floors=True, whole_time=False) -> dict:
    """One solve; ``whole_time``: the time limit counts from before the model is built (the
    limit bounds the whole wall time, as ``solve_portfolio`` does)."""
    load_before = os.getloadavg()[0]
    t0 = time.perf_counter()
    pm = PortfolioModel(p, tight_linking=tight_linking, symmetry_breaking=symmetry_breaking)
    build = time.perf_counter() - t0
    m = pm.model
    import pyomo.environ as pyo
    nvars = sum(len(v) for v in m.component_objects(pyo.Var, descend_into=True))
    nint = sum(1 for v in m.component_data_objects(pyo.Var, descend_into=True) if v.is_integer() or v.is_binary())
    ncons = sum(len(c) for c in m.component_objects(pyo.Constraint, descend_into=True, active=True))
    res = pm.solve(time_limit=time_limit, rel_gap=rel_gap, warm_start=warm_start, cost_floors=cost_floors,
                   started_at=t0 if whole_time else None)
    wall = time.perf_counter() - t0
    row = {"label": label, "jobs": len(p["jobs"]), "gpu_types": len(p["gpus"]), "buckets": p["horizon"]["buckets"],
           "warm_start": warm_start, "tight_linking": tight_linking, "symmetry_breaking": symmetry_breaking,
           "vars": nvars, "integer_vars": nint, "constraints": ncons, "build_s": round(build, 2),
           "solve_s": round(res.solve_seconds, 2), "warm_start_s": round(res.warm_start_seconds, 2), "status": res.status, "gap": res.gap,
           "time_to_1pct_s": round(res.solve_seconds, 2) if rel_gap >= TARGET_GAP and res.gap is not None and res.gap <= TARGET_GAP + 1e-12 else None,
           "cost_usd": res.cost_usd, "bound_usd": res.bound_usd,
           "reserved_gpus": sum(res.reserved.values()) if res.reserved else None,
           "violations": len(res.violations), "big_m_breaches": len(res.big_m_breaches),
           "replay_problems": len(replay_schedule(pm.data, json.loads(json.dumps(res.to_dict())))) if res.jobs else None,
           "wall_s": round(wall, 2), "search_s": round(res.search_seconds, 2),
           "lagrangian_bound_usd": None if pm.lagrange is None else pm.lagrange.bound_usd,
           "lagrangian_iterations": None if pm.lagrange is None else pm.lagrange.iterations,
           "reserved_floor": dict(pm.reserved_floor), "message": res.message,
           "load_average_before": round(load_before, 2), "load_average_after": round(os.getloadavg()[0], 2)}
    print(json.dumps(row), flush=True)
    return row


LATER_EVERY = 4   # buckets between the start buckets a reservation may be signed in (a benchmark choice)


def with_later_starts(p: dict, every: int = LATER_EVERY) -> dict:
    """Every GPU type's reservations may be signed in bucket 0, every, 2 every, ... (before the
    lead time runs past the horizon)."""
    q = copy.deepcopy(p)
    B = q["horizon"]["buckets"]
    for g in q["gpus"]:
        g["reserved_start_buckets"] = [s for s in range(0, B, every) if s + g.get("reserved_lead_buckets", 0) < B]
    return q


def render(rows: list[dict]) -> str:
    """The rows as a Markdown table."""
    head = ("run", "vars / integer", "build s", "warm start s", "solve s", "status", "gap", "cost $", "bound $", "reserved GPUs")
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        gap = "-" if r["gap"] is None else f"{100 * r['gap']:.2f} %"
        money = lambda x: "-" if x is None else f"{x:,.0f}"  # noqa: E731
        out.append(f"| {r['label']} | {r['vars']:,} / {r['integer_vars']:,} | {r['build_s']:.1f} | {r.get('warm_start_s', 0):.1f} | "
                   f"{r['solve_s']:.1f} | {r['status']} | {gap} | {money(r['cost_usd'])} | {money(r['bound_usd'])} | "
                   f"{'-' if r['reserved_gpus'] is None else r['reserved_gpus']} |")
    return "\n".join(out)


# The on-demand shortfall given to generated portfolios (an instance field with no default: this is
# the benchmark's assumption, not a sourced figure): a 10 % chance per bucket of losing half the pool.
SHORTFALL = {"on_demand_shortfall_probability_per_bucket": 0.1, "on_demand_shortfall_share": 0.5}
RISK_SCENARIOS = 10_000


def capacity_rows(sizes: list[int], seeds: list[int], samples: list[int], time_limit: float, guard: bool = True) -> list[dict]:
    """Per generated portfolio (3 GPU types, 8 weekly buckets): the least-cost schedule and the time
    of its risk over RISK_SCENARIOS scenarios; then --confidence 0.9 on each SAA sample size: time,
    status, gap, cost over the least-cost schedule's, in- and out-of-sample undisrupted shares."""
    from planopt.portfolio.solve import load_portfolio
    from planopt.portfolio.chance import solve_portfolio_at_confidence
    from planopt.portfolio.risk import portfolio_risk
    rows = []
    for jobs in sizes:
        for seed in seeds:
            p = random_portfolio(jobs, 3, 8, seed=seed)
            for g in p["gpus"]:
                g.update(SHORTFALL)
            data = load_portfolio(p)
            t0 = time.perf_counter()
            base = solve_portfolio(data, time_limit=time_limit)
            solve_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            risk = portfolio_risk(data, base.to_dict(), RISK_SCENARIOS, 0)
            rows.append({"jobs": jobs, "seed": seed, "confidence": None, "scenarios": RISK_SCENARIOS, "status": base.status,
                         "solve_s": round(solve_s, 2), "risk_s": round(time.perf_counter() - t0, 3), "gap": base.gap,
                         "cost_usd": base.cost_usd, "share_meeting_all": risk.share_meeting_all(),
                         "expected_cost_usd": float(risk.cost_usd.mean())})
            for n in samples:
                t0 = time.perf_counter()
                res = solve_portfolio_at_confidence(data, 0.9, n, seed, time_limit=time_limit, guard=guard)
                row = {"jobs": jobs, "seed": seed, "confidence": 0.9, "scenarios": n, "status": res.status,
                       "solve_s": round(time.perf_counter() - t0, 2), "gap": res.gap, "cost_usd": res.cost_usd,
                       "premium": None if res.cost_usd is None or base.cost_usd is None else res.cost_usd / base.cost_usd - 1}
                if res.risk:
                    c = res.risk["chance"]
                    row.update(in_sample=c["in_sample_share_undisrupted"], in_sample_target=c["in_sample_target"],
                               guard_rounds=c["guard_rounds"], guard=c["guard"], out_of_sample=c["out_of_sample"]["share_undisrupted"],
                               out_of_sample_meeting_all=c["out_of_sample"]["share_meeting_all_deadlines"])
                rows.append(row)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--render", type=Path, help="print the Markdown table of a results JSON and exit")
    ap.add_argument("--quick", action="store_true", help="5 and 50 jobs only, no ablations")
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results" / "portfolio.json",
                    help="raw rows (JSON; default benchmarks/results/, which git ignores)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--part", choices=["scale", "deep", "all", "target", "seeds", "wall", "capacity", "later"], default="all",
                    help="scale: sizes and 1 %% ablations; deep: ablations to tight gaps; seeds: --jobs over --seeds; "
                         "wall: whole wall time under --time-limit")
    ap.add_argument("--jobs", default="50", help="seeds and wall: jobs per portfolio; capacity: comma-separated sizes")
    ap.add_argument("--scenarios", default="50,200", help="capacity: comma-separated SAA sample sizes")
    ap.add_argument("--no-guard", action="store_true", help="capacity: --confidence without the out-of-sample guard")
    ap.add_argument("--seeds", default="1,2,3", help="seeds: comma-separated seeds")
    ap.add_argument("--time-limit", type=float, default=TIME_LIMIT, help="seconds per run")
    ap.add_argument("--gpu-types", type=int, default=10, help="seeds: GPU types per portfolio")
    ap.add_argument("--whole-time", action="store_true",
                    help="seeds: the time limit counts from before the model is built (the whole wall time)")
    args = ap.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if args.render:
        print(render(json.loads(args.render.read_text())["rows"]))
        return
    rows = []
    if args.part == "capacity":
        rows = capacity_rows([int(x) for x in args.jobs.split(",")], [int(x) for x in args.seeds.split(",")],
                             [int(x) for x in args.scenarios.split(",")], args.time_limit, guard=not args.no_guard)
        for row in rows:
            print(json.dumps(row))
        args.out.write_text(json.dumps({"machine": platform.platform(), "python": platform.python_version(), "rows": rows}, indent=1))
        return
    if args.part == "later":
        for n in (int(x) for x in args.jobs.split(",")):
            for seed in (int(x) for x in args.seeds.split(",")):
                p = random_portfolio(n, args.gpu_types, 26, seed=seed)
                rows.append(run(p, f"{n} jobs × {args.gpu_types} types, seed {seed}, start 0", time_limit=args.time_limit))
                rows.append(run(with_later_starts(p), f"{n} jobs × {args.gpu_types} types, seed {seed}, starts every {LATER_EVERY}",
                                time_limit=args.time_limit))
        args.out.write_text(json.dumps({"machine": platform.platform(), "python": platform.python_version(), "rows": rows}, indent=1))
        return
    args.jobs = int(args.jobs)
    if args.part == "seeds":
        for seed in (int(x) for x in args.seeds.split(",")):
            rows.append(run(random_portfolio(args.jobs, args.gpu_types, 26, seed=seed),
                            f"{args.jobs} jobs × {args.gpu_types} types, seed {seed}", time_limit=args.time_limit,
                            whole_time=args.whole_time))
        args.out.write_text(json.dumps({"machine": platform.platform(), "python": platform.python_version(), "rows": rows}, indent=1))
        return
    if args.part == "wall":
        p = random_portfolio(args.jobs, 10, 26, seed=args.seed)
        t0 = time.perf_counter()
        res = solve_portfolio(p, time_limit=args.time_limit)
        print(json.dumps({"jobs": args.jobs, "time_limit_s": args.time_limit, "wall_s": round(time.perf_counter() - t0, 2),
                          "status": res.status, "warm_start_s": round(res.warm_start_seconds, 2), "message": res.message}))
        return
    if args.part == "target":
        # The 120 s / 1 % target across sizes and seeds, with and without the per-job cost floors.
        for n in (5, 20, 50, 100):
            rows.append(run(random_portfolio(n, 10, 26, seed=args.seed), f"scale {n} jobs"))
        for seed in (args.seed + 2, args.seed + 3):
            rows.append(run(random_portfolio(50, 10, 26, seed=seed), f"scale 50 jobs, seed {seed}"))
        rows.append(run(random_portfolio(50, 10, 26, seed=args.seed), "50 jobs, no cost floors", cost_floors=False))
        args.out.write_text(json.dumps({"machine": platform.platform(), "python": platform.python_version(), "rows": rows}, indent=1))
        return
    sizes = [5, 50] if args.quick else [5, 20, 50, 100]
    if args.part in ("deep", "all") and not args.quick:
        # Every 1 % run above ends at the warm start's incumbent and the root bound; what
        # tight linking and symmetry breaking buy shows in closing the gap further.
        p10 = random_portfolio(10, 10, 26, seed=args.seed)
        rows.append(run(p10, "10 jobs to gap 1e-6", rel_gap=1e-6))
        rows.append(run(p10, "10 jobs to gap 1e-6, no warm start", rel_gap=1e-6, warm_start=False))
        rows.append(run(p10, "10 jobs to gap 1e-6, loose linking", rel_gap=1e-6, tight_linking=False))
        t10 = with_twins(random_portfolio(10, 10, 26, seed=args.seed + 1))
        rows.append(run(t10, "10 jobs as 5 twin pairs to gap 1e-6", rel_gap=1e-6))
        rows.append(run(t10, "10 jobs as 5 twin pairs to gap 1e-6, no symmetry breaking", rel_gap=1e-6, symmetry_breaking=False))
        p50 = random_portfolio(50, 10, 26, seed=args.seed)
        rows.append(run(p50, "50 jobs, loose linking, gap 1e-4 within 120 s", rel_gap=1e-4, tight_linking=False))
        if args.part == "deep":
            args.out.write_text(json.dumps({"machine": platform.platform(), "python": platform.python_version(), "rows": rows}, indent=1))
            return
    for n in sizes:
        rows.append(run(random_portfolio(n, 10, 26, seed=args.seed), f"scale {n} jobs"))
    if not args.quick:
        p50 = random_portfolio(50, 10, 26, seed=args.seed)
        rows.append(run(p50, "50 jobs, gap 1e-4 within 120 s", rel_gap=1e-4))
        rows.append(run(p50, "50 jobs, no warm start", warm_start=False))
        rows.append(run(p50, "50 jobs, loose linking", tight_linking=False))
        twins = with_twins(random_portfolio(50, 10, 26, seed=args.seed + 1))
        rows.append(run(twins, "50 jobs as 25 twin pairs, symmetry breaking"))
        rows.append(run(twins, "50 jobs as 25 twin pairs, no symmetry breaking", symmetry_breaking=False))
        for seed in (args.seed + 2, args.seed + 3):
            rows.append(run(random_portfolio(50, 10, 26, seed=seed), f"scale 50 jobs, seed {seed}"))
    args.out.write_text(json.dumps({"machine": platform.platform(), "python": platform.python_version(), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
