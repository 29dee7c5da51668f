"""One GPU type from several offers in a single job (``hardware.gpus[].offer`` / ``provider``):
each offer is a hardware option of its own, with its GPU type's physics and its own price, so the
MIP chooses the provider and region. Held to both oracles on random instances; the price catalog
supplies an offer's price; the input errors name their field."""

from __future__ import annotations

import copy
import json
import random

import pytest
from typer.testing import CliRunner

from planopt.cli import app
from planopt.models.catalog.prices import offers
from planopt.models.cost.evaluator import Evaluator
from planopt.models.cost.hardware import price_usd_per_gpu_hour
from planopt.instance import parse_instance

from tests.support.common import INSTANCES, refused, split_seeds
from tests.support.oracle_checks import assert_mip_equals_both_oracles
from tests.support.random_instances import random_instance_dict

runner = CliRunner()


def with_two_offers(inst: dict, seed: int) -> dict:
    """Every GPU type of the instance offered twice, at prices drawn around its own."""
    rng = random.Random(seed + 7000)
    probe = parse_instance(inst)
    out = copy.deepcopy(inst)
    gpus = []
    for option, parsed in zip(out["hardware"]["gpus"], probe.hardware.gpus):
        base = next((p for c in parsed.counts if (p := price_usd_per_gpu_hour(probe, parsed, c)) is not None), None)
        if base is None:
            continue
        for label in ("east", "west"):
            gpus.append({**option, "offer": label, "price_usd_per_gpu_hour": round(base * rng.uniform(0.6, 1.4), 4)})
    out["hardware"]["gpus"] = gpus
    return out


@pytest.mark.parametrize("seed", split_seeds(range(24), 10))
def test_the_offer_is_the_oracles_optimum(seed):
    data = with_two_offers(random_instance_dict(seed), seed)
    if not data["hardware"]["gpus"]:
        pytest.skip("no GPU type of this seed has a catalog offer holding one of its counts")
    inst = parse_instance(data)
    mip = assert_mip_equals_both_oracles(inst)
    if mip.status == "optimal":
        assert "@" in mip.plan.gpu


def test_two_offers_of_one_gpu_differ_by_price_alone():
    base = json.loads((INSTANCES / "tiny.json").read_text())
    base["hardware"]["gpus"] = [{"name": "H100-SXM", "counts": [8], "offer": "a", "price_usd_per_gpu_hour": 2.0},
                                {"name": "H100-SXM", "counts": [8], "offer": "b", "price_usd_per_gpu_hour": 3.0}]
    inst = parse_instance(base)
    ev = Evaluator(inst)
    recipes, hardware, _ = ev.space()
    a, b = (next(h for h in hardware if h.gpu == f"H100-SXM@{x}") for x in "ab")
    for r in recipes[:5]:
        ma, mb = ev.metrics(r, a, 60.0), ev.metrics(r, b, 60.0)
        assert ma.wall_hours == mb.wall_hours and ma.gpu_hours == mb.gpu_hours   # one physics
        assert ma.cost_breakdown_usd["compute"] * 1.5 == pytest.approx(mb.cost_breakdown_usd["compute"])


def test_a_provider_brings_its_price_and_names_the_offer():
    base = json.loads((INSTANCES / "tiny.json").read_text())
    base["hardware"]["gpus"] = [{"name": "H100-SXM", "provider": "lambda", "counts": [8]},
                                {"name": "H100-SXM", "provider": "nebius", "counts": [8]}]
    inst = parse_instance(base)
    keys = [o.key for o in inst.hardware.gpus]
    assert keys == ["H100-SXM@lambda/us", "H100-SXM@nebius/eu-north1"]
    assert [o.price_usd_per_gpu_hour for o in inst.hardware.gpus] == [
        offers("lambda", "H100-SXM")["on_demand"].usd_per_gpu_hour, offers("nebius", "H100-SXM")["on_demand"].usd_per_gpu_hour]
    spot = parse_instance({**base, "hardware": {**base["hardware"], "gpus": base["hardware"]["gpus"][1:],
                                                         "pricing": "spot"}})
    assert spot.hardware.gpus[0].price_usd_per_gpu_hour == offers("nebius", "H100-SXM")["spot"].usd_per_gpu_hour


def test_the_report_says_whose_price_it_is(tmp_path):
    base = json.loads((INSTANCES / "tiny.json").read_text())
    base["hardware"]["gpus"] = [{"name": "H100-SXM", "provider": "vast", "counts": [1, 2, 4, 8]}]
    f = tmp_path / "i.json"
    f.write_text(json.dumps(base))
    res = runner.invoke(app, ["solve", str(f), "--no-sensitivity"])
    assert res.exit_code == 0, res.output
    assert "H100-SXM@vast/global" in res.output and "vast global, on-demand" in res.output


@pytest.mark.parametrize("gpus, field", [
    ([{"name": "H100-SXM", "provider": "vast", "counts": [8, 16]}], "hardware.gpus.0"),          # ethernet: one node
    ([{"name": "H100-SXM", "provider": "nowhere", "counts": [8]}], "hardware.gpus.0"),
    ([{"name": "H100-SXM", "region": "us", "counts": [8]}], "hardware.gpus.0"),                  # region without provider
    ([{"name": "H100-SXM", "counts": [8]}, {"name": "H100-SXM", "counts": [8]}], "hardware.gpus"),  # twice, no offer
    ([{"name": "H100-SXM", "offer": "a.b", "counts": [8]}], "hardware.gpus.0.offer"),
])
def test_bad_offers_are_one_line_naming_the_field(tmp_path, gpus, field):
    base = json.loads((INSTANCES / "tiny.json").read_text())
    base["hardware"]["gpus"] = gpus
    refused(tmp_path, base, field)


def test_a_provider_without_the_tier_is_refused(tmp_path):
    base = json.loads((INSTANCES / "tiny.json").read_text())
    base["hardware"] = {"gpus": [{"name": "H100-SXM", "provider": "lambda", "counts": [8]}], "pricing": "spot"}
    assert "spot" in refused(tmp_path, base, "hardware.gpus.0.provider")


def test_evaluate_reads_back_an_offers_plan(tmp_path):
    base = json.loads((INSTANCES / "tiny.json").read_text())
    base["hardware"]["gpus"] = [{"name": "H100-SXM", "provider": "lambda", "counts": [1, 2, 4, 8]},
                                {"name": "H100-SXM", "provider": "vast", "counts": [1, 2, 4, 8]}]
    inst = tmp_path / "i.json"
    inst.write_text(json.dumps(base))
    solved = runner.invoke(app, ["solve", str(inst), "--json", "--no-sensitivity"])
    assert solved.exit_code == 0, solved.output
    out = json.loads(solved.stdout)
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(out["plan"]))
    assert "H100-SXM@vast/global" in plan.read_text()
    ev = runner.invoke(app, ["evaluate", str(inst), str(plan), "--json"])
    assert ev.exit_code == 0, ev.output
    assert json.loads(ev.stdout)["metrics"]["cost_usd"] == pytest.approx(out["metrics"]["cost_usd"])
    other = json.loads(plan.read_text().replace("H100-SXM@vast/global", "H100-SXM@aws/us-east-1"))
    plan.write_text(json.dumps(other))
    bad = runner.invoke(app, ["evaluate", str(inst), str(plan)])
    assert bad.exit_code == 2 and "plan.gpu" in bad.output and len(bad.output.strip().splitlines()) == 1, bad.output
