r"""A Lagrangian bound for the portfolio MIP, and per-job floors that carry it into the MIP.

The portfolio couples its jobs only through the GPUs they hold at once
(``capacity`` of ``formulation/portfolio.py``): in bucket :math:`b`, of GPU type
:math:`g`, on tier :math:`k`,

.. math::
   \sum_j \mathrm{held}_{jbgk} \le \mathrm{cap}_{bgk}, \qquad
   \mathrm{cap} = a_{bgk} \text{ (on demand, spot)}, \quad R_g \text{ (reserved)}.

Multipliers :math:`\lambda_{bgk} \ge 0` on these rows, with
:math:`\sum_b \lambda_{bg,\mathrm{res}} \le p^{res}_g C_g` (:math:`p^{res}` the
reserved price, :math:`C_g` the hours a reserved GPU is paid for), give for every
schedule

.. math::
   \mathrm{cost} \ge L(\lambda) = \sum_j \min_j(\lambda) - \sum_{b,g,k \ne \mathrm{res}} \lambda_{bgk}\, a_{bgk}
   + \sum_g \min_{\underline R_g \le R \le \bar R_g} R\,\big(p^{res}_g C_g - \textstyle\sum_b \lambda_{bg,\mathrm{res}}\big)

where :math:`\min_j(\lambda)` is the least of job :math:`j`'s **share**

.. math::
   s_j(\lambda) = \mathrm{noncompute}_j + \sum_{b,g,k \ne \mathrm{res}} p_{bgk}\, G_{jbgk}
                  + \sum_{b,g,k} \lambda_{bgk}\, \mathrm{held}_{jbgk}

over the job's own choices (plan, buckets, tiers, spot share) alone. Proof: the
capacity rows give :math:`\sum_j \lambda\cdot\mathrm{held}_j \le \sum \lambda a +
\sum_g R_g \sum_b \lambda_{bg,\mathrm{res}} \le \sum \lambda a + \sum_g p^{res}_g C_g R_g`,
and :math:`\mathrm{cost} = \sum_j (s_j - \lambda\cdot\mathrm{held}_j) + \sum_g p^{res}_g C_g R_g`.

(:math:`\underline R_g`: ``reservation_floors``, reserved GPUs every schedule has;
:math:`\bar R_g` the model's bound; with the sum of the reserved multipliers at most the
commitment the last term is :math:`\underline R_g` times it.)

So the rows :math:`s_j(\lambda) \ge \min_j(\lambda)` (``job_share_floor``,
``add_share_floors``) cut off no schedule, and with them the MIP's LP relaxation
is at least :math:`L(\lambda)` (the same sum, over the LP's own capacity rows).
The per-job cost floors of before are the special case
:math:`\lambda_{bg,\mathrm{res}} = p^{res}_g C_g / B` per held GPU and bucket, 0 elsewhere
(they charged reserved GPU-hours at the reservation rate).

**The job's least share, by enumeration, a relaxation.** For a plan
(recipe :math:`r`, hardware :math:`h` = GPU type :math:`g` and count :math:`n`,
checkpoint interval :math:`\tau`) with compute hours :math:`T`, overheads
:math:`o` (off spot) and :math:`o^s` (on spot), a compute hour in bucket
:math:`b` on tier :math:`k` costs :math:`c_{bk}` = 0 (reserved: paid by the
commitment), :math:`n(1+o)p_{b,od}` (on demand),
:math:`n(1+o^s)p_{b,spot} + \eta(o^s - o)` (spot; :math:`\eta` the job's hot
storage and operations per hour). A bucket holds at most :math:`H` wall hours,
so at most :math:`\bar T = H / (1 + \min(o, o^s))` compute hours on any mix of
tiers (a relaxation where :math:`o^s > o`). Holding a tier in a bucket costs
:math:`\lambda_{bgk} n`. With the same capacity :math:`\bar T` in every
bucket, an optimal schedule fills :math:`K = \lfloor T/\bar T \rfloor` buckets,
each on one tier, and runs the rest :math:`\rho = T - K\bar T` in one more
bucket :math:`p` (two partial buckets: moving hours between them is linear, so
one empties or fills; a bucket split between two tiers pays two holds for one
bucket's hours). Hence

.. math::
   \min_{\text{sched}} = \min_p \Big[\, g_p(\rho) + \text{sum of the } K
   \text{ least } f_b,\ b \ne p \Big], \quad
   f_b = \min_k (\lambda_{bgk} n + c_{bk} \bar T), \quad g_b(\rho) = \min_k(\lambda_{bgk} n + c_{bk}\rho)

over the buckets of the job's window after the recipe's lead time with a tier
the count fits (on demand and spot: :math:`n \le a_{bgk}`; reserved: from the
offer's lead time on, :math:`n \le` the most that can be reserved). The share
adds the plan's non-compute money :math:`K_0 + c_r + (\pi_h - n p_h)(1+o)T`
(``accounting.py``). Every set the MIP allows is inside this one (recipes by
the quality and forgetting limits, loosened by twice the limit slack; memory
fit; kept intervals; lead time loosened by 1e-9), so each
:math:`\min_j(\lambda)` is a valid lower bound for any :math:`\lambda`, the
budget row left out.

**The multipliers** come first from a projected subgradient ascent (``lagrangian_bound``),
then from column generation (``solver/portfolio/columns.py``: the duals of a restricted master
LP over the schedules priced so far, to the dual optimum when no column prices out). The first
is a projected subgradient ascent (Polyak steps
towards a target above the best bound): the subgradient is the GPUs the jobs'
minimisers hold minus the capacity (:math:`R_g = \underline R_g`, as the coefficient of
:math:`R_g` is kept :math:`\ge 0` by projecting the reserved multipliers onto
:math:`\{\lambda \ge 0, \sum_b \lambda_b \le p^{res}_g C_g\}`). Any
:math:`\lambda` gives a valid bound; the ascent only makes it larger.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from planopt.models.cost.evaluator import limit_slack

TIERS = ("reserved", "on_demand", "spot")
BIG_USD = 1e15           # marks an impossible bucket, tier or plan; any sum above BIG_USD / 2 is impossible
LEAD_LOOSENING = 1e-9    # relative: the lead-time test is looser than the MIP's (1e-12), so the set is a superset


@dataclass
class JobPlans:
    """One job's plans as arrays (rows: recipe r; columns: (h, tau) pair p)."""
    job: int
    recipes: np.ndarray          # [R] recipe indices within the limits
    pairs: list                  # [P] (h, i) kept pairs
    compute_hours: np.ndarray    # [R, P] T (NaN: does not fit)
    fixed_usd: np.ndarray        # [R, P] non-compute money of the plan
    count: np.ndarray            # [P] n
    gpu: list                    # [P] GPU type
    cap_hours: np.ndarray        # [P] compute hours a bucket holds at most (T-bar)
    allowed: np.ndarray          # [R, B] bucket open to the recipe (window and lead time)
    tier_ok: np.ndarray          # [P, B, 3] the tier exists in the bucket and the count fits it
    hour_usd: np.ndarray         # [P, B, 3] c_bk: USD per compute hour
    spot_ok: np.ndarray          # [P] the pair may run on spot
    work_gpu_hours: np.ndarray   # [R, P] n (1 + o) T: the plan's GPU-hours off spot
    cap_hours_safe: np.ndarray   # [P] compute hours a bucket surely holds on any tier (the larger overhead)
    allowed_strict: np.ndarray   # [R, B] as allowed, with the MIP's own lead-time test


