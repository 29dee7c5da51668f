"""The schedules a portfolio solve keeps, loads and falls back on.

:class:`Schedules` is the part of ``PortfolioModel`` that every phase uses to turn a candidate
schedule into a solution of the full model (only bounds are changed, ``search.solve_fixed``),
keep the best one (``best``: its objective and every integer value) and have it in the model at
the end:

- ``try_schedule``: a schedule given per job, its schedule LP (every integer fixed) and the
  sub-MIP of its plans alone; ``try_reservations``: the greedy from a reservation vector the
  branching proposes;
- ``load_best``: the best schedule loaded into the model, the fallback of the MIP proper
  (``gang_values``, ``search_objective``); ``holds_best`` tells whether it already is;
- ``load_fallback`` / ``gang_fallback``: the gang heuristic's schedule (``warm_start``) loaded;
- ``polish``: the schedule LP at the MIP's integers.

Every schedule LP is timed into the solve's :class:`TimeBudget` (``restores``), which keeps
time for loading the best schedule before the end (``restore_seconds``).
"""

from __future__ import annotations

import time
from typing import Any

import pyomo.environ as pyo

from planopt.job.highs_arrays import ArrayHighs
from planopt.job.model import FEASIBILITY_TOLERANCE, _status  # the same tolerance as single-job solves
from planopt.job.budget import COMPLETE_SHARE, POLISH_SECONDS, RESERVATION_GREEDY_SHARE, RESTORE_SECONDS, TimeBudget
from planopt.portfolio.columns import add_columns
from planopt.portfolio.search import complete_plans, current_values, greedy_candidates, integer_vars, schedule_values, solve_fixed


class PendingStartHighs(ArrayHighs):
    """The array hand-over (``job/highs_arrays.py``) in the shape of the calls the portfolio makes: Pyomo's
    persistent interface's ``set_instance`` and ``solve`` keywords, a partial start ``pending`` for the next run
    (columns by :meth:`column_of`; HiGHS completes it), and Ctrl-C cancelling a run. Options persist on the solver
    between runs, as they did through Pyomo's; a run without a time limit has none (Pyomo's kept the last one)."""

    interruptible = True

    def set_instance(self, model) -> None:
        """Hand ``model`` to HiGHS now (a solve hands over only what changed since)."""
        self._hand_over(model)

    def solve(self, model, load_solutions: bool = False, raise_exception_on_nonoptimal_result: bool = False,
              time_limit: float | None = None, rel_gap: float | None = None, abs_gap: float | None = None,
              tee: list | None = None, solver_options: dict | None = None, stoppable: bool = False):
        """One run of ``model`` as it stands (``ArrayHighs.solve``); solutions are loaded by the caller.
        ``stoppable`` (with a time limit): in a child process killed at the limit (``job/highs_child.py``)."""
        if load_solutions or raise_exception_on_nonoptimal_result:
            raise ValueError("the portfolio loads its own solutions and reads every status")
        options = {k: v for k, v in (solver_options or {}).items() if k not in ("output_flag", "log_to_console")}
        if rel_gap is not None:
            options["mip_rel_gap"] = rel_gap
        if abs_gap is not None:
            options["mip_abs_gap"] = abs_gap
        return super().solve(model, time_limit, options, list(tee or []), stoppable=stoppable)


def fixed_lp_options(threads: int) -> dict[str, Any]:
    """HiGHS's options for a schedule LP (every integer fixed): the single-job tolerances, seeded."""
    return {"primal_feasibility_tolerance": FEASIBILITY_TOLERANCE, "mip_feasibility_tolerance": FEASIBILITY_TOLERANCE,
            "random_seed": 0, "threads": threads}


