r"""The stages layer: one block per stage slot, a sequence choice, and the chained scores.

A staged plan runs one of the instance's stage sequences (``training.stage_sequences``),
each stage with its own recipe and hardware, all under one checkpoint interval.
Slot :math:`s` (0, 1, 2) is a Pyomo block built by the single-job steps
(``define_choices``, ``define_work``, ``define_checkpointing``,
``define_accounting``) over the recipes of every method that some sequence runs
at position :math:`s`, so a stage's work, hours and money are those of a
one-stage plan (``staged_costs.py``). On top:

.. math::
   \sum_q \sigma_q = 1, \qquad
   \sum_{r \in R_s,\ \mathrm{method}(r) = m} x_{s,r} = \sum_{q:\ q_s = m} \sigma_q \quad\text{(stage_method)}, \qquad
   \sum_h z_{s,h} = \sum_r x_{s,r} \quad\text{(hardware_of_used_stage)}

with :math:`\sigma` the sequence one-hot, so slot :math:`s` holds one recipe and one
hardware choice exactly when the sequence has an :math:`s`-th stage. Every block's
interval one-hot equals the plan's (``same_interval``); intervals are not pruned per
hardware (``data.undominated_intervals`` assumes one hardware choice). With a ``retention``
block each block prices its hours under its own retention one-hot (``retention.py``), equal
to the plan's (``same_retention``). With ``candidate_students`` each slot holds every student's
recipes and hardware (``students.py``); the first two slots pair only recipes of one student
(``space._score_tables``), and a third slot's student is the first's:

.. math::
   \sum_{r \in R_{2,j}} x_{2,r} \le \sum_{r \in R_{0,j}} x_{0,r} \quad\text{(same_student_in_third_stage)}

Totals:

.. math::
   \mathrm{wall} = \sum_s \mathrm{wall}_s, \qquad
   \mathrm{cost} = K + \sum_s \mathrm{cost}_s + p_{repair} \sum_s F_s

(each block's money without :math:`K` and without forgetting repair, which depend on the whole plan).

Scores chain (``stage_outcomes.py``): :math:`Q_0 = \sum_r e_r x_{0,r}`, and a later
slot starts from :math:`Q_{s-1} \in [L_{s-1}, U_{s-1}]` (bounds from the data):

- an SFT or OPD recipe is affine, end :math:`A_r + B_r Q_{s-1}`: with
  :math:`v_r = Q_{s-1} x_r` (``start_times_recipe_*``, McCormick rows, exact since
  :math:`x_r` is binary) it adds :math:`A_r x_r + B_r v_r`; its forgetting is
  :math:`k_r |a_r x_r + b_r v_r|`, written :math:`k_r u_r` with :math:`u_r` the absolute
  value (``move_*``): two rows when the sign is known from the bounds, else a sign
  binary :math:`\delta_r` with big-M :math:`M_r = \max |a_r + b_r Q|` over the bounds;
- an RL recipe (only ever right after an SFT stage in slot 0, by the order of
  stages) is not affine: its end and forgetting for each slot-0 SFT recipe are
  tabulated, :math:`\sum_{r'} p_{r',r} = x_{1,r}`, :math:`\sum_r p_{r',r} \le x_{0,r'}`
  (``pair_*``; exact with binary :math:`x`: only the chosen pair is non-zero);
- no stage (a shorter sequence) passes the score on: :math:`w_s = Q_{s-1} n_s`
  with :math:`n_s = 1 - \sum_r x_{s,r}`.

:math:`Q_s` is the sum of these; the plan's quality is that of the last slot.
"""

from __future__ import annotations

import numpy as np
import pyomo.core as pyo  # not pyomo.environ: its plugins cost every CLI call ~0.3 s unused (BENCHMARKS.md §1)

