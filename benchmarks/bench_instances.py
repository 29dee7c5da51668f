"""`planopt solve` on every shipped single-job instance, against the bare Pyomo import.

Run:  python benchmarks/bench_instances.py [--repeats N]   (its table is in BENCHMARKS.md §7)

Issue 12's target: with every decision enabled, `planopt solve` on each shipped instance
under 5 s on 2 cores. Each command is the README's default (`planopt solve FILE`: the
Limits table's re-solves and the risk over 1,000 scenarios included). The commands are
interleaved (one of each, N times) so that a change in the machine's load hits them
alike; the table reports the median, the min, the exit code and the load average
before the run. Portfolios (`portfolio-*.json`) have their own benchmark
(`bench_portfolio.py`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_SECONDS = 5.0   # issue 12: "under 5 s on 2 cores"


def shipped_instances() -> list[Path]:
    """Every shipped single-job instance (not portfolios, calibration cases or the Hugging Face configs of instances/hf)."""
    paths = sorted(ROOT.glob("instances/*.json")) + sorted(ROOT.glob("instances/*/*.json"))
    jobs = [p for p in paths if not p.name.startswith("portfolio") and p.parent.name not in ("calibration", "calibration-validation", "hf", "plans")]
    return [p for p in jobs if "prices" not in json.loads(p.read_text())]  # a price file (catalog import) is no job


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    exe = str(Path(sys.executable).with_name("planopt"))
    cases = {"`python -c \"import pyomo.environ\"` (the floor)": [sys.executable, "-c", "import pyomo.environ"]}
    for p in shipped_instances():
        cases[f"`planopt solve {p.relative_to(ROOT / 'instances')}`"] = [exe, "solve", str(p)]
    times = {name: [] for name in cases}
    codes = {}
    load = os.getloadavg()
    for _ in range(args.repeats):
        for name, cmd in cases.items():
            start = time.perf_counter()
            codes[name] = subprocess.run(cmd, capture_output=True, check=False).returncode
            times[name].append(time.perf_counter() - start)
    floor = statistics.median(next(iter(times.values())))
    print(f"_{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average before: "
          f"{load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}; {args.repeats} interleaved runs each._\n")
    print("| command | median s | min s | exit code | median / bare Pyomo import | under 5 s |")
    print("|---|---:|---:|---:|---:|---|")
    for name, t in times.items():
        med = statistics.median(t)
        print(f"| {name} | {med:.2f} | {min(t):.2f} | {codes[name]} | {med / floor:.2f} | "
              f"{'yes' if med < TARGET_SECONDS else '**no**'} |")


if __name__ == "__main__":
    main()
