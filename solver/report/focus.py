"""A plan's planned charges as FOCUS rows (the FinOps Foundation's FinOps Open Cost and Usage Specification,
version 1.0: the columns of its cost and usage dataset, https://focus.finops.org): ``planopt solve FILE --out
spend.csv --format focus``.

The charges are the plan's spend timeline (``models/cost/spend.py``, the one the report's budget and alert lines
read), split into UTC days: one row per charge and per day, ``ChargePeriodStart``/``End`` the day from the plan's
start date (``--start-date``), ``BillingPeriodStart``/``End`` the calendar month that holds it. The costs of a row
are the plan's own numbers, so ``BilledCost`` = ``EffectiveCost`` = ``ListCost`` = ``ContractedCost`` (planopt
prices each offer at one price; no discount or amortisation is planned). ``PricingCategory`` is ``Standard`` for an
on-demand GPU and every other line, ``Dynamic`` for spot GPUs (``hardware.pricing``). GPU rows carry their GPU-hours
as ``ConsumedQuantity``/``PricingQuantity`` (unit ``GPU-Hours``) and the price per GPU-hour; ``Tags`` is a JSON
object of the instance's ``labels`` (``job`` defaults to the instance's name). The report's budget and alert lines
are not in the file: FOCUS 1.0 has no place for a plan's metadata.
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
}
GPU_LINES = ("compute", "evaluation")
NOT_A_PROVIDER = "unspecified"   # a GPU priced without a provider of the price catalog (a price of the instance's own)


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
        stages.append({"gpu": hw.gpu, "count": hw.total_count, "provider": getattr(option, "provider", None),
                       "region": getattr(option, "region", None),
                       "usd_per_gpu_hour": ev.hardware(hw).usd_per_hour_of_gpus / hw.total_count})
    return {"name": inst.name, "tags": tags, "team": labels.team, "stages": stages,
            "spot": inst.hardware.pricing == "spot"}


def charge_row(ctx: dict[str, Any], charge: Charge, day: dt.date, usd: float) -> dict[str, Any]:
    """One FOCUS row: ``usd`` of ``charge`` on ``day`` (the module's docstring)."""
    service, category, resource_type = SERVICES[charge.component]
    stage = ctx["stages"][charge.stage - 1] if charge.stage else None
    gpu = charge.component in GPU_LINES and stage is not None
    provider = (stage["provider"] or NOT_A_PROVIDER) if stage else NOT_A_PROVIDER
    where = f"{ctx['name']}/stage{charge.stage}" if charge.stage else ctx["name"]
    resource = f"{where}/{stage['count']}x{stage['gpu']}" if gpu else f"{where}/{charge.component}" + (
        f"/{charge.part}" if charge.part else "")
    sku = f"{stage['gpu']}:{'spot' if ctx['spot'] else 'on-demand'}" if gpu else charge.component
    one_time = charge.one_time
    gpu_hours = price = None
    if gpu:  # the GPU-hours this day's money buys at the stage's price (the mean over a split set's two types)
        price = stage["usd_per_gpu_hour"]
        gpu_hours = usd / price
    first, after = _month(day)
    return {
        "AvailabilityZone": None, "BilledCost": usd, "BillingAccountId": f"planopt:{ctx['name']}",
        "BillingAccountName": ctx["name"], "BillingCurrency": "USD",
        "BillingPeriodEnd": _stamp(after), "BillingPeriodStart": _stamp(first),
        "ChargeCategory": "Purchase" if charge.component == "data" else "Usage", "ChargeClass": None,
        "ChargeDescription": f"planned {service.lower()}" + (f" ({charge.part})" if charge.part else "")
                             + (f", stage {charge.stage}" if charge.stage else ""),
        "ChargeFrequency": "One-Time" if one_time else "Usage-Based",
        "ChargePeriodEnd": _stamp(day + dt.timedelta(days=1)), "ChargePeriodStart": _stamp(day),
        "CommitmentDiscountCategory": None, "CommitmentDiscountId": None, "CommitmentDiscountName": None,
        "CommitmentDiscountStatus": None, "CommitmentDiscountType": None,
        "ConsumedQuantity": gpu_hours, "ConsumedUnit": "GPU-Hours" if gpu_hours else None,
        "ContractedCost": usd, "ContractedUnitPrice": price, "EffectiveCost": usd,
        "InvoiceIssuerName": provider, "ListCost": usd, "ListUnitPrice": price,
        "PricingCategory": "Dynamic" if gpu and ctx["spot"] else "Standard",
        "PricingQuantity": gpu_hours, "PricingUnit": "GPU-Hours" if gpu_hours else None,
        "ProviderName": provider, "PublisherName": provider,
        "RegionId": stage["region"] if stage else None, "RegionName": stage["region"] if stage else None,
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


def focus_frame(rows: list[dict[str, Any]]) -> "pd.DataFrame":
    """The rows as a table with every FOCUS 1.0 column, in the specification's order."""
    import pandas as pd
    return pd.DataFrame(rows, columns=list(COLUMNS))


def job_focus_rows(inst, plan, start: dt.date, charges: Optional[list[Charge]] = None) -> list[dict[str, Any]]:
    """One job's FOCUS rows from ``start`` (its charges: ``spend.plan_charges``, computed when not given)."""
    from planopt.models.cost.spend import plan_charges
    return focus_rows([(job_context(inst, plan), plan_charges(inst, plan) if charges is None else charges)], start)

