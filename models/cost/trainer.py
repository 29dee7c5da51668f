r"""Trainers: the software that runs the training passes, as an attribute of a hardware choice.

A trainer is a backend (``megatron``, ``fsdp``, ``deepspeed`` with its ZeRO stage; ``training.trainer``) and it
prices three things (``defaults.TRAINER_EFFICIENCY``, each from a table that runs two backends on one workload):

- the speed of its training passes and of its scoring passes against the MFU curve, :math:`s_{train}` and
  :math:`s_{fwd}`: a FLOP of a training pass takes :math:`1/s_{train}` of the curve's time;
- its parameter and gradient collectives per micro-step, a share :math:`c` of ZeRO-3's :math:`3 \cdot 2N`
  bytes (``physics.fsdp_bytes_per_sequence``), in series with compute, or overlapped with it where the backend
  prefetches: then only what outlasts the micro-step's compute shows,

  .. math:: u_{coll} = c \cdot u_{FSDP} \cdot \max\Big(0,\ 1 - \frac{F_{seq}\, u_{FLOP}}{c\, B_{seq}\, u_{FSDP}}\Big)

  with :math:`F_{seq}` the FLOPs of one micro-step's sequence (training pass and attention, padding included),
  :math:`B_{seq}` its collective bytes and :math:`u` the seconds per unit on the choice (:math:`u_{FLOP}` at the
  curve's MFU, ``mfu_factor`` 1, so that collective time does not move with the MFU factor of a pilot fit or a
  scenario, as ``recipes.RATE_FACTOR`` has it); the share is a constant of the (instance, hardware choice) pair,
  so the time stays linear in the recipe's amounts;
- its training-state memory: ZeRO-1 and ZeRO-2 keep parts of the state whole on every GPU
  (``defaults.ZERO_STAGE_STATE_BYTES_PER_PARAM``);
- under CPU offload, where its optimiser step runs: DeepSpeed updates the state on the host CPUs (measured host
  seconds per parameter per node, ``physics.host_optimizer_seconds_per_state_byte``), the others move it over the
  host link for a step on the GPU (``physics.offload_state_seconds_per_byte``).

Padding is the SFT shape's (``components.sft_shape``): a micro-batch of several examples is padded to the
sequence length whatever the backend. ``training.trainer_options`` makes the trainer a decision exactly as CPU
offload is one: each hardware choice is offered once per trainer (``HardwareChoice.trainer``), so every layer that
takes hardware choices (stages, candidate students, scenarios) chooses it with no new constraint. A plan that names
no trainer is priced with ``defaults.TRAINER_DEFAULT``: the figures of every instance that states none.
"""

from __future__ import annotations

from planopt.models.catalog import defaults as d
# a trainer key's stage and its words are the schema's (calibration cases describe trainers too); the cost
# model's names for them
from planopt.models.schema.instance import describe_trainer as describe  # noqa: F401
from planopt.models.schema.instance import trainer_zero_stage as zero_stage  # noqa: F401


def efficiency(key: str | None) -> dict:
    """The pricing of trainer ``key`` (``Trainer.key``; None: the default): ``train_speed``, ``forward_speed``,
    ``collective_share``, ``overlap`` and ``host_optimizer``."""
    return d.TRAINER_DEFAULT if key is None else d.TRAINER_EFFICIENCY[key]


def train_speed(key: str | None) -> float:
    """Speed of the trainer's training passes against the MFU curve (1: the curve)."""
    return efficiency(key)["train_speed"]


def forward_speed(key: str | None) -> float:
    """Speed of the trainer's scoring (forward-only) passes against the MFU curve (1: the curve)."""
    return efficiency(key)["forward_speed"]


def host_optimizer(key: str | None) -> bool:
    """Whether the trainer, under CPU offload, runs the optimiser step on the host (DeepSpeed's ZeRO-Offload)
    rather than moving the state over the host link for a step on the GPU."""
    return efficiency(key)["host_optimizer"]


def collective_seconds_per_byte(key: str | None, fsdp_seconds_per_byte: float, flop_seconds_per_sequence: float,
                                fsdp_bytes_per_sequence: float) -> float:
    r"""Seconds per byte of ZeRO-3's collectives (``physics.fsdp_bytes_per_sequence``) on a choice running ``key``:
    :math:`c\, u` in series, :math:`c\, u \max(0, 1 - t_{compute}/t_{coll})` overlapped (module docstring);
    ``flop_seconds_per_sequence`` is :math:`F_{seq} u_{FLOP}`, the compute time a micro-step's sequence adds."""
    eff = efficiency(key)
    in_series = eff["collective_share"] * fsdp_seconds_per_byte
    if in_series == 0.0 or not eff["overlap"]:
        return in_series
    collective = in_series * fsdp_bytes_per_sequence
    return in_series * max(0.0, 1.0 - flop_seconds_per_sequence / collective)
