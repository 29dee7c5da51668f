r"""What a recipe reaches and what it forgets: learning curves and forgetting.

Every function works on floats and, element by element, on numpy arrays of
the uncertain priors, so that the evaluator (one value per prior) and the
scenario evaluator (``scenarios.py``, one value per scenario) share these
formulas. Learning curve of one phase with effective signal :math:`S`:

.. math:: q \leftarrow q + (C - q)\,(1 - e^{-S / S_0})

- SFT: :math:`S` = effective external examples :math:`D'(U, X)` of :math:`X` seen
  over :math:`U` distinct ones; :math:`C = q_0 + c\,(q_{max} - q_0)`.
- RL: :math:`S = \text{prompts}_{eff} \cdot (k-1) \cdot P_{mixed}(q/q_{max}, k)`: a group of
  :math:`k` samples gives :math:`k-1` comparisons against its mean, and only
  groups with mixed outcomes carry a gradient; :math:`C` as for SFT.
- OPD: :math:`S = \text{prompts}_{eff} \cdot k` (dense per-token signal);
  :math:`C_j = \text{teacher score} \cdot (1 - \text{precision penalty of phase } j\text{'s precision})`
  (one precision for the run, or one per phase under ``teacher.precision_by_phase``).

Repeated data (Muennighoff et al. 2023, arXiv 2305.16264): :math:`D` draws of
:math:`U` distinct items (prompts, examples), :math:`R = D/U - 1` repetitions,
are worth

.. math:: D'(U, D) = U + U R^* (1 - e^{-R/R^*}) \quad (D > U), \qquad D' = D \quad (D \le U)

fresh ones, so the :math:`n`-th draw is worth :math:`e^{-\max(0, n/U - 1)/R^*}`.
A phase of RL/OPD drawing prompts :math:`D_{j-1} .. D_j` of the run counts
:math:`\text{prompts}_{eff} = D'(U, D_j) - D'(U, D_{j-1})` with :math:`U` = ``task.prompts_available``.

Forgetting (RL's Razor: it tracks how far training moves the model):

.. math:: F_{SFT} = G \cdot \phi_f \cdot m(s) (1 - e^{-E/E_0}), \qquad
          F_{RL,OPD} = G \cdot \phi \cdot \frac{q - q_0}{C - q_0}

with :math:`\phi_f` the share of the general score's family :math:`f` (``task.general_score_family``:
``defaults.GENERAL_SCORE_FAMILIES``) and :math:`m(s) = s^{\alpha}` for new-domain shares
:math:`s \ge s_m` (where the family's source measured it), :math:`s_m^{\alpha} s / s_m` below
(:func:`sft_mix_factor`).
"""

from __future__ import annotations

import functools

import numpy as np

from planopt.models.catalog import defaults as d
from planopt.models.schema.plan import Recipe
from planopt.models.schema.instance import Instance, Task


def mixed_group_probability(pass_rate, k: int):
    r"""Probability a group of :math:`k` samples has both a success and a failure,
    so that a group-relative advantage is non-zero (DAPO, arXiv 2503.14476, drops
    the other groups): :math:`1 - p^k - (1-p)^k`."""
    p = np.clip(pass_rate, 0.0, 1.0)
    return 1.0 - p**k - (1.0 - p) ** k


def effective_draws(unique, draws, repeat_scale):
    r"""What ``draws`` draws of ``unique`` distinct items are worth in fresh ones:
    :math:`D' = U + U R^* (1 - e^{-R/R^*})`, :math:`R = D/U - 1`, where :math:`D > U`; :math:`D` otherwise.
    Increasing in :math:`U` and :math:`D`; at most :math:`U (1 + R^*)` (repeats stop paying)."""
    draws = np.asarray(draws, dtype=float)
    u = np.minimum(np.asarray(unique, dtype=float), draws)
    safe = np.where(u > 0, u, 1.0)
    repeats = np.where(u > 0, draws / safe - 1.0, 0.0)
    return np.where(u > 0, u + u * repeat_scale * (1.0 - np.exp(-repeats / repeat_scale)), 0.0)


