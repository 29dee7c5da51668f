"""The one time budget of a portfolio solve (solver/job/budget.py): its deadline, shares,
sub-solve limits and restore time, and what a solve's phases record in it."""

from __future__ import annotations

import math
import time

import pytest

from planopt.job.budget import (COMPLETE_SECONDS, COMPLETE_SHARE, MIN_SOLVE_SECONDS, RESTORE_MARGIN, RESTORE_SECONDS,
                                      UNLIMITED_SEARCH_SECONDS, TimeBudget)
from planopt.portfolio.phases import SEARCH_PHASES
from planopt.portfolio.solve import PortfolioModel

from tests.support.common import INSTANCES

SMALL = INSTANCES / "portfolio-small.json"
CLOCK_SLACK = 0.5   # seconds: what the clock may move between two lines of a test on a busy machine


def test_without_a_limit_nothing_expires_and_the_search_takes_its_share_of_the_notional_time():
    budget = TimeBudget()
    assert not budget.limited and budget.left() is None and budget.share(0.5) is None and not budget.expired()
    assert budget.sub_solve_seconds(COMPLETE_SHARE) == min(COMPLETE_SECONDS, COMPLETE_SHARE * UNLIMITED_SEARCH_SECONDS) == 3.0


def test_a_limit_counts_from_its_start_and_shares_what_is_left():
    now = time.perf_counter()
    budget = TimeBudget.of(10.0, started_at=now - 4.0)
    assert budget.limited and budget.end == pytest.approx(now + 6.0)
    assert 6.0 - CLOCK_SLACK <= budget.left() <= 6.0
    assert 3.0 - CLOCK_SLACK <= budget.share(0.5) <= 3.0
    assert not budget.expired() and budget.expired(now + 6.0)
    # a sub-solve gets its share of the time left, at most COMPLETE_SECONDS, at least MIN_SOLVE_SECONDS
    assert budget.sub_solve_seconds(0.1) == pytest.approx(0.1 * budget.left(), abs=0.1 * CLOCK_SLACK)
    assert TimeBudget.of(100.0, started_at=now).sub_solve_seconds(1.0) == COMPLETE_SECONDS
    late = TimeBudget.of(1.0, started_at=now - 2.0)
    assert late.expired() and late.left() < 0 and late.sub_solve_seconds(COMPLETE_SHARE) == MIN_SOLVE_SECONDS


def test_the_restore_time_is_kept_from_the_longest_schedule_lp_measured():
    budget = TimeBudget()
    assert budget.longest_restore == 0.0 and budget.restore_seconds() == RESTORE_SECONDS
    budget.restores += [1.0, 2.5, 0.5]
    assert budget.longest_restore == 2.5
    assert budget.restore_seconds() == max(RESTORE_SECONDS, RESTORE_MARGIN * 2.5)
    budget.restores.append(4.0)
    assert budget.restore_seconds() == RESTORE_MARGIN * 4.0


def test_a_phase_with_its_own_stop_shares_the_measurements():
    budget = TimeBudget.of(60.0, started_at=time.perf_counter())
    stop = budget.until(budget.end - 30.0)
    assert stop.end == budget.end - 30.0 and stop.started == budget.started
    with stop.restore():
        time.sleep(0.01)
    with stop.phase("branching"):
        time.sleep(0.01)
    with budget.phase("branching"):
        pass
    assert len(budget.restores) == 1 and budget.longest_restore >= 0.01
    assert budget.spent["branching"] >= 0.01 and budget.seconds("branching", "absent") == budget.spent["branching"]


