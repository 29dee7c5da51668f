"""Scale benchmark: the MIP against the vectorised enumeration, from 10^4 to 10^8 plans.

Run:  python benchmarks/bench_scale.py [--sizes 1e4,1e6,1e7,1e8]

The ladder is made of edits of ``instances/qwen3-8b-math.json`` (its limits
kept) with more GPU types, GPU counts, samples-per-prompt options, training
lengths and checkpoint intervals (``LADDER``). Each size runs the MIP
(``PlanModel``: build, then HiGHS) and the vectorised enumeration oracle
(``enumerate_arrays.best_plan_arrays``) in separate child processes, so each
one's peak resident memory is its own; both start from the loaded instance
(imports done), so both pay for the evaluator's recipe and hardware profiles. Wall and CPU seconds
are both reported: on a shared machine the wall clock includes waiting for a
core, CPU seconds do not. Every size is printed, misses included, as one
markdown table, with the machine's load average before the run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GPUS = ["H100-SXM", "H200", "A100-80GB", "B200", "MI300X", "L40S", "A100-40GB", "H100-PCIe", "MI325X", "TPU-v5p",
        "GB200", "L4", "TPU-v5e", "TPU-v6e"]
COUNTS = [8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 40, 80, 160, 384]
SAMPLES = [2, 4, 6, 8, 12, 16, 24, 32, 48, 64]
INTERVALS = [10, 20, 30, 60, 120, 240, 5, 15, 45, 90, 180, 360, 480, 720, 960, 1440, 25, 35, 40, 50, 70, 80, 100,
             140, 160, 200, 300, 420, 600, 840, 1200, 1680, 1920, 2400, 2880, 3600]
STEP_FACTORS = (1.25, 1.5, 2, 3, 4, 0.75, 0.5)
# size label -> (GPU types, counts per type, samples-per-prompt options, training lengths per method, intervals)
LADDER = {"1e4": (4, 3, 3, 4, 6), "1e6": (10, 6, 6, 8, 10), "1e7": (14, 10, 8, 8, 16), "1e8": (14, 14, 10, 16, 36)}
# the recipe-heavy shape of issue 29 (13 GPU types x 10 counts, 8 samples-per-prompt options, 6 phases, 8 lengths,
# 15 intervals, 4 teacher precisions, 5 data shares): size label -> (the ladder's five, phases)
RECIPE_HEAVY = {"1e6r": (8, 6, 6, 6, 10, 4), "1e8r": (13, 10, 8, 8, 15, 6)}


def recipe_heavy(gpu_types: int, counts: int, samples: int, steps: int, intervals: int, phases: int) -> dict:
    """:func:`scaled` with ``phases`` sampling phases, the four teacher precisions and five external data shares."""
    data = scaled(gpu_types, counts, samples, steps, intervals)
    data["name"] += f".p{phases}"
    data["training"]["phases"] = phases
    data["teacher"]["precision_options"] = ["bf16", "fp8", "int8", "int4"]
    data["sft_data"]["external_data_share_options"] = [1.0, 0.85, 0.7, 0.55, 0.4]
    return data


def instance_of(label: str) -> dict:
    """The edited instance of a size label (``LADDER`` or ``RECIPE_HEAVY``)."""
    return recipe_heavy(*RECIPE_HEAVY[label]) if label in RECIPE_HEAVY else scaled(*LADDER[label])


def scaled(gpu_types: int, counts: int, samples: int, steps: int, intervals: int) -> dict:
    """qwen3-8b-math.json with the first options of each ladder; each method keeps its own training lengths."""
    data = json.loads((ROOT / "instances" / "qwen3-8b-math.json").read_text())
    data["name"] = f"qwen3-8b-math x{gpu_types}.{counts}.{samples}.{steps}.{intervals}"
    data["hardware"]["gpus"] = [{"name": g, "counts": sorted(COUNTS[:counts])} for g in GPUS[:gpu_types]]
    data["training"]["samples_per_prompt_options"] = sorted(SAMPLES[:samples])
    data["checkpointing"]["interval_minutes_options"] = sorted(INTERVALS[:intervals])
    for levels in data["training"]["methods"].values():
        base = levels["steps_options"]
        extra = sorted({int(b * f) for b in base for f in STEP_FACTORS} - set(base))
        levels["steps_options"] = sorted(set(base) | set(extra[:max(0, steps - len(base))]))
    return data


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def child(kind: str, label: str) -> dict:
    from planopt.oracles.arrays import best_plan_arrays
    from planopt.instance import load_instance
    from planopt.models.cost.evaluator import Evaluator
    from planopt.job.model import PlanModel  # imports before the clocks start: both sides import Pyomo (run.py)
    inst = load_instance(instance_of(label))
    recipes, hardware, intervals = Evaluator(inst).space()
    out = {"plans": len(recipes) * len(hardware) * len(intervals), "base_mib": peak_mib()}
    wall, cpu = time.perf_counter(), time.process_time()
    if kind == "mip":
        pm = PlanModel(inst)
        build_wall, build_cpu = time.perf_counter() - wall, time.process_time() - cpu
        res = pm.solve()
        out.update(build_s=build_wall, build_cpu=build_cpu, highs_s=res.solve_seconds,
                   recipes_kept=len(pm.space.recipes), recipes=pm.space.slots[0].recipes_in_space)
    else:
        res = best_plan_arrays(inst)
    out.update(total_s=time.perf_counter() - wall, total_cpu=time.process_time() - cpu, peak_mib=peak_mib(),
               status=res.status, cost=res.metrics.cost_usd if res.metrics else None,
               objective=res.metrics.objective(inst.objective) if res.metrics else None)
    return out


def run_child(kind: str, label: str) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--child", kind, label], capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(labels: list[str]) -> None:
    load = os.getloadavg()
    print(f"_Load average before the run: {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (1 / 5 / 15 min) on {os.cpu_count()} cores._\n")
    print("| size | plans | recipes kept / all | MIP build s (CPU) | HiGHS s | MIP total s (CPU) | MIP peak MiB | "
          "enumeration s (CPU) | enumeration peak MiB | MIP / enumeration (wall; CPU) | same optimum |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for label in labels:
        mip, enum = run_child("mip", label), run_child("enum", label)
        if "error" in mip or "error" in enum:
            print(f"| {label} | | | {mip.get('error', '')} | | | | {enum.get('error', '')} | | | |")
            continue
        same = (mip["status"] == enum["status"]
                and (mip["objective"] is None or abs(mip["objective"] - enum["objective"]) <= 1e-6 * max(1.0, abs(enum["objective"]))))
        print(f"| {label} | {mip['plans']:,} | {mip['recipes_kept']:,} / {mip['recipes']:,} | {mip['build_s']:.2f} ({mip['build_cpu']:.2f}) | "
              f"{mip['highs_s']:.2f} | {mip['total_s']:.2f} ({mip['total_cpu']:.2f}) | {mip['peak_mib']:.0f} | "
              f"{enum['total_s']:.2f} ({enum['total_cpu']:.2f}) | {enum['peak_mib']:.0f} | "
              f"{mip['total_s'] / enum['total_s']:.2f}; {mip['total_cpu'] / enum['total_cpu']:.2f} | {'yes' if same else 'NO'} |", flush=True)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default=",".join([*LADDER, *RECIPE_HEAVY]))
    ap.add_argument("--child", nargs=2, metavar=("KIND", "SIZE"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(*args.child)))
    else:
        main(args.sizes.split(","))
