"""The Python API a pipeline embeds: instances in, dataclasses and DataFrames out."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from planopt.models.costs import Evaluator, Metrics
from planopt.models.plan import Plan
from planopt.models.schema import Instance

from .diagnose import explain_infeasible, sensitivity as limit_sensitivity
from .instance import load_instance
from .run import PlanModel, SolveResult

if TYPE_CHECKING:  # pandas is imported only when a DataFrame is asked for
    import pandas as pd


def solve_instance(source: str | Path | dict[str, Any] | Instance, time_limit: float | None = None,
                   sensitivity: bool = True, **overrides: Any) -> SolveResult:
    """Solve one job. ``overrides`` take ``objective``, ``budget_usd``, ``deadline_hours``,
    ``max_forgetting_points`` and ``min_quality``. An optimal result names its binding
    limits; an infeasible one lists the least relaxations that would make a plan exist."""
    inst = load_instance(source).with_overrides(**overrides)
    pm = PlanModel(inst)
    result = pm.solve(time_limit)
    if result.status == "optimal" and sensitivity:
        result.binding = limit_sensitivity(pm, result)
    elif result.status == "infeasible" and pm.data.recipes and pm.data.hardware:
        result.relaxations = explain_infeasible(pm)
        if result.relaxations:
            result.message = "no plan satisfies every limit; the relaxations below would each make one exist" \
                if not result.relaxations[0]["together"] else "no plan satisfies every limit, and no single relaxation suffices"
        else:
            result.message = "no plan satisfies every limit, and relaxing the limits does not help (memory or options)"
    return result


def evaluate_plan(source: str | Path | dict[str, Any] | Instance, plan: Plan | dict[str, Any]) -> Metrics:
    inst = load_instance(source)
    return Evaluator(inst).evaluate(plan if isinstance(plan, Plan) else Plan.from_dict(plan))


def breakdown_frame(result: SolveResult) -> "pd.DataFrame":
    """Cost and time breakdown of a solved plan as one tidy DataFrame."""
    import pandas as pd
    if result.metrics is None:
        return pd.DataFrame(columns=["kind", "component", "value"])
    rows = [("cost_usd", k, v) for k, v in result.metrics.cost_breakdown_usd.items()]
    rows += [("hours", k, v) for k, v in result.metrics.hours_breakdown.items()]
    return pd.DataFrame(rows, columns=["kind", "component", "value"])
