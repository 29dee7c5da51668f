"""The published shape of a portfolio result (``planopt solve portfolio.json --json``).

``planopt schema --kind portfolio-result`` prints this JSON Schema, so that a
procurement system can rely on the keys: ``version`` says which shape it is
(``RESULT_VERSION`` in ``portfolio.py``; bumped when a key changes meaning or
goes away). Every number is finite or null (a null says why where it can be
surprising, as ``bound_missing_reason``). ``tests/solver/report/test_portfolio_result_schema.py``
validates real outputs against these models, so the schema cannot drift from them.
"""

from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

from planopt.portfolio.solve import RESULT_VERSION
from planopt.report.result_schema import Spend

Tier = Literal["reserved", "on_demand", "spot"]


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ProcurementRow(_Closed):
    """One contract: a reservation for its term, or the on-demand or spot GPUs of one bucket."""

    provider: str = Field(description="the seller ('unspecified' when the portfolio gives prices without a provider)")
    region: Optional[str] = Field(description="the provider's region (null without a provider); (provider, region, gpu) is one pool")
    gpu: str = Field(description="the catalog GPU name")
    tier: Tier
    term: Optional[str] = Field(description="reservations: 1m, 1y, 3y, or 'horizon' (no term given); null for on demand and spot")
    start_bucket: int
    end_bucket: int = Field(description="last bucket of the horizon covered (a term may run past the horizon: committed_hours)")
    gpus: int = Field(description="GPUs reserved (whole nodes), or the most the jobs hold at once in the bucket")
    usd_per_gpu_hour: Optional[float]
    committed_hours: Optional[float] = Field(description="reservations: hours each GPU is paid for (whole terms)")
    commitment_usd: Optional[float] = Field(description="reservations: the full cost of the commitment, used or not")
    utilisation: Optional[float] = Field(description="reservations: GPU-hours run / GPU-hours of the horizon")


class ScheduleRow(_Closed):
    """A job holds ``gpus`` GPUs of one pool in ``bucket`` and runs ``hours`` there."""

    bucket: int
    provider: str
    region: Optional[str] = Field(description="the provider's region (null without a provider)")
    gpu: str = Field(description="the catalog GPU name; the job's plan.gpu names the pool (NAME@provider/region when the "
                                 "portfolio lists the GPU type more than once)")
    tier: Tier
    gpus: int = Field(description="the gang's whole GPU count (gang scheduling)")
    hours: float = Field(description="hours the gang runs in the bucket on this pool, at most bucket_hours")
    gpu_hours: float = Field(description="gpus x hours")
    stage: Optional[int] = Field(description="the plan's stage (1-based) whose GPUs these are; null for a teacher's own "
                                             "plan, trained before the stages (since version 1.4)")
    role: Literal["training", "rollout", "teacher", "teacher_rollout"] = Field(
        description="which of the stage's GPUs: its training GPUs, its separate rollout GPUs (held with them: the same "
                    "bucket, tier and hours), or its teacher's (since version 1.4)")


class Gang(_Closed):
    """A set of GPUs a job's plan holds together: a stage's training or rollout GPUs, or its teacher's."""

    stage: Optional[int] = Field(description="1-based; null for the teacher's plan")
    role: Literal["training", "rollout", "teacher", "teacher_rollout"]
    provider: str
    region: Optional[str]
    gpu: str = Field(description="the catalog GPU name")
    pool: str = Field(description="the portfolio's GPU type key (NAME@provider/region for an offer)")
    gpus: int
    spot_share: float = Field(description="share of the gang's compute hours run on spot")
    gpu_hours: float


class JobMetrics(BaseModel):
    """A job's metrics in the schedule: the single-job summary plus its compute and non-compute money and spot
    share."""

    model_config = ConfigDict(extra="allow")   # the single-job evaluator's summary may carry more

    cost_usd: float
    wall_hours: float
    quality: float
    gpu_hours: float
    compute_usd: float
    noncompute_usd: float
    spot_share: float


