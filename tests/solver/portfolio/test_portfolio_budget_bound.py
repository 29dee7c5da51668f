"""A budget below what any schedule costs (solver/portfolio/solve.py): the Lagrangian bound proves it
before any search or MIP, and the time left goes to the least cost that would do. Held to the
brute-force optimum on random tiny portfolios: the bound named is at most the optimum (else a
feasible budget would be refused) and above the budget, and the budget said to do is the
optimum's."""

from __future__ import annotations

import math
import re

import pytest

from planopt.portfolio.solve import PortfolioModel, load_portfolio

from tests.support.common import split_seeds
from tests.support.portfolio_oracle import best_portfolio_cost, tiny_portfolio

TOLERANCE = 1e-6   # relative, as the time-limited path's test


def dollars(text: str, before: str) -> float:
    """The dollar figure just after ``before`` in a message."""
    found = re.search(re.escape(before) + r" \$([0-9,]+)", text)
    assert found, text
    return float(found.group(1).replace(",", ""))


@pytest.mark.parametrize("seed", split_seeds(range(24), 8))
def test_a_budget_under_the_bound_is_refused_by_the_bound_and_the_least_cost_is_named(seed):
    p = tiny_portfolio(seed)
    oracle = best_portfolio_cost(load_portfolio(p))
    if oracle is None:
        pytest.skip("no schedule at any budget")
    probe = PortfolioModel(p)
    probe.warm_start()
    least = probe.least_cost_bound()
    assert least is not None and least <= oracle * (1 + TOLERANCE) + TOLERANCE, (least, oracle)
    if least < 1.0:
        pytest.skip("a bound under one dollar leaves no budget below it")
    budget = 0.5 * least
    res = PortfolioModel(p, budget_usd=budget).solve(rel_gap=1e-9, time_limit=60.0)
    assert res.status == "infeasible" and not res.jobs
    said = dollars(res.message, "costs at least")
    assert budget < said <= math.ceil(oracle * (1 + TOLERANCE)), (said, oracle, res.message)
    assert dollars(res.message, "a budget of") == math.ceil(oracle) or \
        math.isclose(dollars(res.message, "a budget of"), math.ceil(oracle), abs_tol=1.0), (res.message, oracle)


def test_a_budget_between_the_bound_and_the_optimum_is_still_refused_by_the_mip():
    """Where the bound is below the budget it proves nothing: the MIP must still find the budget
    too small (the bound's early exit must not be the only check)."""
    for seed in range(40):
        p = tiny_portfolio(seed)
        oracle = best_portfolio_cost(load_portfolio(p))
        if oracle is None:
            continue
        probe = PortfolioModel(p)
        probe.warm_start()
        least = probe.least_cost_bound()
        if least is None or least >= oracle * (1 - 1e-3):
            continue   # no room between the bound and the optimum
        budget = 0.5 * (least + oracle)
        res = PortfolioModel(p, budget_usd=budget).solve(rel_gap=1e-9, time_limit=60.0)
        assert res.status == "infeasible" and "costs at least" not in res.message, res.message
        assert dollars(res.message, "a budget of") == pytest.approx(math.ceil(oracle), abs=1.0)
        return
    pytest.skip("no tiny portfolio with a gap between its bound and its optimum")
