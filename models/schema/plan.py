r"""A plan: one value for every decision of a job.

A plan splits into a *recipe* (what is trained and how: method, length,
sampling schedule, teacher precision, data mix, for SFT the most epochs
over each distinct example, the adapter: full weights or LoRA of a rank,
and for RL its staleness: synchronous or asynchronous, ``asynchronous.py``),
a *hardware* choice (GPU type and count, and optionally separate rollout GPUs
that generate apart from them, ``rollout.py``) and a *checkpoint interval*. Quality
and forgetting depend on the recipe alone; time and money on all three.

The adapter is part of the recipe (its quality, forgetting, FLOPs and memory)
and also of the hardware choice the formulation indexes (``HardwareChoice.lora_rank``):
what a checkpoint holds sets its write time and its storage per hour, which the
checkpoint overhead :math:`o_h(\tau)` and the hourly price :math:`\pi_h` carry per
hardware choice. A recipe's memory class fits only hardware choices of its own
adapter, so the two always agree in a plan.

CPU offload (``training.cpu_offload``) is a property of the hardware choice alone
(``HardwareChoice.cpu_offload``): it frees the GPUs of the training state and adds
host-link transfers whose amounts every recipe carries (``recipes.py``) and whose
seconds per unit are zero on a choice that does not offload (``hardware.py``), so
recipe × hardware stays a product of one-hots and the time stays exact.

A teacher trained as a stage (``teacher.training``, ``teacher_training.py``) is part of an OPD recipe
(``Recipe.teacher_training``: the teacher's own one-stage plan): it sets the recipe's data money and lead
time only, so recipe × hardware stays a product of one-hots here too.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Optional

from planopt.models.schema.retention_choice import RetentionChoice


@dataclass(frozen=True, order=True)
class Recipe:
    method: str
    steps: int
    samples_per_prompt: tuple[int, ...] = ()
    teacher_precision: Optional[str] = None
    external_data_share: Optional[float] = None
    # SFT: the most passes over each distinct new-domain example (owned ones are reused
    # up to this many epochs before any is bought); None for RL and OPD. An SFT recipe
    # built without it has 1: one pass, every example beyond those owned bought, as
    # before epochs were a choice, so older plans and callers mean what they meant.
    max_epochs: Optional[int] = None
    # LoRA rank, or None for full fine-tuning (the default: what a recipe meant before
    # adapters were a choice).
    lora_rank: Optional[int] = None
    # Asynchronous RL (``asynchronous.py``): how many steps behind the trained policy
    # generation may run; 0 (the default) is synchronous, as before.
    staleness_steps: int = 0
    # OPD with a teacher trained as a stage (``teacher.training``, ``teacher_training.py``): the teacher's
    # own one-stage plan, one of the instance's usable ones; None: the teacher exists or is a lump, as before.
    teacher_training: Optional["Plan"] = None

    def __post_init__(self) -> None:
        if self.method == "sft" and self.max_epochs is None:
            object.__setattr__(self, "max_epochs", 1)

    @property
    def adapter(self) -> str:
        return "full" if self.lora_rank is None else "lora"

    @property
    def memory_class(self) -> str:
        """Recipes that load the GPUs alike: the method, OPD's teacher precision, asynchronous RL's
        staleness (it needs separate rollout GPUs), and the adapter (``rl``, ``opd:fp8``, ``sft+lora16``,
        ``rl@s1+lora16``)."""
        base = f"opd:{self.teacher_precision}" if self.method == "opd" else self.method
        if self.staleness_steps:
            base += f"@s{self.staleness_steps}"
        return base if self.lora_rank is None else f"{base}+lora{self.lora_rank}"


def split_class(memory_class: str) -> tuple[str, str | None, int | None]:
    """(method, teacher precision or None, LoRA rank or None) of a memory class."""
    base, _, lora = memory_class.partition("+lora")
    method, _, precision = base.partition("@")[0].partition(":")
    return method, precision or None, int(lora) if lora else None


def staleness_of_class(memory_class: str) -> int:
    """The staleness an asynchronous RL class carries (``rl@s1``), 0 for every other class."""
    stale = memory_class.partition("+lora")[0].partition("@")[2]
    return int(stale[1:]) if stale else 0


@dataclass(frozen=True, order=True)
class HardwareChoice:
    gpu: str
    count: int
    # The adapter the job checkpoints (None: full weights), which sets the checkpoint's
    # size: see the module docstring.
    lora_rank: Optional[int] = None
    # Separate rollout hardware (``hardware.rollout_gpus``): generation runs on
    # ``rollout_count`` GPUs of type ``rollout_gpu`` instead of on the training GPUs
    # (``rollout.py``). None / 0: colocated, as before.
    rollout_gpu: Optional[str] = None
    rollout_count: int = 0
    # ZeRO-3 / FSDP offload of parameters, gradients and optimiser state to host memory.
    cpu_offload: bool = False

    @property
    def split(self) -> bool:
        """Whether generation runs on separate rollout GPUs."""
        return self.rollout_gpu is not None

    @property
    def total_count(self) -> int:
        """Every GPU the choice holds: the training GPUs and any rollout GPUs."""
        return self.count + self.rollout_count


@dataclass(frozen=True)
class Plan:
    method: str
    gpu: str
    gpu_count: int
    steps: int
    samples_per_prompt: tuple[int, ...]
    teacher_precision: Optional[str]
    checkpoint_interval_minutes: float
    external_data_share: Optional[float]
    max_epochs: Optional[int] = None  # SFT epochs over distinct examples (``Recipe.max_epochs``); 1 when absent
    adapter: str = "full"             # "full" or "lora" (issue 12's stage field); "full" when absent
    lora_rank: Optional[int] = None   # the LoRA rank; null for full fine-tuning
    cpu_offload: bool = False         # training state offloaded to host memory (``training.cpu_offload``)
    retention: Optional[RetentionChoice] = None  # the retention option (``retention.py``); null without a ``retention`` block
    rollout_gpu: Optional[str] = None  # separate rollout GPUs' type (``HardwareChoice.rollout_gpu``); null: colocated
    rollout_gpu_count: int = 0         # and their count (0 when colocated)
    staleness_steps: int = 0           # asynchronous RL's staleness (``Recipe.staleness_steps``); 0: synchronous
    teacher_training: Optional["Plan"] = None  # the trained teacher's own plan (``Recipe.teacher_training``); None: none

    def __lt__(self, other: "Plan") -> bool:
        """A total order (recipes holding teacher plans sort): by the canonical JSON of the fields."""
        return _sort_key(self) < _sort_key(other)

    def __post_init__(self) -> None:
        if self.method == "sft" and self.max_epochs is None:
            object.__setattr__(self, "max_epochs", 1)

    @property
    def recipe(self) -> Recipe:
        return Recipe(self.method, self.steps, tuple(self.samples_per_prompt), self.teacher_precision,
                      self.external_data_share, self.max_epochs, self.lora_rank if self.adapter == "lora" else None,
                      self.staleness_steps, self.teacher_training)

    @property
    def hardware(self) -> HardwareChoice:
        return HardwareChoice(self.gpu, self.gpu_count, self.lora_rank if self.adapter == "lora" else None,
                              self.rollout_gpu, self.rollout_gpu_count, cpu_offload=self.cpu_offload)

    @classmethod
    def of(cls, recipe: Recipe, hardware: HardwareChoice, interval_minutes: float,
           retention: Optional[RetentionChoice] = None) -> "Plan":
        return cls(recipe.method, hardware.gpu, hardware.count, recipe.steps, recipe.samples_per_prompt,
                   recipe.teacher_precision, interval_minutes, recipe.external_data_share, recipe.max_epochs,
                   recipe.adapter, recipe.lora_rank, cpu_offload=hardware.cpu_offload, retention=retention,
                   rollout_gpu=hardware.rollout_gpu, rollout_gpu_count=hardware.rollout_count,
                   staleness_steps=recipe.staleness_steps, teacher_training=recipe.teacher_training)

    @property
    def rollout(self) -> Optional[dict[str, Any]]:
        """The JSON ``rollout`` field: ``{"gpu", "gpu_count"}`` of separate rollout GPUs, or None (colocated)."""
        return None if self.rollout_gpu is None else {"gpu": self.rollout_gpu, "gpu_count": self.rollout_gpu_count}

    def to_dict(self) -> dict[str, Any]:
        """The one-stage fields; ``rollout`` only for a split plan (a colocated plan's dict is as before, which the
        portfolio result's published one-stage shape relies on)."""
        out = asdict(self)
        out["samples_per_prompt"] = list(self.samples_per_prompt)
        if self.retention is None:
            del out["retention"]  # the shape before retention choices (portfolio results keep it)
        if not self.cpu_offload:
            del out["cpu_offload"]  # likewise: a plan that does not offload keeps the earlier shape
        del out["rollout_gpu"], out["rollout_gpu_count"]
        if self.rollout_gpu is not None:
            out["rollout"] = self.rollout
        if not self.staleness_steps:
            del out["staleness_steps"]
        if self.teacher_training is None:
            del out["teacher_training"]  # absent unless the teacher is trained as a stage: the earlier shape
        else:
            out["teacher_training"] = self.teacher_training.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Plan":
        """Build from the ``plan`` object ``solve --json`` prints; raises ValueError naming the field."""
        if not isinstance(data, dict):
            raise ValueError("plan: expected a JSON object")
        fields = {"method": str, "gpu": str, "gpu_count": int, "steps": int, "checkpoint_interval_minutes": (int, float)}
        for name, typ in fields.items():
            if name not in data:
                raise ValueError(f"plan.{name}: missing")
            if not isinstance(data[name], typ) or isinstance(data[name], bool):
                raise ValueError(f"plan.{name}: expected {typ.__name__ if isinstance(typ, type) else 'a number'}, got {data[name]!r}")
        unknown = set(data) - (set(cls.__dataclass_fields__) - {"rollout_gpu", "rollout_gpu_count"}) - {"rollout"}
        if unknown:
            raise ValueError(f"plan.{sorted(unknown)[0]}: unknown field")
        spp = data.get("samples_per_prompt") or []
        if not isinstance(spp, list) or not all(isinstance(k, int) and not isinstance(k, bool) for k in spp):
            raise ValueError("plan.samples_per_prompt: expected a list of integers")
        share = data.get("external_data_share")
        if share is not None and not isinstance(share, (int, float)):
            raise ValueError("plan.external_data_share: expected a number or null")
        epochs = data.get("max_epochs")
        if epochs is not None and (not isinstance(epochs, int) or isinstance(epochs, bool) or epochs < 1):
            raise ValueError(f"plan.max_epochs: expected a positive integer or null, got {epochs!r}")
        adapter = data.get("adapter", "full")
        if adapter not in ("full", "lora"):
            raise ValueError(f"plan.adapter: expected 'full' or 'lora', got {adapter!r}")
        rank = data.get("lora_rank")
        if rank is not None and (not isinstance(rank, int) or isinstance(rank, bool) or rank < 1):
            raise ValueError(f"plan.lora_rank: expected a positive integer or null, got {rank!r}")
        if adapter == "lora" and rank is None:
            raise ValueError("plan.lora_rank: expected a positive integer for a 'lora' plan, got null")
        if adapter == "full" and rank is not None:
            raise ValueError(f"plan.lora_rank: must be null for a 'full' plan, got {rank!r}")
        offload = data.get("cpu_offload", False)
        if not isinstance(offload, bool):
            raise ValueError(f"plan.cpu_offload: expected true or false, got {offload!r}")
        retention = data.get("retention")
        retention = None if retention is None else RetentionChoice.from_dict(retention)
        rollout_gpu, rollout_count = read_rollout(data.get("rollout"), "plan.rollout")
        staleness = data.get("staleness_steps", 0)
        if isinstance(staleness, bool) or not isinstance(staleness, int) or staleness < 0:
            raise ValueError(f"plan.staleness_steps: expected a non-negative integer, got {staleness!r}")
        teacher = read_teacher_training(data.get("teacher_training"))
        return cls(data["method"], data["gpu"], data["gpu_count"], data["steps"], tuple(spp),
                   data.get("teacher_precision"), float(data["checkpoint_interval_minutes"]),
                   None if share is None else float(share), epochs, adapter, rank, cpu_offload=offload,
                   retention=retention, rollout_gpu=rollout_gpu, rollout_gpu_count=rollout_count, staleness_steps=staleness,
                   teacher_training=teacher)


def _sort_key(plan: "Plan") -> str:
    import json
    return json.dumps(plan.to_dict(), sort_keys=True, default=str)


def read_teacher_training(value: Any) -> Optional["Plan"]:
    """The ``teacher_training`` field of a plan's JSON: null, or the teacher's own one-stage plan (which has no
    teacher of its own); ValueError naming ``plan.teacher_training.<field>``."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ValueError(f"plan.teacher_training: expected null or a plan object, got {value!r}")
    if value.get("teacher_training") is not None:
        raise ValueError("plan.teacher_training.teacher_training: expected null (there is no teacher of the teacher)")
    try:
        return Plan.from_dict(value)
    except ValueError as exc:
        raise ValueError("plan.teacher_training." + str(exc).removeprefix("plan.")) from None


def read_rollout(value: Any, where: str) -> tuple[Optional[str], int]:
    """(rollout GPU, count) of a plan's ``rollout`` JSON: null, or ``{"gpu": str, "gpu_count": positive int}``;
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
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"{where}.gpu_count: expected a positive integer, got {count!r}")
    return gpu, count
