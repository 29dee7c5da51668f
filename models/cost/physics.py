r"""First-principles formulas: FLOPs, bytes, memory, decode speed, failures.

Each function is one formula, written out in its docstring, with the source of
its coefficients in ``defaults.py``. Everything here is pure arithmetic on
numbers; the evaluator (``costs.py``) and the MIP (``formulation/``) both take
their coefficients from these functions, so there is one source of truth.
"""

from __future__ import annotations

import math

import numpy as np

from planopt.models.catalog import defaults as d
from planopt.models.catalog import GpuSpec
from planopt.models.schema.instance import Architecture, Efficiency

GB = 1e9
TERA = 1e12


def kv_bytes_per_token(arch: Architecture) -> float:
    r"""KV cache bytes per token: :math:`2 \cdot L \cdot n_{kv} \cdot d_{head} \cdot b` (K and V, bf16)."""
    return 2.0 * arch.layers * arch.kv_heads * arch.head_dim * d.KV_BYTES_PER_ELEMENT


def kv_bytes_per_token_per_gpu(arch: Architecture, tp: int) -> float:
    r"""KV cache bytes per token that each GPU of a tensor-parallel group holds and reads.

    .. math:: kv_{gpu} = kv \cdot \max\Big(\frac{1}{tp}, \frac{1}{n_{kv}}\Big)

    Heads are split over the group while there are enough of them; past
    :math:`tp = n_{kv}` each GPU keeps a whole KV head, replicated :math:`tp / n_{kv}`
    times over the group (vLLM ``QKVParallelLinear``: ``num_kv_head_replicas =
    tp_size // total_num_kv_heads``). An MLA latent cache (written as one KV head)
    is replicated on every rank ("MLA KV cache duplicated across all TP ranks",
    LMSYS large-scale EP blog, 2025-05-05).
    """
    return kv_bytes_per_token(arch) * max(1.0 / tp, 1.0 / arch.kv_heads)


def weight_bytes(params_b: float, precision: str = "bf16") -> float:
    r"""Weight bytes: :math:`N \cdot b_{precision}` (bf16 2, fp8/int8 1, int4 0.5)."""
    return params_b * 1e9 * d.WEIGHT_BYTES_PER_PARAM[precision]


def lora_params(arch: Architecture, rank: int) -> float:
    r"""Adapter parameters of rank-:math:`r` LoRA on every linear layer (``defaults.LORA_*``).

    A :math:`d_{in} \times d_{out}` matrix gets :math:`r (d_{in} + d_{out})`. Per layer: q and o
    (:math:`h \to h`), k and v (:math:`h \to n_{kv} d_{head}`), and a gated MLP of three
    :math:`h \leftrightarrow I` matrices, with :math:`I` from the parameter count
    (:math:`N/L = 2h^2 + 2 h\, n_{kv} d_{head} + 3 h I`):

    .. math:: N_{LoRA} = r L \big(6h + 2 n_{kv} d_{head} + 3 (h + I)\big)

    Embeddings count into :math:`N/L`, so :math:`I` is an upper estimate (Qwen3-8B at
    r = 16: 48M against PEFT's 44M); for a MoE, :math:`I` sums the experts.
    """
    h, kv = float(arch.hidden), float(arch.kv_heads * arch.head_dim)
    per_layer = arch.params_b * 1e9 / arch.layers
    inter = max(h, (per_layer - 2.0 * h * h - 2.0 * h * kv) / (3.0 * h))
    attention = 2.0 * (h + h) + 2.0 * (h + kv)
    return float(rank) * arch.layers * (attention + d.LORA_MLP_MATRICES * (h + inter))


def train_flops_per_token(arch: Architecture, recompute: bool, lora_rank: int | None = None) -> float:
    r"""Hardware FLOPs per trained token: :math:`6N` (or :math:`8N` with activation recomputation).

    LoRA (``lora_rank``): the frozen weights skip their weight-gradient GEMMs,
    :math:`4N` (:math:`6N` with recomputation), plus the adapter's own :math:`6 N_{LoRA}`
    (its active share, for a MoE)."""
    n = arch.active_params_b * 1e9
    if lora_rank is None:
        per = d.TRAIN_RECOMPUTE_FLOPS_PER_PARAM_TOKEN if recompute else d.TRAIN_FLOPS_PER_PARAM_TOKEN
        return per * n
    per = d.FROZEN_TRAIN_RECOMPUTE_FLOPS_PER_PARAM_TOKEN if recompute else d.FROZEN_TRAIN_FLOPS_PER_PARAM_TOKEN
    active = arch.active_params_b / arch.params_b
    return per * n + d.TRAIN_FLOPS_PER_PARAM_TOKEN * lora_params(arch, lora_rank) * active


