"""The work behind every endpoint and job: plain dicts in, the CLI's ``--json`` objects out.

Each function takes only picklable arguments (an instance as a dict, options as plain values)
and runs on a Dask worker process, for a job (``jobs.run_job``) and for a synchronous request
alike (``jobs.run_request``): the service's own process never solves. Each composes the library
functions the CLI composes, and builds its answer with the builder the CLI's ``--json`` uses
(``report/json_results.py``), so the service adds no second cost model and no second JSON
(``tests/solver/service/test_service_equality.py`` holds the answers equal to the CLI's on every shipped instance).

Options are checked with the library's own checks, under the names of the request's fields, so a
mistake gets the CLI's one-line message naming the field.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Optional

from planopt.json_safe import finite_json as strict
from planopt.report.json_results import (calibration_json, catalog_json, chance_frontier_json, evaluate_json, frontier_json,
                                        portfolio_json, solve_json, sweep_json, validate_json)  # the CLI's --json objects: one builder each

Progress = Optional[Callable[[int, int], None]]

LIMIT_FIELDS = ("budget_usd", "deadline_hours", "max_forgetting_points", "min_quality")
OBJECTIVES = ("cost", "quality", "time", "forgetting")



def _job_instance(instance: dict[str, Any], limits: dict[str, Any], objective: Optional[str] = None):
    """The validated single-job instance with the request's limits and objective applied."""
    from planopt.errors import InputError
    from planopt.instance import check_limit, load_instance
    if instance.get("kind") == "portfolio":
        raise InputError("instance: kind: this endpoint plans single jobs (kind 'job'), got a portfolio; "
                         "use /api/portfolio/solve")
    for name in LIMIT_FIELDS:
        if limits.get(name) is not None:
            check_limit(name, limits[name], name)
    if objective is not None and objective not in OBJECTIVES:
        raise InputError(f"objective: expected one of {', '.join(OBJECTIVES)}, got {objective!r}")
    return load_instance(instance).with_overrides(objective=objective, **{k: limits.get(k) for k in LIMIT_FIELDS})


