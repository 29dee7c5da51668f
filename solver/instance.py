"""Load and validate instances from files or dicts: the schema's shape (``models/schema/instance.py``),
then the consistency checks (``models/consistency.py``), then the limits' sane ranges."""

from __future__ import annotations

import math
import numbers
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from planopt.models.consistency import check_instance
from planopt.models.schema.instance import MAX_MAGNITUDE, Instance

from planopt.errors import InputError, read_json, validation_input_error

if TYPE_CHECKING:  # the evaluator is imported by the functions that evaluate a plan, not by every loader
    from planopt.models.cost.evaluator import Metrics
    from planopt.models.schema.plan import Plan


def parse_instance(data: Any) -> Instance:
    """An :class:`Instance` from ``data`` (a dict), its shape and then its consistency checked: pydantic's
    ValidationError for the shape, ValueError naming the field for a consistency check."""
    inst = Instance.model_validate(data)
    check_instance(inst)
    return inst


def instance_from(data: Any, source: str, base_dir: str | Path | None = None, file: str | None = None) -> Instance:
    """:func:`parse_instance` with InputError ``source: field: expected ...`` for every failure (an
    :class:`~planopt.errors.InputErrors` carrying every error of the schema when there are several).
    ``base_dir``: the instance file's folder, where an architecture's ``hf_config`` path is read (None: an
    instance given as an object, which reads no file); ``file``: the file ``planopt validate`` would check, named
    when there are several errors."""
    try:
        inst = Instance.model_validate(data, context={"base_dir": base_dir})
    except ValidationError as exc:
        raise validation_input_error(exc, source, file) from None
    return checked(inst, source)


def checked(inst: Instance, source: str) -> Instance:
    """``inst`` once its consistency checks pass; InputError ``source: field: ...`` otherwise (as the
    schema's whole-instance checks read)."""
    try:
        check_instance(inst)
    except ValueError as exc:
        raise InputError(f"{source}: {exc}") from None
    return inst


def load_instance(source: str | Path | dict[str, Any] | Instance) -> Instance:
    """An :class:`Instance` from a path, a dict or an Instance (checked too: ``Instance.model_validate``
    checks the shape only); raises InputError naming the field."""
    if isinstance(source, Instance):
        return checked(source, "instance")
    name, base_dir = "instance", None
    if not isinstance(source, dict):
        name, base_dir = str(source), Path(source).resolve().parent
        source = read_json(source)
    inst = instance_from(source, name, base_dir, None if base_dir is None else name)
    for field, value in inst.constraints.model_dump().items():
        if field in LIMIT_RANGES and value is not None:
            check_limit(field, value, f"{name}: constraints.{field}")
    return inst


# Sane ranges of the limits a user passes as overrides (CLI flags, API keywords):
# finite, and far beyond any real job, so only typos and absurd values (NaN,
# inf, 1e308, which HiGHS would treat as "no limit" and print warnings about)
# are refused. Budgets: a trillion dollars, the schema's bound on an instance's or a
# portfolio's budget_usd (MAX_MAGNITUDE), for single jobs and portfolios alike
# (portfolio.loading.check_budget). Deadlines: about 114 years. Scores
# and forgetting: points of benchmarks that score up to 100, with room to spare.
LIMIT_RANGES = {
    "budget_usd": (0.0, MAX_MAGNITUDE, "USD"),
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


def instance_for_plan(inst: Instance, plan: Plan) -> Instance:
    """The instance of the student ``plan`` trains (``Instance.for_student``; ``inst`` itself without
    ``candidate_students``): what its report and its risk read. ValueError naming ``plan.student``."""
    from planopt.models.cost.evaluator import Evaluator
    if not inst.candidate_students:
        return inst
    Evaluator(inst).for_student(plan.student)  # names the field when the plan names no student or another
    return inst.for_student(plan.student)


def evaluate_given_plan(inst: Instance, raw: Any, label: str) -> tuple[Plan, Metrics]:
    """``planopt evaluate`` and ``POST /api/evaluate``: a plan's JSON (the ``plan`` object of a solve, or that
    whole result) read and evaluated on ``inst`` (a choice of student: the one the plan names); returns the plan
    and its metrics. InputError ``label: ...`` when it is not one of the instance's plans."""
    from planopt.models.cost.evaluator import Evaluator
    from planopt.models.schema.plan import read_plan
    if not isinstance(raw, dict):
        raise InputError(f"{label}: expected a JSON object (a plan, or a solve's whole result), got {type(raw).__name__}")
    raw = raw.get("plan", raw) if isinstance(raw.get("plan"), dict) else raw
    try:
        plan = read_plan(raw)
        return plan, Evaluator(inst).evaluate(plan)
    except (ValueError, TypeError, KeyError) as exc:
        raise InputError(f"{label}: {exc}") from None
