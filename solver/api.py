"""The Python API a pipeline embeds: instances in, dataclasses and DataFrames out."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from planopt.models.cost.evaluator import Evaluator, Metrics
from planopt.models.schema.plan import Plan
from planopt.models.schema.instance import Instance
from planopt.models.cost.staged import evaluate_staged
from planopt.models.schema.staged_plan import StagedPlan, read_plan

from planopt.errors import InputError
from planopt.instance import load_instance
from planopt.job.model import SolveResult
from planopt.studies.sweep import plan_record  # noqa: F401  (part of the API)
from planopt.uncertainty.solve import OVERRIDES, solve_instance  # noqa: F401  (part of the API)

if TYPE_CHECKING:  # pandas is imported only when a DataFrame is asked for
    import pandas as pd


def instance_for_plan(inst: Instance, plan: Any) -> Instance:
    """The instance a plan's JSON is evaluated on: with ``candidate_students``, the one of the student it names
    (``plan.student``); ValueError naming the field when it names none or another."""
    name = plan.get("student") if isinstance(plan, dict) else getattr(plan, "student", None)
    if inst.candidate_students and name is None:
        raise ValueError(f"plan.student: the instance lists candidate_students; name the student the plan trains "
                         f"(one of {', '.join(inst.student_names())})")
    return inst if name is None else inst.for_student(name)


def evaluate_any(ev: Evaluator, plan: Plan | StagedPlan) -> Metrics:
    """The evaluator's metrics of a one-stage or a staged plan (ValueError naming the field when it is not an option)."""
    if isinstance(plan, StagedPlan):
        return evaluate_staged(ev, plan)
    allowed = ev.inst.training.sequences()
    if (plan.method,) not in allowed:
        raise ValueError(f"plan.stages: the methods {[plan.method]} are not an allowed stage sequence "
                         f"(training.stage_sequences: {[list(s) for s in allowed]})")
    return ev.evaluate(plan)


def evaluate_plan(source: str | Path | dict[str, Any] | Instance, plan: Plan | StagedPlan | dict[str, Any]) -> Metrics:
    """Every metric of ``plan`` on the instance; InputError naming the field when the plan is
    not one of the instance's options (e.g. a plan solved on another instance)."""
    inst = load_instance(source)
    name = str(source) if isinstance(source, (str, Path)) else "instance"
    try:
        inst = instance_for_plan(inst, plan)
        return evaluate_any(Evaluator(inst), plan if isinstance(plan, (Plan, StagedPlan)) else read_plan(plan))
    except ValueError as exc:
        raise InputError(f"{name}: {exc}") from None


def breakdown_frame(result: SolveResult) -> "pd.DataFrame":
    """Cost and time breakdown of a solved plan as one tidy DataFrame."""
    import pandas as pd
    if result.metrics is None:
        return pd.DataFrame(columns=["kind", "component", "value"])
    rows = [("cost_usd", k, v) for k, v in result.metrics.cost_breakdown_usd.items()]
    rows += [("hours", k, v) for k, v in result.metrics.hours_breakdown.items()]
    return pd.DataFrame(rows, columns=["kind", "component", "value"])


def solve_frame(result: SolveResult) -> "pd.DataFrame":
    """A solve as one row: status, the plan's fields (a sampling schedule as ``8-4-4``), its metrics, and its
    cost and time breakdowns as ``cost_usd.<part>`` and ``hours.<part>`` columns (empty past the status
    when there is no plan). ``planopt solve --out FILE.csv|.parquet`` writes it."""
    import pandas as pd
    row: dict[str, Any] = {"status": result.status, "objective": result.objective, "gap": result.gap}
    if result.plan is not None:
        row["student"] = result.student
        row.update(plan_record(result.plan))
    if result.metrics is not None:
        row.update(result.metrics.summary())
        row.update({f"cost_usd.{k}": v for k, v in result.metrics.cost_breakdown_usd.items()})
        row.update({f"hours.{k}": v for k, v in result.metrics.hours_breakdown.items()})
    return integer_columns(pd.DataFrame([row]))


def integer_columns(frame: "pd.DataFrame") -> "pd.DataFrame":
    """Counts as integers, missing ones included (not floats); a stage's (``stage1.steps``) too."""
    for column in frame.columns:
        if column.rpartition(".")[2] in ("gpu_count", "steps", "max_epochs"):
            frame[column] = frame[column].astype("Int64")
    return frame
