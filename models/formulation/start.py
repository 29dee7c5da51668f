r"""A MIP start from the per-recipe floors: each recipe on its cheapest and on its fastest hardware.

The relaxation's bound is tight once the floors of ``data.plan_floors`` are in
(``checkpointing.train_hours_floor``, ``accounting.hourly_cost_floor``): the
LP already picks the optimal recipe, but leaves the hardware fractional, and
HiGHS then spends its root cut rounds looking for a plan. This gives it one:
for every recipe the limits leave free (upper bound 1), the plans

.. math::
   (r,\ \arg\min_h \pi_h s_h T_r(h),\ \tau^*_h) \quad\text{and}\quad (r,\ \arg\min_h s_h T_r(h),\ \tau^*_h)

(:math:`s_h = 1 + o_h(\tau^*_h)`, :math:`\tau^*_h` the hardware's best kept
interval) and, under a deadline :math:`D`, :math:`(r,\ \arg\min_{h:\ \mathrm{lead}_r + s_h T_r(h) \le D}
\pi_h s_h T_r(h),\ \tau^*_h)` (the cheapest hardware left in time: many hardware options, a pool of environment
workers among them, leave the cheapest too slow and the fastest too dear) are priced with the model's own coefficients, those that meet the
active limits by the evaluator's rule (``costs.exceeds``) are kept, and the
best one for the active objective (ties: the cheaper) becomes the start, with
every variable of the model set to its value in that plan. These are
:math:`2R` (:math:`3R`) candidates, not the :math:`R \cdot H \cdot I` plans of the space.

With a ``retention`` block each hardware choice's interval and retention option are the covering pair of
least money per compute hour (``_axis``), and the start sets the option and its hours too. A hardware choice the
limits fix out (``limits.hardware_within_limits``) is no candidate.

A start only gives HiGHS an incumbent: the optimum is still proven to the
gap of ``run.py``, and an infeasible start (a tolerance cut or an elastic
slack the start does not know) is discarded by HiGHS.
"""

from __future__ import annotations

import numpy as np
import pyomo.core as pyo  # not pyomo.environ: its plugins cost every CLI call ~0.3 s unused (BENCHMARKS.md §1)

from planopt.models.cost.asynchronous import groups
from planopt.models.cost.evaluator import exceeds
from planopt.models.formulation.data import FormulationData
from planopt.models.formulation.limits import LIMITS
from planopt.models.formulation.objectives import OBJECTIVES


def _axis(m: pyo.ConcreteModel, data: FormulationData) -> tuple[np.ndarray, np.ndarray | None, np.ndarray, np.ndarray]:
    """Per hardware its start's interval (and retention option, None without a ``retention`` block), training hours
    per compute hour and money per compute hour: the interval of least overhead, or with retention the covering
    (interval, option) of least money (``retention.py``'s :math:`s_h(\tau,\rho)` and milestone re-work)."""
    if not hasattr(m, "retention_chosen"):
        stretch_all = np.where(data.interval_kept, data.overhead, np.inf)
        stretch = 1.0 + stretch_all.min(axis=1)
        return stretch_all.argmin(axis=1), None, stretch, stretch * data.hourly_usd
    from planopt.models.cost.releases import release_count
    from planopt.models.formulation.retention import retention_coefficients
    per_hour, deep, cover = retention_coefficients(data)
    n = release_count(data.evaluator.inst)
    stretch = 1.0 + data.overhead[:, :, None] + deep                                          # [h, i, k]
    rate = (data.hourly_usd[:, None, None] + n * per_hour) * stretch
    rate = np.where(data.interval_kept[:, :, None] & cover[None], rate, np.inf)
    best = rate.reshape(len(data.hardware), -1).argmin(axis=1)
    i, k = np.unravel_index(best, rate.shape[1:])
    h = np.arange(len(data.hardware))
    return i, k, stretch[h, i, k], rate[h, i, k]


