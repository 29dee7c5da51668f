"""A 40-solve chance-constrained grid: serial against a 2-worker Dask LocalCluster.

Run:  python benchmarks/bench_grid.py [--instance F] [--confidence LIST_OR_RANGE] [--budget-usd LIST_OR_RANGE]
      [--scenarios N] [--workers W]
Prints one markdown table; every figure in it is measured in the same run.

The grid is ``planopt sweep FILE --confidence ... --budget-usd ...``: by default
8 confidences × 5 budgets on instances/tiny.json with 200 scenarios per solve,
budgets from $1,500 to $3,500, where every point is feasible (a solve there takes about
0.5 to 1 s on an idle core). The
same task list (``planopt.sweep.grid_tasks``) is solved

1. serially, in this process (``planopt.distributed.run_serial``);
2. on a fresh ``distributed.LocalCluster(n_workers=W, threads_per_worker=1,
   processes=True)``: end to end (start the cluster, solve, close it) and, on
   the same cluster, a second time once warm (workers started and planopt
   imported), which is what a long-lived cluster given by ``--scheduler`` costs.

The Dask results must equal the serial ones exactly (plans, statuses and
expected costs); the run stops with an error otherwise.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

from planopt.distributed import run_dask, run_serial
from planopt.sweep import grid_tasks, parse_confidences, parse_values

ROOT = Path(__file__).resolve().parent.parent


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def worker_cpu(client) -> float:
    """CPU seconds the cluster's worker processes have used so far (summed)."""
    return sum(client.run(time.process_time).values())


def same(a: list[dict], b: list[dict]) -> bool:
    strip = lambda r: {k: v for k, v in r.items() if k not in ("build_seconds", "solve_seconds")}  # noqa: E731
    return [strip(r) for r in a] == [strip(r) for r in b]


def machine() -> str:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return f"{platform.processor() or platform.machine()}, {cores} cores, load average {load:.1f} at start"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instance", default=str(ROOT / "instances" / "tiny.json"))
    ap.add_argument("--confidence", default="0.5:0.9:8")
    ap.add_argument("--budget-usd", default="1500:3500:5")
    ap.add_argument("--scenarios", type=int, default=200)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    from distributed import Client, LocalCluster
    confidences = parse_confidences(args.confidence)
    budgets = parse_values(args.budget_usd, "--budget-usd")
    tasks = grid_tasks(args.instance, confidences, "budget_usd", budgets, scenarios=args.scenarios)
    where = machine()
    cpu0 = time.process_time()
    serial, t_serial = timed(lambda: run_serial(tasks, progress=False))
    cpu = {"serial": time.process_time() - cpu0}

    def on_cluster():
        with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                          dashboard_address=":0") as cluster, Client(cluster) as client:
            c0 = worker_cpu(client)
            first, t_first = timed(lambda: run_dask(tasks, client=client, progress=False))
            c1 = worker_cpu(client)
            warm, t_warm = timed(lambda: run_dask(tasks, client=client, progress=False))
            cpu.update(first=c1 - c0, warm=worker_cpu(client) - c1)
        return first, t_first, warm, t_warm

    (first, t_first, warm, t_warm), t_total = timed(on_cluster)
    if not (same(serial, first) and same(serial, warm)):
        raise SystemExit("error: the Dask results differ from the serial ones")
    statuses = {s: sum(r["status"] == s for r in serial) for s in {r["status"] for r in serial}}
    n = len(tasks)
    print(f"Chance-constrained grid: {Path(args.instance).name}, {len(confidences)} confidences × {len(budgets)} budgets "
          f"= {n} solves, {args.scenarios} scenarios each ({', '.join(f'{v} {k}' for k, v in sorted(statuses.items()))}); "
          f"{where}; Dask results equal the serial ones.\n")
    # CPU seconds / wall seconds: the cores the run actually got (1 and W on an idle machine);
    # far less means other processes shared the cores, and the speed-up says little
    print("| run | wall time (s) | per solve (s) | speed-up vs serial | CPU s (solving processes) | cores obtained |")
    print("|---|---:|---:|---:|---:|---:|")
    end_to_end = t_total - t_warm  # cluster start, the first run (workers import planopt), cluster close
    w = args.workers
    for name, t, c in (("serial, one process", t_serial, cpu["serial"]),
                       (f"Dask LocalCluster, {w} workers, end to end (start, solve, close)", end_to_end, None),
                       (f"Dask LocalCluster, {w} workers, solve only (first run)", t_first, cpu["first"]),
                       (f"Dask LocalCluster, {w} workers, warm cluster (second run)", t_warm, cpu["warm"])):
        cells = ("-", "-") if c is None else (f"{c:.1f}", f"{c / t:.2f}")
        print(f"| {name} | {t:.1f} | {t / n:.2f} | {t_serial / t:.2f}× | {cells[0]} | {cells[1]} |")
    print(f"\nload average over the last minute at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
