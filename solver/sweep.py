"""Sweeps: one limit over many values, re-solving ONE persistent model.

Only the swept limit's mutable right-hand side changes between solves (the
persistent HiGHS interface then updates one row bound; nothing is rebuilt).
The swept value replaces the instance's own value of that limit; the other
limits stay as the instance sets them.

Values are solved from the loosest to the tightest, which allows one exact
shortcut (``reuse=True``): when the limit only tightens, the feasible set only
shrinks, so a lexicographically optimal plan (objective, then cost) that still
satisfies the tighter limit is still lexicographically optimal, and an
infeasible limit stays infeasible when tightened. Such rows are marked
``reused`` and not re-solved; every other row is a fresh solve of the same
model. Rows come back in the order the values were given.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional

from planopt.models.formulation import LIMITS

from .errors import InputError
from .instance import check_limit
from .run import PlanModel, SolveResult

if TYPE_CHECKING:
    import pandas as pd

SWEEPABLE = tuple(LIMITS)  # budget_usd, deadline_hours, max_forgetting_points, min_quality
# A reused plan must satisfy the tighter limit by at least this relative margin;
# plans closer than that to the limit are re-solved, so the solver's feasibility
# tolerance never decides a reused row.
REUSE_MARGIN_RELATIVE = 1e-7
MAX_VALUES = 100_000


@dataclass
class SweepRow:
    limit: str
    value: float
    result: SolveResult
    reused: bool = False

    def to_dict(self) -> dict[str, Any]:
        r = self.result
        return {self.limit: self.value, "status": r.status,
                "plan": r.plan.to_dict() if r.plan else None,
                "metrics": r.metrics.summary() if r.metrics else None,
                "reused": self.reused}


def parse_range(text: str, flag: str) -> list[float]:
    """``LO:HI:N`` → N evenly spaced values from LO to HI inclusive (N = 1 only when LO = HI), or a comma-separated
    list such as ``500,700,900`` (InputError otherwise)."""
    if ":" not in str(text):
        return parse_list(text, flag)
    parts = str(text).split(":")
    if len(parts) != 3:
        raise InputError(f"{flag}: expected LO:HI:N (e.g. 10000:80000:50), got {text!r}")
    try:
        lo, hi = float(parts[0]), float(parts[1])
        n = int(parts[2])
    except ValueError:
        raise InputError(f"{flag}: expected LO:HI:N with numbers LO, HI and a whole number N, got {text!r}") from None
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise InputError(f"{flag}: LO and HI must be finite numbers, got {text!r}")
    if n < 1 or n > MAX_VALUES:
        raise InputError(f"{flag}: N must be between 1 and {MAX_VALUES:,}, got {n}")
    if lo > hi:
        raise InputError(f"{flag}: LO must not exceed HI, got {text!r}")
    if n == 1:  # one value cannot include both ends (LO:HI:1 used to drop HI silently)
        if lo != hi:
            raise InputError(f"{flag}: LO:HI:1 is one value but LO and HI differ; give N of at least 2 "
                             f"(both ends included) or the single value alone, got {text!r}")
        return [lo]
    return [lo + (hi - lo) * i / (n - 1) for i in range(n)]


def parse_list(text: str, flag: str) -> list[float]:
    """A comma-separated list of finite numbers, e.g. ``500,700,900`` (InputError otherwise)."""
    try:
        values = [float(part) for part in str(text).split(",")]
    except ValueError:
        raise InputError(f"{flag}: expected LO:HI:N or a comma-separated list of numbers (e.g. 500,700,900), "
                         f"got {text!r}") from None
    if not all(math.isfinite(v) for v in values):
        raise InputError(f"{flag}: expected finite numbers, got {text!r}")
    if len(values) > MAX_VALUES:
        raise InputError(f"{flag}: at most {MAX_VALUES:,} values, got {len(values):,}")
    return values


def check_values(limit: str, values: Iterable[float]) -> list[float]:
    if limit not in SWEEPABLE:
        raise InputError(f"sweep: expected a limit among {', '.join(SWEEPABLE)}, got {limit!r}")
    out = [float(v) for v in values]
    if not out:
        raise InputError("sweep: no values to sweep")
    for v in out:  # the ranges of the same limit given to `solve` (huge values crashed result extraction)
        check_limit(limit, v, f"sweep: {limit}")
    return out


def _tightness(limit: str, value: float) -> float:
    """Larger is tighter: a smaller budget, deadline or tolerance; a higher minimum quality."""
    return value if LIMITS[limit][1] == ">=" else -value


def _still_feasible(limit: str, value: float, result: SolveResult) -> bool:
    plan_value = getattr(result.metrics, LIMITS[limit][0])
    margin = REUSE_MARGIN_RELATIVE * max(1.0, abs(value))
    return plan_value >= value + margin if LIMITS[limit][1] == ">=" else plan_value <= value - margin


def run_sweep(pm: PlanModel, limit: str, values: Iterable[float], time_limit: float | None = None,
              reuse: bool = True, progress: Optional[Callable[[int], None]] = None) -> list[SweepRow]:
    """Solve ``pm`` at each value of ``limit``; rows in the order of ``values``.

    ``progress(k)`` is called after each value with the number done so far.
    The model's limits are restored afterwards."""
    values = check_values(limit, values)
    order = sorted(range(len(values)), key=lambda i: _tightness(limit, values[i]))
    rows: list[Optional[SweepRow]] = [None] * len(values)
    original = pm.limits[limit]
    last: Optional[SolveResult] = None
    try:
        for done, i in enumerate(order, 1):
            v = values[i]
            if reuse and last is not None and (
                    last.status == "infeasible" or (last.status == "optimal" and _still_feasible(limit, v, last))):
                rows[i] = SweepRow(limit, v, last, reused=True)
            else:
                pm.set_limits(**{limit: v})
                last = pm.solve(time_limit)
                rows[i] = SweepRow(limit, v, last)
            if progress:
                progress(done)
    finally:
        pm.set_limits(**{limit: original})
    return rows  # type: ignore[return-value]


