"""A plan's planned charges as FOCUS rows (the FinOps Foundation's FinOps Open Cost and Usage Specification,
version 1.0: the columns of its cost and usage dataset, https://focus.finops.org): ``planopt solve FILE --out
spend.csv --format focus``.

The charges are the plan's spend timeline (``models/cost/spend.py``, the one the report's budget and alert lines
read), split into UTC days: one row per charge and per day, ``ChargePeriodStart``/``End`` the day from the plan's
start date (``--start-date``), ``BillingPeriodStart``/``End`` the calendar month that holds it. The costs of a row
are the plan's own numbers, so ``BilledCost`` = ``EffectiveCost`` = ``ListCost`` = ``ContractedCost`` (planopt
prices each offer at one price; no discount or amortisation is planned). ``PricingCategory`` is ``Standard`` for an
on-demand GPU and every other line, ``Dynamic`` for spot GPUs (``hardware.pricing``). GPU rows carry their GPU-hours
as ``ConsumedQuantity``/``PricingQuantity`` (unit ``GPU-Hours``) and the price per GPU-hour; ``ProviderName`` and ``RegionName``
are the entry's provider, else those of the catalog offer its GPUs are bought from (``hardware.offer_of``: the shipped
catalog's or ``hardware.price_catalog``'s), else ``unspecified``; ``Tags`` is a JSON
object of the instance's ``labels`` (``job`` defaults to the instance's name). The report's budget and alert lines
are not in the file: FOCUS 1.0 has no place for a plan's metadata.

A portfolio (``portfolio_focus_rows``; day 0 is bucket 0's first day): each job's GPU-hours in each (bucket, tier)
at that bucket's on-demand (``Standard``) or spot (``Dynamic``) price, from the bucket's start; its other lines as
its own plan's timeline, shifted so that training starts at its start bucket (the data bought its lead time
earlier), plus the extra operations and storage of a spot run's longer wall time over its operations window; each
reservation as one ``Purchase`` row per day (``PricingCategory`` ``Committed``, ``CommitmentDiscountType``
``Reservation``), its commitment paid evenly over its committed hours from the bucket it starts in. Reserved
GPU-hours are paid by that commitment, so the jobs have no rows of their own for them (the schedule says which job
used them). The rows sum to the portfolio's cost; ``labels`` of the portfolio give the project and team of every
job whose instance gives none, and ``job`` defaults to the job's name.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import TYPE_CHECKING, Any, Optional

from planopt.models.cost.spend import Charge, daily

if TYPE_CHECKING:
    import pandas as pd

FOCUS_VERSION = "1.0"
# Every column of the FOCUS 1.0 cost and usage dataset, in the specification's (alphabetical) order.
COLUMNS = ("AvailabilityZone", "BilledCost", "BillingAccountId", "BillingAccountName", "BillingCurrency",
           "BillingPeriodEnd", "BillingPeriodStart", "ChargeCategory", "ChargeClass", "ChargeDescription",
           "ChargeFrequency", "ChargePeriodEnd", "ChargePeriodStart", "CommitmentDiscountCategory",
           "CommitmentDiscountId", "CommitmentDiscountName", "CommitmentDiscountStatus", "CommitmentDiscountType",
           "ConsumedQuantity", "ConsumedUnit", "ContractedCost", "ContractedUnitPrice", "EffectiveCost",
           "InvoiceIssuerName", "ListCost", "ListUnitPrice", "PricingCategory", "PricingQuantity", "PricingUnit",
           "ProviderName", "PublisherName", "RegionId", "RegionName", "ResourceId", "ResourceName", "ResourceType",
           "ServiceCategory", "ServiceName", "SkuId", "SkuPriceId", "SubAccountId", "SubAccountName", "Tags")
# Each cost line: its FOCUS ServiceName, ServiceCategory (a value of the specification's list), ResourceType.
SERVICES = {
    "compute": ("GPU compute", "Compute", "GPU cluster"),
    "evaluation": ("GPU compute (evaluation runs)", "Compute", "GPU cluster"),
    "data": ("Training data", "AI and Machine Learning", "Dataset"),
    "storage": ("Checkpoint and log storage", "Storage", "Object storage"),
    "environments": ("Sandboxes", "Compute", "CPU sandbox"),
    "network": ("Network egress", "Networking", "Network"),
    "log_ingest": ("Log ingest", "Management and Governance", "Log index"),
    "operations": ("Operations", "Other", "Team"),
    "forgetting_repair": ("Forgetting repair", "AI and Machine Learning", "Model"),
    "reservation": ("GPU reservation", "Compute", "GPU reservation"),
}
TIERS = ("on_demand", "spot")   # a portfolio's GPU charge names the tier its hours run on (``portfolio/spend.py``)
GPU_LINES = ("compute", "evaluation")
NOT_A_PROVIDER = "unspecified"   # a GPU priced at no catalog offer (a price of the instance's own, or a reference price)


def _stamp(day: dt.date) -> str:
    return f"{day.isoformat()}T00:00:00Z"


def _month(day: dt.date) -> tuple[dt.date, dt.date]:
    first = day.replace(day=1)
    return first, (first + dt.timedelta(days=32)).replace(day=1)


def _gpu_option(inst, key: str):
    """The ``hardware.gpus`` (or ``rollout_gpus``) entry a plan's hardware key names (None: not found)."""
    return next((o for o in (*inst.hardware.gpus, *inst.hardware.rollout_gpus) if o.key == key), None)