def sft_distinct_examples(external_examples: float, owned: float, max_epochs: int) -> float:
    r"""Distinct new-domain examples behind :math:`X` seen at most :math:`E` passes each:
    owned ones first, reused up to :math:`E` epochs, then bought:
    :math:`U = \max(\min(X, U_{own}), X/E)`, of which :math:`\max(0, X/E - U_{own})` are bought."""
    return max(min(external_examples, owned), external_examples / max_epochs)


def sft_effective_examples(external_examples: float, owned: float, max_epochs: int, repeat_scale):
    """Fresh-example worth of ``external_examples`` new-domain examples seen over
    :func:`sft_distinct_examples` distinct ones: the argument of :func:`sft_quality`."""
    return effective_draws(sft_distinct_examples(external_examples, owned, max_epochs), external_examples, repeat_scale)


def lora_outcomes(baseline, quality_full, forgetting_full, gain_share, forgetting_share):
    r"""A LoRA plan's quality and forgetting from full fine-tuning's at the same recipe:
    :math:`q = q_0 + g\,(q^{full} - q_0)`, :math:`F = \phi\, F^{full}` (shares per method,
    ``priors.lora_gain_share`` and ``priors.lora_forgetting_share``; sources in ``defaults.py``)."""
    return baseline + gain_share * (quality_full - baseline), forgetting_share * forgetting_full


def sft_ceiling(task: Task, ceiling_share):
    r"""SFT's score ceiling :math:`C = q_0 + c\,(q_{max} - q_0)` for headroom share ``ceiling_share``."""
    return task.baseline_score + ceiling_share * (task.score_ceiling - task.baseline_score)


def sft_quality(task: Task, effective_examples, signal_scale, ceiling_share):
    r"""SFT's end score :math:`C - (C - q_0)\,e^{-S/S_0}` after ``effective_examples`` effective examples."""
    ceiling = sft_ceiling(task, ceiling_share)
    return ceiling - (ceiling - task.baseline_score) * np.exp(-effective_examples / signal_scale)


def sft_mix_factor(external_share, mix_exponent, measured_share_min: float):
    r"""The share of full SFT forgetting kept at new-domain share :math:`s`: :math:`s^{\alpha}` where the family's
    source measured the curve (:math:`s \ge s_m`, ``defaults.SFT_FORGETTING_MIX_MEASURED_SHARE_MIN_BY_FAMILY``),
    linear in :math:`s` below it, :math:`s_m^{\alpha} s / s_m` (forgetting follows the new-domain examples seen,
    rather than a power law extrapolated to nothing). Continuous and increasing; 1 at :math:`s = 1`, 0 at 0."""
    s = np.asarray(external_share, dtype=float)
    power = s ** mix_exponent
    linear = measured_share_min ** mix_exponent * s / measured_share_min
    out = np.where(s >= measured_share_min, power, linear)
    return float(out) if np.ndim(out) == 0 else out


def sft_forgetting(task: Task, external_share: float, examples: float, forgetting_share, mix_exponent, forgetting_scale):
    r"""SFT's forgetting :math:`F_{SFT} = G \phi\, m(s) (1 - e^{-E/E_0})` (module docstring; :math:`m`:
    :func:`sft_mix_factor`), general-score points; :math:`\phi` is the share of the score's family
    (``task.general_score_family``, resolved into ``priors.sft`` by the instance)."""
    measured = d.SFT_FORGETTING_MIX_MEASURED_SHARE_MIN_BY_FAMILY[task.general_score_family]
    return (task.general_score_baseline * forgetting_share * sft_mix_factor(external_share, mix_exponent, measured)
            * (1.0 - np.exp(-examples / forgetting_scale)))


def on_policy_ceiling(inst: Instance, r: Recipe, ceiling_share, fp8_penalty=None):
    """An RL or OPD recipe's ceiling: OPD's teacher score less its precision penalty (the last phase's precision:
    the teacher the run ends distilling towards, which its progress and forgetting are measured against), RL's as
    SFT's. ``fp8_penalty``: the fp8 teacher's penalty (an array over scenarios); None: the instance's prior."""
    if r.method == "opd":
        return phase_ceilings(inst, r, ceiling_share, fp8_penalty)[-1]
    task = inst.task
    return task.baseline_score + ceiling_share * (task.score_ceiling - task.baseline_score)


