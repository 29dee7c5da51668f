r"""Checkpoint interval: write overhead against work lost to failures.

Training hours are compute hours times :math:`1 + o_h(\tau)` with
:math:`o_h(\tau) = w_h/\tau + \lambda_h(\tau/2 + \rho)` (``physics.py``), a
product of the compute hours :math:`T_h` and the interval's one-hot
:math:`y_\tau`. Disaggregated over intervals:

.. math::
   \sum_\tau t_{h,\tau} = T_h                            &\quad\text{(compute_hours_split)} \\
   t_{h,\tau} \le T^{max}_h\, y_\tau                     &\quad\text{(compute_hours_on_chosen_interval)} \\
   H_{train} = \sum_{h,\tau} (1 + o_h(\tau))\, t_{h,\tau}

:math:`T^{max}_h` is the longest compute time of any recipe that fits on
:math:`h` (data-derived; ``big_m.py`` re-checks it after the solve). The
index set holds only the (h, τ) pairs that ``data.undominated_intervals``
keeps: on a given hardware every metric grows with :math:`o_h(\tau)`, so the
optimiser's interval is the Young/Daly one, :math:`\sqrt{2 w / \lambda}`,
rounded to the best option, whenever nothing else pulls.
"""

from __future__ import annotations

import pyomo.environ as pyo

from .data import FormulationData


def define_checkpointing(m: pyo.ConcreteModel, data: FormulationData) -> None:
    index = {h: n for n, h in enumerate(data.hardware)}
    position = {tau: n for n, tau in enumerate(data.intervals)}
    m.HI = pyo.Set(initialize=[(index[h], position[tau]) for h, tau in data.interval_pairs], dimen=2)
    m.interval_hours = pyo.Var(m.HI, domain=pyo.NonNegativeReals)

    def compute_hours_split(m, h):
        return sum(m.interval_hours[h, i] for (hh, i) in m.HI if hh == h) == m.compute_hours[h]

    m.compute_hours_split = pyo.Constraint(m.H, rule=compute_hours_split)

    def compute_hours_on_chosen_interval(m, h, i):
        return m.interval_hours[h, i] <= data.compute_hours_max[data.hardware[h]] * m.interval_chosen[i]

    m.compute_hours_on_chosen_interval = pyo.Constraint(m.HI, rule=compute_hours_on_chosen_interval)

    def train_hours(m, h, i):
        return (1.0 + data.overhead[data.hardware[h], data.intervals[i]]) * m.interval_hours[h, i]

    m.train_hours_by = pyo.Expression(m.HI, rule=train_hours)
    m.train_hours = pyo.Expression(expr=sum(m.train_hours_by[h, i] for (h, i) in m.HI))
