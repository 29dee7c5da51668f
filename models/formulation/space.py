r"""The plan space of one job, as the plan model's coefficients: its slots, sequences and score tables.

A plan runs one of the instance's stage sequences (``training.stage_sequences``, or each method
alone). Slot :math:`s` (0, 1, 2) holds the recipes of every method some sequence runs at position
:math:`s`, as one block of single-job coefficients (``data.collect``), and, with
``candidate_students``, of every student at once (``students.union_of_students``: the student is
a dimension of the space, not a layer of rows). An instance whose sequences all have one stage
has one slot, collected and pruned exactly as a single job (``data.prune``: dominated hardware at
its best interval, dominated recipes, dominated intervals). With two or three slots every
interval is kept (the stages share one) and the first two slots are paired
(``stages._pair_with_first_stage``): for each slot-0 recipe :math:`r_0` and each slot-1 option
:math:`o` (a recipe, or no second stage) that a sequence allows after it, of the same student,

.. math::
   Q(r_0, o) = \mathrm{end}_o(e_{r_0}), \qquad F(r_0, o) = \mathrm{forgetting}_o(e_{r_0})

with :math:`e_{r_0}` the score slot 0 ends at (``stage_outcomes.stage_outcome`` from the
student's baseline; no second stage: :math:`Q = e_{r_0}`, :math:`F = 0`).

Pruning of a staged space, all exact (``data.dominated_hardware`` and ``data.dominated_recipes`` prove it):

- per slot and student, a hardware choice no better than another at every interval (``per_interval``);
- with two slots, a slot-1 recipe that another of its method and student matches or beats
  after *every* slot-0 recipe (score, forgetting) and on money, lead time and
  hours on every hardware; then a slot-0 recipe that another of its method and student
  matches or beats for *every* continuation (score :math:`Q(r_0, o)`, forgetting
  :math:`f_{r_0} + F(r_0, o)`) and on its own money, lead time and hours. Swapping the
  dominated recipe for its dominator in any plan leaves every metric no worse.
  With a third slot the score of slot 1 feeds slot 2's forgetting, which is not
  monotone in it, so no recipe is pruned there.

Models that price what these prunings do not see (scenarios, a portfolio's GPU-hours by type)
collect the space with ``prune=False``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from planopt.models.cost.evaluator import Evaluator
from planopt.models.cost.releases import release_count
from planopt.models.schema.instance import METHODS
from planopt.models.cost.stage_outcomes import stage_outcome
from planopt.models.formulation.data import (FormulationData, collect, dominated_hardware, dominated_recipes, prune,
                                             subset_hardware, subset_recipes)
from planopt.models.formulation.students import union_of_students
from planopt.models.schema.plan import Plan, Stage


@dataclass
class PlanSpace:
    """The coefficients of one job's plan model (the module docstring)."""

    evaluator: Evaluator
    sequences: list[tuple[str, ...]]
    slots: list[FormulationData]                 # per slot, the block's coefficients (recipes of its methods)
    intervals: list[float]
    ends0: np.ndarray = field(default_factory=lambda: np.zeros(0))        # [r0] score slot 0 ends at
    forget0: np.ndarray = field(default_factory=lambda: np.zeros(0))      # [r0] slot 0's forgetting
    pair_end: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))     # [r0, o] Q; o = slot-1 recipe, last: none
    pair_forget: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))  # [r0, o] F
    pair_allowed: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=bool))
    start_bounds: list[tuple[float, float]] = field(default_factory=list)   # per slot, [L, U] of the score it ends at
    dropped: dict[str, int] = field(default_factory=dict)

    @property
    def staged(self) -> bool:
        """Whether some plan runs more than one stage (the model then has one block per slot)."""
        return len(self.slots) > 1

    @property
    def recipes(self) -> list:
        """The first stage's options (what a caller asking "is there any recipe?" means)."""
        return self.slots[0].recipes

    @property
    def hardware(self) -> list:
        """The first slot's hardware choices."""
        return self.slots[0].hardware

    @property
    def plans(self) -> int:
        """Plans the model holds: per sequence, the product over its stages of the (recipe, hardware) pairs
        of the stage's method and of one student (a recipe runs on hardware of its own adapter), × intervals
        (the kept (hardware, interval) pairs for one slot)."""
        total = 0
        for seq in self.sequences:
            for j in range(max(1, len(self.slots[0].students))):
                n = len(self.intervals) if self.staged else 1
                for s, method in enumerate(seq):
                    d = self.slots[s]
                    kept = d.interval_kept.sum(axis=1) if not self.staged else np.ones(len(d.hardware))
                    n *= sum(int(kept[h]) for r, rec in enumerate(d.recipes) if rec.method == method
                             and d.recipe_student(r) == j for h, hw in enumerate(d.hardware)
                             if hw.lora_rank == rec.lora_rank and d.hardware_student(h) == j)
                total += n
        return total

    def plan_of(self, stages: list[tuple[int, int]], interval: int, retention: int | None) -> Plan:
        """The plan of (recipe, hardware) positions per stage, in its slots, at interval and retention positions."""
        d0 = self.slots[0]
        student = d0.student_name(d0.recipe_student(stages[0][0])) if d0.students else self.evaluator.inst.student.preset
        keep = None if retention is None else self.evaluator.retention_options()[retention]
        return Plan(tuple(Stage(self.slots[s].recipes[r], self.slots[s].hardware[h]) for s, (r, h) in enumerate(stages)),
                    self.intervals[interval], student, keep)


