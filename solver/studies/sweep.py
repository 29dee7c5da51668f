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
from planopt.models.schema.plan import Plan, plan_json, read_plan

from planopt.errors import InputError
from planopt.instance import check_limit
from planopt.job.model import PlanModel, SolveResult

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
    """One row of a sweep: the limit's value, the result, and whether it is a looser value's plan reused (not
    re-solved)."""

    limit: str
    value: float
    result: SolveResult
    reused: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The row as ``planopt sweep --json`` prints it."""
        r = self.result
        return {self.limit: self.value, "status": r.status,
                "plan": plan_json(r.plan, r.student) if r.plan else None,
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
    """The sweep's values as floats; InputError unless ``limit`` is sweepable and every value is a valid limit."""
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

INTEGER_PLAN_COLUMNS = ("gpu_count", "steps", "max_epochs", "rollout.gpu_count")
# rollout.*: separate rollout GPUs (empty when generation runs on the plan's own GPUs); staleness_steps: asynchronous RL
PLAN_COLUMNS = ("method", "gpu", "gpu_count", "steps", "samples_per_prompt", "teacher_precision",
                "external_data_share", "max_epochs", "checkpoint_interval_minutes", "rollout.gpu", "rollout.gpu_count",
                "staleness_steps")
METRIC_COLUMNS = ("cost_usd", "wall_hours", "quality", "forgetting_points", "gpu_hours")


def plan_record(plan: Plan) -> dict[str, Any]:
    """A plan's fields as one flat record (a sampling schedule as ``8-4-4``); a staged plan's stage fields
    as ``stage1.method``, ``stage2.gpu``, ... after its ``stages`` (``sft-rl``) and ``student``."""
    def flat(d: dict, prefix: str = "") -> dict:
        out = {}
        for k, v in d.items():
            if isinstance(v, dict):  # a split stage's rollout: rollout.gpu, rollout.gpu_count
                out.update(flat(v, f"{prefix}{k}."))
            else:
                out[prefix + k] = "-".join(map(str, v)) if isinstance(v, (list, tuple)) else v
        return out
    if len(plan.stages) == 1:
        return flat(plan.flat_dict())
    d = plan.to_dict()
    row = {"stages": "-".join(plan.methods), **({"student": d["student"]} if d["student"] is not None else {}),
           "checkpoint_interval_minutes": d["checkpoint_interval_minutes"]}
    for n, stage in enumerate(d["stages"], 1):
        row.update(flat(stage, f"stage{n}."))
    return row


def plan_columns(plan) -> dict[str, Any]:
    """A one-stage plan's columns (``PLAN_COLUMNS``); a staged plan's as ``stage1.method``, ... (:func:`plan_record`)."""
    if plan is None:
        return dict.fromkeys(PLAN_COLUMNS)
    if len(plan.stages) > 1:
        return plan_record(plan)
    d = plan.flat_dict()
    d["samples_per_prompt"] = "-".join(map(str, plan.samples_per_prompt))
    if plan.teacher_precision_by_phase:  # a precision per phase, as the schedule: int8-bf16-bf16
        d["teacher_precision"] = "-".join(plan.teacher_precision_by_phase)
    d["rollout.gpu"], d["rollout.gpu_count"] = (plan.rollout_gpu, plan.rollout_gpu_count) if plan.rollout_gpu else (None, None)
    d["staleness_steps"] = plan.staleness_steps
    return {k: d[k] for k in PLAN_COLUMNS}


def rows_frame(rows: list[SweepRow]) -> "pd.DataFrame":
    """The sweep as a DataFrame: one row per value, its status, metrics, student, plan columns and reuse."""
    import pandas as pd
    records = []
    for row in rows:
        m = row.result.metrics
        rec = {row.limit: row.value, "status": row.result.status}
        rec.update({k: getattr(m, k) if m else None for k in METRIC_COLUMNS})
        rec["student"] = row.result.student
        rec.update(plan_columns(row.result.plan))
        rec["reused"] = row.reused
        records.append(rec)
    return with_nullable_ints(pd.DataFrame.from_records(records))


