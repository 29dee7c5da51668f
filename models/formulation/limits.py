r"""The user's limits, with mutable right-hand sides so that sweeps re-solve one model.

.. math::
   \mathrm{cost} \le B + s_B, \quad \mathrm{wall} \le D + s_D, \quad
   \mathrm{forgetting} \le F + s_F, \quad \mathrm{quality} \ge Q - s_Q

Quality and forgetting depend on the recipe alone, and lead time and
recipe-only money bound wall time and cost from below, so a limit also fixes
to 0 each recipe it rules out on its own (``recipe_within_limits``). With one
recipe chosen this is the same constraint, written so that the solver need
not branch to discover it; the persistent solver only updates bounds.

The slacks :math:`s \ge 0` are fixed at 0 except in the elastic model that
explains infeasibility (``planopt.diagnose``), which frees some of them and
minimises their normalised sum. A limit the instance does not set is
deactivated, not dropped, so a sweep can switch it on without rebuilding.
"""

from __future__ import annotations

import pyomo.environ as pyo

from ..schema import Constraints

LIMITS = {  # constraint field -> (model expression, sense)
    "budget_usd": ("cost_usd", "<="),
    "deadline_hours": ("wall_hours", "<="),
    "max_forgetting_points": ("forgetting_points", "<="),
    "min_quality": ("quality", ">="),
}


def define_limits(m: pyo.ConcreteModel, constraints: Constraints, data=None) -> None:
    for name, (expr, sense) in LIMITS.items():
        param = pyo.Param(mutable=True, initialize=0.0, within=pyo.Reals)
        slack = pyo.Var(domain=pyo.NonNegativeReals)
        setattr(m, f"{name}_limit", param)
        setattr(m, f"{name}_slack", slack)
        slack.fix(0.0)
        body = getattr(m, expr)
        con = pyo.Constraint(expr=body <= param + slack if sense == "<=" else body >= param - slack)
        setattr(m, f"{name}_bound", con)
    m.recipe_floor = _recipe_floors(data) if data is not None else None
    set_limits(m, constraints.model_dump())


def _recipe_floors(data) -> dict[str, list[float]]:
    """Per limit, the value each recipe reaches whatever the hardware (a floor for <=, the value for >=)."""
    ev = data.evaluator
    profiles = [ev.recipe(r) for r in data.recipes]
    return {"budget_usd": [data.constant_usd + data.recipe_usd[r] for r in data.recipes],
            "deadline_hours": [p.lead_hours for p in profiles],
            "max_forgetting_points": [p.forgetting_points for p in profiles],
            "min_quality": [p.quality for p in profiles]}


def recipe_within_limits(m: pyo.ConcreteModel) -> None:
    """Fix out recipes that break an active limit on their own; free the rest."""
    floors = getattr(m, "recipe_floor", None)
    if floors is None:
        return
    out = [False] * len(floors["min_quality"])
    for name, (_, sense) in LIMITS.items():
        con = getattr(m, f"{name}_bound")
        if not con.active or not getattr(m, f"{name}_slack").fixed:
            continue
        limit = pyo.value(getattr(m, f"{name}_limit"))
        tol = 1e-9 * max(1.0, abs(limit))
        for r, v in enumerate(floors[name]):
            if (sense == "<=" and v > limit + tol) or (sense == ">=" and v < limit - tol):
                out[r] = True
    for r, ruled_out in enumerate(out):
        m.recipe_chosen[r].setub(0 if ruled_out else 1)


def set_limits(m: pyo.ConcreteModel, values: dict) -> None:
    """Set each limit's right-hand side; None deactivates it."""
    _set(m, values)
    recipe_within_limits(m)


def _set(m: pyo.ConcreteModel, values: dict) -> None:
    for name in LIMITS:
        if name not in values:
            continue
        con = getattr(m, f"{name}_bound")
        if values[name] is None:
            con.deactivate()
        else:
            getattr(m, f"{name}_limit").set_value(float(values[name]))
            con.activate()