def forward_flops_per_token(arch: Architecture) -> float:
    r"""Forward (prefill, log-prob, scoring, decode) FLOPs per token: :math:`2N_{active}`."""
    return d.FORWARD_FLOPS_PER_PARAM_TOKEN * arch.active_params_b * 1e9


def peak_tflops(gpu: GpuSpec, precision: str) -> float:
    """Dense peak for a precision; int4 weight-only (W4A16) computes in bf16; a chip without fp8/int8 falls back."""
    if precision == "fp8":
        return gpu.fp8_tflops or gpu.bf16_tflops
    if precision == "int8":
        return gpu.int8_tops or gpu.fp8_tflops or gpu.bf16_tflops
    return gpu.bf16_tflops


def nodes(gpu: GpuSpec, count: int) -> int:
    """Nodes a job of ``count`` GPUs spans."""
    return max(1, math.ceil(count / gpu.gpus_per_node))


def _log_interpolate(points: tuple[tuple[float, float], ...], x: float) -> float:
    """Piecewise-linear in log(x) through ``points`` (sorted by x), flat outside them."""
    if x <= points[0][0]:
        return points[0][1]
    if x >= points[-1][0]:
        return points[-1][1]
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        if x0 <= x <= x1:
            t = (math.log(x) - math.log(x0)) / (math.log(x1) - math.log(x0))
            return y0 + t * (y1 - y0)
    raise ValueError(x)


def mfu(arch: Architecture, gpu: GpuSpec, count: int, eff: Efficiency) -> float:
    r"""Achieved model-FLOPs utilisation of a training or scoring pass.

    .. math:: \mathrm{MFU} = m(N_{act}) \cdot \frac{s_{MAMF}(g)}{s_{MAMF}(H100)} \cdot e^{\log_2(\mathrm{nodes})} \cdot f_{MFU}

    :math:`m` interpolates sourced points in :math:`\log N_{act}`: the dense curve
    for dense students, Megatron-Core's measured MoE curve for MoE students, times the
    MoE calibration factor (:func:`calibrated_speed`); an
    instance's ``efficiency.mfu_train`` replaces :math:`m`; :math:`f_{MFU}` is
    ``efficiency.mfu_factor`` (1 unless a pilot fit or a scenario sets it), times
    the software release's measured speed (:func:`release_speed`, 1 for the newest).
    """
    if eff.mfu_train is not None:
        base = eff.mfu_train
    elif arch.is_moe:
        base = _log_interpolate(d.MFU_MOE_BY_ACTIVE_PARAMS_B, arch.active_params_b) * calibrated_speed(arch)
    else:
        base = _log_interpolate(d.MFU_BY_ACTIVE_PARAMS_B, arch.active_params_b)
    vendor = d.MAMF_SHARE_OF_PEAK.get(gpu.name, d.MAMF_REFERENCE_SHARE) / d.MAMF_REFERENCE_SHARE
    scaling = eff.scaling_efficiency_per_doubling ** math.log2(nodes(gpu, count))
    return base * vendor * scaling * eff.mfu_factor * release_speed(eff)


def calibrated_speed(arch: Architecture) -> float:
    """The calibrated efficiency factor of the model's kind (``defaults.STEP_TIME_CALIBRATION_FACTOR``): it
    multiplies the training, scoring and decode rates of a MoE model (the median required factor of the MoE
    calibration rows, planopt.uncertainty.out_of_fold); 1 for a dense model."""
    return d.STEP_TIME_CALIBRATION_FACTOR.get("moe", 1.0) if arch.is_moe else 1.0


def release_speed(eff: Efficiency) -> float:
    """Speed of the instance's software release relative to the newest
    (``defaults.SOFTWARE_RELEASES``): it multiplies every training, scoring and
    decode rate; 1 for the newest release, the default."""
    return d.SOFTWARE_RELEASES[eff.software_release]["speed_vs_newest"]


