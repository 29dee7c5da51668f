r"""Asynchronous RL and OPD: generation for step k+1 overlaps training on step k.

With ``training.staleness_steps_options`` above 0, an RL recipe (and an OPD recipe under
``training.asynchronous_opd``, :func:`staleness_options`) may run
asynchronously at staleness :math:`s` (``Recipe.staleness_steps``): rollouts come
from a policy up to :math:`s` steps behind the one trained, as AReaL's
``max_head_offpolicyness`` and NeMo RL's ``max_trajectory_age_steps`` bound it.
Generation and training then run at once on separate GPUs, so an asynchronous
recipe fits only a split hardware choice (``rollout.py``; a colocated engine
cannot overlap with its own trainer).

**Time.** In phase :math:`p` (its own samples per prompt) a step lasts the longer
of its generation :math:`G_p` (decode, the tail, prefill, the environment's
serial latency) and its training :math:`T_p` (log-probs, reward model, OPD's
teacher scoring, the update), and the weight hand-over and the validation decodes stay serial
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

**Environments on a pool** (``environments.py``) add a side: the pool's work
:math:`E_p`. The phase mark of a key says which maximum its phase takes
(``MEMBERS``): ``@p`` asynchronous RL, :math:`\max(G_p + E_p, T_p)` (the
environments run after generation); ``@q`` asynchronous RL with an agent loop,
:math:`\max(G_p + L, E_p + L, T_p)` (the serial wait :math:`L` counts in two
sides); ``@e`` a synchronous agent loop, :math:`\max(G_p, E_p)` with training
serial. Every maximum is one epigraph over its sides, whatever their number.

**Quality.** A stale plan keeps :math:`(1 - \delta)^s` of its method's quality gain,

.. math:: q = q_0 + (1 - \delta)^s (q^{sync} - q_0),

:math:`\delta` = ``priors.staleness_gain_loss_per_step`` (AReaL's staleness
ablation, ``defaults.STALENESS_GAIN_LOSS_PER_STEP``, its spread in
``spreads.py``); OPD's :math:`\delta` is ``priors.opd_staleness_gain_loss_per_step``
(``defaults.OPD_STALENESS_GAIN_LOSS_PER_STEP``: RL's, INFERRED, with a wide spread). Forgetting is the synchronous recipe's: AReaL reports task
scores only, and staleness does not shrink the update.

It composes with staged plans, candidate students, chance constraints (an epigraph per
scenario, ``formulation/scenarios.py``) and portfolios.
"""

from __future__ import annotations

import numpy as np

from planopt.models.cost.components import (DECODE, ENV_CPU, ENV_WAIT, LOGPROB_A2A, OFFLOAD_STATE, OFFLOAD_STREAM, PREFILL,
                                            REWARD_MODEL, STUDENT_FWD, TAIL, TEACHER, TRAIN, TRAIN_A2A, family_of)

# what overlaps: generation (and the environment's serial wait) against the training side
GENERATION = {DECODE, TAIL, PREFILL, ENV_WAIT}
TRAINING = {STUDENT_FWD, TEACHER, REWARD_MODEL, TRAIN, TRAIN_A2A, LOGPROB_A2A, OFFLOAD_STREAM, OFFLOAD_STATE}
# The phase mark of a component key says which maximum its phase takes (``environments.py``): asynchronous RL
# (generation, then the pool's environment work, against training), asynchronous RL with an agent loop
# (generation and environment work each after the serial wait, against training), and a synchronous agent loop
# (generation against environment work; the rest of the step serial).
PHASE_MARK, ASYNC_AGENT_LOOP_MARK, AGENT_LOOP_MARK = "@p", "@q", "@e"
SIDES = ("generation", "environments", "training")
MEMBERS = {
    PHASE_MARK: {"generation": GENERATION | {ENV_CPU}, "training": TRAINING},
    ASYNC_AGENT_LOOP_MARK: {"generation": GENERATION, "environments": {ENV_CPU, ENV_WAIT}, "training": TRAINING},
    AGENT_LOOP_MARK: {"generation": GENERATION - {ENV_WAIT}, "environments": {ENV_CPU}},
}


def phase_key(key: str, phase: int, mark: str = PHASE_MARK) -> str:
    """A component key with its sampling phase (and the overlap its mark names) appended."""
    return f"{key}|{mark}{phase}"


def overlap_sides(key: str) -> tuple[str, tuple[str, ...]] | None:
    r"""(phase, the sides of its maximum the component counts in) of an overlapped component, None for a serial one.
    A component may count in two sides (the serial wait of an asynchronous agent loop: :math:`\max(G + L, E + L, T)`)."""
    last = key.rsplit("|", 1)[-1]
    members = MEMBERS.get(last[:2])
    if members is None:
        return None
    fam = family_of(key)
    sides = tuple(side for side in SIDES if fam in members.get(side, ()))
    return (last, sides) if sides else None


def overlap_role(key: str) -> tuple[str, str] | None:
    """(phase, "generation" or "training") of an asynchronous component (its first side), None for a serial one."""
    found = overlap_sides(key)
    return None if found is None else (found[0], found[1][0])


