"""The gang-schedule primal heuristic (PortfolioModel.gang_schedule): the start it gives HiGHS is a
schedule that runs, never cheaper than the brute-force optimum; the MIP never returns worse; and
when the MIP finds no schedule in its time, the heuristic's is returned, and it replays."""

from __future__ import annotations

import pytest

import json

import pyomo.environ as pyo

from planopt.portfolio.generate import random_portfolio
from planopt.portfolio.solve import PortfolioModel, load_portfolio, solve_portfolio
from planopt.portfolio.replay import replay_schedule

from tests.support.portfolio_oracle import best_portfolio_cost, tiny_portfolio

SEEDS = range(30)


def start_alone(p) -> tuple[PortfolioModel, object]:
    """The heuristic's start with every value it sets fixed: the schedule LP that HiGHS completes it by."""
    pm = PortfolioModel(p)
    if pm.model is None:
        return pm, None
    pm.warm_start(floors=True, starts=True)
    if not pm.complete_start:
        return pm, None
    for var, value in pm.gang_values:
        var.setlb(value)
        var.setub(value)
    pm.solver.pending = None
    return pm, pm.solve(warm_start=False, cost_floors=False, rel_gap=1e-9, explain=False)


@pytest.mark.slow  # long (13-17 s on 2 cores); .ci/run runs it with -m slow
def test_the_heuristic_start_runs_and_is_never_below_the_optimum():
    complete = 0
    for seed in SEEDS:
        p = tiny_portfolio(seed)
        oracle = best_portfolio_cost(load_portfolio(p))
        pm, res = start_alone(p)
        if res is None or res.status == "infeasible":   # no room found, or an LP the start cannot complete
            continue
        complete += 1
        assert oracle is not None, seed   # a schedule exists, so the oracle finds one
        assert res.status == "optimal" and res.violations == [], (seed, res.status, res.violations)
        out = json.loads(json.dumps(res.to_dict()))
        assert replay_schedule(load_portfolio(p), out) == [], seed
        assert res.cost_usd >= oracle * (1 - 1e-6), (seed, res.cost_usd, oracle)
    assert complete >= len(SEEDS) // 2, complete   # the heuristic does build whole schedules


def test_the_heuristic_builds_a_whole_start_on_a_generated_portfolio():
    p = random_portfolio(6, 4, 8, seed=2)
    pm, res = start_alone(p)
    assert res is not None and res.status == "optimal", getattr(res, "status", None)
    assert replay_schedule(load_portfolio(p), json.loads(json.dumps(res.to_dict()))) == []
    best = solve_portfolio(p, rel_gap=1e-9)
    assert best.cost_usd <= res.cost_usd * (1 + 1e-6)   # the MIP keeps or improves on its start


def test_when_the_mip_finds_nothing_the_heuristic_schedule_is_returned_and_replays():
    p = random_portfolio(6, 4, 8, seed=2)
    pm = PortfolioModel(p)
    pm.warm_start(floors=True, starts=True)
    assert pm.gang_values is not None
    pm.solver.pending = None
    assert pm.gang_fallback(threads=1, time_limit=None)
    res_cost = pyo.value(pm.model.cost_usd)
    from planopt.portfolio.solve import PortfolioResult
    result = PortfolioResult("time_limit", buckets=len(pm.data.buckets), bucket_hours=pm.data.bucket_hours,
                             gpu_types=list(pm.data.gpus), providers=dict(pm.data.provider),
                             reserved_price=dict(pm.data.reserved_price),
                             bucket_price={"on_demand": pm.data.od_price, "spot": pm.data.spot_price},
                             reserved_term=dict(pm.data.reserved_term), committed_hours=dict(pm.data.committed_hours),
                             reserved_from=dict(pm.data.reserved_from))
    pm.extract(result)
    out = json.loads(json.dumps(result.to_dict()))
    assert result.violations == [] and replay_schedule(load_portfolio(p), out) == []
    assert abs(result.cost_usd - res_cost) <= 1e-6 * res_cost