def job_context(inst, plan) -> dict[str, Any]:
    """What the rows of one job need beyond its charges: names, tags, and each stage's GPUs."""
    labels = inst.labels
    tags = {k: v for k, v in (("project", labels.project), ("team", labels.team), ("job", labels.job or inst.name)) if v}
    from planopt.models.cost.evaluator import Evaluator
    ev = Evaluator(inst).for_student(plan.student)
    stages = []
    for stage in plan.stages:
        hw = stage.hardware
        option = _gpu_option(inst, hw.gpu)
        offer = ev.hardware(hw).offer   # the catalog offer the training GPUs are bought from (hardware.offer_of)
        provider = getattr(option, "provider", None) or (offer.provider if offer is not None else None)
        region = getattr(option, "region", None) or (offer.region if offer is not None else None)
        stages.append({"gpu": hw.gpu, "count": hw.total_count, "provider": provider, "region": region,
                       "usd_per_gpu_hour": ev.hardware(hw).usd_per_hour_of_gpus / hw.total_count})
    return {"name": inst.name, "tags": tags, "team": labels.team, "stages": stages,
            "spot": inst.hardware.pricing == "spot"}


def charge_row(ctx: dict[str, Any], charge: Charge, day: dt.date, usd: float) -> dict[str, Any]:
    """One FOCUS row: ``usd`` of ``charge`` on ``day`` (the module's docstring)."""
    service, category, resource_type = SERVICES[charge.component]
    stage = ctx["stages"][charge.stage - 1] if charge.stage else None
    gpu = charge.component in GPU_LINES and stage is not None
    provider = (stage["provider"] if stage else ctx.get("provider")) or NOT_A_PROVIDER
    region = stage["region"] if stage else ctx.get("region")
    spot = charge.part == "spot" if charge.part in TIERS else ctx["spot"]   # a portfolio's GPU charge names its tier
    where = f"{ctx['name']}/{stage.get('label', f'stage{charge.stage}')}" if stage else ctx["name"]
    resource = f"{where}/{stage['count']}x{stage['gpu']}" if gpu else f"{where}/{charge.component}" + (
        f"/{charge.part}" if charge.part and not gpu else "")
    sku = f"{stage['gpu']}:{'spot' if spot else 'on-demand'}" if gpu else ctx.get("sku", charge.component)
    one_time = charge.one_time
    gpu_hours = price = None
    if gpu:  # the GPU-hours this day's money buys at the charge's price (the stage's: the mean over a split set's types)
        price = ctx.get("prices", {}).get(charge, stage["usd_per_gpu_hour"])
        gpu_hours = usd / price
    commitment = ctx.get("commitment")
    first, after = _month(day)
    return {
        "AvailabilityZone": None, "BilledCost": usd, "BillingAccountId": f"planopt:{ctx['name']}",
        "BillingAccountName": ctx["name"], "BillingCurrency": "USD",
        "BillingPeriodEnd": _stamp(after), "BillingPeriodStart": _stamp(first),
        "ChargeCategory": "Purchase" if charge.component in ("data", "reservation") else "Usage", "ChargeClass": None,
        "ChargeDescription": f"planned {service.lower()}" + (f" ({charge.part})" if charge.part else "")
                             + (f", stage {charge.stage}" if charge.stage else ""),
        "ChargeFrequency": "One-Time" if one_time else "Recurring" if commitment else "Usage-Based",
        "ChargePeriodEnd": _stamp(day + dt.timedelta(days=1)), "ChargePeriodStart": _stamp(day),
        "CommitmentDiscountCategory": "Usage" if commitment else None, "CommitmentDiscountId": commitment,
        "CommitmentDiscountName": commitment, "CommitmentDiscountStatus": None,
        "CommitmentDiscountType": "Reservation" if commitment else None,
        "ConsumedQuantity": gpu_hours, "ConsumedUnit": "GPU-Hours" if gpu_hours else None,
        "ContractedCost": usd, "ContractedUnitPrice": price, "EffectiveCost": usd,
        "InvoiceIssuerName": provider, "ListCost": usd, "ListUnitPrice": price,
        "PricingCategory": "Committed" if commitment else "Dynamic" if gpu and spot else "Standard",
        "PricingQuantity": gpu_hours, "PricingUnit": "GPU-Hours" if gpu_hours else None,
        "ProviderName": provider, "PublisherName": provider,
        "RegionId": region, "RegionName": region,
        "ResourceId": resource, "ResourceName": resource, "ResourceType": resource_type,
        "ServiceCategory": category, "ServiceName": service, "SkuId": sku, "SkuPriceId": sku,
        "SubAccountId": ctx["team"], "SubAccountName": ctx["team"],
        "Tags": json.dumps(ctx["tags"], sort_keys=True),
    }