from planopt.models.cost.releases import release_count
from planopt.models.cost.stage_outcomes import AFFINE_METHODS, affine_stage
from planopt.models.formulation.accounting import define_accounting
from planopt.models.formulation.checkpointing import define_checkpointing
from planopt.models.formulation.choices import define_choices
from planopt.models.formulation.data import FormulationData
from planopt.models.formulation.limits import recipe_within_limits
from planopt.models.formulation.linear import flattened, linear
from planopt.models.formulation.retention import define_retention
from planopt.models.formulation.space import PlanSpace, interval_floors
from planopt.models.formulation.work import define_work


def define_stages(m: pyo.ConcreteModel, data: PlanSpace) -> None:
    """The plan of a staged space: the plan's interval, sequence and retention one-hots, one block per slot,
    the chained scores, the same student throughout, and the totals (the module docstring)."""
    inst = data.evaluator.inst
    n_i = len(data.intervals)
    m.I = pyo.Set(initialize=range(n_i))
    m.interval_chosen = pyo.Var(m.I, domain=pyo.Binary)
    m.one_interval = pyo.Constraint(expr=linear([1.0] * n_i, list(m.interval_chosen.values())) == 1)
    m.Q = pyo.Set(initialize=range(len(data.sequences)))
    m.sequence_chosen = pyo.Var(m.Q, domain=pyo.Binary)
    sigma = list(m.sequence_chosen.values())
    m.one_sequence = pyo.Constraint(expr=linear([1.0] * len(sigma), sigma) == 1)
    options = data.evaluator.retention_options()
    if options:  # one retention option for the plan, shared by the stages like the interval (retention.py)
        m.RET = pyo.Set(initialize=range(len(options)))
        m.retention_chosen = pyo.Var(m.RET, domain=pyo.Binary)
        m.one_retention = pyo.Constraint(expr=linear([1.0] * len(options), list(m.retention_chosen.values())) == 1)
    m.S = pyo.Set(initialize=range(len(data.slots)))
    m.stage = pyo.Block(m.S)
    for s, d in enumerate(data.slots):
        define_slot_block(m, m.stage[s], s, d, data, sigma)
    define_scores(m, data)
    define_same_student(m, data)
    m.wall_hours = pyo.Expression(expr=flattened(sum(m.stage[s].wall_hours for s in m.S)))
    m.cost_usd = pyo.Expression(expr=flattened(inst.operations.fixed_usd + sum(m.stage[s].cost_usd for s in m.S)
                                               + release_count(inst) * inst.forgetting_repair_usd_per_point
                                               * m.forgetting_points))


def define_slot_block(m: pyo.ConcreteModel, b, s: int, d: FormulationData, data: PlanSpace, sigma: list) -> None:
    r"""Slot ``s``'s block: the single-job steps over its recipes, its one-hot rows scaled by whether the
    sequence has an ``s``-th stage (``stage_method``, ``hardware_of_used_stage``), its interval and retention
    the plan's (``same_interval``, ``same_retention``)."""
    if not d.recipes or not d.hardware:
        # no recipe of this slot fits anywhere: sequences that need it are ruled out
        for q, seq in enumerate(data.sequences):
            if len(seq) > s:
                sigma[q].fix(0)
        b.used = pyo.Expression(expr=0.0)
        b.cost_usd = pyo.Expression(expr=0.0)
        b.wall_hours = pyo.Expression(expr=0.0)
        return
    define_choices(b, d)
    define_work(b, d)
    define_checkpointing(b, d)
    define_accounting(b, d)
    define_retention(b, d)
    if hasattr(m, "RET"):
        vb, v = list(b.retention_chosen.values()), list(m.retention_chosen.values())
        b.one_retention.deactivate()
        b.same_retention = pyo.Constraint(b.RET, rule=lambda b, k: linear([1.0, -1.0], [vb[k], v[k]]) == 0)
    x = list(b.recipe_chosen.values())
    z = list(b.hardware_chosen.values())
    b.one_recipe.deactivate()
    b.one_interval.deactivate()
    b.used = pyo.Expression(expr=linear([1.0] * len(x), x))
    b.stage_method = pyo.ConstraintList()
    for method in sorted({r.method for r in d.recipes}):
        members = [x[r] for r, rec in enumerate(d.recipes) if rec.method == method]
        runs = [sigma[q] for q, seq in enumerate(data.sequences) if len(seq) > s and seq[s] == method]
        b.stage_method.add(linear([1.0] * len(members) + [-1.0] * len(runs), members + runs) == 0)
    b.one_hardware.deactivate()
    b.hardware_of_used_stage = pyo.Constraint(expr=linear([1.0] * len(z) + [-1.0] * len(x), z + x) == 0)
    yb, y = list(b.interval_chosen.values()), list(m.interval_chosen.values())
    b.same_interval = pyo.Constraint(b.I, rule=lambda b, i: linear([1.0, -1.0], [yb[i], y[i]]) == 0)


