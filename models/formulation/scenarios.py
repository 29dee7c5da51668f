r"""The scenarios layer: every limit met in at least a share of sampled scenarios, for any plan.

Sample-average approximation over :math:`S` scenarios of the uncertainty model
(``uncertainty/model.py``), exact for the sampled set, on top of the plan model of any plan space
(one slot or stages, one student or several, retention, asynchronous rollout, a trained teacher).
The space is collected without pruning (``space.collect_space(prune=False)``): dominance and
dominated intervals are proven for point values, not for every scenario.

**Hours by rate.** In each slot block the compute hours on each hardware choice are split by
*rate key* :math:`\kappa = (\phi, \text{side})`: the rate factor :math:`\phi` its work scales with
(MFU, decode speed, or neither; ``recipes.RATE_FACTOR``) and, for asynchronous RL, the side of its
sampling phase (generation or training of phase :math:`p`; serial otherwise), then disaggregated
over every interval :math:`\tau` and retention option :math:`\rho`:

.. math::
   \sum_{\tau,\rho} B_{\kappa,h,\tau,\rho} &= \sum_{c \in \kappa} U_{c,h}\, a_{c,h}              &&\text{(rate_hours_split)} \\
   \sum_\rho B_{\kappa,h,\tau,\rho} &\le T^{max}_{\kappa,h}\, y_\tau                               &&\text{(rate_hours_on_chosen_interval)} \\
   \sum_{\kappa,h,\tau} B_{\kappa,h,\tau,\rho} &\le \Big(\sum_{\kappa,h} T^{max}_{\kappa,h}\Big) v_\rho  &&\text{(rate_hours_on_chosen_retention)}

:math:`T^{max}_{\kappa,h}` is the largest key-:math:`\kappa` time of a recipe that fits on :math:`h`
(data). With :math:`y`, :math:`v` and the hardware one-hot, only the chosen
:math:`(h, \tau, \rho)` carries hours, so each :math:`B` is the chosen plan's key hours or 0.

**A scenario's metrics** are linear in :math:`x`, :math:`B` and the epigraphs below
(``uncertainty/scenarios.py`` has the same formulas per plan), with
:math:`\gamma^s_{\kappa,h,\tau,\rho} = g^s_\phi (1 + o^s_h(\tau) + \delta_h(\tau,\rho))` the hours in
scenario :math:`s` per point hour (:math:`g^s_\phi = f_\phi / f^s_\phi` the rate scale) and
:math:`\pi^s_{h,\tau,\rho}` the money per training hour (the GPUs at the scenario's prices, hot
storage or the retention option's at the scenario's failure rate, operations):

.. math::
   H^s_b &= \sum_{\kappa\ \text{serial}} \gamma^s B + \sum_p W^s_{b,p}, \qquad
   W^s_{b,p} \ge \sum_{\kappa \in G_p} \gamma^s B,\ W^s_{b,p} \ge \sum_{\kappa \in T_p} \gamma^s B
       \quad\text{(overlap_hours_in_scenario)} \\
   C^s_b &= \sum_r c^s_r x_r + \sum_{\kappa\ \text{serial}} \pi^s \gamma^s B + \sum_p M^s_{b,p}, \qquad
   M^s_{b,p} \ge \sum_{\kappa \in G_p} \pi^s \gamma^s B,\ M^s_{b,p} \ge \sum_{\kappa \in T_p} \pi^s \gamma^s B
       \quad\text{(overlap_money_in_scenario)} \\
   \mathrm{wall}^s &= \sum_b \Big(\sum_r \mathrm{lead}^s_r x_r + H^s_b\Big), \qquad
   \mathrm{cost}^s = K + \sum_b C^s_b \;(+\, p_{repair} F^s \text{ for stages})

The epigraphs are exact: :math:`W` and :math:`M` enter only the wall time and the cost, which every
limit bounds from above and every objective minimises or ignores, so a solution with them at the
maximum exists whenever one above it does, and the cost tie-break takes it. Quality and forgetting:
one slot, :math:`q^s = \sum_r q^s_r x_r`, :math:`F^s = \sum_r F^s_r x_r`; stages, the pair table of
the first two slots in scenario :math:`s` (``space._score_tables`` under the scenario's priors),
:math:`q^s = \sum_n Q^s_n p_n`, :math:`F^s = \sum_r F^s_{0,r} x_{0,r} + \sum_n F^s_n p_n`.
:math:`c^s_r` and :math:`\mathrm{lead}^s_r` move with the scenario only for an OPD recipe whose teacher
is trained as a stage: the teacher's own plan is priced in the scenario (``ScenarioEvaluator.teacher_run``),
and where it does not reach ``teacher.score`` the recipe breaks the scenario whatever its limits.

**Chance rows.** One binary :math:`v_s` per scenario marks it as allowed to break limits. An option
(a one-slot recipe, or a pair of the first two stages) *breaks* scenario :math:`s` when it breaks a
limit there on every plan through it (its quality or forgetting, its least cost or time over the
hardware, intervals and retention options it fits, an unusable trained teacher); then

.. math::
   \sum_{o \in \mathcal B_{L,s}} w_o \le v_s, \qquad m^s_L \le \bar L + M_{L,s}\, v_s + \ldots,
   \qquad \sum_s v_s \le \lfloor (1 - \alpha) S \rfloor     &&\text{(limit_in_scenario_<L>, violations_allowed)}

:math:`\bar L` is the limit widened by the evaluator's tolerance (``scenarios.widened``). The cover row
is exact and needs no big-M; the big-M row (``_big_m_row``) is added where an option outside
:math:`\mathcal B_{L,s}` may still break the limit, with :math:`M_{L,s}` the largest value of the metric
over every option that fits less :math:`\bar L` (data: a broken option chosen sets :math:`v_s = 1`, and the
row must then let it be). A scenario every option breaks has :math:`v_s` fixed to 1. An unusable trained
teacher has cover rows of its own (``teacher_usable_in_scenario``). Objectives: the
expected value of each metric (averaged coefficients), or CVaR of cost at level :math:`\beta`
(Rockafellar–Uryasev): :math:`\eta + \frac{1}{(1-\beta) S} \sum_s u_s`, :math:`u_s \ge \mathrm{cost}^s - \eta`.

**Releases** (``cost/releases.py``): the plan runs :math:`N` times, so each scenario's cost is its total over
the releases by the same linear map as the point coefficients' (``data.collect``): :math:`\pi^s` times
:math:`N`, :math:`c^s_r` its fixed part once and the rest :math:`N` times less the labels reused at the scenario's
share, a staged plan's repair :math:`N p_{repair} F^s`; the wall time, quality and forgetting stay one release's.

A third stage (an affine method after the pair) has no per-scenario table here: it is refused in one
line (``check_scenarios_apply``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pyomo.core as pyo  # not pyomo.environ: its plugins cost every CLI call ~0.3 s unused (BENCHMARKS.md §1)

from planopt.models.catalog.defaults import HOURS_PER_MONTH
from planopt.models.cost.asynchronous import overlap_sides, product
from planopt.models.cost.evaluator import LIMIT_METRIC, OBJECTIVE_METRIC
from planopt.models.cost.recipes import RATE_FACTOR, family_of
from planopt.models.cost.releases import release_count, total_line
from planopt.models.cost.retention import deep_rollback_share, storage_usd_per_train_hour
from planopt.models.cost.stage_outcomes import stage_outcome
from planopt.models.formulation.data import FormulationData
from planopt.models.formulation.linear import linear
from planopt.models.formulation.space import PlanSpace
from planopt.models.uncertainty.model import Scenarios
from planopt.models.uncertainty.scenarios import RATE_FAMILIES, ScenarioEvaluator, widened

# Counting allowed violations: floor((1 - alpha) S) computed with this guard so that
# e.g. (1 - 0.9) * 200 = 19.999999999999996 counts as 20.
COUNT_GUARD = 1e-9
SCENARIO_METRICS = ("cost_usd", "wall_hours", "quality", "forgetting_points")


def allowed_violations(confidence: float, n: int) -> int:
    """Most scenarios that may break a limit while at least ``confidence`` of ``n`` meet them all."""
    return int(math.floor((1.0 - confidence) * n + COUNT_GUARD))


def check_scenarios_apply(space: PlanSpace) -> None:
    """ValueError naming the field for a space the layer does not price: a third stage."""
    check_scenario_stages(len(space.slots))


def repair_usd_per_point(inst) -> float:
    """A staged plan's forgetting repair per point over the releases: every release repairs (cost/releases.py)."""
    return release_count(inst) * inst.forgetting_repair_usd_per_point