def with_nullable_ints(frame: "pd.DataFrame") -> "pd.DataFrame":
    """Whole-number plan columns as pandas' nullable Int64, so an infeasible row (no plan)
    leaves a missing value instead of turning ``gpu_count`` 32 into 32.0 (issue 13 item 5)."""
    for column in INTEGER_PLAN_COLUMNS:
        if column in frame:
            frame[column] = frame[column].astype("Int64")
    return frame


def sweep_frame(instance, limit: str, values: Iterable[float], time_limit: float | None = None,
                reuse: bool = True) -> "pd.DataFrame":
    """Solve ``instance`` (path, dict or Instance) at each value of ``limit``: one row per value.

    Columns: the limit, status, the metrics (cost_usd, wall_hours, quality,
    forgetting_points, gpu_hours; empty when infeasible) and the plan's fields."""
    from planopt.instance import load_instance
    pm = PlanModel(load_instance(instance))
    return rows_frame(run_sweep(pm, limit, values, time_limit=time_limit, reuse=reuse))



# --- chance-constrained grids: confidence × (optionally) one limit ------------
#
# Each point is its own chance-constrained solve (``chance.solve_chance``), so
# the points are independent and run through ``planopt.studies.distributed`` (Dask by
# default). The result of each is a ``SolveResult.to_dict()``.

MAX_GRID = 10_000
EXPECTED_METRICS = ("cost_usd", "wall_hours", "quality", "forgetting_points")


def parse_values(text: str, flag: str) -> list[float]:
    """``LO:HI:N`` or a comma-separated list of finite numbers (see :func:`parse_range`)."""
    return parse_range(text, flag)


def parse_confidences(text: str, flag: str = "--confidence") -> list[float]:
    """The ``--confidence`` values of a grid (a range or a list), each checked as a confidence."""
    from planopt.uncertainty.chance import check_confidence
    return [check_confidence(v, flag) for v in parse_values(text, flag)]


def json_safe(obj: Any) -> Any:
    """``obj`` with every NaN or infinite float replaced by None (strict JSON)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    return obj


@dataclass
class GridPoint:
    """One chance-constrained solve of a grid: its confidence, the swept limit's value, its result dict."""
    confidence: float
    limit: Optional[str]
    value: Optional[float]
    result: dict[str, Any]

    @property
    def status(self) -> str:
        """The solve's status."""
        return self.result["status"]

    @property
    def plan(self):
        """The solve's plan, or None."""
        return read_plan(self.result["plan"]) if self.result.get("plan") else None

    def _risk(self, key: str) -> Any:
        return (self.result.get("risk") or {}).get(key) if self.result.get("plan") else None

    def expected(self, metric: str) -> Optional[float]:
        """The plan's expected ``metric`` over the scenarios (None without a plan)."""
        return (self._risk("expected") or {}).get(metric)

    @property
    def in_sample_share(self) -> Optional[float]:
        """The share of the in-sample scenarios the plan meets every limit in (None without a plan)."""
        return self._risk("in_sample_share")

    @property
    def out_of_sample_share(self) -> Optional[float]:
        """The share of fresh scenarios the plan meets every limit in (None without a plan)."""
        return self._risk("out_of_sample_share")

    @property
    def reachable_confidence(self) -> Optional[float]:
        """An infeasible solve's highest share of scenarios some plan meets every limit in (None when feasible or
        unknown)."""
        return (self.result.get("risk") or {}).get("reachable_confidence") if self.status == "infeasible" else None

    def to_dict(self) -> dict[str, Any]:
        """The point as ``planopt sweep --confidence --json`` prints it."""
        out: dict[str, Any] = {"confidence": self.confidence}
        if self.limit is not None:
            out[self.limit] = self.value
        out.update({"status": self.status, "plan": self.result.get("plan"),
                    "expected": {k: self.expected(k) for k in EXPECTED_METRICS} if self.result.get("plan") else None,
                    "in_sample_share": self.in_sample_share, "out_of_sample_share": self.out_of_sample_share,
                    "metrics": self.result.get("metrics")})
        if self.status != "optimal":
            out["message"] = self.result.get("message", "")
            out["reachable_confidence"] = self.reachable_confidence
        return json_safe(out)


