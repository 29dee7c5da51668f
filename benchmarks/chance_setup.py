"""What a chance-constrained model costs before HiGHS first checks its clock: the build, then a first run limited
to 0.01 s (the array hand-over and HiGHS's set-up), at 50 and 200 scenarios, on three shipped jobs.

Run:  python benchmarks/chance_setup.py

Its figures set ``solver/job/plan_space.py``'s ``SCENARIO_US_PER_PAIR`` and ``SCENARIO_US_PER_STAGE_PAIR`` and
``solver/uncertainty/chance.py``'s ``LOAD_PER_BUILD_SECOND`` (their comments quote one run; BENCHMARKS.md §13).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from planopt.instance import load_instance
from planopt.job.plan_space import plan_space
from planopt.uncertainty.chance import ChanceModel

ROOT = Path(__file__).resolve().parent.parent


def cases() -> dict[str, dict]:
    """qwen3-8b-math, the split-rollout job with staleness options 0-2, and the staged qwen3-32b-sft-then-rl."""
    read = lambda name: json.loads((ROOT / "instances" / name).read_text())  # noqa: E731
    split = read("qwen3-32b-agentic-rl-split-rollout.json")
    split["training"]["staleness_steps_options"] = [0, 1, 2]
    return {"qwen3-8b-math": read("qwen3-8b-math.json"), "split-rollout + staleness": split,
            "qwen3-32b-sft-then-rl": read("qwen3-32b-sft-then-rl.json")}


def main() -> None:
    print("| job | scenarios | recipe × hardware pairs | stage pairs | build s | first run (0.01 s limit) s | first run / build |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, data in cases().items():
        inst = load_instance(data)
        space = plan_space(inst)
        for n in (50, 200):
            start = time.perf_counter()
            model = ChanceModel(inst, 0.8, n, 0)
            build = time.perf_counter() - start
            start = time.perf_counter()
            model.plan_model.solve(time_limit=0.01)
            first = time.perf_counter() - start
            print(f"| {name} | {n} | {space.recipes * space.hardware:,} | {space.stage_pairs:,} | {build:.2f} | "
                  f"{first:.2f} | {first / build:.2f} |", flush=True)


if __name__ == "__main__":
    main()
