r"""A plan: one value for every decision of a job, in one shape for every kind of plan.

A plan is a *student* (the base model it post-trains: the instance's own, or one of its
``candidate_students``), one to three *stages* run one after another, a *checkpoint
interval* every stage shares, and, with a ``retention`` block, the *retention option*
every stage shares. A one-stage plan is the one-stage case of this shape, not a shape of
its own.

Each stage is a *recipe* (what is trained and how: method, length, sampling schedule,
teacher precision, data mix, for SFT the most epochs over each distinct example, the
adapter: full weights or LoRA of a rank, for RL and OPD its staleness: synchronous or
asynchronous, ``cost/asynchronous.py``, and for OPD with a teacher trained as a stage the
teacher's own plan, ``cost/teacher_training.py``) on a *hardware* choice (GPU type and
count, CPU offload, and optionally separate rollout GPUs that generate apart from them,
``cost/rollout.py``, and with ``environments.pools`` the pool of workers an on-policy stage's
environments run on, ``cost/environments.py``). Quality and forgetting depend on the recipes alone;
time and money on all of it.

The adapter is part of the recipe (its quality, forgetting, FLOPs and memory) and also of
the hardware choice the formulation indexes (``HardwareChoice.lora_rank``): what a
checkpoint holds sets its write time and its storage per hour. A recipe's memory class
fits only hardware choices of its own adapter, so the two always agree in a plan. CPU
offload is a property of the hardware choice alone (``HardwareChoice.cpu_offload``).

The JSON shape (what ``solve --json`` prints and ``evaluate`` reads; ``Plan.to_dict``)::

    {"student": "Qwen3-32B",
     "stages": [{"method": "sft", "steps": 400, "samples_per_prompt": [], "teacher_precision": null,
                 "external_data_share": 1.0, "max_epochs": 2, "adapter": "full", "lora_rank": null,
                 "cpu_offload": false, "gpu": "H100", "gpu_count": 16, "rollout": null, "staleness_steps": 0}, ...],
     "checkpoint_interval_minutes": 60, "retention": null}

``rollout`` is null (colocated) or ``{"gpu": "L40S", "gpu_count": 16}``; ``retention`` is
null or the chosen option ``{"keep_last": 3, "tier": "cold", "milestones": 0}``. An OPD
stage whose teacher is trained as a stage also carries ``teacher_training``: the teacher's
own one-stage plan in the *flat* shape (``Plan.flat_dict``: the one stage's fields beside
``checkpoint_interval_minutes``), which is also the shape of a portfolio job's plan
(``planopt schema --kind portfolio-result``). ``Plan.from_dict`` reads both shapes.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Optional, get_args

from planopt.models.catalog.defaults import WEIGHT_BYTES_PER_PARAM
from planopt.models.schema.base import Precision

PRECISIONS: tuple[str, ...] = get_args(Precision)  # the teacher precisions, in the schema's order

RETENTION_TIERS = ("hot", "cold")


@dataclass(frozen=True, order=True)
class RetentionChoice:
    """One retention option (``cost/retention.py``): keep the newest ``keep_last`` checkpoints in ``tier``, and
    the newest ``milestones`` milestones (cold)."""

    keep_last: int
    tier: str
    milestones: int = 0

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape ``{"keep_last", "tier", "milestones"}``."""
        return {"keep_last": self.keep_last, "tier": self.tier, "milestones": self.milestones}

    @classmethod
    def from_dict(cls, data: Any, where: str = "plan.retention") -> "RetentionChoice":
        """Read ``{"keep_last": int >= 1, "tier": "hot" | "cold", "milestones": int >= 0 (default 0)}``;
        ValueError naming the field."""
        if not isinstance(data, dict):
            raise ValueError(f"{where}: expected an object {{keep_last, tier, milestones}} or null, got {data!r}")
        unknown = set(data) - {"keep_last", "tier", "milestones"}
        if unknown:
            raise ValueError(f"{where}.{sorted(unknown)[0]}: unknown field")
        k = data.get("keep_last")
        if not _is_int(k) or k < 1:
            raise ValueError(f"{where}.keep_last: expected a positive integer, got {k!r}")
        tier = data.get("tier")
        if tier not in RETENTION_TIERS:
            raise ValueError(f"{where}.tier: expected 'hot' or 'cold', got {tier!r}")
        m = data.get("milestones", 0)
        if not _is_int(m) or m < 0:
            raise ValueError(f"{where}.milestones: expected a non-negative integer, got {m!r}")
        return cls(k, tier, m)


