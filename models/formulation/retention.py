r"""Retention option: a second one-hot, its money disaggregated over the (hardware, interval) hours.

Only for an instance with a ``retention`` block (``retention.py`` has the
formulas); without one nothing is added. The option :math:`v_\rho` is one-hot.
Its money per training hour :math:`s_h(\tau, \rho)` multiplies the hours
:math:`t_{h,\tau}` of ``checkpointing.py``, a product of a continuous and a
binary, so those hours are split once more over the options that cover the
interval's detection delay, :math:`Q(\tau) = \{\rho : \text{covers}(k_\rho, \tau)\}`:

.. math::
   \sum_{\rho \in Q(\tau)} u_{h,\tau,\rho} = t_{h,\tau}                  &\quad\text{(retention_hours_split)} \\
   u_{h,\tau,\rho} \le T^{max}_h\, v_\rho                                &\quad\text{(retention_hours_on_chosen_option)} \\
   y_\tau + v_\rho \le 1 \quad (\rho \notin Q(\tau))                       &\quad\text{(retention_covers_detection)} \\
   \mathrm{cost} \mathrel{+}= \sum s_h(\tau,\rho)\,(1 + o_h(\tau))\, u_{h,\tau,\rho}

*Exact.* With :math:`v` one-hot at :math:`\rho^*`, every :math:`u` of another
option is 0, so :math:`u_{h,\tau,\rho^*} = t_{h,\tau}` when :math:`\rho^*` covers
:math:`\tau` and :math:`t_{h,\tau} = 0` when it does not; :math:`T^{max}_h` (the
longest compute time of a recipe fitting on :math:`h`, data-derived) bounds
:math:`t_{h,\tau}` already (``compute_hours_on_chosen_interval``), so the big-M
row never cuts a plan. ``retention_covers_detection`` forbids the uncovered
pairs outright, as the evaluator marks them infeasible. The rollback rework
does not depend on :math:`\rho` and is already in :math:`o_h(\tau)`.
"""

from __future__ import annotations

import numpy as np
import pyomo.core as pyo  # not pyomo.environ: its plugins cost every CLI call ~0.3 s unused (BENCHMARKS.md §1)

from planopt.models.cost.releases import release_count
from planopt.models.cost.retention import covers, deep_rollback_share, storage_usd_per_train_hour
from planopt.models.formulation.data import FormulationData
from planopt.models.formulation.linear import flattened, linear


def retention_coefficients(data: FormulationData) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """[hardware, interval, option] :math:`s_h(\\tau,\\rho)` and :math:`\\delta_h(\\tau,\\rho)`, and [interval, option]
    covers, from the evaluator's formulas (``retention.py``)."""
    ev = data.evaluator
    options = ev.retention_options()
    gb = np.array([data.evaluator_of(data.hardware_student(h)).hardware(hw).checkpoint_gb
                   for h, hw in enumerate(data.hardware)], dtype=float)
    tau = np.array(data.intervals, dtype=float)
    per_hour = np.zeros((len(data.hardware), len(tau), len(options)))
    deep = np.zeros_like(per_hour)
    for k, option in enumerate(options):
        per_hour[:, :, k] = storage_usd_per_train_hour(ev.inst, option, gb[:, None], data.count[:, None], tau[None, :])
        deep[:, :, k] = deep_rollback_share(ev.inst, option, data.count[:, None], tau[None, :])
    cover = np.array([[covers(ev.inst, o.keep_last, i, o.milestones) for o in options] for i in data.intervals], dtype=bool)
    return per_hour, deep, cover.reshape(len(tau), len(options))


def define_retention(m: pyo.ConcreteModel, data: FormulationData) -> None:
    """With a ``retention`` block: add the one-hot retention option, its hours per (hardware, interval, option), their
    rows and ``retention_cost_usd`` (module docstring); nothing without one."""
    options = data.evaluator.retention_options()
    if not options:
        return
    per_hour, deep, cover = retention_coefficients(data)
    hs, is_ = np.nonzero(data.interval_kept)  # the order of m.HI
    m.RET = pyo.Set(initialize=range(len(options)))
    m.retention_chosen = pyo.Var(m.RET, domain=pyo.Binary)
    v = list(m.retention_chosen.values())
    m.one_retention = pyo.Constraint(expr=linear([1.0] * len(v), v) == 1)
    triples = [(int(h), int(i), k) for h, i in zip(hs, is_) for k in range(len(options)) if cover[i, k]]
    m.HIK = pyo.Set(initialize=triples, dimen=3, ordered=True)
    m.retention_hours = pyo.Var(m.HIK, domain=pyo.NonNegativeReals)
    by_pair: dict[tuple[int, int], list] = {}
    for (h, i, k), var in m.retention_hours.items():
        by_pair.setdefault((h, i), []).append(var)

    def retention_hours_split(m, h, i):
        us = by_pair.get((h, i), [])
        return linear([1.0] * len(us) + [-1.0], us + [m.interval_hours[h, i]]) == 0

    m.retention_hours_split = pyo.Constraint(m.HI, rule=retention_hours_split)
    tmax = data.compute_hours_max

    def retention_hours_on_chosen_option(m, h, i, k):
        return linear([1.0, -float(tmax[h])], [m.retention_hours[h, i, k], v[k]]) <= 0

    m.retention_hours_on_chosen_option = pyo.Constraint(m.HIK, rule=retention_hours_on_chosen_option)
    y = list(m.interval_chosen.values())
    m.retention_covers_detection = pyo.ConstraintList()
    for i, k in zip(*np.nonzero(~cover)):
        m.retention_covers_detection.add(linear([1.0, 1.0], [y[int(i)], v[int(k)]]) <= 1)
    u = list(m.retention_hours.values())
    extra = [float(deep[h, i, k]) for h, i, k in triples]                  # milestone re-work per compute hour
    stretch = [1.0 + (float(data.overhead[h, i]) + e) for (h, i, k), e in zip(triples, extra)]
    n = release_count(data.evaluator.inst)  # every release keeps its own recent checkpoints (releases.py)
    storage = [n * float(per_hour[h, i, k]) * st for (h, i, k), st in zip(triples, stretch)]
    hourly, gpus = data.hourly_usd, data.count * data.gpu_price
    m.retention_cost_usd = pyo.Expression(expr=linear(storage, u))
    m.milestone_rework_hours = pyo.Expression(expr=linear(extra, u))
    # the hours gain the milestone re-work; the cost its hourly money and the checkpoints' money
    m.wall_hours.set_value(flattened(m.wall_hours.expr + m.milestone_rework_hours))
    m.train_hours.set_value(flattened(m.train_hours.expr + m.milestone_rework_hours))
    m.cost_usd.set_value(flattened(m.cost_usd.expr + linear(
        [s + float(hourly[h]) * e for s, e, (h, i, k) in zip(storage, extra, triples)], u)))
    m.non_compute_cost_usd.set_value(flattened(m.non_compute_cost_usd.expr + linear(
        [s + float(hourly[h] - gpus[h]) * e for s, e, (h, i, k) in zip(storage, extra, triples)], u)))
    for g in m.GPU:
        on = [n for n, (h, i, k) in enumerate(triples) if data.hardware[h].gpu == g]
        m.gpu_hours_by_gpu[g].set_value(flattened(m.gpu_hours_by_gpu[g].expr + linear(
            [float(data.count[triples[n][0]]) * extra[n] for n in on], [u[n] for n in on])))
