r"""The user's limits, with mutable right-hand sides so that sweeps re-solve one model.

.. math::
   \mathrm{cost} \le B^+ + s_B, \quad \mathrm{wall} \le D^+ + s_D, \quad
   \mathrm{forgetting} \le F^+ + s_F, \quad \mathrm{quality} \ge Q^- - s_Q

where :math:`B^+ = B + k\,\epsilon(B)` (and so on) is the limit widened by
:math:`k` (:data:`SEARCH_WIDTH_SLACKS` while ``PlanModel.solve`` runs,
:data:`RESTING_WIDTH_SLACKS` otherwise) times the evaluator's slack
:math:`\epsilon(L) = 10^{-9} \max(1, |L|)` (``costs.limit_slack``). The rows
are thus a relaxation of the evaluator's rule (``costs.exceeds``), wide enough
that HiGHS's own tolerances never cut off a plan the rule accepts;
``PlanModel.solve`` checks each plan it returns by the rule and cuts off any
that the extra width alone admitted, and the recipe fixing below applies the
rule exactly. Evaluator, oracle and MIP therefore accept the same plans.

Quality and forgetting depend on the recipe alone, and each recipe's least
wall time and cost over every plan it fits on (lead time and recipe money plus
``data.plan_floors``) bound its wall time and cost from below, so a limit also
fixes to 0 each recipe it rules out on its own (``recipe_within_limits``). With one
recipe chosen this is the same constraint, written so that the solver need
not branch to discover it; the persistent solver only updates bounds.

In the same way a one-slot model fixes to 0 each hardware choice on which no recipe the limits leave free
meets the deadline or the budget (``hardware_within_limits``): a plan :math:`(r, h, \tau)` takes at least
:math:`\mathrm{lead}_r + s_h T_r(h)` hours and costs at least :math:`K + c_r + \pi_h s_h T_r(h)`, with
:math:`s_h = 1 + \min_\tau o_h(\tau)` (retention and milestone re-work only add to both), so a choice whose
least value over those recipes breaks a limit by the rule carries no feasible plan. Exact, and what keeps a
space of many hardware options (pools of environment workers multiply them) from being branched through.

The slacks :math:`s \ge 0` are fixed at 0 except in the elastic model that
explains infeasibility (``planopt.job.diagnose``), which frees some of them and
minimises their normalised sum. A limit the instance does not set is
deactivated, not dropped, so a sweep can switch it on without rebuilding.
"""

from __future__ import annotations

import numpy as np
import pyomo.core as pyo  # not pyomo.environ: its plugins cost every CLI call ~0.3 s unused (BENCHMARKS.md §1)

from planopt.models.cost.evaluator import LIMIT_METRIC, exceeds, limit_slack
from planopt.models.schema.instance import Constraints

# The limit rows are wider than the rule by a number of slacks, so that HiGHS's
# own tolerances never cut off a plan the rule accepts. With rows one slack wide
# (feasibility tolerance 1e-9, presolve off), HiGHS 1.16 was seen to prove a
# model infeasible whose only feasible plan lay 1e-9 inside a row, and, with
# rows ten slacks wide, to return as optimal a plan 2e-5 worse than one lying
# on the limit; with rows 1e-6 relative wide, neither happened on 40 random
# instances with limits on, inside and outside the tolerance.
# `PlanModel.solve` searches with the wide rows and cuts off any plan the rule
# refuses. Between solves the rows sit on the limits themselves: the frontier,
# the elastic model (diagnose.py) and portfolios read the rows directly, step by
# 1e-7 relative, and check their plans against the evaluator, so a row looser
# than the rule would let them return plans the evaluator then reports as
# breaking a limit.
SEARCH_WIDTH_SLACKS = 1000.0
RESTING_WIDTH_SLACKS = 0.0

LIMITS = LIMIT_METRIC  # constraint field -> (model expression, which is the metric's name; sense)


def define_limits(m: pyo.ConcreteModel, constraints: Constraints, data=None) -> None:
    """Add each limit's mutable bound, fixed slack and row (``<limit>_bound``), the per-recipe floors and the binaries
    a limit may fix, then set the instance's ``constraints``."""
    for name, (expr, sense) in LIMITS.items():
        param = pyo.Param(mutable=True, initialize=0.0, within=pyo.Reals)
        slack = pyo.Var(domain=pyo.NonNegativeReals)
        setattr(m, f"{name}_limit", param)
        setattr(m, f"{name}_slack", slack)
        slack.fix(0.0)
        body = getattr(m, expr)
        con = pyo.Constraint(expr=body <= param + slack if sense == "<=" else body >= param - slack)
        setattr(m, f"{name}_bound", con)
    m.recipe_floor = recipe_floors(data) if data is not None else None
    # one slot: its hardware choices a limit may fix to 0 with every recipe it leaves free (``hardware_within_limits``)
    m.hardware_floor_data = data if data is not None and len(data.recipes) * len(data.hardware) <= MAX_HARDWARE_FLOOR_PAIRS \
        else None
    # the binaries a limit may fix to 0 (``recipe_within_limits``): a one-slot plan's recipes; the stages
    # layer sets its pairs of first and second stages instead (``stages.define_pair_limits``)
    m.limit_fixed_vars = list(m.recipe_chosen.values()) if data is not None else []
    m.limit_values = {}  # the user's limits (the params hold the rows' widened bounds)
    m.row_width_slacks = RESTING_WIDTH_SLACKS
    set_limits(m, constraints.model_dump())