@dataclass(frozen=True, order=True)
class Recipe:
    """What a stage trains and how (the module docstring); quality and forgetting depend on it alone."""

    method: str
    steps: int
    samples_per_prompt: tuple[int, ...] = ()
    teacher_precision: Optional[str] = None
    external_data_share: Optional[float] = None
    # SFT: the most passes over each distinct new-domain example (owned ones are reused up to this many epochs
    # before any is bought); None for RL and OPD. An SFT recipe built without it has 1: one pass.
    max_epochs: Optional[int] = None
    # LoRA rank, or None for full fine-tuning.
    lora_rank: Optional[int] = None
    # Asynchronous RL (``cost/asynchronous.py``): how many steps behind the trained policy generation may run; 0 is synchronous.
    staleness_steps: int = 0
    # OPD with a teacher trained as a stage (``cost/teacher_training.py``): the teacher's own one-stage plan.
    teacher_training: Optional["Plan"] = None
    # OPD under ``teacher.precision_by_phase``: the teacher's precision in each sampling phase, when the phases
    # differ (``teacher_precision`` is then the first phase's); empty when one precision scores every phase.
    teacher_precision_by_phase: tuple[str, ...] = ()
    # Continued pre-training (``cost/pretraining.py``): tokens the student is first trained on; a first stage only.
    pretraining_tokens: float = 0.0

    def __post_init__(self) -> None:
        if self.method == "sft" and self.max_epochs is None:
            object.__setattr__(self, "max_epochs", 1)
        by_phase = tuple(self.teacher_precision_by_phase)
        if by_phase:  # canonical: the first phase's precision beside it, and none when the phases agree
            object.__setattr__(self, "teacher_precision", by_phase[0])
            object.__setattr__(self, "teacher_precision_by_phase", by_phase if len(set(by_phase)) > 1 else ())

    @property
    def teacher_precisions(self) -> tuple[str, ...]:
        """OPD: the teacher's precision in each sampling phase (one per entry of ``samples_per_prompt``); empty
        for SFT and RL."""
        if self.teacher_precision is None:
            return ()
        return self.teacher_precision_by_phase or (self.teacher_precision,) * max(1, len(self.samples_per_prompt))

    @property
    def teacher_precision_text(self) -> Optional[str]:
        """OPD's teacher precision as shown: ``fp8``, or per phase ``int4→bf16→bf16``; None for SFT and RL."""
        return "→".join(self.teacher_precision_by_phase) or self.teacher_precision

    @property
    def memory_precision(self) -> Optional[str]:
        """OPD: the precision of the teacher's heaviest weights over its phases (what the GPUs must hold at the
        phase that holds the most; ties of equal bytes go to the first in ``PRECISIONS``); None for SFT and RL."""
        if not self.teacher_precisions:
            return None
        return max(self.teacher_precisions, key=lambda p: (WEIGHT_BYTES_PER_PARAM[p], -PRECISIONS.index(p)))

    @property
    def adapter(self) -> str:
        """``full`` or ``lora``."""
        return "full" if self.lora_rank is None else "lora"

    @property
    def memory_class(self) -> str:
        """Recipes that load the GPUs alike: the method, OPD's teacher precision (its heaviest phase's,
        ``memory_precision``), asynchronous RL's or OPD's staleness (it needs separate rollout GPUs), and the adapter (``rl``,
        ``opd:fp8``, ``sft+lora16``, ``rl@s1+lora16``)."""
        base = f"opd:{self.memory_precision}" if self.method == "opd" else self.method
        if self.staleness_steps:
            base += f"@s{self.staleness_steps}"
        return base if self.lora_rank is None else f"{base}+lora{self.lora_rank}"


