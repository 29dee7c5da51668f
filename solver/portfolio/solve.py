"""Portfolio and procurement: the model, its solve, and ``solve_portfolio``.

``solve_portfolio(path_or_dict)`` returns a :class:`PortfolioResult` (``result.py``): how many
GPUs of each type to reserve, each job's plan and schedule, and the costs. Every reported number
is recomputed outside the MIP by ``evaluate.evaluate_schedule`` from the single-job evaluator
(``costs.py``) and the schedule, and the result carries the MIP's own totals next to it
(``mip_cost_usd``) so that tests hold the two together.

A solve (``PortfolioModel.solve``) is a sequence of named phases within one time limit
(``phases.py``: later starts, the bound's ascent, the search, column generation and the
integer master, the branching, the MIP proper, the fallback and polish), sharing one
:class:`TimeBudget` (``budget.py``). The model's parts live where their concept does:

- ``loading.py``: ``load_portfolio``, ``check_budget``, ``check_portfolio_size``;
- ``warm_start.py``: the Lagrangian ascent, its share floors and starts, the gang heuristic;
- ``schedules.py``: keeping, loading and falling back on schedules, the polish;
- ``explain.py``: why a portfolio has no schedule;
- ``evaluate.py``: a schedule read from the model and re-evaluated.
"""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from planopt.models.formulation.portfolio import build_portfolio
from planopt.models.schema.portfolio import PortfolioData

from planopt.instance import check_time_limit
from planopt.job.budget import MIN_SOLVE_SECONDS, TimeBudget
from planopt.portfolio.evaluate import evaluate_schedule, extract_schedule, over_budget
from planopt.portfolio.explain import Explanation
from planopt.portfolio.loading import (BUILD_SECONDS_PER_SCHEDULE_KEY, MAX_PORTFOLIO_MIB, check_budget, check_portfolio_size,
                                       load_portfolio, portfolio_memory)
from planopt.portfolio.phases import SolvePhases, SolveRun
from planopt.portfolio.pricing import DaskPricer, Pricing, SerialPricer, choose_pricing
from planopt.portfolio.result import RESULT_VERSION, JobSchedule, PortfolioResult
from planopt.portfolio.schedules import PendingStartHighs, Schedules
from planopt.portfolio.twin import PlainTwin
from planopt.portfolio.warm_start import WarmStart
from planopt.verbosity import solver_log_streams

__all__ = ["PortfolioModel", "PortfolioResult", "JobSchedule", "TimeBudget", "solve_portfolio", "load_portfolio",
           "check_budget", "check_portfolio_size", "portfolio_memory", "evaluate_schedule", "over_budget", "MAX_PORTFOLIO_MIB",
           "MIN_SOLVE_SECONDS", "RELATIVE_GAP", "RESULT_VERSION"]

# A portfolio is a large MIP: "optimal" means within this relative gap (HiGHS's
# default is 1e-4; tests of small portfolios use 1e-9 through `rel_gap`).
RELATIVE_GAP = 1e-4
# Kept from the phases' time when the solve starts a LocalCluster of its own (pricing): closing one of
# 2 workers took 0.51-0.74 s (2026-12-02, studies.distributed.dask_client, three closes, load average ~2.5).
LOCAL_CLUSTER_CLOSE_SECONDS = 1.0


