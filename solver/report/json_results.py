"""The JSON object of every result: one builder per result kind, for the CLI's ``--json`` and the service alike.

Each builder takes what the library computed and returns plain, strict JSON data
(non-finite numbers as null, ``json_safe.finite_json``). The CLI prints it
(``cli/output.emit_json``); the service answers with it (``service/payloads.py``,
on a Dask worker). Nothing else builds these objects, so the two cannot disagree
(``tests/solver/service/test_service_equality.py`` holds them equal on every shipped instance).

| result | builder | the CLI's caller | the service's caller |
|---|---|---|---|
| solve (one job) | :func:`solve_json` | ``cli/options.print_result`` | ``payloads.solve_payload`` |
| evaluate | :func:`evaluate_json` | ``cli/solve.evaluate`` | ``payloads.evaluate_payload`` |
| frontier | :func:`frontier_json` | ``cli/frontier._metric_frontier`` | ``payloads.frontier_payload`` |
| frontier against probability | :func:`chance_frontier_json` | ``cli/frontier._probability_frontier`` | ``payloads.frontier_payload`` |
| sweep | :func:`sweep_json` | ``cli/frontier._limit_sweep`` | ``payloads.sweep_payload`` |
| confidence grid (``sweep --confidence``) | :func:`grid_json` | ``cli/frontier._report_grid`` | (not an endpoint) |
| portfolio solve | :func:`portfolio_json` | ``cli/portfolio.solve_portfolio_command`` | ``payloads.portfolio_payload`` |
| validate | :func:`validate_json` | ``cli/check.validate --json`` | ``payloads.validate_payload`` |
| catalog | :func:`catalog_json` | ``cli/catalog.catalog`` | ``payloads.catalog_payload`` |
| calibrate | :func:`calibration_json` | ``cli/calibrate.calibrate`` | ``payloads.calibrate_payload`` |

The single-job shapes are versioned by ``RESULT_VERSION`` (``job/model.py``, schema
``report/result_schema.py``), the portfolio's by ``portfolio/solve.py``'s. Keys may be
added; none is removed or changes meaning without a new version.

History of this module's own additions (within the versions above):

- ``evaluate``: ``risk`` is left out when no risk is reported (a teacher trained as a stage), as a
  solve leaves it out and as the CLI always did; the service alone sent ``"risk": null`` then (the
  two disagreed on ``instances/qwen3-8b-math-train-the-teacher.json``; the shape is the CLI's, the
  published one: ``report/result_schema.py`` has ``risk`` optional).
- ``validate``: the CLI's ``--json`` is new; both carry ``model_mib`` and ``model_mib_cap`` (one
  job) or ``plans`` (a portfolio: plans over its jobs) besides the service's earlier keys.
"""

from __future__ import annotations

from typing import Any, Optional

from planopt.json_safe import finite_json


def solve_json(result) -> dict[str, Any]:
    """``planopt solve JOB --json`` and ``POST /api/solve``: a :class:`SolveResult` (``job/model.py``)."""
    return finite_json(result.to_dict())


def evaluate_json(inst, plan, metrics, risk) -> dict[str, Any]:
    """``planopt evaluate JOB PLAN --json`` and ``POST /api/evaluate``: every metric of a given plan
    (``metrics``, the evaluator's) on ``inst`` (the instance it was evaluated on), and its ``risk``
    (a ``uncertainty.risk.Risk``; None when none is reported, and the key is left out, as a solve's is)."""
    from planopt.job.model import RESULT_VERSION
    from planopt.models.schema.plan import plan_json
    fits = metrics.fits_memory  # a plan that does not fit does no work: no costs or hours to report
    return finite_json({"version": RESULT_VERSION, "plan": plan_json(plan, inst.student.preset), "fits_memory": fits,
                        "metrics": metrics.summary() if fits else None,
                        "feasible": metrics.feasible, "violations": metrics.violations,
                        "cost_breakdown_usd": metrics.cost_breakdown_usd if fits else None,
                        "hours_breakdown": metrics.hours_breakdown if fits else None, "flops": metrics.flops,
                        "offers": metrics.offers, "quantities": metrics.quantities if fits else None,
                        "cost_split_usd": metrics.cost_split() if fits else None,
                        **({"risk": risk.to_dict()} if risk is not None else {}),
                        **({"environments": metrics.environments} if fits and metrics.environments else {}),
                        **({"pretraining": metrics.pretraining} if fits and metrics.pretraining else {})})


def frontier_risks(inst, front) -> list:
    """Each frontier point's risk over the report's scenarios (None where none is reported)."""
    from planopt.uncertainty.risk import report_risks
    return report_risks([(inst, p.plan, p.student) for p in front.points])


def frontier_caps(inst, front) -> list[str]:
    """The options whose largest value the best-in-y point uses: the option grid, not cost, ends the frontier there."""
    from planopt.studies.frontier import grid_caps
    return grid_caps(inst, front.points[0].plan) if front.points else []