def split_class(memory_class: str) -> tuple[str, str | None, int | None]:
    """(method, teacher precision or None, LoRA rank or None) of a memory class."""
    base, _, lora = memory_class.partition("+lora")
    method, _, precision = base.partition("@")[0].partition(":")
    return method, precision or None, int(lora) if lora else None


def staleness_of_class(memory_class: str) -> int:
    """The staleness an asynchronous RL or OPD class carries (``rl@s1``, ``opd:fp8@s1+lora16``), 0 for every other
    class."""
    stale = memory_class.partition("+lora")[0].partition("@")[2]
    return int(stale[1:]) if stale else 0


@dataclass(frozen=True, order=True)
class HardwareChoice:
    """The GPUs a stage runs on (the module docstring); time and money depend on it."""

    gpu: str
    count: int
    # The adapter the job checkpoints (None: full weights), which sets the checkpoint's size.
    lora_rank: Optional[int] = None
    # Separate rollout hardware (``hardware.rollout_gpus``, ``cost/rollout.py``): generation on ``rollout_count``
    # GPUs of type ``rollout_gpu``. None / 0: colocated.
    rollout_gpu: Optional[str] = None
    rollout_count: int = 0
    # ZeRO-3 / FSDP offload of parameters, gradients and optimiser state to host memory.
    cpu_offload: bool = False
    # The trainer (``cost/trainer.py``, ``Trainer.key``: ``megatron``, ``fsdp``, ``deepspeed-zero3``); None: the
    # default pricing. Like offload, a property of the hardware choice: one choice per trainer option.
    trainer: Optional[str] = None
    # Context parallelism (``cost/context.py``): the training sequence split over this many GPUs; 1: none.
    context_parallel: int = 1
    # The pool of environment workers an on-policy stage runs its environments on (``environments.pools``,
    # ``cost/environments.py``); None: the instance lists no pools, or the stage runs none (SFT).
    environment_pool: Optional[str] = None

    @property
    def split(self) -> bool:
        """Whether generation runs on separate rollout GPUs."""
        return self.rollout_gpu is not None

    @property
    def total_count(self) -> int:
        """Every GPU the choice holds: the training GPUs and any rollout GPUs."""
        return self.count + self.rollout_count


# The fields of a stage in the JSON shape, in order.
STAGE_FIELDS = ("method", "steps", "samples_per_prompt", "teacher_precision", "external_data_share", "max_epochs",
                "adapter", "lora_rank", "cpu_offload", "gpu", "gpu_count", "rollout", "staleness_steps", "teacher_training", "trainer",
                "context_parallel", "environment_pool", "teacher_precision_by_phase", "pretraining_tokens")


