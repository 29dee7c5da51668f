"""A primal heuristic for the portfolio: the greedy schedule and its best responses.

Jobs are placed one after another, each at its cheapest plan and buckets (true prices,
``job_minimum`` with no multipliers, hours counted at the larger overhead so the schedule surely
holds them) in the capacity the jobs before it left; a local search (``best_responses``) then
moves one job at a time and drops reservations that no longer pay off. The search
(``solver/portfolio/search.py``) runs it over several job orders and solves the best schedules
exactly.
"""

from __future__ import annotations

import math
import time

import numpy as np

from planopt.portfolio.lagrange import job_minimum


class _Greedy:
    """The state of a greedy schedule: the capacity left per (bucket, GPU type, tier), the
    reserved GPUs, and per job its (recipe, h, i, [(b, tier)]) and estimated cost."""

    def __init__(self, pm, plans: list, reserved: dict[str, int]):
        d = self.d = pm.data
        self.plans = plans
        self.B, self.G = len(d.buckets), len(d.gpus)
        self.gpu_index = {g: n for n, g in enumerate(d.gpus)}
        self.res_cap = np.array([d.reserved_price[g] * d.committed_hours[g] for g in d.gpus])
        self.R = np.array([reserved.get(g, 0) for g in d.gpus], dtype=float)
        self.left = np.zeros((self.B, self.G, 3))
        for g, n in self.gpu_index.items():
            self.left[:, n, 0] = self.R[n]
            self.left[:, n, 1] = d.od_avail[g]
            self.left[:, n, 2] = d.spot_avail[g]
        self.zero = np.zeros((self.B, self.G, 3))
        self.out: list = [None] * len(plans)
        self.values: list = [0.0] * len(plans)

    def where(self, j: int) -> tuple[int, float]:
        jp = self.plans[j]
        p = jp.pairs.index((self.out[j][1], self.out[j][2]))
        return self.gpu_index[jp.gpu[p]], jp.count[p]

    def remove(self, j: int) -> None:
        g, n = self.where(j)
        for b, k in self.out[j][3]:
            self.left[b, g, k] += n

    def put(self, j: int, ch: tuple, v: float) -> None:
        jp = self.plans[j]
        self.out[j], self.values[j] = (ch[0], *jp.pairs[ch[1]], ch[2]), v
        g, n = self.where(j)
        for b, k in ch[2]:
            self.left[b, g, k] -= n

    def best(self, j: int) -> tuple[float, tuple | None]:
        """Job j's cheapest plan and buckets in the capacity left (true prices, reserved GPUs free)."""
        jp = self.plans[j]
        gi = np.array([self.gpu_index[g] for g in jp.gpu], dtype=int)
        mask = self.left[:, gi, :].transpose(1, 0, 2) >= jp.count[:, None, None] - 1e-9
        return job_minimum(jp, self.zero, self.gpu_index, tier_mask=mask, conservative=True)

    def place(self, j: int) -> bool:
        """Put job j where it is cheapest; with no room, reserve more GPUs of the type its cheapest
        plan with a reservation needs (each new reserved GPU costing its whole commitment, once
        per bucket held: an overestimate). False when the job has no plan at all."""
        v, ch = self.best(j)
        if ch is None:
            jp, d = self.plans[j], self.d
            gi = np.array([self.gpu_index[g] for g in jp.gpu], dtype=int)
            mask = self.left[:, gi, :].transpose(1, 0, 2) >= jp.count[:, None, None] - 1e-9
            lam = np.zeros((self.B, self.G, 3))
            lam[:, :, 0] = self.res_cap[None, :]
            mask[:, :, 0] = True
            _, ch = job_minimum(jp, lam, self.gpu_index, tier_mask=mask, conservative=True)
            if ch is None:
                return False
            g, n = gi[ch[1]], jp.count[ch[1]]
            node = d.node_gpus[d.gpus[g]]
            need = max((n - self.left[b, g, 0] for b, k in ch[2] if k == 0), default=0.0)
            need = math.ceil(need / node - 1e-9) * node   # whole nodes
            self.R[g] += need
            self.left[:, g, 0] += need
            r = list(jp.recipes).index(ch[0])
            v = jp.fixed_usd[r, ch[1]] + sum(jp.hour_usd[ch[1], b, k] * jp.cap_hours_safe[ch[1]] for b, k in ch[2])  # an overestimate
        self.put(j, ch, v)
        return True

    def total(self) -> float:
        return sum(self.values) + float((self.R * self.res_cap).sum())

    def result(self) -> tuple[float, list, dict, list]:
        return self.total(), list(self.out), {g: int(self.R[n]) for g, n in self.gpu_index.items()}, list(self.values)


