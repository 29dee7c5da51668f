"""Portfolio and procurement: load, build, solve, extract and re-evaluate.

``solve_portfolio(path_or_dict)`` returns a :class:`PortfolioResult`: how many
GPUs of each type to reserve, each job's plan and schedule, and the costs.
Every reported number is recomputed outside the MIP by
:func:`evaluate_schedule` from the single-job evaluator (``costs.py``) and the
schedule, and the result carries the MIP's own totals next to it
(``mip_cost_usd``) so that tests hold the two together.

A solve (``PortfolioModel.solve``), within one time limit:

1. **Warm start** (``warm_start``): every job's plans as arrays, reservation floors
   (``reservation_floors``: reserved GPUs every schedule has), a short subgradient
   ascent on the Lagrangian of the shared capacity (``portfolio_lagrange``), whose
   per-job share floors go into the MIP (``add_share_floors``) and whose minimisers'
   plans are HiGHS's partial start.
2. **Search** (``search``): a capacity-aware greedy over several job orders with best
   responses and reservation drops, each schedule solved exactly by the MIP with its
   integer values (or only its plans) fixed.
3. **Column generation** (with a time limit): the Lagrangian dual to convergence
   (or the time), a valid lower bound at every step; then price-and-branch's primal
   (``master_search``): the master over every generated and greedy schedule, binary.
   Then branch-and-price (``portfolio_branching.branch_and_price``, best bound first, on
   fractional or overfilled reservations and on jobs' schedules): its least leaf is the
   bound; each reservation vector its nodes propose is tried by the greedy
   (``try_reservations``), and the lowest leaves' masters, binary, are solved.
4. **The MIP proper** for the time left, unless the bound already proves the gap;
   the better of its schedule and the search's is polished and returned. The bound
   reported is the better of HiGHS's and the Lagrangian's (both valid).
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import pandas as pd
import pyomo.environ as pyo
from pydantic import ValidationError
from pyomo.contrib.solver.common.results import SolutionStatus
from pyomo.contrib.solver.solvers.highs import Highs

from planopt.models.cost.evaluator import Evaluator, Metrics
from planopt.models.formulation.big_m import big_m_breaches
from planopt.models.formulation.portfolio import add_share_floors, build_portfolio, hourly_noncompute_usd, spot_overhead_share
from planopt.models.schema.plan import Plan
from planopt.models.schema.portfolio import Portfolio, PortfolioData, restrict_to_portfolio, shared_gpu_types

from planopt.errors import InputError, describe_validation_error, read_json
from planopt.instance import check_time_limit, checked, instance_from
from planopt.portfolio.branching import branch_and_price
from planopt.portfolio.lagrange import add_columns, best_responses, column_generation, integer_master, job_plans, lagrangian_bound, reservation_floors
from planopt.portfolio.replay import TIER_ORDER, gpu_hours_needed
from planopt.portfolio.search import complete_plans, current_values, greedy_candidates, integer_vars, schedule_values, set_start, solve_fixed
from planopt.job.model import FEASIBILITY_TOLERANCE, _status  # the same tolerance as single-job solves
from planopt.verbosity import solver_log_streams

# A portfolio is a large MIP: "optimal" means within this relative gap (HiGHS's
# default is 1e-4; tests of small portfolios use 1e-9 through `rel_gap`).
RELATIVE_GAP = 1e-4
FLOOR_SLACK = 1e-6  # relative (and USD) slack on each job's cost floor, against solver tolerances
BUDGET_RELATIVE_SLACK = 1e-9   # a total over budget_usd by less than this share (plus BUDGET_SLACK_USD) is within it:
BUDGET_SLACK_USD = 1e-6        # the LP's rounding of a schedule that meets the budget row exactly
LAGRANGE_SECONDS = 10.0   # the subgradient ascent: on 50 jobs ~0.1 s an iteration, within 0.1 % of its plateau after ~90 (BENCHMARKS.md §3)
LAGRANGE_SHARE = 0.1      # of the time left, at most, for it
COMPLETE_SECONDS = 10.0   # at most, for the sub-MIP completing the warm start's plans (~1 s on 50 jobs)
COMPLETE_SHARE = 0.15     # of the time left, at most, for it
SEARCH_SECONDS = 10.0     # without a time limit: the completion's share is taken of this
GREEDY_SHARE = 0.2        # of the time left after the warm start, at most, for the greedy and its best responses
SEARCH_SHARE = 0.5        # of the time left after the warm start: what the search's sub-MIPs take a share of
LAGRANGE_MORE_SHARE = 0.5  # of the time left after the search, at most, for column generation (converged in ~11 s on 50 jobs)
MASTER_SHARE = 0.6        # of the time left after column generation, at most, for the integer master (~3-5 s on 50 jobs)
MASTER_ROUNDS = 3         # integer master, then best responses from its schedule as new columns, at most this often
BRANCH_SHARE = 0.85       # of the time left after the master search, at most, for the branching (the MIP proper adds nothing on 50 jobs in 60 s)
BRANCH_MASTERS = 2        # the lowest leaves of the branching whose integer master is solved
RESERVATION_GREEDY_SHARE = 0.05   # of the time left, at most, for the greedy from a reservation vector the branching proposes
RESTORE_SECONDS = 3.0     # at least, kept for loading one schedule (its LP, all integers fixed: ~0.5-1.5 s on 50 jobs, ~2 s on 100; BENCHMARKS.md §3)
RESTORE_MARGIN = 1.5      # times the longest schedule LP measured in this solve, kept for loading the best schedule
FINISH_RESTORES = 3       # restore times the branching leaves: the leaves' masters, their schedules, the final load
MIN_SOLVE_SECONDS = 0.01   # the shortest time limit handed to HiGHS (the CLI's lower bound on --time-limit)
POLISH_SECONDS = 60.0      # at most, for the polish (the schedule LP at the MIP's integers) without a time limit
EXPLAIN_SECONDS = 30.0     # per one-job solve when explaining an infeasible portfolio
LATER_BASE_SHARE = 0.5     # of the time left, at most, for the bucket-0 twin of a portfolio with later starts
EXPLAIN_JOBS = 5           # jobs for which an infeasible portfolio's explanation searches a deadline that would do
RESULT_VERSION = "1.2"  # of the JSON output; minor: keys added (1.1: risk; 1.2: region in procurement and schedule rows), major: a key changes meaning or goes away
HEURISTIC_EFFORT = 0.05  # HiGHS's default; 0.3 found no better incumbents on the 50-job benchmark


# --- loading --------------------------------------------------------------
def check_budget(value: Any, label: str = "--budget-usd") -> float:
    """A total spend cap in USD: a finite number >= 0, else InputError naming ``label``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise InputError(f"{label}: expected a total budget in USD (a finite number >= 0), got {value!r}")
    return float(value)


