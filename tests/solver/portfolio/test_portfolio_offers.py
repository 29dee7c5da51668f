"""Provider and region as decisions: a portfolio may list one GPU type once per (provider,
region); each offer is a pool of its own (``NAME@provider/region``), and which one each job runs
on, and which ones to reserve, is the MIP's choice. Held to the brute-force oracle, the replay,
the capacity-risk brute force and the SAA brute force on random tiny portfolios with two offers
per GPU type, plus the interconnect rule and the input errors."""

from __future__ import annotations

import copy
import json

import pytest
from typer.testing import CliRunner

from planopt.cli import app
from planopt.portfolio.solve import load_portfolio, solve_portfolio
from planopt.portfolio.chance import solve_portfolio_at_confidence, undisrupted
from planopt.portfolio.replay import replay_schedule
from planopt.report.portfolio_schema import PortfolioResultSchema
from planopt.portfolio.risk import draw

from tests.support.common import refused, split_seeds
from tests.support.portfolio_oracle import (assert_risk_equals_brute_force, assert_time_limited_path_matches_brute_force,
                                            best_chance_cost, close, offers_portfolio, tiny_job)
from tests.support.portfolio_oracle import solved_at_the_brute_force, with_shortfall

runner = CliRunner()
SEEDS = split_seeds(range(24), 12)


def offers_of(p: dict) -> bool:
    names = [g["name"] for g in p["gpus"]]
    return len(set(names)) < len(names)


@pytest.mark.parametrize("seed", SEEDS)
def test_the_offer_each_job_runs_on_is_the_brute_force_optimum(seed):
    solved = solved_at_the_brute_force(offers_portfolio(seed))
    if solved is None:
        return
    pdata, res = solved
    out = json.loads(json.dumps(res.to_dict(), allow_nan=False))
    assert replay_schedule(pdata, out) == []
    PortfolioResultSchema.model_validate(out)
    for job in out["jobs"]:  # the plan names the pool; every row names its provider, region and catalog GPU
        pool = job["plan"]["stages"][0]["gpu"] if "stages" in job["plan"] else job["plan"]["gpu"]
        for row in job["schedule"]:
            assert pdata.pool_of(row) == pool and row["gpu"] == pdata.gpu_type[pool]
            assert row["provider"] == pdata.provider[pool] and row["region"] == pdata.region[pool]


@pytest.mark.parametrize("seed", split_seeds(range(16), 6))
def test_the_time_limited_path_over_offers_matches_brute_force(seed):
    """The Lagrangian bound, column generation, the search and the masters take each offer as a pool
    of its own."""
    assert_time_limited_path_matches_brute_force(offers_portfolio(seed))


def test_the_offers_are_a_decision_on_some_seed():
    """Guard: across the seeds some optimum runs a job on the second offer of its GPU type, and
    some portfolio puts jobs on two offers of one type (else the tests above check nothing new)."""
    second, both = False, False
    for seed in range(24):
        p = offers_portfolio(seed)
        if not offers_of(p):
            continue
        pdata = load_portfolio(p)
        res = solve_portfolio(p, rel_gap=1e-9)
        firsts = {}
        for g in p["gpus"]:
            firsts.setdefault(g["name"], g.get("provider"))
        used = {(pdata.gpu_type[j.plan.gpu], pdata.provider[j.plan.gpu]) for j in res.jobs}
        second |= any(prov != firsts[name] for name, prov in used)
        both |= len({name for name, _ in used}) < len(used)
        if second and both:
            return
    raise AssertionError(f"no seed chose a second offer ({second}) or split one GPU type across offers ({both})")


@pytest.mark.parametrize("seed", split_seeds(range(8), 4))
def test_capacity_risk_of_an_offers_schedule_equals_the_brute_force(seed):
    assert_risk_equals_brute_force(with_shortfall(offers_portfolio(seed), seed), 40, seed)


