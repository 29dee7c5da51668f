r"""Derive the step-time and SFT-hours spreads of ``models/catalog/spreads.py`` from the calibration rows.

The derivation is ``planopt.uncertainty.out_of_fold`` (leave-one-source-out, its
docstring gives the formula and the grouping by source); this script prints, for
every step_seconds and sft_hours row of instances/calibration and
instances/calibration-validation (whatever rows they hold), its kind, source,
ratio predicted/published and required factor f*, then per kind the median f*,
the out-of-fold residual P10/P90, whether the kind needs a calibrated factor (its
range excludes 1), and the constants to paste:
``FACTOR_SFT_HOURS``, ``FACTOR_STEP_TIME_DENSE``, ``FACTOR_STEP_TIME_MOE`` and
``defaults.STEP_TIME_CALIBRATION_FACTOR``.
tests/solver/uncertainty/test_out_of_fold.py checks the shipped constants against
the same derivation.

    python benchmarks/uncertainty_spreads.py
"""

from __future__ import annotations

from pathlib import Path

from planopt.uncertainty import out_of_fold as oof

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    """Print the rows, the per-kind derivation and the constants."""
    rows = oof.residuals(ROOT)
    calibration = {}
    for kind, constant in oof.KIND_CONSTANTS.items():
        mine = [r for r in rows if r.kind == kind]
        print(f"## {kind} ({len(mine)} rows, {len({r.source for r in mine})} sources)")
        for r in mine:
            print(f"- {r.id} [{r.source}]: predicted/published {r.ratio:.3f}, required factor {r.required_factor:.3f}")
        if len(mine) < 2:
            print("  too few rows for a spread\n")
            continue
        s = oof.derive(rows, kind)
        lo, hi = s.raw_range
        print(f"  median f* {s.median_factor:.3f} (priced with calibration {oof.current_calibration(kind):.3f}); "
              f"out-of-fold residual P10 {s.residual_p10:+.3f}, P90 {s.residual_p90:+.3f} (log); "
              f"range of f* {lo:.3f}-{hi:.3f}: {'excludes' if s.needs_calibration else 'holds'} 1")
        if s.calibration_factor != 1.0:
            calibration[kind] = round(s.calibration_factor, oof.PRINTED_DIGITS)
        print(f"{constant} = {oof.shipped(s)}\n")
    print(f"STEP_TIME_CALIBRATION_FACTOR = {calibration}")


if __name__ == "__main__":
    main()
