r"""The portfolio MIP: one job block per job, shared GPUs, reserved commitments, built by ``define_*`` steps.

``build_portfolio`` collects each job's plan space (``space.collect_space``) and the reservation
caps (``portfolio_formulation``), then adds, in this order (each step documents its rows with
their formulas):

1. ``define_jobs``: one Pyomo Block per job holding the one plan model (``formulation.define_plan``:
   its choices, stages, candidate students, retention, rollout hardware, trained teacher and its own
   limits), so its plan is chosen exactly as for the job alone; and its **gangs**
   (``gangs.job_gangs``: the GPUs each part of the plan holds together, their spot work and the job's
   non-compute money);
2. ``define_schedule``: the GPU-hours :math:`u_{j,a,b,g,k}` of each gang :math:`a` of each job per
   bucket, GPU type and tier;
3. ``define_reservations``: reserved GPUs in whole nodes, and contracts that start later;
4. ``define_work_scheduled``, ``define_job_gpus``: the schedule carries each gang's work on its GPUs;
   ``define_bundles``: a stage's training and rollout GPUs run together;
5. ``define_gang``, ``define_tier_fit``: gang scheduling (a gang holds its whole count);
6. ``define_lead_time``: no GPU work before a recipe's lead time; ``define_order``: a job's gangs
   one after another;
7. ``define_capacity``: the GPUs held at once fit each tier;
8. ``define_costs``, ``define_budget``: the cost, the objective, the total spend cap;
9. ``define_symmetry_breaking``: identical jobs ordered.

Options (measured in ``benchmarks/bench_portfolio.py``): ``tight_linking`` caps a gang's
GPU-hours per bucket *per GPU type* by its chosen count of that type; without it, one cap over
all types. ``symmetry_breaking`` orders identical jobs (same instance and window) by a
lexicographic plan key.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyomo.environ as pyo

from planopt.models.cost.evaluator import Evaluator
from planopt.models.formulation import define_plan
from planopt.models.formulation.data import FormulationData
from planopt.models.formulation.gangs import Gang, chain, job_gangs, job_noncompute_usd
from planopt.models.formulation.linear import linear
from planopt.models.formulation.space import PlanSpace, collect_space
from planopt.models.schema.portfolio import PortfolioData

TIERS = ("reserved", "on_demand", "spot")
EARLIER_USD = 1e-6  # per GPU-hour and bucket index: breaks ties towards early buckets (and asynchronous overlaps at their least)
LEAD_TOLERANCE = 1e-12   # relative: a lead time equal to the hours since release (up to rounding) has passed


@dataclass
class PortfolioFormulation:
    """What the portfolio MIP is built from: the portfolio's data, each job's plan space and evaluator, the
    reserved GPUs each type may hold, and (once built) each job's gangs and the tiers each gang may use."""

    data: PortfolioData
    spaces: list[PlanSpace]
    evaluators: list[Evaluator]
    reserved_max: dict[str, int]
    gangs: list[list[Gang]] = field(default_factory=list)
    tiers: dict = field(default_factory=dict)                    # (j, a, b, g) -> tiers allowed

    @property
    def jobs(self) -> list[FormulationData]:
        """Each job's first slot: the whole plan space of a plain job (``plain``)."""
        return [space.slots[0] for space in self.spaces]

    @property
    def plain_jobs(self) -> list[bool]:
        """Per job: one gang of one slot without a retention block, what the bound and search of
        ``solver/portfolio`` (per-job plan tables of (recipe, hardware, interval)) are written for."""
        return [len(g) == 1 and not s.staged and s.evaluator.inst.retention is None
                for g, s in zip(self.gangs, self.spaces)]

    @property
    def plain(self) -> bool:
        """Every job plain (``plain_jobs``)."""
        return all(self.plain_jobs)

    def pair_rates(self, j: int) -> tuple[dict, dict]:
        r"""Of a plain job: per kept (hardware, interval) pair, the spot overhead :math:`o^s` (pairs that may run
        spot only) and the money by the training hour :math:`\eta` (``gangs.Term``)."""
        o_s, eta = {}, {}
        for option_terms in (o.terms for o in self.gangs[j][0].options):
            for t in option_terms:
                key = t.key
                eta[key] = t.eta
                if t.spot is not None:
                    o_s[key] = t.spot_overhead
        return o_s, eta


@dataclass
class ScheduleIndex:
    """The schedule's keys (j, a, b, g, k) in the order of ``m.U``, grouped as the rows sum them."""
    keys: list
    by_ag: dict = field(default_factory=dict)    # (j, a, g, on spot) -> keys: a gang's work on a type, off or on spot
    by_ab: dict = field(default_factory=dict)    # (j, a, b) -> keys: a gang's work in a bucket
    by_bgk: dict = field(default_factory=dict)   # (b, g, k) -> keys: what a tier holds in a bucket
    by_j: dict = field(default_factory=dict)     # j -> keys: a job's whole schedule

    def __post_init__(self):
        for key in self.keys:
            j, a, b, g, k = key
            self.by_ag.setdefault((j, a, g, k == "spot"), []).append(key)
            self.by_ab.setdefault((j, a, b), []).append(key)
            self.by_bgk.setdefault((b, g, k), []).append(key)
            self.by_j.setdefault(j, []).append(key)