def load_portfolio(source: str | Path | dict[str, Any] | PortfolioData) -> PortfolioData:
    """A validated portfolio with its jobs resolved; raises InputError naming the field."""
    if isinstance(source, PortfolioData):
        return source
    name, base = "portfolio", Path.cwd()
    if not isinstance(source, dict):
        name, base = str(source), Path(source).resolve().parent
        source = read_json(source)
    try:
        portfolio = Portfolio.model_validate(source)
    except ValidationError as exc:
        raise InputError(describe_validation_error(exc, name)) from None
    instances = []
    for i, job in enumerate(portfolio.jobs):
        where = f"{name}: jobs.{i}.instance"
        raw = job.instance
        if isinstance(raw, str):
            path = (base / raw) if not Path(raw).is_absolute() else Path(raw)
            try:
                raw = read_json(path)
            except InputError as exc:
                raise InputError(f"{where}: {exc}") from None
            where = str(path)
        inst = instance_from(raw, where)  # its shape, then its consistency checks
        if inst.retention is not None:
            raise InputError(f"{name}: jobs.{i}.instance.retention: retention choices are not yet combined with "
                             "portfolios; remove the block (checkpointing.keep_last applies)")
        if inst.teacher is not None and inst.teacher.training is not None:  # its GPUs would be priced outside the pool
            raise InputError(f"{name}: jobs.{i}.instance.teacher.training: a teacher trained as a stage is not modelled "
                             "in portfolios; give the teacher as a lump (teacher.training_usd, teacher.training_hours)")
        if inst.hardware.rollout_gpus:  # a portfolio counts GPU-hours by the training GPUs' type alone
            raise InputError(f"{name}: jobs.{i}.instance.hardware.rollout_gpus: separate rollout hardware is not "
                             "modelled in portfolios; expected none (generation on the job's own GPUs)")
        offered = next((k for k, o in enumerate(inst.hardware.gpus) if o.offer is not None or o.provider is not None), None)
        if offered is not None:  # the portfolio's gpus are the offers; a job names GPU types
            what = "provider" if inst.hardware.gpus[offered].provider is not None else "offer"
            raise InputError(f"{name}: jobs.{i}.instance.hardware.gpus.{offered}.{what}: a portfolio job lists GPU types; "
                             "the offers are the portfolio's gpus entries (one per provider and region)")
        if not shared_gpu_types(inst, portfolio):
            raise InputError(f"{name}: jobs.{i}.instance.hardware.gpus: expected at least one of the portfolio's GPU types "
                             f"({', '.join(g.name for g in portfolio.gpus)}), got {', '.join(o.name for o in inst.hardware.gpus)}")
        restricted = f"{name}: jobs.{i} (restricted to the portfolio's GPUs)"
        try:
            job_inst = restrict_to_portfolio(inst, portfolio)
        except ValidationError as exc:
            raise InputError(describe_validation_error(exc, restricted)) from None
        instances.append(checked(job_inst, restricted))
    return PortfolioData(portfolio, instances)


# --- results --------------------------------------------------------------
@dataclass
class JobSchedule:
    name: str
    provider: str                    # of the plan's GPU type in the portfolio
    plan: Plan
    metrics: Metrics                 # the evaluator's single-job metrics of the plan (on-demand price of bucket 0)
    spot_share: float                # share of the compute hours run on spot
    gpu_hours: dict[tuple[int, str], float]   # (bucket, tier) -> GPU-hours
    release_bucket: int
    deadline_bucket: int
    start_bucket: Optional[int]
    finish_bucket: Optional[int]
    compute_usd: float               # on-demand and spot at their prices, reserved hours at the reserved price
    noncompute_usd: float
    wall_hours: float                # lead time + training hours including spot overhead
    region: Optional[str] = None     # of the offer the job runs on (none: prices without a provider)
    gpu_type: Optional[str] = None   # the catalog GPU of that offer (none: ``plan.gpu``)

    @property
    def cost_usd(self) -> float:
        return self.compute_usd + self.noncompute_usd

    def to_dict(self) -> dict[str, Any]:
        metrics = {**self.metrics.summary(), "wall_hours": self.wall_hours, "gpu_hours": sum(self.gpu_hours.values()),
                   "cost_usd": self.cost_usd, "compute_usd": self.compute_usd, "noncompute_usd": self.noncompute_usd,
                   "spot_share": self.spot_share}
        return {"name": self.name, "plan": self.plan.flat_dict(), "metrics": metrics,
                "start_bucket": self.start_bucket, "finish_bucket": self.finish_bucket,
                "release_bucket": self.release_bucket, "deadline_bucket": self.deadline_bucket,
                "schedule": self.schedule_rows()}

    def schedule_rows(self) -> list[dict[str, Any]]:
        """One row per (bucket, tier) the job runs in: it holds ``gpus`` (its plan's count) for ``hours``."""
        n = self.plan.gpu_count
        return [{"bucket": b, "provider": self.provider, "region": self.region, "gpu": self.gpu_type or self.plan.gpu,
                 "tier": k, "gpus": n, "hours": v / n,
                 "gpu_hours": v}
                for (b, k), v in sorted(self.gpu_hours.items(), key=lambda item: (item[0][0], TIER_ORDER.index(item[0][1])))]


