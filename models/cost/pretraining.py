r"""Continued pre-training of the student before its first stage (issue 27, lever 7).

A first-stage recipe may carry ``pretraining_tokens`` :math:`T > 0`, one of ``continued_pretraining.tokens_options``:
the student is first trained on :math:`T` tokens of domain text, then the stage runs from the score that reached.

- **Work.** :math:`T` trained tokens at the FLOPs per token every trained token is priced at
  (``physics.train_flops_per_token``: :math:`6N` with :math:`N` the active parameters, :math:`8N` with activation
  recomputation; CPT trains every weight), one work component of the recipe (``train_flops|pretraining``) that
  every hardware choice prices as training FLOPs (its MFU, trainer, failures and checkpoints), serial to the
  stage's own work. So the MIP's recipe × hardware work rows price it exactly.
- **Money beside the GPUs.** :math:`T / 10^9 \times` ``usd_per_billion_tokens`` (the corpus), in the data line.
  No lead time: no source gives one.
- **Score.** The stage starts from

  .. math:: q_{start} = q_0 + s\,\bigl(1 - e^{-T/(k N_{tot})}\bigr)\,(q_{max} - q_0)

  with :math:`N_{tot}` the student's parameters, :math:`s` the share of the headroom saturated continued
  pre-training closes and :math:`k` tokens per parameter (``defaults.CPT_HEADROOM_SHARE``,
  ``defaults.CPT_TOKENS_PER_PARAMETER_SCALE``: Llemma's Table 1; ``catalog/reference/pretraining.md``). The
  stage's own learning curve then runs from :math:`q_{start}` (``stage_outcomes.stage_outcome``), so post-training
  gains less the more pre-training bought: the two are weighed on one curve.
- **Forgetting.** Not priced: no source read gives a general-capability score before and after a domain
  continued pre-training outside the sources kept for an out-of-sample check. The stage's own forgetting is
  measured from the score it starts at, as a later stage's is.

Only a first stage pre-trains, and only with full weights (a LoRA stage's GPUs are sized for its adapter).
"""

from __future__ import annotations

import numpy as np

from planopt.models.cost import physics as ph
from planopt.models.schema.instance import Architecture, Instance
from planopt.models.schema.plan import Recipe

# The component key of the pre-training FLOPs: training FLOPs (``components.TRAIN``), kept apart from the stage's own.
PRETRAIN_KEY = "train_flops|pretraining"
TOKENS_PER_BILLION = 1e9


def token_options(inst: Instance) -> list[float]:
    """The token counts a first stage may pre-train on: ``continued_pretraining.tokens_options`` sorted, [0] without
    the block."""
    block = inst.continued_pretraining
    return [0.0] if block is None else block.options()


def pretrain_flops(arch: Architecture, tokens: float, recompute: bool) -> float:
    r"""Hardware FLOPs of :math:`T` trained tokens: :math:`T \cdot` ``physics.train_flops_per_token`` (full weights)."""
    return tokens * ph.train_flops_per_token(arch, recompute, None)


def model_flops(arch: Architecture, tokens: float) -> float:
    r"""The 6·N·T rule: model FLOPs of :math:`T` trained tokens, without recomputation."""
    return tokens * ph.train_flops_per_token(arch, False, None)


def data_usd(inst: Instance, tokens: float) -> float:
    """The corpus: tokens / 1e9 × ``continued_pretraining.usd_per_billion_tokens``."""
    block = inst.continued_pretraining
    return 0.0 if block is None or not tokens else tokens / TOKENS_PER_BILLION * block.usd_per_billion_tokens


def closed_share(inst: Instance, tokens: float, headroom_share=None):
    r""":math:`s (1 - e^{-T/(k N)})`: the share of the headroom :math:`T` tokens close (arrays of ``headroom_share``
    element by element; None: the instance's)."""
    block = inst.continued_pretraining
    if block is None or not tokens:
        return 0.0 * (headroom_share if headroom_share is not None else 0.0)
    s = block.headroom_share if headroom_share is None else headroom_share
    n = inst.student.params_b * 1e9
    return s * (1.0 - np.exp(-tokens / (block.tokens_per_parameter_scale * n)))


def start_score(inst: Instance, tokens: float, start, headroom_share=None):
    r"""The score a stage starts from after :math:`T` tokens of continued pre-training from ``start``:
    :math:`q + s(1 - e^{-T/(kN)})(q_{max} - q)`."""
    return start + closed_share(inst, tokens, headroom_share) * (inst.task.score_ceiling - start)


def amounts(inst: Instance, r: Recipe) -> dict[str, float]:
    """The recipe's pre-training work (none without tokens)."""
    if not r.pretraining_tokens:
        return {}
    return {PRETRAIN_KEY: pretrain_flops(inst.student, r.pretraining_tokens, inst.training.activation_recompute)}


def check_recipe_tokens(inst: Instance, r: Recipe) -> None:
    """ValueError naming ``plan.pretraining_tokens`` for tokens that are not an option of a first-stage recipe."""
    t = r.pretraining_tokens
    if not t:
        return
    if inst.continued_pretraining is None:
        raise ValueError(f"plan.pretraining_tokens: {t:g} is not an option: the instance has no continued_pretraining "
                         "block; leave it out")
    if t not in inst.continued_pretraining.tokens_options:
        raise ValueError(f"plan.pretraining_tokens: {t:g} is not in continued_pretraining.tokens_options "
                         f"{[f'{v:g}' for v in inst.continued_pretraining.options()]}")
    if r.lora_rank is not None:
        raise ValueError("plan.pretraining_tokens: continued pre-training trains every weight: expected 0 for a "
                         "'lora' stage")


def check_block(inst: Instance) -> None:
    """ValueError naming the field for a ``continued_pretraining`` block the model cannot price."""
    block = inst.continued_pretraining
    if block is None or not any(block.tokens_options):
        return
    if inst.releases is not None and inst.releases.releases > 1:
        raise ValueError("continued_pretraining: not modelled with releases yet (whether a later release pre-trains "
                         "again is not priced); remove one of the two blocks")
    if "full" not in inst.training.adapter_options:   # no recipe could take a token option: it would be ignored
        raise ValueError("continued_pretraining.tokens_options: continued pre-training trains every weight and "
                         "training.adapter_options has no 'full', so no plan could pre-train; add 'full' or remove the "
                         "block")


def pretraining_detail(inst: Instance, r: Recipe, by_component: dict[str, float]) -> dict:
    """What a first stage's continued pre-training does (the JSON's ``pretraining``): its tokens, model FLOPs, compute
    hours on the stage's GPUs (before failures and checkpoints), corpus money, and the score before and after."""
    q0 = inst.task.baseline_score
    return {"tokens": r.pretraining_tokens, "flops": model_flops(inst.student, r.pretraining_tokens),
            "compute_hours": by_component.get(PRETRAIN_KEY, 0.0), "data_usd": data_usd(inst, r.pretraining_tokens),
            "baseline_score": q0, "start_score": float(start_score(inst, r.pretraining_tokens, q0))}


def describe(detail: dict) -> str:
    """The report's line for ``pretraining_detail``."""
    return (f"{detail['tokens'] / TOKENS_PER_BILLION:,.3g} B tokens of domain text first ({detail['flops']:.3g} FLOPs, "
            f"{detail['compute_hours']:,.1f} h on the stage's GPUs, corpus ${detail['data_usd']:,.0f}): the stage starts "
            f"from {detail['start_score']:.2f} instead of {detail['baseline_score']:g}")