@pytest.mark.parametrize("seed", split_seeds(range(6), 3))
def test_the_confidence_schedule_over_offers_is_the_brute_force_optimum(seed):
    source = with_shortfall(offers_portfolio(seed), seed + 100)
    pdata = load_portfolio(source)
    scen = draw(pdata, 5, seed)
    oracle = best_chance_cost(pdata, scen, 0.6)
    res = solve_portfolio_at_confidence(source, 0.6, 5, seed, rel_gap=1e-9, out_of_sample=100, guard=False)
    if oracle is None:
        assert res.status == "infeasible", (res.status, res.cost_usd)
        return
    assert res.status == "optimal" and close(res.cost_usd, oracle), (res.cost_usd, oracle)
    assert undisrupted(pdata, res.to_dict(), scen).sum() >= 3


def two_offers(job_counts: list[int], second: dict) -> dict:
    import random
    job = tiny_job(random.Random(5), "j")
    job["hardware"]["gpus"] = [{"name": "H100-SXM", "counts": job_counts}]
    job.pop("constraints", None)
    first = {"name": "H100-SXM", "provider": "lambda", "on_demand_available_gpus": 16, "on_demand_usd_per_gpu_hour": 3.0}
    return {"kind": "portfolio", "name": "two-offers", "horizon": {"buckets": 2, "bucket_hours": 500.0},
            "gpus": [first, {"name": "H100-SXM", "on_demand_available_gpus": 16, **second}],
            "jobs": [{"instance": job, "release_bucket": 0, "deadline_bucket": 1}]}


def test_the_cheaper_offer_wins_and_the_output_names_it():
    res = solve_portfolio(two_offers([2], {"provider": "vast", "on_demand_usd_per_gpu_hour": 1.5}), rel_gap=1e-9)
    assert res.status == "optimal" and [j.plan.gpu for j in res.jobs] == ["H100-SXM@vast/global"]
    dearer = solve_portfolio(two_offers([2], {"provider": "vast", "on_demand_usd_per_gpu_hour": 4.5}), rel_gap=1e-9)
    assert [j.plan.gpu for j in dearer.jobs] == ["H100-SXM@lambda/us"]
    # the GPU-hours are the same on either offer (one physics), so the costs differ by the price alone
    hours = sum(res.jobs[0].gpu_hours.values())
    assert hours == pytest.approx(sum(dearer.jobs[0].gpu_hours.values()))
    assert res.cost_usd - res.jobs[0].noncompute_usd == pytest.approx(1.5 * hours)
    rows = res.to_dict()["procurement"]
    assert {(r["provider"], r["region"], r["gpu"]) for r in rows} == {("vast", "global", "H100-SXM")}


def test_a_multi_node_job_is_not_placed_on_an_ethernet_offer():
    """A job of 16 GPUs needs two 8-GPU nodes: the cheaper ethernet marketplace cannot hold it, so it
    runs on the InfiniBand offer; a job of 8 GPUs (one node) takes the cheaper one."""
    cheap = {"provider": "vast", "on_demand_usd_per_gpu_hour": 1.0}   # vast: ethernet between 8-GPU nodes
    big = solve_portfolio(two_offers([16], cheap), rel_gap=1e-9)
    assert big.status == "optimal" and [j.plan.gpu for j in big.jobs] == ["H100-SXM@lambda/us"]
    small = solve_portfolio(two_offers([8], cheap), rel_gap=1e-9)
    assert [j.plan.gpu for j in small.jobs] == ["H100-SXM@vast/global"]


def test_the_cli_table_names_provider_and_region(tmp_path):
    f = tmp_path / "p.json"
    f.write_text(json.dumps(two_offers([2], {"provider": "vast", "on_demand_usd_per_gpu_hour": 1.5})))
    res = runner.invoke(app, ["solve", str(f)])
    assert res.exit_code == 0, res.output
    assert "vast global" in res.output and "H100-SXM@vast/global" in res.output


