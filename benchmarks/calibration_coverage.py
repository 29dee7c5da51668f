"""Coverage of the calibration intervals: how often a published figure lies in its P10-P90.

Run:  python benchmarks/calibration_coverage.py [--scenarios N] [--seed S] [--noise-seeds K]
(its tables are in CALIBRATION.md, "Uncertainty: the spreads and their coverage").

For the public set (instances/calibration) and the validation set
(instances/calibration-validation), one markdown table per set: case, figure,
published, P10, P50, P90 of the prediction under the uncertainty model
(``planopt.uncertainty.calibration_intervals.case_intervals``, the intervals
``planopt calibrate`` prints) and whether the published figure is inside; then
the coverage line: the share of published figures inside their sampled P10-P90
(nominal 80 %) and the median width P90/P10, by kind and over the set.
``--noise-seeds K`` adds the sampling noise of every endpoint: its relative
standard deviation over seeds 0..K-1.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from planopt.uncertainty.calibrate import calibrate_case
from planopt.uncertainty.calibration_intervals import FIXED, N_SCENARIOS, SAMPLED, SEED, case_intervals

ROOT = Path(__file__).resolve().parent.parent
SETS = {"public": ROOT / "instances" / "calibration", "validation": ROOT / "instances" / "calibration-validation"}
NOMINAL_COVERAGE = 0.80  # P10-P90: a calibrated interval holds the published figure 80 % of the time


def num(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:.4g}" if abs(x) < 1e6 else f"{x:.3e}"


def measure(directory: Path, n: int, seed: int) -> tuple[list[dict], float]:
    """One record per figure: case, kind, figure, published, predicted, p10, p50, p90, state, inside."""
    records, start = [], time.perf_counter()
    for path in sorted(directory.glob("*.json")):
        rows = calibrate_case(path)
        kind = json.loads(path.read_text())["predict"]
        for row, fi in zip(rows, case_intervals(path, n, seed)):
            inside = None if fi.p10 is None else fi.p10 <= row.published <= fi.p90
            records.append({"case": row.id, "kind": kind, "figure": row.figure, "published": row.published,
                            "predicted": row.predicted, "p10": fi.p10, "p50": fi.p50, "p90": fi.p90,
                            "state": fi.state, "inside": inside, "file": path})
    return records, time.perf_counter() - start


def figure_table(records: list[dict]) -> list[str]:
    out = ["| case | figure | published | P10 | P50 | P90 | inside |", "|---|---|---:|---:|---:|---:|---|"]
    for r in records:
        if r["inside"] is None:
            where = "no interval"
        elif r["inside"]:
            where = "yes"
        else:
            where = "**below**" if r["published"] < r["p10"] else "**above**"
        if r["state"] == FIXED:
            where += " (fixed: zero width)"
        out.append(f"| {r['case']} | {r['figure']} | {num(r['published'])} | {num(r['p10'])} | {num(r['p50'])} | "
                   f"{num(r['p90'])} | {where} |")
    return out


def coverage_lines(records: list[dict]) -> list[str]:
    def line(label: str, subset: list[dict], bullet: str = "- ") -> str:
        if not subset:
            return f"{bullet}{label}: no figures"
        hits = sum(bool(r["inside"]) for r in subset)
        widths = [r["p90"] / r["p10"] for r in subset if r["p10"] and r["p10"] > 0]
        return (f"{bullet}{label}: {hits} of {len(subset)} inside P10-P90 ({100.0 * hits / len(subset):.0f} %, nominal "
                f"{100.0 * NOMINAL_COVERAGE:.0f} %), median width P90/P10 {statistics.median(widths):.2f}")

    sampled = [r for r in records if r["state"] == SAMPLED]
    by_kind = defaultdict(list)
    for r in sampled:
        by_kind[r["kind"]].append(r)
    out = [line("**sampled figures**", sampled)]
    out += [line(kind, rs, "  - ") for kind, rs in sorted(by_kind.items())]
    fixed = [r for r in records if r["state"] == FIXED]
    if fixed:
        hits = sum(bool(r["inside"]) for r in fixed)
        out.append(f"- fixed (zero-width) figures: {hits} of {len(fixed)} equal to the published figure")
    missing = [r for r in records if r["inside"] is None]
    if missing:
        out.append(f"- without an interval (not predicted): {len(missing)}")
    return out


def noise_table(records: list[dict], n: int, seeds: int) -> list[str]:
    out = ["| case | figure | P10 mean | P10 rel. sd | P90 mean | P90 rel. sd |", "|---|---|---:|---:|---:|---:|"]
    by_file = defaultdict(list)
    for r in records:
        if r["state"] == SAMPLED:
            by_file[(r["file"], r["case"])].append(r["figure"])
    for (path, case), figures in by_file.items():
        runs = [{fi.figure: fi for fi in case_intervals(path, n, s)} for s in range(seeds)]
        for f in figures:
            p10 = np.array([run[f].p10 for run in runs])
            p90 = np.array([run[f].p90 for run in runs])
            out.append(f"| {case} | {f} | {num(p10.mean())} | "
                       f"{100 * p10.std() / p10.mean():.1f} % | {num(p90.mean())} | {100 * p90.std() / p90.mean():.1f} % |")
    return out


def t_quantile(q: float, df: int) -> float:
    """Student t quantile (numpy only: the CDF by Simpson integration of the density, then bisection)."""
    c = math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / math.sqrt(df * math.pi)

    def cdf(x: float) -> float:
        grid = np.linspace(0.0, x, 2001)
        dens = c * (1.0 + grid**2 / df) ** (-(df + 1) / 2)
        h = grid[1] - grid[0]
        return 0.5 + h / 3 * (dens[0] + dens[-1] + 4 * dens[1:-1:2].sum() + 2 * dens[2:-1:2].sum())

    lo, hi = 0.0, 50.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if cdf(mid) < q else (lo, mid)
    return (lo + hi) / 2


def predictive_range(log_ratios: np.ndarray) -> tuple[float, float]:
    """P10-P90 of the next ratio under a log-normal fitted to ``log_ratios`` (Student t predictive interval)."""
    n = len(log_ratios)
    m, sd = log_ratios.mean(), log_ratios.std(ddof=1)
    half = t_quantile(0.9, n - 1) * sd * math.sqrt(1.0 + 1.0 / n)
    return math.exp(m - half), math.exp(m + half)


def step_spread_check(all_records: list[dict]) -> list[str]:
    """The step-time spreads against the current model's residuals (predicted / published step seconds of
    the step_seconds rows, the rule of models/catalog/spreads.py and benchmarks/uncertainty_spreads.py: numpy linear
    quantiles), each checked leave-one-out: is a row inside the range computed from the other rows?
    Beside it, the log-normal predictive range (Student t), which allows for the few rows."""
    from planopt.uncertainty.calibrate import load_case
    from planopt.models.catalog import spreads
    out = ["| students | rows | spreads.py P10-P90 | current rows: sample P10-P90 | leave-one-out inside | "
           "log-normal predictive P10-P90 | leave-one-out inside |",
           "|---|---:|---|---|---:|---|---:|"]
    groups: dict[str, list[float]] = defaultdict(list)
    for r in all_records:
        if r["kind"] != "step_seconds" or r["predicted"] is None:
            continue
        student = load_case(r["file"]).data["student"]
        moe = student.get("active_params_b", student["params_b"]) < student["params_b"]
        groups["MoE" if moe else "dense"].append(r["predicted"] / r["published"])
    constants = {"dense": spreads.FACTOR_STEP_TIME_DENSE, "MoE": spreads.FACTOR_STEP_TIME_MOE}
    for name in ("dense", "MoE"):
        ratios = np.array(groups[name])
        logs = np.log(ratios)
        lo, hi = np.quantile(ratios, [0.1, 0.9])
        plo, phi = predictive_range(logs)
        loo_q = loo_t = 0
        for i, ri in enumerate(ratios):
            a, b = np.quantile(np.delete(ratios, i), [0.1, 0.9])
            loo_q += bool(a <= ri <= b)
            a, b = predictive_range(np.delete(logs, i))
            loo_t += bool(a <= ri <= b)
        c = constants[name]
        out.append(f"| {name} | {len(ratios)} | {c[0]:.3f}-{c[1]:.3f} | {lo:.3f}-{hi:.3f} | {loo_q} of {len(ratios)} | "
                   f"{plo:.3f}-{phi:.3f} | {loo_t} of {len(ratios)} |")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scenarios", type=int, default=N_SCENARIOS, help="scenarios per case")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--noise-seeds", type=int, default=0, help="also report endpoint noise over this many seeds")
    args = parser.parse_args()
    print(f"Intervals: {args.scenarios} stratified scenarios per case, seed {args.seed} "
          f"(planopt.uncertainty.calibration_intervals; `planopt calibrate DIR` prints the same).\n")
    every: list[dict] = []
    for name, directory in SETS.items():
        records, seconds = measure(directory, args.scenarios, args.seed)
        every += records
        print(f"### {name} set ({directory.relative_to(ROOT)}, {len(records)} figures, {seconds:.1f} s)\n")
        print("\n".join(figure_table(records)))
        print()
        print("\n".join(coverage_lines(records)))
        print()
        if args.noise_seeds:
            print(f"Sampling noise over seeds 0-{args.noise_seeds - 1} ({args.scenarios} scenarios each):\n")
            print("\n".join(noise_table(records, args.scenarios, args.noise_seeds)))
            print()
    print("### Step-time spreads against the current model (step_seconds rows of both sets)\n")
    print("\n".join(step_spread_check(every)))
    print()


if __name__ == "__main__":
    main()
