r"""The portfolio MIP: one job block per job, shared GPUs, reserved commitments, built by ``define_*`` steps.

``build_portfolio`` collects each job's coefficients (``data.collect``) and the reservation
caps (``portfolio_formulation``), then adds, in this order (each step documents its rows with
their formulas):

1. ``define_jobs``: one Pyomo Block per job built by the single-job steps (``define_choices``,
   ``define_work``, ``define_checkpointing``, ``define_accounting``, ``define_limits``), so its
   plan (recipe, hardware, checkpoint interval) is chosen exactly as for one job; and its spot
   work (``define_spot_work``);
2. ``define_schedule``: the GPU-hours :math:`u_{j,b,g,k}` of each job per bucket, GPU type and tier;
3. ``define_reservations``: reserved GPUs in whole nodes, and contracts that start later;
4. ``define_work_scheduled``, ``define_job_gpus``: the schedule carries each job's work on its
   own GPUs;
5. ``define_gang``, ``define_tier_fit``: gang scheduling (a job holds its whole count);
6. ``define_lead_time``: no GPU work before a recipe's lead time;
7. ``define_capacity``: the GPUs held at once fit each tier;
8. ``define_costs``, ``define_budget``: the cost, the objective, the total spend cap;
9. ``define_symmetry_breaking``: identical jobs ordered.

Options (measured in ``benchmarks/bench_portfolio.py``): ``tight_linking`` caps a job's
GPU-hours per bucket *per GPU type* by its chosen count of that type; without it, one cap over
all types. ``symmetry_breaking`` orders identical jobs (same instance and window) by a
lexicographic plan key.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyomo.environ as pyo

from planopt.models.cost import physics as ph
from planopt.models.cost.evaluator import Evaluator
from planopt.models.schema.portfolio import PortfolioData
from planopt.models.formulation.accounting import define_accounting
from planopt.models.formulation.checkpointing import define_checkpointing
from planopt.models.formulation.choices import define_choices
from planopt.models.formulation.data import FormulationData, collect
from planopt.models.formulation.limits import define_limits
from planopt.models.formulation.work import define_work

TIERS = ("reserved", "on_demand", "spot")
EARLIER_USD = 1e-6  # per GPU-hour and bucket index: breaks ties towards early buckets
LEAD_TOLERANCE = 1e-12   # relative: a lead time equal to the hours since release (up to rounding) has passed


@dataclass
class PortfolioFormulation:
    """What the portfolio MIP is built from: the portfolio's data, each job's plan-space coefficients and evaluator,
    the reserved GPUs each type may hold, and per job the spot overheads, hourly non-compute money and allowed tiers."""

    data: PortfolioData
    jobs: list[FormulationData]
    evaluators: list[Evaluator]
    reserved_max: dict[str, int]
    spot_overhead: list[dict] = field(default_factory=list)     # per job: (h, tau) -> o^s
    hourly_noncompute: list[float] = field(default_factory=list)  # per job: hot storage + operations per train hour
    tiers: dict = field(default_factory=dict)                    # (j, b, g) -> tiers allowed


@dataclass
class ScheduleIndex:
    """The schedule's keys (j, b, g, k) in the order of ``m.U``, grouped as the rows sum them."""
    keys: list
    by_jg: dict = field(default_factory=dict)    # (j, g, on spot) -> keys: a job's work on a type, off or on spot
    by_jb: dict = field(default_factory=dict)    # (j, b) -> keys: a job's work in a bucket
    by_bgk: dict = field(default_factory=dict)   # (b, g, k) -> keys: what a tier holds in a bucket
    by_j: dict = field(default_factory=dict)     # j -> keys: a job's whole schedule

    def __post_init__(self):
        for key in self.keys:
            j, b, g, k = key
            self.by_jg.setdefault((j, g, k == "spot"), []).append(key)
            self.by_jb.setdefault((j, b), []).append(key)
            self.by_bgk.setdefault((b, g, k), []).append(key)
            self.by_j.setdefault(j, []).append(key)


