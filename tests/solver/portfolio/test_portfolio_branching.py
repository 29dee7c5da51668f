"""Branch-and-price on the reservations (solver/portfolio/branching.py) against brute force: on
random tiny portfolios its bound (the least leaf bound over several levels) is at most the
enumerated optimum, never below the column generation bound it starts from, with and without
pruning by an incumbent."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from planopt.portfolio.solve import PortfolioModel, load_portfolio
from planopt.portfolio.branching import branch_and_price, branching_type, reservation_step
from planopt.portfolio.columns import column_generation
from planopt.portfolio.lagrange import JobRule, job_minimum, ruled_minimum

from tests.support.common import split_seeds
from tests.support.portfolio_oracle import best_portfolio_cost, tiny_portfolio

TOLERANCE = 1e-6   # relative, as the time-limited path's test


def _column_generation(p: dict):
    pm = PortfolioModel(p)
    pm.warm_start(floors=True, starts=False)
    lag = column_generation(pm, pm.job_plans, pm.reserved_floor, 30.0, start=pm.lagrange)
    return pm, lag


def _crowded_portfolio(seed: int) -> dict:
    """A tiny portfolio whose master LP more often reserves a fraction of a node: reservations
    cheap against on demand, at most one on-demand GPU per bucket, no spot, and each job twice
    (four jobs competing for the reserved GPUs)."""
    p = tiny_portfolio(seed)
    for e in p["gpus"]:
        e["reserved_usd_per_gpu_hour"] = round(e["reserved_usd_per_gpu_hour"] * 0.4, 3)
        e["on_demand_available_gpus"] = [min(1, n) for n in e["on_demand_available_gpus"]]
        for key in ("spot_usd_per_gpu_hour", "spot_available_gpus", "spot_preemptions_per_gpu_hour"):
            e.pop(key, None)
    for k in range(2):
        twin = copy.deepcopy(p["jobs"][k])
        twin["instance"]["name"] = f"j{k + 2}"
        p["jobs"].append(twin)
    return p


@pytest.mark.parametrize("seed", split_seeds(range(30), 8))
@pytest.mark.parametrize("make", [tiny_portfolio, _crowded_portfolio], ids=["tiny", "crowded"])
def test_branching_bound_is_at_most_the_brute_force_optimum(seed, make):
    p = make(seed)
    oracle = best_portfolio_cost(load_portfolio(p))
    if oracle is None:
        return
    pm, lag = _column_generation(p)
    if lag is None:
        return
    assert lag.bound_usd <= oracle * (1 + TOLERANCE) + TOLERANCE, (lag.bound_usd, oracle)
    for incumbent in (None, oracle):   # unpruned, then pruned by the optimum itself
        out = branch_and_price(pm, lag, 30.0, incumbent=lambda: incumbent)
        if out is None:
            # nothing to branch on: every master-LP reservation is a multiple of its step already
            assert branching_type(pm, lag, {g: q for g in pm.data.gpus if (q := reservation_step(pm, g))}) is None or incumbent is not None
            continue
        assert out.bound_usd >= lag.bound_usd
        assert out.bound_usd <= oracle * (1 + TOLERANCE) + TOLERANCE, (seed, incumbent, out.bound_usd, oracle, out.branched)
        assert out.nodes >= 1 and out.branches   # one child when the other box is empty


@pytest.mark.slow  # 4 s on 2 cores (the default run's heaviest); .ci/run runs it with -m slow
def test_branching_goes_deeper_than_one_level_and_closes_the_gap_somewhere():
    """The search is not one branching in disguise: on some random crowded tiny portfolio it
    branches again below the first level, on some it branches on a job's schedules, and it
    lifts the column generation bound, staying at most the optimum on every one."""
    deepest, lifted, on_jobs = 0, False, 0
    for seed in range(40):
        p = _crowded_portfolio(seed)
        pm, lag = _column_generation(p)
        out = None if lag is None else branch_and_price(pm, lag, 30.0)
        if out is None:
            continue
        oracle = best_portfolio_cost(load_portfolio(p))
        assert oracle is not None and out.bound_usd <= oracle * (1 + TOLERANCE) + TOLERANCE, (seed, out.bound_usd, oracle)
        deepest = max(deepest, out.depth)
        lifted |= out.bound_usd > lag.bound_usd * (1 + 1e-3)
        on_jobs += out.job_branchings
        if deepest >= 2 and lifted and on_jobs:
            break
    assert deepest >= 2 and lifted and on_jobs, (deepest, lifted, on_jobs)


@pytest.mark.parametrize("seed", range(6))
def test_a_job_rule_and_its_complement_split_the_job_minimum_exactly(seed):
    """The job-level branchings partition a job's schedules: at random multipliers, the least
    share with a bucket held and with it not held (and with one plan pair and with the others)
    are each at least the job's least share, the lesser of the two is it, and each minimiser
    obeys its rule (a forced bucket is held, a forbidden one is not)."""
    rng = np.random.default_rng(seed)
    for make in (tiny_portfolio, _crowded_portfolio):
        pm = PortfolioModel(make(seed))
        pm.warm_start(floors=True, starts=False)
        d = pm.data
        gpu_index = {g: n for n, g in enumerate(d.gpus)}
        for jp in pm.job_plans:
            lam = rng.uniform(0.0, 50.0, size=(len(d.buckets), len(d.gpus), 3)) * rng.integers(0, 2, size=(len(d.buckets), len(d.gpus), 3))
            whole, _ = job_minimum(jp, lam, gpu_index)
            if not np.isfinite(whole):
                continue
            splits = [(JobRule(buckets_in=frozenset({b})), JobRule(buckets_out=frozenset({b}))) for b in range(len(d.buckets))]
            splits += [(JobRule(pairs=frozenset({p})), JobRule(pairs=frozenset(range(len(jp.pairs))) - {p})) for p in range(len(jp.pairs))]
            for rules in splits:
                values = []
                for rule in rules:
                    v, ch = ruled_minimum(jp, lam, gpu_index, rule)
                    values.append(v)
                    if ch is not None:
                        assert rule.admits(ch[1], ch[2]), (rule, ch)
                        assert v >= whole - 1e-6 * max(1.0, abs(whole))
                assert min(values) == pytest.approx(whole, rel=1e-9, abs=1e-6), (rules, values, whole)