def check_grid(confidences: list[float], limit: Optional[str], values: Optional[list[float]]) -> None:
    """Refuse a grid with a limit and no values (or the reverse), bad values, or more than ``MAX_GRID`` solves."""
    if (limit is None) != (values is None):
        raise InputError("sweep: give a limit together with its values, or neither")
    if limit is not None:
        check_values(limit, values)
    size = len(confidences) * (len(values) if values else 1)
    if size > MAX_GRID:
        raise InputError(f"--confidence: the grid has {size:,} solves; at most {MAX_GRID:,}")


def grid_tasks(instance, confidences: list[float], limit: Optional[str] = None, values: Optional[list[float]] = None,
               scenarios: Optional[int] = None, seed: int = 0, time_limit: Optional[float] = None) -> list[dict[str, Any]]:
    """The grid's task descriptions (``planopt.studies.distributed``): limit values outer, confidences inner."""
    from planopt.uncertainty.chance import DEFAULT_SCENARIOS
    from planopt.studies.distributed import instance_payload
    payload = instance_payload(instance)
    return [{"instance": payload, "confidence": c, "overrides": {limit: v} if limit else {},
             "scenarios": scenarios or DEFAULT_SCENARIOS, "seed": seed, "time_limit": time_limit}
            for v in (values or [None]) for c in confidences]


def run_grid(instance, confidences: list[float], limit: Optional[str] = None, values: Optional[list[float]] = None,
             scenarios: Optional[int] = None, seed: int = 0, time_limit: Optional[float] = None,
             scheduler: Optional[str] = None, serial: bool = False, progress: bool = True) -> list[GridPoint]:
    """Chance-constrained solves of ``instance`` at every (limit value, confidence); points in that order."""
    from planopt.studies.distributed import run_tasks
    check_grid(confidences, limit, values)
    tasks = grid_tasks(instance, confidences, limit, values, scenarios, seed, time_limit)
    results = run_tasks(tasks, scheduler=scheduler, serial=serial, progress=progress, label="chance-constrained solves")
    return [GridPoint(t["confidence"], limit, t["overrides"].get(limit) if limit else None, r)
            for t, r in zip(tasks, results)]


def grid_frame(points: list[GridPoint]) -> "pd.DataFrame":
    """One row per grid point: confidence, the limit's value, status, expected metrics, shares, plan."""
    import pandas as pd
    records = []
    for p in points:
        rec: dict[str, Any] = {"confidence": p.confidence}
        if p.limit is not None:
            rec[p.limit] = p.value
        rec["status"] = p.status
        rec.update({f"expected_{k}": p.expected(k) for k in EXPECTED_METRICS})
        rec.update({"in_sample_share": p.in_sample_share, "out_of_sample_share": p.out_of_sample_share,
                    "reachable_confidence": p.reachable_confidence})
        rec.update(plan_columns(p.plan))
        records.append(rec)
    return with_nullable_ints(pd.DataFrame.from_records(records))


def chance_grid_frame(instance, confidences: Iterable[float], limit: Optional[str] = None,
                      values: Optional[Iterable[float]] = None, **options: Any) -> "pd.DataFrame":
    """The Python API of ``planopt sweep FILE --confidence ...``: a DataFrame (see :func:`grid_frame`).
    ``options``: scenarios, seed, time_limit, scheduler, serial, progress."""
    from planopt.uncertainty.chance import check_confidence
    confidences = [check_confidence(c) for c in confidences]
    return grid_frame(run_grid(instance, confidences, limit, list(values) if values is not None else None, **options))