@dataclass
class LagrangeResult:
    """The Lagrangian dual's best bound, its multipliers, and each job's minimising plan and the capacity it holds."""

    bound_usd: float                       # L(lambda) at the best multipliers
    multipliers: dict                      # (b, g, k) -> USD per GPU held in the bucket
    job_min_usd: list                      # [j] min_j(lambda) at the best multipliers
    choice: list                           # [j] (recipe, hardware, interval) minimising job j's share
    held: list                             # [j] set of (b, g, k) the minimiser holds
    iterations: int = 0
    seconds: float = 0.0
    history: list = field(default_factory=list)
    lam: np.ndarray | None = None          # [B, G, 3] the best multipliers
    theta: float = 1.0                     # the step scale where the ascent stopped
    master: tuple | None = None            # column generation's (HiGHS master, columns, index of the first column)
    branched: tuple | None = None          # branching: the first branching (GPU type, q, R*, its children's bounds)
    lp_reserved: np.ndarray | None = None  # [G] the reservations of column generation's last master LP
    branches: tuple = ()                   # branching: the leaves' results (their masters), best bound first
    lp_columns: np.ndarray | None = None   # the job columns' values in column generation's last master LP
    nodes: int = 0                         # branching.branch_and_price: column generations run in its nodes
    depth: int = 0                         # branching.branch_and_price: the deepest leaf
    job_branchings: int = 0                # branching.branch_and_price: branchings on a job's schedules