def test_a_solve_records_its_phases_within_its_time():
    pm = PortfolioModel(SMALL)
    t0 = time.perf_counter()
    res = pm.solve(time_limit=60.0, started_at=t0)
    wall = time.perf_counter() - t0
    budget = pm.budget
    assert res.status == "optimal" and res.jobs
    assert budget.end == t0 + 60.0 and budget.started == t0
    assert list(budget.spent)[:2] == ["warm start", "search"]   # the phases in the order they ran
    assert budget.spent["warm start"] == res.warm_start_seconds
    assert math.isclose(res.search_seconds, budget.seconds(*SEARCH_PHASES), rel_tol=1e-12, abs_tol=1e-12)
    assert sum(budget.spent.values()) <= wall
    assert budget.restores and budget.longest_restore <= wall   # the search loaded a schedule by its LP
    restores = list(budget.restores)
    pm.solve(time_limit=60.0)   # a second solve of the model keeps the schedule LPs measured so far
    assert pm.budget is not budget and pm.budget.restores[:len(restores)] == restores


def test_a_limit_that_cannot_hold_the_build_stops_before_it_with_what_it_would_take(monkeypatch):
    """``BUILD_SECONDS_PER_SCHEDULE_KEY`` x the schedule keys more than the limit leaves: no model is built, the answer
    is the time limit's with no schedule and says how long the build would take; with the time, the solve runs."""
    import planopt.portfolio.solve as solve
    from planopt.portfolio.loading import load_portfolio, portfolio_memory
    keys = portfolio_memory(load_portfolio(SMALL)).keys
    monkeypatch.setattr(solve, "BUILD_SECONDS_PER_SCHEDULE_KEY", 3600.0 / keys)   # an hour's build
    built = []
    monkeypatch.setattr(solve.PortfolioModel, "__init__", lambda self, *a, **k: built.append(1) or (_ for _ in ()).throw(
        AssertionError("built")))
    result = solve.solve_portfolio(SMALL, time_limit=60.0)
    assert built == [] and result.status == "time_limit" and not result.jobs
    assert "takes about 3600.0 s" in result.message and f"{keys:,} schedule variables" in result.message
    monkeypatch.undo()
    assert solve.solve_portfolio(SMALL, time_limit=60.0).status == "optimal"


def test_a_chance_constrained_solve_also_stops_before_a_build_it_cannot_hold(monkeypatch):
    """``solve PORTFOLIO --confidence C --time-limit L``: the chance-constrained model (the same schedule keys and
    more rows) is not built when the limit cannot hold the plain model's build (it overran a 1 s limit by 8 s on a
    generated 40-job portfolio, measured 2026-12-07)."""
    import planopt.portfolio.chance as chance
    import planopt.portfolio.solve as solve
    from planopt.portfolio.loading import load_portfolio, portfolio_memory
    data = load_portfolio(SMALL)
    keys = portfolio_memory(data).keys
    monkeypatch.setattr(solve, "BUILD_SECONDS_PER_SCHEDULE_KEY", 3600.0 / keys)
    monkeypatch.setattr(chance.PortfolioModel, "__init__", lambda self, *a, **k: (_ for _ in ()).throw(
        AssertionError("built")))
    source = {**data.portfolio.model_dump(mode="json", exclude_none=True)}
    for g in source["gpus"]:
        g.update(on_demand_shortfall_probability_per_bucket=0.05, on_demand_shortfall_share=0.5)
    result = chance.solve_portfolio_at_confidence(source, 0.8, scenarios=20, time_limit=60.0)
    assert result.status == "time_limit" and not result.jobs and "takes about 3600.0 s" in result.message


def test_a_run_without_a_time_limit_has_none_after_a_run_with_one():
    """Pyomo's persistent interface kept the last run's limit when the next had none; the hand-over's has none."""
    pm = PortfolioModel(SMALL)
    pm.solver.set_instance(pm.model)
    stopped = pm.solver.solve(pm.model, time_limit=1e-6)
    free = pm.solver.solve(pm.model)
    from planopt.job.model import _status
    assert _status(stopped) == "time_limit" and _status(free) == "optimal"
    assert pm.solver._h.getOptionValue("time_limit")[1] == math.inf