def recomputes_policy_logprobs(eff: Efficiency) -> bool:
    """Whether the release recomputes the policy's log-probs before the update
    (importance-sampling ratio): NeMo RL up to v0.6 does, v0.7's performance
    recipes set ``force_on_policy_ratio: true`` and skip that pass."""
    return d.SOFTWARE_RELEASES[eff.software_release]["policy_logprob_pass"]


def compute_seconds(flops: float, arch: Architecture, gpu: GpuSpec, count: int, eff: Efficiency, precision: str = "bf16") -> float:
    r"""Compute-bound time: :math:`t = F / (n \cdot \mathrm{peak}_p \cdot \mathrm{MFU})`."""
    return flops / (count * peak_tflops(gpu, precision) * TERA * mfu(arch, gpu, count, eff))


def train_memory_bytes_per_gpu(arch: Architecture, count: int, seq_tokens: float, cpu_offload: bool = False,
                               lora_rank: int | None = None, zero_stage: int | None = None) -> float:
    r"""Training memory per GPU, ZeRO-3 sharded Adam plus recomputation checkpoints.

    .. math:: M = \frac{16 N}{n} + 2 \cdot L \cdot h \cdot s

    LoRA: frozen bf16 weights and the adapter's Adam state, both sharded,
    :math:`M = (2 N + 16 N_{LoRA})/n + 2 L h s` (no full optimiser state).
    With CPU offload the sharded state lives in host memory (streamed in per
    layer): only the activation term stays. DeepSpeed ZeRO-1 and ZeRO-2
    (``zero_stage``) keep :math:`r` bytes per parameter whole on every GPU and
    shard the rest, :math:`M = (r + (16 - r)/n) N + 2 L h s` with :math:`r` = 4 and 2
    (``defaults.ZERO_STAGE_STATE_BYTES_PER_PARAM``); offload moves only the sharded
    part, and a LoRA plan's frozen weights stay whole.
    """
    whole = 0.0 if zero_stage in (None, 3) else d.ZERO_STAGE_STATE_BYTES_PER_PARAM[zero_stage][0]
    n_params = arch.params_b * 1e9
    if lora_rank is None:
        sharded = (d.TRAIN_STATE_BYTES_PER_PARAM - whole) * n_params / count
        kept = whole * n_params
    elif not whole:
        sharded, kept = (d.FROZEN_WEIGHT_BYTES_PER_PARAM * n_params
                         + d.TRAIN_STATE_BYTES_PER_PARAM * lora_params(arch, lora_rank)) / count, 0.0
    else:
        sharded = d.TRAIN_STATE_BYTES_PER_PARAM * lora_params(arch, lora_rank) / count
        kept = d.FROZEN_WEIGHT_BYTES_PER_PARAM * n_params
    state = kept + (0.0 if cpu_offload else sharded)
    acts = d.ACTIVATION_BYTES_PER_ELEMENT * arch.layers * arch.hidden * seq_tokens
    return state + acts


def sharded_forward_memory_bytes_per_gpu(arch: Architecture, precision: str, count: int, seq_tokens: float) -> float:
    r"""A frozen model scored with sharded weights: :math:`N b_p / n + 2 L h s`."""
    return weight_bytes(arch.params_b, precision) / count + d.ACTIVATION_BYTES_PER_ELEMENT * arch.layers * arch.hidden * seq_tokens


def rollout_tensor_parallel(arch: Architecture, gpu: GpuSpec, count: int, eff: Efficiency, longest_seq_tokens: float) -> int | None:
    """Smallest power-of-two tensor-parallel group (within the job) whose rollout
    share of HBM holds the bf16 weights plus one longest sequence's KV cache;
    None when no group does. Groups may span nodes: NeMo RL generates
    Qwen3-235B-A22B at TP 16 and DeepSeek-V3 at TP 32 on 8-GPU H100 nodes
    (docs/about/performance-summary.md, v0.5)."""
    tp = 1
    while tp <= count:
        free = eff.rollout_hbm_share * gpu.hbm_gb * GB - weight_bytes(arch.params_b) / tp
        if free >= kv_bytes_per_token_per_gpu(arch, tp) * longest_seq_tokens:
            return tp
        tp *= 2
    return None


