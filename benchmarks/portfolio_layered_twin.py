"""Layered jobs among plain ones: the MIP alone against the MIP started from the plain twin (BENCHMARKS.md §20).

A generated portfolio (``planopt generate portfolio``) has its first ``k`` jobs offered stages: each of them may
run either of its two methods alone, or both one after the other (``training.stage_sequences``), so its one-stage
optimum is still there. One such job used to switch the whole portfolio to the MIP alone. Each case is solved
twice in turn, under the same time limit: ``warm_start=False`` (the MIP alone: what a portfolio with a layered job
got before the plain twin) and the default (``phases.start_from_plain_jobs``), and, for reference, the portfolio
as generated (every job plain). Each solve runs in its own process, one after another.

Run:  python benchmarks/portfolio_layered_twin.py [--jobs 50] [--seeds 1,2] [--staged 1,5] [--limit 60]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ORDER = ("sft", "rl", "opd")


def staged(path: Path, k: int, out: Path) -> int:
    """The portfolio at ``path`` with its first ``k`` jobs of two or more methods offered stages; how many were."""
    data = json.loads(path.read_text())
    done = 0
    for job in data["jobs"]:
        methods = sorted(job["instance"]["training"]["methods"], key=ORDER.index)
        if done == k or len(methods) < 2:
            continue
        a, b = methods[:2]
        job["instance"]["training"]["stage_sequences"] = [[a], [b], [a, b]]
        done += 1
    out.write_text(json.dumps(data))
    return done


def solve(path: Path, limit: float, warm_start: bool) -> dict:
    """One solve in its own process: status, cost, gap and wall seconds."""
    code = ("import json, sys, time; from planopt.portfolio.solve import PortfolioModel; t = time.perf_counter(); "
            f"pm = PortfolioModel({str(path)!r}); r = pm.solve(time_limit={limit}, warm_start={warm_start}); "
            "print(json.dumps({'status': r.status, 'cost': r.cost_usd, 'gap': r.gap, "
            "'wall': time.perf_counter() - t}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=50)
    parser.add_argument("--seeds", default="1,2")
    parser.add_argument("--staged", default="1,5")
    parser.add_argument("--limit", type=float, default=60.0)
    args = parser.parse_args()
    print("| seed | staged jobs | solve | status | gap | cost $ | wall s |\n|---:|---:|---|---|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for seed in [int(s) for s in args.seeds.split(",")]:
            base = Path(tmp) / f"p{args.jobs}-{seed}.json"
            subprocess.run([str(Path(sys.executable).parent / "planopt"), "generate", "portfolio", "--jobs", str(args.jobs),
                            "--gpu-types", "10", "--buckets", "26", "--seed", str(seed), "--out", str(base)],
                           check=True, capture_output=True)
            cases = [(0, base, True, "every job plain")]
            for k in [int(s) for s in args.staged.split(",")]:
                out = Path(tmp) / f"p{args.jobs}-{seed}-staged{k}.json"
                n = staged(base, k, out)
                cases += [(n, out, False, "MIP alone"), (n, out, True, "from the plain twin")]
            for n, path, warm, name in cases:
                r = solve(path, args.limit, warm)
                gap = "-" if r["gap"] is None else f"{100 * r['gap']:.2f} %"
                cost = "-" if r["cost"] is None else f"{r['cost']:,.0f}"
                print(f"| {seed} | {n} | {name} | {r['status']} | {gap} | {cost} | {r['wall']:.1f} |", flush=True)


if __name__ == "__main__":
    main()
