"""One job solved as ``planopt solve`` solves it (``planopt.solve``, ``api.solve_instance``): chance-constrained
over sampled scenarios when it has a confidence, else the MIP with the limits that bind or the least
relaxations that would make a plan exist; with ``scenarios``, the optimal plan's risk. Here, below the
studies that run it many times (``studies/distributed.py``), and the API, the CLI and the service on top."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from planopt.models.schema.instance import Instance

from planopt.errors import InputError
from planopt.instance import LIMIT_RANGES, check_limit, check_time_limit, load_instance
from planopt.job.diagnose import explain_infeasible, sensitivity as limit_sensitivity
from planopt.job.model import DEFAULT_SOLVER, PlanModel, SolveResult


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

    ``solver`` names the MIP solver: ``"highs"`` (the default), ``"scip"`` (with PySCIPOpt installed),
    ``"cbc"`` or ``"glpk"`` (with their programs installed): ``planopt.job.model.SOLVERS``."""
    unknown = sorted(set(overrides) - set(OVERRIDES))
    if unknown:
        raise InputError(f"{unknown[0]}: unknown override; expected one of {', '.join(OVERRIDES)}")
    for name, value in overrides.items():
        if name in LIMIT_RANGES and value is not None:
            check_limit(name, value, name)
    check_time_limit(time_limit, "time_limit")
    inst = load_instance(source).with_overrides(**overrides)
    from planopt.job.checks import check_job
    check_job(inst)  # the refusals validate makes too (issue 28 item 7), before any work
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
    elif result.status == "infeasible" and pm.space.recipes and pm.space.hardware:
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
        result.risk = plan_risk(inst, result.plan, scenarios, seed).to_dict()
    return result
