r"""The evaluator: every metric of a plan, straight from the formulas.

This is the single source of truth. The MIP (``formulation/``) is built from
the same recipe and hardware profiles, and tests hold it to this module on
every plan it returns and on every instance small enough to enumerate.

For recipe :math:`r`, hardware :math:`h = (g, n)` and checkpoint interval
:math:`\tau`:

.. math::

   T &= \sum_c \mathrm{amount}_c(r)\, u_c(h) / 3600
        \qquad \text{(compute hours, no failures)} \\
   H_{train} &= T\,(1 + o_h(\tau)), \qquad
        o_h(\tau) = w_h/\tau + \lambda_h (\tau/2 + \rho) \\
   \mathrm{wall} &= \mathrm{lead}(r) + H_{train} \\
   \mathrm{cost} &= n\,p_g\,(H_{train} - H_{eval})                  &&\text{compute} \\
        &+ n\,p_g\,H_{eval}                                          &&\text{evaluation} \\
        &+ \mathrm{labels}(r) + \mathrm{reward}(r) + \mathrm{teacher}(r) &&\text{data} \\
        &+ k_{keep}\,C_{GB}(r)\,p_{hot}\,H_{train}/730 + m\,C_{GB}(r)\,p_{cold}\,M + \mathrm{logs}(r) &&\text{storage} \\
        &+ \mathrm{sandboxes}(r) + \mathrm{traffic}(r) + \pi^{env}_h\,H_{train} &&\text{environments} \\
        &+ \mathrm{egress}(r)                                        &&\text{network} \\
        &+ G_{log}(r)\,p_{ingest}                                     &&\text{log ingest} \\
        &+ \mathrm{fixed} + p_{ops}\,\mathrm{wall}                    &&\text{operations} \\
        &+ p_{repair}\,F(r)                                          &&\text{forgetting repair}

For asynchronous RL (``asynchronous.py``) :math:`T` overlaps each phase's generation with
its training, :math:`T = S + \sum_p \max(G_p, T_p)`, and the hours breakdown carries
the overlap as a negative ``async_overlap`` line, so that it still sums to the wall time.
With ``environments.pools`` (``environments.py``) the plan's pool of environment workers adds
its work to each phase (summed, or overlapping generation in an agent loop: a negative
``environment_overlap`` line), and :math:`\pi^{env}_h` is its money per training hour
(:math:`w\,p_w + p_{fix}` for sandboxes held, 0 on the GPU hosts).
On a split choice (separate rollout GPUs, ``rollout.py``) :math:`n\,p_g` reads
:math:`n\,p_g + n_r\,p_{g_r}` (both GPU sets are billed for the whole run) and the
GPU-hours count :math:`n + n_r` GPUs.

:math:`H_{eval} = T_{eval}(1 + o_h(\tau))` is the validation decodes' share of the
training hours (their GPU time, failures and checkpoints included); the compute
line is the rest, so the two add up to :math:`n p_g H_{train}` as before.
The interval ``evaluation.every_steps`` is an input: its runs are priced here, the score a
sparser interval loses by missing the best checkpoint is not (no sourced figure of how much
evaluated scores move between nearby checkpoints: ``catalog/reference/post-training.md`` §7).
:math:`C_{GB}(r)` is the recipe's checkpoint (the adapter's for LoRA). Egress is
billed only for what ``network.crosses_region`` lists (traffic inside a cluster,
weight hand-over included, is free).

With a ``releases`` block (``releases.py``) each cost line is its total over the releases: its fixed part
(``quantities.py``) once, the rest at every release, less the SFT labels a later release reuses; the hours,
quality and forgetting are one release's.

With a ``retention`` block the plan also chooses a retention option :math:`\rho`
(``retention.py``): :math:`o_h(\tau)` gains the rollback share
:math:`n \lambda_{rb}(\tau/2 + D + r)`, the recent checkpoints' storage
:math:`k_{keep} C_{GB} p_{hot} H_{train}/730` becomes :math:`s_h(\tau,\rho) H_{train}`,
and a plan whose :math:`(k, \tau)` does not cover the detection delay is infeasible.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from planopt.models.cost import physics as ph
from planopt.models.cost.asynchronous import combine, overlapped
from planopt.models.cost.environments import environments_detail, pools_of
from planopt.models.cost.pretraining import PRETRAIN_KEY, pretraining_detail
from planopt.models.cost.hardware import HardwareProfile, hardware_options, memory_classes, offload_refusal, plan_offers
from planopt.models.cost.quantities import cost_split_usd, plan_fixed_usd, stage_fixed_usd, stage_quantities, sum_quantities
from planopt.models.cost.releases import release_count, release_summary, total_line
from planopt.models.cost.stage_outcomes import stage_outcome
from planopt.models.schema.plan import HardwareChoice, Plan, Recipe
from planopt.models.cost.retention import (RetentionChoice, check_choice, coverage_violation, deep_rollback_share, retention_options,
                        rollback_share, storage_usd_per_train_hour)
from planopt.models.cost.recipes import HOURS_CATEGORY, RecipeProfile, check_recipe, enumerate_recipes, family_of, profile
from planopt.models.cost.teacher_training import teacher_lump, teacher_plans
from planopt.models.cost.tolerance import LIMIT_RELATIVE_TOLERANCE, exceeds, limit_slack  # noqa: F401  (the rule, read from here too)
from planopt.models.schema.instance import Instance

COST_KEYS = ("compute", "evaluation", "data", "storage", "environments", "network", "log_ingest", "operations",
             "forgetting_repair")
# Each limit: the metric it bounds and its sense; each objective: the metric it optimises.
# The one table the evaluator, the oracles, the scenario evaluator and the MIPs share.
LIMIT_METRIC = {"budget_usd": ("cost_usd", "<="), "deadline_hours": ("wall_hours", "<="),
                "max_forgetting_points": ("forgetting_points", "<="), "min_quality": ("quality", ">=")}
OBJECTIVE_METRIC = {"cost": "cost_usd", "time": "wall_hours", "quality": "quality", "forgetting": "forgetting_points"}
HOURS_KEYS = ("data_lead_time", "generation", "scoring", "training", "evaluation", "environment_wait", "checkpoint_writes",
              "failure_rework")
# The cost lines a stage contributes on its own; operations and forgetting repair are the plan's.
STAGE_COST_KEYS = tuple(k for k in COST_KEYS if k not in ("operations", "forgetting_repair"))


@dataclass
class Metrics:
    """Every metric of one plan: totals, the cost and hours breakdowns, FLOPs, memory and the limits it breaks."""

    cost_usd: float
    wall_hours: float
    quality: float
    forgetting_points: float
    gpu_hours: float
    memory_per_gpu_gb: float
    cost_breakdown_usd: dict[str, float]
    hours_breakdown: dict[str, float]
    flops: dict[str, float]
    fits_memory: bool
    violations: list[str] = field(default_factory=list)
    # where each GPU set of the plan is bought (``hardware.plan_offers``): one row per stage's GPUs and rollout GPUs
    offers: list[dict] = field(default_factory=list)
    # what the plan does in its own units (``quantities.QUANTITY_KEYS``: tokens sampled, reward calls, checkpoints...)
    quantities: dict[str, float] = field(default_factory=dict)
    # the fixed part of each cost line (``quantities.py``'s rule); the rest of the line is elastic
    fixed_cost_breakdown_usd: dict[str, float] = field(default_factory=dict)
    # with a ``releases`` block: the count, the first and each later release's cost, the total (``releases.py``)
    releases: dict = field(default_factory=dict)
    # with ``environments.pools``: per on-policy stage, the pool its environments run on and their money and hours
    # (``environments.environments_detail``)
    environments: list[dict] = field(default_factory=list)
    # with continued pre-training (``pretraining.py``): its tokens, FLOPs, hours, corpus money and the score it reaches
    pretraining: dict = field(default_factory=dict)

    @property
    def feasible(self) -> bool:
        """True when the plan breaks no limit (``violations`` is empty)."""
        return not self.violations

    @property
    def fixed_cost_usd(self) -> float:
        """The cost that does not scale with the plan's length or hours (``quantities.py``)."""
        return sum(self.fixed_cost_breakdown_usd.values())

    @property
    def elastic_cost_usd(self) -> float:
        """The rest of the cost: what scales with the plan's length or hours."""
        return self.cost_usd - self.fixed_cost_usd

    def cost_split(self) -> dict:
        """The JSON's ``cost_split_usd``: fixed and elastic totals and the fixed part of each line (and, with a
        ``releases`` block, ``releases``: the count, the first and each later release's cost, the total)."""
        out = cost_split_usd(self.cost_breakdown_usd, self.fixed_cost_breakdown_usd)
        return {**out, "releases": dict(self.releases)} if self.releases else out

    def summary(self) -> dict[str, float]:
        """The headline metrics (cost, wall hours, quality, forgetting, GPU hours, memory per GPU) by name."""
        return {"cost_usd": self.cost_usd, "wall_hours": self.wall_hours, "quality": self.quality,
                "forgetting_points": self.forgetting_points, "gpu_hours": self.gpu_hours,
                "memory_per_gpu_gb": self.memory_per_gpu_gb}

    def objective(self, name: str) -> float:
        """The value each objective minimises (quality is maximised, so negated)."""
        return {"cost": self.cost_usd, "time": self.wall_hours, "quality": -self.quality,
                "forgetting": self.forgetting_points}[name]


