"""The Python API a pipeline embeds: instances in, dataclasses and DataFrames out."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from planopt.models.cost.evaluator import Evaluator, Metrics
from planopt.models.schema.plan import Plan, read_plan
from planopt.models.schema.instance import Instance

from planopt.errors import InputError
from planopt.instance import load_instance
from planopt.job.model import SolveResult
from planopt.studies.sweep import plan_record  # noqa: F401  (part of the API)
from planopt.uncertainty.solve import OVERRIDES, solve_instance  # noqa: F401  (part of the API)

if TYPE_CHECKING:  # pandas is imported only when a DataFrame is asked for
    import pandas as pd


def instance_for_plan(inst: Instance, plan: Plan) -> Instance:
    """The instance of the student ``plan`` trains (``Instance.for_student``; ``inst`` itself without
    ``candidate_students``): what its report and its risk read. ValueError naming ``plan.student``."""
    if not inst.candidate_students:
        return inst
    Evaluator(inst).for_student(plan.student)  # names the field when the plan names no student or another
    return inst.for_student(plan.student)


def evaluate_plan(source: str | Path | dict[str, Any] | Instance, plan: Plan | dict[str, Any]) -> Metrics:
    """Every metric of ``plan`` (a :class:`Plan` or its JSON, either shape) on the instance; InputError naming the
    field when the plan is not one of the instance's options (e.g. a plan solved on another instance)."""
    inst = load_instance(source)
    name = str(source) if isinstance(source, (str, Path)) else "instance"
    try:
        return Evaluator(inst).evaluate(plan if isinstance(plan, Plan) else read_plan(plan))
    except ValueError as exc:
        raise InputError(f"{name}: {exc}") from None


def evaluate_given_plan(inst: Instance, raw: Any, label: str) -> tuple[Plan, Metrics]:
    """``planopt evaluate`` and ``POST /api/evaluate``: a plan's JSON (the ``plan`` object of a solve, or that
    whole result) read and evaluated on ``inst`` (a choice of student: the one the plan names); returns the plan
    and its metrics. InputError ``label: ...`` when it is not one of the instance's plans."""
    if not isinstance(raw, dict):
        raise InputError(f"{label}: expected a JSON object (a plan, or a solve's whole result), got {type(raw).__name__}")
    raw = raw.get("plan", raw) if isinstance(raw.get("plan"), dict) else raw
    try:
        plan = read_plan(raw)
        return plan, Evaluator(inst).evaluate(plan)
    except (ValueError, TypeError, KeyError) as exc:
        raise InputError(f"{label}: {exc}") from None


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


def track_given(inst: Instance, raw_plan: Any, plan_label: str, log, mapping: dict | None = None,
                scenarios: int | None = None, seed: int = 0):
    """``planopt track`` and ``POST /api/track``: the plan's JSON read and checked on ``inst`` (as ``evaluate``
    checks it: a plan of another instance is refused naming the field), the run's :class:`RunState` read from
    ``log`` (a ``RunLog``) through ``mapping``, and where it stands (``runs.track.TrackResult``)."""
    from planopt.runs.state import check_mapping, run_state
    from planopt.runs.track import DEFAULT_TRACK_SCENARIOS, check_trackable, track
    plan, _ = evaluate_given_plan(inst, raw_plan, plan_label)
    shown = instance_for_plan(inst, plan)
    check_trackable(shown, plan)
    state = run_state(log, check_mapping(mapping or {}, "mapping"), shown, plan, Evaluator(shown))
    return track(shown, plan, state, DEFAULT_TRACK_SCENARIOS if scenarios is None else scenarios, seed)


def track_run(source: str | Path | dict[str, Any] | Instance, plan: Plan | dict[str, Any] | str | Path,
              run: str | Path, mapping: dict[str, str] | str | Path | None = None, scenarios: int | None = None,
              seed: int = 0):
    """``planopt.track``: where a run stands against its plan. ``run``: a TensorBoard log folder, a W&B history
    CSV or a pilot CSV; ``mapping``: which series is which (a dict, or a mapping file's path). Returns a
    ``TrackResult``: ``.headline`` (the verdict), ``.to_dict()`` (``track --json``), ``.frame()`` (a DataFrame of
    the measured series: series, step, value) and ``.bands`` (the plan's predicted P10-P50-P90 along its steps)."""
    from planopt.errors import read_json
    from planopt.runs.readers import read_run
    from planopt.runs.state import read_mapping
    inst = load_instance(source)
    if isinstance(plan, (str, Path)):
        raw, label = read_json(Path(plan)), str(plan)
    else:
        raw, label = (plan.to_dict() if isinstance(plan, Plan) else plan), "plan"
    names = read_mapping(mapping) if isinstance(mapping, (str, Path)) else mapping
    return track_given(inst, raw, label, read_run(run, inst), names, scenarios, seed)
