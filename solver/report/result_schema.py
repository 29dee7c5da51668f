"""The published shape of a single-job result (``planopt solve JOB --json``, ``planopt evaluate JOB PLAN --json``).

``planopt schema --kind result`` prints this JSON Schema, so that a system that embeds planopt can
rely on the keys: ``version`` says which shape it is (``RESULT_VERSION`` in ``run.py``; bumped when
a key changes meaning or goes away; new keys may appear within a version). A solve prints a
:class:`SolveResultSchema`, an evaluation an :class:`EvaluateResultSchema`; the published schema
is either (``anyOf``). ``tests/solver/report/test_result_schema.py`` validates real outputs of every shipped
instance against these models, so the schema cannot drift from them.
"""

from __future__ import annotations

from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, RootModel

from planopt.job.model import RESULT_VERSION


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class RolloutOut(_Closed):
    """Separate rollout hardware: the GPUs generation runs on, apart from the stage's training GPUs."""

    gpu: str
    gpu_count: int


class TeacherTrainingOut(_Closed):
    """The teacher's own one-stage plan, when the teacher does not exist yet and is trained as a stage
    (``teacher.training``, ``models/cost/teacher_training.py``); its cost and wall hours are in the OPD stage's
    data cost and lead time."""

    method: Literal["sft", "rl"]
    steps: int
    samples_per_prompt: list[int]
    teacher_precision: None = None
    external_data_share: Optional[float]
    max_epochs: Optional[int]
    adapter: Literal["full", "lora"]
    lora_rank: Optional[int]
    gpu: str
    gpu_count: int
    checkpoint_interval_minutes: float
    cpu_offload: bool = False
    rollout: Optional[RolloutOut] = None
    staleness_steps: int = Field(0, ge=0)
    trainer: Optional[str] = None
    context_parallel: Optional[int] = None
    environment_pool: Optional[str] = None
    retention: Optional["RetentionOut"] = None


class StageOut(_Closed):
    """One stage of a plan: its recipe and the hardware it runs on."""

    method: Literal["sft", "rl", "opd"]
    steps: int
    samples_per_prompt: list[int] = Field(description="samples per prompt in each phase (RL, OPD); empty for SFT")
    teacher_precision: Optional[str]
    external_data_share: Optional[float]
    max_epochs: Optional[int]
    adapter: Literal["full", "lora"]
    lora_rank: Optional[int]
    cpu_offload: bool = Field(description="training state (parameters, gradients, optimiser) offloaded to host memory")
    gpu: str
    gpu_count: int
    rollout: Optional[RolloutOut] = Field(description="separate rollout hardware (version 2.1), or null: generation "
                                                      "runs on the stage's own GPUs")
    staleness_steps: int = Field(ge=0, description="asynchronous RL's or OPD's staleness in steps (version 2.1); 0: synchronous")
    trainer: Optional[str] = Field(None, description="the trainer the stage runs (training.trainer_options: megatron, "
                                   "fsdp, deepspeed-zero1..3); absent under the default trainer")
    context_parallel: Optional[int] = Field(None, ge=2, description="GPUs one training sequence is split over "
                                            "(training.context_parallel); absent without context parallelism")
    environment_pool: Optional[str] = Field(None, description="the pool of environment workers an on-policy stage's "
                                            "environments run on (environments.pools); absent without pools")
    teacher_precision_by_phase: Optional[list[str]] = Field(
        None, description="OPD under teacher.precision_by_phase: the teacher's precision in each sampling phase, the "
        "first teacher_precision's; absent when one precision scores every phase")
    pretraining_tokens: Optional[float] = Field(None, gt=0, description="tokens the student is first continue-pretrained "
                                                "on (continued_pretraining.tokens_options; the first stage only); "
                                                "absent without continued pre-training")
    teacher_training: Optional[TeacherTrainingOut] = Field(None, description="an OPD stage whose teacher does not exist "
                                                           "yet and is trained as a stage: the teacher's own plan; absent "
                                                           "otherwise (version 2.1)")


class PretrainingOut(_Closed):
    """Continued pre-training of the plan's student before its first stage (``models/cost/pretraining.py``)."""

    tokens: float = Field(description="tokens of domain text trained on")
    flops: float = Field(description="model FLOPs, 6·N·T (N the student's active parameters)")
    compute_hours: float = Field(description="hours of the first stage's GPUs it takes, before failures and checkpoints")
    data_usd: float = Field(description="the corpus: tokens / 1e9 × continued_pretraining.usd_per_billion_tokens (in the data line)")
    baseline_score: float = Field(description="the student's score on the task before")
    start_score: float = Field(description="the score the first stage starts from after it")


class RetentionOut(_Closed):
    """The chosen checkpoint retention (an instance with a ``retention`` block; ``models/cost/retention.py``)."""

    keep_last: int = Field(ge=1, description="newest checkpoints kept during the run")
    tier: Literal["hot", "cold"] = Field(description="their storage tier: hot (S3 Standard) or cold (Glacier Instant Retrieval)")
    milestones: int = Field(ge=0, description="milestones kept during the run (cold), the newest so many")


