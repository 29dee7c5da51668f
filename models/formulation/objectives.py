r"""Objectives: least cost (default), most quality, least time, least forgetting.

All four exist on the model; one is active. ``run.py`` breaks ties of the
non-cost objectives by cost in a second solve (lexicographic), so a user who
asks for the most quality gets the cheapest plan of that quality.
"""

from __future__ import annotations

import pyomo.core as pyo  # not pyomo.environ: its plugins cost every CLI call ~0.3 s unused (BENCHMARKS.md §1)

OBJECTIVES = {"cost": ("cost_usd", pyo.minimize), "quality": ("quality", pyo.maximize),
              "time": ("wall_hours", pyo.minimize), "forgetting": ("forgetting_points", pyo.minimize)}


def define_objectives(m: pyo.ConcreteModel) -> None:
    """Add one objective per metric (``objective_cost`` and the rest), all deactivated."""
    for name, (expr, sense) in OBJECTIVES.items():
        setattr(m, f"objective_{name}", pyo.Objective(expr=getattr(m, expr), sense=sense))
        getattr(m, f"objective_{name}").deactivate()


def define_expected_objectives(m: pyo.ConcreteModel) -> None:
    """With the scenarios layer: each objective on its metric's expected value (``expected_<name>``), and
    ``objective_cvar`` on CVaR of cost where the layer defines it."""
    for name in OBJECTIVES:
        getattr(m, f"objective_{name}").set_value(getattr(m, f"expected_{name}"))
    if hasattr(m, "cvar_cost"):
        m.objective_cvar = pyo.Objective(expr=m.cvar_cost, sense=pyo.minimize)
        m.objective_cvar.deactivate()


def activate_objective(m: pyo.ConcreteModel, name: str) -> None:
    """Make ``objective_<name>`` the one active objective."""
    for other in [*OBJECTIVES, "cvar"]:
        if hasattr(m, f"objective_{other}"):
            getattr(m, f"objective_{other}").deactivate()
    getattr(m, f"objective_{name}").activate()