def job_plans(pm, j: int) -> JobPlans:
    """The arrays of job ``j`` of a ``PortfolioModel`` (its formulation data and model sets)."""
    d, form = pm.data, pm.form
    fd, ev, blk = form.jobs[j], form.evaluators[j], pm.model.job[j]
    H, B = d.bucket_hours, len(d.buckets)
    cons = ev.inst.constraints
    ok = np.ones(len(fd.recipes), dtype=bool)
    if cons.min_quality is not None:
        ok &= fd.quality >= cons.min_quality - 2 * limit_slack(cons.min_quality)
    if cons.max_forgetting_points is not None:
        ok &= fd.forgetting <= cons.max_forgetting_points + 2 * limit_slack(cons.max_forgetting_points)
    recipes = np.flatnonzero(ok)
    pairs = list(blk.HI)
    hs = np.array([h for h, _ in pairs], dtype=int)
    is_ = np.array([i for _, i in pairs], dtype=int)
    o = fd.overhead[hs, is_]
    spot_overhead, rate = form.pair_rates(j)
    o_s = np.array([spot_overhead.get(p, np.nan) for p in pairs])
    spot_ok = np.array([p in spot_overhead for p in pairs])
    eta = np.array([rate[p] for p in pairs])
    count = fd.count[hs].astype(float)
    gpu = [fd.hardware[h].gpu for h in hs]
    T = fd.compute_hours[np.ix_(recipes, hs)]
    fixed = (fd.constant_usd + fd.recipe_usd[recipes][:, None]
             + ((fd.hourly_usd - fd.count * fd.gpu_price)[hs] * (1 + o))[None, :] * T)
    o_min = np.where(spot_ok, np.minimum(o, np.where(spot_ok, o_s, o)), o)
    cap = H / (1 + o_min)
    job = d.portfolio.jobs[j]
    rel = job.release_bucket
    lead = fd.lead_hours[recipes]
    b_idx = np.arange(B)
    allowed = ((b_idx[None, :] >= rel) & (b_idx[None, :] <= job.deadline_bucket)
               & (lead[:, None] <= (b_idx[None, :] - rel) * H * (1 + LEAD_LOOSENING)))
    tier_ok = np.zeros((len(pairs), B, 3), dtype=bool)
    hour = np.zeros((len(pairs), B, 3))
    for p, (g, n) in enumerate(zip(gpu, count)):
        for b in d.window(j):
            tiers = form.tiers.get((j, 0, b, g), [])
            if "reserved" in tiers and n <= form.reserved_max[g]:
                tier_ok[p, b, 0] = True
            if "on_demand" in tiers and n <= d.od_avail[g][b]:
                tier_ok[p, b, 1] = True
                hour[p, b, 1] = n * (1 + o[p]) * d.od_price[g][b]
            if "spot" in tiers and spot_ok[p] and n <= d.spot_avail[g][b]:
                tier_ok[p, b, 2] = True
                hour[p, b, 2] = n * (1 + o_s[p]) * d.spot_price[g][b] + eta[p] * (o_s[p] - o[p])
    o_max = np.where(spot_ok, np.maximum(o, np.where(spot_ok, o_s, o)), o)
    strict = ((b_idx[None, :] >= rel) & (b_idx[None, :] <= job.deadline_bucket)
              & (lead[:, None] <= (b_idx[None, :] - rel) * H * (1 + 1e-12) * (1 - 1e-9)))
    return JobPlans(j, recipes, pairs, T, fixed, count, gpu, cap, allowed, tier_ok, hour, spot_ok,
                    count[None, :] * (1 + o)[None, :] * T, H / (1 + o_max) * (1 - 1e-9), strict)


