"""Derive the step-time spreads of ``models/spreads.py`` from the calibration residuals.

For every ``step_seconds`` row of instances/calibration and
instances/calibration-validation, the ratio predicted / published is the rate
multiplier (efficiency.mfu_factor = decode_factor) that would reproduce the
published row. Its 10th and 90th percentiles (numpy linear quantiles), split
by dense and mixture-of-experts students, are FACTOR_STEP_TIME_DENSE and
FACTOR_STEP_TIME_MOE.

    python benchmarks/uncertainty_spreads.py          # prints the rows and the two ranges
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from planopt.calibrate import calibrate_case, load_case

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("instances/calibration", "instances/calibration-validation")
QUANTILES = (0.10, 0.90)


def step_time_ratios() -> dict[str, list[tuple[str, float]]]:
    """Ratios predicted/published of every step_seconds row, by student kind ("dense" or "moe")."""
    out: dict[str, list[tuple[str, float]]] = {"dense": [], "moe": []}
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).glob("*.json")):
            case = load_case(path)
            if case.data["predict"] != "step_seconds":
                continue
            student = case.data["student"]
            kind = "moe" if student.get("active_params_b", student["params_b"]) < student["params_b"] else "dense"
            for row in calibrate_case(path):
                if row.ratio is not None:
                    out[kind].append((row.id, row.ratio))
    return out


def ranges() -> dict[str, tuple[float, float]]:
    return {kind: tuple(round(float(np.quantile([r for _, r in rows], q)), 3) for q in QUANTILES)
            for kind, rows in step_time_ratios().items()}


if __name__ == "__main__":
    for kind, rows in step_time_ratios().items():
        print(f"## {kind} ({len(rows)} rows)")
        for case_id, ratio in rows:
            print(f"- {case_id}: {ratio:.3f}")
    for kind, (low, high) in ranges().items():
        print(f"FACTOR_STEP_TIME_{kind.upper()} = ({low}, {high})")
