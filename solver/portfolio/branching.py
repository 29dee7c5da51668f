r"""Branch-and-price for the portfolio's bound: column generation in every node of a search tree.

``columns.column_generation`` bounds the portfolio by the Lagrangian dual over the
shared capacity (the master LP over job schedules). A node of the tree restricts the portfolio
to a box of reservations and to rules on some jobs' schedules; its column generation (warm
started from its parent's multipliers and columns, ``reserved_cap`` and ``job_rules``) bounds
every schedule in it, and is at least its parent's bound (a restriction). The children of a
node partition its schedules, so

.. math::
   \mathrm{cost}^* \ge \min_{\text{leaves } \ell} L_\ell

over the leaves of the tree (open, pruned or not branchable alike). Branchings, in this order:

1. **A fractional reservation.** Some optimal schedule reserves, of each GPU type :math:`g`, a
   multiple of :math:`q_g` (``reservation_step``: whole nodes, or the gcd of the counts its
   plans hold where the node size divides it). For the type whose master-LP :math:`R^*_g` is
   furthest from a multiple (in USD), :math:`R_g \le q_g\lfloor R^*_g/q_g\rfloor` and
   :math:`R_g \ge q_g\lceil R^*_g/q_g\rceil`.
2. **A reservation a fractional gang overfills.** :math:`R^*_g` a multiple, but some job column
   in the master LP holds :math:`n > R^*_g` reserved GPUs of :math:`g` (a fraction of the job
   holds them): :math:`R_g \le R^*_g` and :math:`R_g \ge R^*_g + q_g`. In a node with
   :math:`R_g \le c` no job holds more than :math:`c` reserved GPUs of :math:`g` (the pricing's
   ``tier_mask``): that is what lifts the bound (BENCHMARKS.md §3).
3. **A job's schedule** (``job_branching``): the job whose master-LP columns are most evenly
   split, by its plan's (hardware, interval) pair (that pair, or the others) where its columns
   differ there, else by a bucket (held, or not held); the pricing obeys the rule exactly
   (``lagrange.ruled_minimum``).

Nodes are taken best bound first, so the reported bound rises whenever the lowest leaf is
branched; the search stops when the lowest leaf's master LP is integral with nothing to branch
on, when the lowest leaf is at least the incumbent (then it is optimal), or when time runs out
(a node whose children were not all solved stays a leaf with its own bound). A child whose
bound is at least the incumbent is pruned; a child with no schedule at all (a rule no plan
obeys, a box below the floor) is dropped.

**Primal side.** Each new node whose master LP reserves multiples only hands those
reservations (rounded up to whole nodes) to ``on_reservations`` once per distinct vector (the
caller runs its greedy from them and schedules the result exactly).
"""

from __future__ import annotations

import heapq
import math
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from planopt.portfolio.columns import column_generation
from planopt.portfolio.lagrange import JobRule, LagrangeResult, ruled_minimum

MULTIPLE_TOLERANCE_GPUS = 1e-6   # a master-LP reservation within this of a multiple of q is one (LP tolerance)


@dataclass
class Node:
    """One box of the branch and bound: its Lagrangian bound, the reserved-GPU range per type, its job rules."""

    bound_usd: float
    low: dict          # GPU type -> least reserved GPUs in the box
    cap: dict          # GPU type -> most reserved GPUs in the box (absent: the model's own bound)
    lag: LagrangeResult
    depth: int = 0
    rules: dict = field(default_factory=dict)   # job -> JobRule: the job-level branchings on the path


def reservation_step(pm, g: str) -> int | None:
    """q_g, the step every box bound of type g is a multiple of. Every schedule reserves whole
    nodes (a multiple of the node size); and some optimal schedule reserves no more than the most
    GPUs it holds at once, rounded up to whole nodes, which is a multiple of the gcd c of the
    GPU counts of g's plans (a sum of counts) and so, where the node size divides c, c itself.
    Hence q = c where the node size divides c, else the node size. None: no plan is on g."""
    counts = {int(jp.count[p]) for jp in pm.job_plans for p in range(len(jp.pairs)) if jp.gpu[p] == g}
    if not counts:
        return None
    c = math.gcd(*counts)
    node = int(pm.data.node_gpus[g])
    return c if c % node == 0 else node


