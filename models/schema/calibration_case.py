"""The calibration case schema: one published run and the figure it reported.

``instances/calibration/FORMAT.md`` describes the format in words; these models
are its checked form, and ``planopt schema --kind calibration`` prints their
JSON Schema. A case is read in two steps: :class:`CaseHeader` (what every case
has: ``id``, ``predict``, ``published``, ``tolerance``), then the model of its
kind, :data:`KIND_MODELS` ``[predict]``, so an error names the case's own
fields (``workload.max_response_tokens``), never a union branch.

Numbers are strict as in the instance schema (no booleans, no numeric strings,
no Infinity or NaN) and non-negative; whole numbers (GPU counts, layers, steps)
also take a whole float such as ``32.0``, which published tables often give.
Unknown fields are ignored: a published case carries citation fields of its own
(``name`` of a model, ``notes``, the per-point figures of a source).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Optional, Union

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from planopt.models.catalog import defaults as d

KINDS = ("flops", "step_seconds", "sft_hours", "interruptions", "checkpoint_interval_minutes", "forgetting_points",
         "gpu_hours_ratio")
Method = Literal["sft", "rl", "opd"]
Precision = Literal[tuple(d.WEIGHT_BYTES_PER_PARAM)]  # type: ignore[valid-type]
Release = Literal[tuple(d.SOFTWARE_RELEASES)]  # type: ignore[valid-type]


def _whole(value: Any) -> Any:
    """A whole number as an int (``32.0`` → 32); anything else is refused with what was expected."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (isinstance(value, float) and not value.is_integer()):
        raise ValueError(f"expected a whole number, got {value!r}")
    return int(value)


Count = Annotated[int, BeforeValidator(_whole), Field(gt=0)]
Positive = Annotated[float, Field(gt=0)]
NonNegative = Annotated[float, Field(ge=0)]


class CaseModel(BaseModel):
    """The base of the case models: frozen, strict numbers (no Infinity or NaN), unknown fields ignored."""

    model_config = ConfigDict(extra="ignore", frozen=True, strict=True, allow_inf_nan=False)


class Architecture(CaseModel):
    """A transformer as the source gives it (no catalog lookup: the case's figures are the published ones)."""

    name: Optional[str] = None
    params_b: Positive = Field(description="total parameters, billions")
    active_params_b: Optional[Positive] = Field(None, description="per token (MoE); default params_b")
    layers: Count
    hidden: Count
    kv_heads: Count
    head_dim: Count

    @model_validator(mode="after")
    def _active(self) -> "Architecture":
        if self.active_params_b is not None and self.active_params_b > self.params_b:
            raise ValueError("active_params_b: must not exceed params_b")
        return self

    def as_instance(self) -> dict[str, Any]:
        """The instance schema's explicit architecture fields."""
        return {"params_b": self.params_b, "active_params_b": self.active_params_b or self.params_b, "layers": self.layers,
                "hidden": self.hidden, "kv_heads": self.kv_heads, "head_dim": self.head_dim}


class Teacher(Architecture):
    """A teacher as the source gives it, with its score on the arms' task where a ratio case needs it."""

    score: Optional[NonNegative] = Field(None, description="teacher's score on the arms' task (gpu_hours_ratio)")


class Gpu(CaseModel):
    """The run's GPU: its spec fields are used, not a catalog entry of the same name."""

    name: str
    bf16_tflops: Positive
    fp8_tflops: Optional[Positive] = None
    hbm_gb: Positive
    hbm_tbps: Positive


class CaseHeader(CaseModel):
    """What every case has; the kind's model checks the rest."""

    id: str
    source: str = ""
    notes: str = ""
    predict: Literal[KINDS]  # type: ignore[valid-type]
    published: dict[str, Any] = Field(description="the reported figure(s), under the key(s) of the kind")
    tolerance: float = Field(ge=1, description="ratio bound: a case passes when 1/tolerance <= predicted/published <= tolerance")


# --- one model per kind -------------------------------------------------------------------------------------
class _OnPolicy(CaseHeader):
    """flops and step_seconds: an RL or OPD run (OPD when a teacher is given and no method is)."""

    method: Optional[Method] = None
    student: Architecture
    teacher: Optional[Teacher] = None
    teacher_precision: Precision = "bf16"

    @property
    def run_method(self) -> str:
        """The case's method: the given one, else OPD when a teacher is given, else RL."""
        return self.method or ("opd" if self.teacher is not None else "rl")

    @model_validator(mode="after")
    def _on_policy(self) -> "_OnPolicy":
        if self.run_method == "sft":
            raise ValueError(f"method: {self.predict} cases are on-policy runs (rl or opd)")
        if self.run_method == "opd" and self.teacher is None:
            raise ValueError("teacher: required for method 'opd'")
        return self


