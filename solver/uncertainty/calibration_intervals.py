r"""Intervals on calibration figures: the P10–P90 of each prediction under the uncertainty model.

A figure's interval is the 10th and 90th percentile of the case's predictor
(``calibrate.PREDICTORS``, unchanged) over ``n`` seeded scenarios of the
uncertainty model (``models/uncertainty/model.py``, spreads in ``models/catalog/spreads.py``).

Scenarios of a case. A case may build several instances (the two arms of a
``gpu_hours_ratio`` case, the bisection over steps, the probe and the job of a
checkpoint case). A scenario is one standard normal :math:`z_g` per parameter
*group* ``g`` (as ``uncertainty.draw``: groups in sorted order, one
``rng.standard_normal(n)`` each, so a one-instance case gets exactly
``draw(inst, n, seed)``); every instance the case builds passes through
``Case.transform``, which sets each of *that instance's* parameters to
:math:`m\, e^{\sigma z_g}` (``Parameter.values``, ``uncertainty.apply``). So one
scenario means the same relative error in every instance of the case, and a
field the case sets itself (a checkpoint case's MTBF, write time and restart)
stays the case's value: ``uncertainty.parameters`` makes it a point.

Untouched figures. A figure whose inputs the model does not reach (a FLOPs
count from the case's own workload; a checkpoint interval from the case's own
MTBF and write time) has a zero-width interval equal to the prediction. It is
found, not declared: the predictor is run at two probe scenarios
(:math:`z_g = \pm` ``PROBE_Z`` for every group at once), and a figure that moves
at neither is "fixed".

Vectorised kinds. Step seconds and SFT hours are sums of component times,
each exactly proportional to the inverse of its rate factor
(``recipes.RATE_FACTOR``; ``models/uncertainty/scenarios.py`` relies on the same fact), so
all scenarios come from one point prediction:
:math:`T^s = \sum_c T_c\, f_{\phi(c)} / f^s_{\phi(c)}`. Other kinds run the
predictor once per scenario.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from statistics import NormalDist
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from planopt.models.uncertainty import model as unc
from planopt.models.cost.recipes import RATE_FACTOR, family_of
from planopt.models.schema.instance import Instance

from planopt.uncertainty import calibrate as cal

# Scenarios per case. Step seconds and SFT hours are vectorised (free per
# scenario); other kinds run the predictor once per scenario, 1-30 ms each, and
# the slowest case (gpu_hours_ratio: two bisections over steps, ~27 ms per
# scenario) takes ~2.8 s at 100, the budget of "a few seconds per case". With
# stratified sampling (group_normals) the P10/P90 of a one-group figure (step
# time, SFT hours, interruptions) vary by 0.1-0.9 % across seeds at 100 (plain
# Monte Carlo: 2-13 %); the ratio case, four groups with a heavy upper tail, by
# 2 % (P10) and 13 % (P90). Measured over seeds 0-4 by
# `python benchmarks/calibration_coverage.py --noise-seeds 5` (CALIBRATION.md,
# "Uncertainty: the spreads and their coverage").
N_SCENARIOS = 100
# Default seed: the uncertainty model's (uncertainty.DEFAULT_SEED), so
# `planopt calibrate` and `planopt evaluate --scenarios` draw alike.
SEED = unc.DEFAULT_SEED
# Probe scenarios for untouched figures: every group at +2 and at -2 standard
# deviations (beyond P2 and P98), where any input the model reaches moves.
PROBE_Z = 2.0
# A figure that moves by less than this relative amount at both probes is
# untouched (predictors are deterministic; 1e-9 absorbs float round-off).
FIXED_RELATIVE_TOLERANCE = 1e-9
# Kinds whose prediction is a sum of component times at rate factors, and the
# calibrate function returning (total, by component); looked up by name so a
# kind still being added to calibrate.py is used once it exists.
COMPONENT_TIME_KINDS = {"step_seconds": "step_seconds", "sft_hours": "sft_hours"}

PERCENTILES = (10.0, 50.0, 90.0)
# Sample quantile rule: "hazen" puts the k-th smallest of n values at
# probability (k - 0.5) / n, the middle of its stratum under stratified
# sampling, so the sample P10 is unbiased there (numpy's default "linear" rule
# reads (k - 1) / (n - 1) and sits ~0.5 % of probability too far inside).
PERCENTILE_METHOD = "hazen"

SAMPLED, FIXED, ERROR = "sampled", "fixed", "error"


@dataclass(frozen=True)
class FigureInterval:
    """The interval of one figure of a case."""

    figure: str
    point: Optional[float]        # the prediction at the point values (the row's ``predicted``)
    p10: Optional[float]
    p50: Optional[float]
    p90: Optional[float]
    state: str                    # SAMPLED, FIXED (inputs untouched: zero width) or ERROR (not predicted)
    scenarios: int                # scenarios the percentiles are over
    unpredictable: int = 0        # scenarios whose run could not be predicted (excluded)

    @property
    def interval(self) -> Optional[tuple[float, float]]:
        """(P10, P90), or None where no interval was found."""
        return None if self.p10 is None else (self.p10, self.p90)


class _Recorder:
    """Identity transform that keeps every instance a case builds."""

    def __init__(self) -> None:
        self.instances: list[Instance] = []

    def __call__(self, inst: Instance) -> Instance:
        self.instances.append(inst)
        return inst


# Instance fields ``uncertainty.apply`` can change (the first part of every
# parameter name), and the fields ``uncertainty.parameters`` reads besides them.
APPLIED_FIELDS = ("efficiency", "reliability", "priors", "hardware")


def _signature(inst: Instance) -> tuple:
    """What an instance's parameters and their applied values depend on (equal signatures, equal results)."""
    return (inst.student.is_moe, tuple(inst.training.methods), inst.uncertainty,
            *(getattr(inst, f) for f in APPLIED_FIELDS))


