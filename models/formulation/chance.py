r"""Chance-constrained plans: every limit met in at least a share of sampled scenarios.

Sample-average approximation over :math:`S` scenarios of the uncertainty
model (``uncertainty.py``), exact for the sampled set. The choices and the
disaggregated work are the single-job model's (``define_choices``,
``define_work``); on top, the compute hours on each hardware are split by
*rate family* :math:`\phi` (what scales with MFU, with decode speed, or with
neither; ``recipes.RATE_FACTOR``) and disaggregated over every checkpoint
interval (no interval is dominated once failure rates and write bandwidths
vary by scenario):

.. math::
   F_{\phi,h} &= \sum_{c \in \phi} U_{c,h}\, a_{c,h}                                    \\
   \sum_\tau B_{\phi,h,\tau} &= F_{\phi,h}                                               &&\text{(family_hours_split)} \\
   B_{\phi,h,\tau} &\le T^{max}_{\phi,h}\, y_\tau                                        &&\text{(family_hours_on_chosen_interval)}

:math:`T^{max}_{\phi,h}` is the largest family-:math:`\phi` time of any recipe
that fits on :math:`h` (data). In scenario :math:`s` every metric is linear in
:math:`x` and :math:`B` (``scenarios.py`` has the same formulas per plan):

.. math::
   H^s &= \sum_{\phi,h,\tau} g^s_\phi (1 + o^s_{h,\tau})\, B_{\phi,h,\tau}, \qquad
   \mathrm{wall}^s = \sum_r \mathrm{lead}_r x_r + H^s \\
   \mathrm{cost}^s &= K + \sum_r c^s_r x_r + \sum_{\phi,h,\tau} \pi^s_h\, g^s_\phi (1 + o^s_{h,\tau})\, B_{\phi,h,\tau} \\
   q^s &= \sum_r q^s_r x_r, \qquad F^s = \sum_r F^s_r x_r

with :math:`g^s_\phi = f_\phi / f^s_\phi` the rate scale, :math:`\pi^s_h` the GPUs'
price per hour plus hot storage and operations per hour, and :math:`c^s_r` the
recipe's money (data, sandboxes, logs, forgetting repair at :math:`F^s_r`,
operations during lead time). One binary :math:`v_s` per scenario marks it
as allowed to break limits. A recipe *breaks* scenario :math:`s`
(:math:`r \in \mathcal B_s`) when it breaks a limit there on every hardware
and interval it fits on: quality and forgetting are the recipe's own, and
cost and wall time have a per-recipe floor over (hardware, interval) from
the data. Then

.. math::
   \sum_{r \in \mathcal B_s} x_r \le v_s, \qquad m^s_L \le \bar L + M_{L,s}\, v_s \ (L = \text{cost, time}), \qquad
   \sum_s v_s \le \lfloor (1 - \alpha) S \rfloor                                       &&\text{(limit_in_scenario, violations_allowed)}

:math:`\bar L` is the limit widened by the evaluator's tolerance
(``scenarios.widened``, the rule of ``costs.exceeds``). The cover row is
exact and needs no big-M; the big-M row is added only where a recipe outside
:math:`\mathcal B_s` may still break the limit, with :math:`M_{L,s}` the
largest value of the metric over those recipes on any hardware and interval
less :math:`\bar L` (data). A scenario every recipe breaks has :math:`v_s`
fixed to 1. Objectives: the expected value of the chosen metric (averaged
coefficients), or CVaR of cost at level :math:`\beta` (Rockafellar–Uryasev):
:math:`\eta + \frac{1}{(1-\beta) S} \sum_s u_s`, :math:`u_s \ge \mathrm{cost}^s - \eta`, :math:`u_s \ge 0`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pyomo.environ as pyo
from pyomo.core.expr.numeric_expr import LinearExpression

from planopt.models.cost import physics as ph
from planopt.models.cost.evaluator import OBJECTIVE_METRIC, Evaluator
from planopt.models.cost.recipes import RATE_FACTOR, family_of
from planopt.models.uncertainty.scenarios import LIMIT_METRIC, RATE_FAMILIES, ScenarioEvaluator, widened
from planopt.models.uncertainty.model import Scenarios
from planopt.models.formulation.choices import define_choices
from planopt.models.formulation.data import FormulationData, collect
from planopt.models.formulation.work import define_work

RECIPE_METRICS = ("quality", "forgetting_points")  # metrics of the recipe alone
# Counting allowed violations: floor((1 - alpha) S) computed with this guard so that
# e.g. (1 - 0.9) * 200 = 19.999999999999996 counts as 20.
COUNT_GUARD = 1e-9


def allowed_violations(confidence: float, n: int) -> int:
    """Most scenarios that may break a limit while at least ``confidence`` of ``n`` meet them all."""
    return int(math.floor((1.0 - confidence) * n + COUNT_GUARD))


@dataclass
class ChanceData:
    """Coefficients of the chance-constrained model, all from the evaluators."""

    base: FormulationData
    scenarios: Scenarios
    family_of_component: list[int]      # per component: index into RATE_FAMILIES
    tmax: np.ndarray                     # [family, hardware]: largest family hours of a fitting recipe
    recipe_usd: np.ndarray               # [recipe, scenario]
    lead_hours: np.ndarray               # [recipe]
    quality: np.ndarray                  # [recipe, scenario]
    forgetting: np.ndarray               # [recipe, scenario]
    rate_scale: np.ndarray               # [family, scenario]
    overhead: np.ndarray                 # [hardware, interval, scenario]
    hourly_usd: np.ndarray               # [hardware, scenario]
    constant_usd: float
    family_hours: np.ndarray             # [recipe, hardware, family]: point hours, NaN where it does not fit

    def recipe_range(self, metric: str) -> tuple[np.ndarray, np.ndarray]:
        """[recipe, scenario] least and largest value of a cost or time metric over the
        (hardware, interval) pairs the recipe fits on; +inf / -inf where it fits nowhere."""
        n_r, n_s = len(self.base.recipes), self.scenarios.n
        lo, hi = np.full((n_r, n_s), np.inf), np.full((n_r, n_s), -np.inf)
        hc = self.hours_coef()                                   # [family, hardware, interval, scenario]
        for h in range(len(self.base.hardware)):
            fh = self.family_hours[:, h, :]                      # [recipe, family]
            ok = ~np.isnan(fh[:, 0])
            if not ok.any():
                continue
            hours = np.einsum("rf,fis->ris", fh[ok], hc[:, h])   # [recipe, interval, scenario]
            if metric == "cost_usd":
                value = self.constant_usd + self.recipe_usd[ok][:, None, :] + hours * self.hourly_usd[h][None, None, :]
            else:
                value = self.lead_hours[ok][:, None, None] + hours
            lo[ok] = np.minimum(lo[ok], value.min(axis=1))
            hi[ok] = np.maximum(hi[ok], value.max(axis=1))
        return lo, hi

    def hours_coef(self) -> np.ndarray:
        """[family, hardware, interval, scenario]: hours in scenario s per point hour of B."""
        return self.rate_scale[:, None, None, :] * (1.0 + self.overhead[None, :, :, :])



def collect_chance(ev: Evaluator, scenarios: Scenarios) -> ChanceData:
    base = collect(ev, keep_dominated_intervals=True)
    inst, se = ev.inst, ScenarioEvaluator(ev, scenarios)
    fam_index = {f: n for n, f in enumerate(RATE_FAMILIES)}
    family_of_component = [fam_index[RATE_FACTOR[family_of(c)]] for c in base.components]
    # family hours of each recipe on each hardware (NaN where it does not fit)
    fam = np.zeros((len(base.components), len(RATE_FAMILIES)))
    fam[np.arange(len(base.components)), family_of_component] = 1.0
    family_hours = np.einsum("rc,ch,cf->rhf", base.amount_share, base.unit_hours, fam, optimize=True)
    family_hours[~base.recipe_fits] = np.nan
    tmax = np.where(np.isnan(family_hours), 0.0, family_hours).max(axis=0).T  # [family, hardware]: the big-M T^max
    outcomes = [se.outcomes(r) for r in base.recipes]
    quality = np.array([q for q, _ in outcomes])
    forgetting = np.array([f for _, f in outcomes])
    ops = inst.operations
    profiles = [ev.recipe(r) for r in base.recipes]
    lead = np.array([p.lead_hours for p in profiles])
    st, ck = inst.storage, inst.checkpointing
    cold = ck.milestones_kept * st.cold_usd_per_gb_month * ck.milestone_retention_months
    fixed = np.array([p.data_usd + p.environments_usd + p.log_storage_usd + p.network_usd + p.log_ingest_usd
                      + cold * p.checkpoint_gb + ops.usd_per_wall_hour * p.lead_hours for p in profiles])
    recipe_usd = fixed[:, None] + inst.forgetting_repair_usd_per_point * forgetting
    rate_scale = np.array([se.rate_scale(f) for f in RATE_FAMILIES])
    overhead = np.array([[se.overhead(hw, tau) for tau in base.intervals] for hw in base.hardware])
    hot_per_gb_hour = ck.keep_last * st.hot_usd_per_gb_month / ph.d.HOURS_PER_MONTH
    hourly = np.array([se.gpus_usd_per_hour(hw) + hot_per_gb_hour * ev.hardware(hw).checkpoint_gb + ops.usd_per_wall_hour
                       for hw in base.hardware])
    return ChanceData(base, scenarios, family_of_component, tmax, recipe_usd, lead, quality, forgetting,
                      rate_scale, overhead, hourly, base.constant_usd, family_hours)


def _linear(constant: float, coefs, variables) -> LinearExpression:
    return LinearExpression(constant=float(constant), linear_coefs=[float(c) for c in coefs], linear_vars=list(variables))


def define_family_hours(m: pyo.ConcreteModel, cd: ChanceData) -> None:
    data = cd.base
    m.PHI = pyo.Set(initialize=range(len(RATE_FAMILIES)))
    m.HI = pyo.Set(initialize=[(h, i) for h in m.H for i in m.I], dimen=2)
    m.family_interval_hours = pyo.Var(m.PHI, m.HI, domain=pyo.NonNegativeReals)
    by_fam_h: dict[tuple[int, int], list[tuple[float, object]]] = {}
    for (c, h) in m.CH:
        by_fam_h.setdefault((cd.family_of_component[c], h), []).append((float(data.unit_hours[c, h]), m.work_share[c, h]))

    def family_hours_split(m, f, h):
        terms = by_fam_h.get((f, h), [])
        split = sum(m.family_interval_hours[f, h, i] for i in m.I)
        if not terms:
            return split == 0
        return split == _linear(0.0, [u for u, _ in terms], [v for _, v in terms])

    m.family_hours_split = pyo.Constraint(m.PHI, m.H, rule=family_hours_split)

    def family_hours_on_chosen_interval(m, f, h, i):
        return m.family_interval_hours[f, h, i] <= float(cd.tmax[f, h]) * m.interval_chosen[i]

    m.family_hours_on_chosen_interval = pyo.Constraint(m.PHI, m.HI, rule=family_hours_on_chosen_interval)


class ScenarioExpressions:
    """Builds each scenario's metric as one linear expression of x and B."""

    def __init__(self, m: pyo.ConcreteModel, cd: ChanceData):
        self.m, self.cd = m, cd
        self.keys = [(f, h, i) for f in m.PHI for (h, i) in m.HI]
        self.b_vars = [m.family_interval_hours[k] for k in self.keys]
        self.x_vars = [m.recipe_chosen[r] for r in m.R]
        f_idx, h_idx, i_idx = (np.array([k[n] for k in self.keys], dtype=int) for n in range(3))
        hc = cd.hours_coef()
        self.hours = hc[f_idx, h_idx, i_idx, :]                          # [key, scenario]
        self.cost_hours = self.hours * cd.hourly_usd[h_idx, :]

    def metric(self, name: str, s: int | None) -> LinearExpression:
        """Metric ``name`` in scenario ``s`` (None: its mean over the scenarios)."""
        cd = self.cd
        pick = (lambda a: a.mean(axis=-1)) if s is None else (lambda a: a[..., s])
        if name == "cost_usd":
            return _linear(cd.constant_usd, list(pick(cd.recipe_usd)) + list(pick(self.cost_hours)), self.x_vars + self.b_vars)
        if name == "wall_hours":
            return _linear(0.0, list(cd.lead_hours) + list(pick(self.hours)), self.x_vars + self.b_vars)
        if name == "quality":
            return _linear(0.0, pick(cd.quality), self.x_vars)
        if name == "forgetting_points":
            return _linear(0.0, pick(cd.forgetting), self.x_vars)
        raise KeyError(name)