def check_scenario_stages(stages: int) -> None:
    """ValueError naming the field when plans of ``stages`` stages are more than the layer prices (two)."""
    if stages > 2:
        raise ValueError("training.stage_sequences: scenarios (a confidence, a probability frontier) price plans of "
                         "at most two stages for now; a third stage's score per scenario is not tabulated")


@dataclass
class SlotScenarios:
    """One slot block's coefficients in every scenario (the module docstring's symbols)."""

    keys: list[tuple[int, tuple, str | None]]  # rate keys: (rate family index, the sides it counts in (): serial, phase)
    key_of_component: np.ndarray              # [component] index into keys
    tmax: np.ndarray                          # [key, hardware] T^max
    hours: np.ndarray                         # [key, hardware, interval, option, scenario] gamma^s
    money: np.ndarray                         # [hardware, interval, option, scenario] pi^s
    recipe_usd: np.ndarray                    # [recipe, scenario] c^s_r (a one-slot plan's with its repair)
    lead: np.ndarray                          # [recipe, scenario]
    quality: np.ndarray                       # [recipe, scenario] (a stage's from the baseline)
    forgetting: np.ndarray                    # [recipe, scenario]
    usable: np.ndarray                        # [recipe, scenario] a trained teacher reaches its score

    def phases(self) -> list[list[list[int]]]:
        """Per overlapped phase, the rate keys of each side of its maximum (``asynchronous.SIDES`` order)."""
        from planopt.models.cost.asynchronous import SIDES
        names = sorted({p for _, _, p in self.keys if p is not None})
        out = []
        for name in names:
            sides = [[k for k, (_, s, p) in enumerate(self.keys) if p == name and side in s] for side in SIDES]
            out.append([side for side in sides if side])
        return out


