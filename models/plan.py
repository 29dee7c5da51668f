"""A plan: one value for every decision of a job.

A plan splits into a *recipe* (what is trained and how: method, length,
sampling schedule, teacher precision, data mix, and for SFT the most epochs
over each distinct example), a *hardware* choice (GPU type and count) and a
*checkpoint interval*. Quality and forgetting depend on the
recipe alone; time and money on all three.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Optional


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

    def __post_init__(self) -> None:
        if self.method == "sft" and self.max_epochs is None:
            object.__setattr__(self, "max_epochs", 1)

    @property
    def memory_class(self) -> str:
        """Recipes that load the GPUs alike: the method, and OPD's teacher precision."""
        return f"opd:{self.teacher_precision}" if self.method == "opd" else self.method


@dataclass(frozen=True, order=True)
class HardwareChoice:
    gpu: str
    count: int


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

    def __post_init__(self) -> None:
        if self.method == "sft" and self.max_epochs is None:
            object.__setattr__(self, "max_epochs", 1)

    @property
    def recipe(self) -> Recipe:
        return Recipe(self.method, self.steps, tuple(self.samples_per_prompt), self.teacher_precision,
                      self.external_data_share, self.max_epochs)

    @property
    def hardware(self) -> HardwareChoice:
        return HardwareChoice(self.gpu, self.gpu_count)

    @classmethod
    def of(cls, recipe: Recipe, hardware: HardwareChoice, interval_minutes: float) -> "Plan":
        return cls(recipe.method, hardware.gpu, hardware.count, recipe.steps, recipe.samples_per_prompt,
                   recipe.teacher_precision, interval_minutes, recipe.external_data_share, recipe.max_epochs)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["samples_per_prompt"] = list(self.samples_per_prompt)
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
        return cls(data["method"], data["gpu"], data["gpu_count"], data["steps"], tuple(spp),
                   data.get("teacher_precision"), float(data["checkpoint_interval_minutes"]),
                   None if share is None else float(share), epochs)
