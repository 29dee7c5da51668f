"""Importing a team's own prices into the price-file format of ``prices.json`` (``planopt catalog import``).

Two formats:

- ``skypilot``: a SkyPilot catalog ``vms.csv`` (skypilot-org/skypilot-catalog, ``catalogs/v7/CLOUD/vms.csv``; its
  README names the columns). Read by name, in any order: ``InstanceType``, ``AcceleratorName``, ``AcceleratorCount``,
  ``Price`` and ``Region`` are required, ``SpotPrice`` and ``AvailabilityZone`` optional (Lambda's file has no
  zones and empty spot prices). Each GPU row gives an on-demand row (``Price / AcceleratorCount`` per GPU) and,
  where ``SpotPrice`` is given, a spot row. Rows without an accelerator (CPU instances) are skipped. The file names
  neither its cloud nor its date, so the provider (``--provider``) and the date (``--as-of``) are given; its
  ``node_gpus`` is the instance's ``AcceleratorCount``, and, since the file does not say how nodes are linked, its
  ``interconnect`` is ``ethernet`` (one node per job, the cautious reading) unless ``--interconnect`` names the link.
- ``rates``: a plain negotiated-rate CSV with the columns ``RATES_COLUMNS`` (``provider_kind`` optional: a provider of
  the shipped catalog keeps its kind).

Rows whose accelerator is not a catalog GPU (``find_gpu``: unknown, or a shorthand such as SkyPilot's ``A100`` that
could be either A100) are listed, never guessed. Where several rows give one (provider, region, GPU, tier), as the
zones of a region or the 1-, 2-, 4- and 8-GPU instances of one GPU do, the lowest price per GPU is kept and the
others counted. A missing column, or a price that is not a positive number, is one ValueError naming the column and
the row.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from planopt.models.catalog import CatalogLookupError, find_gpu
from planopt.models.catalog.prices import PROVIDER_KINDS, TIERS, load_prices

FORMATS = ("skypilot", "rates")
SKYPILOT_REQUIRED = ("InstanceType", "AcceleratorName", "AcceleratorCount", "Price", "Region")
RATES_COLUMNS = ("provider", "region", "gpu", "tier", "usd_per_gpu_hour", "node_gpus", "interconnect", "as_of", "source")
CAUTIOUS_INTERCONNECT = "ethernet"   # prices.py: an ethernet offer holds one-node plans only


@dataclass
class Imported:
    """The rows of a price file, the rows left out and why."""

    prices: list[dict]
    unmapped: list[dict] = field(default_factory=list)    # {"row", "accelerator", "reason"}
    merged: int = 0          # rows dropped for a lower price of the same (provider, region, GPU, tier)
    skipped: int = 0         # rows without an accelerator


def _read(path: Path, required: tuple[str, ...]) -> list[dict]:
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            header = reader.fieldnames or []
            missing = [c for c in required if c not in header]
            if missing:
                raise ValueError(f"{path.name}: column {missing[0]!r} is missing (expected the columns "
                                 f"{', '.join(required)})")
            return list(reader)
    except UnicodeDecodeError:
        raise ValueError(f"{path.name}: not a UTF-8 CSV file") from None


def _number(row: dict, column: str, n: int, name: str, positive: bool = True) -> float:
    text = (row.get(column) or "").strip()
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value == value or value in (float("inf"), float("-inf")) or value < 0 or (positive and value == 0):
        raise ValueError(f"{name}: row {n}: column {column!r}: expected a {'positive' if positive else 'non-negative'} "
                         f"number, got {text!r}")
    return value


def _gpu(name: str, n: int, out: Imported) -> Optional[str]:
    try:
        return find_gpu(name).name
    except CatalogLookupError as exc:
        out.unmapped.append({"row": n, "accelerator": name, "reason": str(exc)})
        return None


def provider_kind(provider: str, given: Optional[str]) -> str:
    """The provider's kind: ``given``, else the shipped catalog's; ValueError naming ``--provider-kind``."""
    if given is not None:
        if given not in PROVIDER_KINDS:
            raise ValueError(f"--provider-kind: expected one of {', '.join(PROVIDER_KINDS)}, got {given!r}")
        return given
    known = {r.provider: r.provider_kind for r in load_prices()}
    if provider not in known:
        raise ValueError(f"--provider-kind: {provider!r} is not a provider of the shipped catalog; give its kind "
                         f"(one of {', '.join(PROVIDER_KINDS)})")
    return known[provider]


def import_skypilot(path: Path, provider: str, kind: str, as_of: str, interconnect: str = CAUTIOUS_INTERCONNECT) -> Imported:
    """The price rows of a SkyPilot ``vms.csv`` (see the module's doc)."""
    out = Imported([])
    name = path.name
    for n, row in enumerate(_read(path, SKYPILOT_REQUIRED), start=2):   # row 1 is the header
        accelerator = (row.get("AcceleratorName") or "").strip()
        if not accelerator:
            out.skipped += 1
            continue
        count = _number(row, "AcceleratorCount", n, name)
        price = _number(row, "Price", n, name)
        spot_text = (row.get("SpotPrice") or "").strip()
        spot = _number(row, "SpotPrice", n, name) if spot_text else None
        gpu = _gpu(accelerator, n, out)
        if gpu is None:
            continue
        zone = (row.get("AvailabilityZone") or "").strip()
        where = f"{row['InstanceType']}, {row['Region']}" + (f", {zone}" if zone else "")
        for tier, node_price in (("on_demand", price), ("spot", spot)):
            if node_price is None:
                continue
            out.prices.append({
                "provider": provider, "provider_kind": kind, "region": row["Region"].strip(), "gpu": gpu, "tier": tier,
                "usd_per_gpu_hour": node_price / count, "node_gpus": int(count), "interconnect": interconnect,
                "source": f"{name} row {n} ({where}): {'SpotPrice' if tier == 'spot' else 'Price'} ${node_price:g}"
                          f"/instance / {count:g} GPUs", "as_of": as_of})
    return _lowest(out)


def import_rates(path: Path) -> Imported:
    """The price rows of a negotiated-rate CSV (``RATES_COLUMNS``)."""
    out = Imported([])
    name = path.name
    for n, row in enumerate(_read(path, RATES_COLUMNS), start=2):
        values = {c: (row.get(c) or "").strip() for c in RATES_COLUMNS}
        for column in ("provider", "region", "gpu", "tier", "interconnect", "as_of"):
            if not values[column]:
                raise ValueError(f"{name}: row {n}: column {column!r}: empty")
        if values["tier"] not in TIERS:
            raise ValueError(f"{name}: row {n}: column 'tier': expected one of {', '.join(TIERS)}, got {values['tier']!r}")
        price = _number(row, "usd_per_gpu_hour", n, name)
        node_gpus = _number(row, "node_gpus", n, name)
        if node_gpus != int(node_gpus):
            raise ValueError(f"{name}: row {n}: column 'node_gpus': expected a whole number, got {values['node_gpus']!r}")
        gpu = _gpu(values["gpu"], n, out)
        if gpu is None:
            continue
        try:
            kind = provider_kind(values["provider"], (row.get("provider_kind") or "").strip() or None)
        except ValueError as exc:
            raise ValueError(f"{name}: row {n}: column 'provider_kind': {str(exc).split(': ', 1)[1]}") from None
        source = f"{name} row {n}" + (f": {values['source']}" if values["source"] else "")
        out.prices.append({"provider": values["provider"], "provider_kind": kind, "region": values["region"], "gpu": gpu,
                           "tier": values["tier"], "usd_per_gpu_hour": price, "node_gpus": int(node_gpus),
                           "interconnect": values["interconnect"], "source": source, "as_of": values["as_of"]})
    return _lowest(out)


def _lowest(out: Imported) -> Imported:
    """One row per (provider, region, GPU, tier): the lowest price per GPU (the first such row on a tie)."""
    best: dict[tuple, dict] = {}
    for row in out.prices:
        key = (row["provider"], row["region"], row["gpu"], row["tier"])
        if key not in best or row["usd_per_gpu_hour"] < best[key]["usd_per_gpu_hour"]:
            best[key] = row
    out.merged = len(out.prices) - len(best)
    out.prices = list(best.values())
    return out


def price_file(imported: Imported, source_name: str) -> dict:
    """The ``prices.json`` shape: ``as_of`` (the latest row's date), a ``note`` and the rows."""
    return {"as_of": max((r["as_of"] for r in imported.prices), default=""),
            "note": f"imported by `planopt catalog import` from {source_name}: USD per GPU-hour; each row's source names "
                    f"the file and row it came from",
            "prices": imported.prices}
