r"""The evaluator, vectorised over scenarios of the uncertainty model.

For a plan :math:`(r, h, \tau)` and scenarios :math:`s = 1..S` (values of the
parameters in ``uncertainty.py``), every metric is the evaluator's
(``costs.py``) on the instance with scenario :math:`s`'s values
(``uncertainty.apply``), computed for all scenarios at once:

.. math::
   T^s &= \sum_c \mathrm{amount}_c(r)\, u_c(h)\, \frac{f_{\phi(c)}}{f^s_{\phi(c)}}
        \qquad (\phi(c) = \text{the rate factor of } c\text{'s family, } \texttt{recipes.RATE\_FACTOR}) \\
   H^s &= T^s \big(1 + o(w \beta / \beta^s,\ n \lambda^s,\ \tau,\ \rho^s)\big), \qquad
   \mathrm{wall}^s = \mathrm{lead}(r) + H^s \\
   q^s, F^s &= \text{the learning curve and forgetting of } r \text{ under scenario } s\text{'s priors, repeat scales and LoRA shares included (}\texttt{learning.py}\text{)} \\
   \mathrm{cost}^s &= \texttt{costs.cost\_breakdown\_usd}(n\, p^s_g, H^s, \mathrm{wall}^s, F^s)

Component times are exactly proportional to the inverse of their rate
factor (``tests/models/uncertainty/test_scenarios.py`` checks every family), and the
checkpoint write time to the inverse of the write bandwidth, so the scaling
above is exact, not a linearisation. Each metric is also split into a part
that depends on the recipe alone and a part per (hardware, interval) and
rate family (``coefficients``), which is what the chance-constrained MIP
(``formulation/scenarios.py``) needs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from planopt.models.catalog import defaults as d
from planopt.models.cost import learning as lc
from planopt.models.cost import physics as ph
from planopt.models.cost.asynchronous import combine, gain_kept, overlapped
from planopt.models.cost.releases import release_count
from planopt.models.cost.retention import RetentionChoice, deep_rollback_share, rollback_share, storage_usd_per_train_hour
from planopt.models.cost.evaluator import LIMIT_METRIC, STAGE_COST_KEYS, Evaluator, cost_breakdown_usd, limit_slack
from planopt.models.schema.plan import HardwareChoice, Plan, Recipe
from planopt.models.cost.recipes import EVAL, RATE_FACTOR, family_of
from planopt.models.cost.components import ENV_RATE
from planopt.models.cost.stage_outcomes import StagePriors, chain_outcomes, stage_outcome

# the prior each method's staleness loss is drawn as (``priors.staleness_loss``)
STALENESS_PRIOR = {"rl": "priors.staleness_gain_loss_per_step", "opd": "priors.opd_staleness_gain_loss_per_step"}
from planopt.models.uncertainty.model import Scenarios

# Drawn forgetting priors a candidate student of another general-score family reads scaled by the ratio of the
# two families' defaults, as ``Instance.for_student`` (``family_scaled_priors``) scales one scenario's values.
FAMILY_SCALED = {"priors.sft.forgetting_share_of_baseline": d.SFT_FORGETTING_SHARE_OF_BASELINE_BY_FAMILY,
                 "priors.sft_forgetting_mix_exponent": d.SFT_FORGETTING_MIX_EXPONENT_BY_FAMILY}
METRICS = ("cost_usd", "wall_hours", "quality", "forgetting_points", "gpu_hours")
RATE_FAMILIES = ("mfu_factor", "decode_factor", None, ENV_RATE)


@dataclass
class ScenarioMetrics:
    """One plan's metrics in each scenario (arrays of length S)."""

    cost_usd: np.ndarray
    wall_hours: np.ndarray
    quality: np.ndarray
    forgetting_points: np.ndarray
    gpu_hours: np.ndarray
    # A trained teacher's plan reaches ``teacher.score`` (``teacher_training.py``): per scenario; None: no such teacher
    teacher_usable: np.ndarray | None = None

    def metric(self, name: str) -> np.ndarray:
        """The metric ``name`` in each scenario."""
        return getattr(self, name)


