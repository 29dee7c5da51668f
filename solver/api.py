"""The Python API a pipeline embeds: instances in, dataclasses and DataFrames out."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from planopt.models.cost.evaluator import Evaluator, Metrics
from planopt.models.schema.plan import Plan
from planopt.models.schema.instance import Instance
from planopt.models.cost.staged import evaluate_staged
from planopt.models.schema.staged_plan import StagedPlan, read_plan

from planopt.job.diagnose import explain_infeasible, sensitivity as limit_sensitivity
from planopt.errors import InputError
from planopt.instance import LIMIT_RANGES, check_limit, check_time_limit, load_instance
from planopt.job.model import DEFAULT_SOLVER, PlanModel, SolveResult

if TYPE_CHECKING:  # pandas is imported only when a DataFrame is asked for
    import pandas as pd


OVERRIDES = ("objective", "budget_usd", "deadline_hours", "max_forgetting_points", "min_quality", "confidence")


def solve_instance(source: str | Path | dict[str, Any] | Instance, time_limit: float | None = None,
                   sensitivity: bool = True, scenarios: int | None = None, seed: int = 0,
                   cvar: float | None = None, solver: str = DEFAULT_SOLVER, **overrides: Any) -> SolveResult:
    """Solve one job. ``overrides`` take ``objective``, ``budget_usd``, ``deadline_hours``,
    ``max_forgetting_points``, ``min_quality`` and ``confidence``. An optimal result names its
    binding limits; an infeasible one lists the least relaxations that would make a plan exist.

    With a ``confidence`` (here or in the instance's constraints) the plan is chance-constrained
    over ``scenarios`` sampled scenarios (default 200; ``cvar`` minimises CVaR of cost at that
    level); without one, ``scenarios`` measures the optimal plan's risk. Either way
    ``result.risk`` holds the JSON contract's ``risk`` object.

    ``solver`` names the MIP solver: ``"highs"`` (the default), or any solver Pyomo's solver
    interfaces drive and this machine has (``"scip"`` with PySCIPOpt installed, ``"gurobi"``, ...)."""
    unknown = sorted(set(overrides) - set(OVERRIDES))
    if unknown:
        raise InputError(f"{unknown[0]}: unknown override; expected one of {', '.join(OVERRIDES)}")
    for name, value in overrides.items():
        if name in LIMIT_RANGES and value is not None:
            check_limit(name, value, name)
    check_time_limit(time_limit, "time_limit")
    inst = load_instance(source).with_overrides(**overrides)
    if inst.constraints.confidence is not None:
        if solver != DEFAULT_SOLVER:
            raise InputError(f"solver: chance-constrained solves (a confidence) run on {DEFAULT_SOLVER} only, got {solver!r}")
        from planopt.uncertainty.chance import DEFAULT_SCENARIOS, solve_chance
        return solve_chance(inst, inst.constraints.confidence, scenarios or DEFAULT_SCENARIOS, seed, cvar, time_limit)
    if cvar is not None:
        raise InputError("--cvar: needs --confidence (CVaR is the objective of a chance-constrained solve)")
    pm = PlanModel(inst, solver=solver)
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
        from planopt.models.cost.data_reuse import shortage_note
        note = shortage_note(inst)
        if note:
            result.message += f"; {note}"
    if scenarios is not None and result.plan is not None:
        from planopt.uncertainty.risk import plan_risk
        result.risk = plan_risk(inst.for_student(result.student) if inst.candidate_students else inst, result.plan,
                                scenarios, seed).to_dict()
    return result


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


def evaluate_given_plan(inst: Instance, raw: Any, label: str) -> tuple[Instance, Plan | StagedPlan, Metrics]:
    """``planopt evaluate`` and ``POST /api/evaluate``: a plan's JSON (the ``plan`` object of a solve, or that
    whole result) read and evaluated on ``inst``; returns the instance it was evaluated on (its student's, with
    ``candidate_students``), the plan and its metrics. InputError ``label: ...`` when it is not one of the
    instance's plans."""
    if not isinstance(raw, dict):
        raise InputError(f"{label}: expected a JSON object (a plan, or a solve's whole result), got {type(raw).__name__}")
    raw = raw.get("plan", raw) if isinstance(raw.get("plan"), dict) else raw
    try:
        inst = instance_for_plan(inst, raw)
        plan = read_plan(raw)
        return inst, plan, evaluate_any(Evaluator(inst), plan)
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


def plan_record(plan: Plan | StagedPlan) -> dict[str, Any]:
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
    if not isinstance(plan, StagedPlan):
        return flat(plan.to_dict())
    d = plan.to_dict()
    row = {"stages": "-".join(plan.methods), **({"student": d["student"]} if d["student"] is not None else {}),
           "checkpoint_interval_minutes": d["checkpoint_interval_minutes"]}
    for n, stage in enumerate(d["stages"], 1):
        row.update(flat(stage, f"stage{n}."))
    return row


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