@dataclass(frozen=True, order=True)
class Stage:
    """One stage of a plan: a recipe on a hardware choice."""

    recipe: Recipe
    hardware: HardwareChoice

    @property
    def method(self) -> str:
        """The stage's method."""
        return self.recipe.method

    def to_dict(self) -> dict[str, Any]:
        """The stage's JSON fields (``STAGE_FIELDS``)."""
        r, h = self.recipe, self.hardware
        out = {"method": r.method, "steps": r.steps, "samples_per_prompt": list(r.samples_per_prompt),
               "teacher_precision": r.teacher_precision, "external_data_share": r.external_data_share,
               "max_epochs": r.max_epochs, "adapter": r.adapter, "lora_rank": r.lora_rank,
               "cpu_offload": h.cpu_offload, "gpu": h.gpu, "gpu_count": h.count,
               "rollout": None if h.rollout_gpu is None else {"gpu": h.rollout_gpu, "gpu_count": h.rollout_count},
               "staleness_steps": r.staleness_steps}
        if r.teacher_training is not None:  # absent unless the teacher is trained as a stage
            out["teacher_training"] = r.teacher_training.flat_dict()
        if h.trainer is not None:  # absent under the default trainer
            out["trainer"] = h.trainer
        if h.context_parallel != 1:  # absent without context parallelism
            out["context_parallel"] = h.context_parallel
        if h.environment_pool is not None:  # absent without environment pools
            out["environment_pool"] = h.environment_pool
        if r.teacher_precision_by_phase:  # absent unless the teacher's precision changes between phases
            out["teacher_precision_by_phase"] = list(r.teacher_precision_by_phase)
        if r.pretraining_tokens:  # absent without continued pre-training
            out["pretraining_tokens"] = r.pretraining_tokens
        return out

    @classmethod
    def from_dict(cls, data: Any, where: str) -> "Stage":
        """Read a stage's JSON fields; ValueError naming ``where.<field>``."""
        if not isinstance(data, dict):
            raise ValueError(f"{where}: expected a JSON object")
        unknown = set(data) - set(STAGE_FIELDS)
        if unknown:
            raise ValueError(f"{where}.{sorted(unknown)[0]}: unknown field")
        return _read_stage(data, where)