class ScenarioEvaluator:
    """Plans of one instance under ``scenarios``; profiles come from one point :class:`Evaluator`."""

    def __init__(self, ev: Evaluator, scenarios: Scenarios):
        self.ev, self.sc = ev, scenarios
        self.inst = ev.inst
        self._teacher: ScenarioEvaluator | None = None
        self._teacher_runs: dict = {}
        self._outcomes: dict[Recipe, tuple[np.ndarray, np.ndarray]] = {}
        self._students: dict[str, ScenarioEvaluator] = {}

    def value(self, name: str, point: float) -> np.ndarray:
        """A parameter's values over the scenarios (its point value where the model has no such parameter)."""
        v = self.sc.values.get(name)
        if v is None:
            return np.full(self.sc.n, float(point))
        family = self.inst.task.general_score_family
        if self.sc.family is not None and self.sc.family != family and name in FAMILY_SCALED:
            # drawn for the instance's family, read by a candidate student of another (Instance.for_student)
            ratio = FAMILY_SCALED[name][family] / FAMILY_SCALED[name][self.sc.family]
            v = np.minimum(v * ratio, 1.0) if name.endswith("share_of_baseline") else v * ratio
        return v

    # --- recipe part -------------------------------------------------------------
    def outcomes(self, r: Recipe) -> tuple[np.ndarray, np.ndarray]:
        """Quality and forgetting of ``r`` in each scenario."""
        if r not in self._outcomes:
            self._outcomes[r] = self._outcomes_of(r)
        return self._outcomes[r]

    def _prior(self, method: str, field: str) -> np.ndarray:
        return self.value(f"priors.{method}.{field}", getattr(self.inst.priors.of(method), field))

    def _outcomes_of(self, r: Recipe) -> tuple[np.ndarray, np.ndarray]:
        inst, task, m = self.inst, self.inst.task, r.method
        if r.pretraining_tokens:  # the stage from the score continued pre-training reaches (cost/pretraining.py)
            q, f = stage_outcome(inst, r, task.baseline_score, self.stage_priors(m))
            return np.broadcast_to(q, (self.sc.n,)).astype(float), np.broadcast_to(f, (self.sc.n,)).astype(float)
        scale, ceiling_share, share = (self._prior(m, f) for f in
                                       ("signal_scale_samples", "ceiling_share_of_headroom", "forgetting_share_of_baseline"))
        if m == "sft":
            examples = r.steps * inst.training.methods["sft"].prompts_per_step
            repeat = self.value("priors.sft_repeat_scale_epochs", inst.priors.sft_repeat_scale_epochs)
            effective = lc.sft_effective_examples(examples * r.external_data_share, inst.sft_data.examples_available,
                                                  r.max_epochs, repeat)
            q = lc.sft_quality(task, effective, scale, ceiling_share)
            exponent = self.value("priors.sft_forgetting_mix_exponent", inst.priors.sft_forgetting_mix_exponent)
            f = lc.sft_forgetting(task, r.external_data_share, examples, share, exponent, inst.priors.sft_forgetting_scale_samples)
        else:
            repeat = self.value("priors.prompt_repeat_scale_epochs", inst.priors.prompt_repeat_scale_epochs)
            fp8 = self.value("priors.fp8_teacher_score_penalty", inst.priors.fp8_teacher_score_penalty)
            q = lc.on_policy_quality(inst, r, scale, ceiling_share, repeat, fp8_penalty=fp8)
            f = lc.on_policy_forgetting(task, q, lc.on_policy_ceiling(inst, r, ceiling_share, fp8), share)
        if r.lora_rank is not None:
            gain = self.value(f"priors.lora_gain_share.{m}", getattr(inst.priors.lora_gain_share, m))
            keep = self.value(f"priors.lora_forgetting_share.{m}", getattr(inst.priors.lora_forgetting_share, m))
            q, f = lc.lora_outcomes(task.baseline_score, q, f, gain, keep)
        if r.staleness_steps:  # asynchronous RL or OPD keeps (1 - delta)^s of the gain (asynchronous.py)
            delta = self.value(STALENESS_PRIOR[m], inst.priors.staleness_loss(m))
            q = task.baseline_score + gain_kept(delta, r.staleness_steps) * (q - task.baseline_score)
        return np.broadcast_to(q, (self.sc.n,)).astype(float), np.broadcast_to(f, (self.sc.n,)).astype(float)

    def teacher_run(self, r: Recipe) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        r"""A trained teacher (``teacher_training.py``) in each scenario: the data money :math:`c^s_\theta` and lead
        hours :math:`w^s_\theta` its plan :math:`\theta` adds to the OPD recipe ``r``, and whether it reaches
        ``teacher.score`` there (the product's rule, ``costs.exceeds``). The teacher's job is priced by the same
        scenario evaluator on its own instance, with the same draws (the parameters they share move together).
        None for a recipe without a trained teacher."""
        if r.teacher_training is None:
            return None
        if r not in self._teacher_runs:
            from planopt.models.cost.evaluator import exceeds
            from planopt.models.cost.teacher_training import teacher_instance
            if self._teacher is None:
                self._teacher = ScenarioEvaluator(Evaluator(teacher_instance(self.inst)), self.sc)
            tm = self._teacher.plan_metrics(r.teacher_training)
            usable = ~exceeds(tm.quality, self.inst.teacher.score, ">=") & (tm.teacher_usable if tm.teacher_usable
                                                                            is not None else True)
            self._teacher_runs[r] = (tm.cost_usd, tm.wall_hours, np.asarray(usable, dtype=bool) & np.ones(self.sc.n, bool))
        return self._teacher_runs[r]

    def recipe_money_and_lead(self, r: Recipe) -> tuple:
        """The recipe's data money and lead hours in each scenario (floats unless a trained teacher moves them)."""
        rp = self.ev.recipe(r)
        run = self.teacher_run(r)
        if run is None:
            return rp.data_usd, rp.lead_hours
        from planopt.models.cost.teacher_training import teacher_option
        point = teacher_option(self.inst, r.teacher_training, r.method, Evaluator)
        return rp.data_usd - point.cost_usd + run[0], run[1]

    # --- hardware part -----------------------------------------------------------
    def rate_scale(self, family: str | None) -> np.ndarray:
        """Hours at the point rate factor times this give hours in each scenario: f / f^s; for environment work on a
        pool, c^s / c (its CPU-seconds per sample, ``components.ENV_RATE``)."""
        if family is None:
            return np.ones(self.sc.n)
        if family == ENV_RATE:
            point = self.inst.environments.cpu_seconds_per_sample
            return self.value(ENV_RATE, point) / point if point > 0 else np.ones(self.sc.n)
        point = getattr(self.inst.efficiency, family)
        return point / self.value(f"efficiency.{family}", point)

    def compute_hours(self, by_component: dict[str, float]) -> np.ndarray:
        """Compute hours in each scenario of the components ``by_component`` (hours at the point values, as
        ``Evaluator.compute_hours_by_component``): each at its scenario's rate, summed, or overlapped where the recipe
        overlaps them (asynchronous RL, an agent loop: ``asynchronous.combine``)."""
        if overlapped(by_component):
            return combine({k: v * self.rate_scale(RATE_FACTOR[family_of(k)]) for k, v in by_component.items()})
        by_rate = dict.fromkeys(RATE_FAMILIES, 0.0)
        for key, hours in by_component.items():
            by_rate[RATE_FACTOR[family_of(key)]] += hours
        return sum(hours * self.rate_scale(fam) for fam, hours in by_rate.items())

    def overhead(self, h: HardwareChoice, interval_minutes: float) -> np.ndarray:
        """:math:`o^s_h(\\tau)`: checkpoint writes and failures in each scenario."""
        hp, rel = self.ev.hardware(h), self.inst.reliability
        bw = self.value("reliability.checkpoint_write_gb_per_s_per_node", rel.checkpoint_write_gb_per_s_per_node)
        write = hp.checkpoint_write_hours * rel.checkpoint_write_gb_per_s_per_node / bw
        failures = (h.total_count * self.value("reliability.failures_per_gpu_hour", rel.failures_per_gpu_hour)
                    + self.spot_reclaims_per_hour(h))
        restart = self.value("reliability.restart_minutes", rel.restart_minutes) / 60.0
        return np.asarray(ph.checkpoint_overhead_share(write, failures, interval_minutes / 60.0, restart)
                          + rollback_share(self.inst, h.count, interval_minutes, restart), dtype=float)

    def spot_reclaims_per_hour(self, h: HardwareChoice) -> np.ndarray:
        r""":math:`\lambda^s_{spot}`: the choice's spot reclaims per hour in each scenario, the point rate
        (``HardwareProfile.spot_reclaims_per_hour``) at the scenario's reclaimed share :math:`q^s`:
        :math:`\lambda \cdot \ln(1-q^s) / \ln(1-q)` (the rate is linear in :math:`-\ln(1-q)`)."""
        point = self.ev.hardware(h).spot_reclaims_per_hour
        if point == 0.0:
            return np.zeros(self.sc.n)
        q = self.inst.reliability.spot_reclaimed_share_per_month
        return point * np.log1p(-self.value("reliability.spot_reclaimed_share_per_month", q)) / np.log1p(-q)

    def gpus_usd_per_hour(self, h: HardwareChoice) -> np.ndarray:
        """:math:`n\\, p^s_g` (+ :math:`n_r p^s_{g_r}` for separate rollout GPUs): what the plan's GPUs cost per hour in each scenario."""
        hp = self.ev.hardware(h)
        price = self.value(f"hardware.{h.gpu}.price_usd_per_gpu_hour", hp.price_usd_per_gpu_hour)
        if not h.split:
            return h.count * price
        # separate rollout GPUs (rollout.py): n_r p^s of their own type too
        point = (hp.usd_per_hour_of_gpus - h.count * hp.price_usd_per_gpu_hour) / h.rollout_count
        return h.count * price + h.rollout_count * self.value(f"hardware.{h.rollout_gpu}.price_usd_per_gpu_hour", point)

    # --- whole plans -------------------------------------------------------------
    def _run(self, r: Recipe, h: HardwareChoice, interval_minutes: float, forgetting,
             retention: RetentionChoice | None = None) -> tuple[dict, np.ndarray, np.ndarray]:
        """(cost lines, training hours, wall hours) of ``r`` on ``h`` run alone, in each scenario."""
        rp = self.ev.recipe(r)
        if r.teacher_training is not None:  # the teacher's money and hours in each scenario (``teacher_run``)
            data_usd, lead = self.recipe_money_and_lead(r)
            # the teacher is paid once over the releases (releases.py): its scenario money is fixed too
            rp = replace(rp, data_usd=data_usd, lead_hours=lead, fixed_data_usd=rp.fixed_data_usd + (data_usd - rp.data_usd))
        # a recipe that does not fit does no work (as in ``Evaluator.metrics``): no hours to price
        fits = self.ev.hardware(h).fits(r.memory_class)
        by_component = self.ev.compute_hours_by_component(r, h) if fits else {}
        compute = self.compute_hours(by_component)
        stretch = 1.0 + self.overhead(h, interval_minutes)
        if retention is not None:  # a fall-back to a milestone (retention.py): the evaluator's order of sums
            stretch = 1.0 + (self.overhead(h, interval_minutes) + float(deep_rollback_share(self.inst, retention, h.count,
                                                                                          interval_minutes)))
        train = compute * stretch
        wall = rp.lead_hours + train
        evaluation = sum(v for k, v in by_component.items() if family_of(k) == EVAL)
        eval_train = evaluation * self.rate_scale(RATE_FACTOR[EVAL]) * stretch
        per_hour = None
        if retention is not None:  # the recent checkpoints' money at the scenario's failure rate (retention.py)
            rel = self.inst.reliability
            failures = self.value("reliability.failures_per_gpu_hour", rel.failures_per_gpu_hour)
            per_hour = storage_usd_per_train_hour(self.inst, retention, self.ev.hardware(h).checkpoint_gb, h.count,
                                                  interval_minutes, failures)
        releases = self.inst.releases
        share = None if releases is None else self.value("releases.sft_labels_rebuilt_share",
                                                          releases.sft_labels_rebuilt_share)
        return (cost_breakdown_usd(self.inst, rp, self.gpus_usd_per_hour(h), train, wall, forgetting, eval_train, per_hour,
                                   share, self.environments_usd(r), self.ev.hardware(h).environments_usd_per_hour), train, wall)

    def environments_usd(self, r: Recipe):
        """The recipe's environment money in each scenario: the sandboxes billed per CPU-hour used (without pools)
        scale with the CPU-seconds per sample drawn; the traffic does not (a float when nothing is drawn)."""
        rp = self.ev.recipe(r)
        sandboxes = rp.extra.get("sandbox_usd", 0.0)
        if not sandboxes or ENV_RATE not in self.sc.values:
            return rp.environments_usd
        return rp.environments_usd - sandboxes + sandboxes * self.rate_scale(ENV_RATE)

    def metrics(self, r: Recipe, h: HardwareChoice, interval_minutes: float,
                retention: RetentionChoice | None = None) -> ScenarioMetrics:
        """The metrics of the one-stage plan (r, h, interval[, retention]) in each scenario, and in which a trained
        teacher is usable."""
        quality, forgetting = self.outcomes(r)
        costs, train, wall = self._run(r, h, interval_minutes, forgetting, retention)
        run = self.teacher_run(r)
        return ScenarioMetrics(cost_usd=np.asarray(sum(costs.values()), dtype=float) + np.zeros(self.sc.n),
                               wall_hours=wall, quality=quality, forgetting_points=forgetting, gpu_hours=h.total_count * train,
                               teacher_usable=None if run is None else run[2])

    def stage_priors(self, method: str) -> StagePriors:
        """The priors of a stage of ``method`` in each scenario (``stage_outcomes.StagePriors``)."""
        inst, point = self.inst, StagePriors.point(self.inst, method)
        repeat = "sft_repeat_scale_epochs" if method == "sft" else "prompt_repeat_scale_epochs"
        return StagePriors(self._prior(method, "signal_scale_samples"), self._prior(method, "ceiling_share_of_headroom"),
                           self._prior(method, "forgetting_share_of_baseline"), self.value(f"priors.{repeat}", point.repeat_scale),
                           self.value("priors.sft_forgetting_mix_exponent", inst.priors.sft_forgetting_mix_exponent),
                           self.value(f"priors.lora_gain_share.{method}", point.lora_gain),
                           self.value(f"priors.lora_forgetting_share.{method}", point.lora_forgetting),
                           self.value(STALENESS_PRIOR.get(method, STALENESS_PRIOR["rl"]), point.staleness_loss),
                           cpt_share=None if point.cpt_share is None else self.value("continued_pretraining.headroom_share",
                                                                                     point.cpt_share),
                           fp8_penalty=self.value("priors.fp8_teacher_score_penalty", point.fp8_penalty))

    def plan_metrics(self, plan: Plan) -> ScenarioMetrics:
        """Any plan of the instance in each scenario (ValueError naming the field for a plan outside its options):
        the stages' hours and money summed, the first stage's score and forgetting its own (:meth:`outcomes`),
        each later one's chained from the score before it under the scenario's priors (``stage_outcomes.py``),
        as the point evaluator does (``Evaluator.plan_metrics``)."""
        self.ev.check_plan(plan)
        se = self.for_student(plan.student)
        inst, n = se.inst, se.sc.n
        quality, forgetting = chain_outcomes(inst, se.outcomes(plan.stages[0].recipe), [s.recipe for s in plan.stages[1:]],
                                             se.stage_priors)
        wall, gpu_hours, money = np.zeros(n), np.zeros(n), np.zeros(n)
        for stage in plan.stages:
            costs, train, stage_wall = se._run(stage.recipe, stage.hardware, plan.checkpoint_interval_minutes, 0.0,
                                               plan.retention)
            money = money + sum(costs[k] for k in STAGE_COST_KEYS)
            wall, gpu_hours = wall + stage_wall, gpu_hours + stage.hardware.total_count * train
        ops = inst.operations
        n_runs = release_count(inst)  # each release is one run (releases.py)
        cost = money + ops.fixed_usd + n_runs * (ops.usd_per_wall_hour * wall + inst.forgetting_repair_usd_per_point * forgetting)
        runs = [run for stage in plan.stages if (run := se.teacher_run(stage.recipe)) is not None]
        usable = np.logical_and.reduce([run[2] for run in runs]) if runs else None
        return ScenarioMetrics(cost_usd=np.asarray(cost, dtype=float) + np.zeros(n), wall_hours=wall,
                               quality=np.asarray(quality, dtype=float) + np.zeros(n),
                               forgetting_points=np.asarray(forgetting, dtype=float) + np.zeros(n), gpu_hours=gpu_hours,
                               teacher_usable=usable)

    def for_student(self, name: str | None) -> "ScenarioEvaluator":
        """The scenario evaluator of the plans that train ``name`` (``Evaluator.for_student``): the same draws (a
        candidate whose general score is of another family reads the forgetting draws scaled, :meth:`value`)."""
        ev = self.ev.for_student(name)
        if ev is self.ev:
            return self
        if name not in self._students:
            self._students[name] = ScenarioEvaluator(ev, self.sc)
        return self._students[name]


