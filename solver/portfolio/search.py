"""Primal side of the portfolio MIP: schedules from the greedy and from fixed plans.

Everything here works on the portfolio model itself, through the persistent
HiGHS interface of a ``PortfolioModel``, by bounds (``setlb``/``setub``: the
interface updates a bound cheaply, whereas ``fix`` rebuilds every row that
holds the variable):

- ``greedy_candidates``: ``greedy.greedy_schedule`` over several job
  orders, and ``schedule_values``, a greedy schedule as values of every integer
  variable (then ``solve_fixed`` solves its schedule LP exactly);
- ``complete_plans``: with every job's plan fixed, the reservations and the gang
  schedule are a much smaller MIP (HiGHS's presolve removes most of the model),
  solved with a short time limit.

Every schedule they load is a solution of the full MIP (every row holds; only
bounds were changed), so the usual extraction, re-evaluation and replay apply.
Tried and left out (BENCHMARKS.md §3): fix-and-optimize by HiGHS sub-MIPs over a
few jobs at a time (with 3-10 jobs' plans and buckets free, each sub-MIP took
its whole 4-10 s limit, and HiGHS spent the limit on completing the start).
"""

from __future__ import annotations

import random
import time
from typing import Any

import numpy as np
import pyomo.environ as pyo
from pyomo.contrib.solver.common.results import SolutionStatus

from planopt.job.model import FEASIBILITY_TOLERANCE
from planopt.portfolio.greedy import best_responses, greedy_schedule


def _options(threads: int, log: bool = False) -> dict[str, Any]:
    return {"output_flag": log, "log_to_console": log, "mip_feasibility_tolerance": FEASIBILITY_TOLERANCE,
            "primal_feasibility_tolerance": FEASIBILITY_TOLERANCE, "random_seed": 0, "threads": threads}


def integer_vars(pm) -> tuple[list[list[Any]], list[Any]]:
    """(per job: its integer variables, plan, holds and, for a job of several gangs in order, which gang is done by
    which bucket (``done``); the shared ones: reservations)."""
    m = pm.model
    per_job = []
    holds: dict[int, list] = {}
    for key in m.U:
        holds.setdefault(key[0], []).append(m.holds[key])
    for key in getattr(m, "DONE", ()):
        holds.setdefault(key[0], []).append(m.done[key])
    for j in m.J:
        own = [v for v in m.job[j].component_data_objects(pyo.Var, descend_into=True) if v.is_integer()]
        per_job.append(own + holds.get(j, []))
    shared = list(m.reserved.values()) + list(m.reserved_nodes.values())
    return per_job, shared


def current_values(variables: list[Any]) -> list[tuple[Any, float]]:
    """Each variable with its current value rounded to a whole number (a MIP start)."""
    return [(v, float(round(v.value or 0.0))) for v in variables]


def set_start(pm, values: list[tuple[Any, float]]) -> None:
    """Hand ``values`` to the persistent HiGHS solver as the next solve's MIP start."""
    pm.solver.pending = (np.array([pm.solver.column_of(v) for v, _ in values], dtype=np.int32),
                         np.array([x for _, x in values], dtype=np.float64))


def solve_fixed(pm, fixed: list[tuple[Any, float]], start: list[tuple[Any, float]] | None, time_limit: float,
                threads: int, rel_gap: float = 1e-4) -> float | None:
    """Solve the model with ``fixed`` variables held at their values (by bounds) and ``start`` as
    HiGHS's start; loads the solution and returns its objective, or None (nothing loaded)."""
    saved = [(v, v.lb, v.ub) for v, _ in fixed]
    for v, x in fixed:
        v.setlb(x)
        v.setub(x)
    try:
        if start:
            set_start(pm, start)
        else:
            pm.solver.pending = None   # a start left from before would not match the bounds
        log = getattr(pm, "log_streams", None) or []   # -v: every HiGHS run's log on stderr, as the MIP proper's
        res = pm.solver.solve(pm.model, load_solutions=False, raise_exception_on_nonoptimal_result=False,
                              time_limit=max(0.01, time_limit), rel_gap=rel_gap, abs_gap=0.0, tee=log,
                              solver_options=_options(threads, bool(log)))
        pm.solver.pending = None
        if res.solution_status in (SolutionStatus.optimal, SolutionStatus.feasible) and res.incumbent_objective is not None:
            res.solution_loader.load_vars()
            return float(res.incumbent_objective)
        return None
    finally:
        for v, lb, ub in saved:
            v.setlb(lb)
            v.setub(ub)


