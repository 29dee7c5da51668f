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
frontier of ``benchmarks/bench_frontier.py`` 1.2 s → 0.8 s). With pools of environment workers
(``cost/environments.py``) the single-job model takes the per-pair rows too: its hardware choices come in
copies that differ by their pool alone, in one component's hours and in their money per hour, and one row per
hardware lets the relaxation run each component on the copy where it is cheapest, a bound the floors leave a
few 1e-5 short of the optimum (``retention/qwen3-8b-math-long-rollback-detection.json`` with the example's four
pools: 1.8 s a solve with one row per hardware, 0.5 s with the per-pair rows).

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

from planopt.models.cost.asynchronous import groups, product
from planopt.models.formulation.data import FormulationData
from planopt.models.formulation.linear import linear


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
    phases = groups(data.components)
    if not phases:
        hours = [linear(units[pos_by_h[h]], [a[p] for p in pos_by_h[h].tolist()]) for h in range(n_h)]
        m.compute_hours = pyo.Expression(m.H, rule=lambda m, h: hours[h])
        return
    define_overlap(m, data, phases, cs, hs, units, a, z, pos_by_h)


def define_overlap(m, data: FormulationData, phases: dict, cs, hs, units, a, z, pos_by_h) -> None:
    r"""Overlapped phases (asynchronous RL, an agent loop on a pool of environment workers: ``asynchronous.py``):
    per hardware :math:`h` and overlapped phase :math:`p`, an epigraph variable :math:`W_{h,p}` over each side
    :math:`s` of its maximum (generation, the pool's environment work, training; ``asynchronous.MEMBERS``),

    .. math::
       W_{h,p} \ge \sum_{c \in s} U_{c,h} a_{c,h} \quad \text{for every side } s
            &\quad\text{(overlap_covers_generation, overlap_covers_environments, overlap_covers_training)} \\
       W_{h,p} \le M_{h,p} z_h &\quad\text{(overlap_on_chosen_hardware)} \\
       T_h = \sum_{c \text{ serial}} U_{c,h} a_{c,h} + \sum_p W_{h,p}

    with :math:`M_{h,p}` the largest :math:`\max_s` side among the recipes that fit on :math:`h`
    (data-derived). Exact: :math:`W` enters only :math:`T_h`, and every objective and limit is
    non-decreasing in :math:`T_h` (cost and time grow with it; quality and forgetting do not move), so an
    optimum exists with :math:`W_{h,p}` at the longest side, the evaluator's value; the cost tie-break takes
    that one (``tests/models/cost/test_asynchronous.py``, ``tests/models/cost/test_environments.py`` hold the
    MIP to both oracles)."""
    from planopt.models.cost.asynchronous import SIDES, named_groups
    n_h = len(data.hardware)
    is_serial = np.ones(len(data.components), dtype=bool)
    for masks in phases.values():
        for mask in masks:
            is_serial &= ~mask
    side_of = {g: list(sides) for g, sides in named_groups(data.components).items()}
    fits = data.recipe_fits
    keys = []
    bound = {}
    side_pos = {}
    for g, masks in phases.items():
        worst = product(data.amount_share[:, masks[0]], data.unit_hours[masks[0]])
        for mask in masks[1:]:
            worst = np.maximum(worst, product(data.amount_share[:, mask], data.unit_hours[mask]))
        most = np.where(fits, worst, 0.0).max(axis=0) if len(data.recipes) else np.zeros(n_h)
        for h in range(n_h):
            if most[h] > 0:
                keys.append((h, g))
                bound[h, g] = float(most[h])
                pos = pos_by_h[h]
                side_pos[h, g] = {side: pos[mask[cs[pos]]] for side, mask in zip(side_of[g], masks)}
    m.OVERLAP = pyo.Set(initialize=keys, dimen=2, ordered=True)
    m.overlap_hours = pyo.Var(m.OVERLAP, bounds=(0.0, None))
    w = {key: m.overlap_hours[key] for key in keys}

    for side in SIDES:
        if not any(side in side_pos[key] for key in keys):
            continue

        def rule(m, h, g, side=side):
            if side not in side_pos[h, g]:
                return pyo.Constraint.Skip
            pos = side_pos[h, g][side]
            return linear(units[pos].tolist() + [-1.0], [a[p] for p in pos.tolist()] + [w[h, g]]) <= 0

        m.add_component(f"overlap_covers_{side}", pyo.Constraint(m.OVERLAP, rule=rule))
    m.overlap_on_chosen_hardware = pyo.Constraint(m.OVERLAP, rule=lambda m, h, g: linear([1.0, -bound[h, g]], [w[h, g], z[h]]) <= 0)
    by_h = {h: [w[key] for key in keys if key[0] == h] for h in range(n_h)}
    hours = []
    for h in range(n_h):
        pos = pos_by_h[h]
        pos = pos[is_serial[cs[pos]]]
        hours.append(linear(units[pos].tolist() + [1.0] * len(by_h[h]), [a[p] for p in pos.tolist()] + by_h[h]))
    m.compute_hours = pyo.Expression(m.H, rule=lambda m, h: hours[h])