TeacherTrainingOut.model_rebuild()  # its retention is the class above
StageOut.model_rebuild()


class PlanOut(_Closed):
    """A plan, as ``planopt evaluate`` reads it back: one to three stages run one after another."""

    student: Optional[str] = Field(description="the student model trained (its catalog name), or null")
    stages: list[StageOut] = Field(min_length=1, max_length=3)
    checkpoint_interval_minutes: float
    retention: Optional[RetentionOut] = Field(description="the chosen checkpoint retention, or null when the instance has "
                                              "no ``retention`` block (``checkpointing.keep_last`` checkpoints kept hot)")


class MetricsOut(_Closed):
    """The plan's headline metrics."""

    cost_usd: float
    wall_hours: float
    quality: float
    forgetting_points: float
    gpu_hours: float
    memory_per_gpu_gb: float


class BindingRow(_Open):
    """One active limit: its value, the plan's value, whether it binds and, where computed, what relaxing it one step
    gives."""

    constraint: str
    limit: float
    plan_value: float
    binding: bool


class Relaxation(_Open):
    """A limit of an infeasible job to relax, and the value it would need for a plan to exist."""

    constraint: str = Field(description="the limit to relax")
    required: Optional[float] = Field(description="the value it would need for a plan to exist (hardware: the GPU "
                                      "count, or null where the change is not a number)")
    kind: Optional[Literal["hardware", "option"]] = Field(
        None, description="absent: a limit; hardware: no GPU option holds any recipe in memory, and this change of "
        "the options alone would (``job/hardware_fit.py``); option: lifting this option alone (a method's "
        "``training.methods.<m>.gpus``) makes a plan exist (``uncertainty/solve.py``)")
    change: Optional[str] = Field(None, description="hardware, option: what to set the field to or add to it (JSON text)")
    fits_on: Optional[str] = Field(None, description="hardware: the (GPU, count) choices that fit after the change")
    text: Optional[str] = Field(None, description="hardware, option: the change in one line")


class Risk(_Open):
    """The plan's estimate under uncertainty (its keys depend on --scenarios, --confidence and --cvar)."""

    scenarios: int
    seed: int
    percentiles: dict[str, dict[str, float]] = Field(description="metric -> {p10, p50, p90}")
    expected: dict[str, float]


class OfferOut(_Closed):
    """Where one GPU set of the plan is bought (``models/cost/hardware.plan_offers``)."""

    stage: int = Field(description="the stage, 1-based")
    role: Literal["training", "rollout"]
    gpu: str = Field(description="the hardware entry's key (GPU type, @offer when it has one)")
    count: int
    tier: Literal["on_demand", "spot"]
    usd_per_gpu_hour: float
    provider: Optional[str] = Field(description="the price catalog's provider; null for the instance's own or a reference price")
    region: Optional[str]
    node_gpus: Optional[int]
    interconnect: Optional[str]
    as_of: str = Field(description="the date the price's source gives")
    source: str


class EnvironmentsOut(_Closed):
    """A stage's environments on a pool of workers (``models/cost/environments.py``): its money is in the
    ``environments`` cost line and its hours in ``environment_wait``."""

    stage: int = Field(description="the stage, 1-based")
    pool: str = Field(description="the pool's name (environments.pools)")
    kind: Literal["cpu_sandbox", "gpu_host"]
    workers: int = Field(description="workers running environments at once")
    overlap: Literal["none", "agent_loop"] = Field(description="whether the environments run while the engine generates")
    environment_hours: float = Field(description="hours of environment work on the pool over the run (sum over steps "
                                     "of samples x CPU-seconds / workers)")
    pool_usd: float = Field(description="the pool held for the stage's training hours, USD")
    traffic_usd: float = Field(description="traffic and API calls per sample, USD")
    sandbox_usd: float = Field(description="sandboxes billed per CPU-hour used (0 with pools), USD")


class ReleasesOut(_Closed):
    """The plan run once per release (``models/cost/releases.py``): the cost of the first release, of each later
    one, and in all (the plan's cost, which the budget bounds)."""

    count: int = Field(description="releases the plan runs for")
    sft_labels_rebuilt_share: float = Field(description="share of the SFT labels bought again at each later release")
    first_release_usd: float = Field(description="the first release: the fixed part and one run's elastic part")
    later_release_usd: Optional[float] = Field(description="each later release: one run's elastic part less the "
                                               "SFT labels reused; null with one release")
    total_usd: float = Field(description="every release: the plan's cost_usd")


class CostSplit(_Closed):
    """The cost split into fixed and elastic (``models/cost/quantities.py``: the rule per line)."""

    fixed: float = Field(description="USD that does not scale with the plan's length or hours")
    elastic: float = Field(description="USD that does: the cost less the fixed part")
    fixed_by_line: dict[str, float] = Field(description="cost line -> its fixed part, USD")
    releases: Optional[ReleasesOut] = Field(None, description="with a releases block: the cost per release and in all")