class PortfolioModel(WarmStart, Schedules, SolvePhases, PlainTwin, Explanation):
    """A portfolio's MIP (``build_portfolio``), the persistent HiGHS interface it is solved by,
    and the state its solve's phases share (set by ``warm_start`` and the search)."""

    def __init__(self, source, tight_linking: bool = True, symmetry_breaking: bool = True, budget_usd: float | None = None):
        self.data = load_portfolio(source)
        self.tight_linking, self.symmetry_breaking = tight_linking, symmetry_breaking
        if budget_usd is not None:  # --budget-usd: the total spend cap replaces the portfolio's own
            self.data = PortfolioData(self.data.portfolio.model_copy(update={"budget_usd": check_budget(budget_usd)}),
                                      self.data.instances)
        start = time.perf_counter()
        self.model, self.form, self.reason = build_portfolio(self.data, tight_linking, symmetry_breaking)
        self.build_seconds = time.perf_counter() - start
        self.solver = PendingStartHighs()
        self.complete_start = False
        self.gang_values: list[tuple[Any, float]] | None = None   # the gang heuristic's (warm_start)
        self.lagrange = None   # the Lagrangian bound of the warm start (lagrange.LagrangeResult)
        self.dual = None       # the last of them whose job minima hold without a branching rule (``bound_of_jobs``)
        self.plan_fixes: list[tuple[Any, float]] = []   # the warm start's plans, as values of the plan binaries
        self.job_plans: list = []                        # lagrange.JobPlans per job
        self.reserved_floor: dict[str, int] = {}         # valid lower bounds on reserved GPUs (reservation_floors)
        self.search_objective: float | None = None   # the search's best schedule's objective
        self.twin_bound: float | None = None         # the plain twin's bound (``start_from_plain_jobs``)
        self.twin_restricted: list[int] = []         # the layered jobs the twin held restricted to one stage
        self.log_streams: list = []                       # where HiGHS's logs go (solve: stderr under -v)
        self.best: tuple[float, list] | None = None      # the search's best: (objective, integer values)
        self.candidates: list = []                       # the greedy's schedules (greedy_candidates)
        self.budget = TimeBudget()                       # the last solve's time (none yet: no limit)
        self.pricer_client = None                        # the Dask client pricing runs on (pricing_session), None: here
        self.pricer = None                               # pricing.SerialPricer or DaskPricer of job_plans (new_pricer)
        self.pricing_stats = None                        # the last solve's pricing.PricingStats

    def solve(self, time_limit: float | None = None, rel_gap: float = RELATIVE_GAP, warm_start: bool = True,
              threads: int = 1, explain: bool = True, tee: bool = False, cost_floors: bool = True,
              started_at: float | None = None, pricing: Pricing | None = None) -> PortfolioResult:
        """The phases of ``phases.py`` in order, and (when infeasible) the explanation, all within
        ``time_limit`` seconds from ``started_at`` (a ``time.perf_counter`` instant; default: now).
        ``warm_start`` runs the Lagrangian starts and the search, ``cost_floors`` the Lagrangian's
        share floors; ``tee`` shows HiGHS's log on stderr. ``pricing`` (``pricing.Pricing``; default
        serial) says where the jobs are priced: here or on a Dask cluster, opened for this solve
        (a cluster's start-up counts against the time limit) unless it brings its own client."""
        chosen = choose_pricing(pricing, len(self.data.instances))
        if chosen.mode == "dask" and chosen.client is None and chosen.scheduler is None and time_limit is not None:
            # a LocalCluster of our own closes after the phases, within the limit
            time_limit = max(MIN_SOLVE_SECONDS, check_time_limit(time_limit) - LOCAL_CLUSTER_CLOSE_SECONDS)
        with self.pricing_session(chosen):
            return self.solve_phases(time_limit, rel_gap, warm_start, threads, explain, tee, cost_floors, started_at)

    @contextmanager
    def pricing_session(self, pricing: Pricing) -> Iterator[None]:
        """``pricer_client`` for the solve: None (serial), the given client, or one on the cluster
        at ``pricing.scheduler`` or a LocalCluster (``studies.distributed.dask_client``), closed
        after; the plans scattered to it are released at the end."""
        self.pricer_client, self.pricer = None, None
        try:
            if pricing.mode != "dask":
                yield
            elif pricing.client is not None:
                self.pricer_client = pricing.client
                yield
            else:
                from planopt.studies.distributed import dask_client
                with dask_client(pricing.scheduler, len(self.data.instances), workers=pricing.workers) as client:
                    self.pricer_client = client
                    try:
                        yield
                    finally:
                        self.close_pricer()   # before the cluster goes
        finally:
            self.close_pricer()
            self.pricer_client = None

    def new_pricer(self, plans: list) -> Any:
        """The pricer of ``plans`` (``pricing``): on ``pricer_client`` when the solve has one, else serial."""
        self.close_pricer()
        gpu_index = {g: n for n, g in enumerate(self.data.gpus)}
        if self.pricer_client is None:
            self.pricer = SerialPricer(plans, gpu_index)
        else:
            self.pricer = DaskPricer(self.pricer_client, plans, gpu_index)
        return self.pricer

    def close_pricer(self) -> None:
        """Release the pricer's plans on the cluster (the stats stay in ``pricing_stats``)."""
        pricer = getattr(self, "pricer", None)
        if pricer is not None:
            self.pricing_stats = pricer.stats
            pricer.close()
            self.pricer = None   # later pricing of these plans (outside a solve) runs here

    def solve_phases(self, time_limit: float | None, rel_gap: float, warm_start: bool, threads: int, explain: bool,
                     tee: bool, cost_floors: bool, started_at: float | None) -> PortfolioResult:
        """``solve``'s phases, with the pricer of this solve in place."""
        time_limit = check_time_limit(time_limit)
        result = PortfolioResult.of(self.data, self.build_seconds)
        if self.model is None:
            result.message = self.reason
            return result
        start = time.perf_counter()
        # a new budget per solve; the schedule LPs measured by an earlier solve of this model still count
        budget = self.budget = TimeBudget.of(time_limit, start if started_at is None else started_at, self.budget.restores)
        run = SolveRun(result, budget, start, rel_gap, threads, explain)
        # the solver's log: on stderr under -v (or tee=True), never on stdout, which --json owns
        self.log_streams = [sys.stderr] if tee else solver_log_streams()
        if budget.expired(start):
            return self.out_of_time(result, time_limit, start - budget.started)
        if self.data.later_starts and (warm_start or cost_floors):
            self.later_starts_phase(run, warm_start)
            warm_start = cost_floors = False
        elif not self.form.plain and (warm_start or cost_floors):
            self.layered_jobs_phase(run, warm_start)
            warm_start = cost_floors = False
        if warm_start or cost_floors:
            # the warm start may take at most a share of the time limit: the portfolio MIP needs the rest
            result.warm_start_seconds = self.warm_start(floors=cost_floors, starts=warm_start, budget=budget)
            budget.spent["warm start"] = result.warm_start_seconds
        if budget.expired():
            return self.out_of_time(result, time_limit, time.perf_counter() - budget.started)
        if self.over_budget_phase(run):
            return result
        run.searched = self.search_objective if not self.form.plain or self.data.later_starts else None   # a twin's
        if warm_start and self.plan_fixes:
            self.search_and_bound_phase(run)
        self.mip_phase(run)
        return self.finish_phase(run)

    def extract(self, result: PortfolioResult) -> None:
        """The schedule in the model into ``result``, re-evaluated (``evaluate.extract_schedule``)."""
        extract_schedule(self.model, self.form, result)


