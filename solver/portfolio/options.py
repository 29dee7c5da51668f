"""The options of a portfolio solve, checked in one place for the CLI and the service.

``planopt solve portfolio.json`` (``cli/portfolio.py``) and the service's portfolio
endpoints (``service/payloads.py``) take the same options with the same meaning;
:func:`check_portfolio_options` checks them and :func:`solve_with_options` runs
the solve they ask for, so the two cannot drift apart. Only the spelling of an
option differs: the CLI's flag (``--scenarios``) or the request's field
(``scenarios``), given as ``names``, and every message names the option as its
caller spells it.

- ``objective``: ``cost`` only (a portfolio minimises its total cost).
- ``budget_usd``: caps the total spend (``loading.check_budget``: the single job's rule and bound).
- ``deadline_hours``, ``max_forgetting_points``, ``min_quality``: refused; each
  job's limits are in its own instance.
- ``cvar``: refused (the portfolio's chance constraint has no CVaR objective).
- ``scenarios N`` without ``confidence``: the schedule is solved as usual, then
  replayed in N seeded capacity scenarios (``portfolio_risk``; the result's
  ``risk`` block). 1 <= N <= ``max_scenarios`` of the portfolio.
- ``confidence C [scenarios N]``: the SAA schedule undisrupted in at least
  ceil(C N) of N scenarios (``portfolio_chance``), N default
  ``chance.DEFAULT_SCENARIOS``, at most ``portfolio_chance.MAX_SAA_SCENARIOS``.
- ``seed S``: the draw's seed, a whole number >= 0; a seed other than 0 needs
  ``scenarios`` or ``confidence`` (there is nothing else to seed).
- ``time_limit``: seconds for the whole solve (``instance.check_time_limit``).

Every check is made before any solve (a service job's options are checked when
it is submitted), the capacity fields the scenarios need included.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from planopt.models.schema.portfolio import PortfolioData

from planopt.errors import InputError

OPTIONS = ("objective", "budget_usd", "deadline_hours", "max_forgetting_points", "min_quality", "cvar",
           "scenarios", "seed", "confidence", "time_limit")
CLI_NAMES = {"objective": "--objective", "budget_usd": "--budget-usd", "deadline_hours": "--deadline-hours",
             "max_forgetting_points": "--max-forgetting", "min_quality": "--min-quality", "cvar": "--cvar",
             "scenarios": "--scenarios", "seed": "--seed", "confidence": "--confidence", "time_limit": "--time-limit"}
FIELD_NAMES = {name: name for name in OPTIONS}   # the service's request fields


@dataclass(frozen=True)
class PortfolioOptions:
    """A loaded portfolio and the checked options of its solve."""
    data: PortfolioData
    started_at: float   # time.perf_counter() before the load: the time limit bounds the whole command
    time_limit: Optional[float] = None
    budget_usd: Optional[float] = None
    scenarios: Optional[int] = None
    seed: int = 0
    confidence: Optional[float] = None
    pricing: Any = None   # pricing.Pricing of the CLI's --scheduler, --workers, --serial (None: serial)


def check_portfolio_options(source: str | Path | dict[str, Any] | PortfolioData, names: dict[str, str] = CLI_NAMES,
                            started_at: float | None = None, **given: Any) -> PortfolioOptions:
    """The portfolio ``source`` loaded and the options ``given`` (keys of ``OPTIONS``) checked;
    an InputError names the first wrong option by ``names``. ``started_at`` (a
    ``time.perf_counter`` instant, default now) is when the time limit starts counting."""
    from planopt.uncertainty.chance import DEFAULT_SCENARIOS, check_confidence
    from planopt.instance import check_time_limit
    from planopt.portfolio.solve import check_budget, load_portfolio
    from planopt.portfolio.chance import check_saa_scenarios
    from planopt.portfolio.risk import check_risk_scenarios
    from planopt.uncertainty.risk import check_seed
    started_at = time.perf_counter() if started_at is None else started_at
    unknown = set(given) - set(OPTIONS)
    if unknown:  # a programming error, not a user's: the callers pass only OPTIONS
        raise TypeError(f"unknown portfolio options {sorted(unknown)}")
    get = given.get
    time_limit = check_time_limit(get("time_limit"), names["time_limit"])
    if get("cvar") is not None:
        raise InputError(f"{names['cvar']}: applies to one job; a portfolio does not take it yet")
    objective = getattr(get("objective"), "value", get("objective"))   # the CLI's enum or the service's text
    if objective not in (None, "cost"):
        raise InputError(f"{names['objective']}: a portfolio minimises its total cost ({names['objective']} cost); "
                         f"got {objective!r}")
    for name in ("deadline_hours", "max_forgetting_points", "min_quality"):
        if get(name) is not None:
            raise InputError(f"{names[name]}: a portfolio's jobs carry their own limits (deadline_bucket and each job's "
                             "constraints); set them in the portfolio file")
    scenarios, confidence, seed = get("scenarios"), get("confidence"), check_seed(get("seed", 0), names["seed"])
    if seed and scenarios is None and confidence is None:
        raise InputError(f"{names['seed']}: needs {names['scenarios']} (the seed of the capacity scenarios' draw)")
    budget = check_budget(get("budget_usd"), names["budget_usd"]) if get("budget_usd") is not None else None
    if confidence is not None:
        confidence = check_confidence(confidence, names["confidence"])
    data = load_portfolio(source)
    if scenarios is not None or confidence is not None:   # a bad count or a missing capacity field fails before the solve
        n = check_risk_scenarios(data, DEFAULT_SCENARIOS if scenarios is None else scenarios, names["scenarios"])
        if confidence is not None:
            check_saa_scenarios(n, names["scenarios"], names["confidence"])
        check_capacity(data)
    return PortfolioOptions(data, started_at, time_limit, budget, scenarios, seed, confidence)


def check_capacity(data: PortfolioData) -> None:
    """The fields the capacity scenarios need, with a missing one as an InputError naming it."""
    from planopt.models.uncertainty.capacity import CapacityFieldError, check_capacity_fields
    try:
        check_capacity_fields(data)
    except CapacityFieldError as exc:
        raise InputError(str(exc)) from None


def solve_with_options(options: PortfolioOptions):
    """The ``PortfolioResult`` the options ask for: the least-cost schedule (with its ``risk`` over
    ``scenarios`` capacity scenarios when given), or the schedule held at ``confidence``."""
    if options.confidence is not None:
        from planopt.portfolio.chance import solve_portfolio_at_confidence
        return with_spend(options, solve_portfolio_at_confidence(
            options.data, options.confidence, options.scenarios, options.seed, time_limit=options.time_limit,
            budget_usd=options.budget_usd, started_at=options.started_at))
    from planopt.portfolio.solve import solve_portfolio
    result = solve_portfolio(options.data, time_limit=options.time_limit, budget_usd=options.budget_usd,
                             started_at=options.started_at, pricing=options.pricing)
    if options.scenarios is not None and result.jobs:   # no schedule: nothing to replay
        from planopt.portfolio.risk import portfolio_risk
        result.risk = portfolio_risk(options.data, result.to_dict(), options.scenarios, options.seed).to_dict()
    return with_spend(options, result)


def with_spend(options: PortfolioOptions, result):
    """``result`` with its budget and alert lines (``portfolio/spend.py``) when it has a schedule."""
    if result.jobs:
        from planopt.portfolio.spend import portfolio_spend
        budget = options.budget_usd if options.budget_usd is not None else options.data.portfolio.budget_usd
        result.spend = portfolio_spend(options.data, result, budget)
    return result
