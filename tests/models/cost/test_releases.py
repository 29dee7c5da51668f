"""Repeated releases in the one evaluator (issue 27 lever 2; ``models/cost/releases.py``).

The hand-checked cases run ``instances/tiny.json``'s plans once and at several releases: the total is the
fixed part once plus the count times the one-run elastic part, less the SFT labels a later release reuses
(labels bought from the instance's own fields: steps x prompts per step, less the examples owned)."""

from __future__ import annotations

import json

import pytest

from planopt.instance import parse_instance
from planopt.models.cost.evaluator import COST_KEYS, Evaluator
from planopt.models.schema.plan import HardwareChoice, Plan, Recipe

from tests.support.common import INSTANCES

H100 = HardwareChoice("H100-SXM", 8)
RL = Plan.of(Recipe("rl", 150, (8, 4, 4)), H100, 60)
SFT = Plan.of(Recipe("sft", 2000, (), None, 1.0, 1), H100, 60)


def tiny(releases: dict | None = None) -> Evaluator:
    data = json.loads((INSTANCES / "tiny.json").read_text())
    data["training"]["methods"]["rl"]["steps_options"] = [150]
    data["training"]["methods"]["sft"]["steps_options"] = [2000]
    data["forgetting_repair_usd_per_point"] = 300.0  # a repair price, so that the line recurs visibly
    if releases is not None:
        data["releases"] = releases
    return Evaluator(parse_instance(data))


def test_the_total_is_the_fixed_part_once_and_the_elastic_part_every_release():
    once = tiny().evaluate(RL)
    twelve = tiny({"count": 12}).evaluate(RL)
    # fixed: operations' fixed fee and the reward design (tiny has no archived milestones or egress)
    fixed = tiny().inst.operations.fixed_usd + tiny().inst.reward.design_usd
    assert once.fixed_cost_usd == pytest.approx(fixed) == twelve.fixed_cost_usd
    assert twelve.cost_usd == pytest.approx(fixed + 12 * once.elastic_cost_usd)
    for k in COST_KEYS:  # each line: its fixed part once, the rest twelve times
        f = once.fixed_cost_breakdown_usd[k]
        assert twelve.cost_breakdown_usd[k] == pytest.approx(f + 12 * (once.cost_breakdown_usd[k] - f), abs=1e-9)
    assert twelve.cost_split()["elastic"] == pytest.approx(12 * once.elastic_cost_usd)
    # per release: hours, quality and forgetting are one run's
    assert (twelve.wall_hours, twelve.quality, twelve.forgetting_points) == (once.wall_hours, once.quality,
                                                                          once.forgetting_points)
    r = twelve.releases
    assert r["count"] == 12 and r["total_usd"] == pytest.approx(twelve.cost_usd)
    assert r["first_release_usd"] == pytest.approx(once.cost_usd)
    assert r["later_release_usd"] == pytest.approx(once.elastic_cost_usd)


def test_a_later_release_buys_the_rebuilt_share_of_the_labels():
    ev = tiny({"count": 3, "sft_labels_rebuilt_share": 0.25})
    once, three = tiny().evaluate(SFT), ev.evaluate(SFT)
    inst = ev.inst
    bought = 2000 * inst.training.methods["sft"].prompts_per_step - inst.sft_data.examples_available
    labels = bought * inst.sft_data.usd_per_labeled_example
    assert once.quantities["labels_bought"] == pytest.approx(bought)
    reused = (3 - 1) * 0.75 * labels
    assert three.cost_usd == pytest.approx(once.fixed_cost_usd + 3 * once.elastic_cost_usd - reused)
    assert three.releases["later_release_usd"] == pytest.approx(once.elastic_cost_usd - 0.75 * labels)
    assert three.releases["first_release_usd"] == pytest.approx(once.cost_usd)


def test_one_release_is_the_single_run():
    assert tiny({"count": 1}).evaluate(RL).cost_breakdown_usd == tiny().evaluate(RL).cost_breakdown_usd
    assert tiny().evaluate(RL).releases == {} and "releases" not in tiny().evaluate(RL).cost_split()


def test_the_budget_bounds_the_total():
    once = tiny().evaluate(RL)
    data = json.loads((INSTANCES / "tiny.json").read_text())
    data["training"]["methods"]["rl"]["steps_options"] = [150]
    data["releases"] = {"count": 2}
    data["constraints"] = {"budget_usd": once.cost_usd * 1.01}  # one run fits, two do not
    m = Evaluator(parse_instance(data)).evaluate(RL)
    assert any(v.startswith("budget_usd:") for v in m.violations), m.violations


@pytest.mark.parametrize("horizon, interval, count", [(12, 1, 12), (12, 5, 2), (0.3, 0.1, 3), (6, 6, 1)])
def test_a_horizon_and_an_interval_count_the_whole_intervals(horizon, interval, count):
    ev = tiny({"horizon_months": horizon, "interval_months": interval})
    assert ev.inst.releases.releases == count
