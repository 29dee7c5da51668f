"""What a portfolio solve returns: each job's plan and schedule, the procurement, the costs.

:class:`PortfolioResult` is the Python API's result (``planopt.solve_portfolio``) and, through
``to_dict``, the published JSON output (``planopt schema --kind portfolio-result``, version
``RESULT_VERSION``); :class:`JobSchedule` is one job's part of it. Every number in them is
recomputed outside the MIP (``solver/portfolio/evaluate.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Optional

import pandas as pd

from planopt.models.cost.evaluator import Metrics
from planopt.models.schema.plan import Plan
from planopt.models.schema.portfolio import PortfolioData

from planopt.portfolio.replay import TIER_ORDER

RESULT_VERSION = "1.4"  # of the JSON output; minor: keys added (1.1: risk; 1.2: region in procurement and schedule rows; 1.3: spend; 1.4: a job's gangs, and stage and role in its schedule rows), major: a key changes meaning or goes away


@dataclass
class GangSchedule:
    """One gang of a job (``models/cost/gangs.py``: a stage's training or rollout GPUs, or its teacher's): the pool it
    holds, its count, its share of compute hours on spot and its GPU-hours per (bucket, tier)."""

    stage: Optional[int]             # the plan's stage, 0-based; None: the teacher's plan
    role: str                        # training | rollout | teacher | teacher_rollout
    pool: str                        # the portfolio's GPU type key (NAME@provider/region for an offer)
    count: int
    spot_share: float
    gpu_hours: dict[tuple[int, str], float]   # (bucket, tier) -> GPU-hours
    provider: str = "unspecified"
    region: Optional[str] = None
    gpu_type: Optional[str] = None   # the catalog GPU of the pool (none: the pool's name)

    def rows(self) -> list[dict[str, Any]]:
        """One schedule row per (bucket, tier) it runs in: it holds ``gpus`` (its count) for ``hours``."""
        n = self.count
        return [{"bucket": b, "provider": self.provider, "region": self.region, "gpu": self.gpu_type or self.pool,
                 "tier": k, "gpus": n, "hours": v / n, "gpu_hours": v,
                 "stage": None if self.stage is None else self.stage + 1, "role": self.role}
                for (b, k), v in sorted(self.gpu_hours.items(), key=lambda item: (item[0][0], TIER_ORDER.index(item[0][1])))]

    def to_dict(self) -> dict[str, Any]:
        """The gang's entry of a job's ``gangs`` (its stage 1-based, null for the teacher's)."""
        return {"stage": None if self.stage is None else self.stage + 1, "role": self.role, "provider": self.provider,
                "region": self.region, "gpu": self.gpu_type or self.pool, "pool": self.pool, "gpus": self.count,
                "spot_share": self.spot_share, "gpu_hours": sum(self.gpu_hours.values())}


@dataclass
class JobSchedule:
    """One job's part of a portfolio: its plan, metrics, buckets, gangs and money."""

    name: str
    plan: Plan
    metrics: Metrics                 # the evaluator's single-job metrics of the plan (on-demand price of bucket 0)
    gangs: list[GangSchedule]
    release_bucket: int
    deadline_bucket: int
    start_bucket: Optional[int]
    finish_bucket: Optional[int]
    compute_usd: float               # on-demand and spot at their prices, reserved hours at the reserved price
    noncompute_usd: float
    wall_hours: float                # every gang's lead time and training hours, spot overhead included
    spot_share: float = 0.0          # share of the compute hours (of its training and teacher gangs) run on spot
    flat: bool = True                # the plan is published in the flat one-stage shape (one stage, no choice of student)

    @property
    def cost_usd(self) -> float:
        """Compute plus non-compute money of the job, USD."""
        return self.compute_usd + self.noncompute_usd

    @property
    def gpu_hours(self) -> dict[tuple[int, str], float]:
        """(bucket, tier) -> GPU-hours of every gang."""
        out: dict[tuple[int, str], float] = {}
        for gang in self.gangs:
            for key, v in gang.gpu_hours.items():
                out[key] = out.get(key, 0.0) + v
        return out

    def to_dict(self) -> dict[str, Any]:
        """The job's entry of a portfolio result's JSON (finite numbers only)."""
        metrics = {**self.metrics.summary(), "wall_hours": self.wall_hours, "gpu_hours": sum(self.gpu_hours.values()),
                   "cost_usd": self.cost_usd, "compute_usd": self.compute_usd, "noncompute_usd": self.noncompute_usd,
                   "spot_share": self.spot_share}
        return {"name": self.name, "plan": self.plan.flat_dict() if self.flat else self.plan.to_dict(), "metrics": metrics,
                "start_bucket": self.start_bucket, "finish_bucket": self.finish_bucket,
                "release_bucket": self.release_bucket, "deadline_bucket": self.deadline_bucket,
                "gangs": [g.to_dict() for g in self.gangs], "schedule": self.schedule_rows()}

    def schedule_rows(self) -> list[dict[str, Any]]:
        """One row per gang, bucket and tier the job runs in, in time order."""
        rows = [row for g in self.gangs for row in g.rows()]
        return sorted(rows, key=lambda r: (r["bucket"], TIER_ORDER.index(r["tier"])))


@dataclass
class PortfolioResult:
    """A solved portfolio: status and gap, reservations and their use, each job's schedule, risk and timings."""

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
    search_seconds: float = 0.0         # the primal search (search.py), part of solve_seconds
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
    spend: Optional[dict[str, Any]] = None  # the budget and alert lines (``portfolio/spend.py``), with a schedule

    @classmethod
    def of(cls, d: PortfolioData, build_seconds: float = 0.0, status: str = "infeasible") -> "PortfolioResult":
        """A result with no schedule yet, carrying the portfolio's prices, terms and contracts."""
        return cls(status, name=d.portfolio.name, buckets=len(d.buckets), bucket_hours=d.bucket_hours,
                   build_seconds=build_seconds, gpu_types=list(d.gpus), providers=dict(d.provider),
                   regions=dict(d.region), gpu_names=dict(d.gpu_type),
                   reserved_price=dict(d.reserved_price), bucket_price={"on_demand": d.od_price, "spot": d.spot_price},
                   reserved_term=dict(d.reserved_term), committed_hours=dict(d.committed_hours),
                   reserved_from=dict(d.reserved_from),
                   reserved_lead={g: d.gpu[g].reserved_lead_buckets for g in d.gpus},
                   committed_hours_from={g: dict(v) for g, v in d.committed_hours_from.items()})

    @property
    def has_plan(self) -> bool:
        """Whether the result holds a schedule for the jobs."""
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
            for gang in js.gangs:
                for (b, k) in gang.gpu_hours:
                    if k != "reserved":
                        held[b, gang.pool, k] = held.get((b, gang.pool, k), 0) + gang.count
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
                "violations": self.violations, "message": self.message, "risk": self.risk, "spend": self.spend}

    def jobs_frame(self) -> pd.DataFrame:
        """One row per job: its plan, buckets, GPU-hours, quality, forgetting, wall hours and money."""
        cols = ["job", "method", "gpu", "gpu_count", "steps", "checkpoint_interval_minutes", "release_bucket", "start_bucket",
                "finish_bucket", "deadline_bucket", "spot_share", "gpu_hours", "quality", "forgetting_points", "wall_hours",
                "compute_usd", "noncompute_usd", "cost_usd"]
        rows = [(j.name, "+".join(j.plan.methods), j.plan.gpu, j.plan.gpu_count, sum(s.recipe.steps for s in j.plan.stages),
                 j.plan.checkpoint_interval_minutes,
                 j.release_bucket, j.start_bucket, j.finish_bucket, j.deadline_bucket, j.spot_share, sum(j.gpu_hours.values()),
                 j.metrics.quality, j.metrics.forgetting_points, j.wall_hours, j.compute_usd, j.noncompute_usd, j.cost_usd)
                for j in self.jobs]
        return pd.DataFrame(rows, columns=cols)

    def schedule_frame(self) -> pd.DataFrame:
        """One row per job, gang, bucket and tier: the GPU-hours the gang runs there."""
        rows = [(j.name, None if g.stage is None else g.stage + 1, g.role, g.pool, b, k, v) for j in self.jobs
                for g in j.gangs for (b, k), v in sorted(g.gpu_hours.items())]
        return pd.DataFrame(rows, columns=["job", "stage", "role", "gpu", "bucket", "tier", "gpu_hours"])

    def procurement_frame(self) -> pd.DataFrame:
        """One row per GPU type: reserved GPUs and their utilisation."""
        rows = [(g, self.reserved.get(g, 0), self.utilisation.get(g)) for g in self.gpu_types]
        return pd.DataFrame(rows, columns=["gpu", "reserved", "utilisation"])