@dataclass
class ScenarioSpace:
    """The scenarios layer's coefficients: per slot, and for stages the pair table in every scenario."""

    scenarios: Scenarios
    slots: list[SlotScenarios]
    pair_end: np.ndarray | None = None        # [r0, o, scenario] Q^s (o: slot-1 recipe, last: none)
    pair_forget: np.ndarray | None = None     # [r0, o, scenario] F^s


def collect_scenarios(space: PlanSpace, scenarios: Scenarios) -> ScenarioSpace:
    """The layer's coefficients for ``space`` (collected with ``prune=False``) under ``scenarios``."""
    check_scenarios_apply(space)
    evaluators: dict[int, ScenarioEvaluator] = {}

    def se_of(d: FormulationData, j: int) -> ScenarioEvaluator:
        if j not in evaluators:
            evaluators[j] = ScenarioEvaluator(d.evaluator_of(j), scenarios)
        return evaluators[j]

    one_slot = not space.staged
    slots = [_slot_scenarios(d, se_of, one_slot) for d in space.slots]
    out = ScenarioSpace(scenarios, slots)
    if space.staged:
        _pair_tables(space, out, se_of)
    return out


def _rate_keys(components: list[str]) -> tuple[list, np.ndarray]:
    family = {f: n for n, f in enumerate(RATE_FAMILIES)}
    keys: list = []
    of = np.zeros(len(components), dtype=int)
    for c, comp in enumerate(components):
        found = overlap_sides(comp)
        key = (family[RATE_FACTOR[family_of(comp)]], () if found is None else found[1], None if found is None else found[0])
        if key not in keys:
            keys.append(key)
        of[c] = keys.index(key)
    return keys, of


def _slot_scenarios(d: FormulationData, se_of, one_slot: bool) -> SlotScenarios:
    """One block's coefficients (the module docstring), from each student's scenario evaluator."""
    inst = d.evaluator.inst
    keys, key_of = _rate_keys(d.components)
    n_k, n_h, n_i = len(keys), len(d.hardware), len(d.intervals)
    options = d.evaluator.retention_options() or [None]
    member = np.zeros((len(d.components), n_k))
    member[np.arange(len(d.components)), key_of] = 1.0
    key_hours = np.einsum("rc,ch,ck->rhk", d.amount_share, d.unit_hours, member, optimize=True)   # [r, h, key]
    key_hours[~d.recipe_fits] = 0.0
    tmax = key_hours.max(axis=0).T if len(d.recipes) else np.zeros((n_k, n_h))
    ses = [se_of(d, d.hardware_student(h)) for h in range(n_h)]
    n_s = (ses[0] if ses else se_of(d, 0)).sc.n
    hours, money = np.zeros((n_k, n_h, n_i, len(options), n_s)), np.zeros((n_h, n_i, len(options), n_s))
    st, ck, ops = inst.storage, inst.checkpointing, inst.operations
    for h, hw in enumerate(d.hardware):
        se, gb = ses[h], ses[h].ev.hardware(hw).checkpoint_gb
        scale = np.array([se.rate_scale(RATE_FAMILIES[f]) for f, _, _ in keys])              # [key, s]
        gpus = se.gpus_usd_per_hour(hw)
        failures = se.value("reliability.failures_per_gpu_hour", inst.reliability.failures_per_gpu_hour)
        for i, tau in enumerate(d.intervals):
            stretch = 1.0 + se.overhead(hw, tau)
            for k, option in enumerate(options):
                deep = 0.0 if option is None else float(deep_rollback_share(inst, option, hw.count, tau))
                hours[:, h, i, k] = scale * (stretch + deep)[None, :]
                storage = (ck.keep_last * gb * st.hot_usd_per_gb_month / HOURS_PER_MONTH if option is None else
                           storage_usd_per_train_hour(inst, option, gb, hw.count, tau, failures))
                money[h, i, k] = gpus + storage + ops.usd_per_wall_hour + se.ev.hardware(hw).environments_usd_per_hour
    money *= release_count(inst)  # every release pays the hourly money: each release is one run (cost/releases.py)
    recipe = [_recipe_scenarios(se_of(d, d.recipe_student(r)), rec, one_slot) for r, rec in enumerate(d.recipes)]
    stack = (lambda n: np.array([x[n] for x in recipe]).reshape(len(recipe), n_s))
    return SlotScenarios(keys, key_of, tmax, hours, money, stack(0), stack(1), stack(2), stack(3),
                         np.array([x[4] for x in recipe], dtype=bool).reshape(len(recipe), n_s))