def define_chance_limits(m: pyo.ConcreteModel, cd: ChanceData, ex: ScenarioExpressions, limits: dict[str, float],
                         allowed: int | None) -> None:
    """One violation binary per scenario, big-M limit rows, and the count of violations.
    ``allowed`` None leaves the count free (to find the largest reachable share)."""
    n, n_r = cd.scenarios.n, len(cd.base.recipes)
    m.S = pyo.Set(initialize=range(n))
    m.scenario_violated = pyo.Var(m.S, domain=pyo.Binary)
    m.limit_in_scenario = pyo.ConstraintList()
    # A recipe "breaks" a limit in a scenario when it does so on every hardware and
    # interval it fits on (quality and forgetting: always, they are the recipe's own).
    broken = np.zeros((n_r, n), dtype=bool)
    rows = []  # (metric, sense, bound, largest value per recipe) of limits that need big-M rows
    for name, limit in limits.items():
        metric, sense = LIMIT_METRIC[name]
        bound = widened(limit, sense)
        if metric in RECIPE_METRICS:
            table = cd.quality if metric == "quality" else cd.forgetting
            broken |= table < bound if sense == ">=" else table > bound
        else:
            lo, hi = cd.recipe_range(metric)
            broken |= lo > bound
            rows.append((metric, bound, hi))
    for s in range(n):
        v = m.scenario_violated[s]
        if broken[:, s].all():
            v.fix(1)
            continue
        out = np.flatnonzero(broken[:, s])
        if len(out):  # exact and tight: choosing a broken recipe marks the scenario
            m.limit_in_scenario.add(_linear(0.0, [1.0] * len(out), [m.recipe_chosen[int(r)] for r in out]) <= v)
        for metric, bound, hi in rows:
            largest = hi[~broken[:, s], s].max()
            if largest > bound:  # some kept recipe may break it on some hardware: a big-M row
                m.limit_in_scenario.add(ex.metric(metric, s) <= bound + (largest - bound) * v)
    m.violations = pyo.Expression(expr=sum(m.scenario_violated[s] for s in m.S))
    # mutable, so that a re-solve at another share only updates a right-hand side
    m.allowed_violations = pyo.Param(mutable=True, initialize=allowed if allowed is not None else n, within=pyo.NonNegativeIntegers)
    m.violations_allowed = pyo.Constraint(expr=m.violations <= m.allowed_violations)