def _at(z: dict[str, float]) -> Callable[[Instance], Instance]:
    """Transform: one scenario, given as a standard normal per group, applied to any instance.

    A case builds many instances that differ only in their workload (a
    bisection over steps builds ~20 per arm); the applied fields are computed
    once per distinct signature and copied onto the others."""
    cache: list[tuple[tuple, dict]] = []

    def transform(inst: Instance) -> Instance:
        sig = _signature(inst)
        for key, parts in cache:
            if key == sig:
                return inst.model_copy(update=parts)
        values = {}
        for p in unc.parameters(inst):
            if p.sigma > 0.0:
                if p.group not in z:
                    raise KeyError(f"parameter group {p.group!r} appeared only in a scenario run")
                values[p.name] = float(p.values(np.asarray(z[p.group])))
        applied = unc.apply(inst, values) if values else inst
        parts = {f: getattr(applied, f) for f in APPLIED_FIELDS}
        cache.append((sig, parts))
        return applied

    return transform


def group_normals(instances: list[Instance], n: int, seed: int, stratified: bool = True) -> dict[str, np.ndarray]:
    """One standard normal array of length ``n`` per parameter group of ``instances`` (groups sorted).

    Stratified (Latin hypercube): each group's ``n`` values are the normal
    quantiles of one uniform draw in each of the ``n`` equal-probability strata,
    in an independent random order per group; the scenarios are still
    independent standard normals per group, with less sampling noise in the
    percentiles. ``stratified=False`` draws as ``uncertainty.draw``."""
    groups = sorted({p.group for inst in instances for p in unc.parameters(inst)})
    rng = np.random.default_rng(seed)
    if not stratified:
        return {g: rng.standard_normal(n) for g in groups}
    inv = np.vectorize(NormalDist().inv_cdf, otypes=[float])
    return {g: inv((rng.permutation(n) + rng.random(n)) / n) for g in groups}


def _predicted(rows: list[cal.CalibrationRow]) -> dict[str, Optional[float]]:
    return {r.figure: r.predicted for r in rows}


def _moved(point: Optional[float], other: Optional[float]) -> bool:
    if point is None or other is None:
        return point is not other
    return abs(other - point) > FIXED_RELATIVE_TOLERANCE * max(abs(point), 1e-300)


def _component_time_values(path: Path, fn_name: str, z: dict[str, np.ndarray]) -> np.ndarray:
    """All scenarios of a component-time kind from one point prediction (exact: T_c ∝ 1 / rate factor)."""
    case = cal.load_case(path)
    rec = _Recorder()
    case.transform = rec
    _, by = getattr(cal, fn_name)(case)
    inst = rec.instances[0]
    params = {p.name: p for p in unc.parameters(inst)}
    total = np.zeros(len(next(iter(z.values()))) if z else 1)
    for key, value in by.items():
        family = RATE_FACTOR[family_of(key)]
        if family is None:
            total = total + value
            continue
        p = params[f"efficiency.{family}"]
        point = getattr(inst.efficiency, family)
        scenario = p.values(z[p.group]) if p.sigma > 0.0 else np.full_like(total, point)
        total = total + value * point / scenario
    return total


