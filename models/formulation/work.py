r"""Work lands on the chosen hardware: the disaggregated product of recipe and hardware.

The compute hours of recipe :math:`r` on hardware :math:`h` are
:math:`\sum_c A_c(r)\, U_{c,h}`, a product of two one-hot choices. Each work
component :math:`c` (normalised so its largest amount is 1) is split into one
copy per hardware choice, of which only the chosen one may be non-zero:

.. math::
   \sum_h a_{c,h} = \sum_r \hat A_c(r)\, x_r          &\quad\text{(work_assigned)} \\
   0 \le a_{c,h} \le z_h                               &\quad\text{(work_on_chosen_hardware, } M = \max_r \hat A_c(r) = 1) \\
   T_h = \sum_c U_{c,h}\, a_{c,h}                      &\quad\text{(compute hours on } h)

Exact: with :math:`z` one-hot, :math:`a_{c,h^*} = \hat A_c(r^*)` and every other copy is 0.
"""

from __future__ import annotations

import pyomo.environ as pyo

from .data import FormulationData


def define_work(m: pyo.ConcreteModel, data: FormulationData) -> None:
    comps = data.components
    m.C = pyo.Set(initialize=range(len(comps)))
    pairs = [(c, h) for c in m.C for h in m.H if (comps[c], data.hardware[h]) in data.unit_hours]
    m.CH = pyo.Set(initialize=pairs, dimen=2)
    m.work_share = pyo.Var(m.CH, bounds=(0.0, 1.0))

    def work_assigned(m, c):
        demand = sum(data.amount_share.get((data.recipes[r], comps[c]), 0.0) * m.recipe_chosen[r] for r in m.R)
        return sum(m.work_share[c, h] for (cc, h) in m.CH if cc == c) == demand

    m.work_assigned = pyo.Constraint(m.C, rule=work_assigned)

    def work_on_chosen_hardware(m, c, h):
        return m.work_share[c, h] <= m.hardware_chosen[h]

    m.work_on_chosen_hardware = pyo.Constraint(m.CH, rule=work_on_chosen_hardware)

    def compute_hours(m, h):
        return sum(data.unit_hours[comps[c], data.hardware[h]] * m.work_share[c, hh] for (c, hh) in m.CH if hh == h)

    m.compute_hours = pyo.Expression(m.H, rule=compute_hours)