def students_of(ev: Evaluator) -> tuple[list[str], list[Evaluator]]:
    """The students a plan may train and their evaluators (``Evaluator.for_student``); [] without ``candidate_students``."""
    inst = ev.inst
    if not inst.candidate_students:
        return [], []
    names = inst.student_names()
    return names, [ev.for_student(n) for n in names]


def collect_space(ev: Evaluator, prune: bool = True, keep_intervals: bool | None = None) -> PlanSpace:
    """The plan space of ``ev``'s instance; ``prune``: drop what is dominated (the module docstring).
    ``keep_intervals`` (default: ``not prune``) keeps every (hardware, interval) pair of a one-slot space; a model
    that prunes nothing else may still drop the intervals of more overhead where overhead is all an interval moves
    (a portfolio without spot work, ``data.undominated_intervals``)."""
    inst = ev.inst
    sequences = inst.training.sequences()
    names, evaluators = students_of(ev)
    if max(len(q) for q in sequences) == 1:
        keep = not prune if keep_intervals is None else keep_intervals
        blocks = [collect(e, keep_dominated_intervals=keep, cache_profiles=not prune) for e in evaluators or [ev]]
        if prune:
            blocks = [prune_block(b) for b in blocks]
        slot = union_of_students(blocks, names) if names else blocks[0]
        space = PlanSpace(ev, sequences, [slot], slot.intervals, dropped=dict(slot.dropped))
        return space
    slots = []
    dropped: dict[str, int] = {}
    for s in range(max(len(q) for q in sequences)):
        methods = {q[s] for q in sequences if len(q) > s}
        blocks = []
        for e in evaluators or [ev]:
            # continued pre-training is a first stage's (cost/pretraining.py): later slots hold recipes without it
            data = collect(e, keep_dominated_intervals=True, recipes=[r for r in e.space()[0] if r.method in methods
                                                                      and (s == 0 or not r.pretraining_tokens)])
            if prune and inst.retention is None:  # the retention money is per hardware, unseen by the test
                drop = dominated_hardware(data, per_interval=True)
                if drop.any():
                    data = subset_hardware(data, np.flatnonzero(~drop))
                key = f"stage {s + 1}: hardware another dominates"
                dropped[key] = dropped.get(key, 0) + int(drop.sum())
            # the block's money is the stage's own: the fixed operations cost and forgetting repair are the plan's
            repair = release_count(inst) * inst.forgetting_repair_usd_per_point * data.forgetting
            blocks.append(replace(data, recipe_usd=data.recipe_usd - repair, constant_usd=0.0))
        slots.append(union_of_students(blocks, names) if names else blocks[0])
    out = PlanSpace(ev, sequences, slots, slots[0].intervals, dropped=dropped)
    _score_tables(out)
    if prune and len(slots) == 2:
        _prune_recipes(out)
    return out


def prune_block(data: FormulationData) -> FormulationData:
    """A one-slot block pruned as a single job (``data.prune``) when it has anything to choose from."""
    return prune(data) if data.recipes and data.hardware else data


def _score_tables(data: PlanSpace) -> None:
    """``ends0``, ``forget0`` and, with a second slot, the pair tables (module docstring), each recipe scored
    from its own student's baseline; pairs of two students are not allowed."""
    d0 = data.slots[0]
    inst_of = [d0.evaluator_of(j).inst for j in range(max(1, len(d0.students)))]
    outcomes = [stage_outcome(inst_of[d0.recipe_student(r)], rec, inst_of[d0.recipe_student(r)].task.baseline_score)
                for r, rec in enumerate(d0.recipes)]
    data.ends0 = np.array([e for e, _ in outcomes], dtype=float)
    data.forget0 = np.array([f for _, f in outcomes], dtype=float)
    if len(data.slots) < 2:
        return
    d1 = data.slots[1]
    follows = {(q[0], q[1] if len(q) > 1 else None) for q in data.sequences}
    n0, n1 = len(d0.recipes), len(d1.recipes)
    end, forget = np.zeros((n0, n1 + 1)), np.zeros((n0, n1 + 1))
    allowed = np.zeros((n0, n1 + 1), dtype=bool)
    first = np.array([r.method for r in d0.recipes], dtype=object)
    student0 = np.array([d0.recipe_student(r) for r in range(n0)], dtype=int)
    for o, rec in enumerate(d1.recipes):
        j = d1.recipe_student(o)
        ok = np.array([(m, rec.method) in follows for m in first], dtype=bool) & (student0 == j)
        if ok.any():
            e, f = stage_outcome(inst_of[j], rec, data.ends0[ok], _point_priors(inst_of[j], rec.method))
            end[ok, o], forget[ok, o], allowed[ok, o] = e, f, True
    ok = np.array([(m, None) in follows for m in first], dtype=bool)
    end[ok, n1], allowed[ok, n1] = data.ends0[ok], True
    data.pair_end, data.pair_forget, data.pair_allowed = end, forget, allowed


