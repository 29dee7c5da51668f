"""Reservations that start later (``reserved_start_buckets``): the start bucket of each contract is
a decision of the MIP. Held to a brute-force oracle that enumerates every contract vector
(``portfolio_oracle.least_contract_cost``), replayed as discrete events, and, without the new
field or with only bucket 0, the same answers as before."""

from __future__ import annotations

import copy
import json

import pytest

from planopt.portfolio.solve import load_portfolio, solve_portfolio
from planopt.portfolio.replay import replay_schedule

from tests.support.common import INSTANCES, refused
from tests.support.portfolio_oracle import assert_optimum_is, best_portfolio_cost, close, later3_portfolio, later_portfolio, tiny_portfolio
from tests.support.common import split_seeds



def solved(p) -> tuple:
    res = solve_portfolio(p, rel_gap=1e-9)
    out = json.loads(json.dumps(res.to_dict()))
    return res, out, (replay_schedule(load_portfolio(p), out) if res.jobs else [])


@pytest.mark.parametrize("seed", split_seeds(range(12), 6))
def test_later_starts_match_brute_force_and_replay(seed):
    p = later_portfolio(seed)
    oracle = best_portfolio_cost(load_portfolio(p))
    res, out, problems = solved(p)
    if not assert_optimum_is(res, oracle):
        return
    assert res.violations == [] and problems == [], (res.violations, problems)
    # the reported bound is a bound (HiGHS's alone: the Lagrangian is bypassed)
    assert res.bound_usd is None or res.bound_usd <= oracle * (1 + 1e-6) + 1e-6
    assert "reserved_start_buckets" in res.message
    paid = sum(r["commitment_usd"] for r in out["procurement"] if r["tier"] == "reserved")
    assert close(paid, res.cost_breakdown_usd["reserved"], rel=1e-9) or paid == res.cost_breakdown_usd["reserved"] == 0


@pytest.mark.parametrize("seed", [*range(6), *(pytest.param(s, marks=pytest.mark.slow) for s in range(6, 16))])
def test_three_buckets_with_lead_times_match_brute_force(seed):
    """Contracts signed in bucket 0, 1 or 2 with lead times of 0 or 1 bucket (a contract signed in
    bucket 1 with a lead of 1 arrives in bucket 2)."""
    p = later3_portfolio(seed)
    oracle = best_portfolio_cost(load_portfolio(p))
    res, out, problems = solved(p)
    if oracle is None:
        assert res.status == "infeasible", (res.status, res.cost_usd)
        return
    assert res.status == "optimal" and close(res.cost_usd, oracle), (res.cost_usd, oracle)
    assert res.violations == [] and problems == [], (res.violations, problems)


@pytest.mark.parametrize("seed", range(6))
def test_the_time_limited_path_starts_from_the_bucket_zero_twin_and_matches_brute_force(seed):
    """Under a time limit the bucket-0 twin (one contract from bucket 0, with the whole warm start
    and search) is solved first and its schedule kept as the fallback; the answer is still the
    oracle's optimum, and the bound (HiGHS's, never the twin's) is at most it."""
    p = later_portfolio(seed)
    oracle = best_portfolio_cost(load_portfolio(p))
    res = solve_portfolio(p, time_limit=60, rel_gap=1e-9)
    if oracle is None:
        assert res.status == "infeasible"
        return
    assert res.status == "optimal" and close(res.cost_usd, oracle), (res.cost_usd, oracle)
    assert "bucket-0 twin" in res.message
    assert res.bound_usd is not None and res.bound_usd <= oracle * (1 + 1e-6) + 1e-6, (res.bound_usd, oracle)
    out = json.loads(json.dumps(res.to_dict()))
    assert replay_schedule(load_portfolio(p), out) == []


def test_later_starts_never_cost_more_and_sometimes_save():
    """Across the seeds the option never costs more (bucket 0 stays a choice) and saves somewhere."""
    saved = 0
    for seed in range(12):
        with_later = best_portfolio_cost(load_portfolio(later_portfolio(seed)))
        without = best_portfolio_cost(load_portfolio(tiny_portfolio(seed)))
        if without is None:
            continue
        assert with_later is not None and with_later <= without * (1 + 1e-9), (seed, with_later, without)
        saved += with_later < without * (1 - 1e-6)
    assert saved >= 1