def hourly_noncompute_usd(inst) -> float:
    """Hot checkpoint storage, operations and the job's one pool of environment workers per training hour (as
    ``data.collect``; a portfolio job names one pool at most, held by every plan of it or worth nothing an hour:
    ``portfolio/loading.py``)."""
    from planopt.models.cost.environments import usd_per_hour
    st, ck = inst.storage, inst.checkpointing
    ckpt_gb = ph.checkpoint_bytes(inst.student) / ph.GB
    pools = inst.environments.pools
    hourly = ck.keep_last * ckpt_gb * st.hot_usd_per_gb_month / ph.d.HOURS_PER_MONTH + inst.operations.usd_per_wall_hour
    return hourly + usd_per_hour(pools[0], 1) if pools else hourly


def spot_overhead_share(ev: Evaluator, hw, interval_minutes: float, preemptions_per_gpu_hour: float) -> float:
    """Share of a spot run's wall time lost to checkpoints, restarts and lost work: the checkpoint overhead with the
    hardware's failures plus ``count`` × the spot preemptions per GPU-hour as the interruption rate."""
    hp = ev.hardware(hw)
    return ph.checkpoint_overhead_share(hp.checkpoint_write_hours, hp.failures_per_hour + hw.count * preemptions_per_gpu_hour,
                                        interval_minutes / 60.0, hp.restart_hours)


def later_start_types(pd_: PortfolioData) -> list[str]:
    """The GPU types whose reservations may start later (``reserved_start_buckets``)."""
    return [g for g in pd_.gpus if pd_.gpu[g].reserved_start_buckets is not None]


def gpus_chosen(blk, fd: FormulationData, g: str | None = None):
    r""":math:`\sum_{h \in g} n_h z_{j,h}`: the GPUs of type ``g`` (None: of any type) of the job's chosen hardware."""
    return sum(fd.hardware[h].count * blk.hardware_chosen[h] for h in blk.H if g is None or fd.hardware[h].gpu == g)