def decode_step_seconds(arch: Architecture, gpu: GpuSpec, tp: int, batch: float, context_tokens: float, eff: Efficiency) -> float:
    r"""One decode iteration of a tensor-parallel replica at batch :math:`b`.

    Memory-bound: the weights are read once and each sequence's KV cache once;
    capped below by the compute roof (2·N FLOPs per token at the achievable
    matmul share of peak).

    .. math:: t = \Big[\max\Big(\frac{W / tp + b \cdot kv_{gpu} \cdot c}{BW \cdot MBU},\
                \frac{2 N_{act} b}{tp \cdot \mathrm{peak} \cdot s_{MAMF}}\Big) + t_{TP}\Big] / (f_{dec} \cdot r)

    :math:`kv_{gpu}` is the KV each GPU holds (:func:`kv_bytes_per_token_per_gpu`:
    replicated heads are read on every GPU that holds them). :math:`f_{dec}` is
    ``efficiency.decode_factor`` (1 unless a pilot fit or a scenario sets it) and
    :math:`r` the software release's speed (:func:`release_speed`) times the MoE
    calibration factor (:func:`calibrated_speed`, 1 for dense models): the whole
    iteration scales with them, so decode hours are exactly proportional to
    :math:`1/f_{dec}`. Without CUDA graphs the iteration also pays its kernel launches
    (:func:`eager_decode_seconds`).
    """
    mem = (weight_bytes(arch.params_b) / tp + batch * kv_bytes_per_token_per_gpu(arch, tp) * context_tokens) / (gpu.hbm_tbps * TERA * eff.decode_mbu)
    share = d.MAMF_SHARE_OF_PEAK.get(gpu.name, d.MAMF_REFERENCE_SHARE)
    flop = forward_flops_per_token(arch) * batch / (tp * gpu.bf16_tflops * TERA * share)
    return (max(mem, flop) + tp_decode_allreduce_seconds(arch, gpu, tp, batch) + eager_decode_seconds(arch, batch, eff)) / (
        eff.decode_factor * release_speed(eff) * calibrated_speed(arch))


def eager_decode_seconds(arch: Architecture, batch: float, eff: Efficiency) -> float:
    r"""Kernel-launch overhead of one decode iteration without CUDA graphs (``efficiency.cuda_graphs`` false,
    vLLM ``enforce_eager``); zero with them.

    .. math:: t_{eager} = L \cdot \delta(b)

    :math:`\delta(b)` the measured overhead per layer at replica batch :math:`b`, piecewise linear in
    :math:`\log b` through the published points (``defaults.EAGER_OVERHEAD_SECONDS_PER_LAYER_BY_BATCH``: vLLM
    PR #1440 at batch 1, xLLM PR #713 at batch 30), flat outside them. It adds to the iteration before the rate
    factors divide it, so decode hours stay exactly proportional to :math:`1/f_{dec}`."""
    if eff.cuda_graphs:
        return 0.0
    return arch.layers * _log_interpolate(d.EAGER_OVERHEAD_SECONDS_PER_LAYER_BY_BATCH, max(1.0, batch))


def tp_decode_allreduce_seconds(arch: Architecture, gpu: GpuSpec, tp: int, batch: float) -> float:
    r"""Tensor-parallel all-reduces of one decode iteration (zero at :math:`tp = 1`).

    .. math:: t = a \cdot L \Big(\lambda + \frac{2 (tp-1)}{tp} \cdot \frac{b \cdot h \cdot 2}{\mathrm{link}}\Big)

    :math:`a = 2` all-reduces per layer (Megatron-LM); over the scale-out link
    with its latency when the group spans more GPUs than one NVLink domain, over
    one direction of the scale-up link otherwise (a GB200 NVL72 rack: 72 GPUs).
    """
    if tp <= 1:
        return 0.0
    if tp > gpu.scale_up_domain_gpus:
        link, latency = gpu.inter_node_gb_per_s, d.TP_ALLREDUCE_LATENCY_S_SCALE_OUT
    else:
        link, latency = gpu.intra_node_gb_per_s / 2.0, d.TP_ALLREDUCE_LATENCY_S_SCALE_UP
    ring = 2.0 * (tp - 1) / tp * batch * arch.hidden * d.ACTIVATION_BYTES_PER_ELEMENT / (link * GB)
    return d.TP_ALLREDUCES_PER_LAYER * arch.layers * (latency + ring)