def cost_breakdown_usd(inst: Instance, rp: RecipeProfile, usd_per_hour_of_gpus, train_hours, wall_hours,
                       forgetting_points, eval_train_hours=0.0, checkpoint_usd_per_train_hour=None,
                       labels_rebuilt_share=None, environments_usd=None, environments_usd_per_hour=0.0) -> dict[str, float]:
    """The cost lines of a plan. Works element-wise on numpy arrays of the
    scenario-dependent inputs (GPUs' price per hour, hours, forgetting), so the
    scenario evaluator (``scenarios.py``) prices scenarios with this same sum. With ``releases`` each line is
    its total over the releases (``releases.py``; ``labels_rebuilt_share``: the scenarios' share of the SFT labels
    bought again, None: the instance's).
    ``eval_train_hours`` (:math:`H_{eval}`) only splits the GPU money between the
    compute and evaluation lines; the sum does not depend on it. ``checkpoint_usd_per_train_hour``
    is the retention option's :math:`s_h(\tau,\rho)` (``retention.py``); None: ``keep_last`` hot.
    ``environments_usd``: the recipe's environment money (the scenarios' when its CPU-seconds are drawn; None: the
    profile's); ``environments_usd_per_hour``: the choice's pool of workers per training hour (``environments.py``)."""
    ckpt_gb = rp.checkpoint_gb
    st, ck, ops = inst.storage, inst.checkpointing, inst.operations
    if checkpoint_usd_per_train_hour is None:
        checkpoint_usd_per_train_hour = ck.keep_last * ckpt_gb * st.hot_usd_per_gb_month / ph.d.HOURS_PER_MONTH
    env_usd = rp.environments_usd if environments_usd is None else environments_usd
    if not (np.isscalar(environments_usd_per_hour) and environments_usd_per_hour == 0):
        env_usd = env_usd + environments_usd_per_hour * train_hours  # the pool held for the training hours (environments.py)
    lines = {
        "compute": usd_per_hour_of_gpus * (train_hours - eval_train_hours),
        "evaluation": usd_per_hour_of_gpus * eval_train_hours,
        "data": rp.data_usd,
        "storage": (checkpoint_usd_per_train_hour * train_hours
                    + ck.milestones_kept * ckpt_gb * st.cold_usd_per_gb_month * ck.milestone_retention_months
                    + rp.log_storage_usd),
        "environments": env_usd,
        "network": rp.network_usd,
        "log_ingest": rp.log_ingest_usd,
        "operations": ops.fixed_usd + ops.usd_per_wall_hour * wall_hours,
        "forgetting_repair": inst.forgetting_repair_usd_per_point * forgetting_points,
    }
    if release_count(inst) == 1:
        return lines
    # every release (``releases.py``): the fixed part once, the elastic part each time, a share of the labels
    fixed = plan_fixed_usd(inst, [stage_fixed_usd(inst, rp)], COST_KEYS)
    return {k: total_line(inst, v, fixed[k], rp.labels_usd if k == "data" else 0.0, labels_rebuilt_share)
            for k, v in lines.items()}