class Schedules:
    """Keeping, loading and falling back on schedules, on a ``PortfolioModel``."""

    def keep_schedule(self, obj: float | None) -> None:
        """Keep the loaded schedule (objective ``obj``; None: nothing loaded) if it is the best."""
        if obj is not None and (self.best is None or obj < self.best[0]):
            per_job, shared = integer_vars(self)
            self.best = (obj, current_values([v for vs in per_job for v in vs] + shared))

    def solve_schedule_lp(self, values: list, time_limit: float, threads: int, budget: TimeBudget) -> float | None:
        """``solve_fixed`` of a whole schedule (every integer fixed), its wall time measured into ``budget``."""
        with budget.restore():
            return solve_fixed(self, values, None, time_limit, threads)

    def holds_best(self) -> bool:
        """The model's values are a schedule as good as the best one kept: only solves' feasible
        solutions are ever loaded into it, so an objective value at the best's is such a schedule."""
        if self.best is None:
            return False
        loaded = pyo.value(self.model.objective, exception=False)
        return loaded is not None and loaded <= self.best[0] + 1e-7 * abs(self.best[0])

    def try_schedule(self, out: list, reserved: dict[str, int], threads: int, budget: TimeBudget) -> None:
        """A schedule given per job as (recipe, h, i, [(bucket, tier)]) with its reservations: its
        schedule LP with every integer value fixed, and the sub-MIP for its plans alone, each for
        ``COMPLETE_SHARE`` of the time left in ``budget``."""
        values = schedule_values(self, out, reserved)
        per_job, _ = integer_vars(self)
        plan_vars = {id(v) for vs in per_job for v in vs if v.parent_component() is not self.model.holds}
        self.keep_schedule(self.solve_schedule_lp(values, budget.sub_solve_seconds(COMPLETE_SHARE), threads, budget))
        self.keep_schedule(complete_plans(self, [vx for vx in values if id(vx[0]) in plan_vars], None,
                                          budget.sub_solve_seconds(COMPLETE_SHARE), threads))

    def try_reservations(self, reserved: dict[str, int], threads: int, budget: TimeBudget) -> None:
        """A reservation vector the branching proposes (``branch_and_price``): the greedy from it
        (``greedy_candidates``, for at most ``RESERVATION_GREEDY_SHARE`` of the time left in the
        branching's ``budget``), its best schedule solved exactly (``try_schedule``), and its
        schedules as columns of the master."""
        left = budget.left()
        if left <= RESTORE_SECONDS:
            return
        reserved = {g: max(n, self.reserved_floor.get(g, 0)) for g, n in reserved.items()}
        found = greedy_candidates(self, self.job_plans, reserved, end=time.perf_counter() + RESERVATION_GREEDY_SHARE * left)
        if not found:
            return
        if self.lagrange is not None:
            add_columns(self, self.lagrange, [(out, values) for _, out, _, values in found])
        _, out, res, _ = found[0]
        self.try_schedule(out, res, threads, budget)

    def load_best(self, threads: int, budget: TimeBudget) -> None:
        """Load the best schedule into the model (its schedule LP, for at least ``RESTORE_SECONDS``);
        it becomes the fallback (``gang_values``) and ``search_objective``."""
        if self.best is None:
            return
        if not self.holds_best():
            self.solve_schedule_lp(self.best[1], max(RESTORE_SECONDS, budget.sub_solve_seconds(COMPLETE_SHARE)), threads, budget)
        self.gang_values = list(self.best[1])
        self.search_objective = self.best[0]

    def load_fallback(self, threads: int, budget: TimeBudget) -> bool:
        """The gang heuristic's schedule loaded into the model now (``gang_fallback``), timed as a
        schedule LP; the start pending for the MIP proper is kept for it. Like the fallback after
        the MIP, it may overrun the deadline a little (at most ``RESTORE_SECONDS``) rather than
        lose the schedule."""
        pending, self.solver.pending = self.solver.pending, None
        t0 = time.perf_counter()
        try:
            with budget.restore():
                return self.gang_fallback(threads, max(RESTORE_SECONDS, budget.left(t0)))
        finally:
            self.solver.pending = pending

    def gang_fallback(self, threads: int, time_limit: float | None) -> bool:
        """The gang heuristic's schedule (``gang_values``: plans, held buckets, reservations) with
        the schedule LP solved for it, loaded into the model; False when the LP has no solution in
        time (then nothing is loaded)."""
        saved = [(v, v.lb, v.ub) for v, _ in self.gang_values]
        for v, x in self.gang_values:
            v.setlb(x)
            v.setub(x)
        try:
            res = self.solver.solve(self.model, load_solutions=False, raise_exception_on_nonoptimal_result=False,
                                    time_limit=time_limit, solver_options=fixed_lp_options(threads))
            ok = _status(res) == "optimal"
            if ok:
                res.solution_loader.load_vars()
        finally:
            for v, lb, ub in saved:
                v.setlb(lb)
                v.setub(ub)
        return ok

    def polish(self, incumbent: float | None, threads: int, time_limit: float | None = None) -> float | None:
        """With every integer decision fixed at the incumbent's, the schedule is an LP: solve it to
        optimality, so that the schedule is the best for the chosen plans and reservations and
        cost ties go to the earliest buckets. Returns the (never worse) objective."""
        # Bounds, not fix(): the persistent interface updates a bound cheaply, whereas fixing
        # rebuilds every constraint that holds the variable.
        ints = [(v, v.lb, v.ub) for v in self.model.component_data_objects(pyo.Var, descend_into=True)
                if v.is_integer() and not v.fixed]
        for v, _, _ in ints:
            v.setlb(round(v.value))
            v.setub(round(v.value))
        try:
            res = self.solver.solve(self.model, load_solutions=False, raise_exception_on_nonoptimal_result=False,
                                    time_limit=min(POLISH_SECONDS, time_limit or POLISH_SECONDS),
                                    solver_options=fixed_lp_options(threads))
            if _status(res) == "optimal" and (incumbent is None or res.incumbent_objective <= incumbent + 1e-9 * abs(incumbent)):
                res.solution_loader.load_vars()
                incumbent = res.incumbent_objective
        finally:
            for v, lb, ub in ints:
                v.setlb(lb)
                v.setub(ub)
        return incumbent