def max_decode_batch(arch: Architecture, gpu: GpuSpec, tp: int, context_tokens: float, eff: Efficiency) -> float:
    r"""Sequences a replica holds at once: :math:`\lfloor (s \cdot HBM - W/tp) / (kv_{gpu} \cdot c) \rfloor`
    (per GPU: each holds its weight shard and its share, or replica, of every sequence's KV)."""
    free = eff.rollout_hbm_share * gpu.hbm_gb * GB - weight_bytes(arch.params_b) / tp
    return max(1.0, math.floor(free / (kv_bytes_per_token_per_gpu(arch, tp) * context_tokens)))


def checkpoint_bytes(arch: Architecture, lora_rank: int | None = None) -> float:
    """Resumable checkpoint: bf16 weights + fp32 master + Adam moments (14 B/param);
    with LoRA, of the adapter's parameters only (the frozen base is not written)."""
    params = arch.params_b * 1e9 if lora_rank is None else lora_params(arch, lora_rank)
    return d.CHECKPOINT_BYTES_PER_PARAM * params


def handover_bytes(arch: Architecture, lora_rank: int | None = None) -> float:
    """What the trainer hands the rollout engine each step (and ships as the result):
    the bf16 weights, or with LoRA the bf16 adapter alone."""
    return weight_bytes(arch.params_b) if lora_rank is None else lora_params(arch, lora_rank) * d.WEIGHT_BYTES_PER_PARAM["bf16"]


def checkpoint_overhead_share(write_hours, failures_per_hour, interval_hours, restart_hours):
    r"""Expected extra wall time per hour of useful work, exact for exponentially
    distributed failures (Daly 2006, "A higher order estimate of the optimum
    checkpoint interval for restart dumps", FGCS 22(3), the complete cost function):

    .. math:: \frac{T_{wall}}{T_s} = M e^{R/M} \big(e^{(\tau+\delta)/M} - 1\big) \frac{1}{\tau},
              \qquad o(\tau) = \frac{e^{\lambda r}\, \mathrm{expm1}(\lambda(\tau + w))}{\lambda \tau} - 1

    with :math:`M = 1/\lambda` the job's mean time between failures, :math:`w = \delta`
    the write time, :math:`r = R` the restart. It counts failures during a write,
    during a restart and during re-work. At :math:`\lambda = 0` it is exactly
    :math:`w/\tau`; as :math:`\lambda(\tau + w) \to 0` it tends to the first-order
    rule :math:`w/\tau + \lambda(\tau/2 + r)` (Young 1974), whose minimiser is
    :func:`young_daly_interval_hours`; the exact minimiser is
    :func:`optimal_checkpoint_interval_hours`.

    Works on floats and, element-wise, on numpy arrays (a float in, a float out).
    """
    w, lam, tau, r = (np.asarray(x, dtype=float) for x in (write_hours, failures_per_hour, interval_hours, restart_hours))
    safe = np.where(lam > 0.0, lam, 1.0)
    with np.errstate(over="ignore"):  # lambda·tau > 709 (an interval of hundreds of MTBFs): inf, never chosen
        exact = np.exp(safe * r) * np.expm1(safe * (tau + w)) / (safe * tau) - 1.0
    out = np.where(lam > 0.0, exact, w / tau)
    return float(out) if out.ndim == 0 else out


def checkpoint_overhead_share_first_order(write_hours, failures_per_hour, interval_hours, restart_hours):
    r"""Young's first-order overhead :math:`w/\tau + \lambda(\tau/2 + r)`: the limit of
    :func:`checkpoint_overhead_share` as :math:`\lambda(\tau + w) \to 0` and :math:`w \ll \tau`."""
    return write_hours / interval_hours + failures_per_hour * (interval_hours / 2.0 + restart_hours)


def young_daly_interval_hours(write_hours: float, failures_per_hour: float) -> float:
    r"""Young's first-order interval :math:`\tau_Y = \sqrt{2 w \cdot MTBF}`, the minimiser of
    :func:`checkpoint_overhead_share_first_order`. It overshoots the exact optimum
    (:func:`optimal_checkpoint_interval_hours`) as :math:`w/MTBF` grows: by 1.34x at
    :math:`w = MTBF/3` (Daly 2006, Fig. 5: M = 15 min, δ = 5 min -> 9.1 min vs 12.2)."""
    return math.sqrt(2.0 * write_hours / failures_per_hour)