@pytest.mark.slow
def test_the_shipped_later_portfolio_signs_later_and_saves():
    res, out, problems = solved(str(INSTANCES / "portfolio-later-starts.json"))   # portfolio-small, contracts in 0, 4 or 8
    base = solve_portfolio(str(INSTANCES / "portfolio-small.json"), rel_gap=1e-9)
    assert res.status == "optimal" and problems == [] and res.violations == []
    rows = [r for r in out["procurement"] if r["tier"] == "reserved"]
    later_signed = sum(r["start_bucket"] > 0 for r in rows)
    assert later_signed >= 1, rows
    assert res.cost_usd < base.cost_usd - 1.0, (res.cost_usd, base.cost_usd)   # idle buckets 0..3 are not paid for
    readme = (INSTANCES.parent / "README.md").read_text()
    assert f"${res.cost_usd:,.0f} against ${base.cost_usd:,.0f}" in readme   # what the README states
    for r in rows:   # each contract is paid for every hour from its start to the horizon's end
        assert r["committed_hours"] == (12 - r["start_bucket"]) * 24


@pytest.mark.parametrize("seed", range(4))
def test_only_bucket_zero_gives_the_same_answer_as_before(seed):
    p = tiny_portfolio(seed)
    q = copy.deepcopy(p)
    for e in q["gpus"]:
        e["reserved_start_buckets"] = [0]
    a, b = solve_portfolio(p, rel_gap=1e-9), solve_portfolio(q, rel_gap=1e-9)
    assert a.status == b.status
    if a.cost_usd is not None:
        assert close(a.cost_usd, b.cost_usd), (a.cost_usd, b.cost_usd)
        assert a.reserved == b.reserved


@pytest.mark.parametrize("starts, lead, field", [
    ([0, 0], 0, "gpus.0.reserved_start_buckets"),
    ([0, 12], 0, "gpus.0.reserved_start_buckets"),
    ([0, 10], 2, "gpus.0.reserved_start_buckets"),
    ([], 0, "gpus.0.reserved_start_buckets"),
])
def test_bad_start_buckets_exit_2_naming_the_field(tmp_path, starts, lead, field):
    p = json.loads((INSTANCES / "portfolio-small.json").read_text())
    p["gpus"][0].update(reserved_start_buckets=starts, reserved_lead_buckets=lead)
    refused(tmp_path, p, field)


def test_a_contract_is_paid_for_whole_terms_from_its_start():
    from planopt.models.catalog.prices import TERM_HOURS
    from planopt.models.schema.portfolio import PortfolioData
    month = TERM_HOURS["reserved_1m"]
    assert PortfolioData.contract_hours(None, 100.0) == 100.0
    assert PortfolioData.contract_hours("1m", 100.0) == month
    assert PortfolioData.contract_hours("1m", month + 1.0) == 2 * month
    assert PortfolioData.contract_hours("1m", month) == month
    d = load_portfolio(str(INSTANCES / "portfolio-later-starts.json"))
    assert d.committed_hours_from["L40S"] == {0: 288.0, 4: 192.0, 8: 96.0}
    assert d.committed_hours_from["L40S"][0] == d.committed_hours["L40S"]
    assert d.reserved_in_force("L40S", {0: 2, 4: 4, 8: 8}, 5) == 6


@pytest.mark.slow
def test_a_later_contract_runs_only_after_its_lead_time():
    """With a lead time of 2 buckets, a contract signed in bucket s holds no job before s + 2:
    the evaluator (per bucket, from the contracts) and the replay (from the procurement rows) agree
    with the MIP, and the lead time costs something here."""
    p = json.loads((INSTANCES / "portfolio-later-starts.json").read_text())
    fast, _, _ = solved(copy.deepcopy(p))
    p["gpus"][0]["reserved_lead_buckets"] = 2
    res, out, problems = solved(p)
    assert res.status == "optimal" and res.violations == [] and problems == [], (res.violations, problems)
    for r in out["procurement"]:
        if r["tier"] == "reserved" and r["gpu"] == "H100-SXM":
            assert r["start_bucket"] - 2 in (0, 4, 8)   # arrives two buckets after signing
    assert res.cost_usd > fast.cost_usd + 1.0, (res.cost_usd, fast.cost_usd)


def test_starts_without_bucket_zero_reserve_nothing_before_the_first():
    """Starts [4, 8] only: no reserved GPU runs before bucket 4, under a time limit too (no
    bucket-0 twin: it would not be a schedule of this portfolio), and it costs at least the
    [0, 4, 8] optimum, of which it is a restriction."""
    p = json.loads((INSTANCES / "portfolio-later-starts.json").read_text())
    free, _, _ = solved(copy.deepcopy(p))
    for g in p["gpus"]:
        g["reserved_start_buckets"] = [4, 8]
    res = solve_portfolio(p, time_limit=60, rel_gap=1e-9)
    out = json.loads(json.dumps(res.to_dict()))
    assert res.status == "optimal" and res.violations == [] and replay_schedule(load_portfolio(p), out) == []
    assert "bucket-0 twin" not in res.message
    assert all(b >= 4 for js in res.jobs for (b, k) in js.gpu_hours if k == "reserved")
    assert res.cost_usd >= free.cost_usd * (1 - 1e-6)
