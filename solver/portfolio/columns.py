r"""The Lagrangian dual of the portfolio by column generation, and its integer master.

The restricted master LP over the job schedules found so far (columns: a job's plan and held
(bucket, tier) set, at its share without multipliers),

.. math::
   \min \sum_c s_c x_c + \sum_g p^{res}_g C_g R_g \quad\text{s.t.}\quad
   \sum_{c \in j} x_c = 1 \ \text{(convexity)}, \quad
   \sum_{c \ni (b,g,k)} n_c x_c \le a_{bgk}\ (R_g) \ \text{(capacity)}, \quad
   x \ge 0,\ R_g \in [\underline R_g, \bar R_g],

gives multipliers (the capacity rows' duals :math:`\lambda_{bgk} = -\pi_{bgk} \ge 0`); each
job's ``job_minimum`` at them prices a new column, and :math:`L(\lambda)` of
``solver/portfolio/lagrange.py`` at every such :math:`\lambda` is a valid bound (with the
reserved term :math:`\min_{R \in [\underline R, \bar R]} R (p^{res} C - \sum_b \lambda_b)`, for
duals whose sum exceeds the commitment where :math:`\underline R > 0`). When no column prices
out, the master's value is the dual optimum. An expensive artificial column per job keeps the
master feasible.

``integer_master`` solves the same master with binary job columns (price-and-branch's primal),
and ``add_columns`` adds the greedy's schedules to it as columns.
"""

from __future__ import annotations

import copy
import math
import time

import numpy as np

from planopt.job.budget import MIN_SOLVE_SECONDS
from planopt.portfolio.lagrange import JobPlans, LagrangeResult, bound_at
from planopt.portfolio.pricing import cap_mask, pricer_of

ARTIFICIAL_USD_FACTOR = 1e3   # an artificial column costs this times more than every plan and reservation together
MASTER_GAP = 1e-4             # relative gap of the integer master (HiGHS's default)


def _true_cost(jp: JobPlans, lam: np.ndarray, gpu_index: dict, v: float, ch: tuple) -> float:
    """The share of a minimiser at no multipliers: ``v`` less its holds' multipliers."""
    g = gpu_index[jp.gpu[ch[1]]]
    return v - sum(lam[b, g, k] for b, k in ch[2]) * jp.count[ch[1]]


