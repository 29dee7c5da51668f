"""The synchronous endpoints: each runs the payload function the CLI's command composes, on a
worker process of the service's Dask cluster (``jobs.JobRunner.submit_request``), and waits for it
without holding a thread (``async`` endpoints).

No solve runs in the service's own process: the solver's output capture around each HiGHS run
redirects the process's stdout and stderr, which two threads cannot do at once (two simultaneous
``/api/solve`` requests in the web server's thread pool deadlocked it, issue 28 item 1). Work that
takes longer than a request should goes through ``/api/jobs`` instead.
"""

from __future__ import annotations

import logging
from typing import Any, Optional

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool

from planopt.service import payloads
from planopt.service.errors import UNAVAILABLE, StrictJSONResponse, error
from planopt.service.paths import inline_jobs, portfolio_file, price_catalogs, shipped, shipped_case, shipped_names
from planopt.service.requests import (CalibrateRequest, EvaluateRequest, FrontierRequest, PortfolioRequest, SolveRequest,
                       ReplanRequest, SweepRequest, TrackRequest, ValidateRequest)

router = APIRouter(prefix="/api", default_response_class=StrictJSONResponse)
log = logging.getLogger("planopt.service")


def resolve_instance(ref: Any, settings) -> dict[str, Any]:
    """An instance reference of a request as a plain dict: a shipped name is read, a portfolio's
    jobs given by path are read under --allow-dir (and nowhere else)."""
    if isinstance(ref, str):
        return shipped(ref)
    data = ref
    if data.get("kind") == "portfolio":
        data = inline_jobs(data, settings.allow_dir)
    return price_catalogs(data, settings.allow_dir)  # a price file is read only under --allow-dir


def resolve_portfolio(body: PortfolioRequest, settings) -> dict[str, Any]:
    """A portfolio request's portfolio as a plain dict: given inline or by shipped name, or read from ``path`` under
    --allow-dir; exactly one of them."""
    from planopt.errors import InputError
    if (body.portfolio is None) == (body.path is None):
        raise InputError("portfolio: give exactly one of portfolio (an object or a shipped name) and path")
    if body.path is not None:
        return portfolio_file(body.path, settings.allow_dir)
    return resolve_instance(body.portfolio, settings)


async def compute(request: Request, kind: str, instance: Any, options: dict[str, Any]) -> Any:
    """``payloads.WORK[kind]`` on a worker, awaited; its seconds go to the ``Server-Timing`` header
    (``security.Guard``): a client can tell the planning time from what HTTP and the service add to it.
    Bad input is the library's InputError (a 400); an unreachable cluster a 503."""
    from planopt.errors import InputError
    from planopt.service.errors import one_line
    runner = request.app.state.runner
    try:
        future = await run_in_threadpool(runner.submit_request, kind, instance, options)
    except Exception as exc:  # noqa: BLE001 - the cluster, not the request, failed: say so
        log.error("%s not run: %s", kind, one_line(exc))
        return error(503, UNAVAILABLE)
    outcome = await runner.wait(future)
    request.state.work_seconds = outcome["seconds"]
    if not outcome["ok"]:
        raise InputError(outcome["error"])
    return outcome["result"]


async def resolved(ref: Any, settings) -> dict[str, Any]:
    """:func:`resolve_instance` in a thread (it may read files)."""
    return await run_in_threadpool(resolve_instance, ref, settings)


def options_of(body, *skip: str) -> dict[str, Any]:
    """The request's options as a dict: every field but the instance, portfolio, path and ``skip``."""
    return body.model_dump(exclude={"instance", "portfolio", "path", *skip})


@router.get("/health", summary="liveness (no token needed)")
def health() -> dict[str, str]:
    from planopt import __version__
    return {"status": "ok", "version": __version__}


@router.post("/validate", summary="planopt validate --json: check an instance and build its model")
async def validate(body: ValidateRequest, request: Request) -> dict[str, Any]:
    return await compute(request, "validate", await resolved(body.instance, request.app.state.settings), {})


@router.post("/solve", summary="planopt solve --json: the optimal plan, its breakdowns, binding limits and risk")
async def solve(body: SolveRequest, request: Request) -> dict[str, Any]:
    return await compute(request, "solve", await resolved(body.instance, request.app.state.settings), options_of(body))


@router.post("/evaluate", summary="planopt evaluate --json: every metric of a given plan")
async def evaluate(body: EvaluateRequest, request: Request) -> dict[str, Any]:
    return await compute(request, "evaluate", await resolved(body.instance, request.app.state.settings),
                         {"plan": body.plan, "scenarios": body.scenarios, "seed": body.seed})


@router.post("/track", summary="planopt track --json: where a run (its log as CSV text) stands against its plan")
async def track(body: TrackRequest, request: Request) -> dict[str, Any]:
    return await compute(request, "track", await resolved(body.instance, request.app.state.settings),
                         {"plan": body.plan, "run_csv": body.run_csv, "mapping": body.mapping, "scenarios": body.scenarios,
                          "seed": body.seed})


@router.post("/replan", summary="planopt replan --json: the best plan for the rest of a run (its log as CSV text)")
async def replan(body: ReplanRequest, request: Request) -> dict[str, Any]:
    return await compute(request, "replan", await resolved(body.instance, request.app.state.settings), options_of(body))


@router.post("/frontier", summary="planopt frontier --json: the exact Pareto frontier")
async def frontier(body: FrontierRequest, request: Request) -> dict[str, Any]:
    return await compute(request, "frontier", await resolved(body.instance, request.app.state.settings), options_of(body))


@router.post("/sweep", summary="planopt sweep --json: one limit over many values")
async def sweep(body: SweepRequest, request: Request) -> dict[str, Any]:
    return await compute(request, "sweep", await resolved(body.instance, request.app.state.settings), options_of(body))


@router.post("/portfolio/solve", summary="planopt solve portfolio.json --json: procurement and schedule")
async def portfolio_solve(body: PortfolioRequest, request: Request) -> dict[str, Any]:
    portfolio = await run_in_threadpool(resolve_portfolio, body, request.app.state.settings)
    return await compute(request, "portfolio", portfolio, options_of(body))


@router.get("/catalog", summary="planopt catalog --json: GPU prices by provider, region and tier, with sources")
def catalog(provider: Optional[str] = None, gpu: Optional[str] = None) -> dict[str, Any]:
    return payloads.catalog_payload(provider, gpu)


@router.get("/catalog/specs", summary="the catalog's accelerators (specs and list prices) and model presets")
def catalog_specs() -> dict[str, Any]:
    return payloads.specs_payload()


@router.post("/calibrate", summary="planopt calibrate on one case: predicted against published figures")
async def calibrate(body: CalibrateRequest, request: Request) -> list[dict[str, Any]]:
    if isinstance(body.case, str):
        shipped_case(body.case)  # an unknown name is a 404 at once
    return await compute(request, "calibrate", body.case, {})


@router.get("/instances", summary="the shipped instances: name and kind")
def instances() -> list[dict[str, str]]:
    return shipped_names()


@router.get("/instances/{name}", summary="one shipped instance, as JSON")
def instance(name: str) -> dict[str, Any]:
    return shipped(name)