@dataclass
class RecipeArrays:
    """Recipe profiles as arrays (``Evaluator.recipe_arrays``): row r is ``recipes[r]``."""

    recipes: list[Recipe]
    components: list[str]          # sorted work component keys (columns of ``amounts``)
    classes: list[str]             # sorted memory classes (values of ``recipe_class``)
    amounts: np.ndarray            # [recipe, component] work amounts (0 where the recipe has none)
    recipe_class: np.ndarray       # [recipe] index into ``classes``
    quality: np.ndarray            # [recipe]
    forgetting_points: np.ndarray  # [recipe]
    lead_hours: np.ndarray         # [recipe]
    data_usd: np.ndarray           # [recipe]
    environments_usd: np.ndarray   # [recipe]
    log_storage_usd: np.ndarray    # [recipe]
    checkpoint_gb: np.ndarray      # [recipe] one checkpoint (the adapter's for LoRA)
    network_usd: np.ndarray        # [recipe]
    log_ingest_usd: np.ndarray     # [recipe]
    fixed_data_usd: np.ndarray     # [recipe] the part of data_usd paid once (``quantities.py``)
    fixed_network_usd: np.ndarray  # [recipe] the part of network_usd that is one transfer
    labels_usd: np.ndarray         # [recipe] the SFT labels bought (``releases.py``)


