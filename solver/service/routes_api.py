"""The synchronous endpoints: each calls the payload function the CLI's command composes.

They run in FastAPI's thread pool (plain ``def``), so a solve does not stall the
server's event loop; work that takes longer than a request should goes through
``/api/jobs`` instead.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any, Optional

from fastapi import APIRouter, Request

from planopt.service import payloads
from planopt.service.errors import StrictJSONResponse
from planopt.service.paths import inline_jobs, portfolio_file, shipped, shipped_case, shipped_names
from planopt.service.requests import (CalibrateRequest, EvaluateRequest, FrontierRequest, PortfolioRequest, SolveRequest,
                       SweepRequest, ValidateRequest)

router = APIRouter(prefix="/api", default_response_class=StrictJSONResponse)


def resolve_instance(ref: Any, settings) -> dict[str, Any]:
    """An instance reference of a request as a plain dict: a shipped name is read, a portfolio's
    jobs given by path are read under --allow-dir (and nowhere else)."""
    data = shipped(ref) if isinstance(ref, str) else ref
    if data.get("kind") == "portfolio":
        data = inline_jobs(data, settings.allow_dir)
    return data


def resolve_portfolio(body: PortfolioRequest, settings) -> dict[str, Any]:
    from planopt.errors import InputError
    if (body.portfolio is None) == (body.path is None):
        raise InputError("portfolio: give exactly one of portfolio (an object or a shipped name) and path")
    if body.path is not None:
        return portfolio_file(body.path, settings.allow_dir)
    return resolve_instance(body.portfolio, settings)


def timed(request: Request, work, *args):
    """Run the library's work, noting its seconds for the ``Server-Timing`` header (``security.Guard``):
    a client can tell the planning time from what HTTP and the service add to it."""
    start = time.perf_counter()
    try:
        return work(*args)
    finally:
        request.state.work_seconds = time.perf_counter() - start


def options_of(body, *skip: str) -> dict[str, Any]:
    return body.model_dump(exclude={"instance", "portfolio", "path", *skip})


@router.get("/health", summary="liveness (no token needed)")
def health() -> dict[str, str]:
    from planopt import __version__
    return {"status": "ok", "version": __version__}


@router.post("/validate", summary="planopt validate: check an instance and build its model")
def validate(body: ValidateRequest, request: Request) -> dict[str, Any]:
    return timed(request, payloads.validate_payload, resolve_instance(body.instance, request.app.state.settings))


@router.post("/solve", summary="planopt solve --json: the optimal plan, its breakdowns, binding limits and risk")
def solve(body: SolveRequest, request: Request) -> dict[str, Any]:
    return timed(request, payloads.solve_payload, resolve_instance(body.instance, request.app.state.settings), options_of(body))


@router.post("/evaluate", summary="planopt evaluate --json: every metric of a given plan")
def evaluate(body: EvaluateRequest, request: Request) -> dict[str, Any]:
    return timed(request, payloads.evaluate_payload, resolve_instance(body.instance, request.app.state.settings),
                 {"plan": body.plan, "scenarios": body.scenarios, "seed": body.seed})


@router.post("/frontier", summary="planopt frontier --json: the exact Pareto frontier")
def frontier(body: FrontierRequest, request: Request) -> dict[str, Any]:
    return timed(request, payloads.frontier_payload, resolve_instance(body.instance, request.app.state.settings), options_of(body))


@router.post("/sweep", summary="planopt sweep --json: one limit over many values")
def sweep(body: SweepRequest, request: Request) -> dict[str, Any]:
    return timed(request, payloads.sweep_payload, resolve_instance(body.instance, request.app.state.settings), options_of(body))


@router.post("/portfolio/solve", summary="planopt solve portfolio.json --json: procurement and schedule")
def portfolio_solve(body: PortfolioRequest, request: Request) -> dict[str, Any]:
    return timed(request, payloads.portfolio_payload, resolve_portfolio(body, request.app.state.settings), options_of(body))


@router.get("/catalog", summary="planopt catalog --json: GPU prices by provider, region and tier, with sources")
def catalog(provider: Optional[str] = None, gpu: Optional[str] = None) -> dict[str, Any]:
    return payloads.catalog_payload(provider, gpu)


@router.get("/catalog/specs", summary="the catalog's accelerators (specs and list prices) and model presets")
def catalog_specs() -> dict[str, Any]:
    return payloads.specs_payload()


@router.post("/calibrate", summary="planopt calibrate on one case: predicted against published figures")
def calibrate(body: CalibrateRequest) -> list[dict[str, Any]]:
    if isinstance(body.case, str):
        return payloads.calibrate_payload(str(shipped_case(body.case)))
    import json
    from planopt.errors import InputError
    with tempfile.TemporaryDirectory() as folder:  # the library reads cases from files
        path = Path(folder) / "case.json"
        path.write_text(json.dumps(body.case, allow_nan=False))
        try:
            return payloads.calibrate_payload(str(path))
        except InputError as exc:  # name the case, not the server's temporary folder
            raise InputError(str(exc).replace(str(path), "case")) from None


@router.get("/instances", summary="the shipped instances: name and kind")
def instances() -> list[dict[str, str]]:
    return shipped_names()


@router.get("/instances/{name}", summary="one shipped instance, as JSON")
def instance(name: str) -> dict[str, Any]:
    return shipped(name)