def focus_rows(pieces: list[tuple[dict[str, Any], list[Charge]]], start: dt.date) -> list[dict[str, Any]]:
    """The FOCUS rows of ``(context, charges)`` pairs (one per job), day 0 being ``start``, in day order."""
    rows = []
    for ctx, charges in pieces:
        for day, charge, usd in daily(charges):
            rows.append((day, charge_row(ctx, charge, start + dt.timedelta(days=day), usd)))
    rows.sort(key=lambda r: r[0])
    return [row for _, row in rows]


def portfolio_focus_rows(pdata, result, start: dt.date) -> list[dict[str, Any]]:
    """A solved portfolio's FOCUS rows from ``start`` (bucket 0 begins at its first hour): its charges
    (``portfolio/spend.py``, the module's docstring), each job's with its own names and tags, each reservation's as
    one commitment (``PricingCategory`` Committed)."""
    from planopt.portfolio.spend import gang_stages, job_charges, job_instance, reservation_charges
    pieces = []
    for j, js in enumerate(result.jobs):
        charges, prices = job_charges(pdata, result, j)
        ctx = job_context(job_instance(pdata, j, js.name), js.plan)
        ctx.update(name=js.name, spot=False, prices=prices)
        for gang, number in gang_stages(js):   # each gang's pool (a rollout set's or a teacher's after the stages)
            entry = {"gpu": gang.gpu_type or gang.pool, "count": gang.count,
                     "provider": None if gang.provider == NOT_A_PROVIDER else gang.provider, "region": gang.region,
                     "usd_per_gpu_hour": None, "label": f"stage{number}" if gang.role == "training" else
                     (f"stage{gang.stage + 1}-{gang.role}" if gang.stage is not None else gang.role.replace("_", "-"))}
            while len(ctx["stages"]) < number:
                ctx["stages"].append(dict(entry))
            ctx["stages"][number - 1].update({k: v for k, v in entry.items() if k != "usd_per_gpu_hour"})
        pieces.append((ctx, charges))
    labels = pdata.portfolio.labels
    tags = {k: v for k, v in (("project", labels.project), ("team", labels.team)) if v}
    for row, charge in reservation_charges(result):
        name = f"{result.name}/{row['gpu']}/reserved-from-bucket-{row['start_bucket']}"
        pieces.append(({"name": result.name, "tags": tags, "team": labels.team, "stages": [], "spot": False,
                        "region": row["region"], "provider": None if row["provider"] == NOT_A_PROVIDER else row["provider"],
                        "commitment": name, "sku": f"{row['gpu']}:reserved:{row['term']}"}, [charge]))
    return focus_rows(pieces, start)


def focus_frame(rows: list[dict[str, Any]]) -> "pd.DataFrame":
    """The rows as a table with every FOCUS 1.0 column, in the specification's order."""
    import pandas as pd
    return pd.DataFrame(rows, columns=list(COLUMNS))


def job_focus_rows(inst, plan, start: dt.date, charges: Optional[list[Charge]] = None) -> list[dict[str, Any]]:
    """One job's FOCUS rows from ``start`` (its charges: ``spend.plan_charges``, computed when not given)."""
    from planopt.models.cost.spend import plan_charges
    return focus_rows([(job_context(inst, plan), plan_charges(inst, plan) if charges is None else charges)], start)

