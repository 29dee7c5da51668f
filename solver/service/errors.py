"""How the service answers a mistake: the CLI's one line, as a 4xx; never internal text.

- :class:`planopt.InputError` (the library's bad-input error, the message the CLI prints): 400;
  a path outside the allowed folder: 403.
- A shipped name, file or job that does not exist (:class:`paths.NotFound`, raised by the service's own
  lookups): 404. A ``LookupError`` from inside the library (``KeyError``, ``IndexError``) is not a 404:
  it is an internal error like any other.
- A request body that does not match its model: 422, one line naming the field.
- Anything else: 500 with a fixed sentence; the exception goes to the service log only, as one line
  (its type, its first line of text shortened, and where it was raised), never a traceback.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from planopt.errors import InputError
from planopt.messages import shorten
from planopt.service.paths import NotFound, PathRefused

log = logging.getLogger("planopt.service")
INTERNAL = "internal error (the service log has the details)"


# The one sentence a request gets when the Dask cluster that runs solves and jobs is out of reach.
UNAVAILABLE = "the Dask cluster that runs jobs cannot be reached; try again later"


class StrictJSONResponse(JSONResponse):
    """JSON with no NaN or Infinity (they are not JSON): the payloads already replace them with null."""

    def render(self, content: Any) -> bytes:
        """The content as compact JSON; ValueError on NaN or Infinity."""
        return json.dumps(content, allow_nan=False, separators=(",", ":")).encode()


def error(status: int, message: str) -> StrictJSONResponse:
    """The service's error answer: ``{"status": "error", "error": message}`` with HTTP ``status``."""
    return StrictJSONResponse({"status": "error", "error": message}, status_code=status)


def describe_request_error(exc: RequestValidationError) -> str:
    """The first error of a request body as ``field: what was expected``, like the CLI's messages."""
    errors = exc.errors()
    err = errors[0]
    loc = [str(p) for p in err.get("loc", ())]
    loc = loc[1:] if loc[:1] == ["body"] else loc  # FastAPI's marker of the request body, not a field
    # a union (an instance is an object or a name) reports each branch: name the field, not the branch
    loc = [p for p in loc if p not in ("str", "dict[str,any]", "function-after[...]")]
    field = ".".join(loc) or "(request body)"
    kind, msg = err.get("type", ""), err.get("msg", "invalid")
    if kind == "missing":
        msg = "required field is missing"
    elif kind == "extra_forbidden":
        msg = "unknown field (check the spelling; /openapi.json lists the fields)"
    elif kind == "json_invalid":
        msg = f"not valid JSON ({err.get('ctx', {}).get('error', 'parse error')})"
    elif not loc:  # the body itself is not a JSON object (or was sent as a form)
        msg = "expected a JSON object (sent with Content-Type: application/json)"
    elif "input" in err and not isinstance(err["input"], (dict, list)):
        shown = repr(err["input"])  # a short echo of the user's own value, never a whole body
        msg = f"{msg} (got {shown if len(shown) <= 80 else shown[:77] + '...'})"
    extra = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{field}: {msg}{extra}"


def install(app: FastAPI) -> None:
    """Register the handlers above on ``app``."""

    @app.exception_handler(PathRefused)
    async def _refused(request: Request, exc: PathRefused):
        return error(403, str(exc))

    @app.exception_handler(InputError)
    async def _input(request: Request, exc: InputError):
        return error(400, str(exc))

    @app.exception_handler(NotFound)
    async def _unknown(request: Request, exc: NotFound):
        return error(404, str(exc))

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError):
        return error(422, describe_request_error(exc))

    @app.exception_handler(HTTPException)
    async def _http(request: Request, exc: HTTPException):
        return error(exc.status_code, str(exc.detail))

    @app.exception_handler(Exception)
    async def _internal(request: Request, exc: Exception):
        log.error("internal error on %s %s: %s", request.method, shorten(request.url.path), one_line(exc))
        return error(500, INTERNAL)


def one_line(exc: BaseException) -> str:
    """An exception for the log, on one line: its type, its text's first line shortened, and the innermost
    frame it was raised in (file:line), never a traceback (the README promises one line per event)."""
    import traceback
    text = str(exc).splitlines()[0] if str(exc) else ""
    frames = traceback.extract_tb(exc.__traceback__) if exc.__traceback__ is not None else []
    where = f" at {frames[-1].filename.rsplit('/', 1)[-1]}:{frames[-1].lineno}" if frames else ""
    return f"{type(exc).__name__}: {shorten(text)}{where}"