def solve_inputs(instance: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """Every check of a solve request, as the CLI makes them; the arguments of ``solve_instance``."""
    from planopt.uncertainty.chance import check_confidence, check_cvar
    from planopt.errors import InputError
    from planopt.instance import check_time_limit
    from planopt.uncertainty.risk import check_scenarios, check_seed, report_scenarios
    time_limit = check_time_limit(options.get("time_limit"), "time_limit")
    inst = _job_instance(instance, options, options.get("objective"))
    confidence, scenarios = options.get("confidence"), options.get("scenarios")
    seed = check_seed(options.get("seed", 0), "seed")
    if confidence is not None:
        inst = inst.with_overrides(confidence=check_confidence(confidence, "confidence"))
    if scenarios is not None:
        check_scenarios(scenarios, "scenarios")
    cvar = options.get("cvar")
    if cvar is not None:
        if inst.constraints.confidence is None:
            raise InputError("cvar: needs confidence (CVaR is the objective of a chance-constrained solve)")
        cvar = check_cvar(cvar, inst.objective)
    if confidence is None and scenarios is None and inst.constraints.confidence is None:
        scenarios = report_scenarios(inst)  # the CLI reports every plan's risk over the default scenario count
    return {"source": inst, "time_limit": time_limit, "sensitivity": options.get("sensitivity", True),
            "scenarios": scenarios, "seed": seed, "cvar": cvar}


def solve_payload(instance: dict[str, Any], options: dict[str, Any], progress: Progress = None) -> dict[str, Any]:
    """``planopt solve FILE --json`` with the CLI's overrides; a portfolio goes to :func:`portfolio_payload`."""
    from planopt.api import solve_instance
    if instance.get("kind") == "portfolio":
        return portfolio_payload(instance, options, progress)
    return solve_json(solve_instance(**solve_inputs(instance, options)))


def evaluate_payload(instance: dict[str, Any], options: dict[str, Any], progress: Progress = None) -> dict[str, Any]:
    """``planopt evaluate FILE PLAN.json --json``: every metric of a given plan (``options["plan"]``), and its risk."""
    from planopt.api import evaluate_given_plan
    from planopt.uncertainty.risk import check_scenarios, check_seed, plan_risk, report_scenarios
    scenarios, seed = options.get("scenarios"), options.get("seed", 0)
    check_seed(seed, "seed")
    inst = _job_instance(instance, {})
    plan, metrics = evaluate_given_plan(inst, options.get("plan"), "plan")
    scenarios = check_scenarios(scenarios, "scenarios") if scenarios is not None else report_scenarios(inst)
    risk = None if scenarios is None else plan_risk(inst, plan, scenarios, seed)
    return evaluate_json(inst, plan, metrics, risk)


def track_payload(instance: dict[str, Any], options: dict[str, Any], progress: Progress = None) -> dict[str, Any]:
    """``planopt track FILE PLAN.json RUN --json`` on a run given as CSV text (``options["run_csv"]``)."""
    from planopt.runs.track import track_given
    from planopt.runs.readers import read_csv_text
    from planopt.uncertainty.risk import check_seed
    seed = check_seed(options.get("seed", 0), "seed")
    inst = _job_instance(instance, {})
    log = read_csv_text(options.get("run_csv") or "", "run_csv", inst)
    return track_given(inst, options.get("plan"), "plan", log, options.get("mapping"), options.get("scenarios"), seed).to_dict()


def replan_payload(instance: dict[str, Any], options: dict[str, Any], progress: Progress = None) -> dict[str, Any]:
    """``planopt replan FILE PLAN.json RUN --json`` on a run given as CSV text (``options["run_csv"]``)."""
    from planopt.instance import check_time_limit
    from planopt.runs.readers import read_csv_text
    from planopt.runs.replan import replan_given
    from planopt.uncertainty.risk import check_seed
    seed = check_seed(options.get("seed", 0), "seed")
    check_time_limit(options.get("time_limit"), "time_limit")
    inst = _job_instance(instance, options, options.get("objective"))
    log = read_csv_text(options.get("run_csv") or "", "run_csv", inst)
    return replan_given(inst, options.get("plan"), "plan", log, options.get("mapping"), options.get("confidence"),
                        options.get("scenarios"), seed, options.get("time_limit")).to_dict()


def frontier_inputs(instance: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """Every check of a frontier request, as the CLI makes them."""
    from planopt.uncertainty.chance import DEFAULT_SCENARIOS
    from planopt.errors import InputError
    from planopt.studies.frontier import PROBABILITY, check_metric
    from planopt.uncertainty.risk import check_scenarios, check_seed
    x, y = options.get("x", "cost_usd"), options.get("y", "quality")
    inst = _job_instance(instance, options)
    if x == y:
        raise InputError(f"x and y must differ (both are {x})")
    if PROBABILITY in (x, y):
        metric, name = (y, "y") if x == PROBABILITY else (x, "x")
        check_metric(metric, name)
        n = check_scenarios(options["scenarios"], "scenarios") if options.get("scenarios") is not None else DEFAULT_SCENARIOS
        seed = check_seed(options["seed"], "seed") if options.get("seed") is not None else 0
        return {"inst": inst, "x": x, "y": y, "metric": metric, "scenarios": n, "seed": seed}
    for name in ("scenarios", "seed"):
        if options.get(name) is not None:
            raise InputError(f"{name}: applies to a frontier against the probability of meeting the limits (y = probability)")
    check_metric(x, "x")
    check_metric(y, "y")
    return {"inst": inst, "x": x, "y": y, "metric": None}


def frontier_payload(instance: dict[str, Any], options: dict[str, Any], progress: Progress = None) -> dict[str, Any]:
    """``planopt frontier FILE --x X --y Y --json`` (``y = probability``: the chance frontier)."""
    from planopt.studies.frontier import chance_frontier, pareto_frontier
    from planopt.job.model import PlanModel
    given = frontier_inputs(instance, options)
    inst, x, y = given["inst"], given["x"], given["y"]
    if given["metric"] is not None:
        return chance_frontier_json(x, y, chance_frontier(inst, given["metric"], given["scenarios"], given["seed"]))
    return frontier_json(inst, x, y, pareto_frontier(PlanModel(inst), x, y))


def sweep_inputs(instance: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """Every check of a sweep request (``values`` a list, or ``range`` the CLI's ``LO:HI:N`` text)."""
    from planopt.errors import InputError
    from planopt.instance import check_time_limit
    from planopt.studies.sweep import check_values, parse_range
    limit = options.get("limit")
    if limit not in LIMIT_FIELDS:
        raise InputError(f"limit: expected one of {', '.join(LIMIT_FIELDS)}, got {limit!r}")
    if options.get("values") is not None:
        values = options["values"]
        if not isinstance(values, list) or not values or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in values):
            raise InputError(f"values: expected a non-empty list of finite numbers, got {values!r}")
        values = check_values(limit, [float(v) for v in values])
    elif isinstance(options.get("range"), str):
        values = parse_range(options["range"], "range")
    else:
        raise InputError("values: give the limit's values as a list (or range as 'LO:HI:N')")
    if limit != "min_quality" and min(values) < 0:
        raise InputError(f"values: expected non-negative values, got {values!r}")
    time_limit = check_time_limit(options.get("time_limit"), "time_limit")
    return {"inst": _job_instance(instance, {}, options.get("objective")), "limit": limit, "values": values,
            "time_limit": time_limit, "reuse": options.get("reuse", True)}


def sweep_payload(instance: dict[str, Any], options: dict[str, Any], progress: Progress = None) -> dict[str, Any]:
    """``planopt sweep FILE --LIMIT LO:HI:N --json``: one persistent model re-solved over a limit's values."""
    from planopt.job.model import PlanModel
    from planopt.studies.sweep import run_sweep
    given = sweep_inputs(instance, options)
    inst, limit, values = given["inst"], given["limit"], given["values"]
    rows = run_sweep(PlanModel(inst), limit, values, time_limit=given["time_limit"], reuse=given["reuse"],
                     progress=(lambda k: progress(k, len(values))) if progress else None)
    return sweep_json(inst, limit, rows)


def portfolio_inputs(portfolio: dict[str, Any], options: dict[str, Any]):
    """Every check of a portfolio request, as ``planopt solve portfolio.json`` makes them
    (``portfolio_options``: its schema, every job's instance, the options the request sets,
    the capacity fields its scenarios need), under the request's field names. A field a
    portfolio does not take (``sensitivity`` of ``/api/solve``) is ignored, as the CLI does."""
    from planopt.errors import InputError
    from planopt.portfolio.options import FIELD_NAMES, OPTIONS, check_portfolio_options
    if portfolio.get("kind") != "portfolio":
        raise InputError(f"portfolio: kind: expected 'portfolio', got {portfolio.get('kind')!r}")
    refuse_paths(portfolio)
    return check_portfolio_options(portfolio, FIELD_NAMES, **{k: options[k] for k in OPTIONS if k in options})


def portfolio_payload(portfolio: dict[str, Any], options: dict[str, Any], progress: Progress = None) -> dict[str, Any]:
    """``planopt solve portfolio.json --json [--budget-usd X] [--scenarios N] [--confidence C] [--seed S]``;
    every job's instance must already be inline (the service resolves paths under its allowed folder
    first, ``service.paths``)."""
    from planopt.portfolio.options import solve_with_options
    return portfolio_json(solve_with_options(portfolio_inputs(portfolio, options)))


def refuse_paths(portfolio: dict[str, Any]) -> None:
    """Never let the library read a file a request names: jobs given by path are inlined by
    ``service.paths`` (under the operator's allowed folder) before they get here."""
    from planopt.errors import InputError
    jobs = portfolio.get("jobs")
    for i, job in enumerate(jobs if isinstance(jobs, list) else []):  # not a list: the schema says so, next
        if isinstance(job, dict) and isinstance(job.get("instance"), str):
            raise InputError(f"portfolio: jobs.{i}.instance: a path is read only under the service's allowed folder")


def catalog_payload(provider: Optional[str] = None, gpu: Optional[str] = None) -> dict[str, Any]:
    """``planopt catalog --json [--provider P] [--gpu G]``: the GPU prices by provider, region and tier, with sources."""
    from planopt.models.catalog.prices import select_prices
    from planopt.errors import InputError
    try:
        rows = select_prices(provider, gpu)
    except KeyError as exc:
        raise InputError(f"{exc.args[0]}: {exc.args[1]}") from None
    return catalog_json(rows)


def specs_payload() -> dict[str, Any]:
    """The catalog's accelerators (specs, list prices) and model presets, as ``models/catalog/*.json`` hold them."""
    from dataclasses import asdict
    from planopt.models.catalog import load_gpus, load_models
    return strict({"gpus": [asdict(g) for g in load_gpus().values()], "models": [asdict(m) for m in load_models().values()]})


def calibrate_payload(case: Any, options: Optional[dict[str, Any]] = None, progress: Progress = None) -> list[dict[str, Any]]:
    """``planopt calibrate`` on one case: a shipped case's name, or the case itself (a dict, written to a
    temporary file: the library reads cases from files): its rows, each with its P10-P90 interval."""
    import json
    import tempfile
    from pathlib import Path
    from planopt.errors import InputError
    from planopt.service.paths import shipped_case
    from planopt.uncertainty.calibrate import calibrate_case
    from planopt.uncertainty.calibration_intervals import with_intervals
    if isinstance(case, str):
        return calibration_json(with_intervals(calibrate_case(shipped_case(case))))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "case.json"
        path.write_text(json.dumps(case, allow_nan=False))
        try:
            return calibration_json(with_intervals(calibrate_case(path)))
        except InputError as exc:  # name the case, not the worker's temporary folder
            raise InputError(str(exc).replace(str(path), "case")) from None


def validate_payload(instance: dict[str, Any], options: Optional[dict[str, Any]] = None, progress: Progress = None) -> dict[str, Any]:
    """``planopt validate FILE --json``: the instance is checked and its model built; the plan space as the CLI words it."""
    from planopt.report.plan_space import validate_instance
    if instance.get("kind") == "portfolio":
        refuse_paths(instance)
    return validate_json(validate_instance(instance))


KINDS = {"solve": solve_payload, "frontier": frontier_payload, "sweep": sweep_payload, "portfolio": portfolio_payload}
# What the synchronous endpoints run on a worker (``jobs.run_request``): every one that builds or solves a model.
WORK = {**KINDS, "validate": validate_payload, "evaluate": evaluate_payload, "track": track_payload, "replan": replan_payload, "calibrate": calibrate_payload}


def check_job(kind: str, instance: dict[str, Any], options: dict[str, Any]) -> None:
    """Every check the job's payload will make, made now (at submission) so a mistake is a 4xx, not a failed job."""
    if kind == "solve" and instance.get("kind") == "portfolio":
        kind = "portfolio"
    {"solve": solve_inputs, "frontier": frontier_inputs, "sweep": sweep_inputs, "portfolio": portfolio_inputs}[kind](instance, options)
