r"""Exact bi-objective Pareto frontiers by the ε-constraint method.

For two of the four metrics (cost_usd, wall_hours, quality, forgetting_points;
quality is maximised, the others minimised) every non-dominated plan is found
by re-solving one persistent :class:`~planopt.job.model.PlanModel`:

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
from typing import TYPE_CHECKING, Any, Callable, Optional

from planopt.models.cost.evaluator import OBJECTIVE_METRIC, Metrics
from planopt.models.formulation import activate_objective
from planopt.models.schema.plan import Plan
from planopt.models.schema.plan import plan_json

from planopt.errors import InputError
from planopt.studies.sweep import plan_columns
from planopt.job.model import TIE_BREAK_RELATIVE, PlanModel, SolveResult, _status

if TYPE_CHECKING:
    import pandas as pd

METRICS = ("cost_usd", "wall_hours", "quality", "forgetting_points")
# metric -> (objective name, limit that bounds it, sense: +1 minimised, -1 maximised)
METRIC_OBJECTIVE = {metric: objective for objective, metric in OBJECTIVE_METRIC.items()}
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
    """One point of a Pareto frontier: the plan, its metrics and the student it trains."""

    plan: Plan
    metrics: Metrics
    student: Optional[str] = None    # which student the point trains (``candidate_students``: which base wins where)

    def to_dict(self) -> dict[str, Any]:
        """The point as ``planopt frontier --json`` prints it: each metric, then the plan."""
        out = {k: getattr(self.metrics, k) for k in METRICS}
        out["plan"] = plan_json(self.plan, self.student)
        return out


@dataclass
class Frontier:
    """The exact Pareto frontier of metrics ``x`` and ``y``: its points, how many solves it took and how long."""

    x: str
    y: str
    points: list[FrontierPoint] = field(default_factory=list)
    solves: int = 0
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """The frontier as ``planopt frontier --json`` prints it."""
        return {"x": self.x, "y": self.y, "points": [p.to_dict() for p in self.points],
                "solves": self.solves, "seconds": self.seconds}


def check_metric(name: str, flag: str) -> str:
    """``name`` if it is a frontier metric; InputError naming ``flag`` otherwise."""
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
    """The ε step past a value: :data:`EPSILON_STEP_RELATIVE` of its magnitude (at least of 1)."""
    return EPSILON_STEP_RELATIVE * max(1.0, abs(value))


def pareto_frontier(pm: PlanModel, x: str, y: str, time_limit: float | None = None,
                    progress: Optional[Callable[[int], None]] = None) -> Frontier:
    """Every non-dominated (x, y) point of the instance, ordered from best y to best x.

    The model's limits and objective are restored afterwards. ``time_limit``
    bounds each single solve; a solve that stops at it raises RuntimeError,
    since the frontier would no longer be exact. ``progress(k)`` is called with
    the number of points found so far after each one."""
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
            point = FrontierPoint(result.plan, result.metrics, result.student)
            if front.points and _same_point(front.points[-1], point, x, y):
                break  # ε did not move the solver off the previous point: nothing further exists
            front.points.append(point)
            if progress:
                progress(len(front.points))
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
    return _loaded_optimum(res)


def grid_caps(inst, plan) -> list[str]:
    """The option lists whose largest value this plan uses: at a frontier's end, a sign that the
    option grid, not economics, stops the frontier there (issue 13 item 6). A staged plan: any stage's."""
    if len(plan.stages) > 1:
        caps = [c for s in plan.stages for c in grid_caps(inst, Plan.of(s.recipe, s.hardware, plan.checkpoint_interval_minutes))]
        return list(dict.fromkeys(caps))
    caps = []
    opts = inst.training.methods[plan.method]
    if plan.steps == max(opts.steps_options):
        caps.append(f"training.methods.{plan.method}.steps_options (longest: {plan.steps:,} steps)")
    if plan.samples_per_prompt and max(plan.samples_per_prompt) == max(inst.training.samples_per_prompt_options):
        caps.append(f"training.samples_per_prompt_options (largest: {max(plan.samples_per_prompt)})")
    counts = next(o.counts for o in inst.hardware.gpus if o.key == plan.gpu)
    if plan.gpu_count == max(counts) and len(counts) > 1:
        caps.append(f"hardware.gpus[{plan.gpu}].counts (largest: {plan.gpu_count})")
    return caps