@dataclass(frozen=True)
class Plan:
    """A student, one to three stages, the checkpoint interval and the retention option they share."""

    stages: tuple[Stage, ...]
    checkpoint_interval_minutes: float
    student: Optional[str] = None
    retention: Optional[RetentionChoice] = None

    @classmethod
    def of(cls, recipe: Recipe, hardware: HardwareChoice, interval_minutes: float,
           retention: Optional[RetentionChoice] = None, student: Optional[str] = None) -> "Plan":
        """The one-stage plan of ``recipe`` on ``hardware``."""
        return cls((Stage(recipe, hardware),), float(interval_minutes), student, retention)

    def with_student(self, student: Optional[str]) -> "Plan":
        """The same plan naming ``student``."""
        return Plan(self.stages, self.checkpoint_interval_minutes, student, self.retention)

    @property
    def methods(self) -> tuple[str, ...]:
        """The stages' methods, in order."""
        return tuple(s.method for s in self.stages)

    @property
    def stage(self) -> Stage:
        """The one stage of a one-stage plan (ValueError for a plan of several stages)."""
        if len(self.stages) != 1:
            raise ValueError(f"plan: a plan of {len(self.stages)} stages has no single stage; read plan.stages")
        return self.stages[0]

    @property
    def recipe(self) -> Recipe:
        """The recipe of a one-stage plan."""
        return self.stage.recipe

    @property
    def hardware(self) -> HardwareChoice:
        """The hardware of a one-stage plan."""
        return self.stage.hardware

    # the one-stage fields, read off the one stage (``flat_dict``'s names)
    method = property(lambda self: self.recipe.method)
    steps = property(lambda self: self.recipe.steps)
    samples_per_prompt = property(lambda self: self.recipe.samples_per_prompt)
    teacher_precision = property(lambda self: self.recipe.teacher_precision)
    teacher_precision_by_phase = property(lambda self: self.recipe.teacher_precision_by_phase)
    external_data_share = property(lambda self: self.recipe.external_data_share)
    max_epochs = property(lambda self: self.recipe.max_epochs)
    adapter = property(lambda self: self.recipe.adapter)
    lora_rank = property(lambda self: self.recipe.lora_rank)
    staleness_steps = property(lambda self: self.recipe.staleness_steps)
    teacher_training = property(lambda self: self.recipe.teacher_training)
    gpu = property(lambda self: self.hardware.gpu)
    gpu_count = property(lambda self: self.hardware.count)
    cpu_offload = property(lambda self: self.hardware.cpu_offload)
    rollout_gpu = property(lambda self: self.hardware.rollout_gpu)
    rollout_gpu_count = property(lambda self: self.hardware.rollout_count)

    def __lt__(self, other: "Plan") -> bool:
        """A total order (recipes holding teacher plans sort): by the canonical JSON of the plans."""
        return _sort_key(self) < _sort_key(other)

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of the module docstring."""
        return {"student": self.student, "stages": [s.to_dict() for s in self.stages],
                "checkpoint_interval_minutes": self.checkpoint_interval_minutes,
                "retention": None if self.retention is None else self.retention.to_dict()}

    def flat_dict(self) -> dict[str, Any]:
        """The flat one-stage shape: the stage's fields (``rollout``, ``cpu_offload``, ``staleness_steps``,
        ``trainer`` and ``retention`` only where they differ from their defaults, as portfolio results publish it) and
        ``checkpoint_interval_minutes``."""
        stage = self.stage.to_dict()
        out = {k: stage[k] for k in ("method", "gpu", "gpu_count", "steps", "samples_per_prompt", "teacher_precision")}
        out["checkpoint_interval_minutes"] = self.checkpoint_interval_minutes
        out.update({k: stage[k] for k in ("external_data_share", "max_epochs", "adapter", "lora_rank")})
        if self.cpu_offload:
            out["cpu_offload"] = True
        if self.retention is not None:
            out["retention"] = self.retention.to_dict()
        if self.staleness_steps:
            out["staleness_steps"] = self.staleness_steps
        if "teacher_training" in stage:
            out["teacher_training"] = stage["teacher_training"]
        if stage["rollout"] is not None:
            out["rollout"] = stage["rollout"]
        if "trainer" in stage:
            out["trainer"] = stage["trainer"]
        for key in ("context_parallel", "environment_pool", "teacher_precision_by_phase", "pretraining_tokens"):
            if key in stage:
                out[key] = stage[key]
        return out

    @classmethod
    def from_dict(cls, data: Any) -> "Plan":
        """Read either shape (``stages``, or the flat one-stage fields); ValueError naming the field."""
        if not isinstance(data, dict):
            raise ValueError("plan: expected a JSON object")
        if "stages" not in data:
            return _read_flat(data)
        unknown = set(data) - {"student", "stages", "checkpoint_interval_minutes", "retention"}
        if unknown:
            raise ValueError(f"plan.{sorted(unknown)[0]}: unknown field")
        stages = data["stages"]
        if not isinstance(stages, list) or not 1 <= len(stages) <= 3:
            raise ValueError("plan.stages: expected a list of one to three stages")
        interval = data.get("checkpoint_interval_minutes")
        if isinstance(interval, bool) or not isinstance(interval, (int, float)):
            raise ValueError(f"plan.checkpoint_interval_minutes: expected a number, got {interval!r}")
        retention = data.get("retention")
        retention = None if retention is None else RetentionChoice.from_dict(retention)
        student = data.get("student")
        if student is not None and not isinstance(student, str):
            raise ValueError(f"plan.student: expected a string or null, got {student!r}")
        return cls(tuple(Stage.from_dict(s, f"plan.stages.{n}") for n, s in enumerate(stages)), float(interval),
                   student, retention)


def read_plan(data: Any) -> Plan:
    """A plan's JSON in either shape (``Plan.from_dict``)."""
    return Plan.from_dict(data)


def _sort_key(plan: Plan) -> str:
    return json.dumps(plan.to_dict(), sort_keys=True, default=str)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# The flat shape's fields: a stage's (less ``rollout``'s parts) and the plan's interval and retention.
FLAT_FIELDS = set(STAGE_FIELDS) | {"checkpoint_interval_minutes", "retention"}


