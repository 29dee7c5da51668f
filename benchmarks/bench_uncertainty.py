"""Chance-constrained solves and plan risk on every shipped single-job instance.

For each instance and confidence: the wall time of a chance-constrained solve
over 200 scenarios (build, HiGHS, the out-of-sample check on 10,000 fresh
scenarios), its status, the in-sample and out-of-sample shares of scenarios
meeting every limit, and their distance to the confidence asked. Then the
time to measure one plan's risk over 10,000 scenarios (in process, and
`planopt evaluate --scenarios 10000` end to end). Every case run is printed,
infeasible ones included.

    python benchmarks/bench_uncertainty.py > results.md
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from planopt.uncertainty.chance import ChanceModel
from planopt.instance import load_instance
from planopt.uncertainty.risk import plan_risk
from planopt.job.model import solve

ROOT = Path(__file__).resolve().parent.parent
INSTANCES = ["tiny", "qwen3-8b-math", "qwen3-32b-agentic-rl", "llama-70b-domain-injection", "infeasible-deadline"]
CONFIDENCES = (0.5, 0.8, 0.9)
SCENARIOS = 200
RISK_SCENARIOS = 10_000


def chance_rows() -> list[str]:
    rows = ["| instance | confidence | status | solve s | in-sample | out-of-sample (10,000) | out − asked | reachable |",
            "|---|---:|---|---:|---:|---:|---:|---:|"]
    for name in INSTANCES:
        inst = load_instance(ROOT / "instances" / f"{name}.json")
        for confidence in CONFIDENCES:
            start = time.perf_counter()
            result = ChanceModel(inst, confidence, SCENARIOS).solve()
            seconds = time.perf_counter() - start
            risk = result.risk or {}
            if result.status == "optimal":
                rows.append(f"| {name} | {confidence:.2f} | optimal | {seconds:.2f} | {risk['in_sample_share']:.3f} | "
                            f"{risk['out_of_sample_share']:.4f} | {risk['out_of_sample_share'] - confidence:+.4f} | - |")
            else:
                reach = risk.get("reachable_confidence")
                rows.append(f"| {name} | {confidence:.2f} | {result.status} | {seconds:.2f} | - | - | - | "
                            f"{'-' if reach is None else f'{reach:.3f}'} |")
    return rows


def risk_rows() -> list[str]:
    rows = ["| instance | plan risk, 10,000 scenarios, in process s | `planopt evaluate --scenarios 10000` s |", "|---|---:|---:|"]
    planopt = Path(sys.executable).parent / "planopt"
    for name in INSTANCES[:4]:
        path = ROOT / "instances" / f"{name}.json"
        inst = load_instance(path)
        plan = solve(inst).plan
        start = time.perf_counter()
        plan_risk(inst, plan, RISK_SCENARIOS)
        in_process = time.perf_counter() - start
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump({"plan": plan.to_dict()}, f)
        start = time.perf_counter()
        subprocess.run([str(planopt), "evaluate", str(path), f.name, "--scenarios", str(RISK_SCENARIOS), "--json"],
                       check=True, capture_output=True)
        rows.append(f"| {name} | {in_process:.3f} | {time.perf_counter() - start:.2f} |")
    return rows


if __name__ == "__main__":
    print("\n".join(chance_rows()))
    print()
    print("\n".join(risk_rows()))
