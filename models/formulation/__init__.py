"""The Pyomo formulation of one job, built as a pipeline of ``define_*`` steps.

``build`` collects coefficients from the evaluator as arrays (``data.py``),
drops the hardware choices another dominates for every recipe and then the
recipes another dominates on every metric and hardware (``data.prune``,
exact), then adds the choices, the disaggregated
work, checkpointing, accounting, the user's limits and the objectives, in that
order. Each step's module documents its constraints with their formulas.
"""

from __future__ import annotations

import pyomo.core as pyo  # not pyomo.environ: its plugins cost every CLI call ~0.3 s unused (BENCHMARKS.md §1)

from planopt.models.cost.evaluator import Evaluator
from planopt.models.formulation.accounting import define_accounting
from planopt.models.formulation.checkpointing import define_checkpointing
from planopt.models.formulation.choices import define_choices
from planopt.models.formulation.data import FormulationData, collect, prune
from planopt.models.formulation.limits import LIMITS, define_limits, recipe_within_limits, set_limits
from planopt.models.formulation.retention import define_retention
from planopt.models.formulation.objectives import OBJECTIVES, activate_objective, define_objectives
from planopt.models.formulation.work import define_work

__all__ = ["build", "FormulationData", "LIMITS", "OBJECTIVES", "set_limits", "activate_objective", "recipe_within_limits"]


def build(ev: Evaluator, prune_dominated: bool = True) -> tuple[pyo.ConcreteModel | None, FormulationData]:
    data = collect(ev)
    if not data.recipes or not data.hardware:
        return None, data  # nothing to choose from: the caller reports why
    if prune_dominated:
        data = prune(data)
    m = pyo.ConcreteModel(name=ev.inst.name)
    define_choices(m, data)
    define_work(m, data, one_row_per_hardware=True)
    define_checkpointing(m, data)
    define_accounting(m, data)
    define_retention(m, data)  # after the cost it adds to, before the limits and objectives that read it
    define_limits(m, ev.inst.constraints, data)
    define_objectives(m)
    activate_objective(m, ev.inst.objective)
    return m, data