def _recipe_scenarios(se: ScenarioEvaluator, r, one_slot: bool) -> tuple:
    """(money c^s, lead^s, quality^s, forgetting^s, usable^s) of recipe ``r`` (its hours apart)."""
    inst, n = se.inst, se.sc.n
    rp = se.ev.recipe(r)
    quality, forgetting = se.outcomes(r)
    data_usd, lead = se.recipe_money_and_lead(r)
    st, ck = inst.storage, inst.checkpointing
    cold = ck.milestones_kept * st.cold_usd_per_gb_month * ck.milestone_retention_months * rp.checkpoint_gb
    money = (data_usd + se.environments_usd(r) + rp.log_storage_usd + rp.network_usd + rp.log_ingest_usd + cold
             + inst.operations.usd_per_wall_hour * lead)
    if one_slot:  # a stage's forgetting repair is the plan's (stages: on the plan's forgetting)
        money = money + inst.forgetting_repair_usd_per_point * forgetting
    if inst.releases is not None:  # over the releases: the fixed part once (a trained teacher's run too), the rest
        # each time, the scenario's share of the labels again (cost/releases.py; ScenarioEvaluator._run's order)
        fixed = rp.fixed_data_usd + (data_usd - rp.data_usd) + rp.fixed_network_usd + cold
        share = se.value("releases.sft_labels_rebuilt_share", inst.releases.sft_labels_rebuilt_share)
        money = total_line(inst, money, fixed, rp.labels_usd, share)
    run = se.teacher_run(r)
    usable = np.ones(n, dtype=bool) if run is None else run[2]
    return (np.broadcast_to(money, (n,)) + 0.0, np.broadcast_to(lead, (n,)) + 0.0, quality, forgetting, usable)


def _pair_tables(space: PlanSpace, out: ScenarioSpace, se_of) -> None:
    """The pair table of the first two slots in every scenario, from each slot-0 recipe's scenario ends."""
    d0, d1 = space.slots[0], space.slots[1]
    ends0 = out.slots[0].quality                                                         # [r0, s]
    n0, n1, n_s = len(d0.recipes), len(d1.recipes), ends0.shape[1] if len(ends0) else out.scenarios.n
    end, forget = np.zeros((n0, n1 + 1, n_s)), np.zeros((n0, n1 + 1, n_s))
    for o, rec in enumerate(d1.recipes):
        rows = np.flatnonzero(space.pair_allowed[:, o])
        if len(rows):
            se = se_of(d1, d1.recipe_student(o))
            e, f = stage_outcome(se.inst, rec, ends0[rows], se.stage_priors(rec.method))
            end[rows, o], forget[rows, o] = e, f
    end[:, n1] = ends0
    out.pair_end, out.pair_forget = end, forget


# --- the rows -------------------------------------------------------------------------------------------

def define_scenarios(m: pyo.ConcreteModel, space: PlanSpace, ss: ScenarioSpace, limits: dict[str, float],
                     allowed: int | None, cvar_level: float | None) -> None:
    """The layer's variables and rows (the module docstring): rate hours per slot block, each scenario's metrics,
    the chance rows, the expected objectives and CVaR."""
    blocks = [m] if not space.staged else [m.stage[s] for s in m.S]
    parts = [define_rate_hours(m, b, d, sl) if hasattr(b, "recipe_chosen") else None
             for b, d, sl in zip(blocks, space.slots, ss.slots)]
    metrics = scenario_metrics(m, space, ss, blocks, parts)
    define_chance_rows(m, space, ss, metrics, limits, allowed)
    define_scenario_objectives(m, metrics, ss.scenarios.n, cvar_level)


