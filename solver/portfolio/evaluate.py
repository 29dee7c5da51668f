"""A portfolio schedule re-evaluated outside the MIP, from the single-job evaluator.

Every reported number of a :class:`PortfolioResult` comes from here: ``extract_schedule`` reads
the schedule the model holds (plans, and per gang its spot share and GPU-hours per bucket and tier;
reservations) and ``evaluate_schedule`` prices it and checks it (windows, lead times, the order of a
job's gangs, bundles, gang capacity, the budget) with the evaluator of ``models/cost`` and its gangs
(``models/cost/gangs.py``), so tests hold it against the MIP's own totals (``mip_cost_usd``).
"""

from __future__ import annotations

import pyomo.environ as pyo

from planopt.models.cost.evaluator import Evaluator
from planopt.models.cost.gangs import GangNeed, plan_gangs
from planopt.models.formulation import chosen_plan
from planopt.models.formulation.big_m import big_m_breaches
from planopt.models.formulation.gangs import Gang
from planopt.models.formulation.portfolio import PortfolioFormulation
from planopt.models.schema.plan import Plan
from planopt.models.schema.portfolio import PortfolioData

from planopt.portfolio.result import GangSchedule, JobSchedule, PortfolioResult

BUDGET_RELATIVE_SLACK = 1e-9   # a total over budget_usd by less than this share (plus BUDGET_SLACK_USD) is within it:
BUDGET_SLACK_USD = 1e-6        # the LP's rounding of a schedule that meets the budget row exactly


def over_budget(total_usd: float, budget_usd: float | None) -> bool:
    """``total_usd`` exceeds the total spend cap (None: no cap), beyond the LP's rounding."""
    return budget_usd is not None and total_usd > budget_usd * (1 + BUDGET_RELATIVE_SLACK) + BUDGET_SLACK_USD


GangHours = dict[tuple, tuple[float, dict[tuple[int, str], float]]]   # (stage, role) -> (spot share, (b, k) -> GPU-hours)


def evaluate_schedule(pdata: PortfolioData, plans: list[Plan], schedules: list[GangHours], reserved: dict[str, int],
                      evaluators: list[Evaluator] | None = None, tolerance: float = 1e-6,
                      contracts: dict[str, dict[int, int]] | None = None):
    """Cost and violations of a portfolio schedule, straight from the single-job evaluator and its gangs.

    Returns (jobs: list[JobSchedule], cost_breakdown_usd, violations). ``schedules[j]`` maps each gang of job ``j``
    (``(stage, role)``, ``models/cost/gangs.py``) to its share of compute hours on spot and its GPU-hours per
    (bucket, tier); a gang running on a tier in a bucket holds its whole count there (gang scheduling), so a tier's
    capacity is checked against the GPUs held at once, not against GPU-hours. ``contracts`` (GPU type -> {start
    bucket -> GPUs}) replaces ``reserved`` for the types with ``reserved_start_buckets``: each contract is in force
    from its start plus the lead time and paid for ``committed_hours_from`` of its start."""
    contracts = contracts or {}
    evs = evaluators or [Evaluator(inst) for inst in pdata.instances]
    out, violations = [], []
    used: dict[tuple[int, str, str], float] = {}
    breakdown = {"reserved": sum(pdata.reserved_price[g] * pdata.committed_hours[g] * n for g, n in reserved.items() if g not in contracts)
                 + sum(pdata.reserved_price[g] * pdata.committed_hours_from[g][s] * n for g, c in contracts.items() for s, n in c.items()),
                 "on_demand": 0.0, "spot": 0.0, "noncompute": 0.0}
    for j, (plan, sched) in enumerate(zip(plans, schedules)):
        js = _evaluate_job(pdata, j, plan, sched, evs[j], tolerance, used, breakdown, violations)
        out.append(js)
    for (b, g, k), v in used.items():
        res_cap = pdata.reserved_in_force(g, contracts[g], b) if g in contracts else reserved.get(g, 0)
        cap = {"reserved": res_cap, "on_demand": pdata.od_avail[g][b], "spot": pdata.spot_avail[g][b]}[k]
        if v > cap + tolerance:
            violations.append(f"capacity: {k} {g} in bucket {b}: jobs hold {v:g} GPUs at once > {cap:g}")
    total = sum(breakdown.values())
    budget = pdata.portfolio.budget_usd
    if over_budget(total, budget):
        violations.append(f"budget_usd: {total:,.0f} > {budget:,.0f}")
    return out, breakdown, violations


