r"""What a recipe reaches and what it forgets: learning curves and forgetting.

Every function works on floats and, element by element, on numpy arrays of
the uncertain priors, so that the evaluator (one value per prior) and the
scenario evaluator (``scenarios.py``, one value per scenario) share these
formulas. Learning curve of one phase with effective signal :math:`S`:

.. math:: q \leftarrow q + (C - q)\,(1 - e^{-S / S_0})

- SFT: :math:`S` = external examples seen; :math:`C = q_0 + c\,(q_{max} - q_0)`.
- RL: :math:`S = \text{prompts} \cdot (k-1) \cdot P_{mixed}(q/q_{max}, k)`: a group of
  :math:`k` samples gives :math:`k-1` comparisons against its mean, and only
  groups with mixed outcomes carry a gradient; :math:`C` as for SFT.
- OPD: :math:`S` = samples (dense per-token signal);
  :math:`C = \text{teacher score} \cdot (1 - \text{precision penalty})`.

Forgetting (RL's Razor: it tracks how far training moves the model):

.. math:: F_{SFT} = G \cdot \phi \cdot s^{\alpha} (1 - e^{-E/E_0}), \qquad
          F_{RL,OPD} = G \cdot \phi \cdot \frac{q - q_0}{C - q_0}
"""

from __future__ import annotations

import numpy as np

from . import defaults as d
from .plan import Recipe
from .schema import Instance, Task


def mixed_group_probability(pass_rate, k: int):
    r"""Probability a group of :math:`k` samples has both a success and a failure,
    so that a group-relative advantage is non-zero (DAPO, arXiv 2503.14476, drops
    the other groups): :math:`1 - p^k - (1-p)^k`."""
    p = np.clip(pass_rate, 0.0, 1.0)
    return 1.0 - p**k - (1.0 - p) ** k


def sft_ceiling(task: Task, ceiling_share):
    return task.baseline_score + ceiling_share * (task.score_ceiling - task.baseline_score)


def sft_quality(task: Task, external_examples: float, signal_scale, ceiling_share):
    ceiling = sft_ceiling(task, ceiling_share)
    return ceiling - (ceiling - task.baseline_score) * np.exp(-external_examples / signal_scale)


def sft_forgetting(task: Task, external_share: float, examples: float, forgetting_share, mix_exponent, forgetting_scale):
    return (task.general_score_baseline * forgetting_share * external_share ** mix_exponent
            * (1.0 - np.exp(-examples / forgetting_scale)))


def on_policy_ceiling(inst: Instance, r: Recipe, ceiling_share):
    task = inst.task
    if r.method == "opd":
        return inst.teacher.score * (1.0 - d.TEACHER_PRECISION_SCORE_PENALTY[r.teacher_precision])
    return task.baseline_score + ceiling_share * (task.score_ceiling - task.baseline_score)


def on_policy_quality(inst: Instance, r: Recipe, signal_scale, ceiling_share):
    """Score after the recipe's phases; each phase trains ``steps / phases`` steps at its samples per prompt."""
    task = inst.task
    prompts = inst.training.methods[r.method].prompts_per_step
    phase_steps = r.steps / inst.training.phases
    ceiling = on_policy_ceiling(inst, r, ceiling_share)
    q = task.baseline_score + 0.0 * ceiling  # broadcast to the shape of the priors
    for k in r.samples_per_prompt:
        if r.method == "rl":
            signal = phase_steps * prompts * (k - 1) * mixed_group_probability(q / task.score_ceiling, k)
        else:
            signal = phase_steps * prompts * k
        q = q + (ceiling - q) * (1.0 - np.exp(-signal / signal_scale))
    return q


def on_policy_progress(task: Task, quality, ceiling):
    """Share of the way from the baseline to the ceiling (0 where there is no headroom)."""
    headroom = ceiling - task.baseline_score
    safe = np.where(headroom != 0, headroom, 1.0)
    return np.where(headroom != 0, (quality - task.baseline_score) / safe, 0.0)


def on_policy_forgetting(task: Task, quality, ceiling, forgetting_share):
    return task.general_score_baseline * forgetting_share * np.abs(on_policy_progress(task, quality, ceiling))