def define_rate_hours(m: pyo.ConcreteModel, b, d: FormulationData, sl: SlotScenarios) -> dict:
    """``rate_hours_*`` and the asynchronous epigraphs of one block; returns each scenario's hours and money terms."""
    n_i, n_o, n_s = len(d.intervals), sl.hours.shape[3], sl.hours.shape[4]
    index = [(k, h, i, o) for k in range(len(sl.keys)) for h in range(len(d.hardware)) if sl.tmax[k, h] > 0
             for i in range(n_i) for o in range(n_o)]
    b.RATE = pyo.Set(initialize=index, dimen=4, ordered=True)
    b.rate_hours = pyo.Var(b.RATE, domain=pyo.NonNegativeReals)
    bvars = list(b.rate_hours.values())
    pos: dict[tuple[int, int], list[int]] = {}
    for n, (k, h, i, o) in enumerate(index):
        pos.setdefault((k, h), []).append(n)
    work: dict[tuple[int, int], list] = {}
    for (c, h), var in b.work_share.items():
        work.setdefault((int(sl.key_of_component[c]), h), []).append((float(d.unit_hours[c, h]), var))
    b.rate_hours_split = pyo.ConstraintList()
    for (k, h), ns in pos.items():
        terms = work.get((k, h), [])
        b.rate_hours_split.add(linear([1.0] * len(ns) + [-u for u, _ in terms], [bvars[n] for n in ns] + [v for _, v in terms]) == 0)
    y = list(b.interval_chosen.values())
    b.rate_hours_on_chosen_interval = pyo.ConstraintList()
    for (k, h), ns in pos.items():
        for i in range(n_i):
            at = [n for n in ns if index[n][2] == i]
            b.rate_hours_on_chosen_interval.add(linear([1.0] * len(at) + [-float(sl.tmax[k, h])], [bvars[n] for n in at] + [y[i]]) <= 0)
    if n_o > 1:
        v = list(b.retention_chosen.values())
        big = float(sl.tmax.sum())
        b.rate_hours_on_chosen_retention = pyo.ConstraintList()
        for o in range(n_o):
            at = [n for n, key in enumerate(index) if key[3] == o]
            b.rate_hours_on_chosen_retention.add(linear([1.0] * len(at) + [-big], [bvars[n] for n in at] + [v[o]]) <= 0)
    ks, hs, is_, os_ = (np.array([key[j] for key in index], dtype=int) for j in range(4))
    gamma = sl.hours[ks, hs, is_, os_] if index else np.zeros((0, n_s))                    # [n, s]
    pi_gamma = gamma * sl.money[hs, is_, os_] if index else np.zeros((0, n_s))
    serial = np.array([sl.keys[k][1] == () for k in ks], dtype=bool)
    part = {"vars": [bvars[n] for n in np.flatnonzero(serial)], "hours": gamma[serial], "money": pi_gamma[serial],
            "extra_hours": [[] for _ in range(n_s)], "extra_money": [[] for _ in range(n_s)]}
    phases = sl.phases()
    if phases:
        b.PHASE_SCENARIO = pyo.Set(initialize=[(p, s) for p in range(len(phases)) for s in range(n_s)], dimen=2)
        b.overlap_hours_in_scenario = pyo.Var(b.PHASE_SCENARIO, domain=pyo.NonNegativeReals)
        b.overlap_money_in_scenario = pyo.Var(b.PHASE_SCENARIO, domain=pyo.NonNegativeReals)
        b.overlap_covers_in_scenario = pyo.ConstraintList()
        for p, sides in enumerate(phases):
            for side in sides:
                at = np.flatnonzero(np.isin(ks, side))
                for s in range(n_s):
                    for coefs, epi in ((gamma[at, s], b.overlap_hours_in_scenario[p, s]),
                                       (pi_gamma[at, s], b.overlap_money_in_scenario[p, s])):
                        b.overlap_covers_in_scenario.add(linear(list(coefs) + [-1.0], [bvars[n] for n in at] + [epi]) <= 0)
            for s in range(n_s):
                part["extra_hours"][s].append(b.overlap_hours_in_scenario[p, s])
                part["extra_money"][s].append(b.overlap_money_in_scenario[p, s])
    return part


