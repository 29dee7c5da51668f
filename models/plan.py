r"""A plan: one value for every decision of a job.

A plan splits into a *recipe* (what is trained and how: method, length,
sampling schedule, teacher precision, data mix, for SFT the most epochs
over each distinct example, and the adapter: full weights or LoRA of a rank),
a *hardware* choice (GPU type and count) and a *checkpoint interval*. Quality
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
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Optional

from .retention import RetentionChoice


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

    def __post_init__(self) -> None:
        if self.method == "sft" and self.max_epochs is None:
            object.__setattr__(self, "max_epochs", 1)

    @property
    def adapter(self) -> str:
        return "full" if self.lora_rank is None else "lora"

    @property
    def memory_class(self) -> str:
        """Recipes that load the GPUs alike: the method, OPD's teacher precision, and the adapter
        (``rl``, ``opd:fp8``, ``sft+lora16``)."""
        base = f"opd:{self.teacher_precision}" if self.method == "opd" else self.method
        return base if self.lora_rank is None else f"{base}+lora{self.lora_rank}"


def split_class(memory_class: str) -> tuple[str, str | None, int | None]:
    """(method, teacher precision or None, LoRA rank or None) of a memory class."""
    base, _, lora = memory_class.partition("+lora")
    method, _, precision = base.partition(":")
    return method, precision or None, int(lora) if lora else None


@dataclass(frozen=True, order=True)
class HardwareChoice:
    gpu: str
    count: int
    # The adapter the job checkpoints (None: full weights), which sets the checkpoint's
    # size: see the module docstring.
    lora_rank: Optional[int] = None
    # ZeRO-3 / FSDP offload of parameters, gradients and optimiser state to host memory.
    cpu_offload: bool = False


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

    def __post_init__(self) -> None:
        if self.method == "sft" and self.max_epochs is None:
            object.__setattr__(self, "max_epochs", 1)

    @property
    def recipe(self) -> Recipe:
        return Recipe(self.method, self.steps, tuple(self.samples_per_prompt), self.teacher_precision,
                      self.external_data_share, self.max_epochs, self.lora_rank if self.adapter == "lora" else None)

    @property
    def hardware(self) -> HardwareChoice:
        return HardwareChoice(self.gpu, self.gpu_count, self.lora_rank if self.adapter == "lora" else None, self.cpu_offload)

    @classmethod
    def of(cls, recipe: Recipe, hardware: HardwareChoice, interval_minutes: float,
           retention: Optional[RetentionChoice] = None) -> "Plan":
        return cls(recipe.method, hardware.gpu, hardware.count, recipe.steps, recipe.samples_per_prompt,
                   recipe.teacher_precision, interval_minutes, recipe.external_data_share, recipe.max_epochs,
                   recipe.adapter, recipe.lora_rank, hardware.cpu_offload, retention)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["samples_per_prompt"] = list(self.samples_per_prompt)
        if self.retention is None:
            del out["retention"]  # the shape before retention choices (portfolio results keep it)
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
        unknown = set(data) - set(cls.__dataclass_fields__)
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
        return cls(data["method"], data["gpu"], data["gpu_count"], data["steps"], tuple(spp),
                   data.get("teacher_precision"), float(data["checkpoint_interval_minutes"]),
                   None if share is None else float(share), epochs, adapter, rank, offload, retention)