def define_same_student(m: pyo.ConcreteModel, data: PlanSpace) -> None:
    """``same_student_in_third_stage`` (the module docstring); nothing with one student or two slots (the
    pair table holds the first two slots to one student)."""
    d0 = data.slots[0]
    if len(data.slots) < 3 or len(d0.students) < 2 or not hasattr(m.stage[2], "recipe_chosen"):
        return
    d2 = data.slots[2]
    x0, x2 = list(m.stage[0].recipe_chosen.values()), list(m.stage[2].recipe_chosen.values())
    m.same_student_in_third_stage = pyo.ConstraintList()
    for j in range(len(d0.students)):
        later = [x2[r] for r in range(len(d2.recipes)) if d2.recipe_student(r) == j]
        first = [x0[r] for r in range(len(d0.recipes)) if d0.recipe_student(r) == j]
        if later:
            m.same_student_in_third_stage.add(linear([1.0] * len(later) + [-1.0] * len(first), later + first) <= 0)


def define_pair_limits(m: pyo.ConcreteModel, data: PlanSpace) -> None:
    """The pair floors of the first two stages as rows and as the limits' fixing (``_pair_floors``)."""
    if not hasattr(m, "pair"):
        return
    floors = _pair_floors(m, data)
    _pair_floor_rows(m, data, floors)
    m.recipe_floor = floors
    m.limit_fixed_vars = list(m.pair.values())
    recipe_within_limits(m)


def define_scores(m: pyo.ConcreteModel, data: PlanSpace) -> None:
    """The chained scores and forgetting of the module docstring (``quality``, ``forgetting_points``)."""
    baseline = data.evaluator.inst.task.baseline_score
    d0 = data.slots[0]
    x0 = list(m.stage[0].recipe_chosen.values()) if d0.recipes and d0.hardware else []
    score = linear(data.ends0, x0) if x0 else 0.0
    forgetting = [linear(data.forget0, x0) if x0 else 0.0]
    bounds = [(float(data.ends0.min()), float(data.ends0.max()))] if x0 else [(baseline, baseline)]
    if len(data.slots) > 1 and x0:
        score, f, bound = _pair_with_first_stage(m, data, x0)
        forgetting.append(f)
        bounds.append(bound)
    for s in range(2, len(data.slots)):
        d, b = data.slots[s], m.stage[s]
        if not d.recipes or not d.hardware:
            bounds.append(bounds[-1])
            forgetting.append(0.0)
            continue
        # the score the previous slot ends at, as one variable (``score_before``): each McCormick row then
        # holds it once, not the sum over every pair of the first two stages (10.8 M of 11 M nonzeros at
        # 10^10 plans, BENCHMARKS.md §7)
        lo, hi = bounds[-1]
        b.score_before = pyo.Var(bounds=(lo, hi))
        b.score_before_is = pyo.Constraint(expr=b.score_before - flattened(score) == 0)
        score, f, bound = _chain_affine_slot(b, d, data, s, b.score_before, bounds[-1])
        forgetting.append(f)
        bounds.append(bound)
    data.start_bounds = bounds
    m.quality = pyo.Expression(expr=flattened(score))
    m.forgetting_points = pyo.Expression(expr=flattened(sum(forgetting)))


