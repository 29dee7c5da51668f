r"""A portfolio job's gangs: the GPUs its plan holds together, as expressions of the job's plan model.

A portfolio job's block is the one plan model (``formulation.define_plan``: every layer, stages,
candidate students, retention, rollout hardware, a trained teacher), and its plan draws GPUs from
the portfolio's pools through **gangs** (``models/cost/gangs.py`` defines them on a plan; this
module writes the same as rows of the block):

- per stage slot :math:`s`, a **training** gang over the slot's hardware choices :math:`h`
  (:math:`n_h` GPUs of type :math:`g_h`, one-hot :math:`z_{s,h}`);
- with separate rollout hardware, a **rollout** gang over the slot's split choices (:math:`m_h` GPUs of
  type :math:`g'_h`), the *partner* of the training gang: same buckets, tier and hours (a bundle);
- with a teacher trained as a stage, a **teacher** gang (and a teacher rollout gang) over the OPD
  recipes :math:`r` with a teacher plan :math:`\theta(r)` (one-hot :math:`x_r`): its GPUs are the
  plan's, its compute hours :math:`T_\theta x_r`.

Each gang's *options* (hardware choices, or teacher recipes) carry *terms*: compute hours :math:`v`
(a slot's :math:`t_{h,\tau}`, or with a retention block :math:`u_{h,\tau,\rho}`, ``retention.py``;
a teacher's :math:`T_\theta x_r`) with their overheads :math:`o` and :math:`o^s` (the evaluator's,
``cost/gangs.py``). A term's spot compute hours :math:`\varsigma \le v` (``spot_within_plan``; only
where every type of the option has spot GPUs in the job's window) make, per GPU type,

.. math::
   c_{a,g} = \sum_{o:\ g_o = g} n_o\, \chi_o, \qquad
   G^{ns}_{a,g} = \sum_{o:\ g_o = g} n_o \sum_{\text{terms}} (1 + o)(v - \varsigma), \qquad
   G^{s}_{a,g} = \sum_{o:\ g_o = g} n_o \sum_{\text{terms}} (1 + o^s)\, \varsigma

(:math:`\chi_o` the option's binary), exact since :math:`v = 0` off the chosen option. The job's
non-compute money is its plan's cost less the GPU money at the instance's prices, plus the money
by the training hour of the hours spot adds (``job_noncompute_usd``):

.. math::
   \mathrm{noncompute}_j = \mathrm{cost}_j - \sum_{\text{terms}} \pi^{gpu}_o (1 + o)\, v
   + \sum_{\text{terms}} \eta\, (o^s - o)\, \varsigma

Gangs run in ``chain`` order (teacher, then slots 0, 1, 2); a rollout gang runs with its partner.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

import pyomo.core as pyo

from planopt.models.cost.gangs import spot_overhead_share, teacher_gangs, usd_per_train_hour_other
from planopt.models.cost.teacher_training import teacher_option
from planopt.models.formulation.linear import linear
from planopt.models.formulation.retention import retention_coefficients
from planopt.models.formulation.space import PlanSpace


@dataclass
class Term:
    """Compute hours of one option of a gang (a variable or an expression), their spot part and rates."""

    hours: Any                   # the variable v is a multiple of (a slot's t or u; a teacher recipe's binary)
    overhead: float              # o
    spot_overhead: float         # o^s
    eta: float                   # money by the training hour that is not GPUs (cost/gangs.py)
    gpu_usd_per_hour: float      # the option's GPUs at the instance's prices (a split choice's both sets)
    spot: Any = None             # the spot compute hours variable, where the option may run on spot
    scale: float = 1.0           # v = scale * hours (a teacher's compute hours T times its recipe's binary)
    key: tuple = ()              # (hardware, interval[, retention option]) of a slot's term; ("teacher", recipe) else


@dataclass
class GangOption:
    """One choice of a gang: its binary, GPU type and count, and its terms (shared by a bundle's two gangs)."""

    chosen: Any
    gpu: str
    count: int
    terms: list[Term]
    rollout: Optional[tuple[str, int]] = None    # a split choice's rollout GPUs (type, count)

    def wall_hours(self, spot: bool):
        """(coefs, vars) of the option's training hours off spot (``spot`` False) or on spot."""
        coefs, variables = [], []
        for t in self.terms:
            if spot:
                if t.spot is not None:
                    coefs.append(1.0 + t.spot_overhead)
                    variables.append(t.spot)
            else:
                coefs.append((1.0 + t.overhead) * t.scale)
                variables.append(t.hours)
                if t.spot is not None:
                    coefs.append(-(1.0 + t.overhead))
                    variables.append(t.spot)
        return coefs, variables


@dataclass
class Gang:
    """One gang of a portfolio job (the module docstring)."""

    stage: Optional[int]          # the slot, 0-based; None: the teacher's
    role: str                     # training | rollout | teacher | teacher_rollout
    options: list[GangOption]
    late: list[tuple[float, Any]] = field(default_factory=list)   # (lead hours, binary) of its options' recipes
    partner: Optional[int] = None   # a rollout gang: its training gang
    bundled: bool = False           # a training gang with a partner: scheduled per option (portfolio.define_bundles)

    @property
    def types(self) -> list[str]:
        """The GPU types the gang may hold."""
        return sorted({o.gpu for o in self.options})

    def nmax(self, g: str) -> int:
        """Its largest count of type ``g`` (the gang rows' big-M, data-derived)."""
        return max(o.count for o in self.options if o.gpu == g)

    def spot_types(self) -> set[str]:
        """The types it may run spot on: those of its options with spot terms."""
        return {o.gpu for o in self.options if any(t.spot is not None for t in o.terms)}

    def count(self, g: str, most: float | None = None):
        r""":math:`c_{a,g}`: the GPUs of type ``g`` it holds (only counts up to ``most``, when given)."""
        ok = [o for o in self.options if o.gpu == g and (most is None or o.count <= most)]
        return linear([float(o.count) for o in ok], [o.chosen for o in ok])

    def gpu_hours(self, g: str, spot: bool):
        r""":math:`G^{ns}_{a,g}` (``spot`` False) or :math:`G^{s}_{a,g}`."""
        coefs, variables = [], []
        for o in self.options:
            if o.gpu == g:
                c, v = o.wall_hours(spot)
                coefs += [o.count * x for x in c]
                variables += v
        return linear(coefs, variables)


def job_gangs(blk, space: PlanSpace, spot_types: set[str], preemptions: dict[str, float]) -> list[Gang]:
    """The gangs of a job whose plan model is ``blk`` over ``space`` (module docstring), their spot variables and
    ``spot_within_plan`` rows added to ``blk``; ``spot_types`` the GPU types with spot GPUs in the job's window,
    ``preemptions`` the portfolio's spot preemptions per GPU-hour by type."""
    slots = [blk] if not space.staged else [blk.stage[s] for s in blk.S]
    spot_pairs: list[Term] = []      # the terms that get a spot variable
    gangs: list[Gang] = []
    teacher = _teacher_gangs(slots, space, spot_types, preemptions, spot_pairs)
    gangs += teacher
    for s, (b, d) in enumerate(zip(slots, space.slots)):
        if not hasattr(b, "hardware_chosen"):
            continue   # no recipe of this slot fits anywhere
        options = _slot_options(b, d, spot_types, preemptions, spot_pairs)
        late = _slot_late(b, d, space)
        split = [o for o in options if o.rollout is not None]
        gangs.append(Gang(s, "training", options, late, bundled=bool(split)))
        if split:
            gangs.append(Gang(s, "rollout", [GangOption(o.chosen, o.rollout[0], o.rollout[1], o.terms) for o in split],
                              partner=len(gangs) - 1))
    blk.SPOT = pyo.Set(initialize=range(len(spot_pairs)))
    blk.spot_hours = pyo.Var(blk.SPOT, domain=pyo.NonNegativeReals)
    for n, term in enumerate(spot_pairs):
        term.spot = blk.spot_hours[n]
    blk.spot_within_plan = pyo.Constraint(blk.SPOT, rule=lambda b_, n: linear(
        [1.0, -spot_pairs[n].scale], [spot_pairs[n].spot, spot_pairs[n].hours]) <= 0)
    return gangs


def _spot_ok(gpu: str, rollout: Optional[tuple[str, int]], spot_types: set[str]) -> bool:
    """An option runs on spot only where every GPU type it holds has spot GPUs (a bundle shares its tier)."""
    return gpu in spot_types and (rollout is None or rollout[0] in spot_types)


def _slot_options(b, d, spot_types: set[str], preemptions: dict[str, float], spot_pairs: list) -> list[GangOption]:
    """One option per hardware choice of a slot block, its terms over the kept (hardware, interval) pairs (and,
    with a retention block, over the options that cover each interval)."""
    ev = d.evaluator
    pairs = list(b.HI)
    gpu_usd = d.count * d.gpu_price
    retention = ev.retention_options()
    if retention:
        _, deep, _ = retention_coefficients(d)
        keys = list(b.HIK)
        hours = {key: b.retention_hours[key] for key in keys}
    else:
        keys = [(h, i, None) for h, i in pairs]
        hours = {(h, i, None): b.interval_hours[h, i] for h, i in pairs}
    by_h: dict[int, list[Term]] = {h: [] for h in range(len(d.hardware))}
    for h, i, k in keys:
        hw = d.hardware[h]
        own = d.evaluator_of(d.hardware_student(h))
        tau = d.intervals[i]
        extra = 0.0 if k is None else float(deep[h, i, k])
        term = Term(hours[h, i, k], float(d.overhead[h, i]) + extra,
                    spot_overhead_share(own, hw, tau, preemptions) + extra,
                    usd_per_train_hour_other(own, hw, tau, None if k is None else retention[k],
                                             own.inst.operations.usd_per_wall_hour),
                    float(gpu_usd[h]), key=(h, i) if k is None else (h, i, k))
        rollout = (hw.rollout_gpu, hw.rollout_count) if hw.split else None
        if _spot_ok(hw.gpu, rollout, spot_types):
            spot_pairs.append(term)
        by_h[h].append(term)
    z = list(b.hardware_chosen.values())
    return [GangOption(z[h], hw.gpu, hw.count, by_h[h], (hw.rollout_gpu, hw.rollout_count) if hw.split else None)
            for h, hw in enumerate(d.hardware)]


def _slot_late(b, d, space: PlanSpace) -> list[tuple[float, Any]]:
    """(lead hours, binary) of a slot's recipes with a lead time; an OPD recipe whose teacher is trained as a stage
    waits for the teacher's gangs instead, its own lead less the teacher's wall hours (``cost/gangs.py``)."""
    x = list(b.recipe_chosen.values())
    out = []
    for r, rec in enumerate(d.recipes):
        lead = float(d.lead_hours[r])
        if rec.teacher_training is not None:
            inst = d.evaluator_of(d.recipe_student(r)).inst
            lead = max(0.0, lead - teacher_option(inst, rec.teacher_training, rec.method, type(d.evaluator)).wall_hours)
        if lead > 0:
            out.append((lead, x[r]))
    return out


def _teacher_gangs(slots: list, space: PlanSpace, spot_types: set[str], preemptions: dict[str, float],
                   spot_pairs: list) -> list[Gang]:
    """The teacher gang (and teacher rollout gang) over every OPD recipe of every slot with a teacher plan."""
    options, late, rollouts = [], [], []
    for b, d in zip(slots, space.slots):
        if not hasattr(b, "recipe_chosen"):
            continue
        x = list(b.recipe_chosen.values())
        for r, rec in enumerate(d.recipes):
            if rec.teacher_training is None:
                continue
            own = d.evaluator_of(d.recipe_student(r))
            needs = teacher_gangs(own.inst, rec, preemptions, type(own), 0)
            t = needs[0]
            usd = sum(g.count * g.usd_per_gpu_hour for g in needs)
            term = Term(x[r], t.overhead, t.spot_overhead, t.usd_per_train_hour_other, usd, scale=t.compute_hours,
                        key=("teacher", r))
            rollout = (needs[1].gpu, needs[1].count) if len(needs) > 1 else None
            if _spot_ok(t.gpu, rollout, spot_types):
                spot_pairs.append(term)
            option = GangOption(x[r], t.gpu, t.count, [term], rollout)
            options.append(option)
            if rollout is not None:
                rollouts.append(GangOption(x[r], rollout[0], rollout[1], [term]))
            if t.lead_hours > 0:
                late.append((t.lead_hours, x[r]))
    if not options:
        return []
    gangs = [Gang(None, "teacher", options, late, bundled=bool(rollouts))]
    if rollouts:
        gangs.append(Gang(None, "teacher_rollout", rollouts, partner=0))
    return gangs


def job_noncompute_usd(blk, gangs: list[Gang]):
    """``noncompute_j`` of the module docstring, as one linear expression over the job block's variables."""
    coefs, variables = [], []
    for gang in gangs:
        if gang.partner is not None:
            continue   # a bundle's terms are its training gang's
        for o in gang.options:
            for t in o.terms:
                coefs.append(-t.gpu_usd_per_hour * (1.0 + t.overhead) * t.scale)
                variables.append(t.hours)
                if t.spot is not None:
                    coefs.append(t.eta * (t.spot_overhead - t.overhead))
                    variables.append(t.spot)
    return blk.cost_usd + linear(coefs, variables)


def chain(gangs: list[Gang]) -> list[int]:
    """The gangs that run one after another, in order (rollout gangs run with their partners)."""
    order = sorted((g for g in range(len(gangs)) if gangs[g].partner is None),
                   key=lambda g: (-1 if gangs[g].stage is None else gangs[g].stage))
    return order

