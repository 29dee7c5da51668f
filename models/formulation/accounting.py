r"""What a plan costs, how long it takes, what it reaches and what it forgets.

Linear in the choices once work is disaggregated (see ``costs.py`` for the
formulas these sums reproduce):

.. math::
   \mathrm{wall} &= \sum_r \mathrm{lead}_r x_r + H_{train} \\
   \mathrm{cost} &= K + \sum_r c_r x_r + \sum_{h,\tau} \pi_h (1 + o_h(\tau))\, t_{h,\tau} \\
   \mathrm{quality} &= \sum_r q_r x_r, \qquad \mathrm{forgetting} = \sum_r F_r x_r

:math:`\pi_h` = GPUs × price + hot checkpoint storage + operations, per hour;
:math:`c_r` = data, sandboxes, logs, forgetting repair and operations during lead time.
"""

from __future__ import annotations

import pyomo.environ as pyo

from .data import FormulationData


def define_accounting(m: pyo.ConcreteModel, data: FormulationData) -> None:
    ev = data.evaluator
    profiles = [ev.recipe(r) for r in data.recipes]
    m.lead_hours = pyo.Expression(expr=sum(p.lead_hours * m.recipe_chosen[r] for r, p in enumerate(profiles)))
    m.wall_hours = pyo.Expression(expr=m.lead_hours + m.train_hours)
    m.cost_usd = pyo.Expression(expr=data.constant_usd
                                + sum(data.recipe_usd[rc] * m.recipe_chosen[r] for r, rc in enumerate(data.recipes))
                                + sum(data.hourly_usd[data.hardware[h]] * m.train_hours_by[h, i] for (h, i) in m.HI))
    m.quality = pyo.Expression(expr=sum(p.quality * m.recipe_chosen[r] for r, p in enumerate(profiles)))
    m.forgetting_points = pyo.Expression(expr=sum(p.forgetting_points * m.recipe_chosen[r] for r, p in enumerate(profiles)))
