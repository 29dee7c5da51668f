"""One job solved as ``planopt solve`` solves it (``planopt.solve``, ``api.solve_instance``): chance-constrained
over sampled scenarios when it has a confidence, else the MIP with the limits that bind or the least
relaxations that would make a plan exist; with ``scenarios``, the optimal plan's risk. Here, below the
studies that run it many times (``studies/distributed.py``), and the API, the CLI and the service on top."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from planopt.models.schema.instance import Instance

from planopt.errors import InputError
from planopt.instance import LIMIT_RANGES, check_limit, check_time_limit, load_instance
from planopt.job.diagnose import explain_infeasible, out_of_time, seconds_left, sensitivity as limit_sensitivity
from planopt.job.model import DEFAULT_SOLVER, PlanModel, SolveResult


OVERRIDES = ("objective", "budget_usd", "deadline_hours", "max_forgetting_points", "min_quality", "confidence")


def solve_instance(source: str | Path | dict[str, Any] | Instance, time_limit: float | None = None,
                   sensitivity: bool = True, scenarios: int | None = None, seed: int = 0,
                   cvar: float | None = None, solver: str = DEFAULT_SOLVER, started_at: float | None = None,
                   **overrides: Any) -> SolveResult:
    """Solve one job. ``overrides`` take ``objective``, ``budget_usd``, ``deadline_hours``,
    ``max_forgetting_points``, ``min_quality`` and ``confidence``. An optimal result names its
    binding limits; an infeasible one lists the least relaxations that would make a plan exist.

    With a ``confidence`` (here or in the instance's constraints) the plan is chance-constrained
    over ``scenarios`` sampled scenarios (default 200; ``cvar`` minimises CVaR of cost at that
    level); without one, ``scenarios`` measures the optimal plan's risk. Either way
    ``result.risk`` holds the JSON contract's ``risk`` object.

    ``time_limit`` bounds the whole call from ``started_at`` (a ``time.perf_counter`` instant; default now; the
    CLI passes the command's start, ``cli/clock.py``): a build that clearly cannot fit is refused before it
    starts (``plan_space.check_build_time``), the solve gets the time the build left, and the limits table,
    the relaxations and the risk what the solve left (a ``time_limit`` result keeps its incumbent and gap).

    ``solver`` names the MIP solver: ``"highs"`` (the default), ``"scip"`` (with PySCIPOpt installed),
    ``"cbc"`` or ``"glpk"`` (with their programs installed): ``planopt.job.model.SOLVERS``."""
    from planopt.job.budget import TimeBudget
    unknown = sorted(set(overrides) - set(OVERRIDES))
    if unknown:
        raise InputError(f"{unknown[0]}: unknown override; expected one of {', '.join(OVERRIDES)}")
    for name, value in overrides.items():
        if name in LIMIT_RANGES and value is not None:
            check_limit(name, value, name)
    check_time_limit(time_limit, "time_limit")
    budget = TimeBudget.of(time_limit, time.perf_counter() if started_at is None else started_at)
    inst = load_instance(source).with_overrides(**overrides)
    result = _solve_loaded(inst, budget, time_limit, sensitivity, scenarios, seed, cvar, solver)
    if result.plan is not None:
        result.spend = plan_spend(inst, result.plan)
    return result


def plan_spend(inst: Instance, plan) -> dict[str, Any]:
    """The budget and alert lines of ``plan`` (``models/cost/spend.py``): the report's ``spend`` object."""
    from planopt.models.cost.spend import plan_charges, spend_lines
    return spend_lines(plan_charges(inst, plan), inst.constraints.budget_usd, inst.constraints.alert_share)


def _solve_loaded(inst: Instance, budget, time_limit: float | None, sensitivity: bool, scenarios: int | None, seed: int, cvar: float | None,
                  solver: str) -> SolveResult:
    """:func:`solve_instance` on the loaded instance (its overrides applied) within ``budget``."""
    from planopt.job.checks import check_job
    from planopt.job.plan_space import check_build_time
    space = check_job(inst)  # the refusals validate makes too (issue 28 item 7), before any work
    if budget.expired():
        return out_of_time(inst, 0.0, budget, "loading the instance")
    chance = inst.constraints.confidence is not None
    from planopt.uncertainty.chance import DEFAULT_SCENARIOS
    # a build that clearly cannot fit the limit (with a confidence, its scenario layer too): refused now
    check_build_time(inst, space, budget.left(), scenarios=(scenarios or DEFAULT_SCENARIOS) if chance else 0)
    if chance:
        if solver != DEFAULT_SOLVER:
            raise InputError(f"solver: chance-constrained solves (a confidence) run on {DEFAULT_SOLVER} only, got {solver!r}")
        from planopt.uncertainty.chance import solve_chance
        return solve_chance(inst, inst.constraints.confidence, scenarios or DEFAULT_SCENARIOS, seed, cvar, time_limit,
                            budget=budget)
    if cvar is not None:
        raise InputError("--cvar: needs --confidence (CVaR is the objective of a chance-constrained solve)")
    pm = PlanModel(inst, solver=solver)
    if budget.expired():
        return out_of_time(inst, pm.build_seconds, budget, "loading the instance and building the model")
    result = pm.solve(seconds_left(budget))
    if result.status == "time_limit" and result.plan is None:
        return out_of_time(inst, pm.build_seconds, budget, "loading the instance and building the model",
                           result.solve_seconds)
    if result.status == "optimal" and sensitivity:
        result.binding = limit_sensitivity(pm, result, budget)
    elif result.status == "infeasible" and pm.space.recipes and pm.space.hardware:
        explain(pm, result, budget)
    if result.status == "infeasible" and not budget.expired():
        lifted = method_gpu_relaxations(inst, budget, solver)
        if lifted:
            result.relaxations = (result.relaxations or []) + lifted
            if result.plan is None and not result.message.startswith("no plan satisfies"):
                result.message += "; allowing a method every GPU (below) would make one exist"
    if scenarios is not None and result.plan is not None and not budget.expired():
        from planopt.uncertainty.risk import plan_risk
        result.risk = plan_risk(inst, result.plan, scenarios, seed).to_dict()
    return result


def method_gpu_relaxations(inst: Instance, budget, solver: str = DEFAULT_SOLVER) -> list[dict[str, Any]]:
    """Per method whose GPUs ``training.methods.<m>.gpus`` restricts, lifting that alone, when the instance solved
    without it has a plan (kind ``"option"``; its cost in ``text``), within ``budget``."""
    out = []
    for method, options in inst.training.methods.items():
        if options.gpus is None or budget.expired():
            continue
        methods = {**inst.training.methods, method: options.model_copy(update={"gpus": None})}
        free = inst.model_copy(update={"training": inst.training.model_copy(update={"methods": methods})})
        res = PlanModel(free, solver=solver).solve(seconds_left(budget))
        if res.plan is not None and res.status == "optimal":
            stage = next(s for s in res.plan.stages if s.method == method) if method in res.plan.methods else None
            where = f"; its {method} stage trains on {stage.hardware.count} × {stage.hardware.gpu}" if stage else ""
            out.append({"constraint": f"training.methods.{method}.gpus", "required": None, "together": False,
                        "kind": "option", "change": "null (every GPU of hardware.gpus)",
                        "text": f"a plan then exists at ${res.metrics.cost_usd:,.0f}{where}"})
    return out


def explain(pm: PlanModel, result: SolveResult, budget) -> None:
    """An infeasible result's relaxations and message (within ``budget``: the relaxations its time reaches)."""
    result.relaxations = explain_infeasible(pm, budget)
    if result.relaxations:
        result.message = "no plan satisfies every limit; the relaxations below would each make one exist" \
            if not result.relaxations[0]["together"] else "no plan satisfies every limit, and no single relaxation suffices"
    elif budget.expired():
        result.message = "no plan satisfies every limit; the time limit ran out before the relaxations were found"
    else:
        result.message = "no plan satisfies every limit, and relaxing the limits does not help (memory or options)"
    from planopt.models.cost.data_reuse import shortage_note
    note = shortage_note(pm.inst)
    if note:
        result.message += f"; {note}"