def _read_flat(data: dict) -> Plan:
    """A plan in the flat one-stage shape; ValueError naming ``plan.<field>``."""
    unknown = set(data) - FLAT_FIELDS
    if unknown:
        raise ValueError(f"plan.{sorted(unknown)[0]}: unknown field")
    interval = data.get("checkpoint_interval_minutes")
    if "checkpoint_interval_minutes" not in data:
        raise ValueError("plan.checkpoint_interval_minutes: missing")
    if isinstance(interval, bool) or not isinstance(interval, (int, float)):
        raise ValueError(f"plan.checkpoint_interval_minutes: expected a number, got {interval!r}")
    retention = data.get("retention")
    retention = None if retention is None else RetentionChoice.from_dict(retention)
    stage = _read_stage({k: v for k, v in data.items() if k not in ("checkpoint_interval_minutes", "retention")}, "plan")
    return Plan((stage,), float(interval), None, retention)


def _read_stage(data: dict, where: str) -> Stage:
    """The recipe and hardware of a stage's fields (``STAGE_FIELDS``); ValueError naming ``where.<field>``."""
    for name, typ in (("method", str), ("gpu", str), ("gpu_count", int), ("steps", int)):
        if name not in data:
            raise ValueError(f"{where}.{name}: missing")
        if not isinstance(data[name], typ) or isinstance(data[name], bool):
            raise ValueError(f"{where}.{name}: expected {typ.__name__}, got {data[name]!r}")
    spp = data.get("samples_per_prompt") or []
    if not isinstance(spp, list) or not all(_is_int(k) for k in spp):
        raise ValueError(f"{where}.samples_per_prompt: expected a list of integers")
    share = data.get("external_data_share")
    if share is not None and (isinstance(share, bool) or not isinstance(share, (int, float))):
        raise ValueError(f"{where}.external_data_share: expected a number or null")
    epochs = data.get("max_epochs")
    if epochs is not None and (not _is_int(epochs) or epochs < 1):
        raise ValueError(f"{where}.max_epochs: expected a positive integer or null, got {epochs!r}")
    rank = _read_adapter(data, where)
    offload = data.get("cpu_offload", False)
    if not isinstance(offload, bool):
        raise ValueError(f"{where}.cpu_offload: expected true or false, got {offload!r}")
    rollout_gpu, rollout_count = read_rollout(data.get("rollout"), f"{where}.rollout")
    staleness = data.get("staleness_steps", 0)
    if not _is_int(staleness) or staleness < 0:
        raise ValueError(f"{where}.staleness_steps: expected a non-negative integer, got {staleness!r}")
    teacher = read_teacher_training(data.get("teacher_training"), f"{where}.teacher_training")
    trainer = data.get("trainer")
    if trainer is not None and not isinstance(trainer, str):
        raise ValueError(f"{where}.trainer: expected a trainer key ('megatron', 'fsdp', 'deepspeed-zero3') or null, "
                         f"got {trainer!r}")
    cp = data.get("context_parallel", 1)
    if not _is_int(cp) or cp < 1:
        raise ValueError(f"{where}.context_parallel: expected a positive integer (1: none), got {cp!r}")
    pool = data.get("environment_pool")
    if pool is not None and not isinstance(pool, str):
        raise ValueError(f"{where}.environment_pool: expected the name of one of environments.pools or null, got {pool!r}")
    recipe = Recipe(data["method"], data["steps"], tuple(spp), data.get("teacher_precision"),
                    None if share is None else float(share), epochs, rank, staleness, teacher,
                    teacher_precision_by_phase=_read_precision_by_phase(data, where),
                    pretraining_tokens=_read_tokens(data.get("pretraining_tokens", 0.0), f"{where}.pretraining_tokens"))
    return Stage(recipe, HardwareChoice(data["gpu"], data["gpu_count"], rank, rollout_gpu, rollout_count, offload,
                                         trainer, cp, pool))


