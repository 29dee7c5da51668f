"""A brute-force oracle for tiny portfolios, written apart from the MIP.

Every discrete choice is enumerated: each job's plan (recipe, hardware,
checkpoint interval, scored by the single-job evaluator) and the reserved count
of every GPU type. What is left for a fixed choice is a small linear program in
*fractions of each job's work* done in each (bucket, tier) -- a different
parameterisation from the MIP's GPU-hours -- handed straight to HiGHS as an LP
(highspy, no Pyomo).
"""

from __future__ import annotations

import itertools

import highspy
import numpy as np

from planopt.models.costs import Evaluator
from planopt.models.formulation.portfolio import hourly_noncompute_usd, spot_overhead_share


def job_plans(ev: Evaluator):
    """(plan tuple, metrics) of every plan that meets the job's own limits."""
    recipes, hardware, intervals = ev.space()
    out = []
    for r, h, t in itertools.product(recipes, hardware, intervals):
        m = ev.metrics(r, h, t)
        if m.feasible:
            out.append(((r, h, t), m))
    return out


def _schedule_lp(pdata, chosen, reserved, evs):
    """Least cost of the schedule for fixed plans and reservations (None if infeasible)."""
    H = pdata.bucket_hours
    cols, cost, job_rows = [], [], []
    for j, ((r, h, t), m) in enumerate(chosen):
        ev, job = evs[j], pdata.portfolio.jobs[j]
        g, n = h.gpu, h.count
        T = sum(ev.compute_hours_by_component(r, h).values())
        o = ev.hardware(h).overhead_share(t)
        o_s = spot_overhead_share(ev, h, t, pdata.preempt[g])
        lead = ev.recipe(r).lead_hours
        for b in range(job.release_bucket, job.deadline_bucket + 1):
            if lead > (b - job.release_bucket) * H * (1 + 1e-12):
                continue
            tiers = []
            if reserved.get(g, 0) >= n:
                tiers.append(("reserved", n * (1 + o) * T, 0.0))
            if pdata.od_avail[g][b] >= n:
                tiers.append(("on_demand", n * (1 + o) * T, pdata.od_price[g][b]))
            if pdata.spot_avail[g][b] >= n:
                gh = n * (1 + o_s) * T
                tiers.append(("spot", gh, pdata.spot_price[g][b]
                              + hourly_noncompute_usd(ev.inst) * (o_s - o) * T / gh if gh else 0.0))
            for k, gh, price in tiers:
                cols.append((j, b, g, k, gh, n))
                cost.append(gh * price)
    if not cols:
        return None
    nj = len(chosen)
    A_eq = np.zeros((nj, len(cols)))
    for c, (j, *_rest) in enumerate(cols):
        A_eq[j, c] = 1.0
    rows, rhs = [], []
    # a job's GPU-hours in a bucket <= its count x bucket hours
    for j, b in sorted({(c[0], c[1]) for c in cols}):
        rows.append([c[4] if (c[0], c[1]) == (j, b) else 0.0 for c in cols])
        rhs.append(chosen[j][0][1].count * H)
    # tier capacity per (bucket, type)
    for b, g, k in sorted({(c[1], c[2], c[3]) for c in cols}):
        rows.append([c[4] if (c[1], c[2], c[3]) == (b, g, k) else 0.0 for c in cols])
        cap = {"reserved": reserved.get(g, 0), "on_demand": pdata.od_avail[g][b], "spot": pdata.spot_avail[g][b]}[k]
        rhs.append(cap * H)
    if any(not A_eq[j].any() for j in range(nj)):
        return None
    return _lp_min(np.array(cost), np.vstack([A_eq, np.array(rows)]),
                   np.concatenate([np.ones(nj), np.full(len(rows), -np.inf)]), np.concatenate([np.ones(nj), rhs]))


def _lp_min(cost, A, lower, upper):
    """min cost·x s.t. lower <= A x <= upper, x >= 0, by HiGHS's LP solver (None if infeasible)."""
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)  # HiGHS has one global scheduler: every instance must ask for the same threads
    inf = highspy.kHighsInf
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = A.shape[1], A.shape[0]
    lp.col_cost_ = cost
    lp.col_lower_, lp.col_upper_ = np.zeros(A.shape[1]), np.full(A.shape[1], inf)
    lp.row_lower_ = np.where(np.isfinite(lower), lower, -inf)
    lp.row_upper_ = upper
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    starts, index, value = [0], [], []
    for row in A:
        nz = np.nonzero(row)[0]
        index.extend(nz.tolist())
        value.extend(row[nz].tolist())
        starts.append(len(index))
    lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = starts, index, value
    lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = A.shape[1], A.shape[0]
    h.passModel(lp)
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    return h.getInfo().objective_function_value


def best_portfolio_cost(pdata) -> float | None:
    """The least total cost over every plan of every job and every reservation (None: infeasible)."""
    evs = [Evaluator(inst) for inst in pdata.instances]
    plans = [job_plans(ev) for ev in evs]
    H, B = pdata.bucket_hours, len(pdata.buckets)
    best = None
    for chosen in itertools.product(*plans):
        noncompute = sum(m.cost_usd - m.cost_breakdown_usd["compute"] for _, m in chosen)
        used = sorted({p[1].gpu for p, _ in chosen})
        ranges = []
        for g in used:
            top = sum(p[1].count for p, _ in chosen if p[1].gpu == g)
            cap = pdata.gpu[g].max_reserved_gpus
            ranges.append(range(0, (top if cap is None else min(top, cap)) + 1))
        for counts in itertools.product(*ranges):
            reserved = dict(zip(used, counts))
            commit = sum(pdata.reserved_price[g] * H * B * n for g, n in reserved.items())
            if best is not None and noncompute + commit >= best:
                continue
            lp = _schedule_lp(pdata, chosen, reserved, evs)
            if lp is None:
                continue
            total = noncompute + commit + lp
            budget = pdata.portfolio.budget_usd
            if budget is not None and total > budget * (1 + 1e-9):
                continue
            if best is None or total < best:
                best = total
    return best
