r"""A staged plan: one to three stages run one after another, and one checkpoint interval.

Each stage is a recipe (method, length, sampling, teacher precision, data mix,
epochs, adapter) on its own hardware (GPU type and count). The stages' methods
follow one of the instance's ``training.stage_sequences``. A one-stage plan is
the plan of ``plan.py``; ``StagedPlan.of_plan`` and ``StagedPlan.single`` convert.

The JSON shape (what ``solve --json`` prints for a staged instance and what
``evaluate`` reads)::

    {"student": "Qwen3-32B",
     "stages": [{"method": "sft", "steps": 400, "samples_per_prompt": [], "teacher_precision": null,
                 "external_data_share": 1.0, "max_epochs": 2, "adapter": "full", "lora_rank": null,
                 "cpu_offload": false, "gpu": "H100", "gpu_count": 16, "rollout": null, "staleness_steps": 0}, ...],
     "checkpoint_interval_minutes": 60, "retention": null}

``rollout`` is null when generation runs on the stage's own GPUs (colocated), or
``{"gpu": "L40S", "gpu_count": 16}`` when it runs on separate rollout GPUs
(``hardware.rollout_gpus``, ``rollout.py``). ``staleness_steps`` is 0 for a
synchronous stage, or how many steps behind the trained policy an asynchronous
RL stage generates (``training.staleness_steps_options``, ``asynchronous.py``).
``cpu_offload`` says whether the stage keeps its training state in host memory
(``training.cpu_offload``). ``retention`` is null (checkpoints are kept as
``checkpointing`` says) unless the instance has a ``retention`` block; then it is
the chosen option ``{"keep_last": 3, "tier": "cold"}`` (``retention.RetentionChoice``),
which every stage shares, like the interval. An OPD stage whose teacher is trained as a
stage (``teacher.training``, ``teacher_training.py``) also carries ``teacher_training``: the
teacher's own one-stage plan (``plan.py``'s fields, ``checkpoint_interval_minutes`` included);
other stages leave the field out (the earlier shape).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from planopt.models.schema.plan import HardwareChoice, Plan, Recipe
from planopt.models.schema.retention_choice import RetentionChoice

STAGE_FIELDS = ("method", "steps", "samples_per_prompt", "teacher_precision", "external_data_share", "max_epochs",
                "adapter", "lora_rank", "cpu_offload", "gpu", "gpu_count", "rollout", "staleness_steps", "teacher_training")


@dataclass(frozen=True, order=True)
class Stage:
    recipe: Recipe
    hardware: HardwareChoice

    @property
    def method(self) -> str:
        return self.recipe.method

    def to_dict(self) -> dict[str, Any]:
        plan = Plan.of(self.recipe, self.hardware, 0.0)
        flat = plan.to_dict()
        # the fields a one-stage plan's dict leaves out at their defaults: every stage states them
        flat.update(cpu_offload=self.hardware.cpu_offload, rollout=plan.rollout, staleness_steps=self.recipe.staleness_steps)
        return {k: flat[k] for k in STAGE_FIELDS if k in flat}

    @classmethod
    def from_dict(cls, data: Any, where: str) -> "Stage":
        if not isinstance(data, dict):
            raise ValueError(f"{where}: expected a JSON object")
        unknown = set(data) - set(STAGE_FIELDS)
        if unknown:
            raise ValueError(f"{where}.{sorted(unknown)[0]}: unknown field")
        flat = dict(data)
        flat["checkpoint_interval_minutes"] = 0.0
        try:
            plan = Plan.from_dict(flat)
        except ValueError as exc:
            raise ValueError(str(exc).replace("plan.", f"{where}.", 1)) from None
        return cls(plan.recipe, plan.hardware)


@dataclass(frozen=True)
class StagedPlan:
    stages: tuple[Stage, ...]
    checkpoint_interval_minutes: float
    student: Optional[str] = None
    retention: Optional[RetentionChoice] = None  # a ``retention`` instance's option, shared by the stages

    @property
    def methods(self) -> tuple[str, ...]:
        return tuple(s.method for s in self.stages)

    @classmethod
    def single(cls, recipe: Recipe, hardware: HardwareChoice, interval_minutes: float, student: str | None = None) -> "StagedPlan":
        return cls((Stage(recipe, hardware),), interval_minutes, student)

    @classmethod
    def of_plan(cls, plan: Plan, student: str | None = None) -> "StagedPlan":
        return cls((Stage(plan.recipe, plan.hardware),), plan.checkpoint_interval_minutes, student, plan.retention)

    def to_dict(self) -> dict[str, Any]:
        return {"student": self.student, "stages": [s.to_dict() for s in self.stages],
                "checkpoint_interval_minutes": self.checkpoint_interval_minutes,
                "retention": None if self.retention is None else self.retention.to_dict()}

    @classmethod
    def from_dict(cls, data: Any) -> "StagedPlan":
        """Read the staged shape, or the one-stage shape of ``Plan.from_dict``; ValueError naming the field."""
        if not isinstance(data, dict):
            raise ValueError("plan: expected a JSON object")
        if "stages" not in data:
            return cls.of_plan(Plan.from_dict(data))
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
        if retention is not None:
            retention = RetentionChoice.from_dict(retention)
        student = data.get("student")
        if student is not None and not isinstance(student, str):
            raise ValueError(f"plan.student: expected a string or null, got {student!r}")
        return cls(tuple(Stage.from_dict(s, f"plan.stages.{n}") for n, s in enumerate(stages)), float(interval), student,
                   retention)


def read_plan(data: Any) -> Plan | StagedPlan:
    """A plan's JSON in either shape: ``stages`` (a ``StagedPlan``; a ``Plan`` when it has one stage, so that a
    one-stage plan is evaluated exactly as before) or the one-stage fields of result version 1 (``Plan``)."""
    if isinstance(data, dict) and "stages" in data:
        staged = StagedPlan.from_dict(data)
        if len(staged.stages) > 1:
            return staged
        stage = staged.stages[0]
        return Plan.of(stage.recipe, stage.hardware, staged.checkpoint_interval_minutes, staged.retention)
    return Plan.from_dict(data)


def plan_json(plan: Plan | StagedPlan, student: str | None = None) -> dict[str, Any]:
    """The one JSON shape of a plan that ``solve --json``, ``evaluate --json``, frontiers and sweeps print
    (the module docstring's), for a staged plan or a one-stage one (a single stage). Portfolios keep the
    one-stage fields of their published schema (``planopt schema --kind portfolio-result``)."""
    if isinstance(plan, StagedPlan):
        return plan.to_dict() if plan.student is not None or student is None else \
            StagedPlan(plan.stages, plan.checkpoint_interval_minutes, student, plan.retention).to_dict()
    return StagedPlan.of_plan(plan, student).to_dict()
