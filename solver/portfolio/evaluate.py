"""A portfolio schedule re-evaluated outside the MIP, from the single-job evaluator.

Every reported number of a :class:`PortfolioResult` comes from here: ``extract_schedule`` reads
the schedule the model holds (plans, spot shares, GPU-hours per bucket and tier, reservations)
and ``evaluate_schedule`` prices it and checks it (windows, lead times, gang capacity, the
budget) with the evaluator of ``costs.py``, so tests hold it against the MIP's own totals
(``mip_cost_usd``).
"""

from __future__ import annotations

import pyomo.environ as pyo

from planopt.models.cost.evaluator import Evaluator
from planopt.models.formulation.big_m import big_m_breaches
from planopt.models.formulation.portfolio import PortfolioFormulation, hourly_noncompute_usd, spot_overhead_share
from planopt.models.schema.plan import Plan
from planopt.models.schema.portfolio import PortfolioData

from planopt.portfolio.replay import gpu_hours_needed
from planopt.portfolio.result import JobSchedule, PortfolioResult

BUDGET_RELATIVE_SLACK = 1e-9   # a total over budget_usd by less than this share (plus BUDGET_SLACK_USD) is within it:
BUDGET_SLACK_USD = 1e-6        # the LP's rounding of a schedule that meets the budget row exactly


def over_budget(total_usd: float, budget_usd: float | None) -> bool:
    """``total_usd`` exceeds the total spend cap (None: no cap), beyond the LP's rounding."""
    return budget_usd is not None and total_usd > budget_usd * (1 + BUDGET_RELATIVE_SLACK) + BUDGET_SLACK_USD


def evaluate_schedule(pdata: PortfolioData, plans: list[Plan], spot_shares: list[float],
                      gpu_hours: list[dict[tuple[int, str], float]], reserved: dict[str, int],
                      evaluators: list[Evaluator] | None = None, tolerance: float = 1e-6,
                      contracts: dict[str, dict[int, int]] | None = None):
    """Cost and violations of a portfolio schedule, straight from the single-job evaluator.

    Returns (jobs: list[JobSchedule], cost_breakdown_usd, violations). ``gpu_hours[j]`` maps
    (bucket, tier) to the GPU-hours job ``j`` runs on its plan's GPU type; a job running on a tier
    in a bucket holds its whole GPU count there (gang scheduling), so a tier's capacity is checked
    against the GPUs held at once, not against GPU-hours. ``contracts`` (GPU type -> {start bucket ->
    GPUs}) replaces ``reserved`` for the types with ``reserved_start_buckets``: each contract is in
    force from its start plus the lead time and paid for ``committed_hours_from`` of its start."""
    contracts = contracts or {}
    evs = evaluators or [Evaluator(inst) for inst in pdata.instances]
    out, violations = [], []
    used: dict[tuple[int, str, str], float] = {}
    breakdown = {"reserved": sum(pdata.reserved_price[g] * pdata.committed_hours[g] * n for g, n in reserved.items() if g not in contracts)
                 + sum(pdata.reserved_price[g] * pdata.committed_hours_from[g][s] * n for g, c in contracts.items() for s, n in c.items()),
                 "on_demand": 0.0, "spot": 0.0, "noncompute": 0.0}
    for j, (plan, sigma, hours) in enumerate(zip(plans, spot_shares, gpu_hours)):
        ev, name, job = evs[j], pdata.names[j], pdata.portfolio.jobs[j]
        g = plan.gpu
        metrics = ev.evaluate(plan)
        if not metrics.fits_memory or metrics.violations:
            violations.append(f"{name}: {'; '.join(metrics.violations)}")
        T = sum(ev.compute_hours_by_component(plan.recipe, plan.hardware).values())
        o = ev.hardware(plan.hardware).overhead_share(plan.checkpoint_interval_minutes)
        o_s = spot_overhead_share(ev, plan.hardware, plan.checkpoint_interval_minutes, pdata.preempt[g])
        need_ns, need_s = gpu_hours_needed(ev, plan, sigma, pdata.preempt[g])
        got_ns = sum(v for (b, k), v in hours.items() if k != "spot")
        got_s = sum(v for (b, k), v in hours.items() if k == "spot")
        for what, got, need in (("non-spot", got_ns, need_ns), ("spot", got_s, need_s)):
            if abs(got - need) > tolerance * max(1.0, need):
                violations.append(f"{name}: {what} GPU-hours scheduled {got:.6g} != needed {need:.6g}")
        lead = ev.recipe(plan.recipe).lead_hours
        compute = _charge_buckets(pdata, name, job, plan, hours, lead, tolerance, used, breakdown, violations)
        train_hours = (1 + o) * T * (1 - sigma) + (1 + o_s) * T * sigma
        noncompute = metrics.cost_usd - metrics.cost_breakdown_usd["compute"] - metrics.cost_breakdown_usd["evaluation"] + hourly_noncompute_usd(ev.inst) * (o_s - o) * T * sigma
        breakdown["noncompute"] += noncompute
        active = sorted(b for (b, k), v in hours.items() if v > tolerance)
        out.append(JobSchedule(name, pdata.provider[g], plan, metrics, sigma, {key: v for key, v in hours.items() if v > tolerance},
                               job.release_bucket, job.deadline_bucket, active[0] if active else None,
                               active[-1] if active else None, compute, noncompute, lead + train_hours,
                               pdata.region[g], pdata.gpu_type[g]))
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