class RestrictedMaster:
    """The restricted master LP of the module docstring in HiGHS: J convexity rows, then one
    capacity row per (b, g, k); G reservation columns, J artificial columns, then the job
    columns (``columns``: (job, recipe, h, i, [(b, tier)]) each). ``reserved_cap`` and
    ``job_rules`` (job -> ``JobRule``) restrict it to a node of the branching: its pricing
    (``ruled_minimum``) and the columns it takes (``seed``) stay within them, and no job holds
    more reserved GPUs of a type than the node's cap (``cap_masks``)."""

    def __init__(self, pm, plans: list, reserved_floor: dict[str, int], threads: int = 1,
                 reserved_cap: dict[str, int] | None = None, job_rules: dict | None = None):
        import highspy
        from pyomo.common.tee import capture_output
        d, form = pm.data, pm.form
        self.data, self.plans = d, plans
        self.B, self.G, self.J = len(d.buckets), len(d.gpus), len(plans)
        self.gpu_index = {g: n for n, g in enumerate(d.gpus)}
        self.res_cap = np.array([d.reserved_price[g] * d.committed_hours[g] for g in d.gpus])
        self.low = np.array([float(reserved_floor.get(g, 0)) for g in d.gpus])
        high = np.array([float(min(form.reserved_max[g], (reserved_cap or {}).get(g, form.reserved_max[g]))) for g in d.gpus])
        self.high = np.maximum(high, self.low)
        self.avail = np.zeros((self.B, self.G, 3))
        for g, n in self.gpu_index.items():
            self.avail[:, n, 1] = d.od_avail[g]
            self.avail[:, n, 2] = d.spot_avail[g]
        with capture_output(capture_fd=True):
            self.h = highspy.Highs()
        self.h.setOptionValue("output_flag", False)
        self.h.setOptionValue("threads", threads)   # HiGHS has one global scheduler: every instance asks for the same threads
        self.inf = highspy.kHighsInf
        self.add_rows()
        self.add_reservations_and_artificials()
        self.rules = job_rules or {}
        self.cap_masks = self.reserved_cap_masks()
        self.pricer = pricer_of(pm, plans, self.gpu_index)
        self.seen: set = set()
        self.columns: list = []

    def add_rows(self) -> None:
        """The convexity rows (= 1) and the capacity rows (<= 0 reserved, to take -R_g; <= a_bgk on demand and spot)."""
        h, J = self.h, self.J
        empty_i, empty_v = np.array([], dtype=np.int32), np.array([])
        h.addRows(J, np.ones(J), np.ones(J), 0, empty_i, empty_i, empty_v)
        self.cap_row = {}
        lows, ups = [], []
        for b in range(self.B):
            for g in range(self.G):
                for k in range(3):
                    self.cap_row[b, g, k] = J + len(self.cap_row)
                    lows.append(-self.inf)
                    ups.append(0.0 if k == 0 else self.avail[b, g, k])
        h.addRows(len(lows), np.array(lows), np.array(ups), 0, empty_i, empty_i, empty_v)

    def add_reservations_and_artificials(self) -> None:
        """R_g enters each of its reserved rows with -1; a job not covered (its artificial column)
        costs far more than any schedule."""
        h, plans = self.h, self.plans
        for g in range(self.G):
            idx = np.array([self.cap_row[b, g, 0] for b in range(self.B)], dtype=np.int32)
            h.addCol(self.res_cap[g], self.low[g], max(self.low[g], self.high[g]), len(idx), idx, -np.ones(len(idx)))
        penalty = ARTIFICIAL_USD_FACTOR * max(1.0, sum(float(np.nanmax(np.where(np.isfinite(jp.fixed_usd), jp.fixed_usd, 0.0)))
                                                       if jp.fixed_usd.size else 0.0 for jp in plans)
                                              + float((self.res_cap * np.maximum(self.high, 0)).sum()))
        for j in range(self.J):
            h.addCol(penalty, 0.0, self.inf, 1, np.array([j], dtype=np.int32), np.array([1.0]))

    def reserved_cap_masks(self) -> dict:
        """Per job, the tiers it may hold: no reserved tier for a pair whose count is over the cap
        (a job cannot hold more reserved GPUs of a type than the node lets it reserve)."""
        masks = {}
        for j, jp in enumerate(self.plans):
            mask = cap_mask(jp, self.high, self.gpu_index)
            if mask is not None:
                masks[j] = mask
        return masks

    def add(self, j: int, ch: tuple, cost: float) -> bool:
        """Job j's column ``ch`` (recipe, pair index, held) at ``cost``; False when it is already there."""
        jp = self.plans[j]
        g, n = self.gpu_index[jp.gpu[ch[1]]], jp.count[ch[1]]
        key = (j, ch[0], ch[1], tuple(sorted(ch[2])))
        if key in self.seen:
            return False
        self.seen.add(key)
        rows = [j] + [self.cap_row[b, g, k] for b, k in ch[2]]
        vals = [1.0] + [float(n)] * len(ch[2])
        self.h.addCol(cost, 0.0, self.inf, len(rows), np.array(rows, dtype=np.int32), np.array(vals))
        self.columns.append((j, ch[0], *jp.pairs[ch[1]], list(ch[2])))
        return True

    def seed(self, start: LagrangeResult) -> None:
        """The columns of ``start``'s master, at their costs, that lie within this node."""
        h0, columns0, first0 = start.master
        cost0 = np.array(h0.getLp().col_cost_)
        for c, (j, r, hh, i, held) in enumerate(columns0):
            jp = self.plans[j]
            p = jp.pairs.index((hh, i))
            if (j in self.rules and not self.rules[j].admits(p, held)) or (j in self.cap_masks and any(k == 0 for _, k in held)
                                                                            and not self.cap_masks[j][p, 0, 0]):
                continue   # outside this node
            self.add(j, (r, p, held), float(cost0[first0 + c]))

    def lagrangian(self, lam: np.ndarray) -> tuple[float, list, list]:
        """L(lambda) over this node's schedules, and each job's least share and its minimiser
        (priced by ``pricer``: here or on the cluster, the same numbers either way)."""
        mins, chs = self.pricer.price(lam, self.rules, self.high)
        coef = self.res_cap - lam[:, :, 0].sum(axis=0)
        L = (sum(mins) - float((lam[:, :, 1:] * self.avail[:, :, 1:]).sum())
             + float(np.where(coef >= 0, self.low * coef, self.high * coef).sum()))
        return L, mins, chs

    def solve(self) -> tuple[float, np.ndarray, np.ndarray, np.ndarray] | None:
        """The master LP: (its value, the reservations, the job columns' values, the multipliers
        from its capacity rows' duals), or None when HiGHS does not solve it to optimality."""
        import highspy
        h, G, J = self.h, self.G, self.J
        h.run()
        if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            return None
        sol = h.getSolution()
        duals = np.array(sol.row_dual)
        lam = np.zeros((self.B, G, 3))
        for (b, g, k), row in self.cap_row.items():
            lam[b, g, k] = max(0.0, -duals[row])
        return (h.getInfo().objective_function_value, np.array(sol.col_value[:G]),
                np.array(sol.col_value[G + J:G + J + len(self.columns)]), lam)