def frontier_json(inst, x: str, y: str, front, risks: Optional[list] = None,
                  capped: Optional[list[str]] = None) -> dict[str, Any]:
    """``planopt frontier JOB --x X --y Y --json`` and ``POST /api/frontier``: the exact Pareto frontier
    (``studies.frontier.pareto_frontier``), each point with its risk. ``risks`` and ``capped`` are
    :func:`frontier_risks` and :func:`frontier_caps`, computed here when not given."""
    risks = frontier_risks(inst, front) if risks is None else risks
    capped = frontier_caps(inst, front) if capped is None else capped
    return finite_json({"x": x, "y": y,
                        "points": [{**p.to_dict(), "risk": r.to_dict() if r else None} for p, r in zip(front.points, risks)],
                        "capped_by_options": capped})


def chance_frontier_json(x: str, y: str, front) -> dict[str, Any]:
    """``planopt frontier JOB --y probability --json`` and ``POST /api/frontier`` with ``y = probability``
    (``studies.frontier.chance_frontier``)."""
    return finite_json({"x": x, "y": y, **front.to_dict()})


def sweep_risks(inst, limit: str, rows) -> list:
    """Each sweep row's risk, on the instance with that row's limit (None where there is no plan)."""
    from planopt.uncertainty.risk import report_risks
    return report_risks([(inst.with_overrides(**{limit: r.value}), r.result.plan, r.result.student) for r in rows])


def sweep_json(inst, limit: str, rows, risks: Optional[list] = None) -> dict[str, Any]:
    """``planopt sweep JOB --LIMIT LO:HI:N --json`` and ``POST /api/sweep`` (``studies.sweep.run_sweep``'s rows);
    ``risks`` is :func:`sweep_risks`, computed here when not given."""
    risks = sweep_risks(inst, limit, rows) if risks is None else risks
    return finite_json({"limit": limit, "objective": inst.objective,
                        "rows": [{**r.to_dict(), "risk": k.to_dict() if k else None} for r, k in zip(rows, risks)]})


def grid_json(inst, limit: Optional[str], scenarios: int, seed: int, points) -> dict[str, Any]:
    """``planopt sweep JOB --confidence ... --json``: the grid of chance-constrained solves (``studies.sweep.run_grid``)."""
    return finite_json({"limit": limit, "objective": inst.objective, "scenarios": scenarios, "seed": seed,
                        "rows": [p.to_dict() for p in points]})


def portfolio_json(result) -> dict[str, Any]:
    """``planopt solve PORTFOLIO --json`` and ``POST /api/portfolio/solve``: a ``PortfolioResult``
    (``portfolio/solve.py``; schema ``report/portfolio_schema.py``)."""
    return finite_json(result.to_dict())


def validate_json(checked) -> dict[str, Any]:
    """``planopt validate FILE --json`` and ``POST /api/validate``: a :class:`planopt.report.plan_space.Checked`
    (``ok`` and ``errors`` as in :func:`invalid_json`, the answer for an instance that is not valid)."""
    if checked.kind == "portfolio":
        d = checked.model.data
        return finite_json({"ok": True, "errors": [], "valid": True, "kind": "portfolio", "jobs": len(d.instances), "gpu_types": len(d.gpus),
                            "buckets": len(d.buckets), "plans": checked.plans, "build_seconds": checked.model.build_seconds})
    from planopt.job.plan_space import MAX_MODEL_MIB
    return finite_json({"ok": True, "errors": [], "valid": True, "kind": "job", "plan_space": checked.plan_space,
                        "model_mib": checked.model_mib, "model_mib_cap": MAX_MODEL_MIB,
                        "build_seconds": checked.model.build_seconds})


def invalid_json(errors: str | list[str]) -> dict[str, Any]:
    """``planopt validate FILE --json`` on an instance that is not valid: ``ok`` false and its ``errors`` (every line
    the CLI prints, each naming its field), with the ``status`` and ``error`` (the first) every command's failure
    carries."""
    lines = [errors] if isinstance(errors, str) else list(errors)
    return {"ok": False, "errors": lines, "error_count": len(lines), "valid": False, "status": "error", "error": lines[0]}


def catalog_json(rows) -> dict[str, Any]:
    """``planopt catalog --json`` and ``GET /api/catalog``: the price rows (``models/catalog/prices.select_prices``)."""
    from planopt.models.catalog.prices import COLUMNS
    return finite_json({"prices": [{c: getattr(r, c) for c in COLUMNS} | {"provider_kind": r.provider_kind, "node_gpus": r.node_gpus,
                                                                         "interconnect": r.interconnect} for r in rows]})


def presets_json(models=None, gpus=None) -> dict[str, Any]:
    """``planopt catalog --models --gpus --json``: the model presets (``models``) and the accelerators (``gpus``)
    of the catalog, each with every field of its entry and its source; only the lists asked for."""
    import dataclasses
    out: dict[str, Any] = {}
    if models is not None:
        out["models"] = [dataclasses.asdict(m) for m in models]
    if gpus is not None:
        out["gpus"] = [dataclasses.asdict(g) for g in gpus]
    return finite_json(out)


def calibration_json(rows) -> list[dict[str, Any]]:
    """``planopt calibrate --json`` and ``POST /api/calibrate``: calibration rows, each with its interval when computed."""
    return finite_json([r.to_dict() for r in rows])
