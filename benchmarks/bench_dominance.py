"""Recipe dominance alone (``models/formulation/data.dominated_recipes``) on bench_scale's recipe-heavy 10^8-plan
shape (``1e8r``): best of 3 calls on the formulation data the single-job model builds from.

Run:  python benchmarks/bench_dominance.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_scale  # noqa: E402

from planopt.instance import parse_instance  # noqa: E402
from planopt.job.model import PlanModel  # noqa: E402
from planopt.models.formulation import data as formulation_data  # noqa: E402


def main() -> None:
    inst = parse_instance(bench_scale.instance_of("1e8r"))
    captured = []
    original = formulation_data.dominated_recipes

    def keep(data, *args, **kwargs):
        captured.append(data)
        return original(data, *args, **kwargs)

    formulation_data.dominated_recipes = keep
    try:
        PlanModel(inst)
    finally:
        formulation_data.dominated_recipes = original
    data = captured[0]
    times = []
    for _ in range(3):
        start = time.perf_counter()
        dropped = original(data)
        times.append(time.perf_counter() - start)
    print("| recipes | dropped | best of 3 s |")
    print("|---:|---:|---:|")
    print(f"| {len(dropped):,} | {int(dropped.sum()):,} | {min(times):.2f} |")


if __name__ == "__main__":
    main()