class JobResult(_Closed):
    """One job of the schedule: its plan and metrics, its window and the buckets it runs in."""

    name: str
    plan: dict[str, Any] = Field(description="the job's plan, as `planopt solve JOB --json` prints it")
    metrics: JobMetrics
    release_bucket: int
    deadline_bucket: int
    start_bucket: Optional[int]
    finish_bucket: Optional[int]
    gangs: list[Gang] = Field(description="the GPUs the plan holds together, in the order they run (since version 1.4)")
    schedule: list[ScheduleRow]


class JobRisk(_Closed):
    """One job's risk under the capacity scenarios."""

    name: str
    share_meeting_deadline: float = Field(description="share of the scenarios in which the job's work is done by its deadline bucket")
    expected_late_gpu_hours: float = Field(description="mean GPU-hours of work left after the deadline bucket")


class OutOfSample(_Closed):
    """The chance-constrained schedule checked on fresh capacity scenarios, drawn with a seed of their own."""

    scenarios: int
    seed: int
    share_undisrupted: float
    share_meeting_all_deadlines: float = Field(description="under the recourse")


class PortfolioChance(_Closed):
    """With --confidence: the schedule runs undisrupted in at least scenarios_needed of the in-sample scenarios."""

    confidence: float
    in_sample_target: float = Field(description="the in-sample share solved for: the confidence, raised by the guard when "
                                                "the fresh share fell short")
    guard_rounds: int
    guard: Optional[str] = Field(description="why the guard stopped short of the confidence out of sample (null: it did not)")
    scenarios_needed: int
    in_sample_share_undisrupted: float = Field(description="every on-demand gang obtainable and no spot run preempted, "
                                                           "recomputed from the schedule")
    out_of_sample: OutOfSample


class PortfolioRisk(_Closed):
    """The schedule replayed under capacity scenarios (spot preemption, on-demand shortfall) with a fixed recourse."""

    scenarios: int
    seed: int
    recourse: str = Field(description="the recourse rule the replay applies (solver/portfolio/risk.py)")
    share_meeting_all_deadlines: float
    jobs: list[JobRisk]
    percentiles: dict[str, dict[str, float]] = Field(description="cost_usd: p10, p50, p90 over the scenarios")
    expected: dict[str, float] = Field(description="cost_usd, and recourse_usd: on-demand bought for recovery")
    chance: Optional[PortfolioChance] = Field(None, description="with --confidence: what the chance-constrained schedule holds")


class PortfolioResultSchema(_Closed):
    """The JSON output of a portfolio solve."""

    version: Literal[RESULT_VERSION] = Field(description="the version of this shape")
    status: Literal["optimal", "infeasible", "time_limit", "error"]
    gap: Optional[float] = Field(description="relative gap to the proven bound; null when no bound or no schedule")
    name: str
    bucket_hours: float
    buckets: int
    procurement: list[ProcurementRow]
    reserved_gpus: dict[str, int]
    jobs: list[JobResult]
    cost_usd: Optional[float]
    cost_breakdown_usd: dict[str, float]
    mip_cost_usd: Optional[float]
    bound_usd: Optional[float]
    bound_missing_reason: Optional[str]
    build_seconds: float
    solve_seconds: float
    warm_start_seconds: float
    violations: list[str]
    message: str
    risk: Optional[PortfolioRisk] = Field(None, description="with --scenarios: the schedule's risk under capacity scenarios (since 1.1)")
    spend: Optional[Spend] = Field(None, description="with a schedule: the days its cumulative planned spend reaches the alert line and the budget (since 1.3)")


def portfolio_result_json_schema() -> dict[str, Any]:
    """The JSON Schema of ``planopt solve portfolio.json --json`` (``planopt schema --kind portfolio-result``)."""
    schema = PortfolioResultSchema.model_json_schema()
    schema["$id"] = f"planopt/portfolio-result/{RESULT_VERSION}"
    return schema