def test_a_type_listed_twice_needs_a_provider_on_each_entry(tmp_path):
    p = two_offers([2], {"on_demand_usd_per_gpu_hour": 1.5})   # the second entry has no provider
    refused(tmp_path, p, "gpus.1.provider")


def test_one_offer_listed_twice_is_refused(tmp_path):
    p = two_offers([2], {"provider": "lambda", "on_demand_usd_per_gpu_hour": 1.5})
    assert "listed twice" in refused(tmp_path, p, "gpus.1")


def test_a_job_names_gpu_types_not_offers(tmp_path):
    p = two_offers([2], {"provider": "vast"})
    p["jobs"][0]["instance"]["hardware"]["gpus"][0]["offer"] = "vast/global"
    refused(tmp_path, p, "jobs.0.instance.hardware.gpus.0.offer")


def test_one_listing_keeps_the_plain_gpu_name():
    """Backward compatible: a type listed once is keyed by its name, as before."""
    p = copy.deepcopy(two_offers([2], {"provider": "vast"}))
    p["gpus"] = p["gpus"][:1]
    res = solve_portfolio(p, rel_gap=1e-9)
    assert [j.plan.gpu for j in res.jobs] == ["H100-SXM"]
    assert res.to_dict()["jobs"][0]["schedule"][0]["region"] == "us"


def test_generate_offers_each_type_from_several_providers_and_keeps_the_jobs(tmp_path):
    from planopt.portfolio.generate import random_portfolio
    one = random_portfolio(4, 3, 4, seed=2)
    three = random_portfolio(4, 3, 4, seed=2, offers=3)
    assert three["jobs"] == one["jobs"]                      # the offers have a random stream of their own
    names = [g["name"] for g in three["gpus"]]
    assert len(names) > len(set(names)) and all(g.get("provider") for g in three["gpus"] if names.count(g["name"]) > 1)
    assert all(names.count(n) <= 3 for n in names)
    load_portfolio(three)                                    # a valid portfolio: every offer a pool
    f = tmp_path / "g.json"
    res = runner.invoke(app, ["generate", "portfolio", "--jobs", "2", "--gpu-types", "2", "--buckets", "3", "--offers", "2",
                              "--seed", "1", "--out", str(f)])
    assert res.exit_code == 0 and "offers" in res.output, res.output
    assert runner.invoke(app, ["generate", "portfolio", "--offers", "0"]).exit_code == 2


def test_the_readme_states_the_providers_example_as_it_solves():
    """README: the 16-GPU agent job runs on Lambda's H100s although Vast's cost $1.87 against $2.99 an hour,
    two jobs run on Nebius's spot H100s, and the portfolio costs $24,720."""
    from tests.support.common import INSTANCES, ROOT
    readme = (ROOT / "README.md").read_text()
    path = INSTANCES / "portfolio-providers.json"
    res = solve_portfolio(str(path), rel_gap=1e-9)
    assert res.status == "optimal"
    assert f"the portfolio costs ${res.cost_usd:,.0f}" in readme, res.cost_usd
    pdata = load_portfolio(str(path))
    lam, vast = (next(k for k in pdata.gpus if k.startswith(f"H100-SXM@{p}/")) for p in ("lambda", "vast"))
    assert f"Vast's cost ${pdata.od_price[vast][0]:.2f} against ${pdata.od_price[lam][0]:.2f} an hour" in readme
    by_name = {j.name: j for j in res.jobs}
    agent = by_name["qwen3-8b-rl-agent"]
    assert agent.plan.gpu == lam and agent.plan.gpu_count == 16 and "16-GPU agent job runs on Lambda's H100s" in readme
    nebius_spot = [j for j in res.jobs if pdata.provider[j.plan.gpu] == "nebius" and set(k for _, k in j.gpu_hours) == {"spot"}]
    assert len(nebius_spot) == 2 and "two jobs run on Nebius's spot H100s" in readme
