"""Load and validate instances from files or dicts."""

from __future__ import annotations

import math
import numbers
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from planopt.models.schema.instance import Instance

from planopt.errors import InputError, describe_validation_error, read_json


def load_instance(source: str | Path | dict[str, Any] | Instance) -> Instance:
    """An :class:`Instance` from a path, a dict or an Instance; raises InputError naming the field."""
    if isinstance(source, Instance):
        return source
    name = "instance"
    if not isinstance(source, dict):
        name = str(source)
        source = read_json(source)
    try:
        inst = Instance.model_validate(source)
    except ValidationError as exc:
        raise InputError(describe_validation_error(exc, name)) from None
    for field, value in inst.constraints.model_dump().items():
        if field in LIMIT_RANGES and value is not None:
            check_limit(field, value, f"{name}: constraints.{field}")
    return inst


# Sane ranges of the limits a user passes as overrides (CLI flags, API keywords):
# finite, and far beyond any real job, so only typos and absurd values (NaN,
# inf, 1e308, which HiGHS would treat as "no limit" and print warnings about)
# are refused. Budgets: a trillion dollars. Deadlines: about 114 years. Scores
# and forgetting: points of benchmarks that score up to 100, with room to spare.
LIMIT_RANGES = {
    "budget_usd": (0.0, 1e12, "USD"),
    "deadline_hours": (0.0, 1e6, "hours"),
    "max_forgetting_points": (0.0, 1e6, "points"),
    "min_quality": (-1e6, 1e6, "points"),
}
# A time limit below 10 ms cannot even load the model into HiGHS, so the solve
# would stop with no incumbent; one over a year is a typo.
TIME_LIMIT_RANGE_SECONDS = (0.01, 3.2e7)


def _is_number(value: Any) -> bool:
    """A real number (numpy's included), not a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def check_limit(name: str, value: Any, label: str) -> float:
    """``value`` as a float when it is a sane value of limit ``name``; InputError naming ``label`` otherwise."""
    low, high, unit = LIMIT_RANGES[name]
    if not _is_number(value) or not math.isfinite(value) or not low <= value <= high:
        raise InputError(f"{label}: expected a finite number from {low:g} to {high:g} ({unit}), got {value!r}")
    return float(value)


def check_time_limit(value: Any, label: str = "--time-limit") -> float | None:
    """``value`` in seconds (None: no limit); InputError naming ``label`` when not a sane time limit."""
    if value is None:
        return None
    low, high = TIME_LIMIT_RANGE_SECONDS
    if not _is_number(value) or not math.isfinite(value) or not low <= value <= high:
        raise InputError(f"{label}: expected a number of seconds from {low:g} to {high:g}, got {value!r}")
    return float(value)


class Checked:
    """An instance checked as ``planopt validate`` checks it: its schema, its model size (every job's, for
    a portfolio), its model built. ``kind`` is ``job`` or ``portfolio``; ``model`` the built model;
    for a job ``plan_space`` (the arithmetic of its plans) and ``model_mib`` (the model's estimated size),
    for a portfolio ``plans`` (over its jobs)."""

    def __init__(self, kind: str, model, plan_space: str | None = None, model_mib: float | None = None,
                 plans: int | None = None):
        self.kind, self.model, self.plan_space, self.model_mib, self.plans = kind, model, plan_space, model_mib, plans


def check_instance(source: str | Path | dict[str, Any], label: str = "instance") -> Checked:
    """``planopt validate`` (the CLI and ``POST /api/validate``): the instance, a job or a portfolio, checked
    and its model built without solving; InputError naming the field (a portfolio's job by ``label: job 'NAME'``)."""
    data = source if isinstance(source, dict) else read_json(source)
    if data.get("kind") == "portfolio":
        from planopt.job.plan_space import check_model_size
        from planopt.portfolio.solve import PortfolioModel, load_portfolio
        portfolio = load_portfolio(source)
        plans = 0
        for name, inst in zip(portfolio.names, portfolio.instances):  # each job's own model, before the portfolio's
            try:
                plans += check_model_size(inst).plans
            except InputError as exc:
                raise InputError(f"{label}: job {name!r}: {exc}") from None
        return Checked("portfolio", PortfolioModel(portfolio), plans=plans)
    from planopt.job.model import PlanModel
    from planopt.job.plan_space import check_model_size
    from planopt.report.plan_space import plan_space_line
    inst = load_instance(source)
    space = check_model_size(inst)  # an instance solve would refuse is refused here, with the same line
    pm = PlanModel(inst)
    return Checked("job", pm, plan_space=plan_space_line(pm), model_mib=space.model_mib)
