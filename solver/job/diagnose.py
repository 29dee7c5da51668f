"""Sensitivity of an optimal plan, and explanations of infeasibility, by re-solving.

Neither uses LP duals (a MIP has none that mean anything): each answer is an
exact re-solve of the same persistent model with one thing changed.

- ``sensitivity``: for each limit the instance sets, whether it binds (the
  optimum improves without it) and what relaxing it by a stated step buys.
- ``explain_infeasible``: the elastic model. Each limit has a slack that is
  normally fixed at 0; freeing one slack and minimising it gives the least
  change of that limit alone that makes a plan exist. When no single limit
  suffices, all slacks are freed and their sum, each normalised by its
  limit, is minimised: the least combined change.
"""

from __future__ import annotations

import math
import time
from typing import Any

import pyomo.core as pyo  # not pyomo.environ: its plugins cost every CLI call ~0.3 s unused (BENCHMARKS.md §1)

from planopt.models.formulation import LIMITS, activate_objective, recipe_within_limits
from planopt.models.schema.instance import Instance

from planopt.job.model import PlanModel, SolveResult

# Relaxation steps that `planopt solve` reports: 10 % of a budget, deadline or
# forgetting tolerance, one point of minimum quality.
RELATIVE_STEP = 0.10
QUALITY_STEP_POINTS = 1.0
# A required relaxation is rounded outwards by this relative margin, so that
# passing it back through the CLI clears the solver's feasibility tolerance.
OUTWARD_MARGIN = 1e-7


def _objective_value(result: SolveResult) -> float | None:
    return result.metrics.objective(result.objective) if result.metrics else None


def relaxed_value(name: str, limit: float) -> float:
    """The limit relaxed by one reported step: one point less of ``min_quality``, 10 % more of the others
    (one unit more where the limit is not positive)."""
    if name == "min_quality":
        return limit - QUALITY_STEP_POINTS
    return limit * (1.0 + RELATIVE_STEP) if limit > 0 else limit + 1.0


def seconds_left(budget) -> float | None:
    """The time limit of the next solver run within ``budget`` (a ``job.budget.TimeBudget``; None: no limit)."""
    if budget is None or budget.left() is None:
        return None
    from planopt.job.budget import MIN_SOLVE_SECONDS
    return max(MIN_SOLVE_SECONDS, budget.left())


def sensitivity(pm: PlanModel, result: SolveResult, budget=None) -> list[dict[str, Any]]:
    """For each active limit: binding or not, and the objective after a stated relaxation. Within ``budget``
    (a ``TimeBudget``, None: no limit) the limits its time did not reach are left out."""
    base = _objective_value(result)
    if base is None:
        return []
    original = dict(pm.limits)
    rows = []
    try:
        for name, limit in original.items():
            if limit is None:
                continue
            if budget is not None and budget.expired():
                break
            pm.set_limits(**{name: None})
            free = pm.solve(seconds_left(budget))
            free_value = _objective_value(free)
            binds = free_value is not None and free_value < base - 1e-9 * max(1.0, abs(base))
            row = {"constraint": name, "limit": limit, "plan_value": _plan_value(result, name), "binding": binds}
            if binds:
                step = relaxed_value(name, limit)
                pm.set_limits(**{name: step})
                relaxed = pm.solve(seconds_left(budget))
                after = _objective_value(relaxed)
                natural = None if after is None else (-after if result.objective == "quality" else after)
                row.update({"relaxed_to": step, "objective_after": natural,  # in the objective's own units
                            # objective values are minimised (quality negated), so before - after is the gain
                            "improvement": None if after is None else base - after})
            pm.set_limits(**{name: limit})
            rows.append(row)
    finally:
        pm.set_limits(**original)
    return rows


def _plan_value(result: SolveResult, name: str) -> float:
    expr = LIMITS[name][0]
    return getattr(result.metrics, expr)


def explain_infeasible(pm: PlanModel, budget=None) -> list[dict[str, Any]]:
    """Least relaxations that make a plan exist: alone where one suffices, else together (within ``budget``,
    a ``TimeBudget``: what its time reaches)."""
    active = [n for n, v in pm.limits.items() if v is not None]
    rows = []
    for name in active:
        if budget is not None and budget.expired():
            return rows
        values = _elastic(pm, [name], budget)
        if values is not None:
            rows.append({"constraint": name, "required": values[name], "together": False})
    if not rows and len(active) > 1 and not (budget is not None and budget.expired()):
        values = _elastic(pm, active, budget)
        if values is not None:
            for name in active:
                if values[name] != pm.limits[name]:
                    rows.append({"constraint": name, "required": values[name], "together": True})
    return rows


def _elastic(pm: PlanModel, names: list[str], budget=None) -> dict[str, float] | None:
    m = pm.model
    slacks = {n: getattr(m, f"{n}_slack") for n in names}
    for s in slacks.values():
        s.unfix()
    recipe_within_limits(m)  # a freed limit no longer rules recipes out
    m.elastic_objective = pyo.Objective(expr=sum(s / max(1.0, abs(pm.limits[n])) for n, s in slacks.items()))
    for other in ("cost", "quality", "time", "forgetting"):
        getattr(m, f"objective_{other}").deactivate()
    try:
        res = pm._run(seconds_left(budget))
        if res.solution_status is None or res.incumbent_objective is None:
            return None
        res.solution_loader.load_vars()
        out = {}
        for n, s in slacks.items():
            need = max(0.0, pyo.value(s))
            out[n] = _outward(n, pm.limits[n], need)
        return out
    finally:
        m.del_component(m.elastic_objective)
        for s in slacks.values():
            s.fix(0.0)
        recipe_within_limits(m)
        activate_objective(m, pm.objective)


def _outward(name: str, limit: float, slack: float) -> float:
    """The relaxed limit, rounded away from the infeasible side.

    The margin clears the solver's and the evaluator's feasibility tolerances;
    the rounding keeps 8 significant digits (a grid of 1e-7 of the value, never
    coarser than 1e-7 absolute), so the result exceeds the least relaxation by
    at most 2e-7 of max(1, |value|). (Rounding to a fixed 1e-6 grid overshot
    small limits, e.g. a forgetting tolerance of 0.03 points, by 3e-5 relative.)"""
    if slack <= 0:
        return limit
    scale = max(1.0, abs(limit) + slack)
    margin = OUTWARD_MARGIN * scale
    digits = 7 - math.floor(math.log10(scale))
    grid = 10.0 ** -digits
    if LIMITS[name][1] == ">=":
        return round(math.floor((limit - slack - margin) / grid) * grid, digits)
    return round(math.ceil((limit + slack + margin) / grid) * grid, digits)


def out_of_time(inst: Instance, build_seconds: float, budget, phase: str, solve_seconds: float = 0.0,
                note: str = "") -> SolveResult:
    """The ``time_limit`` result without a plan: what took the time (``phase``: what ran up to the search, ``note``:
    what would have come next), in one line."""
    before = time.perf_counter() - budget.started - solve_seconds
    search = f", then the search {solve_seconds:.1f} s without finding one" if solve_seconds else ""
    search += f", and {note}" if note else ""
    return SolveResult("time_limit", inst.objective, build_seconds=build_seconds, solve_seconds=solve_seconds,
                       message=f"no plan within the {budget.end - budget.started:g} s time limit: {phase} took "
                               f"{before:.1f} s{search}; give more time")