def scenario_metrics(m: pyo.ConcreteModel, space: PlanSpace, ss: ScenarioSpace, blocks: list, parts: list) -> dict:
    """Per metric, its linear (coefficient [term, scenario], variables) form over the scenarios."""
    inst = space.evaluator.inst
    n_s = ss.scenarios.n
    out = {name: ([], []) for name in SCENARIO_METRICS}

    def add(name, coefs, variables):
        out[name][0].append(np.asarray(coefs, dtype=float).reshape(len(variables), n_s))
        out[name][1].extend(variables)

    for b, sl, part in zip(blocks, ss.slots, parts):
        if part is None:
            continue
        x = list(b.recipe_chosen.values())
        add("cost_usd", sl.recipe_usd, x)
        add("wall_hours", sl.lead, x)
        add("cost_usd", part["money"], part["vars"])
        add("wall_hours", part["hours"], part["vars"])
        for name, extra in (("wall_hours", part["extra_hours"]), ("cost_usd", part["extra_money"])):
            for p in range(len(extra[0])):  # scenario s's epigraph counts in scenario s alone
                add(name, np.eye(n_s), [extra[s][p] for s in range(n_s)])
    if not space.staged:
        x = list(m.recipe_chosen.values())
        add("quality", ss.slots[0].quality, x)
        add("forgetting_points", ss.slots[0].forgetting, x)
    else:
        p = list(m.pair.values())
        r0s, os_ = m.pair_index
        add("quality", ss.pair_end[r0s, os_], p)
        add("forgetting_points", ss.pair_forget[r0s, os_], p)
        add("forgetting_points", ss.slots[0].forgetting, list(m.stage[0].recipe_chosen.values()))
        repair = repair_usd_per_point(inst)
        if repair:
            add("cost_usd", repair * ss.pair_forget[r0s, os_], p)
            add("cost_usd", repair * ss.slots[0].forgetting, list(m.stage[0].recipe_chosen.values()))
    m.scenario_constant_usd = inst.operations.fixed_usd
    return {name: (np.vstack(c) if c else np.zeros((0, n_s)), v) for name, (c, v) in out.items()}


def metric_terms(m: pyo.ConcreteModel, metrics: dict, name: str, s: int | None) -> tuple[list, list, float]:
    """(coefficients, variables, constant) of metric ``name`` in scenario ``s`` (None: its mean over the scenarios)."""
    coefs, variables = metrics[name]
    column = coefs.mean(axis=1) if s is None else coefs[:, s]
    keep = np.flatnonzero(column)
    return column[keep].tolist(), [variables[n] for n in keep.tolist()], m.scenario_constant_usd if name == "cost_usd" else 0.0


def metric_in(m: pyo.ConcreteModel, metrics: dict, name: str, s: int | None):
    """Metric ``name`` in scenario ``s`` (None: its mean over the scenarios) as one linear expression."""
    coefs, variables, constant = metric_terms(m, metrics, name, s)
    return linear(coefs, variables, constant)


def define_chance_rows(m: pyo.ConcreteModel, space: PlanSpace, ss: ScenarioSpace, metrics: dict,
                       limits: dict[str, float], allowed: int | None) -> None:
    """``limits_in_scenario``, ``limit_in_scenario_<limit>`` and ``violations_allowed`` (the module docstring);
    ``allowed`` None leaves the count free (to find the most scenarios any plan meets). Each limit's rows are a
    list of their own (an unusable trained teacher's: ``teacher_usable_in_scenario``), and one cover row per
    scenario takes the union of the limits' broken options, so that deactivating that and some limits' lists
    asks how often a plan can meet the others without another model (``ChanceModel.explain_infeasible``)."""
    n = ss.scenarios.n
    m.SCEN = pyo.Set(initialize=range(n))
    m.scenario_violated = pyo.Var(m.SCEN, domain=pyo.Binary)
    v = list(m.scenario_violated.values())
    options, usable, per_limit = _option_table(m, space, ss, limits)
    m.teacher_usable_in_scenario = pyo.ConstraintList()
    _cover_rows(m.teacher_usable_in_scenario, options, ~usable, v)
    # the union of the limits' broken options in one row per scenario: what makes the relaxation tight (each
    # limit's own rows below are implied by it; a question about some limits alone deactivates it)
    m.limits_in_scenario = pyo.ConstraintList()
    union = np.zeros_like(usable)
    for broken, _, _ in per_limit.values():
        union |= broken
    _cover_rows(m.limits_in_scenario, options, union, v)
    # a scenario every option breaks is broken (a fixed binary: the solver runs without presolve, run.py)
    m.scenarios_every_option_breaks = [s for s in range(n) if union[:, s].all()]
    for s in m.scenarios_every_option_breaks:
        v[s].fix(1)
    m.limits_in_scenarios, m.limit_covers = {}, {}
    for name, (broken, bound, hi) in per_limit.items():
        cover = pyo.ConstraintList()  # implied by the union's: off unless the union is (explain_infeasible)
        m.add_component(f"limit_cover_in_scenario_{name}", cover)
        _cover_rows(cover, options, broken, v)
        cover.deactivate()
        m.limit_covers[name] = cover
        rows = pyo.ConstraintList()
        m.add_component(f"limit_in_scenario_{name}", rows)
        m.limits_in_scenarios[name] = rows
        if hi is not None:
            for s in range(n):
                row = _big_m_row(metric_terms(m, metrics, LIMIT_METRIC[name][0], s), bound, hi[:, s], broken[:, s],
                                 options, v[s])
                if row is not None:
                    rows.add(row)
    m.violations = pyo.Expression(expr=linear([1.0] * n, v))
    # mutable, so that a re-solve at another share only updates a right-hand side
    m.allowed_violations = pyo.Param(mutable=True, initialize=allowed if allowed is not None else n, within=pyo.Reals)
    m.violations_allowed = pyo.Constraint(expr=m.violations <= m.allowed_violations)