def portfolio_formulation(pd_: PortfolioData, evaluators: list[Evaluator] | None = None) -> tuple[PortfolioFormulation, str]:
    r"""Each job's coefficients (``data.collect``) and :math:`\bar R_g`, the most GPUs of each type
    worth reserving: every job's largest count of the type at once, in whole nodes, within the
    offer's ``max_reserved_gpus``. The reason is not empty when some job has no plan at all."""
    evs = evaluators or [Evaluator(inst) for inst in pd_.instances]
    # With spot work an interval moves more than the overhead o_h(tau) (the spot overhead
    # o^s_h(tau) has another minimiser), so dominated intervals are kept for such jobs.
    jobs = [collect(ev, keep_dominated_intervals=any(pd_.spot_avail[g][b] > 0 for g in pd_.gpus for b in pd_.window(j)))
            for j, ev in enumerate(evs)]
    for name, fd in zip(pd_.names, jobs):
        if not fd.recipes or not fd.hardware:
            why = "no training recipe" if not fd.recipes else "no (GPU, count) of the portfolio's GPU types that holds any recipe in memory"
            return PortfolioFormulation(pd_, jobs, evs, {}), f"job {name}: {why}"
    reserved_max = {}
    for g in pd_.gpus:
        need = sum(max((hw.count for hw in fd.hardware if hw.gpu == g), default=0) for fd in jobs)
        cap = pd_.gpu[g].max_reserved_gpus
        node = pd_.node_gpus[g]
        need = -(-need // node) * node  # whole nodes
        reserved_max[g] = need if cap is None else min(cap // node * node, need)
    return PortfolioFormulation(pd_, jobs, evs, reserved_max), ""


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
    define_job_gpus(m, form, index, tight_linking)
    define_gang(m, form)
    define_tier_fit(m, form, index)
    define_lead_time(m, form, index)
    define_capacity(m, form, index)
    define_costs(m, form, index)
    define_budget(m, form)
    if symmetry_breaking:
        define_symmetry_breaking(m, form)
    return m, form, ""


def define_jobs(m: pyo.ConcreteModel, form: PortfolioFormulation) -> None:
    """``m.job[j]``: job j's plan, by the single-job steps (its own rows and limits), and its spot
    work (``define_spot_work``)."""
    m.J = pyo.Set(initialize=range(len(form.jobs)))
    m.job = pyo.Block(m.J)
    for j, fd in enumerate(form.jobs):
        blk = m.job[j]
        define_choices(blk, fd)
        define_work(blk, fd)
        define_checkpointing(blk, fd)
        define_accounting(blk, fd)
        define_limits(blk, form.evaluators[j].inst.constraints)
        define_spot_work(blk, form, j)


def define_spot_work(blk, form: PortfolioFormulation, j: int) -> None:
    r"""Spot work of job j. Preemptions at rate :math:`p_g` per GPU-hour are extra failures, so
    spot training hours carry the overhead
    :math:`o^{s}_h(\tau) = w_h/\tau + n_h(f + p_g)(\tau/2 + \rho)` instead of :math:`o_h(\tau)`
    (``physics.checkpoint_overhead_share``). The compute hours :math:`t_{h,\tau}` of the block are
    split into a spot part :math:`s_{h,\tau}`, only on GPU types with spot GPUs in the job's window
    (``HS``), exact without a big-M since :math:`t_{h,\tau} = 0` off the chosen plan:

    .. math::
       s_{h,\tau} &\le t_{h,\tau}                                                   &&\text{(spot_within_plan)} \\
       G^{ns}_{j,g} &= \sum_{h\in g,\tau} n_h (1+o_h(\tau)) (t_{h,\tau} - s_{h,\tau}) &&\text{(nonspot_gpu_hours)} \\
       G^{s}_{j,g} &= \sum_{h\in g,\tau} n_h (1+o^s_h(\tau))\, s_{h,\tau}            &&\text{(spot_gpu_hours)}

    and the job's non-compute money adds hot storage and operations :math:`\eta_j` for the extra
    train hours on spot: :math:`\mathrm{noncompute}_j + \eta_j \sum (o^s - o)\, s` (``portfolio_noncompute_usd``)."""
    pd_, fd, ev = form.data, form.jobs[j], form.evaluators[j]
    spot_ok = {g for g in pd_.gpus if any(pd_.spot_avail[g][b] > 0 for b in pd_.window(j))}
    hs = [(h, i) for (h, i) in blk.HI if fd.hardware[h].gpu in spot_ok]
    blk.HS = pyo.Set(initialize=hs, dimen=2)
    blk.spot_hours = pyo.Var(blk.HS, domain=pyo.NonNegativeReals)
    blk.spot_within_plan = pyo.Constraint(blk.HS, rule=lambda b_, h, i: b_.spot_hours[h, i] <= b_.interval_hours[h, i])
    o_s = {(h, i): spot_overhead_share(ev, fd.hardware[h], fd.intervals[i], pd_.preempt[fd.hardware[h].gpu]) for (h, i) in hs}
    form.spot_overhead.append(o_s)
    hourly = hourly_noncompute_usd(ev.inst)
    form.hourly_noncompute.append(hourly)

    def ns_hours(b_, g):
        return b_.gpu_hours_by_gpu[g] - sum(fd.hardware[h].count * (1.0 + fd.overhead[h, i]) * b_.spot_hours[h, i]
                                            for (h, i) in b_.HS if fd.hardware[h].gpu == g)

    def s_hours(b_, g):
        return sum(fd.hardware[h].count * (1.0 + o_s[h, i]) * b_.spot_hours[h, i] for (h, i) in b_.HS if fd.hardware[h].gpu == g)

    blk.nonspot_gpu_hours = pyo.Expression(blk.GPU, rule=ns_hours)
    blk.spot_gpu_hours = pyo.Expression(blk.GPU, rule=s_hours)
    blk.spot_extra_train_hours = pyo.Expression(expr=sum(
        (o_s[h, i] - fd.overhead[h, i]) * blk.spot_hours[h, i] for (h, i) in hs))
    blk.portfolio_noncompute_usd = pyo.Expression(expr=blk.non_compute_cost_usd + hourly * blk.spot_extra_train_hours)


def define_schedule(m: pyo.ConcreteModel, form: PortfolioFormulation) -> ScheduleIndex:
    r""":math:`u_{j,b,g,k} \ge 0` GPU-hours of job ``j`` in bucket ``b`` on type ``g`` and tier ``k``
    (``m.U``, ``gpu_hours``), only for ``b`` between the job's release and deadline buckets and a
    type of its hardware, on the tiers that exist there (``form.tiers``): reserved once the
    offer's reserved GPUs have arrived (``reserved_from``), on demand and spot where any are
    available (spot only for a job with spot work on the type)."""
    pd_ = form.data
    keys = []
    for j, fd in enumerate(form.jobs):
        types = sorted({hw.gpu for hw in fd.hardware})
        for b in pd_.window(j):
            for g in types:
                allowed = ["reserved"] if b >= pd_.reserved_from[g] else []  # reserved GPUs arrive after their lead time
                if pd_.od_avail[g][b] > 0:
                    allowed.append("on_demand")
                if pd_.spot_avail[g][b] > 0 and g in {fd.hardware[h].gpu for (h, _) in m.job[j].HS}:
                    allowed.append("spot")
                form.tiers[j, b, g] = allowed
                keys.extend((j, b, g, k) for k in allowed)
    m.U = pyo.Set(initialize=keys, dimen=4)
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
    r"""Every GPU-hour a job's plan needs on a type is scheduled, off spot on reserved and
    on-demand GPUs, on spot on spot GPUs (``m.JGS``: the job's types, with spot where it has any):

    .. math::
       \sum_{b} \sum_{k \in \{res, od\}} u_{j,b,g,k} = G^{ns}_{j,g}, \qquad
       \sum_b u_{j,b,g,spot} = G^{s}_{j,g}                                     \qquad\text{(work_scheduled)}"""
    by_jg = index.by_jg

    def work_scheduled(m, j, g, spot):
        blk = m.job[j]
        need = blk.spot_gpu_hours[g] if spot else blk.nonspot_gpu_hours[g]
        return sum(m.gpu_hours[key] for key in by_jg.get((j, g, spot), [])) == need

    jg = [(j, g, s) for j, fd in enumerate(form.jobs) for g in sorted({hw.gpu for hw in fd.hardware}) for s in (False, True)
          if not s or (j, g, True) in by_jg]
    m.JGS = pyo.Set(initialize=jg, dimen=3)
    m.work_scheduled = pyo.Constraint(m.JGS, rule=work_scheduled)


def define_job_gpus(m: pyo.ConcreteModel, form: PortfolioFormulation, index: ScheduleIndex, tight_linking: bool) -> None:
    r"""A job runs in a bucket at most its GPU count times the bucket's hours, per GPU type
    (``tight_linking``, ``m.JBG``) or over all types (``m.JB``):

    .. math::
       \sum_k u_{j,b,g,k} \le H \sum_{h \in g} n_h z_{j,h} \quad\text{or}\quad
       \sum_{g,k} u_{j,b,g,k} \le H \sum_h n_h z_{j,h}                          \qquad\text{(within_job_gpus)}"""
    H, jobs = form.data.bucket_hours, form.jobs
    if tight_linking:
        jbg = sorted({(j, b, g) for (j, b, g, k) in index.keys})
        m.JBG = pyo.Set(initialize=jbg, dimen=3)
        m.within_job_gpus = pyo.Constraint(m.JBG, rule=lambda m, j, b, g: sum(
            m.gpu_hours[j, b, g, k] for k in form.tiers[j, b, g]) <= H * gpus_chosen(m.job[j], jobs[j], g))
    else:
        by_jb = index.by_jb
        m.JB = pyo.Set(initialize=sorted(by_jb), dimen=2)
        m.within_job_gpus = pyo.Constraint(m.JB, rule=lambda m, j, b: sum(
            m.gpu_hours[key] for key in by_jb[j, b]) <= H * gpus_chosen(m.job[j], jobs[j]))


def define_gang(m: pyo.ConcreteModel, form: PortfolioFormulation) -> None:
    r"""Gang scheduling. A job runs on its whole GPU count or not at all: a binary
    :math:`y_{j,b,g,k}` (``holds``) says job ``j`` holds GPUs of type ``g`` on tier ``k`` in bucket
    ``b``, and :math:`q_{j,b,g,k} = y_{j,b,g,k} \sum_{h\in g} n_h z_{j,h}` (``held``) is the count
    it holds there, an exact linearisation with the data-derived big-M :math:`\bar n_{j,g}`, the
    job's largest count of the type:

    .. math::
       q &\le \bar n_{j,g}\, y                                 &&\text{(held_only_if_holds)} \\
       q &\le \textstyle\sum_{h\in g} n_h z_{j,h}              &&\text{(held_at_most_count)} \\
       q &\ge \textstyle\sum_{h\in g} n_h z_{j,h} - \bar n_{j,g} (1 - y)  &&\text{(held_whole_count)} \\
       u_{j,b,g,k} &\le H\, q_{j,b,g,k}                        &&\text{(runs_on_held)}

    The GPUs held, not the GPU-hours, fit each tier's capacity (``define_capacity``)."""
    H, jobs = form.data.bucket_hours, form.jobs
    count = {(j, g): gpus_chosen(m.job[j], jobs[j], g) for j in m.J for g in sorted({hw.gpu for hw in jobs[j].hardware})}
    nmax_g = {(j, g): max(hw.count for hw in jobs[j].hardware if hw.gpu == g) for (j, g) in count}
    m.holds = pyo.Var(m.U, domain=pyo.Binary)
    m.held = pyo.Var(m.U, domain=pyo.NonNegativeReals)
    m.held_only_if_holds = pyo.Constraint(m.U, rule=lambda m, j, b, g, k: m.held[j, b, g, k] <= nmax_g[j, g] * m.holds[j, b, g, k])
    m.held_at_most_count = pyo.Constraint(m.U, rule=lambda m, j, b, g, k: m.held[j, b, g, k] <= count[j, g])
    m.held_whole_count = pyo.Constraint(m.U, rule=lambda m, j, b, g, k: m.held[j, b, g, k]
                                        >= count[j, g] - nmax_g[j, g] * (1 - m.holds[j, b, g, k]))
    m.runs_on_held = pyo.Constraint(m.U, rule=lambda m, j, b, g, k: m.gpu_hours[j, b, g, k] <= H * m.held[j, b, g, k])


def define_tier_fit(m: pyo.ConcreteModel, form: PortfolioFormulation, index: ScheduleIndex) -> None:
    r"""Valid tightening: on-demand and spot availability :math:`A_{g,b,k}` is data, so a tier is
    used only by the counts that fit it (the LP relaxation then cannot spread a big job thinly),
    on every on-demand and spot key (``m.TIERED``):

    .. math::
       u_{j,b,g,k} \le H \sum_{h \in g:\ n_h \le A_{g,b,k}} n_h z_{j,h}       \qquad\text{(fits_tier)}"""
    pd_, jobs = form.data, form.jobs
    H = pd_.bucket_hours

    def fits_tier(m, j, b, g, k):
        avail = pd_.od_avail[g][b] if k == "on_demand" else pd_.spot_avail[g][b]
        fd, blk = jobs[j], m.job[j]
        return m.gpu_hours[j, b, g, k] <= H * sum(fd.hardware[h].count * blk.hardware_chosen[h] for h in blk.H
                                                   if fd.hardware[h].gpu == g and fd.hardware[h].count <= avail)

    m.TIERED = pyo.Set(initialize=[key for key in index.keys if key[3] != "reserved"], dimen=4)
    m.fits_tier = pyo.Constraint(m.TIERED, rule=fits_tier)


def define_lead_time(m: pyo.ConcreteModel, form: PortfolioFormulation, index: ScheduleIndex) -> None:
    r"""GPU work starts at a bucket boundary once the recipe's lead time (labels, teacher) has
    passed; a job may pause between buckets (it checkpoints). In each bucket of the window where
    some recipe's lead time has not passed (``m.LEAD``), with :math:`n^{max}_j H` the data-derived
    big-M (a job never holds more than its largest count):

    .. math::
       \sum_{g,k} u_{j,b,g,k} \le H\, n^{max}_j \big(1 - \sum_{r:\ \mathrm{lead}_r > (b - b^{rel}_j) H} x_{j,r}\big)
       \qquad\text{(after_lead_time)}"""
    pd_, jobs, by_jb = form.data, form.jobs, index.by_jb
    H = pd_.bucket_hours
    lead_rows = []
    late: dict = {}
    for j, fd in enumerate(jobs):
        rel = pd_.portfolio.jobs[j].release_bucket
        for b in pd_.window(j):
            rs = [r for r, rc in enumerate(fd.recipes) if form.evaluators[j].recipe(rc).lead_hours > (b - rel) * H * (1 + LEAD_TOLERANCE)]
            if rs and (j, b) in by_jb:  # a bucket with no tier (reserved GPUs not yet there) holds no work anyway
                late[j, b] = rs
                lead_rows.append((j, b))
    nmax = {j: max(hw.count for hw in fd.hardware) for j, fd in enumerate(jobs)}
    m.LEAD = pyo.Set(initialize=lead_rows, dimen=2)
    m.after_lead_time = pyo.Constraint(m.LEAD, rule=lambda m, j, b: sum(m.gpu_hours[key] for key in by_jb[j, b])
                                       <= H * nmax[j] * (1 - sum(m.job[j].recipe_chosen[r] for r in late[j, b])))


def define_capacity(m: pyo.ConcreteModel, form: PortfolioFormulation, index: ScheduleIndex) -> None:
    r"""The GPUs the jobs hold at once fit each tier in each bucket (``m.CAP``: the (b, g, k) any
    job may use):

    .. math::
       \sum_j q_{j,b,g,res} \le R_g \ \text{or, with later starts,}\ \nu_g \sum_{s + L_g \le b} x_{g,s}, \quad
       \sum_j q_{j,b,g,od} \le A^{od}_{g,b}, \quad
       \sum_j q_{j,b,g,spot} \le A^{s}_{g,b}                                    \qquad\text{(capacity)}

    A job holds the GPUs of every tier it uses in a bucket from the start of the bucket, so the
    schedule replays as it is (``planopt.portfolio.replay``), with each job running ``u / n``
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
    its start, used or not; on-demand and spot GPUs for the hours a job runs on them:

    .. math::
       \mathrm{cost} = \sum_g R_g\, p^{res}_g\, C_g + \sum_{g,s} \nu_g\, p^{res}_g\, C_{g,s}\, x_{g,s}
       + \sum u\,p^{od} + \sum u\,p^{s}
       + \sum_j \big(\mathrm{noncompute}_j + \eta_j \textstyle\sum (o^s - o)\, s\big)   \qquad\text{(cost_usd)}

    (the first sum over the types without later starts), and the objective is
    :math:`\mathrm{cost} + 10^{-6} \sum b\, u` (``EARLIER_USD`` per GPU-hour and bucket index), so
    that ties go to the earliest bucket; reported costs leave it out. A job's share
    (``job_cost_usd``) prices its reserved GPU-hours at the reservation rate; the shares sum to at
    most ``cost_usd`` (the reserved GPUs of a type cover, bucket by bucket, the reserved GPU-hours
    of all jobs)."""
    pd_, keys = form.data, index.keys
    later = later_start_types(pd_)
    price = {"on_demand": pd_.od_price, "spot": pd_.spot_price}
    m.job_cost_usd = pyo.Expression(m.J, rule=lambda m, jj: m.job[jj].portfolio_noncompute_usd + sum(
        (pd_.reserved_price[g] if k == "reserved" else price[k][g][b]) * m.gpu_hours[j, b, g, k]
        for (j, b, g, k) in index.by_j.get(jj, [])))
    m.reserved_usd = pyo.Expression(expr=sum(pd_.reserved_price[g] * pd_.committed_hours[g] * m.reserved[g] for g in m.G
                                             if g not in later)
                                    + sum(pd_.reserved_price[g] * pd_.committed_hours_from[g][s] * pd_.node_gpus[g]
                                          * m.contract_nodes[g, s] for (g, s) in m.GS))
    m.on_demand_usd = pyo.Expression(expr=sum(price["on_demand"][g][b] * m.gpu_hours[j, b, g, k] for (j, b, g, k) in keys if k == "on_demand"))
    m.spot_usd = pyo.Expression(expr=sum(price["spot"][g][b] * m.gpu_hours[j, b, g, k] for (j, b, g, k) in keys if k == "spot"))
    m.noncompute_usd = pyo.Expression(expr=sum(m.job[j].portfolio_noncompute_usd for j in m.J))
    m.cost_usd = pyo.Expression(expr=m.reserved_usd + m.on_demand_usd + m.spot_usd + m.noncompute_usd)
    m.lateness = pyo.Expression(expr=sum(b * m.gpu_hours[j, b, g, k] for (j, b, g, k) in keys))
    m.objective = pyo.Objective(expr=m.cost_usd + EARLIER_USD * m.lateness, sense=pyo.minimize)


def define_budget(m: pyo.ConcreteModel, form: PortfolioFormulation) -> None:
    r"""The total spend cap, when the portfolio has one: :math:`\mathrm{cost} \le \mathrm{budget\_usd}` (``budget``)."""
    budget = form.data.portfolio.budget_usd
    if budget is not None:
        m.budget = pyo.Constraint(expr=m.cost_usd <= budget)


def define_symmetry_breaking(m: pyo.ConcreteModel, form: PortfolioFormulation) -> None:
    r"""Identical jobs (the same instance, release and deadline; ``m.SYM``: consecutive pairs of
    each group) take their plans in order of a lexicographic plan key
    :math:`\kappa_j = \sum_h h\,|R||I|\, z_{j,h} + \sum_r r\,|I|\, x_{j,r} + \sum_\tau \tau\, w_{j,\tau}`:

    .. math::
       \kappa_a \le \kappa_b \qquad \text{(identical_jobs_ordered)}"""
    pd_, jobs = form.data, form.jobs
    groups: dict = {}
    for j, inst in enumerate(pd_.instances):
        job = pd_.portfolio.jobs[j]
        key = (inst.model_dump_json(exclude={"name"}), job.release_bucket, job.deadline_bucket)
        groups.setdefault(key, []).append(j)
    pairs = [(a, b) for js in groups.values() for a, b in zip(js, js[1:])]
    m.SYM = pyo.Set(initialize=pairs, dimen=2)

    def plan_key(blk, fd):
        nR, nI = len(fd.recipes), len(fd.intervals)
        return (sum(h * nR * nI * blk.hardware_chosen[h] for h in blk.H) + sum(r * nI * blk.recipe_chosen[r] for r in blk.R)
                + sum(i * blk.interval_chosen[i] for i in blk.I))

    m.identical_jobs_ordered = pyo.Constraint(m.SYM, rule=lambda m, a, b: plan_key(m.job[a], jobs[a]) <= plan_key(m.job[b], jobs[b]))


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
                + sum(price[k][g][b] * m.gpu_hours[j, b, g, k] for (j, b, g, k) in keys if k != "reserved")
                + sum(multipliers[b, g, k] * m.held[j, b, g, k] for (j, b, g, k) in keys if multipliers.get((b, g, k), 0.0) > 0))

    m.job_share_usd = pyo.Expression(m.JSHARE, rule=share)
    m.job_share_floor = pyo.Constraint(m.JSHARE, rule=lambda m, j: m.job_share_usd[j] >= floors[j])
