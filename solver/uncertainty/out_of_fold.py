r"""Step-time and SFT-hours spreads derived leave-one-source-out from the calibration rows.

The one place the ``FACTOR_STEP_TIME_*`` and ``FACTOR_SFT_HOURS`` ranges of
``models/catalog/spreads.py`` come from; ``benchmarks/uncertainty_spreads.py``
prints them, ``benchmarks/calibration_coverage.py`` reports their out-of-fold
coverage and ``tests/solver/uncertainty/test_out_of_fold.py`` checks the
constants against them.

**Residual of a row.** For a ``step_seconds`` or ``sft_hours`` row the
prediction is a sum of component times, each exactly proportional to the
inverse of its rate factor (``efficiency.mfu_factor`` /
``efficiency.decode_factor``) or untouched by it (collectives, host-link
transfers: ``recipes.RATE_FACTOR`` None). The row's *required factor* is the
common multiplier :math:`f^*` on both rates that reproduces the published
figure :math:`P`:

.. math:: f^* = \frac{T_{scaled}}{P - T_{fixed}}

(``MAX_REQUIRED_FACTOR`` when :math:`P \le T_{fixed}`: no speed-up reproduces
it). A factor range :math:`[\ell, h]` on the rates holds the published figure
inside the figure's P10-P90 exactly when :math:`\ell \le f^* \le h`, so the
coverage of a range is read off :math:`f^*` without sampling.

**Kinds.** ``sft`` (``sft_hours`` rows), ``dense`` and ``moe`` (``step_seconds``
rows by the student's ``active_params_b < params_b``).

**Sources.** A source is one publication or release (:func:`source_of`): a
NeMo RL row's release (``software_release``, else the ``vX.Y`` tag its
``source`` cites), else the publisher, the text of ``source`` before its first
comma (``"Open Thoughts"`` for both OpenThinker model cards, which share one
dataset, one recipe and one token estimate).

**Derivation** (:func:`derive`), on the log required factors :math:`l_i`:

1. location :math:`m` = median of all :math:`l_i`;
2. for each source :math:`s`, :math:`m_{-s}` = median of the rows of the other
   sources, and each of :math:`s`'s rows gets the out-of-fold residual
   :math:`e_i = l_i - m_{-s}`;
3. the spread is the log-normal through them: :math:`\sigma^2` = the mean of
   :math:`e_i^2` (each :math:`e_i` a prediction error, so about zero, not the
   rows' own mean), and the 80 % interval is its P10-P90 around the median,
   :math:`[e^{m - z\sigma}, e^{m + z\sigma}]`, :math:`z = \Phi^{-1}(0.9)`. The
   uncertainty model draws exactly that log-normal from the range (median
   :math:`\sqrt{\ell h} = e^m`), so a calibrated kind's point is its median. (The
   rows' own P10 and P90 of :math:`e_i` cover 2 of the 6 dense rows out of
   fold: with six rows the empirical P10 and P90 sit inside the extremes.)

**Out-of-fold coverage** (:func:`out_of_fold`): for each source, the whole
derivation on the other sources' rows, and whether each left-out row's
:math:`f^*` lies in that range. Nothing about a row enters its own interval.

**Calibration.** Where a kind's range excludes 1 (the point prediction would
lie outside its own interval), the median :math:`e^{m}` becomes a calibrated
efficiency factor on that kind's point prediction
(``defaults.STEP_TIME_CALIBRATION_FACTOR``) and the range is re-centred on it
(:func:`shipped`); the rows are priced with the current factor, so
:func:`derive` returns the total, current factor × :math:`e^{m}`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional

import numpy as np

from planopt.models.catalog import defaults as d
from planopt.models.cost.recipes import RATE_FACTOR, family_of
from planopt.uncertainty import calibrate as cal

# The folders of calibration rows the spreads are derived from (relative to the project root).
FOLDERS = ("instances/calibration", "instances/calibration-validation")
# Standard normal 90th percentile: a P10-P90 range spans ±Z_P90 σ (the 80 % central range of every spread).
Z_P90 = 1.2815515655446004
# Required factor of a row no finite speed-up reproduces (published time at or below the untouched
# components): the schema's bound on a rate factor (Efficiency.mfu_factor le=10).
MAX_REQUIRED_FACTOR = 10.0
# Kinds with a spread of their own, and the spreads.py constant each fills.
KIND_CONSTANTS = {"sft": "FACTOR_SFT_HOURS", "dense": "FACTOR_STEP_TIME_DENSE", "moe": "FACTOR_STEP_TIME_MOE"}
# Digits the constants are printed and shipped with in spreads.py and defaults.py.
PRINTED_DIGITS = 3
_NEMO_TAG = r"\bv(0\.\d+)(?:\.\d+)?\b"


@dataclass(frozen=True)
class Residual:
    """One calibration row as the derivation sees it."""

    id: str
    kind: str              # "sft", "dense" or "moe"
    source: str            # the publication or release (``source_of``)
    ratio: float           # predicted / published
    required_factor: float  # the rate multiplier f* that reproduces the published figure
    fixed_share: float      # share of the prediction no rate factor moves (collectives, host-link transfers)
    file: str

    @property
    def log_factor(self) -> float:
        """ln f*."""
        return math.log(self.required_factor)


@dataclass(frozen=True)
class Spread:
    """A kind's derivation: location, out-of-fold residual quantiles and the range they give."""

    kind: str
    rows: int
    sources: int
    median_factor: float        # e^m: the median required factor of the rows, as currently priced
    residual_p10: float         # P10 of the log-normal the out-of-fold log residuals give (-z σ)
    residual_p90: float         # its P90 (+z σ)
    calibration_factor: float   # the total calibrated efficiency factor (current factor x e^m where calibrated, else 1)

    @property
    def raw_range(self) -> tuple[float, float]:
        """[e^{m+e10}, e^{m+e90}]: the range of the required factor of a new row under the current pricing."""
        return (self.median_factor * math.exp(self.residual_p10), self.median_factor * math.exp(self.residual_p90))

    @property
    def needs_calibration(self) -> bool:
        """Whether the raw range excludes 1 (the point prediction outside its own interval)."""
        lo, hi = self.raw_range
        return not lo <= 1.0 <= hi