def _cover_rows(rows: pyo.ConstraintList, options: list, broken: np.ndarray, v: list) -> None:
    r""":math:`\sum_{o \in \mathcal B_s} w_o \le v_s` for every scenario where some option is broken (exact, no big-M)."""
    for s in range(broken.shape[1]):
        out = np.flatnonzero(broken[:, s]).tolist()
        if out:
            rows.add(linear([1.0] * len(out) + [-1.0], [options[o] for o in out] + [v[s]]) <= 0)


def _big_m_row(terms: tuple, bound: float, hi: np.ndarray, broken: np.ndarray, options: list, v):
    r"""The big-M row of one (cost or time) limit in one scenario, or None when it cannot bind:

    .. math:: m^s_L \le \bar L + M_{L,s}\, v_s, \qquad M_{L,s} = \max_o h_o - \bar L

    with :math:`h_o` the largest value of option :math:`o` in the scenario, over every option that fits (a
    broken one too: choosing it sets :math:`v_s = 1`, and the row must then let it be). None when every option
    that fits stays within the limit, or when every option breaks it (its cover row sets :math:`v_s = 1`)."""
    fits = np.isfinite(hi)
    if not (fits & ~broken).any():
        return None
    big = hi[fits].max() - bound
    if big <= 0.0:
        return None
    coefs, variables, constant = terms
    return linear(coefs + [-big], variables + [v], constant) <= bound


def _option_table(m, space: PlanSpace, ss: ScenarioSpace, limits: dict[str, float]):
    """(option binaries, [option, scenario] usable, per limit (broken [option, scenario], bound, [option, scenario]
    largest value or None)): the options are a one-slot space's recipes, or a staged space's pairs of the first
    two slots. An option breaks a limit in a scenario when every plan through it does (its own quality or
    forgetting; its least cost or time over the hardware, intervals and retention options it fits); the cost
    and time limits also need big-M rows, from each option's largest value."""
    n_s = ss.scenarios.n
    if not space.staged:
        d, sl = space.slots[0], ss.slots[0]
        options = list(m.recipe_chosen.values())
        quality, forgetting, usable = sl.quality, sl.forgetting, sl.usable
        lo, hi = _recipe_ranges(d, sl, space.evaluator.inst.operations.fixed_usd)
    else:
        options = list(m.pair.values())
        r0s, os_ = m.pair_index
        quality, forgetting = ss.pair_end[r0s, os_], ss.slots[0].forgetting[r0s] + ss.pair_forget[r0s, os_]
        later = np.vstack([ss.slots[1].usable, np.ones((1, n_s), dtype=bool)])   # the last row: no second stage
        usable = ss.slots[0].usable[r0s] & later[os_]
        lo, hi = _pair_ranges(m, space, ss, r0s, os_)
    per_limit = {}
    for name, limit in limits.items():
        metric, sense = LIMIT_METRIC[name]
        bound = widened(limit, sense)
        if metric in ("quality", "forgetting_points"):  # the option's own: the cover row is exact
            table = quality if metric == "quality" else forgetting
            per_limit[name] = ((table < bound if sense == ">=" else table > bound).reshape(len(options), n_s), bound, None)
        else:
            per_limit[name] = ((lo[metric] > bound).reshape(len(options), n_s), bound, hi[metric])
    return options, usable.reshape(len(options), n_s), per_limit


