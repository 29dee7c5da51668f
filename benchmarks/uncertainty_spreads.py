r"""Derive the step-time spreads of ``models/catalog/spreads.py`` from the calibration residuals.

For every ``step_seconds`` row of instances/calibration and
instances/calibration-validation, the ratio predicted / published is the rate
multiplier (efficiency.mfu_factor = decode_factor) that would reproduce the
published row. Split by dense and mixture-of-experts students, the ranges are
the 80 % *prediction intervals* of a log-normal fitted to those ratios: the
range a new row falls in, which allows for the few rows behind each fit
(Student t with n - 1 degrees of freedom):

.. math:: \exp\big(\bar\ell \pm t_{0.9,\,n-1}\, s\, \sqrt{1 + 1/n}\big)

with :math:`\bar\ell` and :math:`s` the mean and sample standard deviation of
the log ratios. (Plain in-sample quantiles of 6 or 10 rows covered only 9 of
16 rows left out one at a time.) They are FACTOR_STEP_TIME_DENSE and
FACTOR_STEP_TIME_MOE; tests/models/uncertainty/test_scenarios.py checks the constants against
this derivation.

    python benchmarks/uncertainty_spreads.py          # prints the rows and the two ranges
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from planopt.uncertainty.calibrate import calibrate_case, load_case

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("instances/calibration", "instances/calibration-validation")
PREDICTION_LEVEL = 0.90  # upper quantile of the t prediction interval: a P10-P90 range


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


def student_t_quantile(p: float, dof: int) -> float:
    """Quantile of Student's t (numerical integral of its density and bisection; no scipy)."""
    norm = math.exp(math.lgamma((dof + 1) / 2) - math.lgamma(dof / 2)) / math.sqrt(dof * math.pi)

    def cdf(t: float) -> float:
        x = np.linspace(0.0, t, 20_001)
        return 0.5 + np.trapezoid(norm * (1 + x * x / dof) ** (-(dof + 1) / 2), x)

    lo, hi = 0.0, 100.0
    for _ in range(80):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if cdf(mid) < p else (lo, mid)
    return (lo + hi) / 2


def prediction_range(ratios: list[float]) -> tuple[float, float]:
    logs = np.log(ratios)
    n = len(logs)
    half = student_t_quantile(PREDICTION_LEVEL, n - 1) * logs.std(ddof=1) * math.sqrt(1 + 1 / n)
    return round(float(np.exp(logs.mean() - half)), 3), round(float(np.exp(logs.mean() + half)), 3)


def ranges() -> dict[str, tuple[float, float]]:
    return {kind: prediction_range([r for _, r in rows]) for kind, rows in step_time_ratios().items()}


if __name__ == "__main__":
    for kind, rows in step_time_ratios().items():
        print(f"## {kind} ({len(rows)} rows)")
        for case_id, ratio in rows:
            print(f"- {case_id}: {ratio:.3f}")
    for kind, (low, high) in ranges().items():
        print(f"FACTOR_STEP_TIME_{kind.upper()} = ({low}, {high})")