def _pair_with_first_stage(m: pyo.ConcreteModel, data: PlanSpace, x0: list):
    r"""Slot 1 paired with slot 0: :math:`p_{r_0,o} \ge 0` for each slot-0 recipe :math:`r_0` and each slot-1
    option :math:`o` (a recipe, or none) that some sequence lets follow it (``space``'s tables), with

    .. math::
       \sum_{r_0} p_{r_0,o} = x_{1,o}\ (\text{none: } 1 - \sum_o x_{1,o}) \quad\text{(pair_of_second_stage)}, \qquad
       \sum_o p_{r_0,o} = x_{0,r_0} \quad\text{(pair_of_first_stage)}

    Exact with binary :math:`x` (only the chosen pair is non-zero), and the LP relaxation of a
    transportation polytope: the score :math:`\sum p\, Q(r_0, o)` and forgetting are tabulated, so the
    first two stages need no McCormick rows."""
    d1, b = data.slots[1], m.stage[1]
    x1 = list(b.recipe_chosen.values()) if d1.recipes and d1.hardware else []
    n1 = len(d1.recipes)
    allowed = data.pair_allowed.copy()
    if not x1:
        allowed[:, :n1] = False
    r0s, os_ = np.nonzero(allowed)
    m.pair_index = (r0s, os_)  # pair n is (slot-0 recipe r0s[n], slot-1 option os_[n]; the last option: none)
    m.P = pyo.Set(initialize=range(len(r0s)))
    m.pair = pyo.Var(m.P, bounds=(0.0, 1.0))
    p = list(m.pair.values())
    by_second = [np.flatnonzero(os_ == o).tolist() for o in range(n1 + 1)]
    by_first = [np.flatnonzero(r0s == r0).tolist() for r0 in range(len(x0))]
    m.pair_of_second_stage = pyo.ConstraintList()
    for o in range(n1 if x1 else 0):
        m.pair_of_second_stage.add(linear([1.0] * len(by_second[o]) + [-1.0], [p[n] for n in by_second[o]] + [x1[o]]) == 0)
    none = by_second[n1]
    m.pair_of_second_stage.add(linear([1.0] * (len(none) + len(x1)), [p[n] for n in none] + x1) == 1)
    m.pair_of_first_stage = pyo.Constraint(range(len(x0)), rule=lambda m, r0: linear(
        [1.0] * len(by_first[r0]) + [-1.0], [p[n] for n in by_first[r0]] + [x0[r0]]) == 0)
    values, forgets = data.pair_end[r0s, os_], data.pair_forget[r0s, os_]
    if not len(values):  # no second stage can follow any first one: pair_of_first_stage rules every plan out
        return 0.0, 0.0, (float(data.ends0.min()), float(data.ends0.max()))
    return linear(values, p), linear(forgets, p), (float(values.min()), float(values.max()))