def _lambert_w0(z):
    """Principal branch of Lambert W on [-1/e, 0) by Halley's iteration (numpy, element-wise)."""
    z = np.asarray(z, dtype=float)
    p = np.sqrt(np.maximum(2.0 * (math.e * z + 1.0), 0.0))
    w = -1.0 + p - p * p / 3.0          # series about the branch point z = -1/e
    for _ in range(50):
        ew = np.exp(w)
        f = w * ew - z
        denom = ew * (w + 1.0) - (w + 2.0) * f / (2.0 * w + 2.0 + (w == -1.0))
        step = np.where(denom != 0.0, f / np.where(denom != 0.0, denom, 1.0), 0.0)
        w = w - step
        if np.all(np.abs(step) <= 1e-15 * np.maximum(1.0, np.abs(w))):
            break
    return w


def optimal_checkpoint_interval_hours(write_hours, failures_per_hour):
    r"""Exact minimiser of :func:`checkpoint_overhead_share` (the restart only scales it):
    :math:`\frac{d}{d\tau}\frac{e^{\lambda(\tau+w)}-1}{\tau} = 0 \iff e^{\lambda(\tau+w)}(1-\lambda\tau) = 1`, so

    .. math:: \tau^* = M \big(1 + W_0(-e^{-1 - w/M})\big)

    (:math:`W_0` the principal Lambert function; Daly 2006 expands the same
    optimum in :math:`\sqrt{w/2M}`, his Eq. for :math:`\tau_{opt}`). Tends to
    :math:`\sqrt{2 w M}` as :math:`w/M \to 0`.
    """
    m = 1.0 / np.asarray(failures_per_hour, dtype=float)
    out = m * (1.0 + _lambert_w0(-np.exp(-1.0 - np.asarray(write_hours, dtype=float) / m)))
    return float(out) if out.ndim == 0 else out


def weight_sync_seconds(arch: Architecture, gpu: GpuSpec, count: int, tp: int, lora_rank: int | None = None) -> float:
    r"""Hand-over of the bf16 weights from the trainer to the rollout engine, per step.

    Each rollout GPU receives its :math:`1/tp` shard, at the lesser of the link
    (NVLink within a node, the scale-out network across nodes) and the achieved
    refit bandwidth per GPU :math:`\beta_{refit}`:

    .. math:: t = \frac{W}{tp \cdot \min(\mathrm{link}, \beta_{refit})}

    With LoRA, :math:`W` is the adapter's bf16 bytes (:func:`handover_bytes`).
    """
    link = gpu.intra_node_gb_per_s if count <= gpu.scale_up_domain_gpus else gpu.inter_node_gb_per_s
    return handover_bytes(arch, lora_rank) / (tp * min(link, d.REFIT_GB_PER_S_PER_GPU) * GB)


def moe_alltoall_bytes_per_token(arch: Architecture) -> float:
    r"""Expert-parallel all-to-all bytes per token and pass (dispatch + combine).

    .. math:: B = 2 \cdot k \cdot h \cdot L \cdot b

    each of the :math:`L` layers sends the token's hidden vector (:math:`h`
    elements of :math:`b` bytes) to its :math:`k` routed experts and gathers the
    :math:`k` outputs back (DeepEP dispatch/combine). Zero for a dense model.
    """
    if not arch.is_moe:
        return 0.0
    return 2.0 * d.MOE_ROUTED_EXPERTS_PER_TOKEN * arch.hidden * arch.layers * d.MOE_ALLTOALL_BYTES_PER_ELEMENT


def alltoall_gb_per_s_per_gpu(gpu: GpuSpec, count: int) -> float:
    r"""Achieved all-to-all rate per GPU: the scale-out link when the job spans
    more than one NVLink domain (a node; a GB200 NVL72 rack's 72 GPUs), one
    direction of the (bidirectional) scale-up link otherwise, times the achieved
    share :math:`s_{a2a}`."""
    link = gpu.inter_node_gb_per_s if count > gpu.scale_up_domain_gpus else gpu.intra_node_gb_per_s / 2.0
    return link * d.MOE_ALLTOALL_SHARE_OF_LINK