@dataclass
class PortfolioResult:
    status: str                               # optimal | infeasible | time_limit | error
    name: str = "portfolio"
    gap: Optional[float] = None
    reserved: dict[str, int] = field(default_factory=dict)
    utilisation: dict[str, float] = field(default_factory=dict)   # used / committed reserved GPU-hours
    jobs: list[JobSchedule] = field(default_factory=list)
    cost_usd: Optional[float] = None          # evaluated from the schedule
    cost_breakdown_usd: dict[str, float] = field(default_factory=dict)
    mip_cost_usd: Optional[float] = None
    bound_usd: Optional[float] = None
    violations: list[str] = field(default_factory=list)
    big_m_breaches: list[str] = field(default_factory=list)
    buckets: int = 0
    bucket_hours: float = 0.0
    build_seconds: float = 0.0
    solve_seconds: float = 0.0          # includes the warm start
    warm_start_seconds: float = 0.0
    search_seconds: float = 0.0         # the primal search (portfolio_search), part of solve_seconds
    message: str = ""
    gpu_types: list[str] = field(default_factory=list)
    providers: dict[str, str] = field(default_factory=dict)         # GPU type -> provider
    regions: dict[str, Optional[str]] = field(default_factory=dict)  # GPU type (pool) -> the provider's region
    gpu_names: dict[str, str] = field(default_factory=dict)          # pool -> its catalog GPU (a pool of an offer: NAME@provider/region)
    reserved_price: dict[str, float] = field(default_factory=dict)  # GPU type -> reserved $/GPU-hour
    bucket_price: dict[str, dict[str, list[float]]] = field(default_factory=dict)  # tier -> GPU type -> $/GPU-hour per bucket
    reserved_term: dict[str, Optional[str]] = field(default_factory=dict)   # GPU type -> 1m | 1y | 3y (none: the horizon)
    committed_hours: dict[str, float] = field(default_factory=dict)         # GPU type -> hours a reserved GPU is paid for
    reserved_from: dict[str, int] = field(default_factory=dict)             # GPU type -> first bucket reserved GPUs run in
    # reserved_start_buckets: GPU type -> {start bucket -> GPUs signed then}, and the lead time and paid hours per start
    contracts: dict[str, dict[int, int]] = field(default_factory=dict)
    reserved_lead: dict[str, int] = field(default_factory=dict)
    committed_hours_from: dict[str, dict[int, float]] = field(default_factory=dict)
    risk: Optional[dict[str, Any]] = None   # the schedule under capacity scenarios (portfolio_risk), with --scenarios

    @property
    def has_plan(self) -> bool:
        return bool(self.jobs)

    def procurement_rows(self) -> list[dict[str, Any]]:
        """What to buy: one row per reservation (the whole horizon), one per bucket and on-demand or
        spot pool used, ``gpus`` the most the jobs hold there at once."""
        B = self.buckets
        rows = [{"provider": self.providers.get(g, "unspecified"), "region": self.regions.get(g), "gpu": self.gpu_names.get(g, g), "tier": "reserved",
                 "term": self.reserved_term.get(g) or "horizon", "start_bucket": self.reserved_from.get(g, 0), "end_bucket": B - 1,
                 "gpus": n,
                 "usd_per_gpu_hour": self.reserved_price.get(g), "committed_hours": self.committed_hours.get(g),
                 "commitment_usd": n * self.reserved_price.get(g, 0.0) * self.committed_hours.get(g, 0.0),
                 "utilisation": self.utilisation.get(g)}
                for g in self.gpu_types if g not in self.contracts and (n := self.reserved.get(g, 0))]
        # later starts: one row per contract; start_bucket is when its GPUs arrive (signed and
        # paid from reserved_lead buckets earlier), as for the single contract above
        rows += [{"provider": self.providers.get(g, "unspecified"), "region": self.regions.get(g), "gpu": self.gpu_names.get(g, g), "tier": "reserved",
                  "term": self.reserved_term.get(g) or "horizon", "start_bucket": s + self.reserved_lead.get(g, 0),
                  "end_bucket": B - 1, "gpus": n, "usd_per_gpu_hour": self.reserved_price.get(g),
                  "committed_hours": self.committed_hours_from[g][s],
                  "commitment_usd": n * self.reserved_price.get(g, 0.0) * self.committed_hours_from[g][s],
                  "utilisation": self.utilisation.get(g)}
                 for g in self.gpu_types if g in self.contracts for s, n in sorted(self.contracts[g].items()) if n]
        held: dict[tuple, int] = {}
        for js in self.jobs:
            for (b, k) in js.gpu_hours:
                if k != "reserved":
                    held[b, js.plan.gpu, k] = held.get((b, js.plan.gpu, k), 0) + js.plan.gpu_count
        rows += [{"provider": self.providers.get(g, "unspecified"), "region": self.regions.get(g), "gpu": self.gpu_names.get(g, g), "tier": k, "term": None,
                  "start_bucket": b, "end_bucket": b, "gpus": n, "usd_per_gpu_hour": self.bucket_price.get(k, {}).get(g, [None] * B)[b],
                  "committed_hours": None, "commitment_usd": None, "utilisation": None}
                 for (b, g, k), n in sorted(held.items(), key=lambda item: (item[0][0], item[0][1], TIER_ORDER.index(item[0][2])))]
        return rows

    def to_dict(self) -> dict[str, Any]:
        """The published output (``planopt schema --kind portfolio-result``): finite numbers or null."""
        bound = self.bound_usd if self.bound_usd is not None and math.isfinite(self.bound_usd) else None
        gap = self.gap if self.gap is not None and math.isfinite(self.gap) else None
        why = None
        if self.status == "time_limit" and (bound is None or gap is None):
            why = "the solver stopped before it proved a lower bound"
        return {"version": RESULT_VERSION, "status": self.status, "gap": gap, "name": self.name,
                "bucket_hours": self.bucket_hours, "buckets": self.buckets,
                "procurement": self.procurement_rows(),
                "reserved_gpus": {g: self.reserved.get(g, 0) for g in self.gpu_types},
                "jobs": [j.to_dict() for j in self.jobs], "cost_usd": self.cost_usd,
                "cost_breakdown_usd": self.cost_breakdown_usd, "mip_cost_usd": self.mip_cost_usd,
                "bound_usd": bound, "bound_missing_reason": why,
                "build_seconds": self.build_seconds, "solve_seconds": self.solve_seconds,
                "warm_start_seconds": self.warm_start_seconds,
                "violations": self.violations, "message": self.message, "risk": self.risk}

    def jobs_frame(self) -> pd.DataFrame:
        cols = ["job", "method", "gpu", "gpu_count", "steps", "checkpoint_interval_minutes", "release_bucket", "start_bucket",
                "finish_bucket", "deadline_bucket", "spot_share", "gpu_hours", "quality", "forgetting_points", "wall_hours",
                "compute_usd", "noncompute_usd", "cost_usd"]
        rows = [(j.name, j.plan.method, j.plan.gpu, j.plan.gpu_count, j.plan.steps, j.plan.checkpoint_interval_minutes,
                 j.release_bucket, j.start_bucket, j.finish_bucket, j.deadline_bucket, j.spot_share, sum(j.gpu_hours.values()),
                 j.metrics.quality, j.metrics.forgetting_points, j.wall_hours, j.compute_usd, j.noncompute_usd, j.cost_usd)
                for j in self.jobs]
        return pd.DataFrame(rows, columns=cols)

    def schedule_frame(self) -> pd.DataFrame:
        rows = [(j.name, j.plan.gpu, b, k, v) for j in self.jobs for (b, k), v in sorted(j.gpu_hours.items())]
        return pd.DataFrame(rows, columns=["job", "gpu", "bucket", "tier", "gpu_hours"])

    def procurement_frame(self) -> pd.DataFrame:
        rows = [(g, self.reserved.get(g, 0), self.utilisation.get(g)) for g in self.gpu_types]
        return pd.DataFrame(rows, columns=["gpu", "reserved", "utilisation"])


# --- the evaluator of a schedule -----------------------------------------
def over_budget(total_usd: float, budget_usd: float | None) -> bool:
    """``total_usd`` exceeds the total spend cap (None: no cap), beyond the LP's rounding."""
    return budget_usd is not None and total_usd > budget_usd * (1 + BUDGET_RELATIVE_SLACK) + BUDGET_SLACK_USD


