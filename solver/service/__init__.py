"""planopt as a service: an HTTP API and a page, on the same library as the CLI.

``planopt serve`` runs :func:`create_app` on uvicorn. Modules, one concept each:
``payloads`` (the CLI's JSON objects, computed by the library), ``requests``
(request bodies), ``routes_api`` / ``routes_jobs`` / ``routes_page`` (endpoints),
``jobs`` (Dask execution of jobs and of every synchronous request, and cancellation),
``store`` (the SQL job store, each job with its owner), ``security`` (tokens and the
principals they speak for, size limit, security headers, request log), ``settings``
(the operator's options, the token file), ``paths`` (which files a request may name),
``errors`` (4xx with the CLI's one line, 404 only for the service's own lookups),
``openapi`` (the contract), ``server`` (uvicorn).
"""

from planopt.service.app import create_app
from planopt.service.settings import Settings

__all__ = ["create_app", "Settings"]
