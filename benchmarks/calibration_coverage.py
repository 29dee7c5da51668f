"""Coverage of the calibration intervals: how often a published figure lies in its P10-P90.

Run:  python benchmarks/calibration_coverage.py [--scenarios N] [--seed S] [--noise-seeds K]
(its tables are in CALIBRATION.md, "Uncertainty: the spreads and their coverage").

For the public set (instances/calibration) and the validation set
(instances/calibration-validation), one markdown table per set: case, figure,
published, P10, P50, P90 of the prediction and whether the published figure is
inside; then the coverage line: the share of published figures inside their
P10-P90 (nominal 80 %) and the median width P90/P10, by kind and over the set.

Every interval is out of sample. Step seconds and SFT hours, whose spreads are
fitted on these very rows, get their **out-of-fold** interval: the spread
derived leave-one-source-out without the row's source
(``planopt.uncertainty.out_of_fold.out_of_fold``; exact, since those figures
scale as the inverse of the rate factors the spread draws: P10 = point x
(phi + (1 - phi) / high), phi the rate-free share). Other kinds draw spreads
fitted on none of the rows (sourced literature ranges) and keep their sampled
interval (``planopt.uncertainty.calibration_intervals.case_intervals``, what
``planopt calibrate`` prints). Last, per kind of step-time spread, in-sample
against out-of-fold coverage and width (CALIBRATION.md, "Out-of-fold coverage").
``--noise-seeds K`` adds the sampling noise of every sampled endpoint: its
relative standard deviation over seeds 0..K-1.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from planopt.models.catalog import spreads
from planopt.uncertainty import out_of_fold as oof
from planopt.uncertainty.calibrate import calibrate_case
from planopt.uncertainty.calibration_intervals import FIXED, N_SCENARIOS, SAMPLED, SEED, case_intervals

ROOT = Path(__file__).resolve().parent.parent
SETS = {"public": ROOT / "instances" / "calibration", "validation": ROOT / "instances" / "calibration-validation"}
NOMINAL_COVERAGE = 0.80  # P10-P90: a calibrated interval holds the published figure 80 % of the time
OUT_OF_FOLD = "out-of-fold"  # interval state: derived without the row's source
# Targets of issue 24 item 5: out-of-fold coverage of [P10, P90] within 70-90 % for every kind with at
# least 5 rows, and a median figure width P90/P10 of at most 2.5 for step times and SFT hours.
TARGET_COVERAGE_SHARE = (0.70, 0.90)
TARGET_MIN_ROWS = 5
TARGET_MAX_WIDTH_RATIO = 2.5
KIND_LABELS = {"sft": "SFT hours", "dense": "dense RL step time", "moe": "MoE RL step time"}


def num(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:.4g}" if abs(x) < 1e6 else f"{x:.3e}"


def out_of_fold_rows() -> dict[str, "oof.FoldRow"]:
    """Every step_seconds and sft_hours row against the spread derived without its source, by file."""
    residuals = oof.residuals(ROOT)
    return {str(Path(f.residual.file).resolve()): f for kind in oof.KIND_CONSTANTS for f in oof.out_of_fold(residuals, kind)}


def measure(directory: Path, n: int, seed: int, folds: dict[str, "oof.FoldRow"]) -> tuple[list[dict], float]:
    """One record per figure: case, kind, figure, published, predicted, p10, p50, p90, state, inside; step
    seconds and SFT hours out of fold (``folds``), the other kinds sampled."""
    records, start = [], time.perf_counter()
    for path in sorted(directory.glob("*.json")):
        rows = calibrate_case(path)
        kind = json.loads(path.read_text())["predict"]
        fold = folds.get(str(path.resolve()))
        if kind in ("step_seconds", "sft_hours"):
            (row,) = rows
            rec = {"case": row.id, "kind": kind, "figure": row.figure, "published": row.published,
                   "predicted": row.predicted, "p10": None, "p50": None, "p90": None, "state": OUT_OF_FOLD,
                   "inside": None, "file": path}
            if fold is not None and row.predicted is not None:
                rec.update(zip(("p10", "p50", "p90"), (row.predicted * q for q in fold.figure_interval)))
                rec["inside"] = fold.inside
            records.append(rec)
            continue
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

    sampled = [r for r in records if r["state"] in (SAMPLED, OUT_OF_FOLD) and r["inside"] is not None]
    by_kind = defaultdict(list)
    for r in sampled:
        by_kind[r["kind"]].append(r)
    out = [line("**figures with an interval** (step seconds and SFT hours out of fold, the rest sampled)", sampled)]
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


def _cells(c: dict) -> str:
    if not c["rows"]:
        return "- | - | -"
    return f"{c['inside']} of {c['rows']} ({100.0 * c['share_inside']:.0f} %) | {c['figure_width']:.2f} | {c['factor_width']:.2f}"


def out_of_fold_table() -> list[str]:
    """Per kind of step-time spread: rows, sources, the shipped range, in-sample and out-of-fold coverage and
    median widths (of the figure's P90/P10 and of the factor range), and whether the issue's targets are met."""
    residuals = oof.residuals(ROOT)
    out = ["| kind | rows | sources | spreads.py range | in-sample inside | width | factor width | "
           "out-of-fold inside | width | factor width | of them left out by row | targets |",
           "|---|---:|---:|---|---|---:|---:|---|---:|---:|---:|---|"]
    for kind, constant in oof.KIND_CONSTANTS.items():
        mine = [r for r in residuals if r.kind == kind]
        if len(mine) < 2:
            out.append(f"| {KIND_LABELS[kind]} | {len(mine)} | - | - | - | - | - | - | - | - | - | too few rows |")
            continue
        folds = oof.out_of_fold(residuals, kind)
        c_in, c_out = oof.coverage(oof.in_sample(residuals, kind)), oof.coverage(folds)
        lo, hi = getattr(spreads, constant)
        notes = []
        if len(mine) >= TARGET_MIN_ROWS:
            a, b = TARGET_COVERAGE_SHARE
            notes.append("coverage " + ("met" if a <= c_out["share_inside"] <= b else "**missed**"))
        else:
            notes.append(f"coverage: under {TARGET_MIN_ROWS} rows, no target")
        notes.append("width " + ("met" if c_out["figure_width"] <= TARGET_MAX_WIDTH_RATIO else "**missed**"))
        out.append(f"| {KIND_LABELS[kind]} | {len(mine)} | {len({r.source for r in mine})} | {constant} = ×{lo}–{hi} | "
                   f"{_cells(c_in)} | {_cells(c_out)} | {sum(f.fold == 'row' for f in folds)} | {', '.join(notes)} |")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scenarios", type=int, default=N_SCENARIOS, help="scenarios per case")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--noise-seeds", type=int, default=0, help="also report endpoint noise over this many seeds")
    args = parser.parse_args()
    print(f"Intervals: {args.scenarios} stratified scenarios per case, seed {args.seed} "
          f"(planopt.uncertainty.calibration_intervals; `planopt calibrate DIR` prints the same).\n")
    folds = out_of_fold_rows()
    for name, directory in SETS.items():
        records, seconds = measure(directory, args.scenarios, args.seed, folds)
        print(f"### {name} set ({directory.relative_to(ROOT)}, {len(records)} figures, {seconds:.1f} s)\n")
        print("\n".join(figure_table(records)))
        print()
        print("\n".join(coverage_lines(records)))
        print()
        if args.noise_seeds:
            print(f"Sampling noise over seeds 0-{args.noise_seeds - 1} ({args.scenarios} scenarios each):\n")
            print("\n".join(noise_table(records, args.scenarios, args.noise_seeds)))
            print()
    print("### Step-time and SFT-hours spreads: in-sample against out-of-fold (both sets)\n")
    print("\n".join(out_of_fold_table()))
    print()


if __name__ == "__main__":
    main()