class FlopsWorkload(CaseModel):
    """A flops case's run: steps, prompts per step, samples per prompt, mean prompt and response tokens."""

    steps: Count
    prompts_per_step: Count
    samples_per_prompt: Count
    prompt_tokens: NonNegative
    response_tokens: Positive


class FlopsPublished(CaseModel):
    """A flops case's reported figures: the student's and/or the teacher's FLOPs, at least one."""

    student_flops: Optional[Positive] = None
    teacher_flops: Optional[Positive] = None

    @model_validator(mode="after")
    def _some(self) -> "FlopsPublished":
        if self.student_flops is None and self.teacher_flops is None:
            raise ValueError("expected student_flops and/or teacher_flops")
        return self


class FlopsCase(_OnPolicy):
    """A case predicting a whole on-policy run's floating-point operations (the teacher's only for OPD)."""

    predict: Literal["flops"]
    workload: FlopsWorkload
    published: FlopsPublished  # type: ignore[assignment]

    @model_validator(mode="after")
    def _teacher_figure(self) -> "FlopsCase":
        if self.published.teacher_flops is not None and self.run_method != "opd":
            raise ValueError(f"published.teacher_flops: method {self.run_method!r} has no teacher")
        return self


class StepWorkload(CaseModel):
    """A step case's step: prompts, samples, token lengths, recomputation, reference log-probs, CPU offload."""

    prompts_per_step: Count
    samples_per_prompt: Count
    prompt_tokens: NonNegative
    response_tokens: Positive
    max_response_tokens: Positive
    activation_recompute: bool = True
    reference_logprobs: bool = True
    cpu_offload: bool = Field(False, description="parameters, gradients and optimiser state in host memory")


class StepPublished(CaseModel):
    """A step case's reported figure: wall seconds of one step."""

    step_seconds: Positive


def _offload_needs_host_link(gpu: Gpu, field: str) -> None:
    from planopt.models.catalog import CatalogLookupError, find_gpu
    try:
        name = find_gpu(gpu.name).name
    except CatalogLookupError:
        name = gpu.name
    if name not in d.HOST_LINK_GB_PER_S_PER_GPU:
        raise ValueError(f"{field}: CPU offload needs the GPU's host-link bandwidth, and '{gpu.name}' has no "
                         f"host-memory figure (known: {', '.join(d.HOST_LINK_GB_PER_S_PER_GPU)})")


class StepSecondsCase(_OnPolicy):
    """A case predicting the wall seconds of one on-policy RL or OPD step on a colocated cluster."""

    predict: Literal["step_seconds"]
    gpu: Gpu
    gpu_count: Count
    workload: StepWorkload
    software_release: Optional[Release] = Field(None, description="RL software release; default: the NeMo RL tag the source cites, else the newest")
    published: StepPublished  # type: ignore[assignment]

    @model_validator(mode="after")
    def _offload(self) -> "StepSecondsCase":
        if self.workload.cpu_offload:
            _offload_needs_host_link(self.gpu, "workload.cpu_offload")
        return self


class SftWorkload(CaseModel):
    """An SFT case's run: examples, epochs, token lengths, batch, packing, recomputation, offload."""

    examples: Positive = Field(description="per epoch")
    epochs: Positive
    tokens_per_example: Positive
    sequence_length: Positive
    truncation: bool = False
    global_batch_examples: Positive = float(d.CALIBRATION_SFT_GLOBAL_BATCH_EXAMPLES)
    packing: bool = False
    activation_recompute: bool = True
    cpu_offload: bool = False
    micro_batch_examples: Count = 1


class SftPublished(CaseModel):
    """An SFT case's reported figure: wall-clock hours of the whole run."""

    hours: Positive


class SftHoursCase(CaseHeader):
    """A case predicting the wall-clock hours of a whole supervised fine-tuning run."""

    predict: Literal["sft_hours"]
    student: Architecture
    gpu: Gpu
    gpu_count: Count
    workload: SftWorkload
    published: SftPublished  # type: ignore[assignment]

    @model_validator(mode="after")
    def _lengths(self) -> "SftHoursCase":
        w = self.workload
        if w.tokens_per_example > w.sequence_length and not w.truncation:
            raise ValueError(f"workload.tokens_per_example: {w.tokens_per_example:g} is above workload.sequence_length "
                             f"{w.sequence_length:g} and the case does not state truncation (workload.truncation: true)")
        if w.cpu_offload:
            _offload_needs_host_link(self.gpu, "workload.cpu_offload")
        return self