def extract_schedule(m: pyo.ConcreteModel, form: PortfolioFormulation, result: PortfolioResult) -> None:
    """The schedule loaded in the model ``m`` into ``result``: each job's plan, spot share and
    GPU-hours per (bucket, tier), the reservations and contracts, then every cost re-evaluated
    from them (``evaluate_schedule``) and the reserved GPUs' utilisation."""
    d = form.data
    plans, shares, hours = [], [], []
    for j, fd in enumerate(form.jobs):
        blk = m.job[j]
        r = next(i for i in blk.R if pyo.value(blk.recipe_chosen[i]) > 0.5)
        h = next(i for i in blk.H if pyo.value(blk.hardware_chosen[i]) > 0.5)
        t = next(i for i in blk.I if pyo.value(blk.interval_chosen[i]) > 0.5)
        plans.append(Plan.of(fd.recipes[r], fd.hardware[h], fd.intervals[t]))
        total = pyo.value(blk.interval_hours[h, t])
        spot = pyo.value(blk.spot_hours[h, t]) if (h, t) in blk.HS else 0.0
        shares.append(min(1.0, max(0.0, spot / total)) if total > 0 else 0.0)
        g = fd.hardware[h].gpu
        hours.append({(b, k): max(0.0, pyo.value(m.gpu_hours[j, b, gg, k])) for (jj, b, gg, k) in m.U if jj == j and gg == g})
        result.big_m_breaches += [f"{d.names[j]}: {x}" for x in big_m_breaches(fd, r, h)]
    reserved = {g: int(round(pyo.value(m.reserved[g]))) for g in m.G}
    result.reserved = reserved
    contracts: dict[str, dict[int, int]] = {}
    for (g, s) in m.GS:
        contracts.setdefault(g, {})[s] = d.node_gpus[g] * int(round(pyo.value(m.contract_nodes[g, s])))
    result.contracts = contracts
    result.jobs, result.cost_breakdown_usd, result.violations = evaluate_schedule(d, plans, shares, hours, reserved, form.evaluators,
                                                                                   contracts=contracts)
    result.cost_usd = sum(result.cost_breakdown_usd.values())
    H, B = d.bucket_hours, len(d.buckets)
    for g, n in reserved.items():
        usedh = sum(v for js in result.jobs if js.plan.gpu == g for (b, k), v in js.gpu_hours.items() if k == "reserved")
        # paid-for GPU-hours within the horizon: from bucket 0, or from each contract's start
        paid = n * H * B if g not in contracts else sum(c * H * (B - s) for s, c in contracts[g].items())
        result.utilisation[g] = usedh / paid if paid else None


# The most jobs one portfolio MIP is asked to plan. It has about 590 variables per job at


def _charge_buckets(pdata: PortfolioData, name: str, job, plan: Plan, hours: dict[tuple[int, str], float], lead: float,
                    tolerance: float, used: dict, breakdown: dict, violations: list[str]) -> float:
    """Compute money of one job's GPU-hours per (bucket, tier), added to ``breakdown``; the GPUs it holds at once
    added to ``used`` (a running job holds its whole count: gang); its window, lead-time, reservation-arrival and
    per-bucket hour violations appended to ``violations``."""
    g, n, H = plan.gpu, plan.gpu_count, pdata.bucket_hours
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
