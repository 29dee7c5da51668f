"""Seconds to build a portfolio's model and hand it to HiGHS, per schedule key (``loading.portfolio_memory``'s
count): sets ``solver/portfolio/loading.py``'s ``BUILD_SECONDS_PER_SCHEDULE_KEY``, by which a portfolio solve whose
time limit cannot hold the build is stopped before it starts.

Run:  python benchmarks/portfolio_build_time.py [--jobs 20,40,80] [--seed 7]
(generated portfolios of 10 GPU types and 26 buckets, as ``bench_portfolio_time_limit.py``'s; each in its own process)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def measure(path: str) -> dict:
    from planopt.portfolio.loading import load_portfolio, portfolio_memory
    from planopt.portfolio.solve import PortfolioModel
    data = load_portfolio(path)
    keys = portfolio_memory(data).keys
    began = time.perf_counter()
    pm = PortfolioModel(data)
    built = time.perf_counter()
    pm.solver.set_instance(pm.model)
    handed = time.perf_counter()
    return {"keys": keys, "build_s": built - began, "hand_over_s": handed - built,
            "us_per_key": 1e6 * (handed - began) / keys}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", default="20,40,80")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    print("| jobs | schedule keys | build s | hand-over s | µs per key |\n|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for jobs in (int(j) for j in args.jobs.split(",")):
            path = Path(tmp) / f"p{jobs}.json"
            subprocess.run([sys.executable, "-m", "planopt.cli", "generate", "portfolio", "--jobs", str(jobs),
                            "--gpu-types", "10", "--buckets", "26", "--seed", str(args.seed), "--out", str(path)],
                           check=True, capture_output=True)
            code = f"import json,sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); " \
                   f"from portfolio_build_time import measure; print(json.dumps(measure({str(path)!r})))"
            out = json.loads(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                                            text=True).stdout.strip().splitlines()[-1])
            print(f"| {jobs} | {out['keys']:,} | {out['build_s']:.2f} | {out['hand_over_s']:.2f} | {out['us_per_key']:.0f} |")


if __name__ == "__main__":
    main()