def job_minimum(jp: JobPlans, lam: np.ndarray, gpu_index: dict, tier_mask: np.ndarray | None = None,
                conservative: bool = False) -> tuple[float, tuple | None]:
    """min_j(lambda) of the module docstring, and its minimiser: (recipe index, pair index,
    [(bucket, tier index)] held). ``lam`` is [B, G, 3] USD per GPU held in the bucket.
    ``tier_mask`` [P, B, 3] closes tiers further (the primal heuristic: capacity left);
    ``conservative`` counts a bucket's compute hours at the larger overhead (a schedule that
    surely holds the plan's hours, not a relaxation: never for bounds)."""
    R, P = jp.compute_hours.shape
    if R == 0 or P == 0:
        return math.inf, None
    gi = np.array([gpu_index[g] for g in jp.gpu], dtype=int)
    ok = jp.tier_ok if tier_mask is None else jp.tier_ok & tier_mask
    cap_hours = jp.cap_hours_safe if conservative else jp.cap_hours
    hold = lam[:, gi, :].transpose(1, 0, 2) * jp.count[:, None, None]          # [P, B, 3]
    hold = np.where(ok, hold, BIG_USD)
    full = np.min(hold + jp.hour_usd * cap_hours[:, None, None], axis=2)        # [P, B]
    T = np.nan_to_num(jp.compute_hours, nan=0.0)
    fits = np.isfinite(jp.compute_hours) & (jp.compute_hours > 0)
    K = np.floor(T / cap_hours[None, :] + 1e-12)
    rem = np.maximum(0.0, T - K * cap_hours[None, :])                          # [R, P]
    K = K.astype(int)
    allowed = jp.allowed_strict if conservative else jp.allowed
    F = np.where(allowed[:, None, :], full[None, :, :], BIG_USD)                # [R, P, B]
    S = np.sort(F, axis=2)
    B = F.shape[2]
    prefix = np.concatenate([np.zeros((R, P, 1)), np.cumsum(S, axis=2)], axis=2)  # [R, P, B+1]
    Kc = np.minimum(K, B)
    K1 = np.minimum(K + 1, B)
    PK = np.take_along_axis(prefix, Kc[:, :, None], axis=2)[:, :, 0]
    PK1 = np.take_along_axis(prefix, K1[:, :, None], axis=2)[:, :, 0]
    sK = np.take_along_axis(S, np.minimum(K, B - 1)[:, :, None], axis=2)[:, :, 0]
    excl = np.where(F <= sK[:, :, None], PK1[:, :, None] - F, PK[:, :, None])   # K least f_b, b != p
    part = np.min(hold[None] + jp.hour_usd[None] * rem[:, :, None, None], axis=3)  # [R, P, B]
    part = np.where(allowed[:, None, :], part, BIG_USD)
    with_partial = excl + part
    sched = np.where(rem > 0, np.min(with_partial, axis=2), PK)
    bad = (K >= B + 1) | ((rem > 0) & (K + 1 > B)) | ~fits
    sched = np.where(bad | (sched >= BIG_USD / 2), np.inf, sched)
    total = jp.fixed_usd + sched
    total = np.where(np.isfinite(total), total, np.inf)
    flat = int(np.argmin(total))
    best = float(total.flat[flat])
    if not math.isfinite(best):
        return math.inf, None
    r, p = divmod(flat, P)
    order = np.argsort(F[r, p], kind="stable")
    if rem[r, p] > 0:
        q = int(np.argmin(with_partial[r, p]))
        full_b = [int(b) for b in order if b != q][: K[r, p]]
        held = [(b, int(np.argmin(hold[p, b] + jp.hour_usd[p, b] * cap_hours[p]))) for b in full_b]
        held.append((q, int(np.argmin(hold[p, q] + jp.hour_usd[p, q] * rem[r, p]))))
    else:
        held = [(int(b), int(np.argmin(hold[p, b] + jp.hour_usd[p, b] * cap_hours[p]))) for b in order[: K[r, p]]]
    return best, (int(jp.recipes[r]), p, held)