@dataclass
class HardwareArrays:
    """Hardware profiles as arrays (``Evaluator.hardware_arrays``): column h is ``hardware[h]``."""

    hardware: list[HardwareChoice]
    fits: np.ndarray                   # [class, hardware] the memory class fits
    seconds_per_unit: np.ndarray       # [component, hardware]; 0 where the component's class does not fit
    usable: np.ndarray                 # [component, hardware] the component can run there (its class fits)
    overhead: np.ndarray               # [hardware, interval] o_h(tau)
    count: np.ndarray                  # [hardware] GPUs
    price_usd_per_gpu_hour: np.ndarray  # [hardware] per training GPU: the choice's GPUs' money per hour / count (rollout GPUs' included)
    environments_usd_per_hour: np.ndarray = None  # [hardware] the choice's pool of environment workers, per hour held


def _component_class(key: str) -> str | None:
    """The memory class a component key carries (decode, tail and sync do), or None."""
    parts = key.split("|")
    if len(parts) < 2:
        return None
    base = parts[1].partition("+lora")[0].partition("@")[0]   # rl@s1: asynchronous RL's class
    return parts[1] if base in ("rl", "sft") or base.startswith("opd:") else None



def overlapped_sum(by_component: dict[str, float]) -> float:
    """The compute hours of a recipe's components: their sum, with each phase's generation, training and the
    environments' pool overlapped where the recipe overlaps them (asynchronous RL, an agent loop:
    ``asynchronous.combine``)."""
    return float(combine(by_component)) if overlapped(by_component) else sum(by_component.values())