def _recipe_ranges(d: FormulationData, sl: SlotScenarios, constant: float):
    """[recipe, scenario] least and largest cost and wall time of each one-slot recipe over the (hardware,
    interval, retention option) it fits (+inf / -inf where it fits nowhere)."""
    n_r, n_s = len(d.recipes), sl.hours.shape[4]
    lo = {k: np.full((n_r, n_s), np.inf) for k in ("cost_usd", "wall_hours")}
    hi = {k: np.full((n_r, n_s), -np.inf) for k in ("cost_usd", "wall_hours")}
    member = np.zeros((len(d.components), len(sl.keys)))
    member[np.arange(len(d.components)), sl.key_of_component] = 1.0
    phases = sl.phases()
    for h in range(len(d.hardware)):
        ok = d.recipe_fits[:, h]
        if not ok.any():
            continue
        kh = product(d.amount_share[ok] * d.unit_hours[:, h][None, :], member)            # [r, key]
        gamma = sl.hours[:, h]                                                             # [key, i, o, s]
        hours = _combined(kh, gamma, sl, phases)                                           # [r, i, o, s]
        money = _combined(kh, gamma * sl.money[h][None], sl, phases)
        cost = constant + sl.recipe_usd[ok][:, None, None, :] + money
        wall = sl.lead[ok][:, None, None, :] + hours
        for name, value in (("cost_usd", cost), ("wall_hours", wall)):
            lo[name][ok] = np.minimum(lo[name][ok], value.min(axis=(1, 2)))
            hi[name][ok] = np.maximum(hi[name][ok], value.max(axis=(1, 2)))
    return lo, hi


def _combined(kh: np.ndarray, gamma: np.ndarray, sl: SlotScenarios, phases) -> np.ndarray:
    """[r, i, o, s] of key hours ``kh`` [r, key] at ``gamma`` [key, i, o, s]: serial keys summed, each asynchronous
    phase's sides overlapped (their maximum), as ``asynchronous.combine``."""
    serial = np.array([side == () for _, side, _ in sl.keys], dtype=bool)
    out = np.einsum("rk,kios->rios", kh[:, serial], gamma[serial])
    for sides in phases:
        longest = np.einsum("rk,kios->rios", kh[:, sides[0]], gamma[sides[0]])
        for side in sides[1:]:
            longest = np.maximum(longest, np.einsum("rk,kios->rios", kh[:, side], gamma[side]))
        out = out + longest
    return out


def _pair_ranges(m, space: PlanSpace, ss: ScenarioSpace, r0s: np.ndarray, os_: np.ndarray):
    """[pair, scenario] least and largest cost and wall time of the plans through each pair of the first two slots:
    the two stages' ranges (each over its hardware, intervals and options; a stage alone is no tighter) summed."""
    inst = space.evaluator.inst
    out_lo, out_hi = {}, {}
    ranges = [_recipe_ranges(d, sl, 0.0) for d, sl in zip(space.slots, ss.slots)]
    n1 = len(space.slots[1].recipes)
    repair = repair_usd_per_point(inst)
    forgetting = ss.slots[0].forgetting[r0s] + ss.pair_forget[r0s, os_]
    for name in ("cost_usd", "wall_hours"):
        lo0, hi0 = ranges[0][0][name][r0s], ranges[0][1][name][r0s]
        pad = np.zeros((1, lo0.shape[1]))
        lo1 = np.vstack([ranges[1][0][name], pad])[os_] if n1 else pad[np.zeros(len(os_), dtype=int)]
        hi1 = np.vstack([ranges[1][1][name], pad])[os_] if n1 else pad[np.zeros(len(os_), dtype=int)]
        constant = (inst.operations.fixed_usd + repair * forgetting) if name == "cost_usd" else 0.0
        out_lo[name], out_hi[name] = lo0 + lo1 + constant, hi0 + hi1 + constant
    return out_lo, out_hi


def define_scenario_objectives(m: pyo.ConcreteModel, metrics: dict, n: int, cvar_level: float | None) -> None:
    """``expected_<metric>`` expressions (the scenarios' mean) and, with ``cvar_level``, ``cvar_cost``."""
    for name, metric in OBJECTIVE_METRIC.items():
        m.add_component(f"expected_{name}", pyo.Expression(expr=metric_in(m, metrics, metric, None)))
    if cvar_level is not None:
        m.cvar_threshold = pyo.Var(domain=pyo.Reals)
        m.cvar_excess = pyo.Var(range(n), domain=pyo.NonNegativeReals)
        m.cvar_excess_above = pyo.Constraint(range(n), rule=lambda m, s: m.cvar_excess[s] + m.cvar_threshold
                                             - metric_in(m, metrics, "cost_usd", s) >= 0)
        m.cvar_cost = pyo.Expression(expr=m.cvar_threshold + sum(m.cvar_excess[s] for s in range(n)) / ((1.0 - cvar_level) * n))

