"""What the portfolio solve keeps at its end (solver/portfolio/solve.py): when the search and the bound
prove the gap, no MIP proper runs and the schedule returned is the one already in the model,
which ``holds_best`` must recognise (it is what lets a time-limited solve skip reloading the best
schedule, the time that made 100-job solves overrun, BENCHMARKS.md §3) -- and must not mistake
another schedule for."""

from __future__ import annotations

import math

import pyomo.environ as pyo
import pytest

from planopt.job.budget import TimeBudget
from planopt.portfolio.solve import PortfolioModel

from tests.support.common import split_seeds
from tests.support.portfolio_oracle import best_portfolio_cost, tiny_portfolio

TOLERANCE = 1e-6   # relative, as the time-limited path's test


@pytest.mark.parametrize("seed", split_seeds(range(24), 8))
def test_the_model_holds_the_best_schedule_at_the_end_and_a_changed_one_is_told_apart(seed):
    p = tiny_portfolio(seed)
    pm = PortfolioModel(p)
    res = pm.solve(rel_gap=1e-9, time_limit=120.0)
    if not res.jobs or pm.best is None:
        pytest.skip("no schedule, or the search found none")
    oracle = best_portfolio_cost(pm.data)
    assert math.isclose(res.mip_cost_usd, oracle, rel_tol=TOLERANCE, abs_tol=TOLERANCE)
    assert pm.holds_best()
    assert pyo.value(pm.model.objective) <= pm.best[0] * (1 + 1e-7) + 1e-9
    # one more reserved node of every type raises the cost: that is not the best schedule
    m = pm.model
    for g in m.G:
        m.reserved_nodes[g].set_value(round(pyo.value(m.reserved_nodes[g])) + 1)
        m.reserved[g].set_value(pyo.value(m.reserved[g]) + pm.data.node_gpus[g])
    if pyo.value(m.objective) <= pm.best[0] * (1 + 1e-7):
        pytest.skip("reservations are free in this portfolio")
    assert not pm.holds_best()
    pm.load_best(threads=1, budget=TimeBudget())
    assert pm.holds_best()
    assert math.isclose(pyo.value(m.objective), pm.best[0], rel_tol=1e-7, abs_tol=1e-7)


def _without_search(monkeypatch):
    """Solves in which the search finds nothing (as under a short limit), counting the fallback LPs."""
    monkeypatch.setattr(PortfolioModel, "search", lambda self, result, threads, budget: None)
    fallbacks = []
    real = PortfolioModel.gang_fallback

    def counted(self, threads, time_limit):
        ok = real(self, threads, time_limit)
        fallbacks.append(ok)
        return ok

    monkeypatch.setattr(PortfolioModel, "gang_fallback", counted)
    return fallbacks


@pytest.mark.parametrize("seed", split_seeds(range(24), 8))
def test_the_gang_schedule_is_loaded_before_the_mip_and_the_mip_still_finds_the_optimum(seed, monkeypatch):
    fallbacks = _without_search(monkeypatch)
    pm = PortfolioModel(tiny_portfolio(seed))
    res = pm.solve(rel_gap=1e-9, time_limit=120.0)
    oracle = best_portfolio_cost(pm.data)
    if oracle is None:
        assert not res.jobs
        pytest.skip("no schedule")
    if pm.gang_values is None:
        pytest.skip("the gang heuristic placed no schedule")
    assert fallbacks == [True]   # loaded once, before the MIP proper, and not again after it
    assert math.isclose(res.mip_cost_usd, oracle, rel_tol=TOLERANCE, abs_tol=TOLERANCE)
    assert res.violations == [] and res.big_m_breaches == []


@pytest.mark.parametrize("seed", split_seeds(range(24), 8))
def test_a_mip_that_finds_nothing_in_time_returns_the_schedule_loaded_before_it(seed, monkeypatch):
    """The MIP proper ends at its limit without a solution: the answer is the gang heuristic's
    schedule, already in the model, with no second LP after the MIP."""
    from types import SimpleNamespace
    from pyomo.contrib.solver.common.results import SolutionStatus, TerminationCondition
    fallbacks = _without_search(monkeypatch)
    pm = PortfolioModel(tiny_portfolio(seed))
    real_solve = pm.solver.solve

    def no_solution_from_the_mip_proper(model, **kwargs):
        if "mip_heuristic_effort" in kwargs.get("solver_options", {}):   # only the MIP proper sets it
            return SimpleNamespace(termination_condition=TerminationCondition.maxTimeLimit,
                                   solution_status=SolutionStatus.noSolution, incumbent_objective=None,
                                   objective_bound=float("-inf"))
        return real_solve(model, **kwargs)

    pm.solver.solve = no_solution_from_the_mip_proper
    res = pm.solve(rel_gap=1e-9, time_limit=120.0)
    oracle = best_portfolio_cost(pm.data)
    if oracle is None or pm.gang_values is None:
        pytest.skip("no schedule, or the gang heuristic placed none")
    assert fallbacks == [True]
    assert res.status == "time_limit" and res.jobs and "gang heuristic" in res.message
    assert res.mip_cost_usd >= oracle * (1 - TOLERANCE) - TOLERANCE   # a schedule, so no cheaper than the optimum
    assert res.violations == [] and res.big_m_breaches == []
    assert res.gap is not None and res.gap >= 0.0