def case_intervals(path: str | Path, n: int = N_SCENARIOS, seed: int = SEED, stratified: bool = True) -> list[FigureInterval]:
    """The interval of every figure of one case file (its rows' order)."""
    path = Path(path)
    rec = _Recorder()
    rows = cal.calibrate_case(path, transform=rec)
    if any(r.error is not None or r.predicted is None for r in rows):
        return [FigureInterval(r.figure, r.predicted, None, None, None, ERROR, 0) for r in rows]
    point = _predicted(rows)
    z = group_normals(rec.instances, n, seed, stratified)
    probes = [_predicted(cal.calibrate_case(path, transform=_at({g: sign * PROBE_Z for g in z}))) for sign in (1.0, -1.0)]
    touched = {f for f in point if any(_moved(point[f], probe.get(f)) for probe in probes)}

    samples: dict[str, np.ndarray] = {}
    unpredictable: dict[str, int] = {}
    if touched:
        kind = cal.load_case(path).data["predict"]
        fn_name = COMPONENT_TIME_KINDS.get(kind)
        if fn_name is not None and hasattr(cal, fn_name) and len(rows) == 1:
            samples[rows[0].figure] = _component_time_values(path, fn_name, z)
        else:
            runs = []
            for s in range(n):
                try:
                    runs.append(_predicted(cal.calibrate_case(path, transform=_at({g: v[s] for g, v in z.items()}))))
                except cal.PredictionError:
                    runs.append({})
            for f in touched:
                vals = np.array([np.nan if run.get(f) is None else run[f] for run in runs], dtype=float)
                unpredictable[f] = int(np.isnan(vals).sum())
                samples[f] = vals[~np.isnan(vals)]

    out = []
    for r in rows:
        f = r.figure
        if f not in touched:
            out.append(FigureInterval(f, r.predicted, r.predicted, r.predicted, r.predicted, FIXED, n))
            continue
        vals = samples[f]
        if vals.size == 0:
            out.append(FigureInterval(f, r.predicted, None, None, None, ERROR, 0, unpredictable.get(f, n)))
            continue
        p10, p50, p90 = (float(q) for q in np.percentile(vals, PERCENTILES, method=PERCENTILE_METHOD))
        out.append(FigureInterval(f, r.predicted, p10, p50, p90, SAMPLED, int(vals.size), unpredictable.get(f, 0)))
    return out


def with_intervals(rows: list[cal.CalibrationRow], n: int = N_SCENARIOS, seed: int = SEED) -> list[cal.CalibrationRow]:
    """``rows`` (from ``calibrate_dir``) with ``interval`` set: [P10, P90], or None for a row that was not predicted."""
    by_file: dict[str, dict[str, FigureInterval]] = {}
    out = []
    for r in rows:
        if r.error is not None:  # not predicted (or not read: a case with bad fields): no interval
            out.append(replace(r, interval=None, interval_state=ERROR))
            continue
        if r.file not in by_file:
            by_file[r.file] = {fi.figure: fi for fi in case_intervals(r.file, n, seed)}
        fi = by_file[r.file].get(r.figure)
        if fi is None or fi.interval is None or not all(map(math.isfinite, fi.interval)):
            out.append(replace(r, interval=None, interval_state=ERROR))
        else:
            out.append(replace(r, interval=fi.interval, interval_state=fi.state))
    return out


def inside(row: cal.CalibrationRow) -> Optional[bool]:
    """Whether the published figure lies in the row's [P10, P90] (None without an interval)."""
    if row.interval is None:
        return None
    return row.interval[0] <= row.published <= row.interval[1]


def coverage(rows: list[cal.CalibrationRow]) -> dict:
    """Share of published figures inside [P10, P90] and the median width P90/P10.

    ``sampled``: the rows whose interval the uncertainty model draws (it claims
    80 % for these); ``all``: every predicted row, fixed (zero-width) ones
    included. Rows without an interval are counted in ``without_interval``."""
    def summary(subset: list[cal.CalibrationRow]) -> dict:
        widths = [r.interval[1] / r.interval[0] for r in subset if r.interval[0] > 0]
        hits = sum(bool(inside(r)) for r in subset)
        return {"figures": len(subset), "inside": hits, "share_inside": hits / len(subset) if subset else None,
                "median_width_ratio": float(np.median(widths)) if widths else None}
    with_interval = [r for r in rows if r.interval is not None]
    return {"sampled": summary([r for r in with_interval if r.interval_state == SAMPLED]),
            "all": summary(with_interval), "without_interval": len(rows) - len(with_interval)}


def interval_cells(row: cal.CalibrationRow, num: Callable[[Optional[float]], str]) -> tuple[str, str]:
    """The P10-P90 and inside cells of the text table."""
    if row.interval is None:
        return "-", "-"
    where = "yes" if inside(row) else ("below" if row.published < row.interval[0] else "above")
    if row.interval_state == FIXED:
        return f"{num(row.interval[0])} (fixed)", where
    return f"{num(row.interval[0])} - {num(row.interval[1])}", where


def interval_footer(rows: list[cal.CalibrationRow], n: int = N_SCENARIOS, seed: int = SEED) -> str:
    """The lines under the text table: how intervals were made, and their coverage."""
    c = coverage(rows)
    s, a = c["sampled"], c["all"]
    lines = [f"P10-P90: {n} stratified scenarios of the uncertainty model per case (seed {seed}); "
             "(fixed) = the model reaches no input of the figure: zero width, equal to the prediction; "
             "inside = the published figure lies in [P10, P90] (below / above: where it lies instead)"]
    if s["figures"]:
        lines.append(f"{s['inside']} of {s['figures']} published figures inside their sampled P10-P90 (nominal 80 %), "
                     f"median width P90/P10 {s['median_width_ratio']:.2f}")
    if a["figures"] != s["figures"]:
        lines.append(f"{a['inside']} of {a['figures']} including the fixed (zero-width) figures")
    if c["without_interval"]:
        lines.append(f"{c['without_interval']} figure(s) without an interval (not predicted)")
    return "\n".join(lines)
