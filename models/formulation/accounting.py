r"""What a plan costs, how long it takes, what it reaches and what it forgets.

Linear in the choices once work is disaggregated (see ``costs.py`` for the
formulas these sums reproduce):

.. math::
   \mathrm{wall} &= \sum_r \mathrm{lead}_r x_r + H_{train} \\
   \mathrm{cost} &= K + \sum_r c_r x_r + \sum_{h,\tau} \pi_h (1 + o_h(\tau))\, t_{h,\tau} \\
   \mathrm{quality} &= \sum_r q_r x_r, \qquad \mathrm{forgetting} = \sum_r F_r x_r

:math:`\pi_h` = GPUs × price + hot checkpoint storage + operations, per hour;
:math:`c_r` = data, sandboxes, logs, forgetting repair and operations during lead time.

The cost splits into compute and the rest, so that a portfolio
(``formulation/portfolio.py``) can price the GPU-hours by tier itself:

.. math::
   G_g &= \sum_{h \in g,\,\tau} n_h (1 + o_h(\tau))\, t_{h,\tau}      &&\text{(gpu_hours_by_gpu)} \\
   \mathrm{noncompute} &= K + \sum_r c_r x_r + \sum_{h,\tau} (\pi_h - n_h p_h)(1 + o_h(\tau))\, t_{h,\tau} \\
   \mathrm{cost} &= \mathrm{noncompute} + \sum_g p_g\, G_g
"""

from __future__ import annotations

import pyomo.environ as pyo

from .data import FormulationData


def define_accounting(m: pyo.ConcreteModel, data: FormulationData) -> None:
    ev = data.evaluator
    profiles = [ev.recipe(r) for r in data.recipes]
    gpus = sorted({hw.gpu for hw in data.hardware})
    price = {g: ev.hardware(next(hw for hw in data.hardware if hw.gpu == g)).price_usd_per_gpu_hour for g in gpus}
    m.lead_hours = pyo.Expression(expr=sum(p.lead_hours * m.recipe_chosen[r] for r, p in enumerate(profiles)))
    m.wall_hours = pyo.Expression(expr=m.lead_hours + m.train_hours)
    m.GPU = pyo.Set(initialize=gpus)
    m.gpu_hours_by_gpu = pyo.Expression(m.GPU, rule=lambda m, g: sum(
        data.hardware[h].count * m.train_hours_by[h, i] for (h, i) in m.HI if data.hardware[h].gpu == g))
    m.non_compute_cost_usd = pyo.Expression(expr=data.constant_usd
                                            + sum(data.recipe_usd[rc] * m.recipe_chosen[r] for r, rc in enumerate(data.recipes))
                                            + sum((data.hourly_usd[data.hardware[h]] - data.hardware[h].count * price[data.hardware[h].gpu])
                                                  * m.train_hours_by[h, i] for (h, i) in m.HI))
    m.cost_usd = pyo.Expression(expr=m.non_compute_cost_usd + sum(price[g] * m.gpu_hours_by_gpu[g] for g in m.GPU))
    m.quality = pyo.Expression(expr=sum(p.quality * m.recipe_chosen[r] for r, p in enumerate(profiles)))
    m.forgetting_points = pyo.Expression(expr=sum(p.forgetting_points * m.recipe_chosen[r] for r, p in enumerate(profiles)))
