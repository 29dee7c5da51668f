"""Portfolio model memory: the measurement behind ``solver/portfolio/loading.py``'s memory rule.

Run:  python benchmarks/portfolio_memory.py [JOBSxTYPESxBUCKETS ...]

Each case is a generated portfolio (``generate.random_portfolio``, seed 1) measured in its own
process: resident memory (``/proc/self/statm``) after loading it, then the growth and the peak
(``getrusage`` ru_maxrss) of building the portfolio MIP (``PortfolioModel``), handing it to HiGHS
(``set_instance``, what a solve does first) and building every job's plan arrays (``job_plans``,
the pricing's input). Printed with the model's counts (schedule keys: the (job, bucket, GPU type,
tier) of ``m.U``; variables; constraint nonzeros) and the estimate of ``loading.portfolio_memory``.
Prints one markdown table.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
CASES = ("25x14x26", "50x14x26", "100x14x26", "50x14x104", "25x14x520")


def rss_mib() -> float:
    """Resident memory of this process now, MiB."""
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def measure(case: str) -> dict:
    """One case in this process (the child)."""
    import pyomo.environ as pyo
    from planopt.portfolio.generate import random_portfolio
    from planopt.portfolio.lagrange import job_plans
    from planopt.portfolio.loading import load_portfolio, portfolio_memory
    from planopt.portfolio.solve import PortfolioModel
    jobs, types, buckets = (int(x) for x in case.split("x"))
    data = load_portfolio(random_portfolio(jobs, types, buckets, seed=1))
    estimate = portfolio_memory(data)
    before = rss_mib()
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    pm = PortfolioModel(data)
    built = rss_mib()
    pm.solver.set_instance(pm.model)
    highs = rss_mib()
    plans = [job_plans(pm, j) for j in range(jobs)]   # kept alive: its memory is measured
    after = rss_mib()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    nvars = sum(1 for _ in pm.model.component_data_objects(pyo.Var))
    nnz = sum(len(list(pyo.expr.identify_variables(c.body))) for c in pm.model.component_data_objects(pyo.Constraint))
    return {"case": case, "jobs": len(plans), "keys": len(pm.model.U), "variables": nvars, "nonzeros": nnz,
            "model_mib": built - before, "highs_mib": highs - built, "plans_mib": after - highs,
            "growth_mib": after - before, "peak_growth_mib": max(peak, after) - max(before, peak_before),
            "estimate_mib": estimate.total_mib, "estimate": estimate.describe(), "baseline_mib": before}


def main() -> None:
    """Each case in a child process (``--child CASE``), then the table."""
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        print(json.dumps(measure(sys.argv[2])))
        return
    cases = sys.argv[1:] or CASES
    print(f"load average before: {os.getloadavg()[0]:.1f}\n")
    print("| portfolio (jobs × types × buckets) | schedule keys | variables | nonzeros | model MiB | HiGHS MiB | "
          "plan arrays MiB | growth MiB | bytes per key (growth less plan arrays) | estimate MiB |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for case in cases:
        run = subprocess.run([sys.executable, __file__, "--child", case], capture_output=True, text=True)
        if run.returncode != 0:
            print(f"| {case} | failed: {run.stderr.strip().splitlines()[-1]} |")
            continue
        r = json.loads(run.stdout.strip().splitlines()[-1])
        per_key = (r["model_mib"] + r["highs_mib"]) * 2**20 / r["keys"]
        print(f"| {case.replace('x', ' × ')} | {r['keys']:,} | {r['variables']:,} | {r['nonzeros']:,} | {r['model_mib']:.0f} | "
              f"{r['highs_mib']:.0f} | {r['plans_mib']:.0f} | {r['growth_mib']:.0f} | {per_key:,.0f} | {r['estimate_mib']:.0f} |")


if __name__ == "__main__":
    main()
