"""The instance schema: one post-training job, its options and its limits.

Units are in the field names (``_usd``, ``_hours``, ``_gb``, ``_tflops``,
``_b`` for billions of parameters). Unknown fields are rejected, so a typo
never silently falls back to a default. Every default is either a choice the
user makes (an option list) or a sourced coefficient from ``defaults.py``.
``planopt schema`` prints the JSON Schema of :class:`Instance`.

Input shapes only: the validators here check one field, or fields against each other and the catalog. The checks that need the domain (the uncertainty model's parameter names, the physics of
separate rollout hardware and asynchronous RL, retention's cover rule, a teacher trained as a stage)
and the refusals of combinations not modelled yet run after parsing, in ``models/consistency.py``
(``planopt.instance.parse_instance`` and ``load_instance`` run both).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Annotated, Any, ClassVar, Literal, Optional, Union

from pydantic import Field, PrivateAttr, ValidationError, ValidationInfo, field_validator, model_validator

from planopt.models.catalog import defaults as d
from planopt.models.catalog import CatalogLookupError, GpuSpec, HostLinkedGpuSpec, find_gpu, find_model
from planopt.models.catalog.prices import PriceRow, load_prices
from planopt.models.schema import price_catalog
from planopt.models.schema.hf_config import HfConfigError, architecture_from_hf_config, read_hf_config
from planopt.models.schema.base import (  # noqa: F401 (the shared types, re-exported)
    GeneralScoreFamily, LargeCount, MAX_COUNT, MAX_MAGNITUDE, MAX_PARAMS_B, MAX_SCORE, MAX_STAGES, METHODS, MIN_POSITIVE, Method,
    NonNegativeFloat, NonNegativeInt, Objective, ParamsB, PositiveFloat, PositiveInt, Precision, Score, Share, Strict, Labels)
from planopt.models.schema.pretraining import ContinuedPretraining
from planopt.models.schema.releases import Releases
from planopt.models.schema.environments import EnvironmentPool, Environments  # noqa: F401 (re-exported)
from planopt.models.schema.checkpointing import Checkpointing, Retention  # noqa: F401 (re-exported)
from planopt.models.schema.priors import LoraShares, MethodPrior, Priors, family_priors, family_scaled_priors  # noqa: F401
from planopt.models.schema.training import (  # noqa: F401 (re-exported: the instance's training block)
    MethodOptions, Trainer, Training, describe_trainer, trainer_zero_stage)

class Architecture(Strict):
    """A transformer: a catalog ``preset`` name, a Hugging Face ``hf_config``, explicit fields, or one of the first
    two with fields (fields override)."""

    preset: Optional[str] = Field(None, description="model name from the catalog, e.g. 'Qwen3-8B' (`planopt catalog --models`)")
    hf_config: Optional[Union[str, dict[str, Any]]] = Field(
        None, description="a Hugging Face config.json: its path (relative to the instance file's folder; read only from "
        "an instance file) or its object. Read for the families of models/schema/hf_config.py (dense llama, mistral, "
        "qwen2, qwen3; MoE mixtral, qwen2_moe, qwen3_moe, deepseek_v3); once read, the fields below hold its values")
    params_b: Optional[ParamsB] = Field(None, description="total parameters, billions")
    active_params_b: Optional[ParamsB] = Field(None, description="parameters active per token, billions (MoE)")
    layers: Optional[PositiveInt] = None
    hidden: Optional[PositiveInt] = None
    kv_heads: Optional[PositiveInt] = None
    head_dim: Optional[PositiveInt] = None

    FIELDS: ClassVar[tuple[str, ...]] = ("params_b", "active_params_b", "layers", "hidden", "kv_heads", "head_dim")

    @model_validator(mode="after")
    def _resolve(self, info: ValidationInfo) -> "Architecture":
        fields = self.FIELDS
        values = {f: getattr(self, f) for f in fields}
        if self.preset is not None and self.hf_config is not None:
            raise ValueError("give one of 'preset' and 'hf_config', not both")
        if self.hf_config is not None:
            config = self.hf_config
            if isinstance(config, str):
                config = read_hf_config(config, (info.context or {}).get("base_dir"))
            try:
                found = architecture_from_hf_config(config)
            except HfConfigError as exc:
                raise ValueError(f"hf_config: {exc}") from None
            for f in fields:
                if values[f] is None:
                    object.__setattr__(self, f, found[f])
            object.__setattr__(self, "hf_config", None)   # read once: the fields hold it (a copy re-validates alone)
        if self.preset is not None:
            try:
                spec = find_model(self.preset)
            except CatalogLookupError as exc:
                raise ValueError(str(exc)) from None
            for f in fields:
                if values[f] is None:
                    object.__setattr__(self, f, getattr(spec, f))
            object.__setattr__(self, "preset", spec.name)
        if self.active_params_b is None and self.params_b is not None:
            object.__setattr__(self, "active_params_b", self.params_b)
        missing = [f for f in fields if getattr(self, f) is None]
        if missing:
            raise ValueError(f"needs a 'preset', an 'hf_config' or the fields {', '.join(missing)}")
        if self.active_params_b > self.params_b:
            raise ValueError("active_params_b must not exceed params_b")
        return self

    @property
    def is_moe(self) -> bool:
        """True for a mixture of experts: fewer parameters active per token than in total."""
        return self.active_params_b < self.params_b


class Task(Strict):
    """What is trained for and what must not be lost."""

    baseline_score: Score = Field(description="target-task score before post-training")
    score_ceiling: Annotated[float, Field(ge=MIN_POSITIVE, le=MAX_SCORE)] = Field(100.0, description="best score the benchmark allows")
    general_score_baseline: Annotated[float, Field(ge=MIN_POSITIVE, le=MAX_SCORE)] = Field(description="general-capability score (e.g. IF-eval) before training; forgetting is measured against it")
    general_score_family: GeneralScoreFamily = Field(d.GENERAL_SCORE_FAMILY_DEFAULT, description="the family of the general-capability score, whose forgetting share and mix curve apply (defaults.GENERAL_SCORE_FAMILIES: 'instruction_following' for IF-eval-like scores, 'knowledge' for MMLU, ARC, HellaSwag, WinoGrande, TriviaQA, TruthfulQA)")
    prompt_tokens: NonNegativeFloat = Field(description="mean prompt tokens per sample")
    response_tokens: PositiveFloat = Field(description="mean response tokens per sample")
    max_response_tokens: PositiveFloat = Field(description="longest response allowed; the rollout waits for it")
    prompts_available: Annotated[int, Field(ge=1, le=int(MAX_MAGNITUDE))] = Field(description="distinct task prompts for RL/OPD; drawing more than this repeats prompts, each repeat worth less (learning.effective_draws)")

    @model_validator(mode="after")
    def _check(self) -> "Task":
        if self.max_response_tokens < self.response_tokens:
            raise ValueError("max_response_tokens must be at least response_tokens")
        if self.baseline_score > self.score_ceiling:
            raise ValueError("baseline_score must not exceed score_ceiling")
        return self


class SftData(Strict):
    """The SFT data: examples owned, the price and pace of buying more, their length, the data mix and how examples
    fill sequences."""

    examples_available: LargeCount = Field(description="labeled external examples already owned")
    usd_per_labeled_example: NonNegativeFloat
    labeled_examples_per_day: PositiveFloat = Field(description="labeling throughput for examples still to buy")
    example_tokens: PositiveFloat = Field(description="tokens per SFT example (prompt + answer)")
    external_data_share_options: list[Share] = Field([1.0], min_length=1, description="share of new-domain data in the SFT mix; the rest is general data")
    sequence_length_tokens: Optional[PositiveFloat] = Field(None, description="training sequence (truncation or packing) length; default example_tokens (no padding)")
    packing: bool = Field(False, description="examples packed into full sequences of sequence_length_tokens; otherwise each runs at its own length, padded to sequence_length_tokens when a micro-batch holds several")
    truncation: bool = Field(False, description="examples longer than sequence_length_tokens are cut to it")
    micro_batch_examples: PositiveInt = Field(1, description="examples per GPU per micro-step when not packing")
    max_epochs_options: list[PositiveInt] = Field(list(d.SFT_MAX_EPOCHS_OPTIONS_DEFAULT), min_length=1, description="a plan's choice of the most passes over each distinct new-domain example: owned examples are reused up to this many epochs before any is bought (1: buy every example beyond those owned)")

    @model_validator(mode="after")
    def _shares(self) -> "SftData":
        if any(not (0.0 < s <= 1.0) for s in self.external_data_share_options):
            raise ValueError("external_data_share_options must lie in (0, 1]")
        if (self.sequence_length_tokens is not None and self.example_tokens > self.sequence_length_tokens
                and not self.truncation):
            raise ValueError(f"example_tokens {self.example_tokens:g} is above sequence_length_tokens "
                             f"{self.sequence_length_tokens:g}; set truncation: true or a longer sequence")
        return self


class Reward(Strict):
    """What scoring RL samples costs: a verifier per sample, a reward model on the GPUs, a one-off design."""

    verifier_usd_per_sample: NonNegativeFloat = 0.0
    reward_model: Optional[Architecture] = Field(None, description="a reward model scores every RL sample on the GPUs")
    design_usd: NonNegativeFloat = Field(0.0, description="one-off cost of building the reward (RL only)")


class TeacherTraining(Strict):
    """How a teacher that does not exist yet is trained, as a stage of its own (``teacher_training.py``): a
    one-stage job on the teacher's architecture from ``baseline_score`` up to ``teacher.score``, priced by
    the same evaluator; null (the default) keeps ``training_usd`` / ``training_hours`` as a lump."""

    baseline_score: Score = Field(description="the teacher's score on the target task before its training")
    methods: dict[Method, MethodOptions] = Field(min_length=1, description="how the teacher may be trained: 'sft' "
                                                 "and/or 'rl' with their steps_options and prompts_per_step (no 'opd': "
                                                 "there is no teacher of the teacher)")
    gpus: Optional[list["GpuOption"]] = Field(None, min_length=1, description="GPUs the teacher's job may use "
                                              "(null: hardware.gpus)")


class Teacher(Strict):
    """The OPD teacher: its architecture, its score, its precisions, and how it is obtained when it does not exist
    yet."""

    architecture: Architecture
    score: Score = Field(description="teacher's score on the target task")
    exists: bool = True
    training_usd: NonNegativeFloat = Field(0.0, description="cost to obtain the teacher when it does not exist")
    training_hours: NonNegativeFloat = Field(0.0, description="lead time to obtain the teacher when it does not exist")
    precision_options: list[Precision] = Field(["bf16"], min_length=1)
    prefix_caching: bool = Field(False, description="true: the teacher's engine caches a prompt's prefix (vLLM's "
                                 "automatic prefix caching, SGLang's RadixAttention), so it scores a prompt once per "
                                 "group of samples instead of once per sample")
    precision_by_phase: bool = Field(False, description="true: an OPD plan may score with a different precision of "
                                     "precision_options in each sampling phase (training.phases); false: one precision "
                                     "for the whole run")
    training: Optional[TeacherTraining] = Field(None, description="train the missing teacher as a stage the plan "
                                                "chooses (see TeacherTraining) instead of the training_usd / "
                                                "training_hours lump")


class GpuOption(Strict):
    """A GPU type the job may use. Spec fields override the catalog entry; a
    name the catalog does not know needs every spec field and a price."""

    name: str
    offer: Optional[str] = Field(
        None, pattern=r"^[A-Za-z0-9_:/-]+$",
        description="a label that tells this entry apart from another entry of the same GPU type (two providers' or "
                    "regions' offers at their own prices, e.g. 'aws/us-east-1'): the plan names it NAME@offer and the "
                    "MIP chooses between them; none: the GPU type is listed once")
    provider: Optional[str] = Field(
        None, description="a provider of the price catalog (`planopt catalog`): the price is its offer's at hardware.pricing's "
                          "tier, the offer label defaults to provider/region, and an offer whose nodes are linked by "
                          "ethernet only takes counts within one node")
    region: Optional[str] = Field(None, description="the provider's region (default: the first one the price catalog lists)")
    tier: Optional[Literal["on_demand", "spot"]] = Field(
        None, description="this entry's pricing tier (default hardware.pricing's; under pricing 'either' an entry "
                          "without one stands for both, the spot one keyed NAME@spot); spot is priced with preemption")
    counts: list[PositiveInt] = Field(min_length=1)
    available_gpus: Optional[PositiveInt] = Field(None, description="cap on count from availability")
    price_usd_per_gpu_hour: Optional[PositiveFloat] = Field(None, description="overrides the catalog price")
    bf16_tflops: Optional[PositiveFloat] = None
    fp8_tflops: Optional[PositiveFloat] = None
    hbm_gb: Optional[PositiveFloat] = None
    hbm_tbps: Optional[PositiveFloat] = None
    intra_node_gb_per_s: Optional[PositiveFloat] = None
    inter_node_gb_per_s: Optional[PositiveFloat] = None
    gpus_per_node: Optional[PositiveInt] = None
    host_link_gb_per_s: Optional[PositiveFloat] = Field(
        None, description="one direction of the link between one GPU and host memory, GB/s (CPU offload moves the "
                          "training state over it); default the catalog's figure (defaults.HOST_LINK_GB_PER_S_PER_GPU)")

    SPEC_FIELDS: ClassVar[tuple[str, ...]] = ("bf16_tflops", "fp8_tflops", "hbm_gb", "hbm_tbps",
                                              "intra_node_gb_per_s", "inter_node_gb_per_s", "gpus_per_node")

    @model_validator(mode="after")
    def _known(self) -> "GpuOption":
        try:
            object.__setattr__(self, "name", find_gpu(self.name).name)
        except CatalogLookupError as exc:
            required = [f for f in self.SPEC_FIELDS if f != "fp8_tflops"] + ["price_usd_per_gpu_hour"]
            if any(getattr(self, f) is None for f in required):
                raise ValueError(f"{exc} (or give a custom GPU all of {', '.join(required)})") from None
        if self.provider is not None:
            self._from_price_catalog()
        elif self.region is not None:
            raise ValueError("region: needs a provider (one of the price catalog's, see `planopt catalog`)")
        return self

    def _from_price_catalog(self) -> None:
        """The provider's offer: its region, the offer label, and the one-node rule of an ethernet offer
        (the price is set by ``Hardware``, which knows the pricing tier)."""
        from planopt.models.catalog.prices import provider_offer
        offered = provider_offer(self.provider, self.name, self.region)
        row = next(iter(offered.values()))
        object.__setattr__(self, "region", row.region)
        if self.offer is None:
            object.__setattr__(self, "offer", f"{self.provider}/{row.region}")
        multi = [n for n in self.counts if n > row.node_gpus]
        if row.interconnect == "ethernet" and multi:
            raise ValueError(f"counts: {self.provider} links its {row.node_gpus}-GPU {self.name} nodes by ethernet only, and "
                             f"multi-node training needs InfiniBand-class links; expected counts up to {row.node_gpus}, got {multi}")

    def catalog_price(self, tier: str, rows: tuple[PriceRow, ...]) -> Optional[float]:
        """The provider's price of this GPU at ``tier`` (on_demand or spot) among ``rows`` (``Hardware.price_rows``);
        None without a provider or such a tier."""
        from planopt.models.catalog.prices import offers
        if self.provider is None:
            return None
        row = offers(self.provider, self.name, self.region, rows).get(tier)
        return None if row is None else row.usd_per_gpu_hour

    @property
    def key(self) -> str:
        """How plans and every table name this entry: the GPU name, with ``@offer`` when it has one."""
        return self.name if self.offer is None else f"{self.name}@{self.offer}"

    def _spec(self) -> GpuSpec:
        overrides = {f: getattr(self, f) for f in self.SPEC_FIELDS if getattr(self, f) is not None}
        try:
            base = find_gpu(self.name)
        except CatalogLookupError:
            return GpuSpec(name=self.name, aliases=(), vendor="custom", int8_tops=None,
                           price_on_demand_usd_per_gpu_hour=self.price_usd_per_gpu_hour,
                           price_on_demand_high_usd_per_gpu_hour=None, price_spot_usd_per_gpu_hour=None,
                           price_reserved_usd_per_gpu_hour=None, source="instance", as_of="instance",
                           **{"fp8_tflops": None, **overrides})
        return dataclasses.replace(base, **overrides)

    def spec(self) -> GpuSpec:
        """The catalog entry with this option's overrides applied (its name stays the catalog's, so an
        offer's physics is its GPU type's), with its own host-link figure where it gives one."""
        spec = self._spec()
        if self.host_link_gb_per_s is None:
            return spec
        values = {f.name: getattr(spec, f.name) for f in dataclasses.fields(spec)}
        return HostLinkedGpuSpec(**{**values, "host_link_gb_per_s": self.host_link_gb_per_s})


class Hardware(Strict):
    """The GPUs the job may use, their pricing tier and any separate rollout GPUs."""

    gpus: list[GpuOption] = Field(min_length=1)
    pricing: Literal["on_demand", "spot", "either"] = Field(
        "on_demand", description="the pricing tier of every entry without its own tier: on_demand, spot (priced "
                                 "with preemption, reliability.spot_reclaimed_share_per_month), or either (each such "
                                 "entry is offered at both, the MIP chooses; the spot one is keyed NAME@spot)")
    offers: Literal["catalog", "reference"] = Field(
        "catalog", description="where an entry without a provider or a price of its own is bought: catalog (the "
                               "price catalog's cheapest offer of its type and tier that holds the plan's count: "
                               "an ethernet-only offer holds one node at most; `planopt catalog`) or reference "
                               "(gpus.json's one reference price per type, across providers)")
    rollout_gpus: list[GpuOption] = Field(
        [], description="separate rollout hardware: GPU types and counts that may run generation apart from the "
                        "training GPUs (each RL/OPD plan then chooses colocated or split); empty: always colocated")
    price_catalog: Optional[str] = Field(
        None, description="a price file in the shipped catalog's format (`planopt catalog import`): every catalog "
        "offer (an entry's provider, offers: catalog) is read from it; a path relative to the instance file's folder "
        "(for an instance given as an object, the working directory)")
    _price_rows: Optional[tuple[PriceRow, ...]] = PrivateAttr(None)

    @model_validator(mode="after")
    def _read_price_catalog(self) -> "Hardware":  # read once (cached); the instance resolved the path
        self._price_rows = None if self.price_catalog is None else price_catalog.read(self.price_catalog, "price_catalog")
        return self

    def price_rows(self) -> tuple[PriceRow, ...]:
        """The catalog offers this hardware is bought from: the price file's rows, else the shipped catalog's."""
        return load_prices() if self._price_rows is None else self._price_rows

    @model_validator(mode="after")
    def _both_tiers(self) -> "Hardware":
        """Under ``pricing: either``, an entry without a tier of its own stands for two: itself at on-demand and
        a twin at spot keyed ``NAME@spot`` (``NAME@offer:spot`` with an offer label); the MIP chooses."""
        if self.pricing != "either":
            return self
        for field in ("gpus", "rollout_gpus"):
            out = []
            for option in getattr(self, field):
                if option.tier is not None:
                    out.append(option)
                    continue
                out.append(option.model_copy(update={"tier": "on_demand"}))
                offer = "spot" if option.offer is None else f"{option.offer}:spot"
                out.append(option.model_copy(update={"tier": "spot", "offer": offer}))
            object.__setattr__(self, field, self._each_gpu_once(out))
        return self

    @field_validator("gpus", "rollout_gpus")
    @classmethod
    def _each_gpu_once(cls, gpus: list[GpuOption]) -> list[GpuOption]:
        """A second entry of one GPU type and offer (after catalog aliases resolve) would be silently
        ignored: refuse it."""
        first: dict[str, int] = {}
        for n, option in enumerate(gpus):
            if option.key in first:
                raise ValueError(f"entries {first[option.key]} and {n} are both {option.key!r}; list each GPU type once, "
                                 "with all its counts in one entry (or tell two offers apart with 'offer')")
            first[option.key] = n
        return gpus


class Reliability(Strict):
    """Failure rate per GPU-hour (a measured rate, or a class of cluster), restart time and checkpoint write
    bandwidth.

    ``cluster_class`` (one of ``defaults.CLUSTER_CLASSES``) sets the failure rate to that class's published
    rate (``defaults.CLUSTER_FAILURES_PER_GPU_HOUR``) and its spread to the class's
    (``spreads.CLUSTER_FAILURES_PER_GPU_HOUR``); ``failures_per_gpu_hour`` is a measured rate, the user's own
    point value. Giving both is refused (unless the rate is the class's own, as a dumped instance holds it): they
    are two answers to one question.
    """

    cluster_class: Optional[Literal[tuple(d.CLUSTER_CLASSES)]] = Field(  # type: ignore[valid-type]
        None, description="class of cluster whose published failure rate applies: "
        + ", ".join(d.CLUSTER_CLASSES) + " (default none: Llama 3's rate, with the spread across published clusters)")
    failures_per_gpu_hour: NonNegativeFloat = Field(
        d.FAILURES_PER_GPU_HOUR, description="unexpected job interruptions per GPU-hour, a measured rate "
        "(default Llama 3's 1.97e-5; not with cluster_class)")
    restart_minutes: NonNegativeFloat = d.RESTART_MINUTES
    spot_reclaimed_share_per_month: float = Field(
        d.SPOT_RECLAIMED_SHARE_PER_MONTH, ge=0.0, lt=1.0,
        description="share of spot nodes the provider reclaims within a month (AWS Spot Instance Advisor's "
                    "'frequency of interruption'; default 0.2, its top range's edge, where H100-class GPUs sit); "
                    "each reclaim is a failure of the gang: restart and lost work")
    checkpoint_write_gb_per_s_per_node: PositiveFloat = d.CHECKPOINT_WRITE_GB_PER_S_PER_NODE

    @model_validator(mode="after")
    def _class_sets_the_rate(self) -> "Reliability":
        if self.cluster_class is None:
            return self
        rate = d.CLUSTER_FAILURES_PER_GPU_HOUR[self.cluster_class]
        # the class's own rate beside it is what a dumped instance holds (model_dump -> model_validate): accepted
        if "failures_per_gpu_hour" in self.model_fields_set and self.failures_per_gpu_hour != rate:
            raise ValueError("give cluster_class or a measured failures_per_gpu_hour, not both")
        object.__setattr__(self, "failures_per_gpu_hour", rate)
        return self


class Storage(Strict):
    """Storage prices (hot, cold) and trajectory logging: share logged, retention, ingest price."""

    hot_usd_per_gb_month: NonNegativeFloat = d.HOT_STORAGE_USD_PER_GB_MONTH
    cold_usd_per_gb_month: NonNegativeFloat = d.COLD_STORAGE_USD_PER_GB_MONTH
    trajectory_log_share: float = Field(0.0, ge=0, le=1, description="share of generated trajectories logged in full")
    log_retention_months: NonNegativeFloat = 1.0
    log_ingest_usd_per_gb: NonNegativeFloat = Field(d.LOG_INGEST_USD_PER_GB, description="ingest and indexing of trajectory logs by a log service, USD per GB")


class Operations(Strict):
    """Money that is not compute: a fixed amount and a rate per wall-clock hour."""

    fixed_usd: NonNegativeFloat = 0.0
    usd_per_wall_hour: NonNegativeFloat = Field(0.0, description="people and tooling while the job runs")


class Efficiency(Strict):
    """Achieved efficiencies (MFU, decode MBU, HBM shares, scaling), the rate multipliers and the RL software
    release."""

    mfu_train: Optional[float] = Field(None, ge=MIN_POSITIVE, le=1, description="overrides the size-based MFU default")
    decode_mbu: float = Field(d.DECODE_MBU, ge=MIN_POSITIVE, le=1)
    rollout_hbm_share: float = Field(d.ROLLOUT_HBM_SHARE, ge=MIN_POSITIVE, le=1)
    train_hbm_share: float = Field(d.TRAIN_HBM_SHARE, ge=MIN_POSITIVE, le=1)
    scaling_efficiency_per_doubling: float = Field(d.SCALING_EFFICIENCY_PER_DOUBLING, ge=MIN_POSITIVE, le=1)
    # Multipliers on the modelled rates: 1.0 is the model as calibrated. A pilot run
    # (``planopt fit``) or a scenario of the uncertainty model (``models/uncertainty/model.py``)
    # sets them; every compute pass's time scales exactly as 1/mfu_factor and every
    # decode iteration's as 1/decode_factor.
    mfu_factor: float = Field(1.0, ge=MIN_POSITIVE, le=10, description="multiplies the achieved MFU of every training and scoring pass")
    decode_factor: float = Field(1.0, ge=MIN_POSITIVE, le=10, description="multiplies the speed of every decode iteration of the rollout engine")
    cuda_graphs: bool = Field(True, description="the rollout engine replays decode as CUDA graphs (vLLM's default); "
                              "false: enforce_eager, each decode iteration pays its kernel launches (physics.eager_decode_seconds)")
    software_release: Literal[tuple(d.SOFTWARE_RELEASES)] = Field(  # type: ignore[valid-type]
        d.SOFTWARE_RELEASE_DEFAULT, description="RL software release whose measured speed and log-prob passes apply "
        "(defaults.SOFTWARE_RELEASES, dated); default the newest")


class Evaluation(Strict):
    """Validation runs during training: a decode of the eval set on the plan's GPUs every so many steps."""

    every_steps: Optional[PositiveInt] = Field(d.EVAL_EVERY_STEPS, description="steps between validation runs; null: none")
    prompts: PositiveInt = Field(d.EVAL_PROMPTS, description="held-out prompts per validation run, one sample each")


class Network(Strict):
    """Billed traffic: inside one cluster nothing is; egress only for what crosses a region."""

    egress_usd_per_gb: NonNegativeFloat = Field(d.EGRESS_USD_PER_GB, description="USD per GB leaving the region")
    crosses_region: list[Literal["final_weights", "trajectory_logs", "milestones"]] = Field(
        [], description="what the job sends to another region: the trained weights (or adapter) once, the trajectory logs, the archived milestone checkpoints")


class CandidateStudent(Strict):
    """Another base model the plan may post-train instead of ``student``, with its own scores on the task."""

    name: str = Field(min_length=1, description="how plans name this student (plan.student)")
    architecture: Architecture
    baseline_score: Score = Field(description="its target-task score before post-training")
    general_score_baseline: Annotated[float, Field(ge=MIN_POSITIVE, le=MAX_SCORE)] = Field(
        description="its general-capability score before training; its forgetting is measured against it")
    general_score_family: Optional[GeneralScoreFamily] = Field(
        None, description="the family of its general-capability score; default the task's (task.general_score_family)")


class Constraints(Strict):
    """The user's limits (budget, deadline, forgetting, quality) and the confidence a chance-constrained plan meets
    them with."""

    budget_usd: Optional[NonNegativeFloat] = None
    deadline_hours: Optional[NonNegativeFloat] = None
    max_forgetting_points: Optional[NonNegativeFloat] = None
    min_quality: Optional[float] = None
    confidence: Optional[float] = Field(None, gt=0, lt=1, description="share of scenarios of the uncertainty model in which every limit must hold (a chance-constrained plan)")
    alert_share: float = Field(0.8, gt=0, le=1, description="the alert line, a share of budget_usd: the report gives the day the planned spend reaches it (0.8: the usual first budget alert)")


class Range(Strict):
    """An uncertain parameter's range: ``low`` and ``high`` are the central ``confidence`` interval of a log-normal."""

    low: PositiveFloat
    high: PositiveFloat
    confidence: float = Field(0.8, gt=0, lt=1, description="probability that the value lies between low and high")

    @model_validator(mode="after")
    def _ordered(self) -> "Range":
        if self.low > self.high:
            raise ValueError("low must not exceed high")
        return self


class Instance(Strict):
    """One post-training job."""

    name: str = "job"
    kind: Literal["job"] = "job"
    labels: Labels = Field(Labels(), description="project, team and job: the tags of the FOCUS export's rows")
    student: Architecture
    task: Task
    training: Training
    sft_data: Optional[SftData] = None
    reward: Reward = Reward()
    teacher: Optional[Teacher] = None
    environments: Environments = Environments()
    hardware: Hardware
    checkpointing: Checkpointing = Checkpointing()
    retention: Optional[Retention] = Field(None, description="checkpoint retention as a choice (see Retention)")
    releases: Optional[Releases] = Field(None, description="the plan run once per release (see Releases)")
    continued_pretraining: Optional[ContinuedPretraining] = Field(None, description="more pre-training of the base before the first stage, a choice (see ContinuedPretraining)")
    reliability: Reliability = Reliability()
    storage: Storage = Storage()
    operations: Operations = Operations()
    evaluation: Evaluation = Evaluation()
    network: Network = Network()
    efficiency: Efficiency = Efficiency()
    priors: Priors = Priors()
    forgetting_repair_usd_per_point: NonNegativeFloat = Field(0.0, description="hidden cost of forgetting: repair per point lost")
    candidate_students: Optional[list[CandidateStudent]] = Field(
        None, min_length=1, description="other base models a plan may choose instead of `student` (which is a "
        "candidate too, named by its preset or 'student'): a bigger one with lighter post-training against a smaller "
        "one trained harder; the MIP chooses the student jointly with everything else")
    constraints: Constraints = Constraints()
    objective: Objective = "cost"
    uncertainty: dict[str, Union[NonNegativeFloat, Range]] = Field(
        default_factory=dict, description="overrides of the uncertainty model: a parameter name (`planopt uncertainty FILE` lists them) "
        "mapped to a point value (no spread) or a range {low, high, confidence}")

    @model_validator(mode="wrap")
    @classmethod
    def _price_catalog(cls, data: Any, handler, info: ValidationInfo) -> "Instance":
        """``hardware.price_catalog`` resolved and read before the entries' provider lookups (price_catalog.py)."""
        return price_catalog.validating(data, handler, info.context, ("hardware", "price_catalog"),
                                        lambda inst: price_catalog.check_hardware(inst.hardware), cls.__name__)

    @field_validator("uncertainty", mode="before")
    @classmethod
    def _uncertainty_entries(cls, entries):
        """Each entry is a non-negative number (a point) or a range; errors name the entry's field."""
        if not isinstance(entries, dict):
            return entries
        out = {}
        for name, entry in entries.items():
            if isinstance(entry, dict):
                try:
                    out[name] = Range.model_validate(entry)
                except ValidationError as exc:
                    err = exc.errors()[0]
                    where = ".".join(str(p) for p in (name, *err["loc"]))
                    raise ValueError(f"{where}: {err['msg'].removeprefix('Value error, ')}") from None
            elif (isinstance(entry, bool) or not isinstance(entry, (int, float)) or not math.isfinite(entry)
                  or not 0 <= entry <= MAX_MAGNITUDE):
                raise ValueError(f"{name}: expected a number from 0 to {MAX_MAGNITUDE:g} or {{low, high, confidence}}, "
                                 f"got {entry!r}")
            else:
                out[name] = float(entry)
        return out

    @model_validator(mode="after")
    def _provider_prices(self) -> "Instance":
        """An entry with a provider and no price takes the provider's price at ``hardware.pricing``'s tier
        (before the checks below, which read the prices)."""
        hw = self.hardware
        for field, options in (("gpus", hw.gpus), ("rollout_gpus", hw.rollout_gpus)):
            for n, option in enumerate(options):
                if option.provider is None or option.price_usd_per_gpu_hour is not None:
                    continue
                tier = option.tier or ("on_demand" if hw.pricing == "either" else hw.pricing)
                price = option.catalog_price(tier, hw.price_rows())
                if price is None:
                    raise ValueError(f"hardware.{field}.{n}.provider: {option.provider} has no {tier.replace('_', '-')} "
                                     f"price for {option.name} in {option.region}; give price_usd_per_gpu_hour, or another provider")
                object.__setattr__(option, "price_usd_per_gpu_hour", price)
        return self

    @model_validator(mode="after")
    def _method_needs(self) -> "Instance":
        if "sft" in self.training.methods and self.sft_data is None:
            raise ValueError("training.methods has 'sft' but sft_data is missing")
        if "opd" in self.training.methods and self.teacher is None:
            raise ValueError("training.methods has 'opd' but teacher is missing")
        if self.teacher is not None and self.teacher.precision_by_phase and (
                self.training.phases < 2 or len(set(self.teacher.precision_options)) < 2):
            raise ValueError(f"teacher.precision_by_phase: a precision per phase needs two or more training.phases "
                             f"(has {self.training.phases}) and teacher.precision_options (has "
                             f"{sorted(set(self.teacher.precision_options))})")
        if self.teacher is not None and "opd" not in self.training.methods:
            for name in ("precision_by_phase", "prefix_caching"):   # options of OPD's scoring: refused, not ignored
                if getattr(self.teacher, name):
                    raise ValueError(f"teacher.{name}: an option of the teacher's scoring of OPD's samples, and "
                                     "training.methods has no 'opd'; remove it or add 'opd'")
        self._method_gpus_offered()
        for n, seq in enumerate(self.training.stage_sequences or []):
            for method in seq:
                if method not in self.training.methods:
                    raise ValueError(f"training.stage_sequences.{n}: '{method}' is not in training.methods "
                                     f"({', '.join(self.training.methods)})")
        return self

    def _method_gpus_offered(self) -> None:
        """Each ``training.methods.<m>.gpus`` entry names a GPU of ``hardware.gpus`` with counts among its own, and a
        teacher trained as a stage takes its GPUs from ``teacher.training.gpus`` only."""
        entries = self.hardware.gpus
        for method, options in self.training.methods.items():
            for n, g in enumerate(options.gpus or []):
                where = f"training.methods.{method}.gpus.{n}"
                # a plan's GPU key: NAME, NAME@offer, NAME@spot (pricing "either"), or NAME@provider/region (an
                # entry with a provider, whose label defaults to its provider and region)
                base, _, label = g.name.partition("@")
                matched = [e for e in entries if e.name == base
                           and (not label or label in (e.offer, "spot") or e.provider is not None)]
                if not matched:
                    raise ValueError(f"{where}.name: {g.name!r} is not a GPU of hardware.gpus "
                                     f"({', '.join(e.name if e.offer is None else f'{e.name}@{e.offer}' for e in entries)})")
                offered = {c for e in matched for c in e.counts}
                extra = sorted(set(g.counts or []) - offered)
                if extra:
                    raise ValueError(f"{where}.counts: {extra[0]} is not a count hardware.gpus offers for {g.name} "
                                     f"({', '.join(map(str, sorted(offered)))})")
        for method, options in (self.teacher.training.methods.items() if self.teacher and self.teacher.training else []):
            if options.gpus is not None:
                raise ValueError(f"teacher.training.methods.{method}.gpus: the teacher's job takes its GPUs from "
                                 "teacher.training.gpus; remove it")

    @model_validator(mode="after")
    def _candidates_distinct(self) -> "Instance":
        names = self.student_names()
        for n, c in enumerate(self.candidate_students or []):
            if names.count(c.name) > 1:
                raise ValueError(f"candidate_students.{n}.name: {c.name!r} names two students (the instance's "
                                 f"student is {self.student_name!r}); give each a distinct name")
            if c.baseline_score > self.task.score_ceiling:
                raise ValueError(f"candidate_students.{n}.baseline_score: {c.baseline_score:g} is above "
                                 f"task.score_ceiling {self.task.score_ceiling:g}")
        return self

    @model_validator(mode="after")
    def _one_trainer_field(self) -> "Instance":
        t = self.training
        if t.trainer is not None and t.trainer_options is not None:
            raise ValueError("training.trainer_options: give training.trainer (one trainer) or training.trainer_options "
                             "(a choice among several), not both")
        keys = [o.key for o in t.trainer_options or []]
        if len(set(keys)) != len(keys):
            raise ValueError(f"training.trainer_options: {keys} lists a trainer twice")
        return self

    @model_validator(mode="after")
    def _context_parallel_fits(self) -> "Instance":
        degrees = self.training.context_parallel_degrees()
        most = max(n for o in self.hardware.gpus for n in o.counts)
        for cp in degrees:
            if cp > most:
                raise ValueError(f"training.context_parallel: {cp} is larger than every GPU count of hardware.gpus "
                                 f"(at most {most}); a degree splits one sequence over that many training GPUs")
        for n, option in enumerate(self.hardware.gpus):
            for count in option.counts:
                if all(count % cp for cp in degrees):  # no ring of a listed degree tiles this many GPUs
                    raise ValueError(f"hardware.gpus.{n}.counts: {count} GPUs run no degree of training.context_parallel "
                                     f"{degrees} (a degree must divide the count); remove the count or add a degree")
        return self

    @model_validator(mode="after")
    def _family_priors(self) -> "Instance":
        # the forgetting priors the input leaves out are the general score's family's (defaults.py)
        self.__dict__["priors"] = family_priors(self.priors, self.task.general_score_family)
        return self

    @model_validator(mode="after")
    def _offload_needs_host_link(self) -> "Instance":
        if self.training.cpu_offload is True:  # "if_needed" offers offload only where a host link is known
            for n, option in enumerate(self.hardware.gpus):
                if option.name not in d.HOST_LINK_GB_PER_S_PER_GPU and option.host_link_gb_per_s is None:
                    raise ValueError(f"hardware.gpus.{n}.name: training.cpu_offload needs a host-link bandwidth, "
                                     f"and '{option.name}' has none (known: {', '.join(d.HOST_LINK_GB_PER_S_PER_GPU)}; or give "
                                     f"hardware.gpus.{n}.host_link_gb_per_s)")
        return self

    @property
    def student_name(self) -> str:
        """How plans name ``student``: its catalog preset, or 'student'."""
        return self.student.preset or "student"

    def student_names(self) -> list[str]:
        """Every student a plan may train: ``student`` first, then ``candidate_students``."""
        return [self.student_name] + [c.name for c in self.candidate_students or []]

    def for_student(self, name: str) -> "Instance":
        """This job with ``name`` as its only student (its architecture and its scores on the task);
        ValueError naming ``plan.student`` when the instance lists no such student."""
        if name == self.student_name:
            return self.model_copy(update={"candidate_students": None}) if self.candidate_students else self
        for c in self.candidate_students or []:
            if c.name == name:
                family = c.general_score_family or self.task.general_score_family
                task = self.task.model_copy(update={"baseline_score": c.baseline_score,
                                                    "general_score_baseline": c.general_score_baseline,
                                                    "general_score_family": family})
                priors = family_scaled_priors(self.priors, self.task.general_score_family, family)
                return self.model_copy(update={"student": c.architecture, "task": task, "candidate_students": None,
                                               "priors": priors})
        raise ValueError(f"plan.student: {name!r} is not a student of the instance ({', '.join(self.student_names())})")

    def with_overrides(self, **changes) -> "Instance":
        """A copy with constraint/objective fields replaced (None leaves a field as is)."""
        cons = {k: v for k, v in changes.items() if k in Constraints.model_fields and v is not None}
        new = self.model_copy(update={"constraints": self.constraints.model_copy(update=cons)})
        if changes.get("objective") is not None:
            new = new.model_copy(update={"objective": changes["objective"]})
        return new


TeacherTraining.model_rebuild()
Teacher.model_rebuild()
