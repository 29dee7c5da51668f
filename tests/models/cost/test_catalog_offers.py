"""A single job's GPUs bought from the price catalog (``hardware.offers: catalog``, the default; issue 25 item 2).

An entry that names only a GPU type is priced, per count, at the catalog's cheapest offer of its type and
tier that holds that count (an ethernet-only offer holds one node); spot is priced with preemption; under
``pricing: either`` the MIP chooses the tier. Held here: the choice equals the optimum over every offer
listed by hand; every hardware choice of every shipped job is priced at an offer that holds it; spot reclaims
lengthen the run as the formula says and are drawn in scenarios; the MIP equals both oracles with both tiers."""

from __future__ import annotations

import copy
import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

from planopt.cli import app
from planopt.instance import load_instance, parse_instance
from planopt.models.catalog.prices import load_prices
from planopt.models.cost.evaluator import Evaluator
from planopt.models.cost.hardware import (HardwareProfile, hardware_options, offer_of, option_of,
                                          price_usd_per_gpu_hour, unheld_counts)
from planopt.models.uncertainty.model import default_parameters, draw
from planopt.models.uncertainty.scenarios import ScenarioEvaluator

from tests.support.common import INSTANCES, split_seeds
from tests.support.oracle_checks import assert_mip_equals_both_oracles
from tests.support.random_instances import random_instance_dict

SINGLE_JOBS = sorted(p for p in INSTANCES.glob("*.json") if json.loads(p.read_text()).get("kind") != "portfolio")


def holdable(row, count: int) -> bool:
    """The rule of the issue, written again: ethernet-only nodes never hold a multi-node gang."""
    return row.interconnect != "ethernet" or count <= row.node_gpus


def test_a_multi_node_count_is_never_priced_at_an_ethernet_offer():
    inst = load_instance(INSTANCES / "qwen3-8b-math.json")
    h100 = next(o for o in inst.hardware.gpus if o.name == "H100-SXM")
    rows = [r for r in load_prices() if r.gpu == "H100-SXM" and r.tier == "on_demand"]
    for count in h100.counts:
        cheapest = min(r.usd_per_gpu_hour for r in rows if holdable(r, count))
        assert price_usd_per_gpu_hour(inst, h100, count) == cheapest
        assert holdable(offer_of(inst, h100, count), count)
    # within one node the ethernet marketplace is cheapest; across nodes an InfiniBand offer is
    single = min(rows, key=lambda r: r.usd_per_gpu_hour)
    assert single.interconnect == "ethernet" and price_usd_per_gpu_hour(inst, h100, 8) == single.usd_per_gpu_hour
    assert price_usd_per_gpu_hour(inst, h100, 32) > single.usd_per_gpu_hour


@pytest.mark.parametrize("path", SINGLE_JOBS, ids=lambda p: p.stem)
def test_every_hardware_choice_of_a_shipped_job_is_priced_at_an_offer_that_holds_it(path):
    inst = load_instance(path)
    for choice in hardware_options(inst):
        option = option_of(inst, choice.gpu)
        row = offer_of(inst, option, choice.count)
        if option.price_usd_per_gpu_hour is not None and option.provider is None:
            continue  # the instance's own price
        assert row is not None and holdable(row, choice.count), (choice, row)
        assert HardwareProfile(inst, choice).price_usd_per_gpu_hour == row.usd_per_gpu_hour


def test_counts_no_offer_holds_are_left_out_and_said():
    inst = load_instance(INSTANCES / "qwen3-8b-math.json")
    l40s = [n for n, o in enumerate(inst.hardware.gpus) if o.name == "L40S"]
    assert l40s and not any(c.gpu == "L40S" for c in hardware_options(inst))
    assert any(f"hardware.gpus.{l40s[0]}: L40S × 8, 16" in line for line in unheld_counts(inst))
    res = CliRunner().invoke(app, ["validate", str(INSTANCES / "qwen3-8b-math.json")])
    assert res.exit_code == 0 and "left out: hardware.gpus." in res.stdout and "L40S × 8, 16" in res.stdout


def explicit_offers(data: dict) -> dict:
    """The same job with every catalog offer of each entry's type listed by hand (``provider`` + ``region``),
    each with the counts it can hold."""
    out = copy.deepcopy(data)
    tier = out["hardware"].get("pricing", "on_demand")
    gpus = []
    probe = parse_instance(data)
    for raw, option in zip(data["hardware"]["gpus"], probe.hardware.gpus):
        if option.price_usd_per_gpu_hour is not None:
            gpus.append(raw)
            continue
        for row in load_prices():
            counts = [c for c in raw["counts"] if holdable(row, c)]
            if row.gpu == option.name and row.tier == tier and counts:
                gpus.append({**raw, "counts": counts, "provider": row.provider, "region": row.region,
                             "offer": f"{row.provider}/{row.region}"})
    out["hardware"]["gpus"] = gpus
    return out


