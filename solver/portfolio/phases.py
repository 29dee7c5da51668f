"""The phases of a portfolio solve, in the order ``PortfolioModel.solve`` runs them.

Each phase takes its share of one :class:`TimeBudget` (``solver/job/budget.py``) and
hands on what it found through the solve's :class:`SolveRun`:

1. **Later starts** (``later_starts_phase``): a portfolio with ``reserved_start_buckets`` skips
   the warm start, bound and search (they price one reservation per type from bucket 0); under
   a time limit its bucket-0 twin is solved first, and its schedule is the fallback. A portfolio
   with a job of several gangs or a retention choice skips them too (``layered_jobs_phase``); under a time limit
   its plain twin (its plain jobs alone) is solved first: the plain jobs' plans and buckets it chose, completed
   by a sub-MIP, are the fallback, and its bound is a bound here (``twin.py``).
2. **Bound: the ascent** (``warm_start``, ``WarmStart``): the Lagrangian bound of the shared
   capacity, per-job share floors in the MIP, the minimisers' plans as HiGHS's start. A bound
   over the budget already proves there is no schedule (``over_budget_phase``).
3. **Search** (``search``): the greedy over several job orders with best responses, each
   schedule solved exactly by the MIP with its integer values (or only its plans) fixed.
4. **Bound: column generation** (``column_generation_phase``), under a time limit: the
   Lagrangian dual to convergence (or its share of the time), a valid bound at every step; then
   the **search: integer master** (``master_search``) over every generated and greedy schedule.
5. **Bound: branching** (``branching_phase``): branch-and-price, best bound first; each
   reservation vector its nodes propose is tried by the greedy (``try_reservations``), and the
   lowest leaves' masters are solved (``leaf_masters_phase``).
6. **MIP** (``mip_phase``), unless the bound already proves the gap: the time left but one
   schedule LP, with the fallback already in the model (``fallback_phase``).
7. **Fallback and polish** (``finish_phase``): the better of the MIP's schedule and the one
   already in the model, polished and re-evaluated; the bound reported is the better of
   HiGHS's and the Lagrangian's (both valid).
"""

from __future__ import annotations

import math
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator

import pyomo.environ as pyo
from pyomo.contrib.solver.common.results import SolutionStatus

from planopt.models.schema.portfolio import PortfolioData

from planopt.job.model import FEASIBILITY_TOLERANCE, _status  # the same tolerance as single-job solves
from planopt.portfolio.branching import branch_and_price
from planopt.job.budget import (BRANCH_SHARE, COMPLETE_SHARE, FINISH_RESTORES, GREEDY_SHARE, LAGRANGE_MORE_SHARE,
                                      LATER_BASE_SHARE, MASTER_SHARE, MIN_SOLVE_SECONDS, RESTORE_MARGIN, RESTORE_SECONDS,
                                      UNLIMITED_SEARCH_SECONDS, TimeBudget)
from planopt.portfolio.evaluate import over_budget
from planopt.portfolio.columns import add_columns, column_generation, integer_master
from planopt.portfolio.greedy import best_responses
from planopt.portfolio.pricing import Pricing
from planopt.portfolio.result import PortfolioResult
from planopt.portfolio.search import complete_plans, greedy_candidates, solve_fixed

MASTER_ROUNDS = 3          # integer master, then best responses from its schedule as new columns, at most this often
BRANCH_MASTERS = 2         # the lowest leaves of the branching whose integer master is solved
HEURISTIC_EFFORT = 0.05    # HiGHS's default; 0.3 found no better incumbents on the 50-job benchmark
# The MIP proper runs in a child process killed at the limit (``job/highs_child.py``) when it has at least this
# long: HiGHS's root cut separation does not check its clock (on 50 generated jobs with 5 staged it ran 7.6 s past a
# 28.5 s limit), but the child starts cold (no warm LP basis, the model handed over again): on 40 generated jobs under
# a 7 s and a 10 s limit, with a MIP of a few seconds, the child found no schedule and $351,843 where the process
# found $358,751 and $324,876, over the 7 s by 0.87-1.16 s (BENCHMARKS.md §20, 2026-12-07).
STOPPABLE_MIP_SECONDS = 10.0
SEARCH_PHASES = ("bucket-0 twin", "plain twin", "search", "master search")   # what ``search_seconds`` reports