def complete_plans(pm, plan_fixes: list[tuple[Any, float]], start: list[tuple[Any, float]] | None, time_limit: float,
                   threads: int) -> float | None:
    """The reservations and gang schedule for the given plans (a sub-MIP); None when none was found."""
    return solve_fixed(pm, plan_fixes, start, time_limit, threads, rel_gap=1e-3)


def schedule_values(pm, out: list, reserved: dict[str, int]) -> list[tuple[Any, float]]:
    """Values of every integer variable for a schedule given as, per job, (recipe, hardware,
    interval, [(bucket, tier index)] held), and the reserved GPUs per type."""
    m, form, d = pm.model, pm.form, pm.data
    tiers = ("reserved", "on_demand", "spot")
    vals: list[tuple[Any, float]] = []
    held = set()
    for j, (r, h, i, buckets) in enumerate(out):
        fd = form.jobs[j]
        vals += plan_values(pm, j, r, h, i)
        g = fd.hardware[h].gpu
        held |= {(j, 0, b, g, tiers[k]) for b, k in buckets}
    vals += [(m.holds[key], 1.0 if key in held else 0.0) for key in m.U]
    vals += [(m.reserved[g], float(reserved[g])) for g in d.gpus]
    vals += [(m.reserved_nodes[g], float(reserved[g] // d.node_gpus[g])) for g in d.gpus]
    return vals


def plan_values(pm, j: int, r: int, h: int, i: int) -> list[tuple[Any, float]]:
    """Values of job j's plan binaries for recipe r, hardware h, interval i."""
    fd, blk = pm.form.jobs[j], pm.model.job[j]
    vals: list[tuple[Any, float]] = []
    for idx, var, chosen in ((range(len(fd.recipes)), blk.recipe_chosen, r), (range(len(fd.hardware)), blk.hardware_chosen, h),
                             (range(len(fd.intervals)), blk.interval_chosen, i)):
        vals.extend((var[x], 1.0 if x == chosen else 0.0) for x in idx)
    return vals


GREEDY_RANDOM_ORDERS = 16  # random job orders tried by the greedy (time allowing), besides the two sorted ones
BEST_RESPONSE_CANDIDATES = 3   # the best greedy schedules improved by best responses


def greedy_candidates(pm, plans: list, reserved_floor: dict[str, int], seed: int = 0,
                      end: float | None = None) -> list[tuple[float, list, dict, list]]:
    """``greedy.greedy_schedule`` over several job orders (largest work first, largest
    Lagrangian share first, random), starting from the reservations every schedule has
    (``reserved_floor``); the best few improved by ``best_responses`` (until ``end``), best
    estimate first, then every greedy schedule as it was (columns for ``integer_master``)."""
    n = len(plans)
    work = [float(np.nanmin(np.where(np.isfinite(jp.compute_hours), jp.compute_hours * jp.count[None, :], np.inf)))
            if jp.compute_hours.size else 0.0 for jp in plans]
    orders = [sorted(range(n), key=lambda j: -work[j])]
    if pm.lagrange is not None:
        orders.append(sorted(range(n), key=lambda j: -pm.lagrange.job_min_usd[j]))
    rng = random.Random(seed)
    for _ in range(GREEDY_RANDOM_ORDERS):
        o = list(range(n))
        rng.shuffle(o)
        orders.append(o)
    out = []
    for o in orders:
        if out and end is not None and time.perf_counter() >= end:
            break
        g = greedy_schedule(pm, plans, o, reserved_floor)
        if g is not None:
            out.append(g)
    out = sorted(out, key=lambda x: x[0])
    improved = [best_responses(pm, plans, o, values, reserved, floor=reserved_floor, end=end)
                for _, o, reserved, values in out[:BEST_RESPONSE_CANDIDATES]]
    return sorted(improved, key=lambda x: x[0]) + out
