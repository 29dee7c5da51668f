"""The tolerance rule for limits: when a value meets a limit, shared by every path that judges one."""

from __future__ import annotations

# THE tolerance rule for limits (``limit_slack`` and ``exceeds``), shared by the
# evaluator, the oracle, the recipe fixing and the MIP's check of every plan it
# returns: a plan meets a limit L when its value is at most L + limit_slack(L)
# (at least L - limit_slack(L) for a minimum). 1e-9 relative is far below any
# difference a user means (a tenth of a cent on a million dollars) and far above
# float rounding in the cost sums (about 1e-15 relative), so rounding never
# decides a limit.
LIMIT_RELATIVE_TOLERANCE = 1e-9


def limit_slack(limit: float) -> float:
    """How far past ``limit`` a value may lie and still meet it: 1e-9 of max(1, |limit|)."""
    return LIMIT_RELATIVE_TOLERANCE * max(1.0, abs(limit))


def exceeds(value: float, limit: float, sense: str) -> bool:
    """Whether ``value`` breaks ``limit`` (``sense`` "<=" for a maximum, ">=" for a minimum).

    The rule: ``value > limit + limit_slack(limit)`` for a maximum,
    ``value < limit - limit_slack(limit)`` for a minimum."""
    if sense == "<=":
        return value > limit + limit_slack(limit)
    if sense == ">=":
        return value < limit - limit_slack(limit)
    raise ValueError(f"sense: expected '<=' or '>=', got {sense!r}")