def alltoall_seconds(bytes_total: float, gpu: GpuSpec, count: int) -> float:
    r"""All-to-all time spread over the job: :math:`t = B / (n \cdot \beta_{a2a})`."""
    return bytes_total / (count * alltoall_gb_per_s_per_gpu(gpu, count) * GB)


# --- SFT runs: attention, FSDP / ZeRO-3 communication, CPU offload -----------------

def attention_flops_per_token(arch: Architecture, context_tokens: float, recompute: bool) -> float:
    r"""Hardware FLOPs of causal self-attention per trained token at context :math:`s`:

    .. math:: F_{attn} = p \cdot 4 \cdot L \cdot h \cdot s \cdot c

    :math:`4 L h s` per forward pass (Q·Kᵀ and A·V; Megatron-LM's :math:`4Bs^2h`
    term), :math:`p` = 3 passes for a training step (4 with recomputation),
    :math:`c` = 0.5 for the causal mask (FlashAttention-2). It grows with the
    sequence: at :math:`s = 32\text{K}` it is a third of :math:`6N` for a 32B model.
    """
    per = d.TRAIN_RECOMPUTE_FLOPS_PER_PARAM_TOKEN if recompute else d.TRAIN_FLOPS_PER_PARAM_TOKEN
    passes = per / d.FORWARD_FLOPS_PER_PARAM_TOKEN
    return passes * d.ATTENTION_FLOPS_PER_LAYER_HIDDEN_CONTEXT * arch.layers * arch.hidden * context_tokens * d.CAUSAL_ATTENTION_SHARE


def fsdp_bytes_per_sequence(arch: Architecture, lora_rank: int | None = None) -> float:
    r"""FSDP / ZeRO-3 collective bytes per micro-step of one sequence per GPU:
    :math:`3 \cdot 2N` (all-gather forward, all-gather backward, reduce-scatter; ZeRO §7.2.2).
    LoRA: frozen weights are gathered twice and have no gradient, :math:`2 \cdot 2N + 3 \cdot 2 N_{LoRA}`."""
    if lora_rank is None:
        return d.FSDP_COLLECTIVES_PER_MICROSTEP * weight_bytes(arch.params_b)
    return (d.FROZEN_FSDP_COLLECTIVES_PER_MICROSTEP * weight_bytes(arch.params_b)
            + d.FSDP_COLLECTIVES_PER_MICROSTEP * handover_bytes(arch, lora_rank))


def fsdp_link_gb_per_s(gpu: GpuSpec, count: int) -> float:
    """Per-GPU link a ring collective runs over: one direction of the scale-up link
    inside a node, the scale-out link when the job spans nodes (the slowest hop)."""
    return gpu.inter_node_gb_per_s if count > gpu.gpus_per_node else gpu.intra_node_gb_per_s / 2.0


def fsdp_seconds_per_byte(gpu: GpuSpec, count: int) -> float:
    r"""Seconds per byte of :func:`fsdp_bytes_per_sequence` summed over the job's sequences.

    :math:`n` sequences run at once (one per GPU), and each micro-step's ring
    collectives send :math:`(n-1)/n` of the bytes per GPU:

    .. math:: u = \frac{n - 1}{n^2 \cdot \mathrm{link}}

    Zero on one GPU. Priced in sequence with compute (no overlap credited: an
    upper bound where FSDP prefetch hides part of it).
    """
    return (count - 1) / (count * count * fsdp_link_gb_per_s(gpu, count) * GB)


def host_link_gb_per_s(gpu: GpuSpec) -> float | None:
    """One direction of the GPU's host link: the instance's own figure (``GpuOption.host_link_gb_per_s``), else
    the catalog's (``defaults.HOST_LINK_GB_PER_S_PER_GPU``), None if unknown."""
    own = getattr(gpu, "host_link_gb_per_s", None)
    return own if own is not None else d.HOST_LINK_GB_PER_S_PER_GPU.get(gpu.name)


