"""A single job priced from an imported price file (``hardware.price_catalog``, issue 25 item 3).

Held here: every hardware choice is priced at the file's cheapest offer of its type and tier that holds its count
(never a shipped-catalog row), counts no offer of the file holds are left out and said, an entry's ``provider`` is
looked up in the file, and the MIP equals both oracles on random jobs priced from random files (several providers,
tiers and node sizes, ethernet and InfiniBand-class links)."""

from __future__ import annotations

import json
import random
import re

import pytest

from planopt.instance import load_instance, parse_instance
from planopt.models.catalog.prices import load_prices
from planopt.models.cost.hardware import (HardwareProfile, hardware_options, offer_of, option_of, tier_of,
                                          unheld_counts)

from tests.support.common import split_seeds
from tests.support.oracle_checks import assert_mip_equals_both_oracles
from tests.support.price_files import price_row, random_price_rows, write_price_file
from tests.support.random_instances import random_instance_dict


def holds(row: dict, count: int) -> bool:
    """The rule written again: an ethernet-only offer holds one node at most."""
    return row["interconnect"] != "ethernet" or count <= row["node_gpus"]


def cheapest(rows: list[dict], gpu: str, tier: str, count: int) -> float | None:
    prices = [r["usd_per_gpu_hour"] for r in rows if r["gpu"] == gpu and r["tier"] == tier and holds(r, count)]
    return min(prices, default=None)


def priced_from(tmp_path, seed: int):
    """A random job and a random price file of its GPU types, at a random pricing tier; (instance, rows)."""
    rng = random.Random(1000 + seed)
    data = random_instance_dict(seed)
    names = sorted({g["name"] for g in data["hardware"]["gpus"]})
    rows = random_price_rows(rng, names)
    data["hardware"]["price_catalog"] = str(write_price_file(tmp_path / "prices.json", rows))
    data["hardware"]["pricing"] = rng.choice(["on_demand", "spot", "either"])
    return parse_instance(data), rows


@pytest.mark.parametrize("seed", split_seeds(range(10), 4))
def test_the_mip_equals_both_oracles_on_jobs_priced_from_an_imported_file(tmp_path, seed):
    inst, rows = priced_from(tmp_path, seed)
    choices = hardware_options(inst)
    for choice in choices:  # each at the file's cheapest holding offer, none at a shipped row
        option = option_of(inst, choice.gpu)
        expected = cheapest(rows, option.name, tier_of(inst, option), choice.count)
        assert expected is not None and HardwareProfile(inst, choice).price_usd_per_gpu_hour == expected
        assert offer_of(inst, option, choice.count).source.startswith("test row")
    listed = {}
    for line in unheld_counts(inst):
        found = re.match(r"hardware\.gpus\.(\d+): \S+ × ([\d, ]+) \(", line)
        if found:
            listed[int(found[1])] = {int(c) for c in found[2].split(",")}
    for n, option in enumerate(inst.hardware.gpus):  # a count no offer of the file holds is left out, and listed
        unheld = {c for c in option.counts if cheapest(rows, option.name, tier_of(inst, option), c) is None}
        assert listed.get(n, set()) == unheld, (option.key, listed, unheld)
        assert not any(c.gpu == option.key and c.count in unheld for c in choices)
    if choices:
        assert_mip_equals_both_oracles(inst)


def test_the_file_and_not_the_shipped_catalog_sets_the_price(tmp_path):
    shipped = min(r.usd_per_gpu_hour for r in load_prices() if r.gpu == "H100-SXM" and r.tier == "on_demand")
    own = round(shipped / 3, 4)
    rows = [price_row("acme", "gpu_cloud", "H100-SXM", "on_demand", own, 8, "infiniband"),
            price_row("bazaar", "marketplace", "H100-SXM", "on_demand", own / 2, 1, "ethernet")]
    path = write_price_file(tmp_path / "mine.json", rows)
    job = json.loads(load_instance_text("tiny.json"))
    job["hardware"] = {"gpus": [{"name": "H100-SXM", "counts": [1, 8, 16]}], "price_catalog": path.name}
    (tmp_path / "job.json").write_text(json.dumps(job))
    inst = load_instance(tmp_path / "job.json")   # the path is read beside the instance file
    h100 = inst.hardware.gpus[0]
    assert offer_of(inst, h100, 1).provider == "bazaar" and offer_of(inst, h100, 1).usd_per_gpu_hour == own / 2
    assert offer_of(inst, h100, 16).provider == "acme" and offer_of(inst, h100, 16).usd_per_gpu_hour == own
    assert inst.hardware.price_catalog == str(path.resolve())


def test_an_entry_with_a_provider_is_looked_up_in_the_file(tmp_path):
    rows = [price_row("acme", "gpu_cloud", "H100-SXM", "on_demand", 1.25, 8, "infiniband", region="moon-1")]
    data = json.loads(load_instance_text("tiny.json"))
    data["hardware"] = {"gpus": [{"name": "H100-SXM", "provider": "acme", "counts": [8, 16]}],
                        "price_catalog": str(write_price_file(tmp_path / "p.json", rows))}
    inst = parse_instance(data)
    option = inst.hardware.gpus[0]
    assert (option.key, option.price_usd_per_gpu_hour) == ("H100-SXM@acme/moon-1", 1.25)
    assert offer_of(inst, option, 16).region == "moon-1"
    data["hardware"]["gpus"][0]["provider"] = "lambda"   # a shipped provider the file does not name
    with pytest.raises(ValueError, match="provider: expected one of acme, got 'lambda'"):
        parse_instance(data)


def load_instance_text(name: str) -> str:
    from tests.support.common import INSTANCES
    return (INSTANCES / name).read_text()
