"""A solved portfolio's planned spend over time, the one timeline its FOCUS rows (``report/focus.py``) and its
budget and alert lines both read (``models/cost/spend.py`` for one job's).

Hour 0 is bucket 0's start. Each job: its GPU-hours in each (bucket, tier) at that bucket's on-demand or spot
price, from the bucket's start for as long as its gang holds them there; its other lines as its own plan's timeline
(``spend.plan_charges``, GPU lines left out), shifted so that training starts at its start bucket (the data bought
its lead time earlier, never before hour 0), plus the extra operations and storage of a spot run's longer wall time
over its operations window. Each reservation: its commitment paid evenly over its committed hours from the bucket
it starts in; the reserved GPU-hours the jobs use are paid by it, so they are no charge of their own. The charges
sum to the portfolio's cost (reserved commitment + on-demand + spot + the jobs' other lines).
"""

from __future__ import annotations

from typing import Any, Optional

from planopt.models.cost.spend import Charge, plan_charges, shifted, spend_lines

TIERS = ("on_demand", "spot")   # the tiers whose GPU-hours are charged as used
GPU_LINES = ("compute", "evaluation")


def job_instance(pdata, j: int, name: str):
    """Job ``j``'s instance with its labels completed: project and team from the portfolio's where it gives none,
    job from its name."""
    inst, own = pdata.instances[j], pdata.instances[j].labels
    return inst.model_copy(update={"labels": own.model_copy(update={
        "project": own.project or pdata.portfolio.labels.project, "team": own.team or pdata.portfolio.labels.team,
        "job": own.job or name})})


def job_charges(pdata, result, j: int) -> tuple[list[Charge], dict[Charge, float]]:
    """Job ``j``'s charges (the module's docstring) and each GPU charge's price per GPU-hour."""
    js = result.jobs[j]
    bh = result.bucket_hours
    offset = max(0.0, (js.start_bucket or 0) * bh - js.metrics.hours_breakdown["data_lead_time"])
    rest = [c for c in shifted(plan_charges(pdata.instances[j], js.plan), offset) if c.component not in GPU_LINES]
    gpu, prices = [], {}
    for gang, stage in gang_stages(js):
        for (b, tier), gpu_hours in sorted(gang.gpu_hours.items()):
            if tier in TIERS:
                price = result.bucket_price[tier][gang.pool][b]
                charge = Charge("compute", stage, b * bh, b * bh + gpu_hours / gang.count, gpu_hours * price, tier)
                prices[charge] = price
                gpu.append(charge)
    extra = js.noncompute_usd - sum(c.usd for c in rest)   # a spot run's longer wall: more operations and storage
    if extra:
        ops = [c for c in rest if c.component == "operations"]
        start, end = (ops[0].start_hour, ops[0].end_hour) if ops else (offset, offset)
        rest.append(Charge("operations", None, start, end, extra, "spot overhead"))
    return gpu + rest, prices


def gang_stages(js) -> list[tuple[Any, int]]:
    """Each gang of a job with the 1-based number its GPU charges carry (``Charge.stage``): a stage's training GPUs
    the stage's own, a rollout set's and a teacher's the numbers after the plan's stages, in gang order."""
    extra = len(js.plan.stages)
    out = []
    for gang in js.gangs:
        if gang.role == "training":
            out.append((gang, gang.stage + 1))
        else:
            extra += 1
            out.append((gang, extra))
    return out


def reservation_charges(result) -> list[tuple[dict[str, Any], Charge]]:
    """Each reservation's procurement row and its commitment as one charge over its committed hours."""
    out = []
    for row in result.procurement_rows():
        if row["tier"] == "reserved" and row["commitment_usd"]:
            start = row["start_bucket"] * result.bucket_hours
            out.append((row, Charge("reservation", None, start, start + row["committed_hours"], row["commitment_usd"],
                                    f"{row['gpus']}x{row['gpu']}")))
    return out


def portfolio_charges(pdata, result) -> list[Charge]:
    """Every planned charge of the portfolio: the jobs' and the reservations'."""
    charges = [c for j in range(len(result.jobs)) for c in job_charges(pdata, result, j)[0]]
    return charges + [c for _, c in reservation_charges(result)]


def portfolio_spend(pdata, result, budget_usd: Optional[float]) -> dict[str, Any]:
    """The portfolio's budget and alert lines (``spend.spend_lines``; ``alert_share`` from the portfolio)."""
    return spend_lines(portfolio_charges(pdata, result), budget_usd, pdata.portfolio.alert_share)
