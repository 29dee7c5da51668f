r"""Separate rollout hardware: generation on its own GPUs, training on the plan's.

An instance that lists ``hardware.rollout_gpus`` lets every RL and OPD plan choose,
besides the colocated choices (generation on the training GPUs, the engine in
a ``rollout_hbm_share`` of their HBM), a *split* one: the training GPUs
:math:`(g, n)` plus :math:`n_r` rollout GPUs of type :math:`g_r`
(``plan.HardwareChoice.rollout_gpu``, ``rollout_count``). The decision is one
more hardware option, so recipe × hardware stays a product of one-hots and the
MIP's disaggregation (``formulation/work.py``) prices it exactly. On a split
choice (``hardware.HardwareProfile``):

- generation components (decode, the tail, prefill, validation decodes) take
  their unit seconds from the rollout GPUs, whose engine may use
  ``defaults.DEDICATED_ROLLOUT_HBM_SHARE`` of their HBM (nothing else lives there)
  at the tensor-parallel size of most decode throughput (``dedicated_tensor_parallel``);
- training and scoring components (log-probs, teacher, reward model, training,
  collectives) from the training GPUs;
- the weight hand-over per step crosses the network
  (``physics.split_weight_transfer_seconds``);
- a synchronous step lasts the sum of its parts, as colocated (asynchronous RL,
  ``asynchronous.py``, overlaps generation with training on these choices only);
- money per hour is :math:`n p_g + n_r p_{g_r}`; failures strike any of the
  :math:`n + n_r` GPUs; GPU-hours count both sets;
- memory: training and frozen-model state must fit the training GPUs, the
  engine (weights and one longest sequence's KV cache) the rollout GPUs. SFT
  generates nothing, so it fits no split choice (its rollout GPUs would idle).

A rollout GPU that cannot hold any shard of the student (at every tensor-parallel
size up to its largest count) is refused as bad input (``check_rollout_options``).
"""

from __future__ import annotations

from planopt.models.catalog import defaults as d
from planopt.models.cost import physics as ph


def dedicated_efficiency(eff):
    """The efficiency settings with the rollout engine's HBM share of a GPU it has to itself."""
    return eff.model_copy(update={"rollout_hbm_share": d.DEDICATED_ROLLOUT_HBM_SHARE})


def longest_sequence_tokens(inst) -> float:
    """Tokens of the longest rollout sequence: the prompt and the longest response."""
    return inst.task.prompt_tokens + inst.task.max_response_tokens


def dedicated_tensor_parallel(arch, gpu, count: int, eff, longest_seq_tokens: float, live_context_tokens: float) -> int | None:
    r"""Tensor-parallel size of an engine on GPUs of its own: among the power-of-two sizes whose HBM share
    holds the weights and one longest sequence's KV cache (``physics.rollout_tensor_parallel``'s test), the
    one with the least seconds per decoded token when every replica runs its largest batch,

    .. math:: tp^* = \arg\min_{tp} \frac{t_{step}(b_{max}(tp), tp)}{b_{max}(tp) \cdot n / tp}

    (the smaller size on ties); None when no size fits. A colocated engine takes the smallest size that fits
    (its HBM is lent by the trainer); a dedicated one is configured for throughput, since nothing else needs
    its memory. The choice does not move with ``efficiency.decode_factor`` (every step time scales alike),
    so the scenario evaluator's rescaling stays exact."""
    smallest = ph.rollout_tensor_parallel(arch, gpu, count, eff, longest_seq_tokens)
    if smallest is None:
        return None
    best, best_seconds, tp = smallest, float("inf"), smallest
    while tp <= count:
        batch = ph.max_decode_batch(arch, gpu, tp, live_context_tokens, eff)
        seconds = ph.decode_step_seconds(arch, gpu, tp, batch, live_context_tokens, eff) / (batch * count / tp)
        if seconds < best_seconds:
            best, best_seconds = tp, seconds
        tp *= 2
    return best


def rollout_choices(inst, price_of) -> list[tuple[str, int]]:
    """(rollout GPU, count) pairs within availability and with a price, in a stable order."""
    out = []
    for o in inst.hardware.rollout_gpus:
        out.extend((o.key, n) for n in sorted(set(o.counts))
                   if price_of(inst, o, n) is not None and (o.available_gpus is None or n <= o.available_gpus))
    return out


def pair_allowed(inst, train_gpu: str, train_count: int, rollout_gpu: str, rollout_count: int) -> bool:
    """Whether training GPUs and a rollout set may pair: of one vendor (the weights go over one NCCL
    communicator, as NeMo RL's non-colocated refit sends them, and one communicator does not span
    NVIDIA, AMD and TPU devices; a custom GPU pairs with any), and, for one GPU type on both sides, the
    two sets together within the training entry's ``available_gpus``."""
    train = next(o for o in inst.hardware.gpus if o.key == train_gpu)
    other = next(o for o in inst.hardware.rollout_gpus if o.key == rollout_gpu)
    vendors = {train.spec().vendor, other.spec().vendor}
    if len(vendors - {"custom"}) > 1:
        return False
    if train_gpu != rollout_gpu:
        return True
    return train.available_gpus is None or train_count + rollout_count <= train.available_gpus


def check_rollout_options(inst, price_of) -> None:
    """Raise ValueError naming the field when ``hardware.rollout_gpus`` cannot be honoured (``price_of(inst,
    option)``: an option's price per GPU-hour, ``hardware.price_usd_per_gpu_hour``, as for ``rollout_choices``)."""
    if not any(m in inst.training.methods for m in ("rl", "opd")):
        raise ValueError("hardware.rollout_gpus: only RL and OPD generate, and training.methods has neither; "
                         "remove rollout_gpus or add a method that generates")
    eff = dedicated_efficiency(inst.efficiency)
    seq = longest_sequence_tokens(inst)
    # the instance's own prices: one GPU type has one (catalog prices depend on the count an offer holds)
    train_price = {o.key: o.price_usd_per_gpu_hour for o in inst.hardware.gpus if o.price_usd_per_gpu_hour is not None}
    for n, option in enumerate(inst.hardware.rollout_gpus):
        spec = option.spec()
        most = max(option.counts)
        if ph.rollout_tensor_parallel(inst.student, spec, most, eff, seq) is None:
            raise ValueError(f"hardware.rollout_gpus.{n}: a rollout GPU with too little memory for any model shard: "
                             f"{option.name} ({spec.hbm_gb:g} GB) cannot hold a shard of the student's bf16 weights "
                             f"({inst.student.params_b:g} B parameters) and one longest sequence's KV cache at any "
                             f"tensor-parallel size up to {most} GPUs; give a larger GPU or a larger count")
        price = option.price_usd_per_gpu_hour
        if price is not None and option.key in train_price and train_price[option.key] != price:
            raise ValueError(f"hardware.rollout_gpus.{n}.price_usd_per_gpu_hour: {option.key} is also in hardware.gpus "
                             f"at ${train_price[option.key]}/h; one GPU type has one price")
