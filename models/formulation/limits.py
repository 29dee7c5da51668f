r"""The user's limits, with mutable right-hand sides so that sweeps re-solve one model.

.. math::
   \mathrm{cost} \le B + s_B, \quad \mathrm{wall} \le D + s_D, \quad
   \mathrm{forgetting} \le F + s_F, \quad \mathrm{quality} \ge Q - s_Q

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


def define_limits(m: pyo.ConcreteModel, constraints: Constraints) -> None:
    for name, (expr, sense) in LIMITS.items():
        param = pyo.Param(mutable=True, initialize=0.0, within=pyo.Reals)
        slack = pyo.Var(domain=pyo.NonNegativeReals)
        setattr(m, f"{name}_limit", param)
        setattr(m, f"{name}_slack", slack)
        slack.fix(0.0)
        body = getattr(m, expr)
        con = pyo.Constraint(expr=body <= param + slack if sense == "<=" else body >= param - slack)
        setattr(m, f"{name}_bound", con)
    set_limits(m, constraints.model_dump())


def set_limits(m: pyo.ConcreteModel, values: dict) -> None:
    """Set each limit's right-hand side; None deactivates it."""
    for name in LIMITS:
        if name not in values:
            continue
        con = getattr(m, f"{name}_bound")
        if values[name] is None:
            con.deactivate()
        else:
            getattr(m, f"{name}_limit").set_value(float(values[name]))
            con.activate()
