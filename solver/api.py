"""The Python API a pipeline embeds: instances in, dataclasses and DataFrames out."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from planopt.models.cost.evaluator import Evaluator, Metrics
from planopt.models.schema.plan import Plan, read_plan
from planopt.models.schema.instance import Instance

from planopt.errors import InputError
from planopt.instance import evaluate_given_plan, instance_for_plan, load_instance  # noqa: F401  (part of the API)
from planopt.job.model import DEFAULT_SOLVER, SolveResult
from planopt.studies.sweep import plan_record  # noqa: F401  (part of the API)
from planopt.uncertainty.solve import OVERRIDES, solve_instance  # noqa: F401  (part of the API)

if TYPE_CHECKING:  # pandas is imported only when a DataFrame is asked for
    import pandas as pd


def evaluate_plan(source: str | Path | dict[str, Any] | Instance, plan: Plan | dict[str, Any]) -> Metrics:
    """Every metric of ``plan`` (a :class:`Plan` or its JSON, either shape) on the instance; InputError naming the
    field when the plan is not one of the instance's options (e.g. a plan solved on another instance)."""
    inst = load_instance(source)
    name = str(source) if isinstance(source, (str, Path)) else "instance"
    try:
        return Evaluator(inst).evaluate(plan if isinstance(plan, Plan) else read_plan(plan))
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
        row.update({f"quantities.{k}": v for k, v in result.metrics.quantities.items()})
        row.update({"cost_split_usd.fixed": result.metrics.fixed_cost_usd, "cost_split_usd.elastic": result.metrics.elastic_cost_usd})
    return integer_columns(pd.DataFrame([row]))


def integer_columns(frame: "pd.DataFrame") -> "pd.DataFrame":
    """Counts as integers, missing ones included (not floats); a stage's (``stage1.steps``) too."""
    for column in frame.columns:
        if column.rpartition(".")[2] in ("gpu_count", "steps", "max_epochs"):
            frame[column] = frame[column].astype("Int64")
    return frame


def track_run(source: str | Path | dict[str, Any] | Instance, plan: Plan | dict[str, Any] | str | Path,
              run: str | Path, mapping: dict[str, str] | str | Path | None = None, scenarios: int | None = None,
              seed: int = 0):
    """``planopt.track``: where a run stands against its plan. ``run``: a TensorBoard log folder, a W&B history
    CSV or a pilot CSV; ``mapping``: which series is which (a dict, or a mapping file's path). Returns a
    ``TrackResult``: ``.headline`` (the verdict), ``.to_dict()`` (``track --json``), ``.frame()`` (a DataFrame of
    the measured series: series, step, value) and ``.bands`` (the plan's predicted P10-P50-P90 along its steps)."""
    from planopt.runs.track import track_given
    return track_given(*_run_inputs(source, plan, run, mapping), scenarios, seed)


def replan_run(source: str | Path | dict[str, Any] | Instance, plan: Plan | dict[str, Any] | str | Path,
               run: str | Path, mapping: dict[str, str] | str | Path | None = None, confidence: float | None = None,
               scenarios: int | None = None, seed: int = 0, time_limit: float | None = None, solver: str = DEFAULT_SOLVER):
    """``planopt.replan``: the best plan for the rest of a run in flight (``planopt replan``; ``runs/replan.py``).
    Arguments as :func:`track_run`'s, with ``confidence`` (the rest holds every limit in that share of the
    updated scenarios). Returns a ``ReplanResult``: ``.headline``, ``.chosen`` (an ``Option``: ``choice`` stop,
    stay or move, its ``plan`` and the rest's metrics), ``.continuing`` (the original plan's remaining steps),
    ``.shares`` and ``.to_dict()`` (``replan --json``)."""
    from planopt.runs.replan import replan_given
    return replan_given(*_run_inputs(source, plan, run, mapping), confidence, scenarios, seed, time_limit, solver)


def _run_inputs(source, plan, run, mapping) -> tuple:
    """What ``track`` and ``replan`` read: the instance, the plan's JSON and its label, the run, the series mapping."""
    from planopt.errors import read_json
    from planopt.runs.readers import read_run
    from planopt.runs.state import read_mapping
    inst = load_instance(source)
    if isinstance(plan, (str, Path)):
        raw, label = read_json(Path(plan)), str(plan)
    else:
        raw, label = (plan.to_dict() if isinstance(plan, Plan) else plan), "plan"
    names = read_mapping(mapping) if isinstance(mapping, (str, Path)) else mapping
    return inst, raw, label, read_run(run, inst), names
