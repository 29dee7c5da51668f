"""What a user waits for: `planopt solve PORTFOLIO --time-limit S` as a whole command.

Run:  python benchmarks/bench_portfolio_time_limit.py [--jobs 40] [--seed 7] [--limits 3,5,10,30] [--repeats 3]
(its table is in BENCHMARKS.md §3, "A time limit that bounds the whole command")

Issue 11 item 5: `--time-limit` is the total wall time. Each run is the console script in a
fresh process (`planopt solve FILE --time-limit S --json`), timed from before the process is
started until it has exited, so the interpreter's start-up, the imports, loading, building,
the solve, the report and the exit all count. The portfolio is `planopt generate portfolio
--jobs N --gpu-types 10 --buckets 26 --seed S`. Every run is printed (one JSON line each):
wall seconds, exit code, status, gap and cost, and the load average before it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=40)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--limits", default="3,5,10,30")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    exe = str(Path(sys.executable).with_name("planopt"))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "portfolio.json"
        subprocess.run([exe, "-q", "generate", "portfolio", "--jobs", str(args.jobs), "--gpu-types", "10", "--buckets", "26",
                        "--seed", str(args.seed), "--out", str(path)], check=True)
        for limit in [float(x) for x in args.limits.split(",")]:
            for repeat in range(args.repeats):
                load = os.getloadavg()[0]
                t0 = time.perf_counter()
                done = subprocess.run([exe, "-q", "solve", str(path), "--time-limit", str(limit), "--json"],
                                      capture_output=True, text=True)
                wall = time.perf_counter() - t0
                out = json.loads(done.stdout)
                print(json.dumps({"jobs": args.jobs, "seed": args.seed, "time_limit_s": limit, "repeat": repeat,
                                  "wall_s": round(wall, 2), "over_s": round(wall - limit, 2), "exit": done.returncode,
                                  "status": out.get("status"), "gap": out.get("gap"), "cost_usd": out.get("cost_usd"),
                                  "load_average_before": round(load, 2)}), flush=True)


if __name__ == "__main__":
    main()
