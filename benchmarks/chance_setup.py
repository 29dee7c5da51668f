"""What a chance-constrained model costs before HiGHS can stop at its limit: the build, then a first run of the
chance MIP and, on a model of its own (its hand-over inside it, as when the chance MIP is refused before any run),
a first run of the explanation's MIP (the fewest scenarios broken, ``ChanceModel._least_violations``), each limited
twice: to 0.01 s (HiGHS stops at its first time check) and to 0.25 s past that first run's time (it stops at its
second check, after the root LP's set-up, which checks no clock either), at 50 and 200 scenarios, on three
shipped jobs.

Run:  python benchmarks/chance_setup.py

Its figures set ``solver/job/plan_space.py``'s ``SCENARIO_US_PER_PAIR`` and ``SCENARIO_US_PER_STAGE_PAIR`` and
``solver/uncertainty/chance.py``'s ``LOAD_PER_BUILD_SECOND`` (their comments quote one run; BENCHMARKS.md §13, §14).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from planopt.instance import load_instance
from planopt.job.plan_space import plan_space
from planopt.uncertainty.chance import ChanceModel

ROOT = Path(__file__).resolve().parent.parent
PAST_FIRST_CHECK_S = 0.25


def cases() -> dict[str, dict]:
    """qwen3-8b-math, the split-rollout job with staleness options 0-2, and the staged qwen3-32b-sft-then-rl."""
    read = lambda name: json.loads((ROOT / "instances" / name).read_text())  # noqa: E731
    split = read("qwen3-32b-agentic-rl-split-rollout.json")
    split["training"]["staleness_steps_options"] = [0, 1, 2]
    return {"qwen3-8b-math": read("qwen3-8b-math.json"), "split-rollout + staleness": split,
            "qwen3-32b-sft-then-rl": read("qwen3-32b-sft-then-rl.json")}


def timed_run(inst, n: int, explanation: bool, limit: float) -> tuple[float, float]:
    """(build s, first run s) of a fresh model whose first run is limited to ``limit``."""
    start = time.perf_counter()
    model = ChanceModel(inst, 0.8, n, 0)
    build = time.perf_counter() - start
    start = time.perf_counter()
    if explanation:
        model._least_violations(model.limits, limit)
    else:
        model.plan_model.solve(time_limit=limit)
    return build, time.perf_counter() - start


def main() -> None:
    print("| job | scenarios | recipe × hardware pairs | stage pairs | MIP | build s | run to the first check s "
          "| run to the second check s | second check / build |")
    print("|---|---:|---:|---:|---|---:|---:|---:|---:|")
    for name, data in cases().items():
        inst = load_instance(data)
        space = plan_space(inst)
        for n in (50, 200):
            for explanation in (False, True):
                _, first = timed_run(inst, n, explanation, 0.01)
                build, second = timed_run(inst, n, explanation, first + PAST_FIRST_CHECK_S)
                print(f"| {name} | {n} | {space.recipes * space.hardware:,} | {space.stage_pairs:,} | "
                      f"{'explanation' if explanation else 'chance'} | {build:.2f} | {first:.2f} | {second:.2f} | "
                      f"{second / build:.2f} |", flush=True)


if __name__ == "__main__":
    main()