def groups(components: list[str]) -> dict[str, list[np.ndarray]]:
    """Per overlapped phase, the column masks of each side of its maximum (in ``SIDES`` order, sides it has)."""
    return {phase: list(masks.values()) for phase, masks in named_groups(components).items()}


def named_groups(components: list[str]) -> dict[str, dict[str, np.ndarray]]:
    """Per overlapped phase, each side of its maximum (in ``SIDES`` order, sides it has) and its column mask."""
    out: dict[str, dict[str, np.ndarray]] = {}
    for c, key in enumerate(components):
        found = overlap_sides(key)
        if found is None:
            continue
        phase, sides = found
        masks = out.setdefault(phase, {})
        for side in sides:
            masks.setdefault(side, np.zeros(len(components), dtype=bool))[c] = True
    return {phase: {s: masks[s] for s in SIDES if s in masks} for phase, masks in out.items()}


def overlapped(keys) -> bool:
    """Whether any component key is overlapped (its phase takes a maximum)."""
    return any(overlap_sides(key) is not None for key in keys)


def combine(hours_by_component: dict) -> "float | np.ndarray":
    r""":math:`S + \sum_p \max_s \sum_{c \in s} H_c` of one plan's component hours (floats, or arrays over scenarios):
    the serial components summed, and each overlapped phase's longest side."""
    serial, sides = 0.0, {}
    for key, hours in hours_by_component.items():
        found = overlap_sides(key)
        if found is None:
            serial = serial + hours
            continue
        phase = sides.setdefault(found[0], {})
        for side in found[1]:
            phase[side] = phase.get(side, 0.0) + hours
    if not sides:
        return serial
    longest = []
    for phase in sides.values():
        values = [phase[side] for side in SIDES if side in phase]
        most = values[0]
        for v in values[1:]:
            most = np.maximum(most, v)
        longest.append(most)
    return serial + sum(longest)


def product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    r"""``a @ b``, each entry summed in one fixed order, :math:`((a_{i0} b_{0k} + a_{i1} b_{1k}) + \dots)`, by
    elementwise IEEE operations (one column of ``a`` at a time, over the rows where it is not zero), so an entry
    depends on its terms alone. A BLAS product sums a row with a kernel chosen by where the thread count splits the
    matrix, so equal or tied rows could differ in the last bit with the machine's threads; that flipped ties of the
    exact dominance pruning (``formulation/data.py``), and the same instance built a different model under a Dask
    worker (one BLAS thread: 172 recipes of ``qwen3-8b-math-teacher-precision-by-phase``) than in the CLI (one thread
    per core: 171). ``tests/models/formulation/test_deterministic_build.py``."""
    out = np.zeros((a.shape[0], b.shape[1]))
    for j, column in enumerate(np.ascontiguousarray(np.transpose(a))):
        rows = np.flatnonzero(column)
        if 2 * len(rows) > len(column):   # adding a zero term leaves an entry as it was
            out += column[:, None] * b[j]
        elif len(rows):
            out[rows] += column[rows, None] * b[j]
    return out


def combined_hours(amounts: np.ndarray, unit: np.ndarray, components: list[str]) -> np.ndarray:
    """[recipe, hardware] compute hours of ``amounts`` [recipe, component] at ``unit`` [component, hardware] hours per
    unit: the plain product, with each overlapped phase's sides taken at their maximum (:func:`combine`)."""
    by_phase = groups(components)
    if not by_phase:
        return product(amounts, unit)
    overlapped_ = np.zeros(len(components), dtype=bool)
    for masks in by_phase.values():
        for mask in masks:
            overlapped_ |= mask
    out = product(amounts[:, ~overlapped_], unit[~overlapped_])
    for masks in by_phase.values():
        longest = product(amounts[:, masks[0]], unit[masks[0]])
        for mask in masks[1:]:
            longest = np.maximum(longest, product(amounts[:, mask], unit[mask]))
        out = out + longest
    return out


def gain_kept(delta, staleness: int):
    """:math:`(1 - \\delta)^s`: the share of the quality gain a plan at staleness ``s`` keeps (floats or arrays)."""
    return (1.0 - delta) ** staleness


def staleness_options(inst, method: str) -> list[int]:
    """The staleness options of ``method``'s recipes, sorted: RL's ``training.staleness_steps_options``; OPD's the
    same under ``training.asynchronous_opd``, else [0]; SFT's [0]."""
    t = inst.training
    if method == "rl" or (method == "opd" and t.asynchronous_opd):
        return sorted(set(t.staleness_steps_options))
    return [0]


def check_staleness_options(inst) -> None:
    """Raise ValueError naming the field when ``training.staleness_steps_options`` cannot be honoured."""
    where = "training.staleness_steps_options"
    methods = inst.training.methods
    if "rl" not in methods and not ("opd" in methods and inst.training.asynchronous_opd):
        raise ValueError(f"{where}: staleness above 0 is asynchronous RL or OPD, and training.methods has no 'rl' "
                         + ("nor 'opd'" if "opd" not in methods else "and training.asynchronous_opd is false")
                         + "; expected [0]")
    if not inst.hardware.rollout_gpus:
        raise ValueError(f"{where}: asynchronous RL and OPD overlap generation with training on separate GPUs; "
                         "give hardware.rollout_gpus, or expected [0]")