def _read_precision_by_phase(data: dict, where: str) -> tuple[str, ...]:
    """A stage's ``teacher_precision_by_phase``: absent or null (one precision), or one precision per sampling
    phase whose first is ``teacher_precision``; ValueError naming the field."""
    value = data.get("teacher_precision_by_phase")
    if value is None:
        return ()
    field = f"{where}.teacher_precision_by_phase"
    if not isinstance(value, list) or not value or not all(isinstance(p, str) for p in value):
        raise ValueError(f"{field}: expected a list of precisions, one per sampling phase, or null, got {value!r}")
    if data.get("teacher_precision") != value[0]:
        raise ValueError(f"{field}: its first phase's {value[0]!r} is not teacher_precision "
                         f"{data.get('teacher_precision')!r}")
    return tuple(value)


def _read_tokens(value: Any, where: str) -> float:
    """A stage's ``pretraining_tokens``: a finite number of tokens, at least 0 (0: none)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{where}: expected a number of tokens of at least 0, got {value!r}")
    return float(value)


def _read_adapter(data: dict, where: str) -> Optional[int]:
    """The LoRA rank of a stage's ``adapter`` and ``lora_rank`` fields (None: full weights)."""
    adapter = data.get("adapter", "full")
    if adapter not in ("full", "lora"):
        raise ValueError(f"{where}.adapter: expected 'full' or 'lora', got {adapter!r}")
    rank = data.get("lora_rank")
    if rank is not None and (not _is_int(rank) or rank < 1):
        raise ValueError(f"{where}.lora_rank: expected a positive integer or null, got {rank!r}")
    if adapter == "lora" and rank is None:
        raise ValueError(f"{where}.lora_rank: expected a positive integer for a 'lora' plan, got null")
    if adapter == "full" and rank is not None:
        raise ValueError(f"{where}.lora_rank: must be null for a 'full' plan, got {rank!r}")
    return rank


def read_teacher_training(value: Any, where: str = "plan.teacher_training") -> Optional[Plan]:
    """The ``teacher_training`` field of a stage: null, or the teacher's own one-stage plan (which has no
    teacher of its own); ValueError naming ``<where>.<field>``."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ValueError(f"{where}: expected null or a plan object, got {value!r}")
    if value.get("teacher_training") is not None:
        raise ValueError(f"{where}.teacher_training: expected null (there is no teacher of the teacher)")
    try:
        plan = Plan.from_dict(value)
    except ValueError as exc:
        raise ValueError(f"{where}." + str(exc).removeprefix("plan.")) from None
    if len(plan.stages) != 1:
        raise ValueError(f"{where}.stages: the teacher's plan has one stage")
    return plan


def read_rollout(value: Any, where: str) -> tuple[Optional[str], int]:
    """(rollout GPU, count) of a stage's ``rollout`` JSON: null, or ``{"gpu": str, "gpu_count": positive int}``;
    ValueError naming the field."""
    if value is None:
        return None, 0
    if not isinstance(value, dict):
        raise ValueError(f"{where}: expected null or an object {{\"gpu\", \"gpu_count\"}}, got {value!r}")
    unknown = set(value) - {"gpu", "gpu_count"}
    if unknown:
        raise ValueError(f"{where}.{sorted(unknown)[0]}: unknown field")
    gpu, count = value.get("gpu"), value.get("gpu_count")
    if not isinstance(gpu, str):
        raise ValueError(f"{where}.gpu: expected a GPU name, got {gpu!r}")
    if not _is_int(count) or count < 1:
        raise ValueError(f"{where}.gpu_count: expected a positive integer, got {count!r}")
    return gpu, count


def plan_json(plan: Plan, student: Optional[str] = None) -> dict[str, Any]:
    """The JSON shape of ``plan`` (``Plan.to_dict``), naming ``student`` when the plan names none."""
    return (plan if plan.student is not None or student is None else plan.with_student(student)).to_dict()
