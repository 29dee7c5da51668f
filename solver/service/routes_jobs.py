"""``/api/jobs``: long work submitted, watched, fetched and cancelled.

A job's body is checked when it is submitted (its model, its instance, its
paths), so a mistake is a 4xx at once, not a failed job later. One client (one
address) may have at most ``max_jobs_per_client`` jobs queued or running.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from fastapi import APIRouter, Request
from pydantic import ValidationError
from fastapi.exceptions import RequestValidationError

from planopt.service.errors import StrictJSONResponse, error
from planopt.service.requests import JOB_BODIES, JobRequest
from planopt.service.routes_api import options_of, resolve_instance, resolve_portfolio
from planopt.service.store import public

router = APIRouter(prefix="/api/jobs", default_response_class=StrictJSONResponse)
log = logging.getLogger("planopt.service")
UNAVAILABLE = "the Dask cluster that runs jobs cannot be reached; try again later"
_admission = threading.Lock()  # the per-client count and the insert happen together


def client_of(request: Request) -> str:
    return request.client.host if request.client else "-"


def job_inputs(job: JobRequest, settings) -> tuple[dict[str, Any], dict[str, Any]]:
    """The job's instance (resolved, paths read under --allow-dir) and its options, checked as the endpoint checks them."""
    try:
        body = JOB_BODIES[job.kind].model_validate(job.body)
    except ValidationError as exc:  # the job's field `body`, then the endpoint's field
        raise RequestValidationError([{**e, "loc": ("body", "body", *e["loc"])} for e in exc.errors()]) from None
    from planopt.service.payloads import check_job
    instance = resolve_portfolio(body, settings) if job.kind == "portfolio" else resolve_instance(body.instance, settings)
    options = options_of(body)
    check_job(job.kind, instance, options)
    return instance, options


@router.post("", status_code=202, summary="submit a solve, frontier, sweep or portfolio job; returns its id at once")
def submit(job: JobRequest, request: Request):
    state = request.app.state
    instance, options = job_inputs(job, state.settings)
    client = client_of(request)
    with _admission:
        if state.store.active_count(client) >= state.settings.max_jobs_per_client:
            return error(429, f"at most {state.settings.max_jobs_per_client} jobs queued or running per client; "
                              "wait for one to finish or cancel one")
        job_id = state.store.add(job.kind, client, {"instance": instance, "options": options})
    try:
        state.runner.submit(job_id, job.kind, instance, options)
    except Exception as exc:  # noqa: BLE001 - the cluster, not the request, failed: say so, keep the store true
        log.error("job %s not submitted: %s: %s", job_id, type(exc).__name__, exc)
        state.store.set(job_id, status="failed", error=UNAVAILABLE, finished_at=time.time())
        return error(503, UNAVAILABLE)
    return StrictJSONResponse({"id": job_id, "status": "queued"}, status_code=202)


@router.get("", summary="this client's jobs, newest first (without results)")
def jobs(request: Request) -> list[dict[str, Any]]:
    return [public(j) for j in request.app.state.store.list(client_of(request))]


@router.get("/{job_id}", summary="a job's status, progress, timings and, when done, its result")
def job(job_id: str, request: Request) -> dict[str, Any]:
    state = request.app.state
    state.runner.refresh(job_id)
    found = state.store.get(job_id)
    if found is None:
        raise LookupError(f"job: no job {job_id!r}")
    return public(found)


@router.get("/{job_id}/request", summary="the instance and options a job was submitted with")
def job_request(job_id: str, request: Request) -> dict[str, Any]:
    found = request.app.state.store.request(job_id)
    if found is None:
        raise LookupError(f"job: no job {job_id!r}")
    return found


@router.delete("/{job_id}", summary="cancel a job: its solver is stopped (its worker process restarted)")
def cancel(job_id: str, request: Request) -> dict[str, Any]:
    state = request.app.state
    if state.store.get(job_id) is None:
        raise LookupError(f"job: no job {job_id!r}")
    state.runner.cancel(job_id)
    return public(state.store.get(job_id))