def later_start_types(pd_: PortfolioData) -> list[str]:
    """The GPU types whose reservations may start later (``reserved_start_buckets``)."""
    return [g for g in pd_.gpus if pd_.gpu[g].reserved_start_buckets is not None]


def spot_types(pd_: PortfolioData, j: int) -> set[str]:
    """The GPU types with spot GPUs in job ``j``'s window."""
    return {g for g in pd_.gpus if any(pd_.spot_avail[g][b] > 0 for b in pd_.window(j))}


def most_at_once(space: PlanSpace, g: str) -> int:
    """The most GPUs of type ``g`` a job's plan holds at once: one stage (or its teacher's plan) at a time, its
    training and any rollout GPUs together."""
    most = 0
    for d in space.slots:
        for hw in d.hardware:
            most = max(most, hw.count * (hw.gpu == g) + hw.rollout_count * (hw.rollout_gpu == g))
        for rec in d.recipes:
            theta = rec.teacher_training
            if theta is not None:
                hw = theta.stages[0].hardware
                most = max(most, hw.count * (hw.gpu == g) + hw.rollout_count * (hw.rollout_gpu == g))
    return most


def portfolio_formulation(pd_: PortfolioData, evaluators: list[Evaluator] | None = None) -> tuple[PortfolioFormulation, str]:
    r"""Each job's plan space (every layer, nothing pruned that a portfolio prices differently: dominated
    intervals are kept for a job with spot GPUs in its window, where an interval moves more than the overhead)
    and :math:`\bar R_g`, the most GPUs of each type worth reserving: every job's most of the type at once, in
    whole nodes, within the offer's ``max_reserved_gpus``. The reason is not empty when some job has no plan."""
    evs = evaluators or [Evaluator(inst) for inst in pd_.instances]
    spaces = [collect_space(ev, prune=False, keep_intervals=bool(spot_types(pd_, j))) for j, ev in enumerate(evs)]
    for name, space in zip(pd_.names, spaces):
        if not space.recipes or not space.hardware:
            why = "no training recipe" if not space.recipes else "no (GPU, count) of the portfolio's GPU types that holds any recipe in memory"
            return PortfolioFormulation(pd_, spaces, evs, {}), f"job {name}: {why}"
    reserved_max = {}
    for g in pd_.gpus:
        need = sum(most_at_once(space, g) for space in spaces)
        cap = pd_.gpu[g].max_reserved_gpus
        node = pd_.node_gpus[g]
        need = -(-need // node) * node  # whole nodes
        reserved_max[g] = need if cap is None else min(cap // node * node, need)
    return PortfolioFormulation(pd_, spaces, evs, reserved_max), ""


def build_portfolio(pd_: PortfolioData, tight_linking: bool = True, symmetry_breaking: bool = True,
                    evaluators: list[Evaluator] | None = None) -> tuple[pyo.ConcreteModel | None, PortfolioFormulation, str]:
    """The portfolio MIP (module docstring); returns (None, ..., reason) when some job has no plan at all."""
    form, reason = portfolio_formulation(pd_, evaluators)
    if reason:
        return None, form, reason
    m = pyo.ConcreteModel(name=pd_.portfolio.name)
    define_jobs(m, form)
    index = define_schedule(m, form)
    define_reservations(m, form)
    define_work_scheduled(m, form, index)
    define_bundles(m, form, index)
    define_job_gpus(m, form, index, tight_linking)
    define_gang(m, form, index)
    define_tier_fit(m, form, index)
    define_lead_time(m, form, index)
    define_order(m, form, index)
    define_capacity(m, form, index)
    define_costs(m, form, index)
    define_budget(m, form)
    if symmetry_breaking:
        define_symmetry_breaking(m, form)
    return m, form, ""


def define_jobs(m: pyo.ConcreteModel, form: PortfolioFormulation) -> None:
    """``m.job[j]``: job j's plan by the one plan model (its own rows and limits), its gangs and its non-compute
    money ``portfolio_noncompute_usd`` (``gangs.py``)."""
    d = form.data
    m.J = pyo.Set(initialize=range(len(form.spaces)))
    m.job = pyo.Block(m.J)
    for j, space in enumerate(form.spaces):
        blk = m.job[j]
        define_plan(blk, space, form.evaluators[j].inst.constraints)
        gangs = job_gangs(blk, space, spot_types(d, j), d.preempt)
        form.gangs.append(gangs)
        blk.portfolio_noncompute_usd = pyo.Expression(expr=job_noncompute_usd(blk, gangs))


def define_schedule(m: pyo.ConcreteModel, form: PortfolioFormulation) -> ScheduleIndex:
    r""":math:`u_{j,a,b,g,k} \ge 0` GPU-hours of gang ``a`` of job ``j`` in bucket ``b`` on type ``g`` and tier ``k``
    (``m.U``, ``gpu_hours``), only for ``b`` between the job's release and deadline buckets and a type the gang
    holds, on the tiers that exist there (``form.tiers``): reserved once the offer's reserved GPUs have arrived
    (``reserved_from``), on demand and spot where any are available (spot only for a gang with spot work on the
    type)."""
    pd_ = form.data
    keys = []
    for j, gangs in enumerate(form.gangs):
        for a, gang in enumerate(gangs):
            spot_ok = gang.spot_types()
            for b in pd_.window(j):
                for g in gang.types:
                    allowed = ["reserved"] if b >= pd_.reserved_from[g] else []  # reserved GPUs arrive after their lead time
                    if pd_.od_avail[g][b] > 0:
                        allowed.append("on_demand")
                    if pd_.spot_avail[g][b] > 0 and g in spot_ok:
                        allowed.append("spot")
                    form.tiers[j, a, b, g] = allowed
                    keys.extend((j, a, b, g, k) for k in allowed)
    m.U = pyo.Set(initialize=keys, dimen=5)
    m.gpu_hours = pyo.Var(m.U, domain=pyo.NonNegativeReals)
    return ScheduleIndex(keys)


def define_reservations(m: pyo.ConcreteModel, form: PortfolioFormulation) -> None:
    r"""Reservations come in whole nodes of the offer, :math:`0 \le R_g \le \bar R_g`, paid for
    every hour of their term :math:`C_g` (back-to-back terms over the horizon, at least :math:`H B`;
    ``PortfolioData.committed_hours``), used or not:

    .. math::
       R_g = \nu_g N_g \qquad \text{(whole_nodes)}

    Later starts (``reserved_start_buckets`` :math:`S_g`, opt-in per GPU type): :math:`x_{g,s} \in
    \mathbb{Z}_{\ge 0}` whole nodes signed in bucket :math:`s \in S_g` (``contract_nodes``), in
    force from :math:`s + L_g` (the lead time) to the horizon's end, paid for :math:`C_{g,s}` hours
    (back-to-back terms covering :math:`(B - s) H`; ``committed_hours_from``) from signing, idle
    buckets included:

    .. math::
       N_g = \sum_{s} x_{g,s} \qquad \text{(nodes_of_contracts)}

    Without the field a type keeps the single contract of bucket 0 (the same rows)."""
    pd_, reserved_max = form.data, form.reserved_max
    m.G = pyo.Set(initialize=pd_.gpus)
    m.reserved = pyo.Var(m.G, domain=pyo.NonNegativeIntegers, bounds=lambda m, g: (0, reserved_max[g]))
    m.reserved_nodes = pyo.Var(m.G, domain=pyo.NonNegativeIntegers, bounds=lambda m, g: (0, reserved_max[g] // pd_.node_gpus[g]))
    m.whole_nodes = pyo.Constraint(m.G, rule=lambda m, g: m.reserved[g] == pd_.node_gpus[g] * m.reserved_nodes[g])
    later = later_start_types(pd_)
    m.GS = pyo.Set(initialize=[(g, s) for g in later for s in pd_.reserved_starts[g]], dimen=2)
    m.contract_nodes = pyo.Var(m.GS, domain=pyo.NonNegativeIntegers,
                               bounds=lambda m, g, s: (0, reserved_max[g] // pd_.node_gpus[g]))
    m.GL = pyo.Set(initialize=later)
    m.nodes_of_contracts = pyo.Constraint(m.GL, rule=lambda m, g: m.reserved_nodes[g] == sum(
        m.contract_nodes[g, s] for s in pd_.reserved_starts[g]))


def define_work_scheduled(m: pyo.ConcreteModel, form: PortfolioFormulation, index: ScheduleIndex) -> None:
    r"""Every GPU-hour a gang needs on a type is scheduled, off spot on reserved and on-demand GPUs, on spot
    on spot GPUs (``m.AGS``: each gang's types, with spot where it has any; a bundle's gangs are scheduled
    per option instead, ``define_bundles``):

    .. math::
       \sum_{b} \sum_{k \in \{res, od\}} u_{j,a,b,g,k} = G^{ns}_{j,a,g}, \qquad
       \sum_b u_{j,a,b,g,spot} = G^{s}_{j,a,g}                                     \qquad\text{(work_scheduled)}"""
    by_ag = index.by_ag
    rows = [(j, a, g, s) for j, gangs in enumerate(form.gangs) for a, gang in enumerate(gangs)
            if not gang.bundled and gang.partner is None for g in gang.types for s in (False, True)
            if not s or (j, a, g, True) in by_ag]
    need = {key: form.gangs[key[0]][key[1]].gpu_hours(key[2], key[3]) for key in rows}

    def work_scheduled(m, j, a, g, spot):
        keys = by_ag.get((j, a, g, spot), [])
        return sum(m.gpu_hours[key] for key in keys) - need[j, a, g, spot] == 0

    m.AGS = pyo.Set(initialize=rows, dimen=4)
    m.work_scheduled = pyo.Constraint(m.AGS, rule=work_scheduled)


def define_bundles(m: pyo.ConcreteModel, form: PortfolioFormulation, index: ScheduleIndex) -> None:
    r"""A stage on separate rollout GPUs holds its training and its rollout GPUs together (a bundle,
    ``gangs.py``): in each bucket, on one tier, for the same hours. Per option :math:`o` of the bundle's training
    gang (a hardware choice, or a teacher plan) and bucket and tier, :math:`w_{j,a,b,o,k} \ge 0` wall hours
    (``bundle_hours``, only where every type of :math:`o` has the tier), with :math:`W^{ns}_o, W^{s}_o` the
    option's training hours off and on spot (``GangOption.wall_hours``) and :math:`\chi_o` its binary:

    .. math::
       \sum_{b,\ k \ne spot} w_{j,a,b,o,k} = W^{ns}_o, \quad \sum_b w_{j,a,b,o,spot} = W^{s}_o
           &\quad\text{(bundle_hours_scheduled)} \\
       w_{j,a,b,o,k} \le H \chi_o &\quad\text{(bundle_on_chosen_option)} \\
       u_{j,a,b,g,k} = \sum_{o:\ g_o = g} n_o\, w_{j,a,b,o,k}, \quad
       u_{j,a',b,g',k} = \sum_{o:\ g'_o = g'} m_o\, w_{j,a,b,o,k} &\quad\text{(bundle_training_hours, bundle_rollout_hours)}

    Exact: with one option chosen, both gangs' GPU-hours in each (bucket, tier) are their counts times the same
    hours, and they sum to the option's GPU-hours (what ``work_scheduled`` asks of other gangs)."""
    H, pd_ = form.data.bucket_hours, form.data
    keys, need, on_u = [], {}, {}
    for j, gangs in enumerate(form.gangs):
        for a, gang in enumerate(gangs):
            if not gang.bundled:
                continue
            partner = next(p for p, other in enumerate(gangs) if other.partner == a)
            for o, opt in enumerate(gang.options):
                for spot in (False, True):
                    need[j, a, o, spot] = opt.wall_hours(spot)
                for b in pd_.window(j):
                    tiers = set(form.tiers.get((j, a, b, opt.gpu), []))
                    if opt.rollout is not None:
                        tiers &= set(form.tiers.get((j, partner, b, opt.rollout[0]), []))
                    for k in TIERS:
                        if k in tiers:
                            keys.append((j, a, b, o, k))
                            on_u.setdefault((j, a, b, opt.gpu, k), []).append((float(opt.count), (j, a, b, o, k)))
                            if opt.rollout is not None:
                                on_u.setdefault((j, partner, b, opt.rollout[0], k), []).append(
                                    (float(opt.rollout[1]), (j, a, b, o, k)))
    m.W = pyo.Set(initialize=keys, dimen=5)
    m.bundle_hours = pyo.Var(m.W, domain=pyo.NonNegativeReals)
    by_option: dict = {}
    for key in keys:
        by_option.setdefault((key[0], key[1], key[3], key[4] == "spot"), []).append(key)
    rows = sorted(need)
    m.BUNDLE_OPTIONS = pyo.Set(initialize=rows, dimen=4)

    def scheduled(m, j, a, o, spot):
        coefs, variables = need[j, a, o, spot]
        ws = [m.bundle_hours[key] for key in by_option.get((j, a, o, spot), [])]
        return linear([1.0] * len(ws) + [-c for c in coefs], ws + variables) == 0

    m.bundle_hours_scheduled = pyo.Constraint(m.BUNDLE_OPTIONS, rule=scheduled)
    chosen = {(j, a, o): form.gangs[j][a].options[o].chosen for (j, a, o, _) in rows}
    m.bundle_on_chosen_option = pyo.Constraint(m.W, rule=lambda m, j, a, b, o, k: linear(
        [1.0, -H], [m.bundle_hours[j, a, b, o, k], chosen[j, a, o]]) <= 0)
    in_bundle = {(j, a) for j, gangs in enumerate(form.gangs) for a, gang in enumerate(gangs)
                 if gang.bundled or gang.partner is not None}
    bundled_u = [key for key in index.keys if (key[0], key[1]) in in_bundle]
    m.BUNDLED_U = pyo.Set(initialize=bundled_u, dimen=5)
    m.bundle_gpu_hours = pyo.Constraint(m.BUNDLED_U, rule=lambda m, *key: linear(
        [1.0] + [-c for c, _ in on_u.get(key, [])], [m.gpu_hours[key]] + [m.bundle_hours[w] for _, w in on_u.get(key, [])]) == 0)


def gang_count(form: PortfolioFormulation, j: int, a: int, g: str, most: float | None = None):
    r""":math:`c_{j,a,g}`: the GPUs of type ``g`` gang ``a`` of job ``j`` holds (counts up to ``most`` only)."""
    return form.gangs[j][a].count(g, most)


def define_job_gpus(m: pyo.ConcreteModel, form: PortfolioFormulation, index: ScheduleIndex, tight_linking: bool) -> None:
    r"""A gang runs in a bucket at most its GPU count times the bucket's hours, per GPU type
    (``tight_linking``, ``m.ABG``) or over all types (``m.AB``):

    .. math::
       \sum_k u_{j,a,b,g,k} \le H\, c_{j,a,g} \quad\text{or}\quad
       \sum_{g,k} u_{j,a,b,g,k} \le H \sum_g c_{j,a,g}                          \qquad\text{(within_job_gpus)}"""
    H = form.data.bucket_hours
    if tight_linking:
        abg = sorted({(j, a, b, g) for (j, a, b, g, k) in index.keys})
        m.ABG = pyo.Set(initialize=abg, dimen=4)
        m.within_job_gpus = pyo.Constraint(m.ABG, rule=lambda m, j, a, b, g: sum(
            m.gpu_hours[j, a, b, g, k] for k in form.tiers[j, a, b, g]) <= H * gang_count(form, j, a, g))
    else:
        by_ab = index.by_ab
        m.AB = pyo.Set(initialize=sorted(by_ab), dimen=3)
        m.within_job_gpus = pyo.Constraint(m.AB, rule=lambda m, j, a, b: sum(
            m.gpu_hours[key] for key in by_ab[j, a, b]) <= H * sum(
            gang_count(form, j, a, g) for g in form.gangs[j][a].types))


def define_gang(m: pyo.ConcreteModel, form: PortfolioFormulation, index: ScheduleIndex) -> None:
    r"""Gang scheduling. A gang runs on its whole GPU count or not at all: a binary
    :math:`y_{j,a,b,g,k}` (``holds``) says gang ``a`` of job ``j`` holds GPUs of type ``g`` on tier ``k`` in bucket
    ``b``, and :math:`q = y\, c_{j,a,g}` (``held``) is the count it holds there, an exact linearisation with
    the data-derived big-M :math:`\bar n_{j,a,g}`, the gang's largest count of the type:

    .. math::
       q &\le \bar n_{j,a,g}\, y                               &&\text{(held_only_if_holds)} \\
       q &\le c_{j,a,g}                                        &&\text{(held_at_most_count)} \\
       q &\ge c_{j,a,g} - \bar n_{j,a,g} (1 - y)               &&\text{(held_whole_count)} \\
       u_{j,a,b,g,k} &\le H\, q_{j,a,b,g,k}                    &&\text{(runs_on_held)}

    The GPUs held, not the GPU-hours, fit each tier's capacity (``define_capacity``)."""
    H = form.data.bucket_hours
    count = {(j, a, g): gang_count(form, j, a, g) for j, gangs in enumerate(form.gangs)
             for a, gang in enumerate(gangs) for g in gang.types}
    nmax = {(j, a, g): form.gangs[j][a].nmax(g) for (j, a, g) in count}
    m.holds = pyo.Var(m.U, domain=pyo.Binary)
    m.held = pyo.Var(m.U, domain=pyo.NonNegativeReals)
    m.held_only_if_holds = pyo.Constraint(m.U, rule=lambda m, j, a, b, g, k: m.held[j, a, b, g, k]
                                          <= nmax[j, a, g] * m.holds[j, a, b, g, k])
    m.held_at_most_count = pyo.Constraint(m.U, rule=lambda m, j, a, b, g, k: m.held[j, a, b, g, k] <= count[j, a, g])
    m.held_whole_count = pyo.Constraint(m.U, rule=lambda m, j, a, b, g, k: m.held[j, a, b, g, k]
                                        >= count[j, a, g] - nmax[j, a, g] * (1 - m.holds[j, a, b, g, k]))
    m.runs_on_held = pyo.Constraint(m.U, rule=lambda m, j, a, b, g, k: m.gpu_hours[j, a, b, g, k] <= H * m.held[j, a, b, g, k])


def define_tier_fit(m: pyo.ConcreteModel, form: PortfolioFormulation, index: ScheduleIndex) -> None:
    r"""Valid tightening: on-demand and spot availability :math:`A_{g,b,k}` is data, so a tier is
    used only by the counts that fit it (the LP relaxation then cannot spread a big gang thinly),
    on every on-demand and spot key (``m.TIERED``):

    .. math::
       u_{j,a,b,g,k} \le H \sum_{o \in a:\ g_o = g,\ n_o \le A_{g,b,k}} n_o \chi_o       \qquad\text{(fits_tier)}"""
    pd_ = form.data
    H = pd_.bucket_hours

    def fits_tier(m, j, a, b, g, k):
        avail = pd_.od_avail[g][b] if k == "on_demand" else pd_.spot_avail[g][b]
        return m.gpu_hours[j, a, b, g, k] <= H * gang_count(form, j, a, g, most=avail)

    m.TIERED = pyo.Set(initialize=[key for key in index.keys if key[4] != "reserved"], dimen=5)
    m.fits_tier = pyo.Constraint(m.TIERED, rule=fits_tier)


def define_lead_time(m: pyo.ConcreteModel, form: PortfolioFormulation, index: ScheduleIndex) -> None:
    r"""GPU work starts at a bucket boundary once the lead time (labels, a teacher's own labels) of the gang's
    chosen recipe has passed since the job's release; a gang may pause between buckets (it checkpoints). In
    each bucket of the window where some recipe's lead time has not passed (``m.LEAD``), with
    :math:`n^{max}_{j,a} H` the data-derived big-M (a gang never holds more than its largest count):

    .. math::
       \sum_{g,k} u_{j,a,b,g,k} \le H\, n^{max}_{j,a} \big(1 - \sum_{r:\ \mathrm{lead}_r > (b - b^{rel}_j) H} x_{j,r}\big)
       \qquad\text{(after_lead_time)}

    A rollout gang runs with its training gang (``define_bundles``), which carries the row."""
    pd_, by_ab = form.data, index.by_ab
    H = pd_.bucket_hours
    rows, late = [], {}
    for j, gangs in enumerate(form.gangs):
        rel = pd_.portfolio.jobs[j].release_bucket
        for a, gang in enumerate(gangs):
            for b in pd_.window(j):
                xs = [x for lead, x in gang.late if lead > (b - rel) * H * (1 + LEAD_TOLERANCE)]
                if xs and (j, a, b) in by_ab:   # a bucket with no tier (reserved GPUs not yet there) holds no work anyway
                    late[j, a, b] = xs
                    rows.append((j, a, b))
    nmax = {(j, a): max(o.count for o in gangs[a].options) for j, gangs in enumerate(form.gangs) for a in range(len(gangs))}
    m.LEAD = pyo.Set(initialize=rows, dimen=3)
    m.after_lead_time = pyo.Constraint(m.LEAD, rule=lambda m, j, a, b: sum(m.gpu_hours[key] for key in by_ab[j, a, b])
                                       <= H * nmax[j, a] * (1 - sum(late[j, a, b])))


def define_order(m: pyo.ConcreteModel, form: PortfolioFormulation, index: ScheduleIndex) -> None:
    r"""A job's gangs run one after another (``gangs.chain``: its teacher's, then its stages): a later gang holds
    GPUs only in buckets after the last bucket of every earlier one. For each gang :math:`a` but the last of a
    chain, a binary :math:`f_{j,a,b}` (``done``, from the bucket before the window) says it has run its last
    bucket by the end of :math:`b`; with :math:`K_{j,a,b}` the gang's keys in the bucket (a data-derived big-M):

    .. math::
       f_{j,a,b} \ge f_{j,a,b-1} &\quad\text{(done_stays_done)} \\
       \sum_{g,k} y_{j,a,b,g,k} \le K_{j,a,b} (1 - f_{j,a,b-1}) &\quad\text{(runs_before_done)} \\
       \sum_{g,k} y_{j,a',b,g,k} \le K_{j,a',b}\, f_{j,a,b-1} \quad (a \text{ before } a') &\quad\text{(runs_after_earlier)}

    A gang that holds nothing (a stage its sequence does not run, no teacher to train) is free to be done from
    the start, so it never holds the next one back. Exact: a schedule whose gangs run in order sets :math:`f` from
    the last bucket of each; any schedule that satisfies the rows runs them in order."""
    pd_, by_ab = form.data, index.by_ab
    chains = {j: chain(gangs) for j, gangs in enumerate(form.gangs)}
    done = [(j, a, b) for j, c in chains.items() if len(c) > 1 for a in c[:-1]
            for b in range(pd_.portfolio.jobs[j].release_bucket - 1, pd_.portfolio.jobs[j].deadline_bucket + 1)]
    m.DONE = pyo.Set(initialize=done, dimen=3)
    m.done = pyo.Var(m.DONE, domain=pyo.Binary)

    def holds(j, a, b):
        keys = by_ab.get((j, a, b), [])
        return len(keys), sum(m.holds[key] for key in keys)

    stays, before, after = [], [], []
    for (j, a, b) in done:
        if (j, a, b - 1) in m.DONE:
            stays.append((j, a, b))
            if by_ab.get((j, a, b)):
                before.append((j, a, b))
            c = chains[j]
            after += [(j, a, later, b) for later in c[c.index(a) + 1:] if by_ab.get((j, later, b))]
    m.DONE_STAYS = pyo.Set(initialize=stays, dimen=3)
    m.done_stays_done = pyo.Constraint(m.DONE_STAYS, rule=lambda m, j, a, b: m.done[j, a, b] >= m.done[j, a, b - 1])
    m.RUNS_BEFORE = pyo.Set(initialize=before, dimen=3)
    m.runs_before_done = pyo.Constraint(m.RUNS_BEFORE, rule=lambda m, j, a, b: holds(j, a, b)[1]
                                        <= holds(j, a, b)[0] * (1 - m.done[j, a, b - 1]))
    m.RUNS_AFTER = pyo.Set(initialize=after, dimen=4)
    m.runs_after_earlier = pyo.Constraint(m.RUNS_AFTER, rule=lambda m, j, a, later, b: holds(j, later, b)[1]
                                          <= holds(j, later, b)[0] * m.done[j, a, b - 1])


def define_capacity(m: pyo.ConcreteModel, form: PortfolioFormulation, index: ScheduleIndex) -> None:
    r"""The GPUs the gangs hold at once fit each tier in each bucket (``m.CAP``: the (b, g, k) any
    gang may use):

    .. math::
       \sum_{j,a} q_{j,a,b,g,res} \le R_g \ \text{or, with later starts,}\ \nu_g \sum_{s + L_g \le b} x_{g,s}, \quad
       \sum_{j,a} q_{j,a,b,g,od} \le A^{od}_{g,b}, \quad
       \sum_{j,a} q_{j,a,b,g,spot} \le A^{s}_{g,b}                                    \qquad\text{(capacity)}

    A gang holds the GPUs of every tier it uses in a bucket from the start of the bucket, so the
    schedule replays as it is (``planopt.portfolio.replay``), with each gang running ``u / n``
    hours on each tier it holds, one tier after another. Two jobs do not take turns on the same
    GPUs within a bucket; a finer bucket is the way to model that."""
    pd_ = form.data
    later = later_start_types(pd_)
    by_bgk = index.by_bgk

    def reserved_in_force(m, g, b):
        if g not in later:
            return m.reserved[g]
        lead = pd_.gpu[g].reserved_lead_buckets
        return pd_.node_gpus[g] * sum(m.contract_nodes[g, s] for s in pd_.reserved_starts[g] if s + lead <= b)

    def capacity(m, b, g, k):
        held = sum(m.held[key] for key in by_bgk[b, g, k])
        if k == "reserved":
            return held <= reserved_in_force(m, g, b)
        avail = pd_.od_avail[g][b] if k == "on_demand" else pd_.spot_avail[g][b]
        return held <= avail

    m.CAP = pyo.Set(initialize=sorted(by_bgk), dimen=3)
    m.capacity = pyo.Constraint(m.CAP, rule=capacity)


def define_costs(m: pyo.ConcreteModel, form: PortfolioFormulation, index: ScheduleIndex) -> None:
    r"""The cost and the objective. Each reservation is paid for every hour of its term(s) from
    its start, used or not; on-demand and spot GPUs for the hours a gang runs on them:

    .. math::
       \mathrm{cost} = \sum_g R_g\, p^{res}_g\, C_g + \sum_{g,s} \nu_g\, p^{res}_g\, C_{g,s}\, x_{g,s}
       + \sum u\,p^{od} + \sum u\,p^{s} + \sum_j \mathrm{noncompute}_j   \qquad\text{(cost_usd)}

    (the first sum over the types without later starts; :math:`\mathrm{noncompute}_j` of ``gangs.py``), and the
    objective is :math:`\mathrm{cost} + 10^{-6} (\sum b\, u + \sum W)` (``EARLIER_USD`` per GPU-hour and bucket
    index), so that ties go to the earliest bucket and an asynchronous stage's overlap epigraph
    (``work.define_overlap``, :math:`W`) sits at its least even where its hours cost nothing more (spare reserved
    GPUs, no hourly money); reported costs leave it out. A job's share
    (``job_cost_usd``) prices its reserved GPU-hours at the reservation rate; the shares sum to at most
    ``cost_usd`` (the reserved GPUs of a type cover, bucket by bucket, the reserved GPU-hours of all jobs)."""
    pd_, keys = form.data, index.keys
    later = later_start_types(pd_)
    price = {"on_demand": pd_.od_price, "spot": pd_.spot_price}
    m.job_cost_usd = pyo.Expression(m.J, rule=lambda m, jj: m.job[jj].portfolio_noncompute_usd + sum(
        (pd_.reserved_price[g] if k == "reserved" else price[k][g][b]) * m.gpu_hours[j, a, b, g, k]
        for (j, a, b, g, k) in index.by_j.get(jj, [])))
    m.reserved_usd = pyo.Expression(expr=sum(pd_.reserved_price[g] * pd_.committed_hours[g] * m.reserved[g] for g in m.G
                                             if g not in later)
                                    + sum(pd_.reserved_price[g] * pd_.committed_hours_from[g][s] * pd_.node_gpus[g]
                                          * m.contract_nodes[g, s] for (g, s) in m.GS))
    m.on_demand_usd = pyo.Expression(expr=sum(price["on_demand"][g][b] * m.gpu_hours[j, a, b, g, k]
                                              for (j, a, b, g, k) in keys if k == "on_demand"))
    m.spot_usd = pyo.Expression(expr=sum(price["spot"][g][b] * m.gpu_hours[j, a, b, g, k] for (j, a, b, g, k) in keys if k == "spot"))
    m.noncompute_usd = pyo.Expression(expr=sum(m.job[j].portfolio_noncompute_usd for j in m.J))
    m.cost_usd = pyo.Expression(expr=m.reserved_usd + m.on_demand_usd + m.spot_usd + m.noncompute_usd)
    overlap = [v for j in m.J for v in m.job[j].component_data_objects(pyo.Var, descend_into=True)
               if v.parent_component().local_name == "overlap_hours"]
    m.lateness = pyo.Expression(expr=sum(b * m.gpu_hours[j, a, b, g, k] for (j, a, b, g, k) in keys) + sum(overlap))
    m.objective = pyo.Objective(expr=m.cost_usd + EARLIER_USD * m.lateness, sense=pyo.minimize)


def define_budget(m: pyo.ConcreteModel, form: PortfolioFormulation) -> None:
    r"""The total spend cap, when the portfolio has one: :math:`\mathrm{cost} \le \mathrm{budget\_usd}` (``budget``)."""
    budget = form.data.portfolio.budget_usd
    if budget is not None:
        m.budget = pyo.Constraint(expr=m.cost_usd <= budget)


def define_symmetry_breaking(m: pyo.ConcreteModel, form: PortfolioFormulation) -> None:
    r"""Identical jobs (the same instance, release and deadline; ``m.SYM``: consecutive pairs of
    each group) take their plans in order of a lexicographic plan key over their one-hot groups
    (``choice_groups``, in one order, option :math:`i` of group :math:`\gamma` weighted by the product
    :math:`W_\gamma` of the sizes of the groups after it):
    :math:`\kappa_j = \sum_\gamma W_\gamma \sum_i i\, x_{j,\gamma,i}`:

    .. math::
       \kappa_a \le \kappa_b \qquad \text{(identical_jobs_ordered)}"""
    pd_ = form.data
    groups: dict = {}
    for j, inst in enumerate(pd_.instances):
        job = pd_.portfolio.jobs[j]
        key = (inst.model_dump_json(exclude={"name"}), job.release_bucket, job.deadline_bucket)
        groups.setdefault(key, []).append(j)
    pairs = [(a, b) for js in groups.values() for a, b in zip(js, js[1:])]
    m.SYM = pyo.Set(initialize=pairs, dimen=2)

    def plan_key(blk):
        coefs, variables, weight = [], [], 1.0
        for name in reversed(sorted(blk.choice_groups)):
            group = blk.choice_groups[name]
            coefs += [i * weight for i in range(len(group))]
            variables += group
            weight *= max(1, len(group))
        return linear(coefs, variables)

    m.identical_jobs_ordered = pyo.Constraint(m.SYM, rule=lambda m, a, b: plan_key(m.job[a]) - plan_key(m.job[b]) <= 0)


def add_share_floors(m: pyo.ConcreteModel, form: PortfolioFormulation, multipliers: dict, floors: dict[int, float]) -> None:
    r"""Valid inequalities ``job_share_usd[j] >= floors[j]`` (job share floors), with

    .. math::
       s_j = \mathrm{noncompute}_j + \sum_{b,g,k \ne \mathrm{res}} p_{bgk} G_{jbgk} + \sum_{b,g,k} \lambda_{bgk}\, \mathrm{held}_{jbgk}

    (``job_share_usd``), ``multipliers`` the :math:`\lambda_{bgk} \ge 0` in USD per GPU held
    in a bucket, with :math:`\sum_b \lambda_{bg,\mathrm{res}} \le p^{res}_g C_g` per GPU type,
    and ``floors[j]`` a proven lower bound on :math:`s_j` over job ``j``'s own choices alone
    (``solver/portfolio/lagrange.py`` derives both and proves that the rows cut off no
    schedule; with them the LP relaxation is at least the Lagrangian bound
    :math:`\sum_j \mathrm{floors}_j - \sum_{k \ne \mathrm{res}} \lambda a`)."""
    for name in ("job_share_floor", "job_share_usd", "JSHARE"):
        if hasattr(m, name):
            m.del_component(name)
    d = form.data
    price = {"on_demand": d.od_price, "spot": d.spot_price}
    by_j: dict = {}
    for key in m.U:
        by_j.setdefault(key[0], []).append(key)
    m.JSHARE = pyo.Set(initialize=sorted(floors))

    def share(m, jj):
        keys = by_j.get(jj, [])
        return (m.job[jj].portfolio_noncompute_usd
                + sum(price[k][g][b] * m.gpu_hours[j, a, b, g, k] for (j, a, b, g, k) in keys if k != "reserved")
                + sum(multipliers[b, g, k] * m.held[j, a, b, g, k] for (j, a, b, g, k) in keys
                      if multipliers.get((b, g, k), 0.0) > 0))

    m.job_share_usd = pyo.Expression(m.JSHARE, rule=share)
    m.job_share_floor = pyo.Constraint(m.JSHARE, rule=lambda m, j: m.job_share_usd[j] >= floors[j])