def kind_of(case: cal.Case) -> Optional[str]:
    """The spread kind of a case: "sft", "dense", "moe", or None for a kind without a step-time spread."""
    predict = case.data["predict"]
    if predict == "sft_hours":
        return "sft"
    if predict != "step_seconds":
        return None
    student = case.data["student"]
    return "moe" if student.get("active_params_b", student["params_b"]) < student["params_b"] else "dense"


def source_of(case: cal.Case) -> str:
    """The publication or release a row comes from (rows of one source share their errors)."""
    release = case.data.get("software_release")
    text = case.data.get("source", "")
    if release is None and "NeMo" in text:
        tag = re.search(_NEMO_TAG, text)
        release = f"nemo-rl-v{tag.group(1)}" if tag else None
    if release is not None:
        return release
    return text.split(",")[0].split("(")[0].strip() or case.data["id"]


def fixed_time(by_component: dict[str, float]) -> float:
    """The part of a prediction no rate factor moves."""
    return sum(v for k, v in by_component.items() if RATE_FACTOR[family_of(k)] is None)


def required_factor(total: float, by_component: dict[str, float], published: float) -> float:
    """The common multiplier on the rate factors that turns the prediction into ``published`` (f* above)."""
    fixed = fixed_time(by_component)
    if published <= fixed:
        return MAX_REQUIRED_FACTOR
    return min(MAX_REQUIRED_FACTOR, (total - fixed) / (published - fixed))


def residuals(root: Path, folders: Iterable[str] = FOLDERS) -> list[Residual]:
    """Every predicted step_seconds and sft_hours row of the folders under ``root`` (whatever rows they hold)."""
    out = []
    for folder in folders:
        for path in sorted((Path(root) / folder).glob("*.json")):
            case = cal.load_case(path)
            kind = kind_of(case)
            if kind is None:
                continue
            fn = cal.step_seconds if kind != "sft" else cal.sft_hours
            try:
                total, by = fn(case)
            except cal.PredictionError:
                continue  # no prediction, no residual (calibrate reports the row as failed)
            published = case.spec.published.step_seconds if kind != "sft" else case.spec.published.hours
            out.append(Residual(case.spec.id, kind, source_of(case), total / published,
                                required_factor(total, by, published), fixed_time(by) / total, str(path)))
    return out


def residual_sigma(residuals: list[float]) -> float:
    """σ of the log-normal the out-of-fold residuals give: the root mean square of the residuals."""
    e = np.asarray(residuals, dtype=float)
    return float(np.sqrt(np.mean(e * e)))


def out_of_fold_residuals(logs: list[float], sources: list[str]) -> list[float]:
    """e_i = l_i - median of the other sources' l (one per row, in order). Rows of a single source are left out
    one row at a time instead (each row its own group); fewer than two rows have no residual: ValueError."""
    if len(logs) < 2:
        raise ValueError("an out-of-fold residual needs two rows or more")
    if len(set(sources)) < 2:
        sources = [str(i) for i in range(len(logs))]
    out = []
    for li, si in zip(logs, sources):
        others = [lj for lj, sj in zip(logs, sources) if sj != si]
        out.append(li - float(np.median(others)))
    return out