@dataclass(frozen=True)
class JobRule:
    """A branching's restriction of one job's choices (``branching``): its plan's
    (hardware, interval) pair among ``pairs`` (None: any), no GPU held in the buckets of
    ``buckets_out``, some GPU held in each bucket of ``buckets_in``."""
    pairs: frozenset | None = None
    buckets_out: frozenset = frozenset()
    buckets_in: frozenset = frozenset()

    def admits(self, p: int, held) -> bool:
        """Whether plan ``p`` holding ``held`` (bucket, type) pairs obeys the rule's pairs and its buckets in and out."""
        buckets = {b for b, _ in held}
        return ((self.pairs is None or p in self.pairs) and not (buckets & self.buckets_out)
                and self.buckets_in <= buckets)


FORCE_USD = 1e9   # subtracted from a bucket that must be held: every schedule holding it gains it once (costs are far below)


def ruled_minimum(jp: JobPlans, lam: np.ndarray, gpu_index: dict, rule: JobRule | None,
                  tier_mask: np.ndarray | None = None) -> tuple[float, tuple | None]:
    """``job_minimum`` over the schedules ``rule`` admits: pairs and buckets out by ``tier_mask``;
    a bucket in by subtracting ``FORCE_USD`` from its holds (each schedule that holds it gains
    exactly ``FORCE_USD`` once, one tier per bucket), added back after; a minimum still above
    ``FORCE_USD / 2`` per bucket in means no admitted schedule holds them all (infinite).
    ``tier_mask`` [P, B, 3] closes tiers further (a node's reservation cap)."""
    if rule is None:
        return job_minimum(jp, lam, gpu_index, tier_mask=tier_mask)
    P, B = len(jp.pairs), lam.shape[0]
    mask = np.ones((P, B, 3), dtype=bool) if tier_mask is None else tier_mask.copy()
    if rule.pairs is not None:
        mask[[p for p in range(P) if p not in rule.pairs]] = False
    for b in rule.buckets_out:
        mask[:, b, :] = False
    if not rule.buckets_in:
        return job_minimum(jp, lam, gpu_index, tier_mask=mask)
    force = len(rule.buckets_in) * FORCE_USD
    best, choice = math.inf, None
    for c in sorted(set(jp.count.tolist())):   # per GPU count, so that a forced hold gains FORCE_USD exactly
        group = mask.copy()
        group[jp.count != c] = False
        if not group.any():
            continue
        shifted = lam.copy()
        for b in rule.buckets_in:
            shifted[b, :, :] -= FORCE_USD / c
        v, ch = job_minimum(jp, shifted, gpu_index, tier_mask=group)
        if ch is None or v + force >= FORCE_USD / 2:
            continue   # no admitted schedule of this count holds every bucket in
        v = v + force   # the schedule's share at lam itself: each forced bucket held once
        if v < best:
            best, choice = v, ch
    return best, choice


def project_capped_simplex(v: np.ndarray, cap: float) -> np.ndarray:
    """The nearest point to ``v`` in {x >= 0, sum x <= cap}."""
    x = np.maximum(v, 0.0)
    if x.sum() <= cap:
        return x
    u = np.sort(v)[::-1]
    css = np.cumsum(u)
    k = np.arange(1, len(u) + 1)
    rho = np.nonzero(u - (css - cap) / k > 0)[0][-1]
    theta = (css[rho] - cap) / (rho + 1.0)
    return np.maximum(v - theta, 0.0)


