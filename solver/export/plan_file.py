"""Reading a plan to export: the ``plan`` object that ``planopt solve INSTANCE --json`` prints, and the instance
it was solved for.

The plan JSON alone does not carry what a launcher or a framework needs: the prompts per step (the batch size),
the prompt and response lengths, a GPU type's node size, the provider and region of its offer and the pricing tier
are the instance's (``training.methods.*.prompts_per_step``, ``task.*_tokens``, ``hardware.gpus[]``,
``hardware.pricing``; the offer is the one the cost model bought the stage's count from, ``hardware.offer_of``). So ``planopt export`` takes both, and checks that the plan is one of the instance's options
(``Evaluator.check_plan``) before anything is written.

Each stage becomes one :class:`ExportStage`: the plan's decisions, and what follows from them on that instance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from planopt.models.cost.pretraining import PRETRAIN_KEY
from planopt.models.cost.asynchronous import combine
from planopt.errors import InputError, read_json
from planopt.models.cost.hardware import offer_of, tier_of

# The keys every `solve --json` result carries (planopt schema --kind result)
RESULT_KEYS = ("version", "status", "plan", "metrics")


@dataclass(frozen=True)
class ExportStage:
    """One stage of the plan with everything an exporter writes about it."""

    number: int                       # 1, 2, 3: the stage's place in the plan
    method: str                       # sft | rl | opd
    steps: int
    samples_per_prompt: tuple[int, ...]   # one per sampling phase (RL, OPD); empty for SFT
    teacher_precision: Optional[str]
    external_data_share: Optional[float]
    max_epochs: Optional[int]
    lora_rank: Optional[int]          # None: full fine-tuning
    cpu_offload: bool
    staleness_steps: int
    rollout: Optional[dict]           # separate rollout GPUs {"gpu", "gpu_count"}, or None (colocated)
    gpu: str                          # the catalog GPU name (the offer label stripped)
    gpu_key: str                      # the plan's name of the hardware entry (NAME or NAME@offer)
    gpu_count: int
    gpus_per_node: int                # the instance's entry, else the catalog's node size
    provider: Optional[str]
    region: Optional[str]
    tier: str                         # the entry's tier (hardware.tier_of): on_demand | spot
    prompts_per_step: int             # training.methods[method].prompts_per_step (examples per step for SFT)
    save_every_steps: int             # the checkpoint interval in optimizer steps (see checkpoint_steps)
    hours_per_step: float
    teacher_trained: bool             # OPD whose teacher is trained first, as its own job (recipe.teacher_training)
    environments: Optional[str] = None  # the pool the environments run on, described (environments.pools), or None
    teacher_precision_by_phase: tuple[str, ...] = ()   # OPD: the teacher's precision per phase, when they differ
    pretraining_tokens: float = 0.0   # continued pre-training before the stage (models/cost/pretraining.py); 0: none

    @property
    def num_nodes(self) -> int:
        """Nodes the stage's training GPUs fill."""
        return math.ceil(self.gpu_count / self.gpus_per_node)

    @property
    def gpus_on_each_node(self) -> int:
        """GPUs per node: a whole node, or all of them when they fit in one."""
        return min(self.gpu_count, self.gpus_per_node)


@dataclass(frozen=True)
class ExportJob:
    """The plan's job: its student, its stages and the instance values every stage shares."""

    student: str
    stages: tuple[ExportStage, ...]
    checkpoint_interval_minutes: float
    prompt_tokens: float
    response_tokens: float
    max_response_tokens: float
    sft_example_tokens: Optional[float]
    reference_logprobs: bool          # training.reference_logprobs: RL computes reference log-probs for a KL penalty
    staged: bool


def read_plan(path: Path) -> dict:
    """The ``plan`` object of a ``solve --json`` file; InputError naming the file when it is not one."""
    data = read_json(path)
    missing = [k for k in RESULT_KEYS if k not in data]
    if missing:
        raise InputError(f"{path}: not a `planopt solve --json` plan (no {missing[0]!r} key); "
                         "write one with `planopt solve INSTANCE --out plan.json`")
    if not isinstance(data["plan"], dict):
        raise InputError(f"{path}: holds no plan (status {data['status']!r}); export a solve that found one")
    return data["plan"]