def define_chance_objectives(m: pyo.ConcreteModel, cd: ChanceData, ex: ScenarioExpressions, cvar_level: float | None) -> None:
    for name, metric in OBJECTIVE_METRIC.items():
        setattr(m, f"expected_{name}", pyo.Expression(expr=ex.metric(metric, None)))
    if cvar_level is not None:
        n = cd.scenarios.n
        m.cvar_threshold = pyo.Var(domain=pyo.Reals)
        m.cvar_excess = pyo.Var(range(n), domain=pyo.NonNegativeReals)
        m.cvar_excess_above = pyo.Constraint(range(n), rule=lambda m, s: m.cvar_excess[s] >= ex.metric("cost_usd", s) - m.cvar_threshold)
        m.cvar_cost = pyo.Expression(expr=m.cvar_threshold + sum(m.cvar_excess[s] for s in range(n)) / ((1.0 - cvar_level) * n))


def build_chance(ev: Evaluator, scenarios: Scenarios, limits: dict[str, float], allowed: int | None,
                 cvar_level: float | None = None) -> tuple[pyo.ConcreteModel | None, ChanceData]:
    cd = collect_chance(ev, scenarios)
    data = cd.base
    if not data.recipes or not data.hardware:
        return None, cd
    m = pyo.ConcreteModel(name=f"{ev.inst.name} (chance)")
    define_choices(m, data)
    define_work(m, data)
    define_family_hours(m, cd)
    ex = ScenarioExpressions(m, cd)
    define_chance_limits(m, cd, ex, limits, allowed)
    define_chance_objectives(m, cd, ex, cvar_level)
    return m, cd
