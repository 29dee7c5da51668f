"""The FOCUS 1.0 rules the export is held to, encoded from the specification (https://focus.finops.org, version
1.0) and the rule set of the FinOps Foundation's validator (PyPI ``focus-validator`` 1.0.0, its ``1.0`` version
set: each column's presence, type, nullability and allowed values).

The validator itself is not run: its only release pins ``numpy<2`` and ``pandas<3``, which would hold every install
of the tests to numpy 1 and pandas 2, below the numpy 2 and pandas 3 the project runs on; so its rules are encoded
here instead, with the specification's conditional rules (the "MUST be null when ..." of each column).
"""

from __future__ import annotations

import datetime as dt
import json
import math

# Every column of the 1.0 dataset (the validator's ``*_Required`` rules, by the names of the final 1.0 release).
REQUIRED = ("AvailabilityZone", "BilledCost", "BillingAccountId", "BillingAccountName", "BillingCurrency",
            "BillingPeriodEnd", "BillingPeriodStart", "ChargeCategory", "ChargeClass", "ChargeDescription",
            "ChargeFrequency", "ChargePeriodEnd", "ChargePeriodStart", "CommitmentDiscountCategory",
            "CommitmentDiscountId", "CommitmentDiscountName", "CommitmentDiscountStatus", "CommitmentDiscountType",
            "ConsumedQuantity", "ConsumedUnit", "ContractedCost", "ContractedUnitPrice", "EffectiveCost",
            "InvoiceIssuerName", "ListCost", "ListUnitPrice", "PricingCategory", "PricingQuantity", "PricingUnit",
            "ProviderName", "PublisherName", "RegionId", "RegionName", "ResourceId", "ResourceName", "ResourceType",
            "ServiceCategory", "ServiceName", "SkuId", "SkuPriceId", "SubAccountId", "SubAccountName", "Tags")
NOT_NULL = ("BilledCost", "BillingAccountId", "BillingCurrency", "BillingPeriodEnd", "BillingPeriodStart",
            "ChargeCategory", "ChargeFrequency", "ChargePeriodEnd", "ChargePeriodStart", "ContractedCost",
            "EffectiveCost", "InvoiceIssuerName", "ListCost", "ProviderName", "PublisherName", "ServiceCategory",
            "ServiceName")
DECIMAL = ("BilledCost", "ConsumedQuantity", "ContractedCost", "ContractedUnitPrice", "EffectiveCost", "ListCost",
           "ListUnitPrice", "PricingQuantity")
DATETIME = ("BillingPeriodEnd", "BillingPeriodStart", "ChargePeriodEnd", "ChargePeriodStart")
ENUMS = {
    "ChargeCategory": {"Usage", "Purchase", "Tax", "Credit", "Adjustment"},
    "ChargeClass": {"Correction"},
    "ChargeFrequency": {"One-Time", "Recurring", "Usage-Based"},
    "CommitmentDiscountCategory": {"Spend", "Usage"},
    "CommitmentDiscountStatus": {"Used", "Unused"},
    "PricingCategory": {"Standard", "Dynamic", "Committed", "Other"},
    "ServiceCategory": {"AI and Machine Learning", "Analytics", "Business Applications", "Compute", "Databases",
                        "Developer Tools", "Multicloud", "Identity", "Integration", "Internet of Things",
                        "Management and Governance", "Media", "Migration", "Mobile", "Networking", "Security",
                        "Storage", "Web", "Other"},
}


def _null(v) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def _stamp(v: str) -> dt.datetime:
    assert isinstance(v, str) and v.endswith("Z"), v  # UTC, ISO 8601
    return dt.datetime.fromisoformat(v.replace("Z", "+00:00"))


def violations(rows: list[dict]) -> list[str]:
    """Every broken rule, one line each naming the row and the column (empty: the rows conform)."""
    out = []
    if not rows:
        return out
    missing = [c for c in REQUIRED if c not in rows[0]]
    if missing:
        return [f"missing columns: {missing}"]
    for n, r in enumerate(rows):
        bad = lambda column, why: out.append(f"row {n}: {column}: {why} (got {r[column]!r})")  # noqa: E731
        for c in NOT_NULL:
            if _null(r[c]):
                bad(c, "must not be null")
        for c in DECIMAL:
            if not _null(r[c]) and not (isinstance(r[c], (int, float)) and math.isfinite(r[c])):
                bad(c, "must be a decimal")
        for c, allowed in ENUMS.items():
            if not _null(r[c]) and r[c] not in allowed:
                bad(c, f"must be one of {sorted(allowed)}")
        if not (isinstance(r["BillingCurrency"], str) and len(r["BillingCurrency"]) == 3 and r["BillingCurrency"].isupper()):
            bad("BillingCurrency", "must be an ISO 4217 currency code")
        start, end = _stamp(r["ChargePeriodStart"]), _stamp(r["ChargePeriodEnd"])
        bstart, bend = _stamp(r["BillingPeriodStart"]), _stamp(r["BillingPeriodEnd"])
        if not start < end:
            bad("ChargePeriodEnd", "must be after ChargePeriodStart")
        if not (bstart <= start and end <= bend):
            bad("ChargePeriodStart", "the charge period must lie in the billing period")
        if not _null(r["Tags"]):
            tags = json.loads(r["Tags"])
            if not isinstance(tags, dict) or not all(isinstance(v, str) for v in tags.values()):
                bad("Tags", "must be a JSON object of strings")
        # the specification's conditional rules
        if r["ChargeCategory"] in ("Usage", "Purchase") and _null(r["PricingCategory"]):
            bad("PricingCategory", "must not be null for a Usage or Purchase charge")
        if r["ChargeCategory"] != "Usage" and not _null(r["ConsumedQuantity"]):
            bad("ConsumedQuantity", "must be null when ChargeCategory is not Usage")
        if r["ChargeCategory"] == "Purchase" and r["ChargeFrequency"] == "Usage-Based":
            bad("ChargeFrequency", "a Purchase is not Usage-Based")
        if _null(r["PricingQuantity"]) != _null(r["PricingUnit"]):
            bad("PricingUnit", "is null exactly when PricingQuantity is")
        if _null(r["ConsumedQuantity"]) != _null(r["ConsumedUnit"]):
            bad("ConsumedUnit", "is null exactly when ConsumedQuantity is")
        if _null(r["CommitmentDiscountId"]) != _null(r["CommitmentDiscountStatus"]) and r["ChargeCategory"] == "Usage":
            bad("CommitmentDiscountStatus", "is given exactly when a commitment discount applies to a Usage row")
        if _null(r["SkuPriceId"]) and r["ChargeCategory"] in ("Usage", "Purchase"):
            bad("SkuPriceId", "must not be null for a Usage or Purchase charge")
    return out