def evaluate_schedule(pdata: PortfolioData, plans: list[Plan], spot_shares: list[float],
                      gpu_hours: list[dict[tuple[int, str], float]], reserved: dict[str, int],
                      evaluators: list[Evaluator] | None = None, tolerance: float = 1e-6,
                      contracts: dict[str, dict[int, int]] | None = None):
    """Cost and violations of a portfolio schedule, straight from the single-job evaluator.

    Returns (jobs: list[JobSchedule], cost_breakdown_usd, violations). ``gpu_hours[j]`` maps
    (bucket, tier) to the GPU-hours job ``j`` runs on its plan's GPU type; a job running on a tier
    in a bucket holds its whole GPU count there (gang scheduling), so a tier's capacity is checked
    against the GPUs held at once, not against GPU-hours. ``contracts`` (GPU type -> {start bucket ->
    GPUs}) replaces ``reserved`` for the types with ``reserved_start_buckets``: each contract is in
    force from its start plus the lead time and paid for ``committed_hours_from`` of its start."""
    contracts = contracts or {}
    H = pdata.bucket_hours
    evs = evaluators or [Evaluator(inst) for inst in pdata.instances]
    out, violations = [], []
    used: dict[tuple[int, str, str], float] = {}
    breakdown = {"reserved": sum(pdata.reserved_price[g] * pdata.committed_hours[g] * n for g, n in reserved.items() if g not in contracts)
                 + sum(pdata.reserved_price[g] * pdata.committed_hours_from[g][s] * n for g, c in contracts.items() for s, n in c.items()),
                 "on_demand": 0.0, "spot": 0.0, "noncompute": 0.0}
    for j, (plan, sigma, hours) in enumerate(zip(plans, spot_shares, gpu_hours)):
        ev, name, job = evs[j], pdata.names[j], pdata.portfolio.jobs[j]
        g, n = plan.gpu, plan.gpu_count
        metrics = ev.evaluate(plan)
        if not metrics.fits_memory or metrics.violations:
            violations.append(f"{name}: {'; '.join(metrics.violations)}")
        T = sum(ev.compute_hours_by_component(plan.recipe, plan.hardware).values())
        o = ev.hardware(plan.hardware).overhead_share(plan.checkpoint_interval_minutes)
        o_s = spot_overhead_share(ev, plan.hardware, plan.checkpoint_interval_minutes, pdata.preempt[g])
        need_ns, need_s = gpu_hours_needed(ev, plan, sigma, pdata.preempt[g])
        got_ns = sum(v for (b, k), v in hours.items() if k != "spot")
        got_s = sum(v for (b, k), v in hours.items() if k == "spot")
        for what, got, need in (("non-spot", got_ns, need_ns), ("spot", got_s, need_s)):
            if abs(got - need) > tolerance * max(1.0, need):
                violations.append(f"{name}: {what} GPU-hours scheduled {got:.6g} != needed {need:.6g}")
        lead = ev.recipe(plan.recipe).lead_hours
        compute = 0.0
        for (b, k), v in hours.items():
            if v <= tolerance:
                continue
            if not (job.release_bucket <= b <= job.deadline_bucket):
                violations.append(f"{name}: runs in bucket {b} outside its window {job.release_bucket}..{job.deadline_bucket}")
            if lead > (b - job.release_bucket) * H * (1 + 1e-12):
                violations.append(f"{name}: runs in bucket {b} before its lead time of {lead:.1f} h has passed")
            if k == "reserved" and b < pdata.reserved_from[g]:
                violations.append(f"{name}: runs on reserved {g} in bucket {b}, before they arrive in bucket {pdata.reserved_from[g]}")
            used[b, g, k] = used.get((b, g, k), 0) + n   # a running job holds its whole count (gang)
            if k == "on_demand":
                breakdown["on_demand"] += v * pdata.od_price[g][b]
                compute += v * pdata.od_price[g][b]
            elif k == "spot":
                breakdown["spot"] += v * pdata.spot_price[g][b]
                compute += v * pdata.spot_price[g][b]
            else:
                compute += v * pdata.reserved_price[g]
        for b in pdata.buckets:
            in_b = sum(v for (bb, k), v in hours.items() if bb == b)
            if in_b > n * H * (1 + tolerance) + tolerance:
                violations.append(f"{name}: {in_b:.6g} GPU-hours in bucket {b} > {n} GPUs × {H:g} h")
        train_hours = (1 + o) * T * (1 - sigma) + (1 + o_s) * T * sigma
        noncompute = metrics.cost_usd - metrics.cost_breakdown_usd["compute"] - metrics.cost_breakdown_usd["evaluation"] + hourly_noncompute_usd(ev.inst) * (o_s - o) * T * sigma
        breakdown["noncompute"] += noncompute
        active = sorted(b for (b, k), v in hours.items() if v > tolerance)
        out.append(JobSchedule(name, pdata.provider[g], plan, metrics, sigma, {key: v for key, v in hours.items() if v > tolerance},
                               job.release_bucket, job.deadline_bucket, active[0] if active else None,
                               active[-1] if active else None, compute, noncompute, lead + train_hours,
                               pdata.region[g], pdata.gpu_type[g]))
    for (b, g, k), v in used.items():
        res_cap = pdata.reserved_in_force(g, contracts[g], b) if g in contracts else reserved.get(g, 0)
        cap = {"reserved": res_cap, "on_demand": pdata.od_avail[g][b], "spot": pdata.spot_avail[g][b]}[k]
        if v > cap + tolerance:
            violations.append(f"capacity: {k} {g} in bucket {b}: jobs hold {v:g} GPUs at once > {cap:g}")
    total = sum(breakdown.values())
    budget = pdata.portfolio.budget_usd
    if over_budget(total, budget):
        violations.append(f"budget_usd: {total:,.0f} > {budget:,.0f}")
    return out, breakdown, violations


# --- the model ------------------------------------------------------------
class _Highs(Highs):
    """The persistent HiGHS interface with a start solution. Pyomo's interface has no warm-start
    option, and a solution set before ``solve`` is dropped when the model is updated, so a
    pending partial solution is handed to HiGHS right before it runs."""

    pending: tuple | None = None

    def _solve(self):
        if self.pending is not None:
            index, values = self.pending
            if len(index):  # an empty start makes HiGHS print a warning on stdout
                self._solver_model.setSolution(len(index), index, values)
            self.pending = None
        return super()._solve()