def recipe_floors(data) -> dict[str, np.ndarray]:
    """Per limit, the value each recipe reaches whatever the hardware (a floor for <=, the value for >=)."""
    return {"budget_usd": data.constant_usd + data.recipe_usd + data.compute_usd_floor,
            "deadline_hours": data.lead_hours + data.train_hours_floor,
            "max_forgetting_points": data.forgetting, "min_quality": data.quality}


def recipe_within_limits(m: pyo.ConcreteModel) -> None:
    """Fix out recipes that break an active limit on their own; free the rest."""
    floors = getattr(m, "recipe_floor", None)
    if floors is None:
        return
    out = np.zeros(len(floors["min_quality"]), dtype=bool)
    for name, (_, sense) in LIMITS.items():
        con = getattr(m, f"{name}_bound")
        if not con.active or not getattr(m, f"{name}_slack").fixed:
            continue
        out |= exceeds(floors[name], m.limit_values[name], sense)  # the rule, element-wise
    ub = np.where(out, 0, 1).tolist()
    for r, var in enumerate(m.limit_fixed_vars):
        if var.ub != ub[r]:
            var.setub(ub[r])
    hardware_within_limits(m, ~out)


# The (recipe, hardware) pairs up to which a one-slot model fixes its hardware choices by the limits: each set of
# limits then costs one pass over that many floors (about 50 ms at 10^6 on this project's machine).
MAX_HARDWARE_FLOOR_PAIRS = 4_000_000


def hardware_within_limits(m: pyo.ConcreteModel, allowed: np.ndarray) -> None:
    """Fix out the hardware choices on which no ``allowed`` recipe meets the active deadline and budget (the module
    docstring); free the rest."""
    data = getattr(m, "hardware_floor_data", None)
    if data is None or not hasattr(m, "hardware_chosen"):
        return
    out = np.zeros(len(data.hardware), dtype=bool)
    active = {name: m.limit_values[name] for name in ("deadline_hours", "budget_usd")
              if getattr(m, f"{name}_bound").active and getattr(m, f"{name}_slack").fixed and name in m.limit_values}
    if active and len(data.recipes) and allowed.any():
        from planopt.models.formulation.data import FLOOR_MARGIN
        stretch = 1.0 + np.where(data.interval_kept, data.overhead, np.inf).min(axis=1)          # [h]
        train = np.where(data.recipe_fits & allowed[:, None], data.compute_hours * stretch[None, :], np.inf)
        if "deadline_hours" in active:
            wall = (data.lead_hours[:, None] + train).min(axis=0) * (1.0 - FLOOR_MARGIN)
            out |= exceeds(wall, active["deadline_hours"], "<=")
        if "budget_usd" in active:
            cost = (data.constant_usd + data.recipe_usd[:, None] + train * data.hourly_usd[None, :]).min(axis=0)
            out |= exceeds(cost * (1.0 - FLOOR_MARGIN), active["budget_usd"], "<=")
    ub = np.where(out, 0, 1).tolist()
    for h, var in enumerate(m.hardware_chosen.values()):
        if var.ub != ub[h]:
            var.setub(ub[h])


def row_bound(limit: float, sense: str, width_slacks: float) -> float:
    """The right-hand side of a limit's row: the limit, widened by ``width_slacks`` slacks."""
    width = width_slacks * limit_slack(limit)
    return limit + width if sense == "<=" else limit - width


def set_row_width(m: pyo.ConcreteModel, width_slacks: float) -> float:
    """Re-widen every limit row to ``width_slacks`` slacks; returns the previous width."""
    previous, m.row_width_slacks = m.row_width_slacks, width_slacks
    for name, (_, sense) in LIMITS.items():
        if name in m.limit_values:
            getattr(m, f"{name}_limit").set_value(row_bound(m.limit_values[name], sense, width_slacks))
    return previous


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
            m.limit_values.pop(name, None)
            con.deactivate()
        else:
            limit = float(values[name])
            m.limit_values[name] = limit
            getattr(m, f"{name}_limit").set_value(row_bound(limit, LIMITS[name][1], m.row_width_slacks))
            con.activate()
