"""Portfolio GPUs from the price catalog: provider, region and term; whole-node reservations paid
for their whole term; ethernet-only offers hold a job on one node."""

from __future__ import annotations

import copy
import json
import math

import pytest

from planopt.models.catalog.prices import TERM_HOURS, offers
from planopt.portfolio.solve import load_portfolio, solve_portfolio
from planopt.portfolio.replay import replay_schedule

from tests.support.common import refused
from tests.support.portfolio_oracle import best_portfolio_cost, close, one_job_portfolio, tiny_job, tiny_portfolio



def test_a_provider_brings_its_prices_term_and_node():
    p = one_job_portfolio({"name": "H100-SXM", "provider": "lambda", "on_demand_available_gpus": 16})
    data = load_portfolio(p)
    lam = offers("lambda", "H100-SXM")
    g = data.gpu["H100-SXM"]
    assert g.on_demand_usd_per_gpu_hour == lam["on_demand"].usd_per_gpu_hour
    assert g.reserved_term == "1y" and g.reserved_usd_per_gpu_hour == lam["reserved_1y"].usd_per_gpu_hour
    assert g.node_gpus == lam["on_demand"].node_gpus and g.region == lam["on_demand"].region
    assert data.committed_hours["H100-SXM"] == TERM_HOURS["reserved_1y"]   # 96 h of horizon, a year paid


def test_the_plan_and_schedule_say_provider_and_tier():
    p = one_job_portfolio({"name": "H100-SXM", "provider": "nebius", "on_demand_available_gpus": 16, "spot_available_gpus": 8,
                           "spot_preemptions_per_gpu_hour": 0.001})
    res = solve_portfolio(p, rel_gap=1e-9)
    assert res.status == "optimal"
    out = json.loads(json.dumps(res.to_dict()))
    rows = [row for job in out["jobs"] for row in job["schedule"]]
    assert rows and {row["provider"] for row in rows} == {"nebius"}
    assert {row["tier"] for row in rows} <= {"on_demand", "spot"}
    assert all(row["provider"] == "nebius" for row in out["procurement"])
    assert replay_schedule(load_portfolio(p), out) == []


def test_a_reservation_is_paid_for_its_whole_term_in_whole_nodes():
    """A one-month capacity block (8-GPU nodes, nothing on demand): a 4-GPU job in a 96-hour
    horizon reserves a whole node and pays 730 hours of it."""
    p = one_job_portfolio({"name": "H100-SXM", "provider": "aws-capacity-blocks", "on_demand_available_gpus": 0},
                          counts=(4,), buckets=2, bucket_hours=48.0)
    res = solve_portfolio(p, rel_gap=1e-9)
    assert res.status == "optimal"
    block = offers("aws-capacity-blocks", "H100-SXM")["reserved_1m"]
    assert res.reserved["H100-SXM"] == 8   # whole nodes, though the job holds 4
    assert math.isclose(res.cost_breakdown_usd["reserved"], 8 * block.usd_per_gpu_hour * TERM_HOURS["reserved_1m"], rel_tol=1e-9)
    row = next(r for r in res.to_dict()["procurement"] if r["tier"] == "reserved")
    assert row["term"] == "1m" and row["committed_hours"] == TERM_HOURS["reserved_1m"] and row["provider"] == "aws-capacity-blocks"
    assert close(res.cost_usd, best_portfolio_cost(load_portfolio(p)))


def test_an_ethernet_marketplace_holds_a_job_on_one_node():
    p = one_job_portfolio({"name": "H100-SXM", "provider": "vast", "on_demand_available_gpus": 32}, counts=(8, 16))
    res = solve_portfolio(p, rel_gap=1e-9)
    assert res.status == "optimal" and res.jobs[0].plan.gpu_count == 8   # 16 GPUs would span two nodes over ethernet


@pytest.mark.parametrize("seed", [s for s in range(30) if any(
    e["node_gpus"] > 1 for e in tiny_portfolio(s)["gpus"])][:10])
def test_whole_node_reservations_match_the_oracle(seed):
    p = tiny_portfolio(seed)
    oracle = best_portfolio_cost(load_portfolio(p))
    res = solve_portfolio(p, rel_gap=1e-9)
    if oracle is None:
        assert res.status == "infeasible"
        return
    assert res.status == "optimal" and close(res.cost_usd, oracle), (res.cost_usd, oracle)
    for g, n in res.reserved.items():
        assert n % load_portfolio(p).node_gpus[g] == 0


@pytest.mark.parametrize("entry, counts, field", [
    ({"name": "H100-SXM", "provider": "acme", "on_demand_available_gpus": 8}, (8,), "provider"),
    ({"name": "MI300X", "provider": "lambda", "on_demand_available_gpus": 8}, (8,), "provider"),
    ({"name": "H100-SXM", "provider": "lambda", "region": "mars", "on_demand_available_gpus": 8}, (8,), "region 'mars'"),
    ({"name": "A100-80GB", "provider": "lambda", "reserved_term": "1y", "on_demand_available_gpus": 8}, (8,), "reserved_term"),
    ({"name": "H100-SXM", "reserved_term": "1y", "on_demand_available_gpus": 8}, (8,), "reserved_term"),
    ({"name": "H100-SXM", "provider": "lambda", "on_demand_available_gpus": 8, "spot_available_gpus": 8}, (8,), "spot_available_gpus"),
    ({"name": "H100-SXM", "provider": "vast", "on_demand_available_gpus": 32}, (16,), "hardware.gpus"),
])
def test_bad_catalog_input_exits_2_naming_the_field(tmp_path, entry, counts, field):
    refused(tmp_path, one_job_portfolio(copy.deepcopy(entry), counts=counts), field)


def test_reserved_gpus_arrive_after_their_lead_time():
    """Nothing on demand, a reservation arriving in bucket 1 (paid from bucket 0): the job runs in bucket 1 only,
    and moving its work onto bucket 0 does not replay."""
    p = one_job_portfolio({"name": "H100-SXM", "reserved_usd_per_gpu_hour": 1.0, "on_demand_available_gpus": 0,
                           "reserved_lead_buckets": 1}, counts=(4,), buckets=2, bucket_hours=48.0)
    res = solve_portfolio(p, rel_gap=1e-9)
    assert res.status == "optimal" and res.violations == []
    out = json.loads(json.dumps(res.to_dict()))
    assert {row["bucket"] for row in out["jobs"][0]["schedule"]} == {1}
    assert next(r for r in out["procurement"] if r["tier"] == "reserved")["start_bucket"] == 1
    assert math.isclose(res.cost_breakdown_usd["reserved"], res.reserved["H100-SXM"] * 1.0 * 96.0)   # paid from signing
    data = load_portfolio(p)
    assert replay_schedule(data, out) == []
    for row in out["jobs"][0]["schedule"]:
        row["bucket"] = 0
    assert any(msg.startswith("capacity:") for msg in replay_schedule(data, out))
    p["jobs"][0]["deadline_bucket"] = 0   # due before the reservation arrives
    assert solve_portfolio(p).status == "infeasible"


def test_a_lead_time_beyond_the_horizon_is_refused(tmp_path):
    refused(tmp_path, one_job_portfolio({"name": "H100-SXM", "reserved_usd_per_gpu_hour": 1.0, "on_demand_available_gpus": 8,
                                         "reserved_lead_buckets": 2}), "gpus.0.reserved_lead_buckets")
