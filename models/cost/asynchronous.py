r"""Asynchronous RL: generation for step k+1 overlaps training on step k.

With ``training.staleness_steps_options`` above 0, an RL recipe may run
asynchronously at staleness :math:`s` (``Recipe.staleness_steps``): rollouts come
from a policy up to :math:`s` steps behind the one trained, as AReaL's
``max_head_offpolicyness`` and NeMo RL's ``max_trajectory_age_steps`` bound it.
Generation and training then run at once on separate GPUs, so an asynchronous
recipe fits only a split hardware choice (``rollout.py``; a colocated engine
cannot overlap with its own trainer).

**Time.** In phase :math:`p` (its own samples per prompt) a step lasts the longer
of its generation :math:`G_p` (decode, the tail, prefill, the environment's
serial latency) and its training :math:`T_p` (log-probs, reward model, the
update), and the weight hand-over and the validation decodes stay serial
(:math:`S`): the run's compute hours are

.. math:: T = S + \sum_p \max(G_p, T_p)

instead of :math:`S + \sum_p (G_p + T_p)`. Each of an asynchronous recipe's
components carries its phase (the key ends ``|@p<i>``), so the MIP can write the
maximum exactly as an epigraph (``formulation/work.py``): one variable
:math:`W_{h,p} \ge` each side, which every objective and limit pushes down to the
maximum. The evaluator (``costs.py``), the vectorised oracle and the scenario
evaluator compute the maximum itself (:func:`combine`, :func:`combined_hours`).
Staleness beyond one step buys no more overlap in this model (the pipeline is
already full at :math:`s = 1`); it only costs quality.

**Quality.** A stale plan keeps :math:`(1 - \delta)^s` of RL's quality gain,

.. math:: q = q_0 + (1 - \delta)^s (q^{sync} - q_0),

:math:`\delta` = ``priors.staleness_gain_loss_per_step`` (AReaL's staleness
ablation, ``defaults.STALENESS_GAIN_LOSS_PER_STEP``, its spread in
``spreads.py``). Forgetting is the synchronous recipe's: AReaL reports task
scores only, and staleness does not shrink the update.

Not modelled (refused in one line): staged plans, candidate students, chance
constraints (their linear scenario rows cannot hold a maximum) and portfolios
(which refuse rollout GPUs).
"""

from __future__ import annotations

import numpy as np

from planopt.models.cost.components import (DECODE, ENV_WAIT, LOGPROB_A2A, OFFLOAD_STATE, OFFLOAD_STREAM, PREFILL, REWARD_MODEL, STUDENT_FWD,
                      TAIL, TEACHER, TRAIN, TRAIN_A2A, family_of)

# what overlaps: generation (and the environment's serial wait) against the training side
GENERATION = {DECODE, TAIL, PREFILL, ENV_WAIT}
TRAINING = {STUDENT_FWD, TEACHER, REWARD_MODEL, TRAIN, TRAIN_A2A, LOGPROB_A2A, OFFLOAD_STREAM, OFFLOAD_STATE}
PHASE_MARK = "@p"


def phase_key(key: str, phase: int) -> str:
    """An asynchronous recipe's component key: the synchronous key with its phase appended."""
    return f"{key}|{PHASE_MARK}{phase}"


def overlap_role(key: str) -> tuple[str, str] | None:
    """(phase, "generation" or "training") of an asynchronous component, None for a serial one."""
    last = key.rsplit("|", 1)[-1]
    if not last.startswith(PHASE_MARK):
        return None
    fam = family_of(key)
    if fam in GENERATION:
        return last, "generation"
    if fam in TRAINING:
        return last, "training"
    return None


def groups(components: list[str]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per phase, the column masks of its generation and its training components."""
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for c, key in enumerate(components):
        role = overlap_role(key)
        if role is None:
            continue
        phase, side = role
        gen, train = out.setdefault(phase, (np.zeros(len(components), dtype=bool), np.zeros(len(components), dtype=bool)))
        (gen if side == "generation" else train)[c] = True
    return out


def combine(hours_by_component: dict) -> "float | np.ndarray":
    r""":math:`S + \sum_p \max(G_p, T_p)` of one plan's component hours (floats, or arrays over scenarios)."""
    serial, sides = 0.0, {}
    for key, hours in hours_by_component.items():
        role = overlap_role(key)
        if role is None:
            serial = serial + hours
        else:
            pair = sides.setdefault(role[0], [0.0, 0.0])
            pair[role[1] == "training"] = pair[role[1] == "training"] + hours
    return serial + sum(np.maximum(g, t) for g, t in sides.values()) if sides else serial


def combined_hours(amounts: np.ndarray, unit: np.ndarray, components: list[str]) -> np.ndarray:
    """[recipe, hardware] compute hours of ``amounts`` [recipe, component] at ``unit`` [component, hardware] hours per
    unit: the plain product, with each phase's generation and training overlapped (:func:`combine`)."""
    by_phase = groups(components)
    if not by_phase:
        return amounts @ unit
    overlapped = np.zeros(len(components), dtype=bool)
    for gen, train in by_phase.values():
        overlapped |= gen | train
    out = amounts[:, ~overlapped] @ unit[~overlapped]
    for gen, train in by_phase.values():
        out = out + np.maximum(amounts[:, gen] @ unit[gen], amounts[:, train] @ unit[train])
    return out


def gain_kept(delta, staleness: int):
    """:math:`(1 - \\delta)^s`: the share of the quality gain a plan at staleness ``s`` keeps (floats or arrays)."""
    return (1.0 - delta) ** staleness


def check_staleness_options(inst) -> None:
    """Raise ValueError naming the field when ``training.staleness_steps_options`` cannot be honoured."""
    where = "training.staleness_steps_options"
    if "rl" not in inst.training.methods:
        raise ValueError(f"{where}: staleness above 0 is asynchronous RL, and training.methods has no 'rl'; expected [0]")
    if not inst.hardware.rollout_gpus:
        raise ValueError(f"{where}: asynchronous RL overlaps generation with training on separate GPUs; "
                         "give hardware.rollout_gpus, or expected [0]")