def offload_stream_bytes_per_sequence(arch: Architecture, lora_rank: int | None = None) -> float:
    r"""Host-link bytes of one micro-step under CPU offload, summed over the GPUs:
    bf16 parameters in for the forward and the backward, bf16 gradients out, :math:`6N`.
    LoRA: no gradients for the frozen weights, :math:`4N + 6 N_{LoRA}`."""
    if lora_rank is None:
        return d.OFFLOAD_STREAM_BYTES_PER_PARAM_PER_MICROSTEP * arch.params_b * 1e9
    return (d.FROZEN_OFFLOAD_STREAM_BYTES_PER_PARAM_PER_MICROSTEP * arch.params_b * 1e9
            + d.OFFLOAD_STREAM_BYTES_PER_PARAM_PER_MICROSTEP * lora_params(arch, lora_rank))


def offload_state_bytes_per_step(arch: Architecture, lora_rank: int | None = None) -> float:
    r"""Host-link bytes of one optimiser step under CPU offload, summed over the GPUs:
    fp32 master weights and Adam moments in and out, :math:`24N` (LoRA: :math:`24 N_{LoRA}`)."""
    params = arch.params_b * 1e9 if lora_rank is None else lora_params(arch, lora_rank)
    return d.OFFLOAD_STATE_BYTES_PER_PARAM_PER_STEP * params


def offload_stream_seconds_per_byte(gpu: GpuSpec, count: int) -> float:
    r"""Each GPU moves :math:`1/n` of a micro-step's bytes and :math:`n` sequences run at
    once: :math:`u = 1/(n^2 \cdot \beta_{host})`."""
    return 1.0 / (count * count * _host_link_or_fail(gpu) * GB)


def offload_state_seconds_per_byte(gpu: GpuSpec, count: int) -> float:
    r"""Each GPU moves :math:`1/n` of an optimiser step's bytes: :math:`u = 1/(n \cdot \beta_{host})`."""
    return 1.0 / (count * _host_link_or_fail(gpu) * GB)


def host_optimizer_seconds_per_state_byte(gpu: GpuSpec, count: int) -> float:
    r"""DeepSpeed's ZeRO-Offload updates the optimiser state in host memory (DeepSpeedCPUAdam): each node's
    host updates its GPUs' :math:`N/\mathrm{nodes}` parameters per optimiser step at the measured
    :math:`s` seconds per parameter (``defaults.DEEPSPEED_OFFLOAD_HOST_SECONDS_PER_PARAM_PER_STEP``), the nodes in
    parallel. Per unit of the step's optimiser state (:func:`offload_state_bytes_per_step`, :math:`K` bytes per
    parameter summed over the GPUs): :math:`u = s / (K \cdot \mathrm{nodes})`, so a step takes
    :math:`s \cdot N / \mathrm{nodes}`."""
    return d.DEEPSPEED_OFFLOAD_HOST_SECONDS_PER_PARAM_PER_STEP / (d.OFFLOAD_STATE_BYTES_PER_PARAM_PER_STEP
                                                                   * nodes(gpu, count))


def _host_link_or_fail(gpu: GpuSpec) -> float:
    bw = host_link_gb_per_s(gpu)
    if bw is None:
        raise ValueError(f"GPU '{gpu.name}' has no host-link bandwidth figure: CPU offload cannot be priced on it")
    return bw


def split_weight_transfer_seconds(arch: Architecture, train_gpu: GpuSpec, rollout_gpu: GpuSpec,
                                  lora_rank: int | None = None) -> float:
    r"""Per step, the hand-over of the weights from training GPUs to separate rollout GPUs over the network.

    NeMo RL's non-colocated refit (``nemo_rl.weight_sync.collective_weight_synchronizer``) broadcasts every
    full tensor from the policy to the generation workers over one NCCL group; a pipelined broadcast
    delivers the :math:`W` bytes to every receiver at the bandwidth of the slowest link on its path, here
    the slower side's scale-out link per GPU, and no faster than the achieved refit rate :math:`\beta_{refit}`:

    .. math:: t = \frac{W}{\min(\beta^{out}_{train}, \beta^{out}_{rollout}, \beta_{refit})}

    With LoRA, :math:`W` is the adapter's bf16 bytes (:func:`handover_bytes`)."""
    link = min(train_gpu.inter_node_gb_per_s, rollout_gpu.inter_node_gb_per_s, d.REFIT_GB_PER_S_PER_GPU)
    return handover_bytes(arch, lora_rank) / (link * GB)