class Evaluator:
    """Evaluates plans of one instance, caching recipe and hardware profiles."""

    def __init__(self, inst: Instance):
        self.inst = inst
        self._recipes: dict[Recipe, RecipeProfile] = {}
        self._hardware: dict[HardwareChoice, HardwareProfile] = {}
        self._students: dict[str, Evaluator] = {}
        self._offers: dict[tuple, list[dict]] = {}  # the stages' hardware -> where they are bought (``offers_of``)
        self._space: tuple | None = None  # the plan space's axes (``space``)

    def offers_of(self, plan: Plan) -> list[dict]:
        """Where the plan's GPU sets are bought (``hardware.plan_offers``), computed once per set of stage hardware:
        every plan of the oracles reads it, and it depends on the hardware alone. Each call gets its own copies."""
        key = tuple(s.hardware for s in plan.stages)
        if key not in self._offers:
            self._offers[key] = plan_offers(self.inst, plan)
        return [dict(o) for o in self._offers[key]]

    def recipe(self, r: Recipe) -> RecipeProfile:
        """The recipe's profile (work amounts, FLOPs, quality, forgetting), computed once and cached."""
        if r not in self._recipes:
            self._recipes[r] = profile(self.inst, r, teacher_lump(self.inst, r, Evaluator))
        return self._recipes[r]

    def hardware(self, h: HardwareChoice) -> HardwareProfile:
        """The hardware choice's profile (prices, memory, seconds per unit of work), built once and cached."""
        if h not in self._hardware:
            self._hardware[h] = HardwareProfile(self.inst, h)
        return self._hardware[h]

    def compute_hours_by_component(self, r: Recipe, h: HardwareChoice) -> dict[str, float]:
        """Compute hours of each work component of recipe ``r`` on hardware ``h``: its amount times its seconds per
        unit."""
        rp, hp = self.recipe(r), self.hardware(h)
        return {key: amount * hp.seconds_per_unit(key) / 3600.0 for key, amount in rp.amounts.items()}

    def step_hours_by_component(self, r: Recipe, h: HardwareChoice) -> dict[str, float]:
        """:meth:`compute_hours_by_component` of the recipe's training steps: less the continued pre-training that runs
        before its first step (``pretraining.PRETRAIN_KEY``), what a run's logged step times measure."""
        return {k: v for k, v in self.compute_hours_by_component(r, h).items() if k != PRETRAIN_KEY}

    def compute_hours(self, r: Recipe, h: HardwareChoice) -> float:
        """Compute hours :math:`T` of recipe ``r`` on hardware ``h`` (no failures): :func:`overlapped_sum` of its
        components."""
        return overlapped_sum(self.compute_hours_by_component(r, h))

    def metrics(self, r: Recipe, h: HardwareChoice, interval_minutes: float,
                retention: RetentionChoice | None = None) -> Metrics:
        """Every metric of (r, h, interval[, retention]); ``retention`` is required exactly when the instance
        has a ``retention`` block."""
        inst, rp, hp = self.inst, self.recipe(r), self.hardware(h)
        if (retention is None) != (inst.retention is None):
            raise ValueError("plan.retention: " + ("expected one of the instance's retention options, got null"
                                                   if retention is None else "the instance has no retention block; expected null"))
        memory, why = hp.memory_bytes_per_gpu(r.memory_class)
        by_component = self.compute_hours_by_component(r, h) if why is None else {}
        # generation, training and the environments' pool overlap phase by phase for asynchronous RL and an agent
        # loop (asynchronous.py, environments.py); otherwise the sum
        overlap = overlapped(by_component)
        compute_hours = overlapped_sum(by_component)
        tau = interval_minutes / 60.0
        hours = dict.fromkeys(HOURS_KEYS, 0.0)
        hours["data_lead_time"] = rp.lead_hours
        for key, value in by_component.items():
            hours[HOURS_CATEGORY[family_of(key)]] += value
        if overlap:  # the hours that overlap (negative), so the breakdown sums to the wall time
            hours["async_overlap" if r.staleness_steps else "environment_overlap"] = compute_hours - sum(by_component.values())
        overhead = hp.overhead_share(interval_minutes) + rollback_share(inst, h.count, interval_minutes, hp.restart_hours)
        if retention is not None:  # falling back to a milestone costs more re-work (retention.py)
            overhead = overhead + float(deep_rollback_share(inst, retention, h.count, interval_minutes))
        # writes cost w/τ per hour of work; the rest of the exact overhead is failures
        # (re-work, restarts, failed writes), so the breakdown sums to the wall time
        hours["checkpoint_writes"] = compute_hours * hp.checkpoint_write_hours / tau
        hours["failure_rework"] = compute_hours * (overhead - hp.checkpoint_write_hours / tau)
        train_hours = compute_hours * (1.0 + overhead)
        wall = rp.lead_hours + train_hours
        per_hour = None if retention is None else float(storage_usd_per_train_hour(
            inst, retention, hp.checkpoint_gb, h.count, interval_minutes))
        costs = cost_breakdown_usd(inst, rp, hp.usd_per_hour_of_gpus, train_hours, wall, rp.forgetting_points,
                                   hours["evaluation"] * (1.0 + overhead), per_hour,
                                   environments_usd_per_hour=hp.environments_usd_per_hour)
        m = Metrics(cost_usd=sum(costs.values()), wall_hours=wall, quality=rp.quality,
                    forgetting_points=rp.forgetting_points, gpu_hours=h.total_count * train_hours,
                    memory_per_gpu_gb=memory / ph.GB, cost_breakdown_usd=costs, hours_breakdown=hours,
                    flops=dict(rp.flops), fits_memory=why is None,
                    quantities=stage_quantities(inst, rp, retention, compute_hours, interval_minutes,
                                                h.total_count * train_hours),
                    fixed_cost_breakdown_usd=plan_fixed_usd(inst, [stage_fixed_usd(inst, rp)], COST_KEYS))
        if inst.releases is not None:
            m.releases = release_summary(inst, m.cost_usd, m.fixed_cost_usd, rp.labels_usd)
        if inst.environments.pools:
            m.environments = environments_detail(inst, rp, hp, train_hours, by_component)
        if r.pretraining_tokens:
            m.pretraining = pretraining_detail(inst, r, by_component)
        m.violations = self.violations(m, why)
        if retention is not None and (late := coverage_violation(inst, retention, interval_minutes)):
            m.violations.append(late)
        return m

    def violations(self, m: Metrics, memory_reason: str | None) -> list[str]:
        """A message per limit of the instance that ``m`` breaks by the tolerance rule, as ``limit: value > bound``
        (``<`` for ``min_quality``), after ``memory: memory_reason`` when the plan does not fit."""
        c = self.inst.constraints
        out = []
        if memory_reason is not None:
            out.append(f"memory: {memory_reason}")
        if c.budget_usd is not None and exceeds(m.cost_usd, c.budget_usd, "<="):
            out.append(f"budget_usd: {m.cost_usd:,.0f} > {c.budget_usd:,.0f}")
        if c.deadline_hours is not None and exceeds(m.wall_hours, c.deadline_hours, "<="):
            out.append(f"deadline_hours: {m.wall_hours:,.1f} > {c.deadline_hours:,.1f}")
        if c.max_forgetting_points is not None and exceeds(m.forgetting_points, c.max_forgetting_points, "<="):
            out.append(f"max_forgetting_points: {m.forgetting_points:.2f} > {c.max_forgetting_points:.2f}")
        if c.min_quality is not None and exceeds(m.quality, c.min_quality, ">="):
            out.append(f"min_quality: {m.quality:.2f} < {c.min_quality:.2f}")
        return out

    def for_student(self, name: str | None) -> "Evaluator":
        """The evaluator of the plans that train ``name`` (the instance's own student, or one of its
        ``candidate_students``: ``Instance.for_student``); ValueError naming ``plan.student`` for another name."""
        inst = self.inst
        if name is None or name == inst.student_name or (not inst.candidate_students and name == inst.student.preset):
            if inst.candidate_students and name is None:
                raise ValueError(f"plan.student: the instance lists candidate_students; name the student the plan "
                                 f"trains (one of {', '.join(inst.student_names())})")
            return self if not inst.candidate_students else self._student(inst.student_name)
        return self._student(name)

    def _student(self, name: str) -> "Evaluator":
        if name not in self._students:
            self._students[name] = Evaluator(self.inst.for_student(name))
        return self._students[name]

    def check_stage(self, recipe: Recipe, hardware: HardwareChoice, where: str = "plan") -> None:
        """Raise ValueError naming ``where.<field>`` when the stage is not one of the instance's options."""
        try:
            check_recipe(self.inst, recipe)
            teacher_lump(self.inst, recipe, Evaluator)  # a usable teacher plan where one is trained, none elsewhere
            options = set(hardware_options(self.inst))
            if hardware not in options:
                offload_refusal(self.inst, hardware, options)
                self._hardware_refusal(hardware)
        except ValueError as exc:
            raise ValueError(str(exc).replace("plan.", f"{where}.", 1)) from None

    def _hardware_refusal(self, hw: HardwareChoice) -> None:
        keys = self.inst.training.trainer_keys()
        if hw.trainer not in keys:
            named = [k for k in keys if k is not None]
            raise ValueError(f"plan.trainer: {hw.trainer!r} is not a trainer of the instance; expected "
                             + (f"one of {named} (training.trainer / trainer_options)" if named else
                                "none (the instance names no trainer: leave plan.trainer out)"))
        degrees = self.inst.training.context_parallel_degrees()
        if hw.context_parallel not in degrees or hw.count % hw.context_parallel:
            raise ValueError(f"plan.context_parallel: {hw.context_parallel} is not a degree the instance offers "
                             f"{hw.count} GPUs; expected one of {[c for c in degrees if hw.count % c == 0]} "
                             "(training.context_parallel, the degrees that divide plan.gpu_count)")
        self._pool_refusal(hw)
        gpus = {o.key: o.counts for o in self.inst.hardware.gpus}
        if hw.gpu not in gpus:
            raise ValueError(f"plan.gpu: '{hw.gpu}' is not in hardware.gpus ({', '.join(gpus)})")
        if hw.count in gpus[hw.gpu] and hw.rollout_gpu is not None:
            rollout = {o.key: o.counts for o in self.inst.hardware.rollout_gpus}
            if hw.rollout_gpu not in rollout:
                raise ValueError(f"plan.rollout.gpu: '{hw.rollout_gpu}' is not in hardware.rollout_gpus "
                                 f"({', '.join(rollout) or 'none: generation runs on the training GPUs'})")
            raise ValueError(f"plan.rollout.gpu_count: {hw.rollout_count} is not an allowed count for "
                             f"{hw.rollout_gpu} {rollout[hw.rollout_gpu]} within availability")
        raise ValueError(f"plan.gpu_count: {hw.count} is not an allowed count for {hw.gpu} {gpus[hw.gpu]} within availability")

    def _pool_refusal(self, hw: HardwareChoice) -> None:
        """ValueError naming ``plan.environment_pool`` when the stage's pool is not one it may name."""
        inst = self.inst
        if hw.environment_pool in pools_of(inst, inst.training.methods):
            return
        names = [p.name for p in inst.environments.pools]
        if not names:
            raise ValueError(f"plan.environment_pool: {hw.environment_pool!r} is not an option: the instance lists no "
                             "environments.pools; leave it out")
        if hw.environment_pool is None:
            raise ValueError(f"plan.environment_pool: missing: an on-policy stage names the pool its environments "
                             f"run on, one of environments.pools ({', '.join(names)})")
        raise ValueError(f"plan.environment_pool: {hw.environment_pool!r} is not one of environments.pools "
                         f"({', '.join(names)})")

    def check_plan(self, plan: Plan) -> None:
        """Raise ValueError naming the field when the plan is not one of the instance's options: its student, its
        stages' methods (an allowed sequence), the interval, the retention option, and each stage's recipe and
        hardware (named ``plan.<field>`` for a one-stage plan, ``plan.stages.<n>.<field>`` otherwise)."""
        ev = self.for_student(plan.student)
        allowed = ev.inst.training.sequences()
        if plan.methods not in allowed:
            raise ValueError(f"plan.stages: the methods {list(plan.methods)} are not an allowed stage sequence "
                             f"(training.stage_sequences: {[list(s) for s in allowed]})")
        for n, stage in enumerate(plan.stages):
            if n and stage.recipe.pretraining_tokens:
                raise ValueError(f"plan.stages.{n}.pretraining_tokens: only the first stage continues pre-training; "
                                 "expected 0")
            ev.check_stage(stage.recipe, stage.hardware, "plan" if len(plan.stages) == 1 else f"plan.stages.{n}")
        intervals = ev.inst.checkpointing.interval_minutes_options
        if plan.checkpoint_interval_minutes not in intervals:
            raise ValueError(f"plan.checkpoint_interval_minutes: expected one of {intervals}")
        check_choice(ev.inst, plan.retention)

    def evaluate(self, plan: Plan) -> Metrics:
        """Every metric of any plan of the instance (ValueError naming the field for a plan outside its options)."""
        self.check_plan(plan)
        return self.plan_metrics(plan)

    def plan_metrics(self, plan: Plan) -> Metrics:
        r"""Every metric of ``plan`` (not checked: see :meth:`evaluate`). Stages run one after another, each on
        its own hardware, all at the plan's interval :math:`\tau` (and retention option). With :math:`M_s` the
        metrics of stage :math:`s` run alone (:meth:`metrics`):

        .. math::
           \mathrm{wall} &= \sum_s \mathrm{wall}_s, \qquad
           \mathrm{cost} = \sum_s \big(\text{every line but operations and repair}\big)_s
               + \mathrm{fixed} + p_{ops}\,\mathrm{wall} + p_{repair} \sum_s F_s \\
           q &= q_S, \qquad q_1, F_1 = \text{the first stage's own}, \qquad
           q_s, F_s = \texttt{stage\_outcome}(r_s, q_{s-1})

        For one stage these are :math:`M_1` exactly: the one-stage case, not another formula."""
        ev = self.for_student(plan.student)
        inst, tau = ev.inst, plan.checkpoint_interval_minutes
        alone = [ev.metrics(s.recipe, s.hardware, tau, plan.retention) for s in plan.stages]
        q, forgetting = alone[0].quality, [alone[0].forgetting_points]
        for stage in plan.stages[1:]:
            q, f = stage_outcome(inst, stage.recipe, q)
            forgetting.append(f)
        wall = sum(m.wall_hours for m in alone)
        total_forgetting = sum(forgetting)
        costs = {k: sum(m.cost_breakdown_usd[k] for m in alone) for k in STAGE_COST_KEYS}
        n = release_count(inst)  # each release is one run: its hours and forgetting recur (releases.py)
        costs["operations"] = inst.operations.fixed_usd + n * inst.operations.usd_per_wall_hour * wall
        costs["forgetting_repair"] = n * inst.forgetting_repair_usd_per_point * total_forgetting
        costs = {k: costs[k] for k in COST_KEYS}
        hours = {k: sum(m.hours_breakdown.get(k, 0.0) for m in alone) for k in dict.fromkeys(
            k for m in alone for k in m.hours_breakdown)}
        flops: dict[str, float] = {}
        for m in alone:
            for k, v in m.flops.items():
                flops[k] = flops.get(k, 0.0) + v
        out = Metrics(cost_usd=sum(costs.values()), wall_hours=wall, quality=q, forgetting_points=total_forgetting,
                      gpu_hours=sum(m.gpu_hours for m in alone), memory_per_gpu_gb=max(m.memory_per_gpu_gb for m in alone),
                      cost_breakdown_usd=costs, hours_breakdown=hours, flops=flops,
                      fits_memory=all(m.fits_memory for m in alone), offers=ev.offers_of(plan),
                      quantities=sum_quantities([m.quantities for m in alone]),
                      fixed_cost_breakdown_usd=plan_fixed_usd(
                          inst, [stage_fixed_usd(inst, ev.recipe(s.recipe)) for s in plan.stages], COST_KEYS))
        if inst.releases is not None:
            out.releases = release_summary(inst, out.cost_usd, out.fixed_cost_usd,
                                           sum(ev.recipe(s.recipe).labels_usd for s in plan.stages))
        out.environments = [{**row, "stage": n} for n, m in enumerate(alone, start=1) for row in m.environments]
        out.pretraining = alone[0].pretraining
        label = (lambda n: f"stage {n + 1}: ") if len(alone) > 1 else (lambda n: "")
        memory = [label(n) + v.removeprefix("memory: ") for n, m in enumerate(alone) for v in m.violations
                  if v.startswith("memory:")]
        out.violations = ev.violations(out, "; ".join(memory) if memory else None)
        if plan.retention is not None and (late := coverage_violation(inst, plan.retention, tau)):
            out.violations.append(late)
        return out

    def space(self) -> tuple[list[Recipe], list[HardwareChoice], list[float]]:
        """The plan space's axes: the recipes (with the teacher's plans), the hardware choices and the sorted
        checkpoint intervals. Listed once per evaluator (its instance does not change); each call returns new lists."""
        if self._space is None:
            self._space = (enumerate_recipes(self.inst, teacher_plans(self.inst, Evaluator)), hardware_options(self.inst),
                           sorted(set(self.inst.checkpointing.interval_minutes_options)))
        return tuple(list(axis) for axis in self._space)

    def retention_options(self) -> list[RetentionChoice]:
        """The retention options a plan chooses from (``retention.retention_options``); [] without a block."""
        return retention_options(self.inst)

    def memory_classes(self) -> list[str]:
        """The instance's memory classes (method, teacher precision, staleness, adapter), as
        ``hardware.memory_classes``."""
        return memory_classes(self.inst)

    def recipe_arrays(self, recipes: list[Recipe] | None = None, cache: bool = True) -> RecipeArrays:
        """The profiles of ``recipes`` (default: the instance's) as arrays, one row per recipe. ``cache=False``: the
        profiles not already cached are read into the arrays and let go, so that a large space never holds
        them all at once (a profile is ~3 KiB of Python objects; its row, ~0.5 KiB of floats)."""
        recipes = self.space()[0] if recipes is None else recipes
        n_r = len(recipes)
        col: dict[str, int] = {}
        rows, cols, vals = [], [], []
        scalars = ("quality", "forgetting_points", "lead_hours", "data_usd", "environments_usd", "log_storage_usd",
                   "checkpoint_gb", "network_usd", "log_ingest_usd", "fixed_data_usd", "fixed_network_usd", "labels_usd")
        table = np.zeros((len(scalars), n_r))
        for n, r in enumerate(recipes):
            p = self.recipe(r) if cache else (self._recipes.get(r) or profile(self.inst, r, teacher_lump(self.inst, r, Evaluator)))
            for c, v in p.amounts.items():
                rows.append(n)
                cols.append(col.setdefault(c, len(col)))
                vals.append(v)
            table[:, n] = [getattr(p, attr) for attr in scalars]
        components = sorted(col)
        position = np.array([components.index(c) for c in col], dtype=int)  # discovery order -> sorted order
        amounts = np.zeros((n_r, len(components)))
        if rows:
            amounts[rows, position[np.asarray(cols)]] = vals
        classes = sorted({r.memory_class for r in recipes})
        cls = {k: n for n, k in enumerate(classes)}
        return RecipeArrays(recipes, components, classes, amounts,
                            np.fromiter((cls[r.memory_class] for r in recipes), dtype=int, count=n_r), *table)

    def hardware_arrays(self, hardware: list[HardwareChoice], components: list[str], classes: list[str],
                        intervals: list[float]) -> HardwareArrays:
        """The profiles of ``hardware`` as arrays: per component the seconds per unit
        (``HardwareProfile.seconds_per_unit``, asked only where the component's memory class
        fits), per memory class the fit, per checkpoint interval the overhead share."""
        n_h = len(hardware)
        fits = np.zeros((len(classes), n_h), dtype=bool)
        spu = np.zeros((len(components), n_h))
        usable = np.zeros((len(components), n_h), dtype=bool)
        overhead = np.zeros((n_h, len(intervals)))
        comp_class = [_component_class(c) for c in components]
        for h, hw in enumerate(hardware):
            hp = self.hardware(hw)
            fit = {k: hp.fits(k) for k in classes}
            fits[:, h] = [fit[k] for k in classes]
            for c, key in enumerate(components):
                k = comp_class[c]
                if k is None or fit.get(k, False):
                    usable[c, h] = True
                    spu[c, h] = hp.seconds_per_unit(key)
            overhead[h] = [hp.overhead_share(i) + rollback_share(self.inst, hw.count, i, hp.restart_hours)
                           for i in intervals]
        count = np.array([hw.count for hw in hardware], dtype=float)
        # count x price is the choice's GPU money per hour, a split choice's rollout GPUs included (rollout.py)
        price = np.array([self.hardware(hw).usd_per_hour_of_gpus / hw.count for hw in hardware], dtype=float)
        env = np.array([self.hardware(hw).environments_usd_per_hour for hw in hardware], dtype=float)
        return HardwareArrays(list(hardware), fits, spu, usable, overhead, count, price, env)


def evaluate(inst: Instance, plan: Plan) -> Metrics:
    """Every metric of ``plan`` on ``inst`` (raises ValueError for a plan outside the options)."""
    return Evaluator(inst).evaluate(plan)