def bound_at(d, plans: list, lam: np.ndarray, bound_usd: float, mins: list, choices: list) -> LagrangeResult:
    """The result of ``L(lambda) = bound_usd`` at multipliers ``lam`` [B, G, 3] (kept by their
    positive entries, and as an array), with each job's least share ``mins`` and minimiser
    ``choices`` (``job_minimum``'s: recipe, pair index, held (bucket, tier index))."""
    gpu_index = {g: n for n, g in enumerate(d.gpus)}
    B = len(d.buckets)
    return LagrangeResult(bound_usd, {(b, g, TIERS[k]): float(lam[b, gpu_index[g], k]) for b in range(B) for g in d.gpus
                                      for k in range(3) if lam[b, gpu_index[g], k] > 0},
                          list(mins), [None if c is None else (c[0], *plans[j].pairs[c[1]]) for j, c in enumerate(choices)],
                          [set() if c is None else {(b, plans[j].gpu[c[1]], TIERS[k]) for b, k in c[2]}
                           for j, c in enumerate(choices)], lam=lam.copy())


def price_all(pm, plans: list, lam: np.ndarray, gpu_index: dict) -> tuple[list, list]:
    """Every job's ``job_minimum`` at ``lam``: by the model's pricer when it prices these very
    ``plans`` (``pm.pricer``, ``pricing.py``: here or on a Dask cluster, the same numbers), else here."""
    pricer = getattr(pm, "pricer", None)
    if pricer is not None and pricer.plans is plans:
        return pricer.price(lam)
    out = [job_minimum(jp, lam, gpu_index) for jp in plans]
    return [v for v, _ in out], [ch for _, ch in out]


def bound_of_jobs(pm, jobs: list[int], seconds: float) -> float | None:
    r"""A bound on the portfolio of ``pm``'s jobs ``jobs`` alone (the same pools, buckets and offers): the ascent
    of ``lagrangian_bound`` over their plans alone (``pm.job_plans``), with their own reservation floors, for at most
    ``seconds``, from ``pm.dual``'s multipliers (its step scale afresh: another dual). Each :math:`\min_j(\lambda)`
    reads job :math:`j` alone, and the module docstring's proof holds over any set of jobs sharing the pools, so :math:`L(\lambda)` over them bounds
    every schedule of them. (Taking the other jobs' minima out of ``pm``'s own :math:`L` is valid too, but their
    capacity's price :math:`\lambda a` stays while their share of it goes: on 50 generated jobs, one left out,
    that bound sat 58 % below the schedule.) None before ``pm``'s warm start or where the ascent finds no finite
    bound, or with no job (no money to bound: :math:`L` would be at most 0)."""
    if pm.dual is None or pm.dual.lam is None or not pm.job_plans or not jobs:
        return None
    plans = [pm.job_plans[j] for j in jobs]
    start = LagrangeResult(-math.inf, {}, [], [], [], lam=pm.dual.lam.copy())
    lag = lagrangian_bound(pm, seconds=seconds, plans=plans, reserved_floor=reservation_floors(pm, plans), start=start)
    return lag.bound_usd if math.isfinite(lag.bound_usd) else None


