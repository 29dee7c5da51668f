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

A field these models do not define is refused (FORMAT.md: "a field this page does
not define (or a misspelled one) makes that case an error row naming the field"),
and :func:`describe_case_error` names it by its dotted path with the closest
defined name (``gpu.hbm_tb``: did you mean ``gpu.hbm_tbps``?). Besides the fields
FORMAT.md lists, the models define a few the shipped cases carry and planopt
reads: ``method`` (flops, step_seconds; ``sft`` on a forgetting case),
``teacher_precision``, ``software_release`` (step_seconds), ``name`` of a
student or teacher (a citation: the architecture's figures are the case's, a
name the catalog does not know is fine), ``teacher.score`` (gpu_hours_ratio),
``workload.truncation`` and ``workload.micro_batch_examples`` (sft_hours), and
``points[i].forgetting_points`` (the source's drop at that mix, a citation of
``published``), and ``general_score_family`` (a forgetting case's benchmark family, FORMAT.md).
"""

from __future__ import annotations

import difflib
import re
from typing import Annotated, Any, ClassVar, Literal, Optional, Union, get_args, get_origin

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator

from planopt.models.catalog import defaults as d

KINDS = ("flops", "step_seconds", "sft_hours", "interruptions", "checkpoint_interval_minutes", "forgetting_points",
         "gpu_hours_ratio")
Method = Literal["sft", "rl", "opd"]
Precision = Literal[tuple(d.WEIGHT_BYTES_PER_PARAM)]  # type: ignore[valid-type]
Release = Literal[tuple(d.SOFTWARE_RELEASES)]  # type: ignore[valid-type]
Backend = Literal["megatron", "fsdp", "deepspeed"]
# Kinds whose figure comes from training passes: they may state their ``trainer``.
TRAINING_KINDS = ("flops", "step_seconds", "sft_hours", "forgetting_points", "gpu_hours_ratio")


def _whole(value: Any) -> Any:
    """A whole number as an int (``32.0`` → 32); anything else is refused with what was expected."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (isinstance(value, float) and not value.is_integer()):
        raise ValueError(f"expected a whole number, got {value!r}")
    return int(value)


Count = Annotated[int, BeforeValidator(_whole), Field(gt=0)]
Positive = Annotated[float, Field(gt=0)]
NonNegative = Annotated[float, Field(ge=0)]


class CaseModel(BaseModel):
    """The base of the case models: frozen, strict numbers (no Infinity or NaN), undefined fields refused."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


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
    host_link_gb_per_s: Optional[Positive] = Field(None, description="one direction of the link between one GPU and host "
                                                  "memory, GB/s; default the catalog's figure, else its PCIe generation's")


def _pcie_generation(name: str) -> tuple[int, str] | None:
    """The PCIe generation of a GPU family the name starts with (``defaults.PCIE_GENERATION_BY_GPU_FAMILY``), and
    the family; None for a family the table does not know."""
    from planopt.models.catalog import normalize_name
    key = re.sub(r"^(nvidia|amd|instinct)+", "", normalize_name(name))
    for family in sorted(d.PCIE_GENERATION_BY_GPU_FAMILY, key=len, reverse=True):
        if key.startswith(normalize_name(family)):
            return d.PCIE_GENERATION_BY_GPU_FAMILY[family], family
    return None


def host_link_of(gpu: Gpu) -> tuple[float, str] | None:
    """The host link a case's GPU is priced with, GB/s one direction, and where it comes from: the case's
    ``gpu.host_link_gb_per_s``, else the catalog's figure for its name, else the default of its PCIe generation;
    None when none of them is known."""
    from planopt.models.catalog import CatalogLookupError, find_gpu
    if gpu.host_link_gb_per_s is not None:
        return gpu.host_link_gb_per_s, "the case's gpu.host_link_gb_per_s"
    try:
        name = find_gpu(gpu.name).name
    except CatalogLookupError:
        name = None
    if name in d.HOST_LINK_GB_PER_S_PER_GPU:
        return d.HOST_LINK_GB_PER_S_PER_GPU[name], f"the catalog's {name}"
    generation = _pcie_generation(gpu.name)
    if generation is None:
        return None
    gen, family = generation
    return d.HOST_LINK_GB_PER_S_BY_PCIE_GENERATION[gen], f"the PCIe Gen{gen} x16 default of the {family} family"


def _host_link_or_fail(gpu: Gpu, field: str) -> None:
    """Refuse a case that offloads on a GPU whose host link is known nowhere, naming ``gpu.host_link_gb_per_s``."""
    if host_link_of(gpu) is not None:
        return
    from planopt.models.catalog import CatalogLookupError, find_gpu
    try:
        find_gpu(gpu.name)
        why = f"the catalog has no host-link figure for {gpu.name!r}"
    except CatalogLookupError as exc:
        close = re.search(r"did you mean .*\?$", str(exc))
        why = f"the catalog does not know the GPU {gpu.name!r}" + (f" ({close.group(0)})" if close else "")
    raise ValueError(f"gpu.host_link_gb_per_s: required with {field} (GB/s one direction; PCIe Gen4 x16 = "
                     f"{d.HOST_LINK_GB_PER_S_BY_PCIE_GENERATION[4]:g}, Gen5 x16 = {d.HOST_LINK_GB_PER_S_BY_PCIE_GENERATION[5]:g}): "
                     f"{why}, and its PCIe generation is not known")


class Trainer(CaseModel):
    """The software that ran the training passes, as the source states it (FORMAT.md "Trainer"). A step_seconds or
    sft_hours case that states a backend is priced with that backend (``cost/trainer.py``); one that states only a
    framework, or no trainer, with the project's default trainer."""

    backend: Optional[Backend] = Field(None, description="megatron, fsdp (PyTorch FSDP/FSDP2/DTensor) or deepspeed")
    zero_stage: Optional[Annotated[int, BeforeValidator(_whole), Field(ge=1, le=3)]] = Field(
        None, description="DeepSpeed ZeRO stage, 1-3 (with backend deepspeed)")
    overlap_comm: Optional[bool] = Field(None, description="DeepSpeed's overlap_comm as the run's config set it "
                                                             "(backend deepspeed; absent: DeepSpeed's default)")
    framework: Optional[str] = Field(None, description="free text: nemo-rl, verl, hf-trainer, llamafactory, ...")

    @model_validator(mode="after")
    def _stage_is_deepspeed(self) -> "Trainer":
        for name in ("zero_stage", "overlap_comm"):
            if getattr(self, name) is not None and self.backend != "deepspeed":
                what = "ZeRO stages are" if name == "zero_stage" else "overlap_comm is"
                raise ValueError(f"{name}: {what} DeepSpeed's, and backend is {self.backend!r}; "
                                 f"give backend 'deepspeed' or leave {name} out")
        if self.backend is None and self.framework is None:
            raise ValueError("backend: the trainer states neither backend nor framework")
        return self

    def describe(self) -> str:
        """The trainer in a few words: ``deepspeed ZeRO-3, llamafactory``."""
        stack = " ".join(x for x in (self.backend, self.zero_stage and f"ZeRO-{self.zero_stage}") if x)
        comm = None if self.overlap_comm is None else f"overlap_comm {str(self.overlap_comm).lower()}"
        return ", ".join(x for x in (stack, comm, self.framework) if x)

    @property
    def key(self) -> str | None:
        """The instance trainer it is priced as (``Trainer.key`` of the instance schema: ``deepspeed-zero3``; a
        deepspeed case without a stage is ZeRO-3); None when it states no backend."""
        if self.backend is None:
            return None
        from planopt.models.schema.training import deepspeed_key
        return deepspeed_key(self.zero_stage, self.overlap_comm) if self.backend == "deepspeed" else self.backend

    def as_instance(self) -> dict[str, Any] | None:
        """The instance's ``training.trainer``; None when no backend is stated (the default pricing)."""
        if self.backend is None:
            return None
        out: dict[str, Any] = {"backend": self.backend}
        if self.backend == "deepspeed":
            out["zero_stage"] = self.zero_stage or 3
            if self.overlap_comm is not None:
                out["overlap_comm"] = self.overlap_comm
        return out

    def note(self, priced: bool) -> str:
        """What a row says: the trainer stated, and what it was priced as (``priced``: the kind's figure depends on
        the trainer)."""
        from planopt.models.schema.instance import describe_trainer as describe
        if not priced:
            return f"{self.describe()} (priced as default)"
        if self.key is None:
            return f"{self.describe()} (priced as default: no backend stated)"
        return f"{self.describe()} (priced as {describe(self.key)})"


class CaseHeader(CaseModel):
    """What every case has; the kind's model checks the rest."""

    id: str
    source: str = ""
    notes: str = ""
    predict: Literal[KINDS]  # type: ignore[valid-type]
    published: dict[str, Any] = Field(description="the reported figure(s), under the key(s) of the kind")
    tolerance: float = Field(ge=1, description="ratio bound: a case passes when 1/tolerance <= predicted/published <= tolerance")

    @property
    def trainer_note(self) -> str | None:
        """What the row says of the trainer: None for a kind that does not train."""
        return None

    @property
    def host_link(self) -> tuple[float, str] | None:
        """The host link the case is priced with under CPU offload (GB/s, where from); None without offload."""
        return None


class _Trains(CaseHeader):
    """A kind that trains: it may state its ``trainer``."""

    trainer: Optional[Trainer] = None
    # Whether the kind's figure is priced with the stated trainer (step_seconds, sft_hours).
    PRICES_TRAINER: ClassVar[bool] = False

    @property
    def trainer_note(self) -> str:
        """``default`` when the case states no trainer, else the stated one and what it was priced as."""
        return "default" if self.trainer is None else self.trainer.note(self.PRICES_TRAINER)

    @property
    def trainer_key(self) -> str | None:
        """The trainer the figure is priced with (``Trainer.key``), None: the default."""
        return None if self.trainer is None or not self.PRICES_TRAINER else self.trainer.key


# --- one model per kind -------------------------------------------------------------------------------------
class _OnPolicy(_Trains):
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


def _power_of_two(cp: int) -> int:
    if cp & (cp - 1):
        raise ValueError(f"{cp} is not a power of two (context-parallel degrees: 1, 2, 4, 8, ...)")
    return cp


# GPUs one training sequence is split over (context parallelism, ``cost/context.py``); 1: none.
Degree = Annotated[Count, AfterValidator(_power_of_two)]


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
    context_parallel: Degree = Field(1, description="the training sequence split over this many GPUs (training CP)")
    cuda_graphs: bool = Field(True, description="the rollout engine decodes with CUDA graphs; false: enforce_eager")


class StepPublished(CaseModel):
    """A step case's reported figure: wall seconds of one step."""

    step_seconds: Positive


# A NeMo RL release a case's ``source`` cites ("... NeMo RL at tag v0.5.0"): its minor version.
CITED_RELEASE = re.compile(r"\bv(0\.\d+)(?:\.\d+)?\b")


class StepSecondsCase(_OnPolicy):
    """A case predicting the wall seconds of one on-policy RL or OPD step on a colocated cluster."""

    predict: Literal["step_seconds"]
    PRICES_TRAINER: ClassVar[bool] = True
    gpu: Gpu
    gpu_count: Count
    workload: StepWorkload
    software_release: Optional[Release] = Field(None, description="RL software release; default: the NeMo RL tag the source cites, else the newest")
    published: StepPublished  # type: ignore[assignment]

    @property
    def cited_release(self) -> str | None:
        """The NeMo RL release the ``source`` cites (``nemo-rl-v0.5`` for "tag v0.5.0"), known or not; None when it
        cites none."""
        cited = CITED_RELEASE.search(self.source) if "NeMo" in self.source else None
        return None if cited is None else f"nemo-rl-v{cited.group(1)}"

    @property
    def release(self) -> str | None:
        """The release the case is priced at: ``software_release``, else the cited one; None: the default."""
        return self.software_release or self.cited_release

    @property
    def host_link(self) -> tuple[float, str] | None:
        """The host link the case is priced with under CPU offload (GB/s, where from); None without offload."""
        return host_link_of(self.gpu) if self.workload.cpu_offload else None

    @model_validator(mode="after")
    def _release_and_offload(self) -> "StepSecondsCase":
        if self.software_release is None and self.cited_release not in (None, *d.SOFTWARE_RELEASES):
            raise ValueError(f"software_release: none stated, and the source cites {self.cited_release}, a release the "
                             f"project does not know (known: {', '.join(d.SOFTWARE_RELEASES)})")
        if self.workload.cpu_offload:
            _host_link_or_fail(self.gpu, "workload.cpu_offload")
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
    context_parallel: Degree = Field(1, description="the training sequence split over this many GPUs")


class SftPublished(CaseModel):
    """An SFT case's reported figure: wall-clock hours of the whole run."""

    hours: Positive


class SftHoursCase(_Trains):
    """A case predicting the wall-clock hours of a whole supervised fine-tuning run."""

    predict: Literal["sft_hours"]
    PRICES_TRAINER: ClassVar[bool] = True
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
            _host_link_or_fail(self.gpu, "workload.cpu_offload")
        return self

    @property
    def host_link(self) -> tuple[float, str] | None:
        """The host link the case is priced with under CPU offload (GB/s, where from); None without offload."""
        return host_link_of(self.gpu) if self.workload.cpu_offload else None


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
    forgetting_points: Optional[NonNegative] = Field(None, description="the source's drop at this mix (a citation: "
                                                     "published.forgetting_points is what is checked)")


class ForgettingPublished(CaseModel):
    """A forgetting case's reported drops, one per mix point, in order."""

    forgetting_points: list[Positive] = Field(min_length=1)


class ForgettingCase(_Trains):
    """A case predicting the drop of a general-capability score after SFT on external data, at one or more mixes."""

    predict: Literal["forgetting_points"]
    method: Optional[Literal["sft"]] = Field(None, description="the run's method: SFT, the only one this kind prices")
    student: Architecture
    baseline_score: Positive
    general_score_family: Literal[tuple(d.GENERAL_SCORE_FAMILIES)] = Field(  # type: ignore[valid-type]
        d.GENERAL_SCORE_FAMILY_DEFAULT, description="the family of the benchmark whose drop is published "
        "(defaults.GENERAL_SCORE_FAMILIES); priced with that family's forgetting share and mix curve")
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


class GpuHoursRatioCase(_Trains):
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


# --- reading a case: one line naming every bad field ------------------------------------------------------------
class CaseError(ValueError):
    """A case whose fields are not what FORMAT.md defines; the message is one line naming each bad field."""


def check_case(data: dict[str, Any]) -> CaseHeader:
    """The case ``data`` checked against its schema: the common fields first, then its kind's (so an error names
    the case's own fields, never a union branch). :class:`CaseError` naming the fields otherwise."""
    try:
        header = CaseHeader.model_validate({k: data[k] for k in CaseHeader.model_fields if k in data})
    except ValidationError as exc:
        # the kind is not known yet: a key no kind defines is named too (`tolerence`: did you mean `tolerance`?)
        defined = {f for m in KIND_MODELS.values() for f in m.model_fields}
        undefined = [f"{k}: {_undefined(CaseHeader, (k,))}" for k in data if k not in defined]
        raise CaseError("; ".join([*undefined, describe_case_error(exc, CaseHeader)])) from None
    model = KIND_MODELS[header.predict]
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise CaseError(describe_case_error(exc, model)) from None


# Errors named in one message; the rest are counted.
MAX_ERRORS_NAMED = 3
# difflib ratio above which a defined name is offered as what a misspelled one meant.
CLOSE_NAME_CUTOFF = 0.6


def describe_case_error(exc: ValidationError, model: type[BaseModel]) -> str:
    """Every error of ``exc`` (raised by ``model``) as ``field: problem``, the field by its dotted path
    (``gpu.hbm_tb``, ``arms[1].method``), ``; `` between errors, the first :data:`MAX_ERRORS_NAMED` of them."""
    lines: list[str] = []
    # an undefined field first: a misspelled name also makes the right one missing, and says why
    for err in sorted(exc.errors(), key=lambda e: e["type"] != "extra_forbidden"):
        line = _describe_one(err, model)
        if line not in lines:
            lines.append(line)
    more = f" (and {len(lines) - MAX_ERRORS_NAMED} more)" if len(lines) > MAX_ERRORS_NAMED else ""
    return "; ".join(lines[:MAX_ERRORS_NAMED]) + more


def _dotted(loc: tuple) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _describe_one(err: dict[str, Any], model: type[BaseModel]) -> str:
    loc, kind = tuple(err["loc"]), err["type"]
    field, msg = _dotted(loc), err["msg"].removeprefix("Value error, ")
    if kind == "extra_forbidden":
        return f"{field}: {_undefined(model, loc)}"
    if kind == "missing":
        return f"{field}: required field is missing"
    if kind == "value_error":  # a check of the model at loc: its message names the model's own field, or none
        if not loc:
            return msg
        return f"{field}.{msg}" if re.match(r"^[A-Za-z_][\w.\[\]]*: ", msg) else f"{field}: {msg}"
    if kind == "literal_error":
        msg = "expected " + msg.removeprefix("Input should be ")
    if "input" in err and not isinstance(err["input"], (dict, list)):
        msg = f"{msg} (got {err['input']!r})"
    if kind == "literal_error" and isinstance(err.get("input"), str):
        msg += _value_suggestion(err["input"], re.findall(r"'([^']*)'", str(err.get("ctx", {}).get("expected", ""))))
    return f"{field}: {msg}"


def _value_suggestion(value: str, choices: list[str]) -> str:
    """``; did you mean `x`?`` for a misspelled choice; nothing for a release (an unknown release is not a typo of
    a known one) or when no choice is close."""
    if set(choices) == set(d.SOFTWARE_RELEASES):
        return ""
    close = difflib.get_close_matches(value, choices, n=1, cutoff=CLOSE_NAME_CUTOFF)
    return f"; did you mean `{close[0]}`?" if close else ""


def _undefined(model: type[BaseModel], loc: tuple) -> str:
    """What to say of an undefined field at ``loc``: the closest defined name beside it, else the same name
    defined elsewhere in the case, else the names the block defines."""
    parent, name = loc[:-1], str(loc[-1])
    block = _model_at(model, parent)
    kind = model.model_fields["predict"].annotation if "predict" in model.model_fields else None
    where = f"predict = {get_args(kind)[0]!r}" if get_args(kind) and len(get_args(kind)) == 1 else "a case"
    said = f"not a field FORMAT.md defines ({where})"
    if block is None:
        return said
    close = difflib.get_close_matches(name, list(block.model_fields), n=1, cutoff=CLOSE_NAME_CUTOFF)
    if close:
        return f"{said}; did you mean `{_dotted((*parent, close[0]))}`?"
    elsewhere = [p for p in _field_paths(model) if p.rsplit(".", 1)[-1] == name and p != _dotted(loc)]
    if elsewhere:
        return f"{said}; did you mean `{elsewhere[0]}`?"
    return f"{said}; {_dotted(parent) or 'the case'} defines {', '.join(block.model_fields)}"


def _unwrap(annotation: Any) -> Any:
    """The type inside ``Optional[...]`` and ``Annotated[...]``."""
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation = get_args(annotation)[0]
        elif origin is Union or type(annotation).__name__ == "UnionType":
            args = [a for a in get_args(annotation) if a is not type(None)]
            if len(args) != 1:
                return annotation
            annotation = args[0]
        else:
            return annotation


def _model_at(model: type[BaseModel], loc: tuple) -> type[BaseModel] | None:
    """The model of the block at ``loc`` inside ``model`` (None when loc is not a block of it)."""
    ann: Any = model
    for part in loc:
        ann = _unwrap(ann)
        if isinstance(part, int):
            if get_origin(ann) is not list:
                return None
            ann = get_args(ann)[0]
        elif isinstance(ann, type) and issubclass(ann, BaseModel) and part in ann.model_fields:
            ann = ann.model_fields[part].annotation
        else:
            return None
    ann = _unwrap(ann)
    return ann if isinstance(ann, type) and issubclass(ann, BaseModel) else None


def _field_paths(model: type[BaseModel], prefix: str = "") -> list[str]:
    """Every field's dotted path in ``model`` and its blocks (a list's elements as ``[0]``)."""
    paths = []
    for name, info in model.model_fields.items():
        path, ann = f"{prefix}{name}", _unwrap(info.annotation)
        paths.append(path)
        if get_origin(ann) is list:
            path, ann = f"{path}[0]", _unwrap(get_args(ann)[0])
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            paths.extend(_field_paths(ann, f"{path}."))
    return paths
