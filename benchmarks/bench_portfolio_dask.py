"""Portfolio pricing on Dask against serial: where the time goes, and the bound each reaches.

Run: ``.venv/bin/python benchmarks/bench_portfolio_dask.py [--cases 100x14x26,400x14x26] [--seeds 1,2,3]
[--ascent 20] [--cg-seconds 60] [--workers 2] [--out results.json]``; ``--solve S`` runs the whole solve
instead (``PortfolioModel.solve(time_limit=S)``, serial and with ``Pricing("dask", workers=...)``; ``--modes dask``
for the Dask one only): status, cost,
bound, gap and the pricing's passes and time.

Each case is a generated portfolio (``generate.random_portfolio``: jobs × GPU types × weekly buckets, one
per seed), its model and plan arrays built once (``PortfolioModel``, ``lagrange.job_plans``). Then, once
serially and once on a ``distributed.LocalCluster`` of ``--workers`` worker processes (one thread each,
started for the case; its start-up is reported), the same pricing is run through the model's pricer
(``solver/portfolio/pricing.py``): ``--ascent`` iterations of the subgradient ascent
(``lagrangian_bound``, never time-bounded), then column generation (``column_generation``) from it until
no column prices out or ``--cg-seconds`` pass. Per run: the passes, the time in pricing as the client
waited for it (``pricing_s``) and as the subproblems themselves took (``compute_s``: on the workers, summed
over them), the master's part (column generation's time less its pricing wait), the bound, the master
LP's value and their gap (``cg_gap``: 0 at the dual optimum), and whether the Dask run's bound equals
the serial run's. Every case and seed is listed, a run that stops on ``--cg-seconds`` included
(``converged`` no). Prints the load average before and after, and a markdown table.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from planopt.portfolio.columns import column_generation  # noqa: E402
from planopt.portfolio.generate import random_portfolio  # noqa: E402
from planopt.portfolio.lagrange import job_plans, lagrangian_bound, reservation_floors  # noqa: E402
from planopt.portfolio.pricing import DaskPricer, SerialPricer  # noqa: E402
from planopt.portfolio.solve import PortfolioModel  # noqa: E402


def run_pricing(pm, plans: list, pricer, ascent: int, cg_seconds: float) -> dict:
    """The ascent and column generation through ``pricer``; the time split and the bound."""
    pm.pricer = pricer
    floor = reservation_floors(pm, plans)
    t0 = time.perf_counter()
    lag = lagrangian_bound(pm, seconds=math.inf, iterations=ascent, plans=plans, reserved_floor=floor)
    t1 = time.perf_counter()
    ascent_pricing = pricer.stats.seconds
    cg = column_generation(pm, plans, floor, cg_seconds, start=lag)
    t2 = time.perf_counter()
    cg_pricing = pricer.stats.seconds - ascent_pricing
    value = cg.master[0].getInfo().objective_function_value if cg.master is not None else float("nan")
    return {"ascent_s": t1 - t0, "cg_s": t2 - t1, "passes": pricer.stats.passes, "pricing_s": pricer.stats.seconds,
            "compute_s": pricer.stats.compute_seconds, "scatter_s": pricer.stats.scatter_seconds,
            "master_s": (t2 - t1) - cg_pricing, "ascent_bound": lag.bound_usd, "bound": cg.bound_usd, "master_lp": value,
            "cg_gap": (value - cg.bound_usd) / abs(value) if value else float("nan"),   # 0: the master was not re-solved
            "converged": (t2 - t1) < cg_seconds, "cg_iterations": len(cg.history) - len(lag.history)}


def bench_case(case: str, seed: int, ascent: int, cg_seconds: float, workers: int) -> list[dict]:
    """Serial, then Dask, on one generated portfolio."""
    from distributed import Client, LocalCluster
    jobs, types, buckets = (int(x) for x in case.split("x"))
    t0 = time.perf_counter()
    pm = PortfolioModel(random_portfolio(jobs, types, buckets, seed=seed))
    plans = [job_plans(pm, j) for j in range(jobs)]
    build = time.perf_counter() - t0
    gi = {g: n for n, g in enumerate(pm.data.gpus)}
    rows = [{"case": case, "seed": seed, "mode": "serial", "build_s": build, "start_s": 0.0,
             **run_pricing(pm, plans, SerialPricer(plans, gi), ascent, cg_seconds)}]
    t0 = time.perf_counter()
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0",
                      silence_logs=logging.CRITICAL) as lc, Client(lc) as client:
        start = time.perf_counter() - t0
        pricer = DaskPricer(client, plans, gi)
        rows.append({"case": case, "seed": seed, "mode": f"dask {workers}w", "build_s": build, "start_s": start,
                     **run_pricing(pm, plans, pricer, ascent, cg_seconds)})
        pricer.close()
    rows[1]["same_bound"] = rows[1]["bound"] == rows[0]["bound"] and rows[1]["ascent_bound"] == rows[0]["ascent_bound"]
    rows[0]["same_bound"] = None
    return rows


def bench_solve(case: str, seed: int, seconds: float, workers: int, modes: tuple[str, ...] = ("serial", "dask")) -> list[dict]:
    """The whole solve (``--solve S``: ``PortfolioModel.solve(time_limit=S)``), serial then on a
    LocalCluster of ``workers`` processes started inside it (``Pricing("dask")``, its start-up in the limit);
    ``modes`` the ones to run."""
    from planopt.portfolio.pricing import Pricing
    jobs, types, buckets = (int(x) for x in case.split("x"))
    raw = random_portfolio(jobs, types, buckets, seed=seed)
    out = []
    for pricing in [None] * ("serial" in modes) + [Pricing("dask", workers=workers)] * ("dask" in modes):
        pm = PortfolioModel(raw)
        t0 = time.perf_counter()
        res = pm.solve(time_limit=seconds, pricing=pricing)
        st = pm.pricing_stats
        out.append({"case": case, "seed": seed, "mode": "serial" if pricing is None else f"dask {workers}w",
                    "wall_s": time.perf_counter() - t0, "status": res.status, "cost": res.cost_usd, "bound": res.bound_usd,
                    "gap": res.gap, "passes": st.passes if st else 0, "pricing_s": st.seconds if st else 0.0,
                    "compute_s": st.compute_seconds if st else 0.0})
    return out


def solve_table(rows: list[dict]) -> str:
    """The markdown table of the whole solves."""
    out = ["| case | seed | pricing | wall s | status | cost $ | bound $ | gap | passes | pricing wait s | pricing compute s |",
           "|---|---:|---|---:|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        gap = "-" if r["gap"] is None else f"{r['gap']:.2%}"
        cost = "-" if r["cost"] is None else f"{r['cost']:,.0f}"
        bound = "-" if r["bound"] is None else f"{r['bound']:,.0f}"
        out.append(f"| {r['case'].replace('x', ' × ')} | {r['seed']} | {r['mode']} | {r['wall_s']:.0f} | {r['status']} | {cost} | "
                   f"{bound} | {gap} | {r['passes']} | {r['pricing_s']:.1f} | {r['compute_s']:.1f} |")
    return "\n".join(out)


def table(rows: list[dict]) -> str:
    """The markdown table of every row."""
    out = ["| case (jobs × types × buckets) | seed | pricing | cluster start s | scatter s | passes | pricing wait s | "
           "pricing compute s | master s | ascent s | CG s | converged | bound $ | CG gap | same bound as serial |",
           "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---|"]
    for r in rows:
        same = "" if r["same_bound"] is None else ("yes" if r["same_bound"] else "NO")
        gap = f"{r['cg_gap']:.2e}" if math.isfinite(r["cg_gap"]) else "n/a (master not re-solved)"
        out.append(f"| {r['case'].replace('x', ' × ')} | {r['seed']} | {r['mode']} | {r['start_s']:.1f} | {r['scatter_s']:.2f} | "
                   f"{r['passes']} | {r['pricing_s']:.1f} | {r['compute_s']:.1f} | {r['master_s']:.1f} | {r['ascent_s']:.1f} | "
                   f"{r['cg_s']:.1f} | {'yes' if r['converged'] else 'no (time)'} | {r['bound']:,.0f} | {gap} | {same} |")
    return "\n".join(out)


def main() -> None:
    """The command line of the module docstring."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="100x14x26,400x14x26")
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--ascent", type=int, default=20)
    ap.add_argument("--cg-seconds", type=float, default=60.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--table", type=Path, help="print the table of an earlier run's --out file and stop")
    ap.add_argument("--solve", type=float, help="instead: the whole solve within this time limit, serial and on Dask")
    ap.add_argument("--modes", default="serial,dask", help="--solve: the pricing modes to run (serial, dask)")
    args = ap.parse_args()
    if args.solve is not None:
        print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
        rows = [r for case in args.cases.split(",") for seed in (int(x) for x in args.seeds.split(","))
                for r in bench_solve(case, seed, args.solve, args.workers, tuple(args.modes.split(",")))]
        print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}\n")
        print(solve_table(rows))
        if args.out:
            args.out.write_text(json.dumps(rows, indent=1))
        return
    if args.table is not None:
        print(table(json.loads(args.table.read_text())))
        return
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; cores {os.cpu_count()}", flush=True)
    rows = []
    for case in args.cases.split(","):
        for seed in (int(s) for s in args.seeds.split(",")):
            try:
                rows += bench_case(case, seed, args.ascent, args.cg_seconds, args.workers)
            except Exception as exc:   # a miss is listed, never dropped
                print(f"{case} seed {seed}: failed: {type(exc).__name__}: {exc}", flush=True)
                continue
            print(table(rows[-2:]).splitlines()[-2:], flush=True)
            if args.out:
                args.out.write_text(json.dumps(rows, indent=1))
    print(f"\nload average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}\n")
    print(table(rows))


if __name__ == "__main__":
    main()