def branching_type(pm, lag: LagrangeResult, steps: dict) -> tuple[str, int, float] | None:
    """(type, q, R*) of the master-LP reservation furthest (in USD) from a multiple of its q;
    failing that, of a type whose R* is a multiple but below the count of some job column holding
    its reserved GPUs in the master LP (a gang of n > R* reserved GPUs, held by a fraction of the
    job: the child R <= R* forbids it, the child R >= R* + q pays for it), the most such GPUs
    first. None when neither (nothing to branch on)."""
    best = fractional_reservation(pm, lag, steps)
    if best is not None or lag.master is None or lag.lp_columns is None:
        return best
    d = pm.data
    _, columns, _ = lag.master
    over: dict = {}
    for c, v in enumerate(lag.lp_columns):
        if v <= MULTIPLE_TOLERANCE_GPUS:
            continue
        j, _, hh, i, held = columns[c]
        jp = pm.job_plans[j]
        p = jp.pairs.index((hh, i))
        g = jp.gpu[p]
        n = d.gpus.index(g)
        r = float(lag.lp_reserved[n])
        if g in steps and any(k == 0 for _, k in held) and jp.count[p] > r + MULTIPLE_TOLERANCE_GPUS:
            over[g] = max(over.get(g, 0.0), (jp.count[p] - r) * d.reserved_price[g] * d.committed_hours[g])
    if not over:
        return None
    g = max(over, key=over.get)
    q = steps[g]
    r = q * round(float(lag.lp_reserved[d.gpus.index(g)]) / q)
    return g, q, r + 0.5 * q   # the children: R <= R*, R >= R* + q


def fractional_reservation(pm, lag: LagrangeResult, steps: dict) -> tuple[str, int, float] | None:
    """(type, q, R*) of the master-LP reservation furthest (in USD) from a multiple of its q;
    None when every reservation is a multiple."""
    if lag.lp_reserved is None:
        return None
    d = pm.data
    best, worst = None, 0.0
    for n, g in enumerate(d.gpus):
        q = steps.get(g)
        if q is None:
            continue
        r = float(lag.lp_reserved[n])
        rem = r % q
        frac = min(rem, q - rem)
        usd = frac * d.reserved_price[g] * d.committed_hours[g]
        if frac > MULTIPLE_TOLERANCE_GPUS and usd > worst:
            best, worst = (g, q, r), usd
    return best


def job_branching(pm, node: Node) -> tuple[int, JobRule, JobRule] | None:
    """A job-level branching for a node whose master LP reserves multiples only: the job whose
    master-LP columns are most evenly split (the share of the split-off part nearest one half),
    split by its plan's (hardware, interval) pair when its columns differ there (that pair, or any
    other), else by a bucket some of its columns hold and some do not (held, or not held). Each
    pair of rules partitions the job's schedules (with its rule so far). None: no job is split."""
    lag = node.lag
    if lag.master is None or lag.lp_columns is None:
        return None
    _, columns, _ = lag.master
    x = lag.lp_columns
    per_job: dict[int, list] = {}
    for c, v in enumerate(x):
        if v > MULTIPLE_TOLERANCE_GPUS:
            j, r, hh, i, held = columns[c]
            per_job.setdefault(j, []).append((float(v), pm.job_plans[j].pairs.index((hh, i)), {b for b, _ in held}))
    best, score = None, 0.0
    for j, cols in per_job.items():
        if len(cols) < 2:
            continue
        total = sum(v for v, _, _ in cols)
        rule = node.rules.get(j, JobRule())
        mass: dict = {}
        for v, p, _ in cols:
            mass[p] = mass.get(p, 0.0) + v / total
        if len(mass) > 1:
            p, m = min(mass.items(), key=lambda kv: abs(kv[1] - 0.5))
            allowed = rule.pairs if rule.pairs is not None else frozenset(range(len(pm.job_plans[j].pairs)))
            split = (JobRule(frozenset({p}), rule.buckets_out, rule.buckets_in),
                     JobRule(allowed - {p}, rule.buckets_out, rule.buckets_in))
        else:
            bmass: dict = {}
            for v, _, buckets in cols:
                for b in buckets:
                    bmass[b] = bmass.get(b, 0.0) + v / total
            frac = {b: m for b, m in bmass.items() if MULTIPLE_TOLERANCE_GPUS < m < 1 - MULTIPLE_TOLERANCE_GPUS}
            if not frac:
                continue
            b, m = min(frac.items(), key=lambda kv: abs(kv[1] - 0.5))
            split = (JobRule(rule.pairs, rule.buckets_out, rule.buckets_in | {b}),
                     JobRule(rule.pairs, rule.buckets_out | {b}, rule.buckets_in))
        s_ = min(m, 1 - m)
        if s_ > score + 1e-12:
            best, score = (j, *split), s_
    return best