def _candidates(data: FormulationData, axis, deadline: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per recipe its cheapest and its fastest hardware and, under a ``deadline``, its cheapest hardware that
    meets it (each at its start's interval, ``_axis``)."""
    _, _, stretch, rate = axis
    train = np.where(data.recipe_fits, data.compute_hours * stretch[None, :], np.inf)
    h_fast = train.argmin(axis=1)
    money = np.where(data.recipe_fits, data.compute_hours * rate[None, :], np.inf)
    h_cheap = money.argmin(axis=1)
    picks = [h_cheap, h_fast]
    if deadline is not None:  # the cheapest in time: where the deadline leaves the cheapest hardware out
        in_time = data.lead_hours[:, None] + train <= deadline
        picks.append(np.where(in_time, money, np.inf).argmin(axis=1))
    return np.concatenate([np.arange(len(data.recipes))] * len(picks)), np.concatenate(picks)


def floor_plan(m: pyo.ConcreteModel, data: FormulationData) -> tuple | None:
    """The start plan (recipe, hardware, interval positions, and retention option or None) for the model's active
    objective and limits."""
    if not len(data.recipes) or not len(data.hardware):
        return None
    for name in LIMITS:
        if not getattr(m, f"{name}_slack").fixed:
            return None  # an elastic model: its objective is the slacks
    objective = next((k for k in OBJECTIVES if getattr(m, f"objective_{k}").active), None)
    if objective is None:
        return None
    deadline = m.limit_values.get("deadline_hours") if m.deadline_hours_bound.active else None
    axis = _axis(m, data)
    r, h = _candidates(data, axis, deadline)
    ub = np.array([v.ub for v in m.recipe_chosen.values()], dtype=float)
    hub = np.array([v.ub for v in m.hardware_chosen.values()], dtype=float)
    ok = (ub[r] > 0.5) & (hub[h] > 0.5) & data.recipe_fits[r, h] & np.isfinite(axis[3][h])
    if not ok.any():
        return None
    train = data.compute_hours[r, h] * axis[2][h]
    metrics = {"cost_usd": data.constant_usd + data.recipe_usd[r] + axis[3][h] * data.compute_hours[r, h],
               "wall_hours": data.lead_hours[r] + train, "quality": data.quality[r], "forgetting_points": data.forgetting[r]}
    ok = meets_model_rows(m, metrics, ok)
    if ok is None or not ok.any():
        return None
    value = {"cost": metrics["cost_usd"], "time": metrics["wall_hours"], "quality": -metrics["quality"],
             "forgetting": metrics["forgetting_points"]}[objective]
    pick = np.flatnonzero(ok)
    best = pick[np.lexsort((metrics["cost_usd"][pick], value[pick]))[0]]
    hb = int(h[best])
    return int(r[best]), hb, int(axis[0][hb]), None if axis[1] is None else int(axis[1][hb])


def meets_model_rows(m: pyo.ConcreteModel, metrics: dict, ok: np.ndarray) -> np.ndarray | None:
    """``ok`` narrowed to the candidates meeting the model's active limits (by the evaluator's rule) and, in the
    lexicographic second solve, its tie-break row; None when that row bounds something the candidates lack."""
    for name, (expr, sense) in LIMITS.items():
        if getattr(m, f"{name}_bound").active and name in m.limit_values:
            ok = ok & ~exceeds(metrics[expr], m.limit_values[name], sense)
    tie = getattr(m, "tie_break", None)
    if tie is not None:  # the lexicographic second solve: keep the first objective's optimum
        expr = next((k for k in ("quality", "wall_hours", "forgetting_points") if tie.body is getattr(m, k)), None)
        if expr is None:
            return None
        if tie.lower is not None:
            ok = ok & (metrics[expr] >= pyo.value(tie.lower))
        if tie.upper is not None:
            ok = ok & (metrics[expr] <= pyo.value(tie.upper))
    return ok


def plan_values(m: pyo.ConcreteModel, data: FormulationData, r: int, h: int, i: int,
                k: int | None = None) -> list[tuple[object, float]]:
    """Every variable of the single-job model at plan (r, h, i) and retention option ``k`` (the other copies and
    choices 0)."""
    out: list[tuple[object, float]] = [(m.recipe_chosen[r], 1.0), (m.hardware_chosen[h], 1.0), (m.interval_chosen[i], 1.0),
                                       (m.class_chosen[int(data.recipe_class[r])], 1.0)]
    for (c, hh) in m.CH:
        if hh == h and data.amount_share[r, c] > 0:
            out.append((m.work_share[c, hh], float(data.amount_share[r, c])))
    if (h, i) in m.HI:
        out.append((m.interval_hours[h, i], float(data.compute_hours[r, h])))  # asynchronous RL's overlap included
    for (hh, g) in getattr(m, "OVERLAP", ()):  # an overlapped phase's epigraph (work.define_overlap): its longest side
        if hh == h:
            out.append((m.overlap_hours[hh, g], float(max(data.amount_share[r, mask] @ data.unit_hours[mask, h]
                                                              for mask in groups(data.components)[g]))))
    if k is not None:  # the retention option and its hours (formulation/retention.py)
        out += [(m.retention_chosen[k], 1.0), (m.retention_hours[h, i, k], float(data.compute_hours[r, h]))]
    return out


def mip_start(m: pyo.ConcreteModel, data: FormulationData) -> list[tuple[object, float]] | None:
    """The start's variable values, or None when there is none to give."""
    plan = floor_plan(m, data)
    return None if plan is None else plan_values(m, data, *plan)