# --- tables -----------------------------------------------------------------

PLAN_COLUMNS = ("method", "gpu", "gpu_count", "steps", "samples_per_prompt", "teacher_precision",
                "external_data_share", "checkpoint_interval_minutes")
METRIC_COLUMNS = ("cost_usd", "wall_hours", "quality", "forgetting_points", "gpu_hours")


def plan_columns(plan) -> dict[str, Any]:
    if plan is None:
        return dict.fromkeys(PLAN_COLUMNS)
    d = plan.to_dict()
    d["samples_per_prompt"] = "-".join(map(str, plan.samples_per_prompt))
    return {k: d[k] for k in PLAN_COLUMNS}


def rows_frame(rows: list[SweepRow]) -> "pd.DataFrame":
    import pandas as pd
    records = []
    for row in rows:
        m = row.result.metrics
        rec = {row.limit: row.value, "status": row.result.status}
        rec.update({k: getattr(m, k) if m else None for k in METRIC_COLUMNS})
        rec.update(plan_columns(row.result.plan))
        rec["reused"] = row.reused
        records.append(rec)
    return pd.DataFrame.from_records(records)


def sweep_frame(instance, limit: str, values: Iterable[float], time_limit: float | None = None,
                reuse: bool = True) -> "pd.DataFrame":
    """Solve ``instance`` (path, dict or Instance) at each value of ``limit``: one row per value.

    Columns: the limit, status, the metrics (cost_usd, wall_hours, quality,
    forgetting_points, gpu_hours; empty when infeasible) and the plan's fields."""
    from .instance import load_instance
    pm = PlanModel(load_instance(instance))
    return rows_frame(run_sweep(pm, limit, values, time_limit=time_limit, reuse=reuse))