def column_generation(pm, plans: list, reserved_floor: dict[str, int], seconds: float,
                      start: LagrangeResult | None = None, threads: int = 1,
                      reserved_cap: dict[str, int] | None = None, job_rules: dict | None = None) -> LagrangeResult:
    """The Lagrangian dual by column generation (module docstring) until ``seconds`` pass or no
    column prices out. Columns cover at first those of ``start`` (a subgradient ascent's or a
    parent node's result) and its multipliers are the first priced. ``reserved_cap`` and
    ``job_rules`` restrict the portfolio to a node of the branching (``RestrictedMaster``), so
    the bound is a bound of that node's schedules."""
    t_start = time.perf_counter()
    master = RestrictedMaster(pm, plans, reserved_floor, threads, reserved_cap, job_rules)
    if start is not None and start.master is not None:   # the columns found so far, at their costs
        master.seed(start)
    best = copy.copy(start)   # never changes the caller's result
    lam = start.lam.copy() if start is not None and start.lam is not None else None
    if lam is None:
        lam = np.zeros((master.B, master.G, 3))
        lam[:, :, 0] = master.res_cap[None, :] / master.B
    it = 0
    history = []
    lp_reserved = lp_columns = None
    while True:
        it += 1
        L, mins, chs = master.lagrangian(lam)
        history.append(L)
        if not math.isfinite(L):
            break
        if best is None or L > best.bound_usd:
            best = bound_at(pm.data, plans, lam, L, mins, chs)
        added = sum(master.add(j, ch, _true_cost(plans[j], lam, master.gpu_index, v, ch))
                    for j, (v, ch) in enumerate(zip(mins, chs)) if ch is not None)
        if time.perf_counter() - t_start >= seconds:
            break
        solved = master.solve()
        if solved is None:
            break
        value, lp_reserved, lp_columns, new = solved
        if (not added and it > 1) or value - L <= 1e-9 * max(1.0, abs(value)):
            break   # no column prices out: the master's value is the dual optimum (L at its duals)
        lam = new
    if best is not None:
        best.master = (master.h, master.columns, master.G + master.J)
        best.lp_reserved = lp_reserved
        best.lp_columns = lp_columns
    if best is not None and start is not None:
        best.iterations = it + start.iterations
        best.seconds = time.perf_counter() - t_start + start.seconds
        best.history = start.history + history
        best.theta = start.theta
    return best


def integer_master(pm, lag: LagrangeResult, seconds: float) -> tuple[list, dict, list] | None:
    """Price-and-branch's primal: the master of ``column_generation`` with its job columns binary
    (no artificial column), solved by HiGHS within ``seconds``: one generated schedule per job
    that fits the capacities together. Returns ([(recipe, h, i, [(b, tier)])] per job, reserved
    per GPU type, each job's column cost), or None. The columns come from the relaxed pricing, so their plans, not their
    buckets, are what the caller should keep (``complete_plans`` schedules them exactly)."""
    import highspy
    if lag.master is None:
        return None
    h, columns, first = lag.master
    d = pm.data
    G, J = len(d.gpus), len(d.instances)
    n = h.getNumCol()
    h.changeColsIntegrality(n - first, np.arange(first, n, dtype=np.int32),
                            np.array([highspy.HighsVarType.kInteger] * (n - first)))
    h.changeColsIntegrality(G, np.arange(G, dtype=np.int32), np.array([highspy.HighsVarType.kInteger] * G))
    h.changeColsBounds(J, np.arange(G, G + J, dtype=np.int32), np.zeros(J), np.zeros(J))
    h.setOptionValue("time_limit", max(MIN_SOLVE_SECONDS, seconds))
    h.setOptionValue("mip_rel_gap", MASTER_GAP)
    h.run()
    if h.getInfo().primal_solution_status != 2:   # kSolutionStatusFeasible
        return None
    x = np.array(h.getSolution().col_value)
    cost = np.array(h.getLp().col_cost_)
    out: list = [None] * J
    values: list = [0.0] * J
    for c, (j, r, hh, i, held) in enumerate(columns):
        if x[first + c] > 0.5:
            out[j] = (r, hh, i, held)
            values[j] = float(cost[first + c])
    if any(o is None for o in out):
        return None
    return out, {g: int(round(x[n_])) for n_, g in enumerate(d.gpus)}, values


def add_columns(pm, lag: LagrangeResult, schedules: list) -> None:
    """Add schedules (each: per job (recipe, h, i, [(b, tier)]) and per job its estimated cost)
    to the column generation master as columns, for ``integer_master`` to recombine."""
    import highspy
    if lag.master is None:
        return
    h, columns, first = lag.master
    d = pm.data
    gpu_index = {g: n for n, g in enumerate(d.gpus)}
    J, G = len(d.instances), len(d.gpus)
    known = {(j, r, hh, i, tuple(sorted(held))) for (j, r, hh, i, held) in columns}
    for out, values in schedules:
        for j, (r, hh, i, held) in enumerate(out):
            key = (j, r, hh, i, tuple(sorted(held)))
            if key in known:
                continue
            known.add(key)
            jp = pm.job_plans[j]
            p = jp.pairs.index((hh, i))
            g, n = gpu_index[jp.gpu[p]], jp.count[p]
            rows = [j] + [J + (b * G + g) * 3 + k for b, k in held]
            h.addCol(float(values[j]), 0.0, highspy.kHighsInf, len(rows), np.array(rows, dtype=np.int32),
                     np.array([1.0] + [float(n)] * len(held)))
            columns.append((j, r, hh, i, list(held)))
