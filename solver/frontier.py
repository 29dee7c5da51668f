r"""Exact bi-objective Pareto frontiers by the ε-constraint method.

For two of the four metrics (cost_usd, wall_hours, quality, forgetting_points;
quality is maximised, the others minimised) every non-dominated plan is found
by re-solving one persistent :class:`~planopt.run.PlanModel`:

1. optimise ``y`` subject to ``x`` no worse than ε (the instance's own limits
   stay in force; ε is combined with the instance's limit on ``x`` by taking
   the tighter of the two);
2. optimise ``x`` subject to ``y`` at its optimum (lexicographic tie-break,
   so each point is itself non-dominated, not only weakly);
3. move ε strictly past the ``x`` just found by a step of
   :data:`EPSILON_STEP_RELATIVE` of its magnitude and repeat until the model
   is infeasible.

Each iteration finds the next point, so the frontier is complete up to the
two tolerances: a non-dominated plan is merged into a neighbouring point only
when its ``x`` lies within one ε-step (1e-7 relative) of that point's, or its
``y`` within the hold slack (1e-7 relative) — far below the tests' 1e-6.

The ε-constraint reuses the limit constraints' mutable right-hand sides
(cost_usd↔budget_usd, wall_hours↔deadline_hours,
forgetting_points↔max_forgetting_points, quality↔min_quality), so nothing is
added to or removed from the model.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

from planopt.models.costs import Metrics
from planopt.models.formulation import activate_objective
from planopt.models.plan import Plan

from .errors import InputError
from .sweep import plan_columns
from .run import TIE_BREAK_RELATIVE, PlanModel, SolveResult, _status

if TYPE_CHECKING:
    import pandas as pd

METRICS = ("cost_usd", "wall_hours", "quality", "forgetting_points")
# metric -> (objective name, limit that bounds it, sense: +1 minimised, -1 maximised)
METRIC_OBJECTIVE = {"cost_usd": "cost", "wall_hours": "time", "quality": "quality", "forgetting_points": "forgetting"}
METRIC_LIMIT = {"cost_usd": "budget_usd", "wall_hours": "deadline_hours",
                "forgetting_points": "max_forgetting_points", "quality": "min_quality"}
METRIC_SENSE = {"cost_usd": 1, "wall_hours": 1, "quality": -1, "forgetting_points": 1}
# ε moves strictly past the x just found by this share of |x| (at least this much absolute).
EPSILON_STEP_RELATIVE = 1e-7
# y is held at its optimum within this relative slack while x is optimised (run.py's tie-break slack).
HOLD_RELATIVE = TIE_BREAK_RELATIVE
# A safety net against an endless loop on a numerically misbehaving model.
MAX_POINTS = 100_000
# HiGHS runs without presolve for every solve (see run.py): it was seen to
# misreport optima when a limit sat just off another plan's value, which is
# where ε-constraints put it.


@dataclass
class FrontierPoint:
    plan: Plan
    metrics: Metrics

    def to_dict(self) -> dict[str, Any]:
        out = {k: getattr(self.metrics, k) for k in METRICS}
        out["plan"] = self.plan.to_dict()
        return out


@dataclass
class Frontier:
    x: str
    y: str
    points: list[FrontierPoint] = field(default_factory=list)
    solves: int = 0
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"x": self.x, "y": self.y, "points": [p.to_dict() for p in self.points],
                "solves": self.solves, "seconds": self.seconds}


def check_metric(name: str, flag: str) -> str:
    if name not in METRICS:
        raise InputError(f"{flag}: expected one of {', '.join(METRICS)}, got {name!r}")
    return name


def tighter(metric: str, a: Optional[float], b: Optional[float]) -> Optional[float]:
    """The tighter of two limits on ``metric`` (None is no limit)."""
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b) if METRIC_SENSE[metric] > 0 else max(a, b)


def step(value: float) -> float:
    return EPSILON_STEP_RELATIVE * max(1.0, abs(value))


def pareto_frontier(pm: PlanModel, x: str, y: str, time_limit: float | None = None) -> Frontier:
    """Every non-dominated (x, y) point of the instance, ordered from best y to best x.

    The model's limits and objective are restored afterwards. ``time_limit``
    bounds each single solve; a solve that stops at it raises RuntimeError,
    since the frontier would no longer be exact."""
    check_metric(x, "--x")
    check_metric(y, "--y")
    if x == y:
        raise InputError(f"--x and --y must differ (both are {x})")
    start = time.perf_counter()
    front = Frontier(x, y)
    if pm.model is None:
        return front
    own = dict(pm.limits)
    objective = pm.objective
    x_limit, y_limit = METRIC_LIMIT[x], METRIC_LIMIT[y]
    epsilon: Optional[float] = None
    try:
        for _ in range(MAX_POINTS):
            pm.set_limits(**{x_limit: tighter(x, own[x_limit], epsilon), y_limit: own[y_limit]})
            best_y = _optimise(pm, front, METRIC_OBJECTIVE[y], time_limit)
            if best_y is None:
                break
            # hold y at its optimum (within the tie-break slack), then optimise x
            hold = best_y + METRIC_SENSE[y] * HOLD_RELATIVE * max(1.0, abs(best_y))
            pm.set_limits(**{y_limit: tighter(y, own[y_limit], hold)})
            if _optimise(pm, front, METRIC_OBJECTIVE[x], time_limit) is None:
                raise RuntimeError("frontier: holding y at its optimum made the model infeasible (numerical trouble)")
            result = SolveResult("optimal", METRIC_OBJECTIVE[x])
            pm.extract(result)
            point = FrontierPoint(result.plan, result.metrics)
            if front.points and _same_point(front.points[-1], point, x, y):
                break  # ε did not move the solver off the previous point: nothing further exists
            front.points.append(point)
            # strictly past the x just found (the MIP's own value, which the ε-row constrains)
            x_found = result.mip_values[x]
            epsilon = x_found - METRIC_SENSE[x] * step(x_found)
    finally:
        pm.set_limits(**own)
        pm.set_objective(objective)
    front.seconds = time.perf_counter() - start
    return front


def _optimise(pm: PlanModel, front: Frontier, objective: str, time_limit: float | None) -> Optional[float]:
    """Solve with ``objective`` active; its optimal value, or None when infeasible. Solutions are loaded."""
    activate_objective(pm.model, objective)
    res = pm._run(time_limit)
    front.solves += 1
    status = _status(res)
    if status == "infeasible":
        return None
    if status != "optimal":
        raise RuntimeError(f"frontier: a solve ended with status {status}; the frontier would not be exact")
    res.solution_loader.load_vars()
    return res.incumbent_objective


def _same_point(a: FrontierPoint, b: FrontierPoint, x: str, y: str) -> bool:
    return all(math.isclose(getattr(a.metrics, k), getattr(b.metrics, k), rel_tol=1e-12, abs_tol=1e-12) for k in (x, y))


def pareto_filter(vectors: list[tuple[float, float]], x: str, y: str) -> list[int]:
    """Indices of the non-dominated (x, y) vectors (one per distinct vector), in the natural directions.

    Used by tests and benchmarks to build the reference frontier from enumerated plans."""
    sx, sy = METRIC_SENSE[x], METRIC_SENSE[y]
    order = sorted(range(len(vectors)), key=lambda i: (sx * vectors[i][0], sy * vectors[i][1]))
    keep: list[int] = []
    best = math.inf
    for i in order:
        v = sy * vectors[i][1]
        if v < best:
            keep.append(i)
            best = v
    return keep


def points_frame(front: Frontier) -> "pd.DataFrame":
    import pandas as pd
    records = []
    for p in front.points:
        rec = {k: getattr(p.metrics, k) for k in METRICS}
        rec["gpu_hours"] = p.metrics.gpu_hours
        rec.update(plan_columns(p.plan))
        records.append(rec)
    columns = [*METRICS, "gpu_hours", *plan_columns(None)]
    return pd.DataFrame.from_records(records, columns=columns)


def frontier_frame(instance, x: str = "cost_usd", y: str = "quality") -> "pd.DataFrame":
    """The exact Pareto frontier of ``instance`` (path, dict or Instance) in metrics ``x`` and ``y``.

    One row per non-dominated point, from the best ``y`` to the best ``x``:
    the four metrics, GPU-hours and the plan's fields. The instance's own
    limits stay in force."""
    from .instance import load_instance
    return points_frame(pareto_frontier(PlanModel(load_instance(instance)), x, y))