def load_job(plan_path: Path, instance_path: Path) -> ExportJob:
    """The plan at ``plan_path`` checked against the instance at ``instance_path``; InputError naming the file."""
    from planopt.instance import load_instance
    from planopt.models.cost.evaluator import Evaluator
    from planopt.models.schema.plan import Plan
    raw = read_plan(plan_path)
    try:
        plan = Plan.from_dict(raw)
    except ValueError as exc:
        raise InputError(f"{plan_path}: {exc}") from None
    inst = load_instance(instance_path)
    ev = Evaluator(inst)
    try:
        ev.check_plan(plan)
    except ValueError as exc:
        raise InputError(f"{plan_path}: not a plan of {instance_path}: {exc}") from None
    ev = ev.for_student(plan.student)
    stages = tuple(_stage(ev, n + 1, stage, plan.checkpoint_interval_minutes) for n, stage in enumerate(plan.stages))
    task = ev.inst.task
    sft = ev.inst.sft_data
    return ExportJob(student=plan.student or ev.inst.student_name, stages=stages,
                     checkpoint_interval_minutes=plan.checkpoint_interval_minutes,
                     prompt_tokens=task.prompt_tokens, response_tokens=task.response_tokens,
                     max_response_tokens=task.max_response_tokens,
                     sft_example_tokens=None if sft is None else (sft.sequence_length_tokens or sft.example_tokens),
                     reference_logprobs=ev.inst.training.reference_logprobs, staged=len(stages) > 1)


def _gpu_option(inst, key: str):
    for option in inst.hardware.gpus:
        if option.key == key:
            return option
    raise InputError(f"plan: GPU {key!r} is not an entry of the instance's hardware.gpus")


def checkpoint_steps(interval_minutes: float, hours_per_step: float) -> int:
    """The plan's checkpoint interval (minutes of training) as optimizer steps between saves, at the cost model's
    compute hours per step on the stage's hardware (``Evaluator.compute_hours_by_component``); at least 1."""
    minutes_per_hour = 60.0
    if hours_per_step <= 0:
        return 1
    return max(1, int(interval_minutes / minutes_per_hour / hours_per_step))


def _stage(ev, number: int, stage, interval_minutes: float) -> ExportStage:
    inst, recipe, hw = ev.inst, stage.recipe, stage.hardware
    option = _gpu_option(inst, hw.gpu)
    spec = option.spec()
    offer = offer_of(inst, option, hw.count)  # where the plan buys these GPUs (its provider's, or the catalog's cheapest)
    # the step's hours, its overlapped phases at their longest side (asynchronous RL, an agent loop)
    # (continued pre-training runs before the stage's steps: not in a step's hours)
    by_component = {k: v for k, v in ev.compute_hours_by_component(recipe, hw).items() if k != PRETRAIN_KEY}
    hours_per_step = float(combine(by_component)) / recipe.steps
    rollout = None if not hw.split else {"gpu": hw.rollout_gpu, "gpu_count": hw.rollout_count}
    return ExportStage(
        number=number, method=recipe.method, steps=recipe.steps, samples_per_prompt=tuple(recipe.samples_per_prompt),
        teacher_precision=recipe.teacher_precision, external_data_share=recipe.external_data_share,
        max_epochs=recipe.max_epochs if recipe.method == "sft" else None, lora_rank=recipe.lora_rank,
        cpu_offload=hw.cpu_offload, staleness_steps=recipe.staleness_steps, rollout=rollout,
        gpu=option.name, gpu_key=hw.gpu, gpu_count=hw.count,
        gpus_per_node=spec.gpus_per_node if offer is None else offer.node_gpus,
        provider=option.provider if offer is None else offer.provider,
        region=option.region if offer is None else offer.region, tier=tier_of(inst, option),
        prompts_per_step=inst.training.methods[recipe.method].prompts_per_step,
        save_every_steps=checkpoint_steps(interval_minutes, hours_per_step), hours_per_step=hours_per_step,
        teacher_trained=recipe.teacher_training is not None, environments=_environments(ev, hw),
        teacher_precision_by_phase=recipe.teacher_precision_by_phase,
        pretraining_tokens=recipe.pretraining_tokens)


def _environments(ev, hw) -> Optional[str]:
    """The pool a stage's environments run on, as the export notes name it (None without one)."""
    if hw.environment_pool is None:
        return None
    from planopt.models.cost.environments import describe
    hp = ev.hardware(hw)
    return describe(hp.environment_pool, hp.nodes)


def as_dict(stage: ExportStage) -> dict[str, Any]:
    """The stage's values as the plan names them (for --json)."""
    return {"stage": stage.number, "method": stage.method, "gpu": stage.gpu_key, "gpu_count": stage.gpu_count,
            "num_nodes": stage.num_nodes, "gpus_per_node": stage.gpus_on_each_node, "steps": stage.steps}
