"""Solve-speed benchmark: the CLI against the bare Pyomo import, where a solve's time goes,
end-to-end CLI time per instance, build vs HiGHS time, and growth with the decision space.

Run:  python benchmarks/bench_solve.py [--repeats N]   (its tables are in BENCHMARKS.md §1)
Prints markdown tables; every figure in one table is measured in the same run, and
the commands of the first table are interleaved (one of each, N times) so that
a change in the machine's load hits them alike.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from planopt.instance import load_instance
from planopt.models.cost.evaluator import Evaluator
from planopt.oracles.by_plan import all_plans
from planopt.job.model import PlanModel

ROOT = Path(__file__).resolve().parent.parent
INSTANCES = ROOT / "instances"
ORACLE_CAP_SECONDS = 120.0
GPU_LADDER = ["H100-SXM", "H200", "A100-80GB", "B200", "MI300X", "L40S", "A100-40GB", "H100-PCIe", "MI325X", "TPU-v5p"]
COUNT_LADDER = [8, 16, 32, 64, 128, 256]


LEAN_INSTANCE = INSTANCES / "qwen3-8b-math.json"
# issue 10 item 5: `planopt solve` on a shipped instance within this factor of `import pyomo.environ`
TARGET_RATIO = 1.3


def _wall(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, capture_output=True, check=False)
    return time.perf_counter() - start


def import_floor_table(repeats: int) -> list[str]:
    """Wall time of the CLI against the bare `import pyomo.environ`, interleaved, median of ``repeats``."""
    py, exe = sys.executable, str(Path(sys.executable).with_name("planopt"))
    cases = {
        "`python -c pass` (interpreter start)": [py, "-c", "pass"],
        "`python -c \"import pyomo.environ\"` (the baseline)": [py, "-c", "import pyomo.environ"],
        "imports `solve` cannot do without (pyomo.core, HiGHS, numpy, pydantic, typer)":
            [py, "-c", "import pyomo.core, numpy, pydantic, typer, highspy; from pyomo.contrib.solver.solvers.highs import Highs"],
        "`planopt --help`": [exe, "--help"],
        "`planopt schema`": [exe, "schema"],
        f"`planopt validate {LEAN_INSTANCE.name}`": [exe, "validate", str(LEAN_INSTANCE)],
        f"`planopt solve {LEAN_INSTANCE.name} --json`": [exe, "solve", str(LEAN_INSTANCE), "--json"],
        f"`planopt solve {LEAN_INSTANCE.name} --no-sensitivity`": [exe, "solve", str(LEAN_INSTANCE), "--no-sensitivity"],
        f"`planopt solve {LEAN_INSTANCE.name}`": [exe, "solve", str(LEAN_INSTANCE)],
    }
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(repeats):
        for name, cmd in cases.items():
            times[name].append(_wall(cmd))
    base = statistics.median(times["`python -c \"import pyomo.environ\"` (the baseline)"])
    rows = [f"| command | median s ({repeats} runs) | min s | median / bare Pyomo import |", "|---|---:|---:|---:|"]
    for name, t in times.items():
        rows.append(f"| {name} | {statistics.median(t):.3f} | {min(t):.3f} | {statistics.median(t) / base:.2f} |")
    return rows


STAGES_PROBE = """
import json, sys, time
t0 = time.perf_counter()
from planopt.cli import app
t1 = time.perf_counter()
from planopt.api import solve_instance
from planopt.job.diagnose import sensitivity
from planopt.instance import load_instance
from planopt.report.text import solve_report
from planopt.uncertainty.risk import REPORT_SCENARIOS, plan_risk
from planopt.report.risk import risk_section
from planopt.job.model import PlanModel
t2 = time.perf_counter()
inst = load_instance(sys.argv[1])
t3 = time.perf_counter()
pm = PlanModel(inst)
t4 = time.perf_counter()
result = pm.solve()
t5 = time.perf_counter()
result.binding = sensitivity(pm, result)
t6 = time.perf_counter()
result.risk = plan_risk(inst, result.plan, REPORT_SCENARIOS, 0).to_dict()
t7 = time.perf_counter()
text = solve_report(inst, result) + risk_section(result.risk)
t8 = time.perf_counter()
print(json.dumps({"import the CLI (typer, command modules)": t1 - t0,
                  "import the solve path (Pyomo core, HiGHS, numpy, pydantic, the model)": t2 - t1,
                  "read and validate the instance": t3 - t2, "build the MIP": t4 - t3, "HiGHS solve": t5 - t4,
                  f"Limits table: {len(result.binding)} limits, {sum(b['binding'] for b in result.binding)} binding, re-solves": t6 - t5,
                  f"risk over {REPORT_SCENARIOS:,} scenarios": t7 - t6, "text report": t8 - t7}))
"""


def stages_table(repeats: int) -> list[str]:
    """Where a `planopt solve` spends its time, stage by stage in a fresh process, median of ``repeats``."""
    runs = [json.loads(subprocess.run([sys.executable, "-c", STAGES_PROBE, str(LEAN_INSTANCE)], capture_output=True,
                                      text=True, check=True).stdout) for _ in range(repeats)]
    rows = [f"| stage of `planopt solve {LEAN_INSTANCE.name}` | median s ({repeats} runs) |", "|---|---:|"]
    for stage in runs[0]:
        rows.append(f"| {stage} | {statistics.median(r[stage] for r in runs):.3f} |")
    return rows


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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10, help="runs of each command in the first two tables")
    parser.add_argument("--cli-only", action="store_true", help="only the first table (the CLI's commands against the bare import)")
    args = parser.parse_args()
    repeats = args.repeats
    print(f"### `planopt solve` against the bare Pyomo import (target: {TARGET_RATIO}x)\n")
    print("\n".join(import_floor_table(repeats)))
    if args.cli_only:
        sys.exit(0)
    print("\n### Where a solve's time goes\n")
    print("\n".join(stages_table(repeats)))
    print("\n### End-to-end solve time per shipped instance\n")
    print("\n".join(end_to_end_table()))
    print("\n### Growth with the decision space (Qwen3-8B math instance, scaled)\n")
    print(f"The oracle runs whole spaces up to 200,000 plans; above that its time is its measured seconds per plan on a "
          f"sample times the plan count, shown as '> {ORACLE_CAP_SECONDS:.0f}' when over the cap.\n")
    print("\n".join(scaling_table()))
