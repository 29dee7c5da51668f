"""Solve-speed benchmark: end-to-end CLI time, build vs HiGHS time, and growth with the decision space.

Run:  python benchmarks/bench_solve.py   (its tables are in BENCHMARKS.md §1)
Prints markdown tables; every figure in one table is measured in the same run.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from planopt.instance import load_instance
from planopt.models.costs import Evaluator
from planopt.oracle import all_plans
from planopt.run import PlanModel

ROOT = Path(__file__).resolve().parent.parent
INSTANCES = ROOT / "instances"
ORACLE_CAP_SECONDS = 120.0
GPU_LADDER = ["H100-SXM", "H200", "A100-80GB", "B200", "MI300X", "L40S", "A100-40GB", "H100-PCIe", "MI325X", "TPU-v5p"]
COUNT_LADDER = [8, 16, 32, 64, 128, 256]


def cli_seconds(path: Path, repeats: int = 3) -> float:
    exe = Path(sys.executable).with_name("planopt")
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run([str(exe), "solve", str(path), "--json"], capture_output=True, check=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def end_to_end_table() -> list[str]:
    rows = ["| instance | plans | `planopt solve` wall s (median of 3, incl. sensitivity re-solves) | build s | HiGHS s |",
            "|---|---:|---:|---:|---:|"]
    for path in sorted(INSTANCES.glob("*.json")):
        if json.loads(path.read_text()).get("kind", "job") != "job":
            continue
        inst = load_instance(path)
        pm = PlanModel(inst)
        res = pm.solve()
        recipes, hardware, intervals = Evaluator(inst).space()
        rows.append(f"| {path.stem} | {len(recipes) * len(hardware) * len(intervals):,} | {cli_seconds(path):.2f} | "
                    f"{pm.build_seconds:.3f} | {res.solve_seconds:.3f} |")
    return rows


def scaled(gpu_types: int, counts: int, options: int) -> dict:
    data = json.loads((INSTANCES / "qwen3-8b-math.json").read_text())
    data["hardware"]["gpus"] = [{"name": g, "counts": COUNT_LADDER[:counts]} for g in GPU_LADDER[:gpu_types]]
    data["training"]["samples_per_prompt_options"] = [2, 4, 8, 16, 32][:options]
    data["checkpointing"]["interval_minutes_options"] = [10, 20, 30, 60, 120, 240, 480][: options + 2]
    if options > 5:  # beyond the sampling ladder, grow the training-length options instead
        for method, levels in data["training"]["methods"].items():
            base = levels["steps_options"]
            levels["steps_options"] = sorted({int(b * f) for b in base for f in (1, 1.5, 2, 3)})[: 4 * (options - 4)]
    return data


def scaling_table() -> list[str]:
    rows = ["| GPU types × counts × options (sampling; beyond 5, training lengths) | plans | MIP build s | HiGHS s | MIP total s | oracle s | oracle / MIP |",
            "|---|---:|---:|---:|---:|---:|---:|"]
    for g, c, o in [(1, 2, 2), (2, 3, 2), (3, 4, 3), (6, 4, 3), (6, 6, 4), (10, 6, 4), (10, 6, 5), (10, 6, 6), (10, 6, 7)]:
        inst = load_instance(scaled(g, c, o))
        recipes, hardware, intervals = Evaluator(inst).space()
        size = len(recipes) * len(hardware) * len(intervals)
        pm = PlanModel(inst)
        res = pm.solve()
        mip = pm.build_seconds + res.solve_seconds
        per_plan = _oracle_seconds_per_plan(inst)
        oracle = per_plan * size
        shown = f"{oracle:.2f}" if oracle <= ORACLE_CAP_SECONDS else f"> {ORACLE_CAP_SECONDS:.0f} (est. {oracle:,.0f})"
        rows.append(f"| {g} × {c} × {o} | {size:,} | {pm.build_seconds:.3f} | {res.solve_seconds:.3f} | {mip:.3f} | {shown} | {oracle / mip:,.1f} |")
    return rows


def _oracle_seconds_per_plan(inst) -> float:
    """Time the oracle on the whole space when it is small, else on a sample of plans."""
    ev = Evaluator(inst)
    recipes, hardware, intervals = ev.space()
    size = len(recipes) * len(hardware) * len(intervals)
    if size <= 200_000:
        start = time.perf_counter()
        all_plans(inst, limit=size)
        return (time.perf_counter() - start) / size
    start = time.perf_counter()
    n = 0
    for r in recipes[:: max(1, len(recipes) // 40)]:
        for h in hardware:
            for i in intervals:
                ev.metrics(r, h, i)
                n += 1
    return (time.perf_counter() - start) / n


if __name__ == "__main__":
    print("### End-to-end solve time per shipped instance\n")
    print("\n".join(end_to_end_table()))
    print("\n### Growth with the decision space (Qwen3-8B math instance, scaled)\n")
    print(f"The oracle runs whole spaces up to 200,000 plans; above that its time is its measured seconds per plan on a "
          f"sample times the plan count, shown as '> {ORACLE_CAP_SECONDS:.0f}' when over the cap.\n")
    print("\n".join(scaling_table()))