def _point_priors(inst, method: str):
    from planopt.models.cost.stage_outcomes import StagePriors
    return StagePriors.point(inst, method)


def _prune_recipes(data: PlanSpace) -> None:
    """Drop dominated slot-1, then slot-0 recipes, until neither changes (module docstring)."""
    total = {0: 0, 1: 0}
    while True:
        d0, d1 = data.slots
        n1 = len(d1.recipes)
        method1 = np.array([METHODS.index(r.method) + len(METHODS) * d1.recipe_student(n)
                            for n, r in enumerate(d1.recipes)], dtype=float)   # compared within a method and student
        q1 = np.where(data.pair_allowed[:, :n1], data.pair_end[:, :n1], 0.0).T
        f1 = np.where(data.pair_allowed[:, :n1], data.pair_forget[:, :n1], 0.0).T
        keep1 = ~dominated_recipes(d1, quality=q1, forgetting=f1, same=method1)
        if not keep1.all():
            _keep_second(data, np.flatnonzero(keep1))
        method0 = np.array([METHODS.index(r.method) + len(METHODS) * d0.recipe_student(n)
                            for n, r in enumerate(d0.recipes)], dtype=float)
        q0 = np.where(data.pair_allowed, data.pair_end, 0.0)
        f0 = np.where(data.pair_allowed, data.forget0[:, None] + data.pair_forget, 0.0)
        keep0 = ~dominated_recipes(d0, quality=q0, forgetting=f0, same=method0)
        if not keep0.all():
            _keep_first(data, np.flatnonzero(keep0))
        total[1] += int((~keep1).sum())
        total[0] += int((~keep0).sum())
        if keep0.all() and keep1.all():
            break
    data.dropped["stage 1: recipes another dominates"] = total[0]
    data.dropped["stage 2: recipes another dominates"] = total[1]


def _keep_first(data: PlanSpace, idx: np.ndarray) -> None:
    data.slots[0] = subset_recipes(data.slots[0], idx)
    data.ends0, data.forget0 = data.ends0[idx], data.forget0[idx]
    data.pair_end, data.pair_forget, data.pair_allowed = data.pair_end[idx], data.pair_forget[idx], data.pair_allowed[idx]


def _keep_second(data: PlanSpace, idx: np.ndarray) -> None:
    data.slots[1] = subset_recipes(data.slots[1], idx)
    cols = np.append(idx, data.pair_end.shape[1] - 1)  # the last column (no second stage) stays
    data.pair_end, data.pair_forget, data.pair_allowed = (data.pair_end[:, cols], data.pair_forget[:, cols],
                                                          data.pair_allowed[:, cols])


def interval_floors(d: FormulationData) -> dict[str, np.ndarray]:
    r"""Per recipe of a slot and per interval :math:`\tau`, its cheapest and its fastest hardware, and
    their stage money and wall hours (:math:`+\infty` where the recipe fits nowhere):

    .. math::
       c(r, \tau) = c_r + \min_h \pi_h (1 + o_h(\tau)) T_r(h), \qquad
       w(r, \tau) = \mathrm{lead}_r + \min_h (1 + o_h(\tau)) T_r(h)

    (``cheap_usd``, ``fast_wall``; ``cheap_wall`` and ``fast_usd`` are the other metric of the same choice,
    ``cheap`` and ``fast`` the hardware positions). Every stage run of :math:`r` at :math:`\tau` costs at
    least :math:`c` and takes at least :math:`w`."""
    stretch = 1.0 + d.overhead                                                    # [h, i]
    train = np.where(d.recipe_fits[:, :, None], d.compute_hours[:, :, None] * stretch[None], np.inf)  # [r, h, i]
    money = train * d.hourly_usd[None, :, None]
    out = {}
    for name, key in (("cheap", money), ("fast", train)):
        if not train.size:
            shape = (len(d.recipes), len(d.intervals))
            out.update({name: np.zeros(shape, dtype=int), name + "_usd": np.full(shape, np.inf),
                        name + "_wall": np.full(shape, np.inf)})
            continue
        h = key.argmin(axis=1)                                                    # [r, i]
        t = np.take_along_axis(train, h[:, None, :], axis=1)[:, 0, :]
        out[name] = h
        out[name + "_usd"] = d.recipe_usd[:, None] + d.hourly_usd[h] * t
        out[name + "_wall"] = d.lead_hours[:, None] + t
    return out
