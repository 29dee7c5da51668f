r"""What a recipe's work is made of, by name: the component families (and the wall-clock category and
rate factor each fills), component keys, and the shapes of an instance that both the recipes
(``recipes.py``: how much of each component) and the hardware (``hardware.py``: seconds per unit of
each) read: an SFT micro-step's tokens and the adapters a plan may choose.
"""

from __future__ import annotations

import functools

from dataclasses import dataclass

from planopt.models.schema.instance import Instance


# Component families, and the part of the wall-clock breakdown each fills.
DECODE, TAIL, SYNC, PREFILL = "decode_tokens", "rollout_tail_steps", "weight_sync_steps", "prefill_flops"
STUDENT_FWD, TEACHER, REWARD_MODEL, TRAIN, ENV_WAIT = "student_logprob_flops", "teacher_flops", "reward_model_flops", "train_flops", "env_wait_seconds"
# CPU-seconds of environment work on a pool of workers (``environments.py``): only with ``environments.pools``.
ENV_CPU = "env_cpu_seconds"
# The uncertain parameter environment work scales with, proportionally (``RATE_FACTOR``; ``uncertainty/model.py``).
ENV_RATE = "environments.cpu_seconds_per_sample"
# Expert-parallel all-to-all bytes of a mixture-of-experts student (zero for dense).
TRAIN_A2A, LOGPROB_A2A = "train_alltoall_bytes", "logprob_alltoall_bytes"
# SFT attention FLOPs (they grow with the sequence), FSDP / ZeRO-3 collective bytes,
# and host-link bytes under CPU offload (per micro-step stream, per optimiser step state).
ATTN, FSDP, OFFLOAD_STREAM, OFFLOAD_STATE = "train_attention_flops", "train_fsdp_bytes", "offload_stream_bytes", "offload_state_bytes"
# Validation decodes: eval-set tokens generated on the plan's GPUs (issue 12, item 8).
EVAL = "eval_decode_tokens"
# Context parallelism's KV ring (``context.py``): K and V bytes of the trained and of the scored tokens, per
# forward-pass unit (issue 24, item 2); zero seconds on a choice without context parallelism.
CP_TRAIN, CP_LOGPROB = "cp_train_kv_bytes", "cp_logprob_kv_bytes"
# Their qualifier: the sequence whose attention the ring hides behind (an SFT example's context, a rollout's).
CP_SFT_SEQ, CP_ROLLOUT_SEQ = "sft_sequence", "rollout_sequence"
HOURS_CATEGORY = {DECODE: "generation", TAIL: "generation", PREFILL: "generation", STUDENT_FWD: "scoring",
                  TEACHER: "scoring", REWARD_MODEL: "scoring", TRAIN: "training", SYNC: "training",
                  ENV_WAIT: "environment_wait", TRAIN_A2A: "training", LOGPROB_A2A: "scoring",
                  ATTN: "training", FSDP: "training", OFFLOAD_STREAM: "training", OFFLOAD_STATE: "training",
                  EVAL: "evaluation", CP_TRAIN: "training", CP_LOGPROB: "scoring", ENV_CPU: "environment_wait"}
# The rate multiplier of ``schema.Efficiency`` each family's time scales with, exactly
# as 1/factor (None: neither); environment work scales with ``ENV_RATE`` itself, proportionally (the CPU-seconds
# per sample it is made of). The scenario evaluator (``scenarios.py``) rescales
# component hours by it; ``tests/models/uncertainty/test_scenarios.py`` checks the proportionality on
# every family, so a new family must be listed here.
RATE_FACTOR = {DECODE: "decode_factor", TAIL: "decode_factor", PREFILL: "mfu_factor", STUDENT_FWD: "mfu_factor",
               TEACHER: "mfu_factor", REWARD_MODEL: "mfu_factor", TRAIN: "mfu_factor", SYNC: None, ENV_WAIT: None,
               TRAIN_A2A: None, LOGPROB_A2A: None, ATTN: "mfu_factor", FSDP: None, OFFLOAD_STREAM: None, OFFLOAD_STATE: None,
               EVAL: "decode_factor", CP_TRAIN: None, CP_LOGPROB: None, ENV_CPU: ENV_RATE}


@functools.lru_cache(maxsize=4096)
def component(family: str, *qualifiers: object) -> str:
    """Component key, e.g. ``decode_tokens|opd:fp8|8`` (made once per key: every recipe profile asks for its keys)."""
    return "|".join([family, *map(str, qualifiers)])


def family_of(key: str) -> str:
    """The family of a component key: the part before its first ``|``."""
    return key.split("|", 1)[0]


def adapter_ranks(inst: Instance) -> list:
    """The adapters a plan may choose: None (full weights) and/or each LoRA rank, in a stable order."""
    t = inst.training
    return ([None] if "full" in t.adapter_options else []) + \
        (sorted(set(t.lora_rank_options)) if "lora" in t.adapter_options else [])


@dataclass(frozen=True)
class SftShape:
    """How SFT examples become micro-steps: real tokens per example, tokens computed
    per example (with padding), the attention context of a token, and examples per
    GPU per micro-step."""

    real_tokens: float
    computed_tokens: float
    context_tokens: float
    examples_per_microstep: float

    @property
    def microbatch_tokens(self) -> float:
        """Tokens computed per GPU per micro-step: per example (with padding) times examples per micro-step."""
        return self.computed_tokens * self.examples_per_microstep


def sft_shape(inst: Instance) -> SftShape:
    r"""Sequence length :math:`S` (default: one example), real tokens
    :math:`t = \min(\bar t, S)` (truncation). Packed: examples fill sequences of
    :math:`S`, attend within themselves (varlen attention, context :math:`t`), and a
    micro-step holds :math:`S/t` of them. Not packed: a micro-step holds
    ``micro_batch_examples`` :math:`m`; one runs at its own length (no padding),
    several are padded to :math:`S` (``padding="max_length"``, as FastChat's
    Vicuna trainer does) and the padding is computed and attended too."""
    data = inst.sft_data
    seq = data.sequence_length_tokens or data.example_tokens
    real = min(data.example_tokens, seq)
    if data.packing:
        return SftShape(real, real, real, seq / real)
    m = data.micro_batch_examples
    padded = real if m == 1 else seq
    return SftShape(real, padded, padded, float(m))


def sft_sequence_tokens(inst: Instance) -> float:
    """Tokens one GPU holds in a micro-step (its activation memory)."""
    return sft_shape(inst).microbatch_tokens