def _pair_floors(m: pyo.ConcreteModel, data: PlanSpace) -> dict[str, np.ndarray]:
    r"""Per pair of the first two stages (in the order of ``m.pair``), what any plan through it reaches at best:
    cost and wall time at least the least over the shared interval of the two stages' floors at that interval
    (``space.interval_floors``), plus the least of a third stage (0 when a sequence may stop); forgetting
    at least the pair's; score at most :math:`\max(Q, \max_{r_2} A_{r_2} + B_{r_2} Q)` over third-stage
    recipes. ``limits.recipe_within_limits`` fixes to 0 each pair a limit rules out on its own (exact), and
    ``pair_cost_floor`` / ``pair_wall_floor`` bound the plan's cost and wall time from below by them."""
    inst = data.evaluator.inst
    r0s, os_ = m.pair_index
    d0, d1 = data.slots[0], data.slots[1]
    f0 = interval_floors(d0)
    n_i = len(data.intervals)
    usd1 = np.zeros((len(d1.recipes) + 1, n_i))                     # the last row: no second stage
    wall1 = np.zeros((len(d1.recipes) + 1, n_i))
    if d1.recipes and d1.hardware:
        f1 = interval_floors(d1)
        usd1[:-1], wall1[:-1] = f1["cheap_usd"], f1["fast_wall"]
    elif d1.recipes:
        usd1[:-1] = wall1[:-1] = np.inf
    usd = (f0["cheap_usd"][r0s] + usd1[os_]).min(axis=1) if len(r0s) else np.zeros(0)
    wall = (f0["fast_wall"][r0s] + wall1[os_]).min(axis=1) if len(r0s) else np.zeros(0)
    score = data.pair_end[r0s, os_]
    forgetting = data.forget0[r0s] + data.pair_forget[r0s, os_]
    if len(data.slots) > 2 and data.slots[2].recipes and data.slots[2].hardware:
        d2 = data.slots[2]
        f2 = interval_floors(d2)
        if not any(len(q) < 3 for q in data.sequences):
            usd, wall = usd + f2["cheap_usd"].min(), wall + f2["fast_wall"].min()
        best = score.copy()
        for n, r in enumerate(d2.recipes):
            a = affine_stage(d2.evaluator_of(d2.recipe_student(n)).inst, r)
            best = np.maximum(best, a.end_constant + a.end_slope * score)
        score = best
    cost = inst.operations.fixed_usd + usd + release_count(inst) * inst.forgetting_repair_usd_per_point * forgetting
    return {"budget_usd": cost, "deadline_hours": wall, "max_forgetting_points": forgetting, "min_quality": score}


def _pair_floor_rows(m: pyo.ConcreteModel, data: PlanSpace, floors: dict[str, np.ndarray]) -> None:
    r"""Valid rows: the plan's cost and wall time are at least its pair's floors (``_pair_floors``, without a
    third stage's share) plus a third stage recipe's own (``data.plan_floors``):

    .. math::
       \mathrm{cost} \ge \sum_n \underline C_n\, p_n + \sum_{r_2} \underline C_{r_2} x_{2,r_2}
       \quad\text{(pair_cost_floor)}, \qquad
       \mathrm{wall} \ge \sum_n \underline W_n\, p_n + \sum_{r_2} \underline W_{r_2} x_{2,r_2}
       \quad\text{(pair_wall_floor)}

    The blocks' own floors take each stage's least at its own best interval; these take the pair's at one
    shared interval, which is what makes the LP relaxation of a frontier's ε-rows tight."""
    p = list(m.pair.values())
    usd, wall = floors["budget_usd"], floors["deadline_hours"]
    terms_usd, terms_wall, xs = list(np.where(np.isfinite(usd), usd, 0.0)), list(np.where(np.isfinite(wall), wall, 0.0)), list(p)
    if len(data.slots) > 2 and hasattr(m.stage[2], "recipe_chosen"):
        d2 = data.slots[2]
        if not any(len(q) < 3 for q in data.sequences):
            return  # the pair floors already hold the third stage's least; no per-recipe term to add
        x2 = list(m.stage[2].recipe_chosen.values())
        terms_usd += list(np.where(np.isfinite(d2.compute_usd_floor), d2.recipe_usd + d2.compute_usd_floor, 0.0))
        terms_wall += list(np.where(np.isfinite(d2.train_hours_floor), d2.lead_hours + d2.train_hours_floor, 0.0))
        xs += x2
    m.pair_cost_floor = pyo.Constraint(expr=m.cost_usd - linear(terms_usd, xs) >= 0)
    m.pair_wall_floor = pyo.Constraint(expr=m.wall_hours - linear(terms_wall, xs) >= 0)