class PortfolioModel:
    def __init__(self, source, tight_linking: bool = True, symmetry_breaking: bool = True, budget_usd: float | None = None):
        self.data = load_portfolio(source)
        self.tight_linking, self.symmetry_breaking = tight_linking, symmetry_breaking
        if budget_usd is not None:  # --budget-usd: the total spend cap replaces the portfolio's own
            self.data = PortfolioData(self.data.portfolio.model_copy(update={"budget_usd": check_budget(budget_usd)}),
                                      self.data.instances)
        start = time.perf_counter()
        self.model, self.form, self.reason = build_portfolio(self.data, tight_linking, symmetry_breaking)
        self.build_seconds = time.perf_counter() - start
        self.solver = _Highs()
        self.complete_start = False
        self.gang_values: list[tuple[Any, float]] | None = None   # the gang heuristic's (warm_start)
        self.lagrange = None   # the Lagrangian bound of the warm start (portfolio_lagrange.LagrangeResult)
        self.plan_fixes: list[tuple[Any, float]] = []   # the warm start's plans, as values of the plan binaries
        self.job_plans: list = []                        # portfolio_lagrange.JobPlans per job
        self.reserved_floor: dict[str, int] = {}         # valid lower bounds on reserved GPUs (reservation_floors)
        self.search_objective: float | None = None   # the search's best schedule's objective
        self.log_streams: list = []                       # where HiGHS's logs go (solve: stderr under -v)
        self.best: tuple[float, list] | None = None      # the search's best: (objective, integer values)
        self.candidates: list = []                       # the greedy's schedules (greedy_candidates)
        self.longest_restore = 0.0                       # wall seconds of the longest schedule LP (integers fixed) so far

    def warm_start(self, floors: bool = True, starts: bool = True, end: float | None = None) -> float:
        """The Lagrangian relaxation of the shared capacity (``portfolio_lagrange.lagrangian_bound``),
        for at most ``LAGRANGE_SECONDS`` and a share ``LAGRANGE_SHARE`` of the time left before
        ``end`` (a ``time.perf_counter`` instant):

        - ``floors``: each job's share at the best multipliers is bounded below by its least
          alone (``add_share_floors``): valid rows that lift the LP relaxation to at least the
          Lagrangian bound (before: per-job one-job MIPs, reserved GPU-hours at the reservation
          rate; BENCHMARKS.md §3);
        - ``starts``: each job's plan minimising its share goes to HiGHS as a partial start, which
          HiGHS completes (reservations and schedule) by a sub-MIP; and ``gang_schedule`` places
          the plans into a whole gang schedule with reservations (``gang_values``), the fallback
          when the MIP finds no schedule in its time (``gang_fallback``).

        Past ``end`` neither is added. Returns the seconds spent."""
        start = time.perf_counter()
        m, form, d = self.model, self.form, self.data
        # Hand the portfolio model to HiGHS first: on large portfolios that takes seconds.
        self.solver.set_instance(m)
        self.complete_start = False
        self.gang_values = None
        self.lagrange = None
        self.plan_fixes = []
        if not (floors or starts) or (end is not None and time.perf_counter() >= end):
            return time.perf_counter() - start
        seconds = LAGRANGE_SECONDS if end is None else min(LAGRANGE_SECONDS, LAGRANGE_SHARE * (end - time.perf_counter()))
        self.job_plans = [job_plans(self, j) for j in range(len(d.instances))]
        self.reserved_floor = reservation_floors(self, self.job_plans)
        for g, n in self.reserved_floor.items():   # valid: every schedule reserves at least n of g
            m.reserved[g].setlb(max(m.reserved[g].lb or 0, n))
            m.reserved_nodes[g].setlb(max(m.reserved_nodes[g].lb or 0, math.ceil(n / d.node_gpus[g] - 1e-9)))
        lag = self.lagrange = lagrangian_bound(self, seconds=max(0.0, seconds), plans=self.job_plans,
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
            fd, blk = form.jobs[j], m.job[j]
            solo[j] = (r, h, i, float(fd.count[h] * (1 + fd.overhead[h, i]) * fd.compute_hours[r, h]))
            for idx, var, chosen in ((range(len(fd.recipes)), blk.recipe_chosen, r),
                                     (range(len(fd.hardware)), blk.hardware_chosen, h),
                                     (range(len(fd.intervals)), blk.interval_chosen, i)):
                fixes.extend((var[x], 1.0 if x == chosen else 0.0) for x in idx)
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
        price = {"on_demand": d.od_price, "spot": d.spot_price}
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
                    best = None
                    for k in form.tiers.get((j, b, g), []):
                        if k == "reserved":
                            free = reserved[g] - used.get((b, g, k), 0)
                            if free >= n:
                                cost = 0.0
                            elif new_reservations:
                                node = d.node_gpus[g]
                                extra = -(-(used.get((b, g, k), 0) + n - reserved[g]) // node) * node
                                if reserved[g] + extra > form.reserved_max[g]:
                                    continue
                                cost = d.reserved_price[g] * d.committed_hours[g] * extra / (n * H)
                            else:
                                continue
                        else:
                            avail = (d.od_avail if k == "on_demand" else d.spot_avail)[g][b]
                            if avail - used.get((b, g, k), 0) < n:
                                continue
                            cost = price[k][g][b]
                        if best is None or cost < best[0]:
                            best = (cost, k)
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
                held.add((j, b, g, k))
        values = [(m.holds[key], 1.0 if key in held else 0.0) for key in m.U]
        values += [(m.reserved[g], float(reserved[g])) for g in d.gpus]
        values += [(m.reserved_nodes[g], float(reserved[g] // d.node_gpus[g])) for g in d.gpus]
        return values

    def solve(self, time_limit: float | None = None, rel_gap: float = RELATIVE_GAP, warm_start: bool = True,
              threads: int = 1, explain: bool = True, tee: bool = False, cost_floors: bool = True,
              started_at: float | None = None) -> PortfolioResult:
        """Warm start, MIP, polish and (when infeasible) the explanation, all within ``time_limit``
        seconds from ``started_at`` (a ``time.perf_counter`` instant; default: now)."""
        time_limit = check_time_limit(time_limit)
        d = self.data
        result = PortfolioResult("infeasible", name=d.portfolio.name, buckets=len(d.buckets), bucket_hours=d.bucket_hours,
                                 build_seconds=self.build_seconds, gpu_types=list(d.gpus), providers=dict(d.provider),
                                 regions=dict(d.region), gpu_names=dict(d.gpu_type),
                                 reserved_price=dict(d.reserved_price), bucket_price={"on_demand": d.od_price, "spot": d.spot_price},
                                 reserved_term=dict(d.reserved_term), committed_hours=dict(d.committed_hours),
                                 reserved_from=dict(d.reserved_from),
                                 reserved_lead={g: d.gpu[g].reserved_lead_buckets for g in d.gpus},
                                 committed_hours_from={g: dict(v) for g, v in d.committed_hours_from.items()})
        if self.model is None:
            result.message = self.reason
            return result
        start = time.perf_counter()
        # the solver's log: on stderr under -v (or tee=True), never on stdout, which --json owns
        self.log_streams = [sys.stderr] if tee else solver_log_streams()
        end = None if time_limit is None else (started_at if started_at is not None else start) + time_limit
        if end is not None and start >= end:
            return self.out_of_time(result, time_limit, start - (started_at if started_at is not None else start))
        if d.later_starts and (warm_start or cost_floors):
            # The warm start, search, Lagrangian bound and column generation price one reservation
            # per GPU type from bucket 0; with reservations that start later they would not be exact
            # (nor their bound a bound), so the MIP runs alone.
            if warm_start and end is not None:
                self.start_from_bucket_zero(result, rel_gap, threads, end)
            warm_start = cost_floors = False
            result.message = ("reserved_start_buckets: the Lagrangian bound, column generation and schedule search are "
                              "bypassed (they assume one reservation from bucket 0); the MIP plans this portfolio"
                              + (", from the schedule of its bucket-0 twin" if self.search_objective is not None else ""))
        if warm_start or cost_floors:
            # the warm start may take at most a share of the time limit: the portfolio MIP needs the rest
            result.warm_start_seconds = self.warm_start(floors=cost_floors, starts=warm_start, end=end)
        if end is not None and time.perf_counter() >= end:
            return self.out_of_time(result, time_limit, time.perf_counter() - (started_at if started_at is not None else start))
        least = self.least_cost_bound()
        if least is not None and over_budget(least, d.portfolio.budget_usd):
            # proved over budget by the bound alone: the time left goes to the least cost that would do
            result.status = "infeasible"
            result.message = self.explain_infeasible(end, least_usd=least) if explain else "no schedule within budget_usd"
            result.solve_seconds = time.perf_counter() - start
            return result
        searched = self.search_objective if d.later_starts else None   # the search's best objective
        if warm_start and self.plan_fixes:
            self.search(result, threads, end)
            searched = self.search_objective
            if searched is not None and end is not None and self.lagrange is not None:
                # the dual goes on by column generation from the ascent's multipliers
                seconds = LAGRANGE_MORE_SHARE * (end - time.perf_counter())
                if seconds > MIN_SOLVE_SECONDS:
                    self.lagrange = column_generation(self, self.job_plans, self.reserved_floor, seconds, start=self.lagrange,
                                                      threads=threads)
                    self.master_search(result, threads, end)
                    searched = self.search_objective
                    left = end - time.perf_counter()
                    # what follows the branching (the leaves' masters and schedules, loading the best) is
                    # kept from it, measured on this portfolio: its schedule LPs take ~2 s on 100 jobs
                    finish = FINISH_RESTORES * self.restore_seconds()
                    seconds = min(BRANCH_SHARE * left, left - finish)
                    if seconds > MIN_SOLVE_SECONDS and searched - self.lagrange.bound_usd > rel_gap * abs(searched):
                        branch_end = time.perf_counter() + seconds   # the greedy of a proposed vector ends with the branching
                        branched = branch_and_price(self, self.lagrange, seconds, threads=threads,
                                                    incumbent=lambda: self.search_objective,
                                                    on_reservations=lambda reserved: self.try_reservations(reserved, threads, branch_end))
                        if branched is not None:
                            self.lagrange = branched
                            # each branch's master, binary, may recombine its own columns into a better schedule;
                            # they stop in time to load the best schedule (one restore time) before the end
                            work_end = end - self.restore_seconds()
                            for branch in sorted(branched.branches, key=lambda x: x.bound_usd)[:BRANCH_MASTERS]:
                                left = work_end - time.perf_counter()
                                found = integer_master(self, branch, MASTER_SHARE * 0.5 * left) if left > self.restore_seconds() else None
                                if found is not None:
                                    self.try_schedule(found[0], found[1], threads, left, work_end)
                            self.load_best(threads, end - time.perf_counter(), end)
                            searched = self.search_objective
        lag_bound = self.least_cost_bound()
        proved = searched is not None and lag_bound is not None and searched - lag_bound <= rel_gap * abs(searched)
        fallback_tried = fallback_loaded = False
        if not proved and end is not None and self.gang_values is not None:
            # Under a time limit the schedule to fall back on is in the model before the MIP proper
            # runs (the search's best, or the gang heuristic's loaded now), so the MIP may take the
            # time left but one schedule LP (the polish): a MIP that finds nothing in time loses nothing.
            fallback_loaded = self.holds_best()
            if not fallback_loaded:
                fallback_tried, fallback_loaded = True, self.load_fallback(threads, end)
        remaining = None if end is None else max(MIN_SOLVE_SECONDS, end - time.perf_counter() - RESTORE_MARGIN * self.longest_restore)
        if remaining is not None and self.solver.pending is not None and len(self.solver.pending[0]):
            # HiGHS completes a partial start by a sub-MIP that has the whole time limit to itself
            # before the MIP proper gets it again (seen in its log): give each half.
            remaining /= 2
        log = self.log_streams
        res = None
        if not proved:
            if searched is not None:
                self.solver.pending = None   # the search's schedule is kept apart: the fallback
            res = self.solver.solve(self.model, load_solutions=False, raise_exception_on_nonoptimal_result=False,
                                    time_limit=remaining, rel_gap=rel_gap, abs_gap=0.0, tee=log,
                                    solver_options={"output_flag": bool(log), "log_to_console": bool(log),
                                                    "mip_feasibility_tolerance": FEASIBILITY_TOLERANCE,
                                                    "primal_feasibility_tolerance": FEASIBILITY_TOLERANCE,
                                                    "mip_heuristic_effort": HEURISTIC_EFFORT,
                                                    "random_seed": 0, "threads": threads})
        result.solve_seconds = time.perf_counter() - start
        status = "optimal" if res is None else _status(res)
        result.status = status
        use_mip = res is not None and res.solution_status in (SolutionStatus.optimal, SolutionStatus.feasible) and status != "infeasible"
        known = searched if searched is not None else pyo.value(self.model.objective) if fallback_loaded else None
        if use_mip and known is not None and res.incumbent_objective > known + 1e-9 * abs(known):
            use_mip = False   # the schedule already in the model (the search's, or the gang heuristic's) is better
        found = use_mip
        if not use_mip and status != "infeasible" and self.gang_values is not None:
            if fallback_loaded or (res is None and self.holds_best()):
                found = True   # the model holds it (loaded before the MIP, or left there by load_best)
            elif not fallback_tried:
                # the fallback LP is short (all integers fixed): it may overrun the limit a little rather than lose the schedule
                found = self.gang_fallback(threads, None if end is None else max(RESTORE_SECONDS, end - time.perf_counter()))
            if found and searched is None:
                result.message = "the MIP found no schedule in time: this is the gang heuristic's (gang_schedule), its best for its plans and reservations"
        if found:
            if use_mip:
                res.solution_loader.load_vars()
                inc = res.incumbent_objective
            else:
                inc = pyo.value(self.model.objective)
            bound = None if res is None else res.objective_bound
            if lag_bound is not None:
                bound = lag_bound if bound is None or not math.isfinite(bound) else max(bound, lag_bound)
            if use_mip:   # the fallback's LP already is the polish: every integer fixed, the schedule LP optimal
                inc = self.polish(inc, threads, None if end is None else max(MIN_SOLVE_SECONDS, end - time.perf_counter()))
            result.mip_cost_usd, result.bound_usd = pyo.value(self.model.cost_usd), bound
            if inc is not None and bound is not None:
                result.gap = max(0.0, inc - bound) / max(1e-9, abs(inc))
                if status == "time_limit" and result.gap <= rel_gap:
                    result.status = "optimal"   # proved by the Lagrangian bound
            self.extract(result)
            result.solve_seconds = time.perf_counter() - start
        elif status == "infeasible":
            result.message = self.explain_infeasible(end) if explain else "no schedule"
        return result

    def least_cost_bound(self) -> float | None:
        """A lower bound in USD on the cost of every schedule, the budget row left out: the
        Lagrangian bound (valid for any multipliers, ``portfolio_lagrange``) less its slack
        against solver tolerances; None before it is computed or when it is not finite."""
        if self.lagrange is None or not math.isfinite(self.lagrange.bound_usd):
            return None
        return self.lagrange.bound_usd * (1.0 - FLOOR_SLACK) - FLOOR_SLACK

    def start_from_bucket_zero(self, result: PortfolioResult, rel_gap: float, threads: int, end: float) -> None:
        """Later starts under a time limit: when bucket 0 is a start of every such type, first solve
        the portfolio's bucket-0 twin (``reserved_start_buckets`` removed: one contract per type from
        bucket 0) with the whole warm start and search, for ``LATER_BASE_SHARE`` of the time left.
        Its schedule is also a schedule of this model (every contract signed in bucket 0), so it
        becomes the fallback (``gang_values``, ``search_objective``): the MIP returns it unless it
        finds better. Only its schedule is used, never its bound (not a bound of this model)."""
        d, m = self.data, self.model
        t0 = time.perf_counter()
        later = [g for g in d.gpus if d.gpu[g].reserved_start_buckets is not None]
        left = end - t0
        if any(0 not in d.reserved_starts[g] for g in later) or left * LATER_BASE_SHARE <= MIN_SOLVE_SECONDS:
            return
        twin = d.portfolio.model_copy(update={"gpus": [g.model_copy(update={"reserved_start_buckets": None}) for g in d.portfolio.gpus]})
        base = PortfolioModel(PortfolioData(twin, d.instances), self.tight_linking, self.symmetry_breaking)
        if base.model is None:
            return
        res = base.solve(time_limit=LATER_BASE_SHARE * left, rel_gap=rel_gap, threads=threads, explain=False)
        result.search_seconds += time.perf_counter() - t0
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

    def search(self, result: PortfolioResult, threads: int, end: float | None) -> None:
        """The primal side before the MIP proper (``portfolio_search``), each schedule a solution of
        the full model (only bounds are changed), the best one kept (``keep_schedule``):

        - the greedy (``greedy_schedule``) over several job orders, improved by best responses,
          the best estimate's schedule solved exactly (the schedule LP with its integer values
          fixed), and the reservations and schedule for its plans (a sub-MIP);
        - the reservations and schedule for the Lagrangian minimisers' plans (a sub-MIP).

        The best becomes the fallback (``gang_values``) of the MIP proper; ``master_search``
        follows once column generation has run."""
        t0 = time.perf_counter()
        left = SEARCH_SECONDS / SEARCH_SHARE if end is None else end - t0
        if left <= max(MIN_SOLVE_SECONDS, self.restore_seconds()):
            return   # no time to load what it would find: the MIP and the gang heuristic's schedule get it
        self.candidates = greedy_candidates(self, self.job_plans, self.reserved_floor,
                                            end=None if end is None else t0 + GREEDY_SHARE * (end - t0))
        if self.candidates:
            _, out, reserved, _ = self.candidates[0]
            self.try_schedule(out, reserved, threads, left, end)
        self.keep_schedule(complete_plans(self, self.plan_fixes, None, self.time_for(COMPLETE_SHARE, left, end), threads))
        if self.best is None and self.gang_values is not None:
            self.keep_schedule(solve_fixed(self, self.gang_values, None, self.time_for(COMPLETE_SHARE, left, end), threads))
        self.load_best(threads, left, end)
        result.search_seconds += time.perf_counter() - t0

    def master_search(self, result: PortfolioResult, threads: int, end: float | None) -> None:
        """Price-and-branch's primal: the column generation master (``column_generation``) with the
        greedy's schedules added as columns, solved with binary columns (``integer_master``): it
        recombines the jobs' schedules of every greedy run and every pricing round; its plans are
        then scheduled exactly (``try_schedule``)."""
        t0 = time.perf_counter()
        if self.lagrange is None or self.lagrange.master is None or end is None:
            return
        left = end - t0
        stop = t0 + MASTER_SHARE * left
        # the master LP's reservations, rounded up to whole nodes, are the greedy's new starting point:
        # the greedy only reserves where a job finds no room, never where it would merely pay off
        h = self.lagrange.master[0]
        d = self.data
        lp_reserved = {g: max(self.reserved_floor.get(g, 0), math.ceil(h.getSolution().col_value[n] / d.node_gpus[g] - 1e-6) * d.node_gpus[g])
                       for n, g in enumerate(d.gpus)}
        if any(lp_reserved[g] > self.reserved_floor.get(g, 0) for g in d.gpus):
            self.candidates = (self.candidates or []) + greedy_candidates(
                self, self.job_plans, lp_reserved, end=time.perf_counter() + 0.5 * (stop - time.perf_counter()))
        add_columns(self, self.lagrange, [(out, values) for _, out, _, values in self.candidates or []])
        for _ in range(MASTER_ROUNDS):
            found = integer_master(self, self.lagrange, max(MIN_SOLVE_SECONDS, 0.5 * (stop - time.perf_counter())))
            if found is None:
                break
            out, reserved, values = found
            self.try_schedule(out, reserved, threads, left, end)
            if time.perf_counter() >= stop:
                break
            # best responses from the master's schedule give it new columns for the next round
            better = best_responses(self, self.job_plans, out, values, reserved, floor=self.reserved_floor, end=stop)
            if better[0] >= sum(values) + sum(self.data.reserved_price[g] * self.data.committed_hours[g] * n
                                             for g, n in reserved.items()) * (1 - 1e-9):
                break
            add_columns(self, self.lagrange, [(better[1], better[3])])
        self.load_best(threads, left, end)
        result.search_seconds += time.perf_counter() - t0

    @staticmethod
    def time_for(share: float, left: float, end: float | None) -> float:
        return max(MIN_SOLVE_SECONDS, min(COMPLETE_SECONDS, share * (left if end is None else end - time.perf_counter())))

    def keep_schedule(self, obj: float | None) -> None:
        """Keep the loaded schedule (objective ``obj``; None: nothing loaded) if it is the best."""
        if obj is not None and (self.best is None or obj < self.best[0]):
            per_job, shared = integer_vars(self)
            self.best = (obj, current_values([v for vs in per_job for v in vs] + shared))

    def restore_seconds(self) -> float:
        """Wall seconds to keep for loading a schedule (its LP with every integer fixed, the bounds
        set through Pyomo included): ``RESTORE_MARGIN`` times the longest measured so far in this
        solve, at least ``RESTORE_SECONDS``."""
        return max(RESTORE_SECONDS, RESTORE_MARGIN * self.longest_restore)

    def solve_schedule_lp(self, values: list, time_limit: float, threads: int) -> float | None:
        """``solve_fixed`` of a whole schedule (every integer fixed), its wall time measured."""
        t0 = time.perf_counter()
        obj = solve_fixed(self, values, None, time_limit, threads)
        self.longest_restore = max(self.longest_restore, time.perf_counter() - t0)
        return obj

    def holds_best(self) -> bool:
        """The model's values are a schedule as good as the best one kept: only solves' feasible
        solutions are ever loaded into it, so an objective value at the best's is such a schedule."""
        if self.best is None:
            return False
        loaded = pyo.value(self.model.objective, exception=False)
        return loaded is not None and loaded <= self.best[0] + 1e-7 * abs(self.best[0])

    def try_schedule(self, out: list, reserved: dict[str, int], threads: int, left: float, end: float | None) -> None:
        """A schedule given per job as (recipe, h, i, [(bucket, tier)]) with its reservations: its
        schedule LP with every integer value fixed, and the sub-MIP for its plans alone."""
        values = schedule_values(self, out, reserved)
        per_job, _ = integer_vars(self)
        plan_vars = {id(v) for vs in per_job for v in vs if v.parent_component() is not self.model.holds}
        self.keep_schedule(self.solve_schedule_lp(values, self.time_for(COMPLETE_SHARE, left, end), threads))
        self.keep_schedule(complete_plans(self, [vx for vx in values if id(vx[0]) in plan_vars], None,
                                          self.time_for(COMPLETE_SHARE, left, end), threads))

    def try_reservations(self, reserved: dict[str, int], threads: int, end: float) -> None:
        """A reservation vector the branching proposes (``branch_and_price``): the greedy from it
        (``greedy_candidates``, for at most ``RESERVATION_GREEDY_SHARE`` of the time left), its best
        schedule solved exactly (``try_schedule``), and its schedules as columns of the master."""
        left = end - time.perf_counter()
        if left <= RESTORE_SECONDS:
            return
        reserved = {g: max(n, self.reserved_floor.get(g, 0)) for g, n in reserved.items()}
        found = greedy_candidates(self, self.job_plans, reserved, end=time.perf_counter() + RESERVATION_GREEDY_SHARE * left)
        if not found:
            return
        if self.lagrange is not None:
            add_columns(self, self.lagrange, [(out, values) for _, out, _, values in found])
        _, out, res, _ = found[0]
        self.try_schedule(out, res, threads, RESERVATION_GREEDY_SHARE * left, end)

    def load_best(self, threads: int, left: float, end: float | None) -> None:
        """Load the best schedule into the model; it becomes the fallback (``gang_values``)."""
        if self.best is None:
            return
        if not self.holds_best():
            self.solve_schedule_lp(self.best[1], max(RESTORE_SECONDS, self.time_for(COMPLETE_SHARE, left, end)), threads)
        self.gang_values = list(self.best[1])
        self.search_objective = self.best[0]

    def load_fallback(self, threads: int, end: float) -> bool:
        """The gang heuristic's schedule loaded into the model now (``gang_fallback``), timed as a
        schedule LP; the start pending for the MIP proper is kept for it. Like the fallback after
        the MIP, it may overrun ``end`` a little (at most ``RESTORE_SECONDS``) rather than lose
        the schedule."""
        pending, self.solver.pending = self.solver.pending, None
        t0 = time.perf_counter()
        try:
            return self.gang_fallback(threads, max(RESTORE_SECONDS, end - t0))
        finally:
            self.solver.pending = pending
            self.longest_restore = max(self.longest_restore, time.perf_counter() - t0)

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
                                    time_limit=time_limit,
                                    solver_options={"primal_feasibility_tolerance": FEASIBILITY_TOLERANCE,
                                                    "mip_feasibility_tolerance": FEASIBILITY_TOLERANCE,
                                                    "random_seed": 0, "threads": threads})
            ok = _status(res) == "optimal"
            if ok:
                res.solution_loader.load_vars()
        finally:
            for v, lb, ub in saved:
                v.setlb(lb)
                v.setub(ub)
        return ok

    @staticmethod
    def out_of_time(result: PortfolioResult, time_limit: float, spent: float) -> PortfolioResult:
        """The time limit ran out before the portfolio MIP could start: no schedule, exit 4."""
        result.status = "time_limit"
        result.message = (f"the time limit of {time_limit:g} s ran out before the portfolio MIP started "
                          f"(loading, building and warm-starting took {spent:.1f} s); no schedule yet, give it more time")
        return result

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
                                    solver_options={"primal_feasibility_tolerance": FEASIBILITY_TOLERANCE,
                                                                   "mip_feasibility_tolerance": FEASIBILITY_TOLERANCE,
                                                                   "random_seed": 0, "threads": threads})
            if _status(res) == "optimal" and (incumbent is None or res.incumbent_objective <= incumbent + 1e-9 * abs(incumbent)):
                res.solution_loader.load_vars()
                incumbent = res.incumbent_objective
        finally:
            for v, lb, ub in ints:
                v.setlb(lb)
                v.setub(ub)
        return incumbent

    def explain_infeasible(self, end: float | None = None, least_usd: float | None = None) -> str:
        """Why there is no schedule: the budget (the least cost without it, re-solved with the warm
        start and search; ``least_usd``: a bound over the budget that already proves it), or the
        jobs that cannot meet their deadline even alone (each solved as a one-job portfolio), or
        the shared GPUs. Every re-solve stops at ``end`` (a ``time.perf_counter`` instant)."""
        d = self.data

        def left() -> float | None:
            return None if end is None else end - time.perf_counter()

        out_of_time = "no schedule (the time limit left no time to find out why)"
        budget = d.portfolio.budget_usd
        if budget is not None:
            over = (f"no schedule within budget_usd ${budget:,.0f}" if least_usd is None else
                    f"no schedule within budget_usd ${budget:,.0f}: every schedule costs at least ${math.ceil(least_usd):,.0f} "
                    f"(the Lagrangian bound over the shared GPUs)")
            if left() is not None and left() < MIN_SOLVE_SECONDS:
                return over if least_usd is not None else out_of_time
            free = PortfolioModel(PortfolioData(d.portfolio.model_copy(update={"budget_usd": None}), d.instances))
            res = free.solve(time_limit=left(), explain=False)
            sep = ": " if least_usd is None else "; "
            if res.cost_usd is not None and res.status == "optimal":
                return (f"{over}{sep}the least-cost schedule costs ${res.cost_usd:,.0f}; "
                        f"a budget of ${math.ceil(res.cost_usd):,.0f} would let every job meet its deadline")
            if res.cost_usd is not None:
                within = "" if res.gap is None else f"within {100 * res.gap:.2f} % of the least, "
                return (f"{over}{sep}the cheapest schedule found costs ${res.cost_usd:,.0f} "
                        f"({within}not proven least within the time limit); a budget of ${math.ceil(res.cost_usd):,.0f} would let "
                        f"every job meet its deadline")
            if least_usd is not None:
                return f"{over}; no schedule without the budget was found in the time left"
        def fits_alone(j: int, deadline: int) -> bool | None:
            """Job j alone with this deadline bucket has a schedule (None: out of time)."""
            if left() is not None and left() < MIN_SOLVE_SECONDS:
                return None
            job = d.portfolio.jobs[j].model_copy(update={"deadline_bucket": deadline})
            one = Portfolio.model_validate({**d.portfolio.model_dump(), "jobs": [job.model_dump()], "budget_usd": None})
            sub = PortfolioModel(PortfolioData(one, [d.instances[j]]), symmetry_breaking=False)
            limit = EXPLAIN_SECONDS if left() is None else min(EXPLAIN_SECONDS, left())
            return sub.model is not None and sub.solve(time_limit=limit, warm_start=False, explain=False,
                                                       cost_floors=False).status != "infeasible"

        alone = []
        for j, job in enumerate(d.portfolio.jobs):
            ok = fits_alone(j, job.deadline_bucket)
            if ok is None:
                return out_of_time
            if not ok:
                alone.append(j)
        if alone:
            # for the first few, the earliest deadline bucket within the horizon that would do
            notes = []
            for j in alone[:EXPLAIN_JOBS]:
                later = next((b for b in range(d.portfolio.jobs[j].deadline_bucket + 1, len(d.buckets)) if fits_alone(j, b)), None)
                notes.append(f"{d.names[j]} (deadline_bucket {d.portfolio.jobs[j].deadline_bucket}: "
                             + (f"{later} would do)" if later is not None else
                                "no later bucket of the horizon would do: its quality target or GPU types)"))
            return (f"no schedule: {len(alone)} job(s) cannot finish by their deadline bucket even alone: "
                    f"{'; '.join(notes)}{' ...' if len(alone) > EXPLAIN_JOBS else ''}")
        return "no schedule: each job fits alone, but together they exceed the GPUs available; more on-demand, spot or reservable GPUs, or later deadlines, would let them"

    def extract(self, result: PortfolioResult) -> None:
        m, form, d = self.model, self.form, self.data
        plans, shares, hours = [], [], []
        for j, fd in enumerate(form.jobs):
            blk = m.job[j]
            r = next(i for i in blk.R if pyo.value(blk.recipe_chosen[i]) > 0.5)
            h = next(i for i in blk.H if pyo.value(blk.hardware_chosen[i]) > 0.5)
            t = next(i for i in blk.I if pyo.value(blk.interval_chosen[i]) > 0.5)
            plans.append(Plan.of(fd.recipes[r], fd.hardware[h], fd.intervals[t]))
            total = pyo.value(blk.interval_hours[h, t])
            spot = pyo.value(blk.spot_hours[h, t]) if (h, t) in blk.HS else 0.0
            shares.append(min(1.0, max(0.0, spot / total)) if total > 0 else 0.0)
            g = fd.hardware[h].gpu
            hours.append({(b, k): max(0.0, pyo.value(m.gpu_hours[j, b, gg, k])) for (jj, b, gg, k) in m.U if jj == j and gg == g})
            result.big_m_breaches += [f"{d.names[j]}: {x}" for x in big_m_breaches(fd, r, h)]
        reserved = {g: int(round(pyo.value(m.reserved[g]))) for g in m.G}
        result.reserved = reserved
        contracts: dict[str, dict[int, int]] = {}
        for (g, s) in m.GS:
            contracts.setdefault(g, {})[s] = d.node_gpus[g] * int(round(pyo.value(m.contract_nodes[g, s])))
        result.contracts = contracts
        result.jobs, result.cost_breakdown_usd, result.violations = evaluate_schedule(d, plans, shares, hours, reserved, form.evaluators,
                                                                                       contracts=contracts)
        result.cost_usd = sum(result.cost_breakdown_usd.values())
        H, B = d.bucket_hours, len(d.buckets)
        for g, n in reserved.items():
            usedh = sum(v for js in result.jobs if js.plan.gpu == g for (b, k), v in js.gpu_hours.items() if k == "reserved")
            # paid-for GPU-hours within the horizon: from bucket 0, or from each contract's start
            paid = n * H * B if g not in contracts else sum(c * H * (B - s) for s, c in contracts[g].items())
            result.utilisation[g] = usedh / paid if paid else None


# The most jobs one portfolio MIP is asked to plan. It has about 590 variables per job at
# 10 GPU types and 26 buckets (BENCHMARKS.md §3: 58,842 for 100 jobs) and 50 jobs already
# end above a 1 % gap after 120 s; 1,000 jobs (~590,000 variables) is past anything it can
# plan. `generate portfolio --jobs` has the same cap.
MAX_PORTFOLIO_JOBS = 1_000


def check_portfolio_size(data: PortfolioData) -> None:
    """Refuse, before any model is built, a portfolio with more than ``MAX_PORTFOLIO_JOBS``
    jobs or a job whose own model is over the single-job cap (``plan_space.check_model_size``),
    naming the job and the option that blows it up (issue 13 item 26)."""
    from planopt.job.plan_space import check_model_size
    if len(data.instances) > MAX_PORTFOLIO_JOBS:
        raise InputError(f"jobs: at most {MAX_PORTFOLIO_JOBS:,} in one portfolio (got {len(data.instances):,}); "
                         f"split it into portfolios that share no GPUs")
    for name, inst in zip(data.names, data.instances):
        try:
            check_model_size(inst)
        except InputError as exc:
            raise InputError(f"job {name!r}: {exc}") from None


def solve_portfolio(source: str | Path | dict[str, Any] | PortfolioData, time_limit: float | None = None,
                    rel_gap: float = RELATIVE_GAP, warm_start: bool = True, tight_linking: bool = True,
                    symmetry_breaking: bool = True, budget_usd: float | None = None,
                    started_at: float | None = None) -> PortfolioResult:
    """Solve a portfolio: reserved GPUs per type, each job's plan and schedule, least total cost.

    ``time_limit`` (seconds) bounds the whole call: loading, building, warm start, MIP, polish,
    counted from ``started_at`` (a ``time.perf_counter`` instant, default now: a caller that
    loaded the portfolio itself passes when it began); ``budget_usd`` caps the total spend (it
    replaces the portfolio's ``budget_usd``)."""
    started = time.perf_counter() if started_at is None else started_at
    check_time_limit(time_limit)
    data = load_portfolio(source)
    check_portfolio_size(data)
    pm = PortfolioModel(data, tight_linking=tight_linking, symmetry_breaking=symmetry_breaking, budget_usd=budget_usd)
    return pm.solve(time_limit=time_limit, rel_gap=rel_gap, warm_start=warm_start, started_at=started)