def limits_of(inst) -> dict[str, float]:
    """The limits the instance sets."""
    c = inst.constraints
    return {name: getattr(c, name) for name in LIMIT_METRIC if getattr(c, name) is not None}


def widened(limit: float, sense: str) -> float:
    """The loosest value that still meets ``limit`` by the evaluator's rule (``costs.exceeds``)."""
    return limit + limit_slack(limit) if sense == "<=" else limit - limit_slack(limit)


TEACHER_SCORE = "teacher.score"  # a trained teacher reaching the score its OPD stage distils, read as a limit


def meets(sm: ScenarioMetrics, limits: dict[str, float]) -> dict[str, np.ndarray]:
    """Per limit, whether each scenario meets it (the evaluator's tolerance rule, ``costs.limit_slack``); with a
    trained teacher also ``teacher.score``: its plan reaches the score in that scenario, or the OPD stage is unusable
    there and the plan fails it whatever its limits."""
    out = {}
    for name, limit in limits.items():
        metric, sense = LIMIT_METRIC[name]
        bound = widened(limit, sense)
        out[name] = sm.metric(metric) <= bound if sense == "<=" else sm.metric(metric) >= bound
    if sm.teacher_usable is not None:
        out[TEACHER_SCORE] = np.asarray(sm.teacher_usable, dtype=bool)
    return out


def meets_all(sm: ScenarioMetrics, limits: dict[str, float]) -> np.ndarray:
    """Whether each scenario meets every limit of ``limits`` (the conjunction of :func:`meets`)."""
    per = meets(sm, limits)
    ok = np.ones(len(sm.cost_usd), dtype=bool)
    for v in per.values():
        ok &= v
    return ok


def cvar(values, level: float) -> float:
    """CVaR at ``level`` of a sample, as the model defines it (Rockafellar-Uryasev over equal-weight scenarios)."""
    import numpy as np
    v = np.sort(np.asarray(values, dtype=float))
    n = len(v)
    tail = (1.0 - level) * n
    k = n - int(np.floor(tail + 1e-12))    # scenarios [k, n) are wholly in the tail, k-1 partly
    whole = v[k:].sum() if k < n else 0.0
    part = (tail - (n - k)) * v[k - 1] if k > 0 else 0.0
    return float((whole + part) / tail)