@pytest.mark.parametrize("seed", split_seeds(range(8), 3))
def test_the_cheapest_offer_is_the_optimum_over_every_offer_listed(seed):
    """The reduction's proof, checked: the optimum with one catalog-priced entry per type equals the optimum
    over one entry per offer (the MIP choosing the provider), in cost."""
    data = random_instance_dict(seed)
    listed = explicit_offers(data)
    if not listed["hardware"]["gpus"]:
        pytest.skip("no catalog offer of this instance's GPU types")
    try:
        by_hand = parse_instance(listed)
    except ValueError as exc:  # e.g. a context-parallel degree no count an offer holds can take: refused, as it should
        pytest.skip(f"the offers listed by hand are not a valid instance: {exc}")
    a = assert_mip_equals_both_oracles(parse_instance(data))
    b = assert_mip_equals_both_oracles(by_hand)
    assert a.status == b.status
    if a.status == "optimal":
        assert math.isclose(a.metrics.cost_usd, b.metrics.cost_usd, rel_tol=1e-9) or a.objective != "cost"


def on_spot(path, share=None, pricing="spot") -> dict:
    data = json.loads(path.read_text())
    data["hardware"]["pricing"] = pricing
    if share is not None:
        data.setdefault("reliability", {})["spot_reclaimed_share_per_month"] = share
    return data


def test_spot_reclaims_are_failures_of_the_gang_at_the_advisor_rate():
    inst = parse_instance(on_spot(INSTANCES / "qwen3-8b-math.json"))
    od = load_instance(INSTANCES / "qwen3-8b-math.json")
    choice = next(c for c in hardware_options(inst) if c.gpu == "H100-SXM" and c.count == 32 and not c.split)
    spot, plain = HardwareProfile(inst, choice), HardwareProfile(od, choice)
    node = offer_of(inst, option_of(inst, "H100-SXM"), 32).node_gpus
    per_node_hour = -math.log(1 - 0.2) / 730.0  # 20 % of nodes reclaimed in a 730-hour month
    assert math.isclose(spot.failures_per_hour - plain.failures_per_hour, (32 / node) * per_node_hour, rel_tol=1e-12)
    assert spot.overhead_share(240) > plain.overhead_share(240)
    never = parse_instance(on_spot(INSTANCES / "qwen3-8b-math.json", share=0.0))
    assert HardwareProfile(never, choice).failures_per_hour == plain.failures_per_hour


def test_spot_reclaims_are_drawn_in_scenarios_and_only_on_spot():
    od = load_instance(INSTANCES / "qwen3-8b-math.json")
    assert "reliability.spot_reclaimed_share_per_month" not in {p.name for p in default_parameters(od)}
    inst = parse_instance(on_spot(INSTANCES / "qwen3-8b-math.json"))
    param = next(p for p in default_parameters(inst) if p.name == "reliability.spot_reclaimed_share_per_month")
    assert param.low < inst.reliability.spot_reclaimed_share_per_month < param.high
    sc = draw(inst, 400, seed=3)
    se = ScenarioEvaluator(Evaluator(inst), sc)
    choice = next(c for c in hardware_options(inst) if c.gpu == "H100-SXM" and c.count == 32 and not c.split)
    rate = se.spot_reclaims_per_hour(choice)
    share = sc.values["reliability.spot_reclaimed_share_per_month"]
    order = np.argsort(share)
    assert np.all(np.diff(rate[order]) >= 0) and rate.min() < HardwareProfile(inst, choice).spot_reclaims_per_hour < rate.max()
    node = offer_of(inst, option_of(inst, "H100-SXM"), 32).node_gpus
    assert np.allclose(rate, (32 / node) * -np.log1p(-share) / 730.0, rtol=1e-12)


@pytest.mark.parametrize("seed", split_seeds(range(10), 4))
def test_either_tier_is_the_oracles_optimum(seed):
    data = random_instance_dict(seed)
    data["hardware"]["pricing"] = "either"
    data.setdefault("reliability", {})["spot_reclaimed_share_per_month"] = 0.9  # make the trade-off bite
    try:
        inst = parse_instance(data)
    except Exception as exc:  # a type without a spot offer at all: nothing to choose
        pytest.skip(str(exc))
    assert_mip_equals_both_oracles(inst)


def test_spot_wins_only_where_it_pays(tmp_path):
    """Under `either`, the cheaper spot offer wins at the Advisor's rate; when reclaims cost more than spot saves
    (a job that can barely checkpoint, reclaimed almost surely within hours), on-demand wins."""
    cheap = on_spot(INSTANCES / "qwen3-8b-math.json", pricing="either")
    res = CliRunner().invoke(app, ["solve", _write(tmp_path, "cheap.json", cheap), "--json", "--no-sensitivity"])
    out = json.loads(res.stdout)
    assert out["offers"][0]["tier"] == "spot"
    dear = copy.deepcopy(cheap)
    dear.setdefault("reliability", {}).update(spot_reclaimed_share_per_month=0.999999, restart_minutes=600)
    dear["checkpointing"] = {**dear.get("checkpointing", {}), "interval_minutes_options": [240]}
    res = CliRunner().invoke(app, ["solve", _write(tmp_path, "dear.json", dear), "--json", "--no-sensitivity"])
    out = json.loads(res.stdout)
    assert res.exit_code == 0 and out["offers"][0]["tier"] == "on_demand"


