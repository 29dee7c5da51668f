r"""What a stage of a staged plan reaches, starting where the previous stage left off.

A staged plan (``staged_plan.py``) runs up to three stages one after another;
the first starts from the task's baseline :math:`q_0`, each later one from the
score the previous one reached. Every learning curve of ``learning.py`` already
knows how far it is: a phase moves the score a share of the *remaining* way to
its ceiling, :math:`q \leftarrow q + (C - q)(1 - e^{-S/S_0})`. A stage that starts
higher has less headroom, so it gains less.

- **SFT and OPD** are *affine* in their start: the signal :math:`S` of a phase
  (effective examples; prompts × samples) does not depend on the score, so
  :math:`q_{end} = A + B\,q_{start}` with :math:`B = \prod_j e^{-S_j/S_0}` and
  :math:`A = C (1 - B)`. A LoRA stage keeps the share :math:`g` of full fine-tuning's
  gain, :math:`q_{end} = q_{start} + g (q^{full}_{end} - q_{start})`: affine too.
- **RL** is not: a group carries a gradient only when its samples disagree,
  with probability :math:`1 - p^k - (1-p)^k` at pass rate :math:`p = q/q_{max}`
  (``learning.mixed_group_probability``), so its signal depends on the score.

Forgetting of a stage (RL's Razor: forgetting tracks how far training moves the model):

.. math::
   F_{SFT} = \text{as alone (it follows the data seen, not the score)}, \qquad
   F_{RL,OPD} = \phi_{lora}\; G\,\phi_m\, \frac{|q^{full}_{end} - q_{start}|}{|C_m - q_0|}

the formula of a one-stage plan (``learning.on_policy_forgetting``) with the
stage's own move in place of the move from the baseline; a plan's forgetting is
the sum over its stages. For a first stage every function here equals the
one-stage profile (``recipes.profile``), which ``tests/models/formulation/test_staged.py`` checks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from planopt.models.cost import learning as lc
from planopt.models.cost import pretraining as pt
from planopt.models.cost.asynchronous import gain_kept
from planopt.models.schema.plan import Recipe
from planopt.models.schema.instance import Instance

# Methods whose stage is affine in its start score (above); RL is not.
AFFINE_METHODS = ("sft", "opd")


@dataclass(frozen=True)
class StagePriors:
    """The priors a stage's outcome depends on: floats (the point evaluator) or arrays over the
    scenarios of the uncertainty model (``scenarios.ScenarioEvaluator``), element by element."""

    signal_scale: Any
    ceiling_share: Any
    forgetting_share: Any
    repeat_scale: Any
    sft_mix_exponent: Any
    lora_gain: Any
    lora_forgetting: Any
    staleness_loss: Any = 0.0   # asynchronous RL's or OPD's share of the gain lost per step of staleness (``asynchronous.py``)
    cpt_share: Any = None       # continued pre-training's share of the headroom closed (``pretraining.py``); None: the instance's
    fp8_penalty: Any = None     # the fp8 teacher's score penalty (``learning.precision_penalty``); None: the instance's

    @classmethod
    def point(cls, inst: Instance, method: str) -> "StagePriors":
        """The instance's point priors of ``method`` (the point evaluator's floats)."""
        pri = inst.priors
        m = pri.of(method)
        repeat = pri.sft_repeat_scale_epochs if method == "sft" else pri.prompt_repeat_scale_epochs
        return cls(m.signal_scale_samples, m.ceiling_share_of_headroom, m.forgetting_share_of_baseline, repeat,
                   pri.sft_forgetting_mix_exponent, getattr(pri.lora_gain_share, method),
                   getattr(pri.lora_forgetting_share, method), pri.staleness_loss(method),
                   cpt_share=None if inst.continued_pretraining is None else inst.continued_pretraining.headroom_share,
                   fp8_penalty=pri.fp8_teacher_score_penalty)


def _full_outcome(inst: Instance, r: Recipe, start, p: StagePriors):
    """Full fine-tuning's end score and the stage's forgetting before any LoRA share, from ``start``."""
    task = inst.task
    if r.method == "sft":
        examples = r.steps * inst.training.methods["sft"].prompts_per_step
        effective = lc.sft_effective_examples(examples * r.external_data_share, inst.sft_data.examples_available,
                                              r.max_epochs, p.repeat_scale)
        ceiling = lc.sft_ceiling(task, p.ceiling_share)
        end = ceiling - (ceiling - start) * np.exp(-effective / p.signal_scale)
        forgetting = lc.sft_forgetting(task, r.external_data_share, examples, p.forgetting_share, p.sft_mix_exponent,
                                       inst.priors.sft_forgetting_scale_samples)
        return end, forgetting
    end = lc.on_policy_quality(inst, r, p.signal_scale, p.ceiling_share, p.repeat_scale, start=start,
                               fp8_penalty=p.fp8_penalty)
    return end, forgetting_per_point(inst, r, p, lora=False) * np.abs(end - start)


def forgetting_per_point(inst: Instance, r: Recipe, p: StagePriors | None = None, lora: bool = True):
    r""":math:`\phi_{lora} G \phi_m / |C_m - q_0|`: an on-policy stage's forgetting per point it moves the score
    (full weights'; with ``lora`` and a LoRA recipe, times the LoRA forgetting share). 0 without headroom."""
    p = p or StagePriors.point(inst, r.method)
    task = inst.task
    headroom = np.abs(lc.on_policy_ceiling(inst, r, p.ceiling_share, p.fp8_penalty) - task.baseline_score)
    safe = np.where(headroom != 0, headroom, 1.0)
    share = p.lora_forgetting if (lora and r.lora_rank is not None) else 1.0
    return np.where(headroom != 0, share * task.general_score_baseline * p.forgetting_share / safe, 0.0)


def stage_outcome(inst: Instance, r: Recipe, start, priors: StagePriors | None = None):
    """(end score, forgetting points) of stage recipe ``r`` started at score ``start``: floats at the
    instance's priors, or arrays over scenarios when ``priors`` (or ``start``) are arrays."""
    p = priors or StagePriors.point(inst, r.method)
    if r.pretraining_tokens:  # continued pre-training first raises the score the stage starts from (pretraining.py)
        start = pt.start_score(inst, r.pretraining_tokens, start, p.cpt_share)
    end, forgetting = _full_outcome(inst, r, start, p)
    if r.lora_rank is not None:
        end, forgetting = start + p.lora_gain * (end - start), p.lora_forgetting * forgetting
    if r.staleness_steps:  # asynchronous RL or OPD keeps (1 - delta)^s of the stage's gain, its forgetting as is (recipes._asynchronous)
        end = start + gain_kept(p.staleness_loss, r.staleness_steps) * (end - start)
    if priors is None and np.ndim(start) == 0:
        return float(end), float(forgetting)
    return end, forgetting



def chain_outcomes(inst: Instance, first: tuple, recipes, priors=None):
    """(score, forgetting) after the stage recipes ``recipes`` run one after another from ``first``, the first
    stage's (end score, forgetting): each from the score before it (:func:`stage_outcome`), the forgetting summed.
    ``priors``: a function of the method giving its :class:`StagePriors` (arrays over scenarios), else the point's."""
    quality, forgetting = first
    for r in recipes:
        quality, f = stage_outcome(inst, r, quality, None if priors is None else priors(r.method))
        forgetting = forgetting + f
    return quality, forgetting

@dataclass(frozen=True)
class AffineStage:
    r"""An SFT or OPD stage as functions of its start :math:`s`: end score :math:`A + B s`; forgetting
    :math:`F_0 + k\,|a + b s|` (SFT: :math:`k = 0`; OPD: :math:`F_0 = 0`, :math:`a + b s = q^{full}_{end} - s`)."""

    end_constant: float     # A
    end_slope: float        # B, in [0, 1]
    forgetting_constant: float   # F_0
    forgetting_per_point: float  # k
    move_constant: float    # a
    move_slope: float       # b

    def end(self, start: float) -> float:
        """The end score :math:`A + B s` from start score ``start``."""
        return self.end_constant + self.end_slope * start

    def forgetting(self, start: float) -> float:
        r"""The forgetting :math:`F_0 + k\,|a + b s|` from start score ``start``."""
        return self.forgetting_constant + self.forgetting_per_point * abs(self.move_constant + self.move_slope * start)


def affine_stage(inst: Instance, r: Recipe) -> AffineStage:
    """The coefficients of an SFT or OPD stage, read off the stage at two starts (the baseline and the
    score ceiling; both maps are affine, so two points fix them)."""
    if r.method not in AFFINE_METHODS:
        raise ValueError(f"{r.method} is not affine in its start score")
    s0, s1 = inst.task.baseline_score, inst.task.score_ceiling
    if s1 == s0:
        s1 = s0 + 1.0
    e0, f0 = stage_outcome(inst, r, s0)
    e1, _ = stage_outcome(inst, r, s1)
    slope = (e1 - e0) / (s1 - s0)
    if r.method == "sft":
        return AffineStage(e0 - slope * s0, slope, f0, 0.0, 0.0, 0.0)
    point = StagePriors.point(inst, r.method)
    move0, move1 = _full_move(inst, r, s0, point), _full_move(inst, r, s1, point)
    move_slope = (move1 - move0) / (s1 - s0)
    return AffineStage(e0 - slope * s0, slope, 0.0, float(forgetting_per_point(inst, r)),
                       move0 - move_slope * s0, move_slope)


def _full_move(inst: Instance, r: Recipe, start, p: StagePriors):
    """Full fine-tuning's move of an on-policy stage started at ``start`` (after any continued pre-training, which
    is affine in the start too: ``pretraining.start_score``)."""
    if r.pretraining_tokens:
        start = pt.start_score(inst, r.pretraining_tokens, start, p.cpt_share)
    full, _ = _full_outcome(inst, r, start, p)
    return full - start