QUANTITIES_DESCRIPTION = ("what the plan does in its own units (``models/cost/quantities.py``): tokens_sampled, "
                          "teacher_tokens_scored, reward_calls, labels_bought, checkpoints_written, checkpoints_kept, "
                          "checkpoints_archived, evaluations_run, evaluation_tokens_decoded, gpu_hours")


class LineReached(_Closed):
    """When the cumulative planned spend reaches a line."""

    hour: float = Field(description="hours since the plan's start")
    day: int = Field(description="the day, 1-based (day 1: hours [0, 24) of the start)")


class SpendLine(_Closed):
    """A line of spend: its amount and when the plan's cumulative planned spend reaches it (null: never)."""

    usd: float
    reached: Optional[LineReached]


class Spend(_Closed):
    """The budget and alert lines on the plan's spend timeline (``models/cost/spend.py``), at the plan's point
    estimate: how often its cost stays within the budget is ``risk``'s."""

    alert_share: float = Field(description="constraints.alert_share: the alert line's share of the budget")
    budget_usd: Optional[float] = Field(description="the budget; null: none, and no lines")
    total_usd: float = Field(description="the plan's planned spend, all of it (its cost)")
    last_hour: float = Field(description="the hour since the start of the last charge's end (storage kept after training)")
    lines: dict[Literal["alert", "budget"], SpendLine]


class SolveResultSchema(_Closed):
    """The JSON output of ``planopt solve JOB --json``."""

    version: Literal[RESULT_VERSION] = Field(description="the version of this shape")
    status: Literal["optimal", "infeasible", "time_limit", "error"]
    objective: str = Field(description="what the solve minimised (cost, time, forgetting) or maximised (quality)")
    gap: Optional[float] = Field(description="relative gap to the proven bound; null without a plan")
    plan: Optional[PlanOut]
    metrics: Optional[MetricsOut]
    cost_breakdown_usd: Optional[dict[str, float]]
    hours_breakdown: Optional[dict[str, float]]
    offers: Optional[list[OfferOut]] = Field(None, description="where each GPU set of the plan is bought; null without a plan")
    quantities: Optional[dict[str, float]] = Field(None, description=QUANTITIES_DESCRIPTION + "; null without a plan")
    cost_split_usd: Optional[CostSplit] = Field(None, description="fixed and elastic cost; null without a plan")
    build_seconds: float
    solve_seconds: float
    binding: Optional[list[BindingRow]] = Field(None, description="each limit: the plan's value, whether it binds, what relaxing it buys")
    relaxations: Optional[list[Relaxation]] = Field(None, description="infeasible: relaxations that would each make a plan exist")
    message: Optional[str] = None
    risk: Optional[Risk] = None
    spend: Optional[Spend] = Field(None, description="with a plan: the days its cumulative planned spend reaches the alert line and the budget")
    environments: Optional[list[EnvironmentsOut]] = Field(None, description="with environments.pools: each stage's pool "
                                                          "of environment workers and its money; absent otherwise")
    pretraining: Optional[PretrainingOut] = Field(None, description="a plan that continues pre-training its student: "
                                                  "what it costs and the score it starts from; absent otherwise")


class EvaluateResultSchema(_Closed):
    """The JSON output of ``planopt evaluate JOB PLAN --json``."""

    version: Literal[RESULT_VERSION] = Field(description="the version of this shape")
    plan: PlanOut
    fits_memory: bool
    metrics: Optional[MetricsOut] = Field(description="null when the plan does not fit in memory (it does no work)")
    feasible: bool
    violations: list[str]
    cost_breakdown_usd: Optional[dict[str, float]]
    hours_breakdown: Optional[dict[str, float]]
    flops: dict[str, float] = Field(description="FLOPs by phase")
    offers: list[OfferOut] = Field(description="where each GPU set of the plan is bought")
    quantities: Optional[dict[str, float]] = Field(None, description=QUANTITIES_DESCRIPTION + "; null when the plan does not fit")
    cost_split_usd: Optional[CostSplit] = Field(None, description="fixed and elastic cost; null when the plan does not fit")
    risk: Optional[Risk] = None
    environments: Optional[list[EnvironmentsOut]] = Field(None, description="with environments.pools: each stage's pool "
                                                          "of environment workers and its money; absent otherwise")
    pretraining: Optional[PretrainingOut] = Field(None, description="a plan that continues pre-training its student: "
                                                  "what it costs and the score it starts from; absent otherwise")


class ResultSchema(RootModel[Union[SolveResultSchema, EvaluateResultSchema]]):
    """A single-job result: a solve's or an evaluation's."""


def result_json_schema() -> dict[str, Any]:
    """The JSON Schema of ``planopt solve/evaluate JOB --json`` (``planopt schema --kind result``)."""
    schema = ResultSchema.model_json_schema()
    schema["$id"] = f"planopt/result/{RESULT_VERSION}"
    schema["title"] = "planopt single-job result"
    return schema
