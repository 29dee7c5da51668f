"""A 40-solve chance-constrained grid: serial against a 2-worker Dask LocalCluster.

Run:  python benchmarks/bench_grid.py [--instance F] [--confidence LIST_OR_RANGE] [--budget-usd LIST_OR_RANGE]
      [--scenarios N] [--workers W]
Prints one markdown table; every figure in it is measured in the same run.

The grid is ``planopt sweep FILE --confidence ... --budget-usd ...``: by default
8 confidences × 5 budgets on instances/tiny.json with 200 scenarios per solve,
budgets from $1,500 to $3,500, where every point is feasible (a solve there takes about
0.5 to 1 s on an idle core). The
same task list (``planopt.studies.sweep.grid_tasks``) is solved

1. serially, in this process (``planopt.studies.distributed.run_serial``);
2. on a ``distributed.LocalCluster(n_workers=W, threads_per_worker=1,
   processes=True)``: its start, a first run (the workers import planopt),
   then runs on the warm cluster (what a long-lived cluster given by
   ``--scheduler`` costs), and its close.

Serial and warm Dask runs alternate for ``--repeat`` rounds (default 2) and the
best round of each is compared, so that other processes on a shared machine
weigh on both alike; each run reports the CPU seconds of its solving processes
and the cores it obtained (CPU s / wall s: 1 serial and W on Dask when the
machine is otherwise idle).

The Dask results must equal the serial ones exactly (plans, statuses and
expected costs); the run stops with an error otherwise.
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
import time
from dataclasses import dataclass
from pathlib import Path

from planopt.studies.distributed import run_dask, run_serial
from planopt.studies.sweep import grid_tasks, parse_confidences, parse_values

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


@dataclass
class Run:
    name: str
    wall: float
    cpu: float | None = None      # CPU seconds of the solving processes (None: not measured)


def serial_run(tasks):
    c0 = time.process_time()
    results, wall = timed(lambda: run_serial(tasks, progress=False))
    return results, Run("serial, one process", wall, time.process_time() - c0)


def dask_run(client, tasks, name):
    c0 = worker_cpu(client)
    results, wall = timed(lambda: run_dask(tasks, client=client, progress=False))
    return results, Run(name, wall, worker_cpu(client) - c0)


def measure(tasks, workers: int, repeat: int) -> tuple[list[Run], list[list[dict]], list[dict]]:
    """Cluster start, the first Dask run, then ``repeat`` rounds of (serial, warm Dask), then cluster close.
    Serial and Dask runs alternate, so that a change in the machine's load hits both alike."""
    from distributed import Client, LocalCluster
    runs, outputs = [], []
    run_serial(tasks[:1], progress=False)  # this process imports the solver once, as each worker does in its first run
    t0 = time.perf_counter()
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0",
                           silence_logs=logging.CRITICAL)
    client = Client(cluster)
    start = Run("cluster start", time.perf_counter() - t0)
    try:
        first, run = dask_run(client, tasks, f"Dask, {workers} workers: first run (workers import planopt)")
        runs.append(run)
        outputs.append(first)
        for k in range(1, repeat + 1):
            serial, run = serial_run(tasks)
            run.name += f", round {k}"
            runs.append(run)
            warm, run = dask_run(client, tasks, f"Dask, {workers} workers: warm cluster, round {k}")
            runs.append(run)
            outputs.append(warm)
    finally:
        t1 = time.perf_counter()
        client.close()
        cluster.close()
        close = Run("cluster close", time.perf_counter() - t1)
    return [start, *runs, close], outputs, serial


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instance", default=str(ROOT / "instances" / "tiny.json"))
    ap.add_argument("--confidence", default="0.5:0.9:8")
    ap.add_argument("--budget-usd", default="1500:3500:5")
    ap.add_argument("--scenarios", type=int, default=200)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=2, help="rounds of (serial, warm Dask)")
    args = ap.parse_args()
    confidences = parse_confidences(args.confidence)
    budgets = parse_values(args.budget_usd, "--budget-usd")
    tasks = grid_tasks(args.instance, confidences, "budget_usd", budgets, scenarios=args.scenarios)
    where = machine()
    runs, outputs, serial = measure(tasks, args.workers, args.repeat)
    if not all(same(serial, out) for out in outputs):
        raise SystemExit("error: the Dask results differ from the serial ones")
    statuses = {s: sum(r["status"] == s for r in serial) for s in {r["status"] for r in serial}}
    n = len(tasks)
    print(f"Chance-constrained grid: {Path(args.instance).name}, {len(confidences)} confidences × {len(budgets)} budgets "
          f"= {n} solves, {args.scenarios} scenarios each ({', '.join(f'{v} {k}' for k, v in sorted(statuses.items()))}); "
          f"{where}; Dask results equal the serial ones.\n")
    print_runs(runs, n)
    print_summary(runs)
    print(f"\nload average over the last minute at the end: {os.getloadavg()[0]:.1f}")


def print_runs(runs: list[Run], n: int) -> None:
    # CPU seconds / wall seconds: the cores a run actually got (1 serial, W on Dask, on an idle machine);
    # far less means other processes shared the cores during that run
    print("| run | wall time (s) | per solve (s) | CPU s (solving processes) | cores obtained |")
    print("|---|---:|---:|---:|---:|")
    for r in runs:
        per = f"{r.wall / n:.2f}" if r.cpu is not None else "-"
        cells = ("-", "-") if r.cpu is None else (f"{r.cpu:.1f}", f"{r.cpu / r.wall:.2f}")
        print(f"| {r.name} | {r.wall:.1f} | {per} | {cells[0]} | {cells[1]} |")


def print_summary(runs: list[Run]) -> None:
    by = lambda word: [r for r in runs if word in r.name]  # noqa: E731
    serial = min(r.wall for r in by("serial"))
    warm = min(r.wall for r in by("warm cluster"))
    end_to_end = sum(r.wall for r in (*by("cluster start"), *by("first run"), *by("cluster close")))
    print("\n| comparison (best round of each) | serial (s) | Dask (s) | speed-up |")
    print("|---|---:|---:|---:|")
    print(f"| warm cluster (as with --scheduler) | {serial:.1f} | {warm:.1f} | {serial / warm:.2f}× |")
    print(f"| end to end: start, first run, close (as `planopt sweep` without --scheduler) | {serial:.1f} | "
          f"{end_to_end:.1f} | {serial / end_to_end:.2f}× |")


if __name__ == "__main__":
    main()