def lagrangian_bound(pm, seconds: float = 5.0, iterations: int = 200, target_usd: float | None = None,
                     plans: list | None = None, reserved_floor: dict[str, int] | None = None,
                     start: "LagrangeResult | None" = None) -> LagrangeResult:
    """Projected subgradient ascent on L(lambda) (module docstring) for at most ``seconds`` or
    ``iterations``; ``target_usd`` (a known schedule's cost) steers the Polyak step."""
    t_start = time.perf_counter()
    d = pm.data
    B, G = len(d.buckets), len(d.gpus)
    gpu_index = {g: n for n, g in enumerate(d.gpus)}
    plans = plans if plans is not None else [job_plans(pm, j) for j in range(len(d.instances))]
    avail = np.zeros((B, G, 3))
    for g, n in gpu_index.items():
        avail[:, n, 1] = d.od_avail[g]
        avail[:, n, 2] = d.spot_avail[g]
    res_cap = np.array([d.reserved_price[g] * d.committed_hours[g] for g in d.gpus])   # USD per reserved GPU
    floor = np.array([float((reserved_floor or {}).get(g, 0)) for g in d.gpus])           # R_g >= floor_g
    lam = np.zeros((B, G, 3))
    lam[:, :, 0] = res_cap[None, :] / B       # the old floors: the reservation spread evenly over the buckets
    theta, stall = 1.0, 0
    if start is not None and start.lam is not None:   # go on from an earlier ascent
        lam, theta = start.lam.copy(), start.theta
    best = start
    history = []
    it = 0
    while it < iterations and (it == 0 or time.perf_counter() - t_start < seconds):
        it += 1
        mins, choices = price_all(pm, plans, lam, gpu_index)
        load = np.zeros((B, G, 3))
        for jp, ch in zip(plans, choices):
            if ch is not None:
                n, g = jp.count[ch[1]], gpu_index[jp.gpu[ch[1]]]
                for b, k in ch[2]:
                    load[b, g, k] += n
        L = (sum(mins) - float((lam[:, :, 1:] * avail[:, :, 1:]).sum())
             + float((floor * np.maximum(0.0, res_cap - lam[:, :, 0].sum(axis=0))).sum()))
        history.append(L)
        if not math.isfinite(L):
            # some job has no plan even in the relaxation (the portfolio is infeasible): claim nothing
            if best is None:
                best = LagrangeResult(-math.inf, {}, [-math.inf] * len(plans), [None] * len(plans), [set() for _ in plans])
            break
        if best is None or L > best.bound_usd:
            best = bound_at(d, plans, lam, L, mins, choices)
            stall = 0
        else:
            stall += 1
            if stall >= 5:
                theta, stall = theta / 2, 0
        sub = load - np.concatenate([np.broadcast_to(floor[None, :, None], (B, G, 1)), avail[:, :, 1:]], axis=2)
        # multipliers of rows that cannot bind stay at 0
        sub[:, :, 1:] = np.where((lam[:, :, 1:] <= 0) & (sub[:, :, 1:] < 0), 0.0, sub[:, :, 1:])
        norm = float((sub ** 2).sum())
        if norm <= 0:
            break   # the minimisers fit every capacity: L is the optimum of the relaxation
        goal = target_usd if target_usd is not None and target_usd > best.bound_usd else best.bound_usd * 1.05
        step = theta * (goal - L) / norm
        lam = lam + step * sub
        lam[:, :, 1:] = np.maximum(lam[:, :, 1:], 0.0)
        for n in range(G):
            lam[:, n, 0] = project_capped_simplex(lam[:, n, 0], res_cap[n])
        if theta < 1e-4:
            break
    best.iterations = it + (start.iterations if start is not None else 0)
    best.seconds = time.perf_counter() - t_start + (start.seconds if start is not None else 0.0)
    best.history = (start.history if start is not None else []) + history
    best.theta = theta
    return best


def reservation_floors(pm, plans: list) -> dict[str, int]:
    """Valid lower bounds on the reserved GPUs of each type (``reserved_floor``): a job that has no
    plan at all without reserved GPUs (its relaxed subproblem of the module docstring, on-demand
    and spot only, capacity unshared, is infeasible), and whose plans that are feasible with
    reserved GPUs are all of one type g, holds at least the least count c of those plans on
    reserved g in some bucket (gang), so R_g >= c in every schedule."""
    d = pm.data
    B, G = len(d.buckets), len(d.gpus)
    gpu_index = {g: n for n, g in enumerate(d.gpus)}
    zero = np.zeros((B, G, 3))
    out: dict[str, int] = {}
    for jp in plans:
        P = len(jp.pairs)
        if P == 0:
            continue
        no_res = np.ones((P, B, 3), dtype=bool)
        no_res[:, :, 0] = False
        if job_minimum(jp, zero, gpu_index, tier_mask=no_res)[1] is not None:
            continue   # the job can run without reserved GPUs
        least: dict[str, float] = {}
        for c in sorted(set(jp.count.tolist())):
            for g in sorted(set(jp.gpu)):
                if g in least:
                    continue
                only = np.zeros((P, B, 3), dtype=bool)
                only[[p for p in range(P) if jp.gpu[p] == g and jp.count[p] == c]] = True
                if only.any() and job_minimum(jp, zero, gpu_index, tier_mask=only)[1] is not None:
                    least[g] = c
        if len(least) == 1:
            (g, c), = least.items()
            out[g] = max(out.get(g, 0), int(c))
    return out
