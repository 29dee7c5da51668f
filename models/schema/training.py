"""What a plan may choose in training: methods and their lengths, the trainer, schedules, adapters, offload,
staleness and stage sequences (``Instance.training``)."""

from __future__ import annotations

from typing import Annotated, Literal, Optional, Union

from pydantic import Field, field_validator

from planopt.models.catalog import defaults as d
from planopt.models.schema.base import (  # noqa: F401 (the shared types)
    MAX_STAGES, METHODS, Method, NonNegativeInt, PositiveInt, Strict)


class MethodGpu(Strict):
    """A GPU a method's stages may train on (``MethodOptions.gpus``)."""

    name: str = Field(description="a GPU of hardware.gpus as a plan names it (NAME, or NAME@offer for one offer of it; "
                      "NAME alone allows each of its offers)")
    counts: Optional[list[PositiveInt]] = Field(None, min_length=1, description="the counts allowed, among the entry's "
                                                "own; null: every count it offers")

    def allows(self, gpu: str, count: int) -> bool:
        """Whether a hardware choice of ``count`` × ``gpu`` (a plan's GPU key) is this entry's."""
        return (gpu == self.name or gpu.split("@")[0] == self.name) and (self.counts is None or count in self.counts)


class MethodOptions(Strict):
    """One method's options: its training lengths, the prompts (or examples) per step, and the GPUs it may use."""

    steps_options: list[PositiveInt] = Field(min_length=1, description="training length levels (optimizer steps)")
    prompts_per_step: PositiveInt = Field(description="prompts per step (RL/OPD) or examples per step (SFT)")
    gpus: Optional[list[MethodGpu]] = Field(None, min_length=1, description="the GPUs (and counts) this method's "
                                            "stages may train on, each one of hardware.gpus; null: every one of them")

    def allows(self, gpu: str, count: int) -> bool:
        """Whether this method's stages may train on ``count`` × ``gpu`` (``gpus``)."""
        return self.gpus is None or any(g.allows(gpu, count) for g in self.gpus)


def trainer_zero_stage(key: str | None) -> int | None:
    """The DeepSpeed ZeRO stage of a trainer key (``Trainer.key``: ``deepspeed-zero2`` -> 2,
    ``deepspeed-zero3-serial`` -> 3); None for any other."""
    return int(key.removeprefix("deepspeed-zero")[0]) if key is not None and key.startswith("deepspeed-zero") else None


def deepspeed_key(zero_stage: int | None, overlap_comm: bool | None) -> str:
    """The trainer key of DeepSpeed at ``zero_stage`` (None: 3) with ``overlap_comm`` (None: DeepSpeed's own default,
    true at ZeRO-3 and false at 1-2: ``DeepSpeedZeroConfig.overlap_comm_valid`` in deepspeed/runtime/zero/config.py).
    The key names only a departure from that default: ``deepspeed-zero3-serial``, ``deepspeed-zero2-overlap``."""
    stage = zero_stage or 3
    default = stage == 3
    overlap = default if overlap_comm is None else bool(overlap_comm)
    return f"deepspeed-zero{stage}" + ("" if overlap == default else "-overlap" if overlap else "-serial")


def describe_trainer(key: str | None) -> str:
    """A trainer key in words: ``DeepSpeed ZeRO-3``, ``PyTorch FSDP / DTensor``, ``Megatron-Core``, or the default."""
    if key is None:
        return "default (the MFU curve, ZeRO-3's collectives in series)"
    stage = trainer_zero_stage(key)
    if stage is not None:
        overlap = d.TRAINER_EFFICIENCY[key]["overlap"]
        return f"DeepSpeed ZeRO-{stage}, collectives " + ("overlapped" if overlap else "in series")
    return {"megatron": "Megatron-Core", "fsdp": "PyTorch FSDP / DTensor"}[key]


class Trainer(Strict):
    """The software that runs the training passes (``cost/trainer.py``): its backend, DeepSpeed's ZeRO stage, and the
    framework on top (free text, a citation: it does not enter the price)."""

    backend: Literal[d.TRAINER_BACKENDS] = Field(  # type: ignore[valid-type]
        description="megatron (Megatron-Core), fsdp (PyTorch FSDP / FSDP2 / DTensor) or deepspeed")
    zero_stage: Optional[Annotated[int, Field(ge=1, le=3)]] = Field(
        None, description="DeepSpeed ZeRO stage 1-3 (backend deepspeed only; default 3)")
    overlap_comm: Optional[bool] = Field(
        None, description="DeepSpeed's overlap_comm (backend deepspeed only; default DeepSpeed's: true at ZeRO-3, "
                          "false at 1-2): whether its collectives overlap compute")
    framework: Optional[str] = Field(None, description="free text: nemo-rl, verl, llamafactory, hf-trainer, ...")

    @field_validator("zero_stage", "overlap_comm")
    @classmethod
    def _is_deepspeed(cls, value, info):
        backend = info.data.get("backend")
        if value is not None and backend is not None and backend != "deepspeed":
            what = "ZeRO stages are" if info.field_name == "zero_stage" else "overlap_comm is"
            raise ValueError(f"{what} DeepSpeed's, and backend is {backend!r}; give backend 'deepspeed' "
                             f"or leave {info.field_name} out")
        return value

    @property
    def key(self) -> str:
        """How a plan names the trainer: ``megatron``, ``fsdp``, ``deepspeed-zero3`` (``HardwareChoice.trainer``;
        ``deepspeed_key``)."""
        return deepspeed_key(self.zero_stage, self.overlap_comm) if self.backend == "deepspeed" else self.backend


