"""``planopt track`` on a 100,000-point TensorBoard log (issue 26: under 3 s on 2 cores).

The log is the shipped run's plan run to its end (400 steps, ``make_synthetic_run.synthetic_history`` at the
issue's slow parameters) plus as many extra series, one point per step, as bring it to 100,000 scalar points: a
real run logs many series (losses, gradient norms, learning rates) beside the few ``track`` reads, and the reader
parses them all. Timed: reading the folder, the whole of ``planopt.track`` in process (read, state, fit, risk),
and ``planopt track`` end to end in a fresh process (imports included). Best of ``REPEATS``.

    python benchmarks/track_speed.py
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from benchmarks import make_synthetic_run as gen  # noqa: E402

POINTS = 100_000
REPEATS = 3


def big_log(folder: Path) -> int:
    """Write the log; return its number of scalar points."""
    import json

    from planopt.api import evaluate_given_plan
    from planopt.instance import load_instance
    inst = load_instance(gen.RUN / "instance.json")
    plan, _ = evaluate_given_plan(inst, json.loads((gen.RUN / "plan.json").read_text()), "plan")
    history = gen.synthetic_history(inst, plan, gen.SLOW, share=1.0)
    have = int(history.drop(columns=["_step", "_runtime"]).notna().to_numpy().sum())
    extra = -(-(POINTS - have) // len(history))
    rng = np.random.default_rng(0)
    extra_columns = {}
    for i in range(extra):
        extra_columns[f"train/extra_{i:03d}"] = rng.standard_normal(len(history))
    import pandas as pd
    history = pd.concat([history, pd.DataFrame(extra_columns)], axis=1)
    gen.write_tensorboard(history, folder)
    return have + extra * len(history)


def best(fn) -> float:
    times = []
    for _ in range(REPEATS):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    import planopt
    from planopt.runs.readers import read_run
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "tensorboard"
        points = big_log(folder)
        run = gen.RUN
        read = best(lambda: read_run(folder))
        whole = best(lambda: planopt.track(run / "instance.json", run / "plan.json", folder, run / "mapping.json"))
        cli = [sys.executable, "-m", "planopt.cli", "track", str(run / "instance.json"), str(run / "plan.json"), str(folder),
               "--mapping", str(run / "mapping.json"), "--json"]
        end_to_end = best(lambda: subprocess.run(cli, check=True, capture_output=True))
        size = sum(p.stat().st_size for p in folder.iterdir())
    print(f"| points | event file | read the folder | planopt.track in process | planopt track (fresh process) |")
    print("|---:|---:|---:|---:|---:|")
    print(f"| {points:,} | {size / 1e6:.1f} MB | {read:.2f} s | {whole:.2f} s | {end_to_end:.2f} s |")


if __name__ == "__main__":
    main()