def derive_logs(kind: str, logs: list[float], sources: list[str], current_factor: float = 1.0,
                calibrate: bool = True) -> Spread:
    """The derivation on log required factors (the pure arithmetic of :func:`derive`): ``current_factor`` is the
    calibration the rows were priced with; ``calibrate=False`` leaves the calibration factor at 1."""
    half = Z_P90 * residual_sigma(out_of_fold_residuals(logs, sources))
    e10, e90 = -half, half
    m = float(np.median(logs))
    spread = Spread(kind, len(logs), len(set(sources)), math.exp(m), e10, e90, 1.0)
    # a kind already calibrated stays so (its rows are priced with the factor, so 1 is inside by construction)
    total = current_factor * math.exp(m) if calibrate and (spread.needs_calibration or current_factor != 1.0) else 1.0
    return Spread(kind, len(logs), len(set(sources)), math.exp(m), e10, e90, total)


def current_calibration(kind: str) -> float:
    """The calibrated efficiency factor the point model applies to ``kind`` now (1 where none)."""
    return getattr(d, "STEP_TIME_CALIBRATION_FACTOR", {}).get(kind, 1.0)


def derive(rows: list[Residual], kind: str) -> Spread:
    """A kind's spread from ``rows`` (every row of that kind in ``rows``), leave-one-source-out."""
    mine = [r for r in rows if r.kind == kind]
    return derive_logs(kind, [r.log_factor for r in mine], [r.source for r in mine], current_calibration(kind))


def shipped(spread: Spread) -> tuple[float, float]:
    """The factor range spreads.py ships, rounded to ``PRINTED_DIGITS``: for a calibrated kind the out-of-fold
    residual range around the calibrated point, [e^{e10}, e^{e90}]; otherwise the raw range."""
    if spread.calibration_factor != 1.0:
        lo, hi = math.exp(spread.residual_p10), math.exp(spread.residual_p90)
    else:
        lo, hi = spread.raw_range
    return round(lo, PRINTED_DIGITS), round(hi, PRINTED_DIGITS)


@dataclass(frozen=True)
class FoldRow:
    """A row against the range derived without its source (or, see ``fold``, without the row)."""

    residual: Residual
    low: float     # range of the required factor from the other rows (raw, current pricing)
    high: float
    fold: str = "source"  # "source": its whole source left out; "row": only the row (too few other sources)

    @property
    def figure_interval(self) -> tuple[float, float, float]:
        """P10, P50 and P90 of the figure as multiples of its point prediction (the untouched share stays)."""
        phi = self.residual.fixed_share
        p10, p50, p90 = (phi + (1.0 - phi) / f for f in (self.high, math.sqrt(self.low * self.high), self.low))
        return p10, p50, p90

    @property
    def figure_width(self) -> float:
        """P90/P10 of the figure itself: the untouched share does not scale, so it is at most high/low."""
        p10, _, p90 = self.figure_interval
        return p90 / p10

    @property
    def inside(self) -> bool:
        """Whether the published figure lies in the out-of-fold P10-P90."""
        return self.low <= self.residual.required_factor <= self.high


def _range(kind: str, train: list[Residual]) -> tuple[float, float]:
    return derive_logs(kind, [r.log_factor for r in train], [r.source for r in train], calibrate=False).raw_range


def out_of_fold(rows: list[Residual], kind: str, row_fallback: bool = True) -> list[FoldRow]:
    """Each row of ``kind`` against the range the whole derivation gives on the other sources' rows alone.

    Where the other sources hold fewer than two rows (no spread can be fitted on one), the row is instead
    held against the rows other than itself, its own source's included (``fold="row"``), or, with
    ``row_fallback=False``, left out of the result."""
    mine = [r for r in rows if r.kind == kind]
    out = []
    for s in sorted({r.source for r in mine}):
        train = [r for r in mine if r.source != s]
        if len(train) >= 2:
            lo, hi = _range(kind, train)
            out.extend(FoldRow(r, lo, hi) for r in mine if r.source == s)
        elif row_fallback:
            for r in (r for r in mine if r.source == s):
                lo, hi = _range(kind, [o for o in mine if o is not r])
                out.append(FoldRow(r, lo, hi, "row"))
    return out


def in_sample(rows: list[Residual], kind: str) -> list[FoldRow]:
    """Each row of ``kind`` against the range derived from all rows, its own included (for comparison)."""
    mine = [r for r in rows if r.kind == kind]
    lo, hi = derive(rows, kind).raw_range
    return [FoldRow(r, lo, hi) for r in mine]


def coverage(fold_rows: list[FoldRow]) -> dict:
    """Rows, rows inside, share inside and median widths (of the factor range, high/low, and of the figure's
    P90/P10) of ``fold_rows``."""
    if not fold_rows:
        return {"rows": 0, "inside": 0, "share_inside": None, "factor_width": None, "figure_width": None}
    hits = sum(f.inside for f in fold_rows)
    return {"rows": len(fold_rows), "inside": hits, "share_inside": hits / len(fold_rows),
            "factor_width": float(np.median([f.high / f.low for f in fold_rows])),
            "figure_width": float(np.median([f.figure_width for f in fold_rows]))}