def _loaded_optimum(res) -> Optional[float]:
    """The optimal value of a solve with its solution loaded; None when infeasible. Any other
    ending stops the frontier: a point not proven optimal would make it inexact."""
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
    """The frontier as a DataFrame: one row per point, its metrics (and student) and plan columns."""
    import pandas as pd
    records = []
    for p in front.points:
        rec = {k: getattr(p.metrics, k) for k in METRICS}
        rec["gpu_hours"] = p.metrics.gpu_hours
        if p.student is not None:
            rec["student"] = p.student
        rec.update(plan_columns(p.plan))
        records.append(rec)
    columns = [*METRICS, "gpu_hours", *plan_columns(None)]
    columns += [k for k in dict.fromkeys(k for rec in records for k in rec) if k not in columns]  # a staged plan's
    return pd.DataFrame.from_records(records, columns=columns)


LIMIT_OVERRIDES = ("budget_usd", "deadline_hours", "max_forgetting_points", "min_quality")


def frontier_frame(instance, x: str = "cost_usd", y: str = "quality", **limits: float) -> "pd.DataFrame":
    """The exact Pareto frontier of ``instance`` (path, dict or Instance) in metrics ``x`` and ``y``.

    One row per non-dominated point, from the best ``y`` to the best ``x``:
    the four metrics, GPU-hours and the plan's fields. The instance's own
    limits stay in force, but for those given in ``limits`` (``budget_usd``,
    ``deadline_hours``, ``max_forgetting_points``, ``min_quality``, as
    ``planopt frontier``'s flags): a quality floor that only the longest
    options reach pins the frontier to one point; a lower one shows the curve."""
    from planopt.instance import check_limit, load_instance
    for name, value in limits.items():
        if name not in LIMIT_OVERRIDES:
            raise InputError(f"{name}: unknown limit; expected one of {', '.join(LIMIT_OVERRIDES)}")
        if value is not None:
            check_limit(name, value, name)
    return points_frame(pareto_frontier(PlanModel(load_instance(instance).with_overrides(**limits)), x, y))


# --- an expected metric against the probability of meeting every limit ---------
#
# Over S sampled scenarios the in-sample probability of a plan is (S - k) / S,
# k the scenarios in which it breaks a limit, so the chance-constrained
# optimum changes only at the levels k/S. The frontier walks those levels with
# the ε-constraint on the count of violations (the mutable right-hand side
# ``allowed_violations`` of formulation/scenarios.py), from "any plan" (k <= S)
# towards certainty:
#
# 1. optimise the expected metric with at most ``allowed`` violations;
# 2. hold it at that optimum (TIE_BREAK_RELATIVE) and minimise the violations
#    k (lexicographic, so every point is non-dominated);
# 3. set ``allowed = k - 1`` and repeat until infeasible.
#
# Each point is then the chance-constrained optimum at every confidence in
# ((S - allowed_before) / S, (S - k) / S], and no other plan is on the
# in-sample frontier: exact for the sample, like the MIP itself. The
# out-of-sample share of each point (a fresh draw, as ``solve --confidence``
# reports) says how far the sample can be trusted. The points are found one
# after another (each level comes from the previous point), so they are not
# independent solves and do not run on Dask.

PROBABILITY = "probability"


@dataclass
class ChancePoint:
    """One point of the probability frontier: a plan, its point metrics, its expected metrics and its violations in
    and out of sample."""

    plan: Plan
    metrics: Metrics                 # the plan's point-estimate metrics (the evaluator's)
    expected: dict[str, float]       # the means over the sample
    violations: int                  # scenarios of the sample in which the plan breaks a limit
    scenarios: int
    out_of_sample_share: float

    @property
    def in_sample_share(self) -> float:
        """The share of the sample's scenarios in which the plan meets every limit."""
        return (self.scenarios - self.violations) / self.scenarios

    def to_dict(self) -> dict[str, Any]:
        """The point as ``planopt frontier --y probability --json`` prints it."""
        return {"in_sample_share": self.in_sample_share, "out_of_sample_share": self.out_of_sample_share,
                "violations": self.violations, "expected": dict(self.expected),
                "metrics": {k: getattr(self.metrics, k) for k in METRICS}, "plan": plan_json(self.plan)}


@dataclass
class ChanceFrontier:
    """The probability frontier: expected ``metric`` against the probability of meeting every limit, its points and
    its cost in solves and seconds."""

    metric: str
    scenarios: int
    seed: int
    out_of_sample: int
    points: list[ChancePoint] = field(default_factory=list)
    solves: int = 0
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """The frontier as ``planopt frontier --y probability --json`` prints it."""
        return {"metric": self.metric, "scenarios": self.scenarios, "seed": self.seed,
                "out_of_sample_scenarios": self.out_of_sample, "solves": self.solves, "seconds": self.seconds,
                "points": [p.to_dict() for p in self.points]}