def stop_before_the_build(data: PortfolioData, time_limit: float | None, started: float) -> PortfolioResult | None:
    """A result with no schedule when the time left cannot hold the model's build (``BUILD_SECONDS_PER_SCHEDULE_KEY``
    per schedule key: a lower bound for a model with more rows, such as the chance-constrained one); None
    otherwise."""
    if time_limit is None:
        return None
    keys = portfolio_memory(data).keys
    build = BUILD_SECONDS_PER_SCHEDULE_KEY * keys
    left = time_limit - (time.perf_counter() - started)
    if left >= build:
        return None
    result = PortfolioResult.of(data, 0.0)
    result.status, result.message = "time_limit", (
        f"the time limit of {time_limit:g} s leaves {max(0.0, left):.1f} s after loading the portfolio; building "
        f"its model and handing it to the solver takes about {build:.1f} s ({keys:,} "
        "schedule variables); no schedule yet, give it more time")
    return result


def solve_portfolio(source: str | Path | dict[str, Any] | PortfolioData, time_limit: float | None = None,
                    rel_gap: float = RELATIVE_GAP, warm_start: bool = True, tight_linking: bool = True,
                    symmetry_breaking: bool = True, budget_usd: float | None = None,
                    started_at: float | None = None, pricing: Pricing | None = None) -> PortfolioResult:
    """Solve a portfolio: reserved GPUs per type, each job's plan and schedule, least total cost.

    ``time_limit`` (seconds) bounds the whole call: loading, building, warm start, MIP, polish,
    counted from ``started_at`` (a ``time.perf_counter`` instant, default now: a caller that
    loaded the portfolio itself passes when it began); ``budget_usd`` caps the total spend (it
    replaces the portfolio's ``budget_usd``); ``pricing`` where the jobs are priced (``pricing.Pricing``,
    default serial)."""
    started = time.perf_counter() if started_at is None else started_at
    check_time_limit(time_limit)
    data = load_portfolio(source)
    check_portfolio_size(data)
    stopped = stop_before_the_build(data, time_limit, started)
    if stopped is not None:
        return stopped
    pm = PortfolioModel(data, tight_linking=tight_linking, symmetry_breaking=symmetry_breaking, budget_usd=budget_usd)
    return pm.solve(time_limit=time_limit, rel_gap=rel_gap, warm_start=warm_start, started_at=started, pricing=pricing)
