r"""A MIP start for the staged model: each pair of first and second stages on its cheapest and on its
fastest hardware, at each interval, priced from the blocks' own coefficients.

The staged model's LP bound is often tight at the root (the pair fixing of
``staged._pair_floors`` removes what a limit rules out), and HiGHS then spends
its time looking for a plan, as for one stage (``start.py``). The candidates:
for every interval :math:`\tau`, every pair :math:`(r_0, o)` the limits leave free and
both stages on their cheapest (or both on their fastest) hardware at :math:`\tau`,

.. math::
   \mathrm{cost} = K + c_0(r_0, \tau) + c_1(o, \tau) + p_{repair} (f_{r_0} + F(r_0, o)), \qquad
   \mathrm{wall} = w_0(r_0, \tau) + w_1(o, \tau)

(a third stage is not tried: plans that stop after two are candidates). Those
meeting the active limits by the evaluator's rule are kept, the best for the
active objective (ties: the cheaper) becomes the start, every variable set to
its value in that plan. HiGHS checks it and discards it if it is infeasible;
the optimum is proven as before.
"""

from __future__ import annotations

import numpy as np
import pyomo.core as pyo  # not pyomo.environ: its plugins cost every CLI call ~0.3 s unused (BENCHMARKS.md §1)

from planopt.models.cost.releases import release_count
from planopt.models.formulation.limits import LIMITS
from planopt.models.formulation.objectives import OBJECTIVES
from planopt.models.formulation.space import PlanSpace, interval_floors
from planopt.models.formulation.start import meets_model_rows, plan_values


def staged_start(m: pyo.ConcreteModel, data: PlanSpace) -> list[tuple[object, float]] | None:
    """The MIP start of the module docstring as (variable, value) pairs; None when it does not apply (no pair layer, a
    freed slack, no active objective) or no candidate meets the limits."""
    if not hasattr(m, "pair") or any(not getattr(m, f"{n}_slack").fixed for n in LIMITS):
        return None
    objective = next((k for k in OBJECTIVES if getattr(m, f"objective_{k}").active), None)
    if objective is None:
        return None
    inst = data.evaluator.inst
    r0s, os_ = m.pair_index
    free = np.array([v.ub > 0.5 for v in m.pair.values()], dtype=bool)
    d0, d1 = data.slots[0], data.slots[1]
    n1 = len(d1.recipes)
    stops = os_ == n1
    if len(data.slots) > 2:                 # only pairs that may end the plan: no third stage is tried
        free &= stops
    o1 = interval_floors(d1) if n1 and len(d1.hardware) else None
    if o1 is None:
        free &= stops
    if not free.any() or not len(d0.hardware):
        return None
    o0 = interval_floors(d0)
    best = None
    for variant in ("cheap", "fast"):
        usd = o0[variant + "_usd"][r0s]                                           # [pair, i]
        wall = o0[variant + "_wall"][r0s]
        if o1 is not None:
            o = np.where(stops, 0, os_)
            usd = usd + np.where(stops[:, None], 0.0, o1[variant + "_usd"][o])
            wall = wall + np.where(stops[:, None], 0.0, o1[variant + "_wall"][o])
        forgetting = np.broadcast_to((data.forget0[r0s] + data.pair_forget[r0s, os_])[:, None], usd.shape)
        metrics = {"cost_usd": inst.operations.fixed_usd + usd + release_count(inst) * inst.forgetting_repair_usd_per_point * forgetting,
                   "wall_hours": wall, "quality": np.broadcast_to(data.pair_end[r0s, os_][:, None], usd.shape),
                   "forgetting_points": forgetting}
        ok = meets_model_rows(m, metrics, free[:, None] & np.isfinite(usd))
        if ok is None:
            return None
        if not ok.any():
            continue
        value = {"cost": metrics["cost_usd"], "time": metrics["wall_hours"], "quality": -metrics["quality"],
                 "forgetting": metrics["forgetting_points"]}[objective]
        n, i = np.nonzero(ok)
        k = np.lexsort((metrics["cost_usd"][n, i], value[n, i]))[0]
        key = (value[n[k], i[k]], metrics["cost_usd"][n[k], i[k]])
        if best is None or key < best[0]:
            best = (key, variant, int(n[k]), int(i[k]))
    if best is None:
        return None
    _, variant, n, i = best
    return _values(m, data, variant, n, i, o0, o1)


def _values(m, data: PlanSpace, variant: str, n: int, i: int, o0, o1) -> list[tuple[object, float]]:
    r0s, os_ = m.pair_index
    r0, o = int(r0s[n]), int(os_[n])
    d1 = data.slots[1]
    methods = [data.slots[0].recipes[r0].method] + ([] if o == len(d1.recipes) else [d1.recipes[o].method])
    q = data.sequences.index(tuple(methods))
    out: list[tuple[object, float]] = [(m.sequence_chosen[q], 1.0), (m.interval_chosen[i], 1.0), (m.pair[n], 1.0)]
    chosen = {0: (r0, int(o0[variant][r0, i]))}
    if o != len(d1.recipes):
        chosen[1] = (o, int(o1[variant][o, i]))
    for s in m.S:
        b = m.stage[s]
        if not hasattr(b, "interval_chosen"):
            continue
        if s in chosen:
            r, h = chosen[s]
            out += plan_values(b, data.slots[s], r, h, i)
        else:
            out.append((b.interval_chosen[i], 1.0))
            if hasattr(b, "passes_on"):
                out.append((b.passes_on, float(data.pair_end[r0, o])))
        if hasattr(b, "score_before"):  # a third slot: the score the first two stages end at
            out.append((b.score_before, float(data.pair_end[r0, o])))
    return out