class _ChanceWalk:
    """The plan model with its scenarios layer and a free count of violations, re-solved at falling counts."""

    def __init__(self, inst, scenarios: int, seed: int):
        from planopt.models.cost.evaluator import Evaluator
        from planopt.models.uncertainty.model import draw
        self.evaluator = Evaluator(inst)
        self.plan_model = PlanModel(inst, self.evaluator, scenarios=draw(inst, scenarios, seed), allowed=None)
        self.model = self.plan_model.model
        self.solves = 0

    def optimise(self, expr, sense, time_limit: float | None, known_feasible: bool = False) -> Optional[float]:
        """Optimal value of ``expr``, or None when infeasible; the solution is loaded (``known_feasible``:
        ``PlanModel.optimise``'s)."""
        self.solves += 1
        return self.plan_model.optimise(expr, sense, time_limit, known_feasible)

    def step(self, metric: str, allowed: int, time_limit: float | None) -> Optional[tuple[Plan, int]]:
        """The best plan for the expected ``metric`` with at most ``allowed`` violations, then fewest violations."""
        import pyomo.environ as pyo
        m = self.model
        self.plan_model.set_allowed(allowed)
        expr = self.plan_model.metric(metric)
        sense = pyo.minimize if METRIC_SENSE[metric] > 0 else pyo.maximize
        best = self.optimise(expr, sense, time_limit)
        if best is None:
            return None
        slack = HOLD_RELATIVE * max(1.0, abs(best))
        m.walk_hold = pyo.Constraint(expr=expr <= best + slack if sense == pyo.minimize else expr >= best - slack)
        try:
            if self.optimise(m.violations, pyo.minimize, time_limit, known_feasible=True) is None:
                raise RuntimeError("frontier: holding the expected metric at its optimum made the model infeasible")
            return self.plan_model.chosen_plan(), round(pyo.value(m.violations))
        finally:
            m.del_component(m.walk_hold)


def chance_frontier(inst, metric: str = "cost_usd", scenarios: int = 200, seed: int = 0,
                    out_of_sample: int = 10_000, time_limit: float | None = None,
                    progress: Optional[Callable[[int], None]] = None) -> ChanceFrontier:
    """Every non-dominated (expected ``metric``, in-sample probability of meeting every limit) point,
    from the best expected metric to the highest probability (see the comment above).
    ``progress(k)`` is called with the number of points found so far after each one."""
    from planopt.uncertainty.chance import OUT_OF_SAMPLE_SEED_OFFSET
    from planopt.uncertainty.risk import check_scenarios
    check_metric(metric, "--x")
    n = check_scenarios(scenarios, "--scenarios")
    check_scenarios(out_of_sample, "--out-of-sample")
    start = time.perf_counter()
    front = ChanceFrontier(metric, n, seed, out_of_sample)
    walk = _ChanceWalk(inst, n, seed)
    allowed = n
    while walk.model is not None and allowed >= 0:
        found = walk.step(metric, allowed, time_limit)
        if found is None:
            break
        plan, violations = found
        front.points.append(_chance_point(inst, walk.evaluator, plan, violations, n, seed,
                                          out_of_sample, seed + OUT_OF_SAMPLE_SEED_OFFSET))
        if progress:
            progress(len(front.points))
        allowed = violations - 1
    front.solves, front.seconds = walk.solves, time.perf_counter() - start
    return front


def _chance_point(inst, evaluator, plan: Plan, violations: int, n: int, seed: int, out_n: int, out_seed: int) -> ChancePoint:
    from planopt.uncertainty.risk import plan_risk
    inside = plan_risk(inst, plan, n, seed, evaluator)
    outside = plan_risk(inst, plan, out_n, out_seed, evaluator)
    expected = {k: float(inside.samples.metric(k).mean()) for k in METRICS}
    metrics = evaluator.plan_metrics(plan)
    return ChancePoint(plan, metrics, expected, violations, n, outside.share())


def probability_frontier_frame(instance, metric: str = "cost_usd", **options) -> "pd.DataFrame":
    """The Python API of ``planopt frontier FILE --x METRIC --y probability``: one row per point
    (``options``: scenarios, seed, out_of_sample, time_limit)."""
    from planopt.instance import load_instance
    return chance_points_frame(chance_frontier(load_instance(instance), metric, **options))


def chance_points_frame(front: ChanceFrontier) -> "pd.DataFrame":
    """The probability frontier as a DataFrame: one row per point, its shares, violations, expected metrics and plan
    columns."""
    import pandas as pd
    records = []
    for p in front.points:
        rec = {"in_sample_share": p.in_sample_share, "out_of_sample_share": p.out_of_sample_share,
               "violations": p.violations}
        rec.update({f"expected_{k}": p.expected[k] for k in METRICS})
        rec.update(plan_columns(p.plan))
        records.append(rec)
    columns = ["in_sample_share", "out_of_sample_share", "violations", *(f"expected_{k}" for k in METRICS),
               *plan_columns(None)]
    return pd.DataFrame.from_records(records, columns=columns)