def _times_binary(rows: pyo.ConstraintList, v, start, lo: float, hi: float, binary) -> None:
    r"""McCormick rows making :math:`v = \text{start} \cdot \text{binary}` for start in [lo, hi] and a 0/1
    ``binary`` (exact at 0 and 1): :math:`lo\,b \le v \le hi\,b`, :math:`\text{start} - hi(1-b) \le v \le \text{start} - lo(1-b)`."""
    rows.add(v - hi * binary <= 0)
    rows.add(v - lo * binary >= 0)
    rows.add(v - start + lo * (1 - binary) <= 0)
    rows.add(v - start + hi * (1 - binary) >= 0)


def _chain_affine_slot(b, d: FormulationData, data: PlanSpace, s: int, start, start_bound):
    """Score and forgetting at the end of slot ``s`` (2 and later: only affine methods, by the order of
    stages) from the score ``start`` the previous slot ended at."""
    lo, hi = start_bound
    x = list(b.recipe_chosen.values())
    if any(rec.method not in AFFINE_METHODS for rec in d.recipes):
        raise ValueError("only SFT and OPD stages can run third")  # the order sft, rl, opd
    terms, forget_terms, ends_lo, ends_hi = [], [], [], []
    b.start_times_recipe = pyo.Var(b.R, bounds=(min(0.0, lo), max(0.0, hi)))
    b.start_times_recipe_rows = pyo.ConstraintList()
    b.move = pyo.Var(b.R, domain=pyo.NonNegativeReals)
    b.move_rows = pyo.ConstraintList()
    b.move_sign = pyo.Var(b.R, domain=pyo.Binary)
    for r in b.R:
        a = affine_stage(d.evaluator_of(d.recipe_student(r)).inst, d.recipes[r])
        v = b.start_times_recipe[r]
        _times_binary(b.start_times_recipe_rows, v, start, lo, hi, x[r])
        terms.append(a.end_constant * x[r] + a.end_slope * v)
        ends_lo.append(min(a.end(lo), a.end(hi)))
        ends_hi.append(max(a.end(lo), a.end(hi)))
        forget = a.forgetting_constant * x[r]
        b.move_sign[r].fix(0)
        if a.forgetting_per_point > 0:
            move = a.move_constant * x[r] + a.move_slope * v
            lo_move = min(a.move_constant + a.move_slope * lo, a.move_constant + a.move_slope * hi)
            hi_move = max(a.move_constant + a.move_slope * lo, a.move_constant + a.move_slope * hi)
            u = b.move[r]
            if lo_move >= 0:
                b.move_rows.add(u - move == 0)
            elif hi_move <= 0:
                b.move_rows.add(u + move == 0)
            else:  # the sign depends on the start: |move| with a sign binary, big-M from the bounds
                big = max(abs(lo_move), abs(hi_move))
                delta = b.move_sign[r]
                delta.unfix()
                b.move_rows.add(u - move >= 0)
                b.move_rows.add(u + move >= 0)
                b.move_rows.add(u - move - 2.0 * big * (1 - delta) <= 0)
                b.move_rows.add(u + move - 2.0 * big * delta <= 0)
                b.move_rows.add(u - big * x[r] <= 0)
            forget = forget + a.forgetting_per_point * u
        else:
            b.move[r].fix(0)
        forget_terms.append(forget)
    if any(len(seq) <= s for seq in data.sequences):  # no stage here: the score passes on
        b.passes_on = pyo.Var(bounds=(min(0.0, lo), max(0.0, hi)))
        b.passes_on_rows = pyo.ConstraintList()
        _times_binary(b.passes_on_rows, b.passes_on, start, lo, hi, 1 - b.used)
        terms.append(b.passes_on)
        ends_lo.append(lo)
        ends_hi.append(hi)
    return sum(terms), sum(forget_terms), (min(ends_lo), max(ends_hi))
