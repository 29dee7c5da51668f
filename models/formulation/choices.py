r"""The one-hot choices: recipe, hardware, checkpoint interval; and memory fit.

.. math::
   \sum_r x_r = 1, \qquad \sum_h z_h = 1, \qquad \sum_\tau y_\tau = 1

Memory fit (``memory_fit``), for each memory class :math:`k` that does not fit
on hardware :math:`h`:

.. math:: \sum_{r \in k} x_r + z_h \le 1
"""

from __future__ import annotations

import pyomo.environ as pyo

from .data import FormulationData


def define_choices(m: pyo.ConcreteModel, data: FormulationData) -> None:
    m.R = pyo.Set(initialize=range(len(data.recipes)))
    m.H = pyo.Set(initialize=range(len(data.hardware)))
    m.I = pyo.Set(initialize=range(len(data.intervals)))
    m.recipe_chosen = pyo.Var(m.R, domain=pyo.Binary)
    m.hardware_chosen = pyo.Var(m.H, domain=pyo.Binary)
    m.interval_chosen = pyo.Var(m.I, domain=pyo.Binary)
    m.one_recipe = pyo.Constraint(expr=sum(m.recipe_chosen[r] for r in m.R) == 1)
    m.one_hardware = pyo.Constraint(expr=sum(m.hardware_chosen[h] for h in m.H) == 1)
    m.one_interval = pyo.Constraint(expr=sum(m.interval_chosen[i] for i in m.I) == 1)

    by_class: dict[str, list[int]] = {}
    for r, recipe in enumerate(data.recipes):
        by_class.setdefault(recipe.memory_class, []).append(r)
    misfits = [(k, h) for k in sorted(by_class) for h in m.H if not data.fits[k, data.hardware[h]]]
    m.MISFIT = pyo.Set(initialize=misfits, dimen=2)

    def memory_fit(m, k, h):
        return sum(m.recipe_chosen[r] for r in by_class[k]) + m.hardware_chosen[h] <= 1

    m.memory_fit = pyo.Constraint(m.MISFIT, rule=memory_fit)