def node_children(pm, node: Node, steps: dict, high: dict) -> tuple[list, tuple] | None:
    """The children of ``node`` as (low, cap, rules) each, and the branching's label: on a
    reservation (``branching_type``: (type, q, R*)), failing that on a job's schedules
    (``job_branching``: ("job", j); a child no schedule obeys is dropped). None: nothing to branch
    on (the node's master LP is integral)."""
    d = pm.data
    choice = branching_type(pm, node.lag, steps)
    children = []
    if choice is not None:
        g, q, r = choice
        low_g = node.low.get(g, 0)
        cap_g = min(node.cap.get(g, high[g]), high[g])
        down_cap = int(q * math.floor(r / q))
        if down_cap >= low_g:
            children.append((node.low, {**node.cap, g: down_cap}, node.rules))
        up_low = int(q * math.ceil(r / q))
        if up_low <= cap_g:
            children.append(({**node.low, g: up_low}, node.cap, node.rules))
        return children, (g, q, r)
    split = job_branching(pm, node)
    if split is None:
        return None
    jb, *rules = split
    gpu_index = {g: n for n, g in enumerate(d.gpus)}
    zero = np.zeros((len(d.buckets), len(d.gpus), 3))
    for rule in rules:
        if ruled_minimum(pm.job_plans[jb], zero, gpu_index, rule)[1] is not None:   # else: no schedule in the child
            children.append((node.low, node.cap, {**node.rules, jb: rule}))
    return children, ("job", jb)


def propose_reservations(pm, res: LagrangeResult, steps: dict, seen: set, on_reservations: Callable[[dict], None]) -> None:
    """A node's master LP that reserves multiples only: its reservations, rounded up to whole
    nodes, handed to ``on_reservations`` once per distinct vector (``seen``)."""
    d = pm.data
    if res.lp_reserved is None or fractional_reservation(pm, res, steps) is not None:
        return
    reserved = {g: int(math.ceil(float(res.lp_reserved[n]) / d.node_gpus[g] - MULTIPLE_TOLERANCE_GPUS)) * d.node_gpus[g]
                for n, g in enumerate(d.gpus)}
    key = tuple(sorted(reserved.items()))
    if key not in seen:
        seen.add(key)
        on_reservations(reserved)


def solve_children(pm, node: Node, children: list, end: float, threads: int, node_share: float,
                   propose: Callable[[LagrangeResult], None] | None) -> tuple[list[Node], int]:
    """Column generation in each child of ``node`` (warm started from it, at most ``node_share``
    of the time left before ``end``), each new node's reservations proposed (``propose``).
    Returns the children solved, in order, until the time ran out or one had no bound, and how
    many column generations ran."""
    kids, runs = [], 0
    for low, cap, rules in children:
        left = end - time.perf_counter()
        if left <= 0:
            break
        res = column_generation(pm, pm.job_plans, low, node_share * left, start=node.lag, threads=threads,
                                reserved_cap=cap or None, job_rules=rules or None)
        runs += 1
        if res is None:
            continue
        kids.append(Node(max(res.bound_usd, node.bound_usd), low, cap, res, node.depth + 1, rules))
        if propose is not None:
            propose(res)
    return kids, runs


