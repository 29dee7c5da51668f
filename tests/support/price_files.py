"""Price files for tests: rows in the format of ``models/catalog/prices.json`` (``hardware.price_catalog``)."""

from __future__ import annotations

import json
import random
from pathlib import Path

# A few providers of the kinds the catalog knows, each with the node size and link its rows carry.
PROVIDERS = (("acme", "gpu_cloud", 8, "infiniband"), ("bazaar", "marketplace", 1, "ethernet"),
             ("colo", "hyperscaler", 2, "ethernet"))


def price_row(provider: str, kind: str, gpu: str, tier: str, usd: float, node_gpus: int, interconnect: str,
              region: str = "r1") -> dict:
    """One row of a price file, with a source and a date."""
    return {"provider": provider, "provider_kind": kind, "region": region, "gpu": gpu, "tier": tier,
            "usd_per_gpu_hour": usd, "node_gpus": node_gpus, "interconnect": interconnect,
            "source": f"test row {provider} {gpu} {tier}", "as_of": "2026-12-01"}


def random_price_rows(rng: random.Random, gpus: list[str]) -> list[dict]:
    """Rows of two or three providers for each GPU type, on demand and (mostly) spot below it, each provider
    with its own node size and link (so which offer holds a count, and which is cheapest, varies)."""
    rows = []
    for gpu in gpus:
        for provider, kind, node, link in rng.sample(PROVIDERS, rng.choice([2, 3])):
            od = round(rng.uniform(0.5, 6.0), 3)
            rows.append(price_row(provider, kind, gpu, "on_demand", od, node, link))
            if rng.random() < 0.8:
                rows.append(price_row(provider, kind, gpu, "spot", round(od * rng.uniform(0.2, 0.9), 3), node, link))
    return rows


def write_price_file(path: Path, rows: list[dict]) -> Path:
    """``rows`` written as a price file at ``path``."""
    path.write_text(json.dumps({"as_of": "2026-12-01", "note": "test prices", "prices": rows}, indent=1))
    return path
