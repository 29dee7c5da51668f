r"""Work lands on the chosen hardware: the disaggregated product of recipe and hardware.

The compute hours of recipe :math:`r` on hardware :math:`h` are
:math:`\sum_c \hat A_{r,c}\, U_{c,h}`, a product of two one-hot choices. Each work
component :math:`c` (normalised so its largest amount is 1, ``data.py``) is
split into one copy per hardware choice it can run on, of which only the
chosen one may be non-zero:

.. math::
   \sum_h a_{c,h} = \sum_r \hat A_{r,c}\, x_r          &\quad\text{(work_assigned)} \\
   a_{c,h} \ge 0, \qquad \sum_c a_{c,h} \le \Big(\sum_c S_{c,h}\Big) z_h  &\quad\text{(work_on_chosen_hardware)} \\
   T_h = \sum_c U_{c,h}\, a_{c,h}                       &\quad\text{(compute hours on } h)

:math:`S_{c,h} = \max_{r \text{ fits } h} \hat A_{r,c} \le 1` is the largest share of
:math:`c` among the recipes that fit on :math:`h` (data-derived big-M). Exact:
with :math:`z` one-hot, every copy on a hardware with :math:`z_h = 0` is 0, so
:math:`a_{c,h^*} = \hat A_{r^*,c} \le S_{c,h^*}` and :math:`T_{h^*} = T_{r^*}(h^*)`, every
other :math:`T_h = 0`. The single-job model writes one row per hardware; the
per-pair rows :math:`a_{c,h} \le S_{c,h} z_h` (portfolio and chance models, which
lack the floors below) are tighter, but with the floors the bound is already
the optimum, and the fewer rows were measured faster (Pyomo's hand-over to HiGHS halves at :math:`10^8` plans; the 30-point
frontier of ``benchmarks/bench_frontier.py`` 1.2 s → 0.8 s).

The LP relaxation of this product is weak on its own: a fractional :math:`z`
lets each component run on the hardware where it is cheapest. Per-hardware
rows :math:`T^{min}_h z_h \le T_h \le T^{max}_h z_h` and McCormick rows
:math:`a_{c,h} \ge d_c - S_c (1 - z_h)` were tried and measured slower (more
rows, no better bound); what closes the gap are the per-recipe floors on
training hours and hour-priced money (``checkpointing.train_hours_floor``,
``accounting.hourly_cost_floor``), which make the relaxation's least cost or
time the least over the recipes it may still choose.
"""

from __future__ import annotations

import numpy as np
import pyomo.core as pyo  # not pyomo.environ: its plugins cost every CLI call ~0.3 s unused (BENCHMARKS.md §1)

from .data import FormulationData
from .linear import linear


def define_work(m: pyo.ConcreteModel, data: FormulationData, one_row_per_hardware: bool = False) -> None:
    """``one_row_per_hardware``: the aggregated ``work_on_chosen_hardware`` (the single-job model, whose
    floors keep the bound); otherwise one row per (component, hardware), for models without those floors."""
    n_c, n_h = len(data.components), len(data.hardware)
    share, unit = data.amount_share, data.unit_hours
    # S_{c,h}: the largest share of c among recipes that fit on h
    cap = np.zeros((n_c, n_h))
    for k in range(len(data.classes)):
        members = data.recipe_class == k
        if members.any():
            cap = np.maximum(cap, share[members].max(axis=0)[:, None] * data.fits[k][None, :])
    used = data.usable & (cap > 0)
    cs, hs = np.nonzero(used)
    m.C = pyo.Set(initialize=range(n_c))
    m.CH = pyo.Set(initialize=list(zip(cs.tolist(), hs.tolist())), dimen=2, ordered=True)
    m.work_share = pyo.Var(m.CH, bounds=(0.0, 1.0))
    a = list(m.work_share.values())                                   # in the order of (cs, hs)
    x = list(m.recipe_chosen.values())
    z = list(m.hardware_chosen.values())

    pos_by_c = [np.flatnonzero(cs == c) for c in range(n_c)]
    share_t = share.T

    def work_assigned(m, c):
        rs = np.flatnonzero(share_t[c])
        copies = pos_by_c[c].tolist()
        return linear([1.0] * len(copies) + (-share_t[c, rs]).tolist(), [a[p] for p in copies] + [x[r] for r in rs.tolist()]) == 0

    m.work_assigned = pyo.Constraint(m.C, rule=work_assigned)
    caps = cap[cs, hs]
    pos_by_h = [np.flatnonzero(hs == h) for h in range(n_h)]
    if one_row_per_hardware:
        m.work_on_chosen_hardware = pyo.Constraint(m.H, rule=lambda m, h: linear(
            [1.0] * len(pos_by_h[h]) + [-float(caps[pos_by_h[h]].sum())], [a[p] for p in pos_by_h[h].tolist()] + [z[h]]) <= 0)
    else:
        cap_list = caps.tolist()
        m.work_on_chosen_hardware = pyo.Constraint(m.CH, rule=lambda m, c, h: linear(
            [1.0, -cap_list[m.CH.ord((c, h)) - 1]], [a[m.CH.ord((c, h)) - 1], z[h]]) <= 0)
    units = unit[cs, hs]
    hours = [linear(units[pos_by_h[h]], [a[p] for p in pos_by_h[h].tolist()]) for h in range(n_h)]
    m.compute_hours = pyo.Expression(m.H, rule=lambda m, h: hours[h])