def _evaluate_job(pdata: PortfolioData, j: int, plan: Plan, sched: GangHours, ev: Evaluator, tolerance: float,
                  used: dict, breakdown: dict, violations: list[str]) -> JobSchedule:
    """Job ``j``'s part of ``evaluate_schedule``: its metrics, its gangs priced and checked, its money."""
    name, job = pdata.names[j], pdata.portfolio.jobs[j]
    metrics = ev.evaluate(plan)
    if not metrics.fits_memory or metrics.violations:
        violations.append(f"{name}: {'; '.join(metrics.violations)}")
    needs = plan_gangs(ev, plan, pdata.preempt)
    keys = [(n.stage, n.role) for n in needs]
    violations += [f"{name}: GPU-hours scheduled for stage {k[0]} {k[1]} GPUs, which its plan does not hold"
                   for k, (_, hours) in sched.items() if k not in keys and any(v > tolerance for v in hours.values())]
    gangs, compute, noncompute, wall, spot_hours, hours_all = [], 0.0, metrics.cost_usd, 0.0, 0.0, 0.0
    for need in needs:
        sigma, hours = sched.get((need.stage, need.role), (0.0, {}))
        for what, got, want in zip(("non-spot", "spot"), _split(hours), need.gpu_hours(sigma)):
            if abs(got - want) > tolerance * max(1.0, want):
                violations.append(f"{name}: {what} GPU-hours of stage {need.stage} {need.role} GPUs scheduled "
                                  f"{got:.6g} != needed {want:.6g}")
        compute += _charge_buckets(pdata, name, job, need, hours, tolerance, used, breakdown, violations)
        noncompute += need.spot_extra_usd(sigma) - need.gpu_usd_at_instance_prices()
        if need.partner is None:
            wall += need.lead_hours + need.train_hours(sigma)
            spot_hours += need.compute_hours * sigma
            hours_all += need.compute_hours
        g = need.gpu
        gangs.append(GangSchedule(need.stage, need.role, g, need.count, sigma,
                                  {key: v for key, v in hours.items() if v > tolerance}, pdata.provider[g],
                                  pdata.region[g], pdata.gpu_type[g]))
    violations += _order_problems(name, needs, gangs) + _bundle_problems(name, needs, gangs, tolerance)
    breakdown["noncompute"] += noncompute
    active = sorted(b for gang in gangs for (b, _) in gang.gpu_hours)
    flat = len(plan.stages) == 1 and not ev.inst.candidate_students
    return JobSchedule(name, plan, metrics, gangs, job.release_bucket, job.deadline_bucket, active[0] if active else None,
                       active[-1] if active else None, compute, noncompute, wall,
                       spot_hours / hours_all if hours_all > 0 else 0.0, flat)


def _split(hours: dict[tuple[int, str], float]) -> tuple[float, float]:
    """(off-spot, spot) GPU-hours of one gang's schedule."""
    return (sum(v for (b, k), v in hours.items() if k != "spot"), sum(v for (b, k), v in hours.items() if k == "spot"))


def _order_problems(name: str, needs: list[GangNeed], gangs: list[GangSchedule]) -> list[str]:
    """A gang that runs before the last bucket of an earlier one (``cost/gangs.py``: they run in order)."""
    out, last = [], None
    for need, gang in zip(needs, gangs):
        if need.partner is not None or not gang.gpu_hours:
            continue
        first = min(b for b, _ in gang.gpu_hours)
        if last is not None and first <= last[0]:
            out.append(f"{name}: stage {need.stage} {need.role} GPUs run in bucket {first}, not after bucket {last[0]} "
                       f"where {last[1]} GPUs run")
        last = (max(b for b, _ in gang.gpu_hours), f"stage {need.stage} {need.role}")
    return out


def _bundle_problems(name: str, needs: list[GangNeed], gangs: list[GangSchedule], tolerance: float) -> list[str]:
    """A rollout gang that does not run with its training gang: the same (bucket, tier) and hours."""
    out = []
    for need, gang in zip(needs, gangs):
        if need.partner is None:
            continue
        lead = gangs[need.partner]
        for key in set(gang.gpu_hours) | set(lead.gpu_hours):
            ours, theirs = gang.gpu_hours.get(key, 0.0) / gang.count, lead.gpu_hours.get(key, 0.0) / lead.count
            if abs(ours - theirs) > tolerance * max(1.0, theirs):
                out.append(f"{name}: stage {need.stage} {need.role} GPUs run {ours:.6g} h in bucket {key[0]} on {key[1]}, "
                           f"their training GPUs {theirs:.6g} h")
    return out