class InterruptionsPublished(CaseModel):
    """An interruptions case's reported figure: unexpected job interruptions."""

    interruptions: Positive


class InterruptionsCase(CaseHeader):
    """A case predicting the unexpected job interruptions of a run on ``gpu_count`` GPUs over ``hours``."""

    predict: Literal["interruptions"]
    gpu_count: Count
    hours: Positive
    published: InterruptionsPublished  # type: ignore[assignment]


class CheckpointPublished(CaseModel):
    """A checkpoint case's reported figure: the interval, minutes."""

    checkpoint_interval_minutes: Positive


class CheckpointIntervalCase(CaseHeader):
    """A case predicting the checkpoint interval chosen when only write overhead and lost work pull on it."""

    predict: Literal["checkpoint_interval_minutes"]
    job_mtbf_hours: Positive
    checkpoint_write_seconds: Positive
    restart_seconds: NonNegative
    published: CheckpointPublished  # type: ignore[assignment]


class MixPoint(CaseModel):
    """One data mix of a forgetting case: the share of new-domain data."""

    external_data_share: float = Field(gt=0, le=1, description="1.0 = only new-domain data")


class ForgettingPublished(CaseModel):
    """A forgetting case's reported drops, one per mix point, in order."""

    forgetting_points: list[Positive] = Field(min_length=1)


class ForgettingCase(CaseHeader):
    """A case predicting the drop of a general-capability score after SFT on external data, at one or more mixes."""

    predict: Literal["forgetting_points"]
    student: Architecture
    baseline_score: Positive
    points: list[MixPoint] = Field(min_length=1)
    published: ForgettingPublished  # type: ignore[assignment]

    @model_validator(mode="after")
    def _one_per_point(self) -> "ForgettingCase":
        if len(self.published.forgetting_points) != len(self.points):
            raise ValueError(f"published.forgetting_points: expected {len(self.points)} values, one per point, "
                             f"got {len(self.published.forgetting_points)}")
        return self


class Arm(CaseModel):
    """One arm of a ratio case: its method and the scores it starts from and must reach."""

    method: Method
    start_score: NonNegative
    target_score: NonNegative

    @model_validator(mode="after")
    def _reachable(self) -> "Arm":
        ceiling = d.CALIBRATION_SCORE_CEILING
        if not self.start_score < self.target_score <= ceiling:
            raise ValueError(f"target_score: expected start_score < target_score <= {ceiling:g}")
        return self


class RatioPublished(CaseModel):
    """A ratio case's reported figure: arm 0's GPU-hours over arm 1's."""

    gpu_hours_ratio: Positive


class GpuHoursRatioCase(CaseHeader):
    """A case predicting the ratio of GPU-hours of two arms that start from the same checkpoint."""

    predict: Literal["gpu_hours_ratio"]
    student: Architecture
    teacher: Optional[Teacher] = None
    teacher_precision: Precision = "bf16"
    arms: list[Arm] = Field(min_length=2, max_length=2, description="arm 0 and arm 1; the ratio is arm 0's GPU-hours over arm 1's")
    published: RatioPublished  # type: ignore[assignment]

    @model_validator(mode="after")
    def _teacher_for_opd(self) -> "GpuHoursRatioCase":
        for n, arm in enumerate(self.arms):
            if arm.method == "opd" and self.teacher is None:
                raise ValueError(f"teacher: required for arms.{n} (method 'opd')")
        return self


KIND_MODELS: dict[str, type[CaseHeader]] = {
    "flops": FlopsCase, "step_seconds": StepSecondsCase, "sft_hours": SftHoursCase, "interruptions": InterruptionsCase,
    "checkpoint_interval_minutes": CheckpointIntervalCase, "forgetting_points": ForgettingCase,
    "gpu_hours_ratio": GpuHoursRatioCase,
}
assert tuple(KIND_MODELS) == KINDS

# Every kind, told apart by ``predict``: the schema `planopt schema --kind calibration` prints.
CalibrationCase = Annotated[Union[tuple(KIND_MODELS.values())], Field(discriminator="predict")]  # type: ignore[valid-type]


def calibration_json_schema() -> dict[str, Any]:
    """The JSON Schema of a calibration case, every kind told apart by ``predict`` (``planopt schema --kind
    calibration``)."""
    from pydantic import TypeAdapter
    schema = TypeAdapter(CalibrationCase).json_schema()
    schema["title"] = "planopt calibration case"
    return schema
