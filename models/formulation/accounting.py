r"""What a plan costs, how long it takes, what it reaches and what it forgets.

Linear in the choices once work is disaggregated (see ``costs.py`` for the
formulas these sums reproduce, ``data.py`` for the coefficients):

.. math::
   \mathrm{wall} &= \sum_r \mathrm{lead}_r x_r + H_{train} \\
   \mathrm{cost} &= K + \sum_r c_r x_r + \sum_{h,\tau} \pi_h (1 + o_h(\tau))\, t_{h,\tau} \\
   \mathrm{quality} &= \sum_r q_r x_r, \qquad \mathrm{forgetting} = \sum_r F_r x_r

:math:`\pi_h` = GPUs × price + hot checkpoint storage + operations, per hour;
:math:`c_r` = data, sandboxes, logs, forgetting repair and operations during lead time.
Each is one linear expression built from coefficient arrays. A valid row
bounds the money priced by the hour from below by each recipe's least
(``data.plan_floors``, the same argument as ``checkpointing.train_hours_floor``):

.. math::
   \sum_{h,\tau} \pi_h (1 + o_h(\tau))\, t_{h,\tau} \ge \sum_r \underline C_r\, x_r    &&\text{(hourly_cost_floor)}

The cost splits into compute and the rest, so that a portfolio
(``formulation/portfolio.py``) can price the GPU-hours by tier itself:

.. math::
   G_g &= \sum_{h \in g,\,\tau} n_h (1 + o_h(\tau))\, t_{h,\tau}      &&\text{(gpu_hours_by_gpu)} \\
   \mathrm{noncompute} &= K + \sum_r c_r x_r + \sum_{h,\tau} (\pi_h - n_h p_h)(1 + o_h(\tau))\, t_{h,\tau} \\
   \mathrm{cost} &= \mathrm{noncompute} + \sum_g p_g\, G_g
"""

from __future__ import annotations

import numpy as np
import pyomo.core as pyo  # not pyomo.environ: its plugins cost every CLI call ~0.3 s unused (BENCHMARKS.md §1)

from planopt.models.formulation.data import FormulationData
from planopt.models.formulation.linear import linear


def define_accounting(m: pyo.ConcreteModel, data: FormulationData) -> None:
    """Add the plan's metric expressions (lead and wall hours, GPU-hours per GPU type, compute and non-compute cost,
    quality, forgetting) and the ``hourly_cost_floor`` row (module docstring)."""
    x = list(m.recipe_chosen.values())
    t = list(m.interval_hours.values())
    hs, is_ = np.nonzero(data.interval_kept)                  # the order of m.HI
    stretch = 1.0 + data.overhead[hs, is_]                     # train hours per compute hour
    m.lead_hours = pyo.Expression(expr=linear(data.lead_hours, x))
    m.wall_hours = pyo.Expression(expr=linear(np.concatenate([data.lead_hours, stretch]), x + t))
    gpus = sorted({hw.gpu for hw in data.hardware})
    m.GPU = pyo.Set(initialize=gpus)
    gpu_of = np.array([gpus.index(hw.gpu) for hw in data.hardware], dtype=int)
    by_gpu = {g: np.flatnonzero(gpu_of[hs] == n) for n, g in enumerate(gpus)}
    gpu_hours = data.count[hs] * stretch
    m.gpu_hours_by_gpu = pyo.Expression(m.GPU, rule=lambda m, g: linear(gpu_hours[by_gpu[g]], [t[p] for p in by_gpu[g].tolist()]))
    noncompute = (data.hourly_usd - data.count * data.gpu_price)[hs] * stretch
    m.non_compute_cost_usd = pyo.Expression(expr=linear(np.concatenate([data.recipe_usd, noncompute]), x + t, data.constant_usd))
    m.cost_usd = pyo.Expression(expr=linear(np.concatenate([data.recipe_usd, data.hourly_usd[hs] * stretch]), x + t,
                                            data.constant_usd))
    floor = np.where(np.isfinite(data.compute_usd_floor), data.compute_usd_floor, 0.0)
    m.hourly_cost_floor = pyo.Constraint(expr=linear(np.concatenate([data.hourly_usd[hs] * stretch, -floor]), t + x) >= 0)
    m.quality = pyo.Expression(expr=linear(data.quality, x))
    m.forgetting_points = pyo.Expression(expr=linear(data.forgetting, x))
