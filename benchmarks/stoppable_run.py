"""What a stoppable HiGHS run costs (``solver/job/highs_child.py``), and whether it holds its limit.

1. The child's start: ``run_stoppable`` on a one-column LP, five times (Python, numpy and highspy imported, the
   arrays read, the answer sent back): sets ``highs_child.CHILD_START_SECONDS``.
2. The explanation's MIP (the fewest scenarios broken, ``ChanceModel._least_violations`` over every limit) of three
   shipped jobs at 200 scenarios, run in process and in a child with no time limit that binds (3,600 s): the same
   count, and the seconds of each.
3. The commands of BENCHMARKS.md §14: ``planopt solve I --confidence 0.8 --time-limit L --json`` on the
   split-rollout job with staleness options 0-2, whole process, L = 5, 10, 20.

Run:  python benchmarks/stoppable_run.py
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from planopt.instance import load_instance
from planopt.job.highs_child import run_stoppable
from planopt.uncertainty.chance import ChanceModel

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from chance_setup import cases  # noqa: E402  (the same three jobs)


def child_start_seconds(repeats: int = 5) -> list[float]:
    """Seconds of ``run_stoppable`` on a one-column LP (min x, 0 <= x <= 1), each run."""
    problem = {"num_col": 1, "num_row": 0, "num_nz": 0, "a_format": 2, "sense": 1, "offset": 0.0,
               "col_cost": np.ones(1), "col_lower": np.zeros(1), "col_upper": np.ones(1), "row_lower": np.zeros(0),
               "row_upper": np.zeros(0), "a_start": np.zeros(0, dtype=np.int32), "a_index": np.zeros(0, dtype=np.int32),
               "a_value": np.zeros(0), "integrality": np.zeros(1, dtype=np.int32), "start": None}
    out = []
    for _ in range(repeats):
        began = time.perf_counter()
        answer = run_stoppable(problem, {"threads": 1}, began + 60.0)
        out.append(time.perf_counter() - began)
        assert answer["status"] == "kOptimal"
    return out


def explanation_seconds(raw: dict, stoppable: bool) -> tuple[int | None, float]:
    """(least count, seconds) of the explanation MIP over every limit at 200 scenarios."""
    model = ChanceModel(load_instance(raw), 0.8, 200, 0)
    model._stoppable = stoppable
    began = time.perf_counter()
    best = model._least_violations(model.limits, 3600.0).least
    return best, time.perf_counter() - began


def command_seconds(raw: dict, limit: float) -> tuple[float, int]:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(raw, f)
    began = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "planopt.cli", "solve", f.name, "--confidence", "0.8",
                           "--time-limit", str(limit), "--json"], capture_output=True)
    return time.perf_counter() - began, done.returncode


def main() -> None:
    starts = child_start_seconds()
    print("child start s: " + ", ".join(f"{s:.3f}" for s in starts))
    print("| job | in process: count | s | in a child: count | s | child / in process |")
    print("|---|---:|---:|---:|---:|---:|")
    every = cases()
    for name, raw in every.items():
        (a, sa), (b, sb) = explanation_seconds(raw, False), explanation_seconds(raw, True)
        print(f"| {name} | {a} | {sa:.2f} | {b} | {sb:.2f} | {sb / sa:.2f} |")
    print("| `--time-limit` | wall s | exit |")
    print("|---:|---:|---:|")
    for limit in (5, 10, 20):
        seconds, code = command_seconds(every["split-rollout + staleness"], limit)
        print(f"| {limit} | {seconds:.2f} | {code} |")


if __name__ == "__main__":
    main()
