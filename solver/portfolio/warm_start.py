"""The warm start of a portfolio solve: the Lagrangian bound, its floors, and the gang heuristic.

:class:`WarmStart` is the part of ``PortfolioModel`` that runs first (the *bound* phase's
ascent): the subgradient ascent on the Lagrangian of the shared capacity
(``solver/portfolio/lagrange.py``), whose per-job share floors go into the MIP
(``add_share_floors``) and whose minimisers' plans are HiGHS's partial start; and
``gang_schedule``, a whole schedule of those plans, the fallback of the MIP proper.

State it sets on the model: ``job_plans``, ``reserved_floor``, ``lagrange``, ``plan_fixes``,
``gang_values``, ``complete_start``, and the bounds of the reservations (``reserved_floor``).
"""

from __future__ import annotations

import math
import time
from typing import Any

from planopt.models.formulation.portfolio import add_share_floors

from planopt.job.budget import LAGRANGE_SECONDS, LAGRANGE_SHARE, TimeBudget
from planopt.portfolio.lagrange import job_plans, lagrangian_bound, reservation_floors
from planopt.portfolio.search import plan_values, set_start

FLOOR_SLACK = 1e-6  # relative (and USD) slack on each job's cost floor, against solver tolerances


class WarmStart:
    """The Lagrangian ascent, its floors and starts, and the gang heuristic, on a ``PortfolioModel``."""

    def warm_start(self, floors: bool = True, starts: bool = True, budget: TimeBudget | None = None) -> float:
        """The Lagrangian relaxation of the shared capacity (``lagrange.lagrangian_bound``),
        for at most ``LAGRANGE_SECONDS`` and a share ``LAGRANGE_SHARE`` of the time left in
        ``budget`` (none: no time limit):

        - ``floors``: each job's share at the best multipliers is bounded below by its least
          alone (``add_share_floors``): valid rows that lift the LP relaxation to at least the
          Lagrangian bound (before: per-job one-job MIPs, reserved GPU-hours at the reservation
          rate; BENCHMARKS.md §3);
        - ``starts``: each job's plan minimising its share goes to HiGHS as a partial start, which
          HiGHS completes (reservations and schedule) by a sub-MIP; and ``gang_schedule`` places
          the plans into a whole gang schedule with reservations (``gang_values``), the fallback
          when the MIP finds no schedule in its time (``gang_fallback``).

        Past the deadline neither is added. Returns the seconds spent."""
        start = time.perf_counter()
        m, form, d = self.model, self.form, self.data
        # Hand the portfolio model to HiGHS first: on large portfolios that takes seconds.
        self.solver.set_instance(m)
        self.complete_start = False
        self.gang_values = None
        self.lagrange = self.dual = None
        self.plan_fixes = []
        budget = TimeBudget() if budget is None else budget
        if not (floors or starts) or budget.expired():
            return time.perf_counter() - start
        seconds = LAGRANGE_SECONDS if not budget.limited else min(LAGRANGE_SECONDS, budget.share(LAGRANGE_SHARE))
        self.job_plans = [job_plans(self, j) for j in range(len(d.instances))]
        self.new_pricer(self.job_plans)   # the plans go to the cluster's workers once, when there is one
        self.reserved_floor = reservation_floors(self, self.job_plans)
        for g, n in self.reserved_floor.items():   # valid: every schedule reserves at least n of g
            m.reserved[g].setlb(max(m.reserved[g].lb or 0, n))
            m.reserved_nodes[g].setlb(max(m.reserved_nodes[g].lb or 0, math.ceil(n / d.node_gpus[g] - 1e-9)))
        lag = self.lagrange = self.dual = lagrangian_bound(self, seconds=max(0.0, seconds), plans=self.job_plans,
                                               reserved_floor=self.reserved_floor)
        if floors:
            bounds = {j: v * (1.0 - FLOOR_SLACK) - FLOOR_SLACK for j, v in enumerate(lag.job_min_usd) if math.isfinite(v)}
            add_share_floors(m, form, lag.multipliers, bounds)   # new constraints: the solver's next update adds them
        if not starts:
            return time.perf_counter() - start
        fixes: list[tuple[Any, float]] = []
        solo: dict[int, tuple[int, int, int, float]] = {}
        for j, choice in enumerate(lag.choice):
            if choice is None:
                continue
            r, h, i = choice
            fd = form.jobs[j]
            solo[j] = (r, h, i, float(fd.count[h] * (1 + fd.overhead[h, i]) * fd.compute_hours[r, h]))
            fixes.extend(plan_values(self, j, r, h, i))
        if len(solo) == len(d.instances):
            gang = self.gang_schedule(solo)
            if gang is not None:   # every integer decision: with them fixed the schedule is an LP
                self.gang_values = fixes + gang
                self.complete_start = True
        self.plan_fixes = fixes
        set_start(self, fixes)
        return time.perf_counter() - start

    def gang_schedule(self, solo: dict[int, tuple[int, int, int, float]]) -> list[tuple[Any, float]] | None:
        """A primal heuristic: a whole gang schedule from each job's plan alone (``solo``: job ->
        recipe, hardware and interval index, and the GPU-hours it needs), as values of every
        ``holds`` binary and of the reservations. Jobs are placed in deadline order; each holds
        its whole count in the cheapest buckets of its window (after its lead time) that still
        have room, enough of them for its GPU-hours: reserved GPUs already committed first (they
        cost nothing more), then on-demand or spot, whichever is cheaper in the bucket, and only
        then new reserved GPUs (whole nodes, within the offer's cap). Returns None when some job
        finds no room. With the plans and these values fixed the schedule is an LP
        (``gang_fallback``); whether it is feasible (work per tier, budget) the LP decides, and
        values it cannot complete are never returned as a schedule."""
        m, form, d = self.model, self.form, self.data
        H = d.bucket_hours
        used: dict[tuple[int, str, str], int] = {}
        reserved = {g: 0 for g in d.gpus}
        held: set[tuple[int, int, str, str]] = set()
        order = sorted(solo, key=lambda j: (d.portfolio.jobs[j].deadline_bucket, d.portfolio.jobs[j].release_bucket, j))
        for j in order:
            r, h, _, work = solo[j]
            fd = form.jobs[j]
            g, n = fd.hardware[h].gpu, fd.hardware[h].count
            need = math.ceil(work / (n * H) * (1 + 1e-6) - 1e-9)
            if need <= 0:
                continue
            rel = d.portfolio.jobs[j].release_bucket
            lead = form.evaluators[j].recipe(fd.recipes[r]).lead_hours
            buckets = [b for b in d.window(j) if lead <= (b - rel) * H * (1 + 1e-12)]
            for new_reservations in (False, True):
                options = []
                for b in buckets:
                    best = self._cheapest_tier(j, b, g, n, used, reserved, new_reservations)
                    if best is not None:
                        options.append((best[0], b, best[1]))
                if len(options) >= need:
                    break
            else:
                return None
            for _, b, k in sorted(options)[:need]:
                used[b, g, k] = used.get((b, g, k), 0) + n
                if k == "reserved" and used[b, g, k] > reserved[g]:
                    node = d.node_gpus[g]
                    reserved[g] = -(-used[b, g, k] // node) * node
                held.add((j, 0, b, g, k))
        values = [(m.holds[key], 1.0 if key in held else 0.0) for key in m.U]
        values += [(m.reserved[g], float(reserved[g])) for g in d.gpus]
        values += [(m.reserved_nodes[g], float(reserved[g] // d.node_gpus[g])) for g in d.gpus]
        return values

    def _cheapest_tier(self, j: int, b: int, g: str, n: int, used: dict, reserved: dict,
                       new_reservations: bool) -> tuple[float, str] | None:
        """The cheapest tier with room for job ``j``'s ``n`` GPUs of type ``g`` in bucket ``b`` and its USD per
        GPU-hour: reserved GPUs already committed cost nothing more; new reserved nodes (when ``new_reservations``,
        within the offer's cap) cost their commitment spread over the bucket; on-demand and spot their price."""
        form, d = self.form, self.data
        price = {"on_demand": d.od_price, "spot": d.spot_price}
        best = None
        for k in form.tiers.get((j, 0, b, g), []):
            if k == "reserved":
                free = reserved[g] - used.get((b, g, k), 0)
                if free >= n:
                    cost = 0.0
                elif new_reservations:
                    node = d.node_gpus[g]
                    extra = -(-(used.get((b, g, k), 0) + n - reserved[g]) // node) * node
                    if reserved[g] + extra > form.reserved_max[g]:
                        continue
                    cost = d.reserved_price[g] * d.committed_hours[g] * extra / (n * d.bucket_hours)
                else:
                    continue
            else:
                avail = (d.od_avail if k == "on_demand" else d.spot_avail)[g][b]
                if avail - used.get((b, g, k), 0) < n:
                    continue
                cost = price[k][g][b]
            if best is None or cost < best[0]:
                best = (cost, k)
        return best

    def least_cost_bound(self) -> float | None:
        """A lower bound in USD on the cost of every schedule, the budget row left out: the
        Lagrangian bound (valid for any multipliers, ``lagrange``) less its slack
        against solver tolerances; None before it is computed or when it is not finite."""
        if self.lagrange is None or not math.isfinite(self.lagrange.bound_usd):
            return None
        return self.lagrange.bound_usd * (1.0 - FLOOR_SLACK) - FLOOR_SLACK