@dataclass
class SolveRun:
    """One solve's settings and what its phases hand on to the next (its time is in ``budget``)."""
    result: PortfolioResult
    budget: TimeBudget
    started: float                       # time.perf_counter() when the solve began: solve_seconds counts from it
    rel_gap: float
    threads: int = 1
    explain: bool = True
    searched: float | None = None        # the search's best objective (None: no search ran, or it found nothing)
    lower_bound: float | None = None     # least_cost_bound() when the MIP proper is due
    proved: bool = False                 # the search's best is within rel_gap of lower_bound: no MIP proper
    fallback_tried: bool = False         # the gang heuristic's schedule LP ran before the MIP proper
    fallback_loaded: bool = False        # the model held a fallback schedule when the MIP proper started
    mip: Any = None                      # the MIP proper's results (None: it did not run)


@contextmanager
def searching(result: PortfolioResult, budget: TimeBudget, name: str) -> Iterator[None]:
    """A search phase: timed into ``budget`` and reported in ``result.search_seconds``."""
    with budget.phase(name):
        yield
    result.search_seconds = budget.seconds(*SEARCH_PHASES)


class SolvePhases:
    """The phases of ``PortfolioModel.solve`` (module docstring), on a ``PortfolioModel``."""

    @staticmethod
    def out_of_time(result: PortfolioResult, time_limit: float, spent: float) -> PortfolioResult:
        """The time limit ran out before the portfolio MIP could start: no schedule, exit 4."""
        result.status = "time_limit"
        result.message = (f"the time limit of {time_limit:g} s ran out before the portfolio MIP started "
                          f"(loading, building and warm-starting took {spent:.1f} s); no schedule yet, give it more time")
        return result

    def later_starts_phase(self, run: SolveRun, warm_start: bool) -> None:
        """Later starts: the warm start, search, Lagrangian bound and column generation price one
        reservation per GPU type from bucket 0; with reservations that start later they would not
        be exact (nor their bound a bound), so the MIP runs alone, from the bucket-0 twin's
        schedule when there is a time limit to share (``start_from_bucket_zero``)."""
        if warm_start and run.budget.limited:
            self.start_from_bucket_zero(run)
        run.result.message = ("reserved_start_buckets: the Lagrangian bound, column generation and schedule search are "
                              "bypassed (they assume one reservation from bucket 0); the MIP plans this portfolio"
                              + (", from the schedule of its bucket-0 twin" if self.search_objective is not None else ""))

    def layered_jobs_phase(self, run: SolveRun, warm_start: bool) -> None:
        """A job whose plan holds more than one gang (stages, a trained teacher, separate rollout GPUs) or chooses a
        retention option: the Lagrangian bound, column generation and schedule search price a job as one plan of
        (recipe, hardware, interval) on one gang, so they do not run on this portfolio, and the MIP plans it, under a
        time limit from the schedule of its plain jobs (``twin.PlainTwin``); the message says so."""
        names = [name for name, plain in zip(self.data.names, self.form.plain_jobs) if not plain]
        self.twin_bound, self.twin_restricted = None, []
        if warm_start and run.budget.limited:
            self.start_from_plain_jobs(run)
        why = (f"the Lagrangian bound, column generation and schedule search price one gang of one stage per job; "
               f"{', '.join(names)} hold more, or choose a retention option")
        restricted = ", ".join(self.data.names[j] for j in self.twin_restricted)
        if self.search_objective is not None and restricted:
            run.result.message = (f"{why}: they ran on the other jobs and on the plans of one gang of {restricted}, and "
                                  "the MIP plans this portfolio from that schedule (the other jobs' bound holds here too)")
        elif self.search_objective is not None:
            run.result.message = (f"{why}: they ran on the other jobs alone, and the MIP plans this portfolio from "
                                  "their plans (their bound holds here too)")
        elif self.twin_bound is not None:
            run.result.message = (f"{why}: they ran on the other jobs alone (their bound holds here too), but no "
                                  "schedule was completed from their plans in time, so the MIP plans this portfolio alone")
        else:
            run.result.message = f"{why}: they are bypassed, and the MIP plans this portfolio alone"

    def start_from_bucket_zero(self, run: SolveRun) -> None:
        """Later starts under a time limit: when bucket 0 is a start of every such type, first solve
        the portfolio's bucket-0 twin (``reserved_start_buckets`` removed: one contract per type from
        bucket 0) with the whole warm start and search, for ``LATER_BASE_SHARE`` of the time left.
        Its schedule is also a schedule of this model (every contract signed in bucket 0), so it
        becomes the fallback (``gang_values``, ``search_objective``): the MIP returns it unless it
        finds better. Only its schedule is used, never its bound (not a bound of this model)."""
        d, m = self.data, self.model
        later = [g for g in d.gpus if d.gpu[g].reserved_start_buckets is not None]
        left = run.budget.left()
        if any(0 not in d.reserved_starts[g] for g in later) or left * LATER_BASE_SHARE <= MIN_SOLVE_SECONDS:
            return
        with searching(run.result, run.budget, "bucket-0 twin"):
            twin = d.portfolio.model_copy(update={"gpus": [g.model_copy(update={"reserved_start_buckets": None})
                                                           for g in d.portfolio.gpus]})
            base = type(self)(PortfolioData(twin, d.instances), self.tight_linking, self.symmetry_breaking)
            if base.model is None:
                return
            res = base.solve(time_limit=LATER_BASE_SHARE * left, rel_gap=run.rel_gap, threads=run.threads, explain=False,
                             pricing=None if self.pricer_client is None else Pricing("dask", client=self.pricer_client))
        if not res.jobs:
            return
        values = []
        for v in base.model.component_data_objects(pyo.Var, descend_into=True):
            if v.is_integer() and v.value is not None:   # the same component, by name and index, in this model
                values.append((m.find_component(v.parent_component().name)[v.index()], float(round(v.value))))
        values += [(m.contract_nodes[g, s], float(round(pyo.value(base.model.reserved_nodes[g]))) if s == 0 else 0.0)
                   for (g, s) in m.GS]
        self.gang_values = values
        self.search_objective = pyo.value(base.model.objective)

    def over_budget_phase(self, run: SolveRun) -> bool:
        """Proved over budget by the bound alone (``least_cost_bound`` over ``budget_usd``): no
        schedule, and the time left goes to the least cost that would do. True when so."""
        least = self.least_cost_bound()
        if least is None or not over_budget(least, self.data.portfolio.budget_usd):
            return False
        result = run.result
        result.status = "infeasible"
        result.message = self.explain_infeasible(run.budget, least_usd=least) if run.explain else "no schedule within budget_usd"
        result.solve_seconds = time.perf_counter() - run.started
        return True

    def search(self, result: PortfolioResult, threads: int, budget: TimeBudget) -> None:
        """The primal side before the MIP proper (``search``), each schedule a solution of
        the full model (only bounds are changed), the best one kept (``keep_schedule``):

        - the greedy (``greedy_schedule``) over several job orders, improved by best responses,
          for ``GREEDY_SHARE`` of the time left, the best estimate's schedule solved exactly (the
          schedule LP with its integer values fixed), and the reservations and schedule for its
          plans (a sub-MIP);
        - the reservations and schedule for the Lagrangian minimisers' plans (a sub-MIP).

        The best becomes the fallback (``gang_values``) of the MIP proper; ``master_search``
        follows once column generation has run."""
        t0 = time.perf_counter()
        left = UNLIMITED_SEARCH_SECONDS if not budget.limited else budget.left(t0)
        if left <= max(MIN_SOLVE_SECONDS, budget.restore_seconds()):
            return   # no time to load what it would find: the MIP and the gang heuristic's schedule get it
        with searching(result, budget, "search"):
            self.candidates = greedy_candidates(self, self.job_plans, self.reserved_floor,
                                                end=None if not budget.limited else t0 + GREEDY_SHARE * left)
            if self.candidates:
                _, out, reserved, _ = self.candidates[0]
                self.try_schedule(out, reserved, threads, budget)
            self.keep_schedule(complete_plans(self, self.plan_fixes, None, budget.sub_solve_seconds(COMPLETE_SHARE), threads))
            if self.best is None and self.gang_values is not None:
                self.keep_schedule(solve_fixed(self, self.gang_values, None, budget.sub_solve_seconds(COMPLETE_SHARE), threads))
            self.load_best(threads, budget)

    def search_and_bound_phase(self, run: SolveRun) -> None:
        """The search, then under a time limit (with a schedule found and the ascent's bound) column
        generation and its integer master, then the branching; ``run.searched`` is the best
        schedule's objective."""
        self.search(run.result, run.threads, run.budget)
        run.searched = self.search_objective
        if run.searched is None or not run.budget.limited or self.lagrange is None:
            return
        if self.column_generation_phase(run):
            self.master_search(run.result, run.threads, run.budget)
            self.branching_phase(run)
            run.searched = self.search_objective

    def column_generation_phase(self, run: SolveRun) -> bool:
        """The dual goes on by column generation from the ascent's multipliers, for
        ``LAGRANGE_MORE_SHARE`` of the time left; False when that is too short to start."""
        seconds = run.budget.share(LAGRANGE_MORE_SHARE)
        if not seconds > MIN_SOLVE_SECONDS:
            return False
        with run.budget.phase("column generation"):
            self.lagrange = self.dual = column_generation(self, self.job_plans, self.reserved_floor, seconds,
                                                          start=self.lagrange, threads=run.threads)
        return True

    def master_search(self, result: PortfolioResult, threads: int, budget: TimeBudget) -> None:
        """Price-and-branch's primal: the column generation master (``column_generation``) with the
        greedy's schedules added as columns, solved with binary columns (``integer_master``), for
        ``MASTER_SHARE`` of the time left: it recombines the jobs' schedules of every greedy run
        and every pricing round; its plans are then scheduled exactly (``try_schedule``)."""
        t0 = time.perf_counter()
        if self.lagrange is None or self.lagrange.master is None or not budget.limited:
            return
        with searching(result, budget, "master search"):
            stop = t0 + MASTER_SHARE * budget.left(t0)
            # the master LP's reservations, rounded up to whole nodes, are the greedy's new starting point:
            # the greedy only reserves where a job finds no room, never where it would merely pay off
            h = self.lagrange.master[0]
            d = self.data
            lp_reserved = {g: max(self.reserved_floor.get(g, 0), math.ceil(h.getSolution().col_value[n] / d.node_gpus[g] - 1e-6)
                                  * d.node_gpus[g]) for n, g in enumerate(d.gpus)}
            if any(lp_reserved[g] > self.reserved_floor.get(g, 0) for g in d.gpus):
                self.candidates = (self.candidates or []) + greedy_candidates(
                    self, self.job_plans, lp_reserved, end=time.perf_counter() + 0.5 * (stop - time.perf_counter()))
            add_columns(self, self.lagrange, [(out, values) for _, out, _, values in self.candidates or []])
            self.master_rounds(threads, budget, stop)
            self.load_best(threads, budget)

    def master_rounds(self, threads: int, budget: TimeBudget, stop: float) -> None:
        """Up to ``MASTER_ROUNDS`` integer masters until ``stop``, each schedule tried exactly, with
        best responses from it as the next round's new columns (while they lower its cost)."""
        d = self.data
        for _ in range(MASTER_ROUNDS):
            found = integer_master(self, self.lagrange, max(MIN_SOLVE_SECONDS, 0.5 * (stop - time.perf_counter())))
            if found is None:
                break
            out, reserved, values = found
            self.try_schedule(out, reserved, threads, budget)
            if time.perf_counter() >= stop:
                break
            # best responses from the master's schedule give it new columns for the next round
            better = best_responses(self, self.job_plans, out, values, reserved, floor=self.reserved_floor, end=stop)
            if better[0] >= sum(values) + sum(d.reserved_price[g] * d.committed_hours[g] * n
                                             for g, n in reserved.items()) * (1 - 1e-9):
                break
            add_columns(self, self.lagrange, [(better[1], better[3])])

    def branching_phase(self, run: SolveRun) -> None:
        """Branch-and-price (``branch_and_price``) from column generation's master, for
        ``BRANCH_SHARE`` of the time left but what follows it (``FINISH_RESTORES`` restore times:
        the leaves' masters and schedules, loading the best, measured on this portfolio: its
        schedule LPs take ~2 s on 100 jobs), while the search's best is not within the gap."""
        budget, searched = run.budget, self.search_objective
        left = budget.left()
        finish = FINISH_RESTORES * budget.restore_seconds()
        seconds = min(BRANCH_SHARE * left, left - finish)
        if not (seconds > MIN_SOLVE_SECONDS and searched - self.lagrange.bound_usd > run.rel_gap * abs(searched)):
            return
        branching = budget.until(time.perf_counter() + seconds)   # the greedy of a proposed vector ends with the branching
        with budget.phase("branching"):
            branched = branch_and_price(self, self.lagrange, seconds, threads=run.threads,
                                        incumbent=lambda: self.search_objective,
                                        on_reservations=lambda reserved: self.try_reservations(reserved, run.threads, branching))
        if branched is not None:
            self.lagrange = branched
            with budget.phase("leaf masters"):
                self.leaf_masters_phase(run, branched)

    def leaf_masters_phase(self, run: SolveRun, branched) -> None:
        """Each of the ``BRANCH_MASTERS`` lowest leaves' masters, binary, may recombine its own
        columns into a better schedule; they stop in time to load the best schedule (one restore
        time) before the end, and the best is loaded."""
        budget = run.budget
        leaves = budget.until(budget.end - budget.restore_seconds())
        for branch in sorted(branched.branches, key=lambda x: x.bound_usd)[:BRANCH_MASTERS]:
            left = leaves.left()
            found = integer_master(self, branch, MASTER_SHARE * 0.5 * left) if left > budget.restore_seconds() else None
            if found is not None:
                self.try_schedule(found[0], found[1], run.threads, leaves)
        self.load_best(run.threads, budget)

    def fallback_phase(self, run: SolveRun) -> None:
        """Under a time limit the schedule to fall back on is in the model before the MIP proper
        runs (the search's best, or the gang heuristic's loaded now), so the MIP may take the time
        left but one schedule LP (the polish): a MIP that finds nothing in time loses nothing."""
        with run.budget.phase("fallback"):
            run.fallback_loaded = self.holds_best()
            if not run.fallback_loaded:
                run.fallback_tried, run.fallback_loaded = True, self.load_fallback(run.threads, run.budget)

    def mip_phase(self, run: SolveRun) -> None:
        """The MIP proper for the time left, less ``RESTORE_MARGIN`` times the longest schedule LP
        (the polish), unless the bound already proves the search's best within the gap. HiGHS
        completes a partial start by a sub-MIP that has the whole time limit to itself before the
        MIP proper gets it again (seen in its log): with one pending, each gets half. A run of at least
        ``STOPPABLE_MIP_SECONDS`` is made in a child process killed at its limit (``job/highs_child.py``); a run
        killed returns no schedule, and the fallback is the answer."""
        budget = run.budget
        bounds = [b for b in (self.least_cost_bound(), self.twin_bound) if b is not None]
        run.lower_bound = bound = max(bounds) if bounds else None
        run.proved = run.searched is not None and bound is not None and run.searched - bound <= run.rel_gap * abs(run.searched)
        if not run.proved and budget.limited and self.gang_values is not None:
            self.fallback_phase(run)
        remaining = None if not budget.limited else max(MIN_SOLVE_SECONDS, budget.left() - RESTORE_MARGIN * budget.longest_restore)
        if remaining is not None and self.solver.pending is not None and len(self.solver.pending[0]):
            remaining /= 2
        if run.proved:
            return
        if run.searched is not None:
            self.solver.pending = None   # the search's schedule is kept apart: the fallback
        log = self.log_streams
        with budget.phase("mip"):
            run.mip = self.solver.solve(self.model, load_solutions=False, raise_exception_on_nonoptimal_result=False,
                                        time_limit=remaining, rel_gap=run.rel_gap, abs_gap=0.0, tee=log,
                                        solver_options={"output_flag": bool(log), "log_to_console": bool(log),
                                                        "mip_feasibility_tolerance": FEASIBILITY_TOLERANCE,
                                                        "primal_feasibility_tolerance": FEASIBILITY_TOLERANCE,
                                                        "mip_heuristic_effort": HEURISTIC_EFFORT,
                                                        "random_seed": 0, "threads": run.threads},
                                        stoppable=remaining is not None and remaining >= STOPPABLE_MIP_SECONDS)

    def finish_phase(self, run: SolveRun) -> PortfolioResult:
        """The status, then the schedule returned (``choose_schedule``) polished and re-evaluated
        (``report_schedule``), or, with none and the MIP infeasible, why (``explain_infeasible``)."""
        result, res = run.result, run.mip
        result.solve_seconds = time.perf_counter() - run.started
        result.status = "optimal" if res is None else _status(res)
        use_mip, found = self.choose_schedule(run)
        if found:
            self.report_schedule(run, use_mip)
        elif result.status == "infeasible":
            result.message = self.explain_infeasible(run.budget) if run.explain else "no schedule"
        return result

    def choose_schedule(self, run: SolveRun) -> tuple[bool, bool]:
        """(the MIP's schedule is the answer, there is an answer): the MIP's, unless the schedule
        already in the model (the search's, or the gang heuristic's) is better or the MIP found
        none; then that one, or the gang heuristic's loaded now (its LP is short, all integers
        fixed: it may overrun the limit a little, by at most ``RESTORE_SECONDS``, rather than lose
        the schedule)."""
        res, status, searched = run.mip, run.result.status, run.searched
        use_mip = res is not None and res.solution_status in (SolutionStatus.optimal, SolutionStatus.feasible) and status != "infeasible"
        known = searched if searched is not None else pyo.value(self.model.objective) if run.fallback_loaded else None
        if use_mip and known is not None and res.incumbent_objective > known + 1e-9 * abs(known):
            use_mip = False   # the schedule already in the model (the search's, or the gang heuristic's) is better
        found = use_mip
        if not use_mip and status != "infeasible" and self.gang_values is not None:
            if run.fallback_loaded or (res is None and self.holds_best()):
                found = True   # the model holds it (loaded before the MIP, or left there by load_best)
            elif not run.fallback_tried:
                with run.budget.phase("fallback"):
                    found = self.gang_fallback(run.threads, None if not run.budget.limited
                                               else max(RESTORE_SECONDS, run.budget.left()))
            if found and searched is None:
                run.result.message = ("the MIP found no schedule in time: this is the gang heuristic's (gang_schedule), "
                                      "its best for its plans and reservations")
        return use_mip, found

    def report_schedule(self, run: SolveRun, use_mip: bool) -> None:
        """The chosen schedule in the model (the MIP's loaded and polished), its bound (the better of
        HiGHS's and the Lagrangian's, both valid) and gap, then re-evaluated (``extract``)."""
        result, res, budget = run.result, run.mip, run.budget
        if use_mip:
            res.solution_loader.load_vars()
            inc = res.incumbent_objective
        else:
            inc = pyo.value(self.model.objective)
        bound = None if res is None else res.objective_bound
        if run.lower_bound is not None:
            bound = run.lower_bound if bound is None or not math.isfinite(bound) else max(bound, run.lower_bound)
        if use_mip:   # the fallback's LP already is the polish: every integer fixed, the schedule LP optimal
            with budget.phase("polish"):
                inc = self.polish(inc, run.threads, None if not budget.limited else max(MIN_SOLVE_SECONDS, budget.left()))
        result.mip_cost_usd, result.bound_usd = pyo.value(self.model.cost_usd), bound
        if inc is not None and bound is not None:
            result.gap = max(0.0, inc - bound) / max(1e-9, abs(inc))
            if result.status == "time_limit" and result.gap <= run.rel_gap:
                result.status = "optimal"   # proved by the Lagrangian bound
        self.extract(result)
        result.solve_seconds = time.perf_counter() - run.started
