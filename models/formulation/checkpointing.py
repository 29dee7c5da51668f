r"""Checkpoint interval: write overhead against work lost to failures.

Training hours are compute hours times :math:`1 + o_h(\tau)` with
:math:`o_h(\tau) = w_h/\tau + \lambda_h(\tau/2 + \rho)` (``physics.py``), a
product of the compute hours :math:`T_h` and the interval's one-hot
:math:`y_\tau`. Disaggregated over the kept (h, τ) pairs :math:`P`:

.. math::
   \sum_{\tau:(h,\tau) \in P} t_{h,\tau} = T_h                   &\quad\text{(compute_hours_split)} \\
   t_{h,\tau} \le T^{max}_h\, y_\tau                             &\quad\text{(compute_hours_on_chosen_interval)} \\
   \sum_{h:\ P_h = \{\tau\}} z_h \le y_\tau, \qquad
   z_h \le \sum_{\tau \in P_h} y_\tau \ (|P_h| > 1)             &\quad\text{(interval_of_chosen_hardware)} \\
   H_{train} = \sum_{(h,\tau) \in P} (1 + o_h(\tau))\, t_{h,\tau} \ge \sum_r \underline H_r\, x_r
                                                                 &\quad\text{(train_hours_floor)}

:math:`T^{max}_h` is the longest compute time of any recipe that fits on
:math:`h` (data-derived; ``big_m.py`` re-checks it after the solve). :math:`P`
holds only the (h, τ) pairs that ``data.undominated_intervals`` keeps: on a
given hardware every metric grows with :math:`o_h(\tau)`, so the optimiser's
interval is the Young/Daly one, :math:`\sqrt{2 w / \lambda}`, rounded to the best
option, whenever nothing else pulls. ``interval_of_chosen_hardware`` is valid
wherever every recipe has positive compute hours on :math:`h`
(:math:`T^{min}_h > 0`; the row is left out elsewhere): the chosen hardware's
work must land on one of its kept intervals. It ties the interval to the
hardware in the LP relaxation, which the big-M row alone does not.

``train_hours_floor`` is valid because :math:`\underline H_r` is the least
training time of recipe :math:`r` over every plan it fits on
(``data.plan_floors``). It is what keeps the LP relaxation honest: without it
a fractional :math:`z` lets each work component run on the hardware where it
is fastest, and the relaxation's time (and cost, ``accounting.py``) falls far
below any plan's; with it, a least-time LP is already the least over the
recipes it may choose.

With a ``retention`` block, :math:`t_{h,\tau}` is split once more over the
retention options (``retention.py``), whose money per hour depends on the
interval too; no interval is then pruned as dominated (``data.collect``).
"""

from __future__ import annotations

import numpy as np
import pyomo.core as pyo  # not pyomo.environ: its plugins cost every CLI call ~0.3 s unused (BENCHMARKS.md §1)

from planopt.models.formulation.data import FormulationData
from planopt.models.formulation.linear import linear


def define_checkpointing(m: pyo.ConcreteModel, data: FormulationData) -> None:
    """Add the compute hours per kept (hardware, interval) pair, their rows (``compute_hours_split``,
    ``compute_hours_on_chosen_interval``, ``interval_of_chosen_hardware``), the training hours and
    ``train_hours_floor`` (module docstring)."""
    kept = data.interval_kept
    hs, is_ = np.nonzero(kept)
    pairs = list(zip(hs.tolist(), is_.tolist()))
    m.HI = pyo.Set(initialize=pairs, dimen=2, ordered=True)
    m.interval_hours = pyo.Var(m.HI, domain=pyo.NonNegativeReals)
    t = list(m.interval_hours.values())
    y = list(m.interval_chosen.values())
    z = list(m.hardware_chosen.values())
    pos_by_h = [np.flatnonzero(hs == h).tolist() for h in range(len(data.hardware))]

    def compute_hours_split(m, h):
        return linear([1.0] * len(pos_by_h[h]), [t[p] for p in pos_by_h[h]]) - m.compute_hours[h] == 0

    m.compute_hours_split = pyo.Constraint(m.H, rule=compute_hours_split)
    tmax = data.compute_hours_max.tolist()

    def compute_hours_on_chosen_interval(m, h, i):
        p = m.HI.ord((h, i)) - 1
        return linear([1.0, -tmax[h]], [t[p], y[i]]) <= 0

    m.compute_hours_on_chosen_interval = pyo.Constraint(m.HI, rule=compute_hours_on_chosen_interval)

    n_kept = kept.sum(axis=1)
    positive = data.compute_hours_min > 0
    single = {}
    rows = []
    for h in range(len(data.hardware)):
        if not positive[h] or n_kept[h] == len(data.intervals):
            continue
        if n_kept[h] == 1:
            single.setdefault(int(is_[pos_by_h[h][0]]), []).append(h)
        else:
            rows.append(linear([1.0] + [-1.0] * len(pos_by_h[h]), [z[h]] + [y[int(is_[p])] for p in pos_by_h[h]]) <= 0)
    rows.extend(linear([1.0] * len(hs_) + [-1.0], [z[h] for h in hs_] + [y[i]]) <= 0 for i, hs_ in sorted(single.items()))
    m.interval_of_chosen_hardware = pyo.ConstraintList()
    for row in rows:
        m.interval_of_chosen_hardware.add(row)

    overhead = data.overhead[hs, is_]
    m.train_hours_by = pyo.Expression(m.HI, rule=lambda m, h, i: (1.0 + float(data.overhead[h, i])) * m.interval_hours[h, i])
    m.train_hours = pyo.Expression(expr=linear(1.0 + overhead, t))
    floor = np.where(np.isfinite(data.train_hours_floor), data.train_hours_floor, 0.0)
    x = list(m.recipe_chosen.values())
    m.train_hours_floor = pyo.Constraint(expr=linear(np.concatenate([1.0 + overhead, -floor]), t + x) >= 0)