def _write(tmp_path, name: str, data: dict) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return str(path)


def test_the_json_and_the_report_name_provider_region_tier_and_price(tmp_path):
    res = CliRunner().invoke(app, ["solve", str(INSTANCES / "qwen3-8b-math.json"), "--json", "--no-sensitivity"])
    out = json.loads(res.stdout)
    (offer,) = out["offers"]
    stage = out["plan"]["stages"][0]
    assert (offer["gpu"], offer["count"]) == (stage["gpu"], stage["gpu_count"])
    row = next(r for r in load_prices() if r.provider == offer["provider"] and r.region == offer["region"]
               and r.gpu == offer["gpu"] and r.tier == offer["tier"])
    assert offer["usd_per_gpu_hour"] == row.usd_per_gpu_hour and holdable(row, offer["count"])
    assert math.isclose(out["metrics"]["gpu_hours"] * row.usd_per_gpu_hour, out["cost_breakdown_usd"]["compute"]
                        + out["cost_breakdown_usd"]["evaluation"], rel_tol=1e-6)


def test_a_portfolio_job_asking_for_catalog_offers_is_refused(tmp_path):
    data = json.loads((INSTANCES / "portfolio-small.json").read_text())
    job = data["jobs"][0]["instance"]
    job["hardware"]["offers"] = "catalog"
    res = CliRunner().invoke(app, ["solve", _write(tmp_path, "p.json", data)])
    assert res.exit_code == 2 and "jobs.0.instance.hardware.offers" in res.output and len(res.output.strip().splitlines()) == 1


@pytest.mark.parametrize("edit,field", [
    (lambda job: job["hardware"].update(pricing="spot"), "jobs.0.instance.hardware.pricing"),
    (lambda job: job["hardware"]["gpus"][0].update(tier="spot"), "jobs.0.instance.hardware.gpus.0.tier"),
    (lambda job: job.update(reliability={"spot_reclaimed_share_per_month": 0.5}),
     "jobs.0.instance.reliability.spot_reclaimed_share_per_month"),
])
def test_a_portfolio_job_naming_its_own_tier_or_spot_rate_is_refused(tmp_path, edit, field):
    """The portfolio's pools set a job's tier and its gpus their spot preemptions: a job's own would be dropped."""
    data = json.loads((INSTANCES / "portfolio-small.json").read_text())
    edit(data["jobs"][0]["instance"])
    res = CliRunner().invoke(app, ["solve", _write(tmp_path, "p.json", data)])
    assert res.exit_code == 2 and field in res.output and len(res.output.strip().splitlines()) == 1, res.output


def test_bad_tier_and_offers_values_name_their_field(tmp_path):
    for field, value in (("pricing", "cheap"), ("offers", "everywhere")):
        data = json.loads((INSTANCES / "tiny.json").read_text())
        data["hardware"][field] = value
        res = CliRunner().invoke(app, ["solve", _write(tmp_path, "bad.json", data)])
        assert res.exit_code == 2 and f"hardware.{field}" in res.output
    data = json.loads((INSTANCES / "tiny.json").read_text())
    data["reliability"] = {"spot_reclaimed_share_per_month": 1.5}
    res = CliRunner().invoke(app, ["solve", _write(tmp_path, "bad.json", data)])
    assert res.exit_code == 2 and "reliability.spot_reclaimed_share_per_month" in res.output


def test_the_scenario_evaluator_equals_the_evaluator_on_spot_plans_in_each_scenario():
    """Spot reclaims drawn in scenarios: the vectorised scenario metrics equal the evaluator on each scenario's
    instance (``uncertainty.model.apply``), for spot and on-demand plans of one `either` instance."""
    import random
    from planopt.models.schema.plan import Plan
    from planopt.oracles.by_plan import all_plans
    from tests.support.oracle_checks import assert_scenarios_equal_the_evaluator
    inst = parse_instance(on_spot(INSTANCES / "tiny.json", pricing="either"))
    plans = [p.plan for p in all_plans(inst) if p.metrics.fits_memory]
    picked = random.Random(5).sample([p for p in plans if "@spot" in p.gpu], 3) + \
        random.Random(5).sample([p for p in plans if "@spot" not in p.gpu], 2)
    assert all(isinstance(p, Plan) for p in picked)
    assert_scenarios_equal_the_evaluator(inst, draw(inst, 6, seed=11), picked)