def precision_penalty(inst: Instance, precision: str, fp8_penalty=None):
    r""":math:`\pi(p)`, the relative drop of the teacher's score when it scores at precision :math:`p`:
    ``defaults.TEACHER_PRECISION_SCORE_PENALTY``, fp8's from ``priors.fp8_teacher_score_penalty`` (default 0: its
    sources are within their noise; the scenario model draws a spread, ``spreads.ABSOLUTE_FP8_TEACHER_SCORE_PENALTY``)
    or ``fp8_penalty`` where given."""
    if precision != "fp8":
        return d.TEACHER_PRECISION_SCORE_PENALTY[precision]
    return inst.priors.fp8_teacher_score_penalty if fp8_penalty is None else fp8_penalty


def phase_ceilings(inst: Instance, r: Recipe, ceiling_share, fp8_penalty=None) -> list:
    r"""The ceiling each sampling phase moves the score towards: RL's one ceiling in every phase; OPD's
    :math:`C_j = \text{teacher score} \cdot (1 - \pi(p_j))` of phase :math:`j`'s teacher precision :math:`p_j`
    (``Recipe.teacher_precisions``; :math:`\pi`: :func:`precision_penalty`)."""
    if r.method != "opd":
        return [on_policy_ceiling(inst, r, ceiling_share)] * len(r.samples_per_prompt)
    return [inst.teacher.score * (1.0 - precision_penalty(inst, p, fp8_penalty)) for p in r.teacher_precisions]


def phase_effective_prompts(inst: Instance, r: Recipe, repeat_scale) -> list:
    """Per phase, the fresh-prompt worth of the prompts it draws: :math:`D'(U, D_j) - D'(U, D_{j-1})`."""
    drawn = r.steps / inst.training.phases * inst.training.methods[r.method].prompts_per_step
    unique = inst.task.prompts_available
    if np.ndim(repeat_scale) == 0:  # the point priors: one list per (length, phases), shared by every schedule
        return list(_phase_worth(float(unique), float(drawn), len(r.samples_per_prompt), float(repeat_scale)))
    return _phase_worth.__wrapped__(unique, drawn, len(r.samples_per_prompt), repeat_scale)


@functools.lru_cache(maxsize=4096)
def _phase_worth(unique, drawn, phases: int, repeat_scale):
    """:func:`phase_effective_prompts` of ``phases`` phases drawing ``drawn`` prompts each of ``unique``."""
    worth = [effective_draws(unique, j * drawn, repeat_scale) for j in range(phases + 1)]
    return tuple(after - before for before, after in zip(worth, worth[1:]))


def on_policy_quality(inst: Instance, r: Recipe, signal_scale, ceiling_share, repeat_scale, start=None,
                      fp8_penalty=None):
    """Score after the recipe's phases; each phase trains ``steps / phases`` steps at its samples per prompt,
    on prompts worth :func:`phase_effective_prompts` fresh ones. ``start``: the score the run starts from
    (a later stage of a staged plan, ``stage_outcomes.py``); the task's baseline when None. ``fp8_penalty``:
    :func:`precision_penalty`'s, drawn per scenario; None: the instance's prior."""
    task = inst.task
    ceilings = phase_ceilings(inst, r, ceiling_share, fp8_penalty)
    q = (task.baseline_score if start is None else start) + 0.0 * ceilings[0]  # broadcast to the shape of the priors
    for k, prompts, ceiling in zip(r.samples_per_prompt, phase_effective_prompts(inst, r, repeat_scale), ceilings):
        if r.method == "rl":
            signal = prompts * (k - 1) * mixed_group_probability(q / task.score_ceiling, k)
        else:
            signal = prompts * k
        q = q + (ceiling - q) * (1.0 - np.exp(-signal / signal_scale))
    return q


def on_policy_progress(task: Task, quality, ceiling):
    """Share of the way from the baseline to the ceiling (0 where there is no headroom)."""
    headroom = ceiling - task.baseline_score
    safe = np.where(headroom != 0, headroom, 1.0)
    return np.where(headroom != 0, (quality - task.baseline_score) / safe, 0.0)


def on_policy_forgetting(task: Task, quality, ceiling, forgetting_share):
    r"""RL and OPD's forgetting :math:`F = G \phi\,|q - q_0| / (C - q_0)` (module docstring), general-score points."""
    return task.general_score_baseline * forgetting_share * np.abs(on_policy_progress(task, quality, ceiling))
