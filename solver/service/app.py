"""The FastAPI application: the API, the jobs, the page, behind the guard.

``create_app(settings)`` is everything ``planopt serve`` runs; tests build it
the same way. On start it marks jobs a previous process left unfinished as
interrupted; on stop it cancels its own and closes the Dask cluster it started.
"""

from __future__ import annotations

import logging
from contextlib import asynccontextmanager

from fastapi import FastAPI

from planopt.service import errors, routes_api, routes_jobs, routes_page
from planopt.service.jobs import JobRunner
from planopt.service.openapi import published_openapi
from planopt.service.security import Guard
from planopt.service.settings import Settings
from planopt.service.store import JobStore

log = logging.getLogger("planopt.service")


def create_app(settings: Settings):
    """The ASGI application (the FastAPI app wrapped in the guard); ``.fastapi`` is the inner app."""

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        store = JobStore(settings.db_url)
        interrupted = store.mark_interrupted()
        if interrupted:
            log.warning("%d job(s) left unfinished by the previous run are marked interrupted", interrupted)
        app.state.store = store
        app.state.runner = JobRunner(store, settings.scheduler, settings.workers)
        app.state.runner.warm_up()  # every solve runs on the cluster: start it now, not on the first request
        try:
            yield
        finally:
            app.state.runner.close()
            store.close()

    from planopt import __version__
    # /docs is Swagger UI, whose script and styles FastAPI has the browser fetch from a CDN (no integrity
    # check): off unless the operator asks for it (--docs); /redoc likewise loads from a CDN, and is off
    app = FastAPI(title="planopt", version=__version__, lifespan=lifespan,
                  docs_url="/docs" if settings.docs else None, redoc_url=None,
                  description="Exact plans for LLM post-training (SFT, RL, OPD), as a service. Every endpoint under "
                              "/api/ but /api/health needs `Authorization: Bearer TOKEN`. Responses are the CLI's "
                              "`--json` objects.")
    app.state.settings = settings
    errors.install(app)
    app.include_router(routes_api.router)
    app.include_router(routes_jobs.router)
    app.include_router(routes_page.router)
    app.openapi = lambda: published_openapi(app)
    guarded = Guard(app, settings.principals, settings.max_body_bytes)
    guarded.fastapi = app
    return guarded