def greedy_schedule(pm, plans: list, order: list[int], reserved: dict[str, int]) -> tuple[float, list, dict, list] | None:
    """A primal heuristic: jobs in ``order``, each takes its cheapest plan and buckets (true
    prices, ``job_minimum`` with no multipliers, conservatively counted hours) within the
    capacity the jobs before it left: on-demand and spot availability, and ``reserved`` GPUs
    (already paid for, so free to run on); a job that finds no room reserves more
    (``_Greedy.place``). Returns (estimated cost, [(recipe, h, i, [(b, tier)])] per job,
    reserved, each job's estimated cost), or None when some job has no plan at all."""
    state = _Greedy(pm, plans, reserved)
    for j in order:
        if not state.place(j):
            return None
    return state.result()


def best_responses(pm, plans: list, out: list, values: list, reserved: dict[str, int], floor: dict[str, int] | None = None,
                   passes: int = 5, end: float | None = None) -> tuple[float, list, dict, list]:
    """Local search on a greedy schedule (``greedy_schedule``'s output), until no move helps (or
    ``end``, a ``time.perf_counter`` instant):

    - each job in turn gives up its GPUs and takes its cheapest plan and buckets in the capacity
      the others leave (``_Greedy.best``), kept when cheaper (at most ``passes`` rounds);
    - for each GPU type reserved beyond ``floor``, the jobs running on its reserved GPUs give
      them up, the reservation falls to the floor, and they are placed again (largest work
      first, reserving again where they must); kept when the total is lower.

    Returns the same tuple as the greedy."""
    state = _Greedy(pm, plans, {})
    state.R = np.array([reserved.get(g, 0) for g in state.d.gpus], dtype=float)
    state.left[:, :, 0] = state.R[None, :]
    for j, (o, v) in enumerate(zip(out, values)):
        state.out[j] = o
        state.values[j] = v
        g, n = state.where(j)
        for b, k in o[3]:
            state.left[b, g, k] -= n
    floor = floor or {}

    def out_of_time() -> bool:
        return end is not None and time.perf_counter() >= end

    def responses() -> None:
        for _ in range(passes):
            moved = False
            for j in range(len(plans)):
                if out_of_time():
                    return
                state.remove(j)
                v, ch = state.best(j)
                if ch is not None and v < state.values[j] - 1e-9 * max(1.0, abs(state.values[j])):
                    state.put(j, ch, v)
                    moved = True
                else:
                    state.put(j, (state.out[j][0], plans[j].pairs.index((state.out[j][1], state.out[j][2])), state.out[j][3]),
                              state.values[j])
            if not moved:
                return

    responses()
    work = [float(np.nanmin(np.where(np.isfinite(jp.compute_hours), jp.compute_hours * jp.count[None, :], np.inf)))
            if jp.compute_hours.size else 0.0 for jp in plans]
    improved = True
    while improved and not out_of_time():
        improved = False
        for g, n in state.gpu_index.items():
            low = float(floor.get(g, 0))
            if state.R[n] <= low or out_of_time():
                continue
            users = [j for j in range(len(plans)) if state.out[j] is not None and state.where(j)[0] == n
                     and any(k == 0 for _, k in state.out[j][3])]
            saved = (state.R.copy(), state.left.copy(), list(state.out), list(state.values))
            before = state.total()
            for j in users:
                state.remove(j)
            state.left[:, n, 0] -= state.R[n] - low
            state.R[n] = low
            ok = all(state.place(j) for j in sorted(users, key=lambda j: -work[j]))
            if ok and state.total() < before - 1e-9 * max(1.0, abs(before)):
                improved = True
                responses()
            else:
                state.R, state.left, state.out, state.values = saved
    return state.result()
