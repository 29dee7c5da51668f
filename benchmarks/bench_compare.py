"""`planopt` commands of this checkout against another installed `planopt` (a baseline commit), interleaved.

Run:  python benchmarks/bench_compare.py --other /path/to/baseline/.venv/bin/planopt [--repeats N] [--args "..."]

Each shipped single-job instance is solved by both executables in turn, N times (one of each, then again), so
that a change in the machine's load hits both alike; the table gives each median, the ratio new / other, and
each exit code. ``--args`` adds options to every command (e.g. ``--confidence 0.8 --scenarios 200``); a command
the other one refuses (exit 2) is reported as such. BENCHMARKS.md §11 records the runs of issue 23.
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench_instances import shipped_instances

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--other", required=True, help="the baseline's planopt executable")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--args", default="", help="options added to every solve")
    args = ap.parse_args()
    mine = str(Path(sys.executable).with_name("planopt"))
    extra = shlex.split(args.args)
    cases = [p for p in shipped_instances()]
    times = {(p, who): [] for p in cases for who in ("new", "other")}
    codes = {}
    load = os.getloadavg()
    for _ in range(args.repeats):
        for p in cases:
            for who, exe in (("new", mine), ("other", args.other)):
                start = time.perf_counter()
                codes[p, who] = subprocess.run([exe, "solve", str(p), *extra], capture_output=True, check=False).returncode
                times[p, who].append(time.perf_counter() - start)
    print(f"_{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average before: {load[0]:.2f} / {load[1]:.2f} / "
          f"{load[2]:.2f}; {args.repeats} interleaved runs each; options: `{args.args or 'none'}`._\n")
    print("| instance | new median s | other median s | new / other | exit new | exit other |")
    print("|---|---:|---:|---:|---:|---:|")
    for p in cases:
        new, old = statistics.median(times[p, "new"]), statistics.median(times[p, "other"])
        ratio = "-" if codes[p, "other"] == 2 else f"{new / old:.2f}"
        print(f"| `{p.relative_to(ROOT / 'instances')}` | {new:.2f} | {old:.2f} | {ratio} | {codes[p, 'new']} | {codes[p, 'other']} |")


if __name__ == "__main__":
    main()
