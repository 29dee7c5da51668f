"""``/api/jobs``: long work submitted, watched, fetched and cancelled.

A job's body is checked when it is submitted (its model, its instance, its
paths), so a mistake is a 4xx at once, not a failed job later.

A job belongs to the principal whose token submitted it (``settings.Principal``, from
``--token-file``): another principal can neither list, read, fetch the request of, nor
cancel it (it gets the 404 of a job that does not exist, so ids cannot be probed); an
``admin`` sees and cancels every job. One principal may have at most
``max_jobs_per_client`` jobs queued or running; the count follows the token, never the
client's address or any header it sends.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from pathlib import PurePosixPath
from typing import Any, Optional

from fastapi import APIRouter, Request
from pydantic import ValidationError
from fastapi.exceptions import RequestValidationError

from planopt.messages import shorten
from planopt.service.errors import UNAVAILABLE, StrictJSONResponse, error, one_line
from planopt.service.paths import NotFound
from planopt.service.requests import JOB_BODIES, JobRequest
from planopt.service.routes_api import options_of, resolve_instance, resolve_portfolio
from planopt.service.store import public

router = APIRouter(prefix="/api/jobs", default_response_class=StrictJSONResponse)
log = logging.getLogger("planopt.service")
_admission = threading.Lock()  # the per-principal count and the insert happen together
JOB_ID = re.compile(r"^[0-9a-f]{32}$")  # uuid4().hex (store.add)


def principal_of(request: Request):
    """Whom the request's token speaks for (``security.Guard`` put it there)."""
    return request.state.principal


def owned(request: Request, job_id: str) -> dict[str, Any]:
    """The job, if the request's principal may see it (its owner, or an admin); else NotFound, as for no job."""
    who = principal_of(request)
    found = request.app.state.store.get(job_id) if JOB_ID.match(job_id) else None
    if found is None or not (who.admin or found["client"] == who.name):
        raise NotFound(f"job: no job {shorten(repr(job_id))}")
    return found


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


def job_name(body: dict[str, Any], instance: dict[str, Any]) -> Optional[str]:
    """What a job plans, for the page's list of recent jobs: its instance's (or portfolio's) ``name``, else the
    file name of the shipped name or ``path`` it was given by; None when it has neither."""
    if isinstance(instance.get("name"), str) and instance["name"].strip():
        return instance["name"].strip()
    ref = next((body[k] for k in ("instance", "portfolio", "path") if isinstance(body.get(k), str)), None)
    if ref is None:
        return None
    return PurePosixPath(ref.replace("\\", "/")).name or None


@router.post("", status_code=202, summary="submit a solve, frontier, sweep or portfolio job; returns its id at once")
def submit(job: JobRequest, request: Request):
    state = request.app.state
    instance, options = job_inputs(job, state.settings)
    owner = principal_of(request).name
    with _admission:
        if state.store.active_count(owner) >= state.settings.max_jobs_per_client:
            return error(429, f"at most {state.settings.max_jobs_per_client} jobs queued or running per client; "
                              "wait for one to finish or cancel one")
        job_id = state.store.add(job.kind, owner, {"instance": instance, "options": options}, job_name(job.body, instance))
    try:
        state.runner.submit(job_id, job.kind, instance, options)
    except Exception as exc:  # noqa: BLE001 - the cluster, not the request, failed: say so, keep the store true
        log.error("job %s not submitted: %s", job_id, one_line(exc))
        state.store.set(job_id, status="failed", error=UNAVAILABLE, finished_at=time.time())
        return error(503, UNAVAILABLE)
    return StrictJSONResponse({"id": job_id, "status": "queued"}, status_code=202)


@router.get("", summary="this principal's jobs, newest first (without results, each with the name of what it plans); "
                        "an admin's: every principal's")
def jobs(request: Request) -> list[dict[str, Any]]:
    who = principal_of(request)
    return [public(j) for j in request.app.state.store.list(None if who.admin else who.name)]


@router.get("/{job_id}", summary="a job's status, progress, timings and, when done, its result")
def job(job_id: str, request: Request) -> dict[str, Any]:
    owned(request, job_id)
    state = request.app.state
    state.runner.refresh(job_id)
    return public(state.store.get(job_id))


@router.get("/{job_id}/request", summary="the instance and options a job was submitted with")
def job_request(job_id: str, request: Request) -> dict[str, Any]:
    owned(request, job_id)
    return request.app.state.store.request(job_id)


@router.delete("/{job_id}", summary="cancel a job: its solver is stopped (its worker process restarted)")
def cancel(job_id: str, request: Request) -> dict[str, Any]:
    owned(request, job_id)
    state = request.app.state
    state.runner.cancel(job_id)
    return public(state.store.get(job_id))