def branch_and_price(pm, lag: LagrangeResult, seconds: float, threads: int = 1,
                     incumbent: Callable[[], float | None] = lambda: None,
                     on_reservations: Callable[[dict], None] | None = None,
                     node_share: float = 0.25) -> LagrangeResult | None:
    """Best-bound branch-and-price (module docstring) from the column generation result ``lag``
    (its master LP's ``lp_reserved`` and ``lp_columns``), within ``seconds``. ``incumbent()`` is the
    best schedule's cost so far (pruning); ``on_reservations(reserved)`` is called with each
    distinct integral reservation vector a node's master LP proposes. Each child's column
    generation gets at most ``node_share`` of the time left. Returns a LagrangeResult whose
    ``bound_usd`` is the least leaf bound (never below ``lag``'s), ``branched`` the first
    branching and ``branches`` the leaves (best bound first), or None when nothing was branched."""
    t0 = time.perf_counter()
    end = t0 + seconds
    if lag.master is None or lag.lp_reserved is None or not math.isfinite(lag.bound_usd):
        return None
    d = pm.data
    steps = {g: q for g in d.gpus if (q := reservation_step(pm, g)) is not None}
    high = {g: int(pm.form.reserved_max[g]) for g in d.gpus}
    seen_reserved: set = set()
    propose = None if on_reservations is None else (lambda res: propose_reservations(pm, res, steps, seen_reserved, on_reservations))
    heap: list = [(lag.bound_usd, 0, Node(lag.bound_usd, dict(pm.reserved_floor), {}, lag))]
    done: list[Node] = []       # leaves that are not branched further (pruned or nothing to branch on)
    counter = 1
    first = None
    nodes = job_branchings = 0
    while heap and time.perf_counter() < end:
        bound, _, node = heap[0]
        inc = incumbent()
        if inc is not None and bound >= inc:
            break   # every open leaf is at least the incumbent: it is optimal
        branching = node_children(pm, node, steps, high)
        if branching is None:
            break   # the lowest leaf's master LP is integral: branching cannot lift the bound
        children, label = branching
        heapq.heappop(heap)
        kids, runs = solve_children(pm, node, children, end, threads, node_share, propose)
        nodes += runs
        if len(kids) < len(children):
            # a child was not solved (time ran out): the parent stays a leaf, with its own bound
            heapq.heappush(heap, (node.bound_usd, counter, node))
            counter += 1
            break
        job_branchings += label[0] == "job"
        if first is None:
            first = (*label, *[k.bound_usd for k in kids])
        for kid in kids:
            inc = incumbent()
            if inc is not None and kid.bound_usd >= inc:
                done.append(kid)   # pruned: nothing in its box is cheaper than the incumbent
            else:
                heapq.heappush(heap, (kid.bound_usd, counter, kid))
                counter += 1
    if first is None:
        return None
    return tree_result(lag, sorted([n for _, _, n in heap] + done, key=lambda n: n.bound_usd), t0, first, nodes, job_branchings)


def tree_result(lag: LagrangeResult, leaves: list[Node], t0: float, first: tuple, nodes: int,
                job_branchings: int) -> LagrangeResult:
    """``lag`` with the tree's bound (the least leaf's, never below ``lag``'s), its first
    branching, its leaves' results (best bound first) and its size."""
    bound = leaves[0].bound_usd if leaves else lag.bound_usd
    bound = max(bound, lag.bound_usd)
    out = LagrangeResult(bound, lag.multipliers, lag.job_min_usd, lag.choice, lag.held, lag.iterations,
                         lag.seconds + time.perf_counter() - t0, lag.history, lag.lam, lag.theta, lag.master)
    out.branched = first
    out.branches = tuple(n.lag for n in leaves)
    out.nodes, out.depth, out.job_branchings = nodes, max((n.depth for n in leaves), default=0), job_branchings
    return out
