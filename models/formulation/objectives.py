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
    for name, (expr, sense) in OBJECTIVES.items():
        setattr(m, f"objective_{name}", pyo.Objective(expr=getattr(m, expr), sense=sense))
        getattr(m, f"objective_{name}").deactivate()


def activate_objective(m: pyo.ConcreteModel, name: str) -> None:
    for other in OBJECTIVES:
        getattr(m, f"objective_{other}").deactivate()
    getattr(m, f"objective_{name}").activate()
