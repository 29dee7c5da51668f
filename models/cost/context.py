r"""Context parallelism: a training sequence split over :math:`c` GPUs, its attention's KV passed around a ring.

``training.context_parallel`` (a degree, or a list of degrees: a decision) makes :math:`c` an attribute of
the hardware choice (``HardwareChoice.context_parallel``), offered once per degree that divides the choice's
GPU count, exactly as a trainer option is: every layer that takes hardware choices chooses it with no new
constraint. A degree prices two things (sources in ``defaults``, ``catalog/long_context.py``):

- memory: each GPU holds :math:`s/c` of the sequence's activations (``HardwareProfile.memory_bytes_per_gpu``),
  so a sequence too long for one GPU's activation memory fits at a larger degree;
- the KV ring (Ring Attention, arXiv 2310.01889; Megatron-Core context parallelism): per layer and pass, each
  GPU receives the K and V blocks of the :math:`c - 1` others, overlapped with the layer's attention compute,
  so a layer-pass lasts :math:`\max(t_{attn}, t_{ring})` and only the transfer beyond the attention shows.
  With :math:`k` the K and V bytes per token and layer, :math:`s` the sequence, :math:`h` the hidden size,
  :math:`\beta` the link (one direction of the scale-up link while the ring stays inside an NVLink domain, the
  scale-out link beyond) and :math:`P \cdot \mathrm{MFU}` one GPU's achieved FLOP rate, per GPU and layer-pass

  .. math:: t_{ring} = \frac{c-1}{c}\, \frac{s\, k}{\beta}, \qquad
            t_{attn} = \frac{4 h s^2 \cdot \tfrac12}{c\, P\, \mathrm{MFU}}, \qquad
            \frac{t_{attn}}{t_{ring}} = \frac{2 h s\, \beta}{(c-1)\, k\, P\, \mathrm{MFU}}

  and the recipe's ring bytes :math:`B` (``components.CP_TRAIN``, ``CP_LOGPROB``: every token's K and V, all
  layers, per forward-pass unit, summed over the job's sequences; :math:`n/c` sequences run at once) take

  .. math:: u = \frac{c - 1}{n\, \beta} \max\Big(0,\ 1 - \frac{t_{attn}}{t_{ring}}\Big)

  seconds per byte: zero at :math:`c = 1`, constant in the recipe's amounts (linear time), judged at the
  curve's MFU (``mfu_factor`` 1, like the trainer's overlap: a collective's time does not move with a pilot
  fit's MFU factor). The ratio is the same for the forward and the backward (twice the attention FLOPs, twice
  the KV traffic: K, V and their gradients), so one :math:`u` prices both.

The attention compute the ring hides behind is the layer's causal attention at the sequence's length; RL's
attention time itself is inside the MFU curve (measured at 4K-8K tokens), SFT's is priced (``ATTN``).
The teacher's and a reward model's scoring passes are priced without a ring (their own parallelism).
"""

from __future__ import annotations

from planopt.models.catalog import defaults as d
from planopt.models.cost import physics as ph


def degrees_for(inst, count: int) -> list[int]:
    """The context-parallel degrees a choice of ``count`` training GPUs is offered: those of
    ``training.context_parallel`` that divide ``count`` (the GPUs form count/c rings of c)."""
    return [c for c in inst.training.context_parallel_degrees() if count % c == 0]


def offered(inst) -> bool:
    """Whether any plan of the instance runs context parallelism (a degree above 1)."""
    return max(inst.training.context_parallel_degrees()) > 1


def ring_link_gb_per_s(gpu, degree: int) -> float:
    """The link a ring of ``degree`` GPUs runs over: one direction of the scale-up link while the ring fits one
    NVLink domain (each GPU sends to the next and receives from the previous at once), the scale-out link
    beyond."""
    return gpu.intra_node_gb_per_s / 2.0 if degree <= gpu.scale_up_domain_gpus else gpu.inter_node_gb_per_s


def ring_bytes_per_token(arch) -> float:
    """K and V bytes of one token over all layers (``physics.kv_bytes_per_token``): a ring moves them once per
    forward-pass unit."""
    return ph.kv_bytes_per_token(arch)


def training_passes(recompute: bool) -> float:
    """Forward-pass units of KV traffic in one training pass: forward 1, backward 2 (K, V and dK, dV), a
    recomputed forward 1 (``defaults.CP_RING_FORWARD_PASSES_PER_SCORING_PASS`` per scoring pass)."""
    per = d.TRAIN_RECOMPUTE_FLOPS_PER_PARAM_TOKEN if recompute else d.TRAIN_FLOPS_PER_PARAM_TOKEN
    return per / d.FORWARD_FLOPS_PER_PARAM_TOKEN * d.CP_RING_FORWARD_PASSES_PER_SCORING_PASS


def attention_over_ring(arch, gpu, count: int, degree: int, seq_tokens: float, eff) -> float:
    r""":math:`t_{attn}/t_{ring}` of one layer-pass (module docstring), at the curve's MFU."""
    nominal = eff.model_copy(update={"mfu_factor": 1.0})
    seconds_per_flop_per_gpu = count * ph.compute_seconds(1.0, arch, gpu, count, nominal)
    attn = (d.ATTENTION_FLOPS_PER_LAYER_HIDDEN_CONTEXT * arch.hidden * seq_tokens * seq_tokens
            * d.CAUSAL_ATTENTION_SHARE / degree * seconds_per_flop_per_gpu)
    per_layer = ring_bytes_per_token(arch) / arch.layers
    ring = (degree - 1) / degree * seq_tokens * per_layer / (ring_link_gb_per_s(gpu, degree) * ph.GB)
    return attn / ring


def ring_seconds_per_byte(arch, gpu, count: int, degree: int, seq_tokens: float, eff) -> float:
    r"""Seconds per ring byte (``CP_TRAIN``, ``CP_LOGPROB``) on ``count`` GPUs in rings of ``degree``:
    :math:`\frac{c-1}{n \beta} \max(0, 1 - t_{attn}/t_{ring})`; 0 at degree 1."""
    if degree <= 1:
        return 0.0
    exposed = max(0.0, 1.0 - attention_over_ring(arch, gpu, count, degree, seq_tokens, eff))
    return (degree - 1) / (count * ring_link_gb_per_s(gpu, degree) * ph.GB) * exposed