def extract_schedule(m: pyo.ConcreteModel, form: PortfolioFormulation, result: PortfolioResult) -> None:
    """The schedule loaded in the model ``m`` into ``result``: each job's plan (its one-hot groups), each gang's spot
    share and GPU-hours per (bucket, tier), the reservations and contracts, then every cost re-evaluated from them
    (``evaluate_schedule``) and the reserved GPUs' utilisation."""
    d = form.data
    plans, schedules = [], []
    for j, space in enumerate(form.spaces):
        blk = m.job[j]
        plan, stages = chosen_plan(blk, space)
        plans.append(plan)
        schedules.append({(gang.stage, gang.role): _gang_hours(m, j, a, gang) for a, gang in enumerate(form.gangs[j])
                          if _holds_any(gang)})
        result.big_m_breaches += [f"{d.names[j]}: {x}" for s, (r, h) in enumerate(stages)
                                  for x in big_m_breaches(space.slots[s], r, h)]
    reserved = {g: int(round(pyo.value(m.reserved[g]))) for g in m.G}
    result.reserved = reserved
    contracts: dict[str, dict[int, int]] = {}
    for (g, s) in m.GS:
        contracts.setdefault(g, {})[s] = d.node_gpus[g] * int(round(pyo.value(m.contract_nodes[g, s])))
    result.contracts = contracts
    result.jobs, result.cost_breakdown_usd, result.violations = evaluate_schedule(d, plans, schedules, reserved, form.evaluators,
                                                                                   contracts=contracts)
    result.cost_usd = sum(result.cost_breakdown_usd.values())
    H, B = d.bucket_hours, len(d.buckets)
    for g, n in reserved.items():
        usedh = sum(v for js in result.jobs for gang in js.gangs if gang.pool == g
                    for (b, k), v in gang.gpu_hours.items() if k == "reserved")
        # paid-for GPU-hours within the horizon: from bucket 0, or from each contract's start
        paid = n * H * B if g not in contracts else sum(c * H * (B - s) for s, c in contracts[g].items())
        result.utilisation[g] = usedh / paid if paid else None


def _holds_any(gang: Gang) -> bool:
    """Whether the gang's chosen option holds GPUs (a stage its sequence runs, a teacher that is trained)."""
    return any(pyo.value(o.chosen) > 0.5 for o in gang.options)


def _gang_hours(m: pyo.ConcreteModel, j: int, a: int, gang: Gang) -> tuple[float, dict[tuple[int, str], float]]:
    """(spot share of the chosen option's compute hours, GPU-hours per (bucket, tier)) of gang ``a`` of job ``j``."""
    option = next(o for o in gang.options if pyo.value(o.chosen) > 0.5)
    total = sum(t.scale * pyo.value(t.hours) for t in option.terms)
    spot = sum(pyo.value(t.spot) for t in option.terms if t.spot is not None)
    share = min(1.0, max(0.0, spot / total)) if total > 0 else 0.0
    hours = {(b, k): max(0.0, pyo.value(m.gpu_hours[jj, aa, b, gg, k])) for (jj, aa, b, gg, k) in m.U
             if jj == j and aa == a and gg == option.gpu}
    return share, hours


def _charge_buckets(pdata: PortfolioData, name: str, job, need: GangNeed, hours: dict[tuple[int, str], float],
                    tolerance: float, used: dict, breakdown: dict, violations: list[str]) -> float:
    """Compute money of one gang's GPU-hours per (bucket, tier), added to ``breakdown``; the GPUs it holds at once
    added to ``used`` (a running gang holds its whole count); its window, lead-time, reservation-arrival and
    per-bucket hour violations appended to ``violations``."""
    g, n, H, lead = need.gpu, need.count, pdata.bucket_hours, need.lead_hours
    compute = 0.0
    for (b, k), v in hours.items():
        if v <= tolerance:
            continue
        if not (job.release_bucket <= b <= job.deadline_bucket):
            violations.append(f"{name}: runs in bucket {b} outside its window {job.release_bucket}..{job.deadline_bucket}")
        if lead > (b - job.release_bucket) * H * (1 + 1e-12):
            violations.append(f"{name}: runs in bucket {b} before its lead time of {lead:.1f} h has passed")
        if k == "reserved" and b < pdata.reserved_from[g]:
            violations.append(f"{name}: runs on reserved {g} in bucket {b}, before they arrive in bucket {pdata.reserved_from[g]}")
        used[b, g, k] = used.get((b, g, k), 0) + n
        if k == "on_demand":
            breakdown["on_demand"] += v * pdata.od_price[g][b]
            compute += v * pdata.od_price[g][b]
        elif k == "spot":
            breakdown["spot"] += v * pdata.spot_price[g][b]
            compute += v * pdata.spot_price[g][b]
        else:
            compute += v * pdata.reserved_price[g]
    for b in pdata.buckets:
        in_b = sum(v for (bb, k), v in hours.items() if bb == b)
        if in_b > n * H * (1 + tolerance) + tolerance:
            violations.append(f"{name}: {in_b:.6g} GPU-hours in bucket {b} > {n} GPUs × {H:g} h")
    return compute