class Training(Strict):
    """What a plan may choose in training: methods and lengths, sampling schedules, adapters, offload, staleness and
    stage sequences."""

    methods: dict[Method, MethodOptions] = Field(min_length=1, description="allowed methods and their length options")
    activation_recompute: bool = Field(True, description="8·N instead of 6·N FLOPs per trained token")
    reference_logprobs: bool = Field(True, description="RL computes reference-model log-probs for a KL penalty")
    phases: PositiveInt = Field(3, le=6, description="sampling phases; steps are split evenly")
    samples_per_prompt_options: list[PositiveInt] = Field([2, 4, 8, 16], min_length=1)
    taper_only: bool = Field(True, description="samples per prompt never rise from one phase to the next")
    cpu_offload: Union[bool, Literal["if_needed"]] = Field(
        False, description="ZeRO-3 / FSDP offload of parameters, gradients and optimiser state to host memory, priced over the "
        "host link: true (every plan offloads), false (none does), or \"if_needed\" (a decision: a plan offloads exactly when its "
        "training state fits its GPUs no other way, on GPUs with a known host link)")
    adapter_options: list[Literal["full", "lora"]] = Field(list(d.ADAPTER_OPTIONS_DEFAULT), min_length=1, description="a plan's choice of training all weights ('full') or low-rank adapters on every linear layer ('lora'): memory, FLOPs, weight hand-over, checkpoint size, quality and forgetting")
    lora_rank_options: list[PositiveInt] = Field(list(d.LORA_RANK_OPTIONS_DEFAULT), min_length=1, description="LoRA ranks a 'lora' plan may choose (positive integers)")
    staleness_steps_options: list[NonNegativeInt] = Field(
        [0], min_length=1, description="asynchronous RL (and OPD under asynchronous_opd): how many steps behind the "
                                       "trained policy generation may run (0: synchronous); above 0 needs RL or OPD and "
                                       "hardware.rollout_gpus")
    asynchronous_opd: bool = Field(False, description="true: OPD recipes take staleness_steps_options too "
                                   "(asynchronous, off-policy distillation, cost/asynchronous.py); false: OPD is synchronous")
    trainer: Optional[Trainer] = Field(
        None, description="the trainer every plan runs (cost/trainer.py); null: the default pricing (the MFU curve, "
        "ZeRO-3's collectives in series)")
    trainer_options: Optional[list[Trainer]] = Field(
        None, min_length=1, description="trainers a team can run: a decision, each hardware choice offered once per "
        "trainer (give this or trainer, not both)")
    context_parallel: Union[PositiveInt, list[PositiveInt]] = Field(
        1, description="context parallelism (cost/context.py): the training sequence split over this many GPUs (a "
        "power of two), or a list of degrees a plan chooses from (each hardware choice offered once per degree that "
        "divides its GPU count); 1: no context parallelism")
    stage_sequences: Optional[list[list[Method]]] = Field(
        None, description="staged recipes: the method sequences a plan may run, one stage after another, each stage with "
        "its own recipe and hardware (e.g. [[\"sft\", \"rl\"], [\"rl\"]]); stages run in the order sft, rl, opd, each at "
        "most once, up to three; null: one stage of any method in `methods`")

    @field_validator("stage_sequences")
    @classmethod
    def _allowed_sequences(cls, sequences):
        if sequences is None:
            return None
        if not sequences:
            raise ValueError("expected at least one stage sequence, or null for one-stage plans")
        for n, seq in enumerate(sequences):
            if not 1 <= len(seq) <= MAX_STAGES or any(METHODS.index(a) >= METHODS.index(b) for a, b in zip(seq, seq[1:])):
                raise ValueError(f"[{n}]: {list(seq)} is not an allowed stage sequence; stages run in the order "
                                 f"sft, rl, opd, each at most once, one to {MAX_STAGES} of them")
        unique = list(dict.fromkeys(tuple(seq) for seq in sequences))
        return [list(seq) for seq in unique]

    @field_validator("context_parallel")
    @classmethod
    def _powers_of_two(cls, degrees):
        listed = degrees if isinstance(degrees, list) else [degrees]
        if not listed:
            raise ValueError("expected a power of two or a non-empty list of them, got []")
        for cp in listed:
            if cp & (cp - 1):
                raise ValueError(f"{cp} is not a power of two (context-parallel degrees: 1, 2, 4, 8, ...)")
        if len(set(listed)) != len(listed):
            raise ValueError(f"{listed} lists a degree twice")
        return degrees

    def context_parallel_degrees(self) -> list[int]:
        """The context-parallel degrees a plan may run, ascending ([1]: none)."""
        return sorted(self.context_parallel) if isinstance(self.context_parallel, list) else [self.context_parallel]

    def trainer_keys(self) -> list[str | None]:
        """The trainers a plan may run, by key (``Trainer.key``); [None]: the default pricing."""
        if self.trainer_options is not None:
            return [t.key for t in self.trainer_options]
        return [None if self.trainer is None else self.trainer.key]

    def sequences(self) -> list[tuple[str, ...]]:
        """The stage sequences a plan may run (``stage_sequences``, or each method of ``methods`` alone)."""
        if self.stage_sequences is None:
            return [(m,) for m in self.methods]
        return [tuple(seq) for seq in self.stage_sequences]

    @property
    def staged(self) -> bool:
        """Whether some plan runs more than one stage."""
        return any(len(seq) > 1 for seq in self.sequences())
