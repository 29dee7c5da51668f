"""The service's guards: the bearer token and whom it speaks for, the body size limit, the URL's
sanity, the browser's security headers, and one log line per request.

Every token is compared in constant time (all of them, whichever matches). The principal a token
speaks for (``settings.Principal``) is put in the request's state (``request.state.principal``):
jobs are owned by it and the per-client job cap counts its jobs, so no header a client sends (an
``X-Forwarded-For``) changes whose jobs are whose. The size limit is enforced on the bytes actually
received, not only on the Content-Length a client claims. The log line names the client's address
(the socket's peer: forwarded headers are not trusted), the principal, the method, path, status and
time, never the body (an instance may be confidential); the path is shortened.
"""

from __future__ import annotations

import hmac
import json
import logging
import time
from typing import Optional

from planopt.messages import shorten

log = logging.getLogger("planopt.service")

OPEN_PATHS = ("/api/health",)   # the only API endpoint answered without a token
# The page, its static files and the API's published contract hold no data: a browser must be able to
# load them before it has a token (the page asks for it and sends it with every API call).
PUBLIC_PREFIXES = ("/static/",)
PUBLIC_EXACT = ("/", "/favicon.ico", "/openapi.json", "/docs", "/docs/oauth2-redirect")
# The longest URL path answered: far beyond any route's (a job id is 32 characters), short of what
# would make a path parameter a file-system or database problem.
MAX_URL_PATH_CHARS = 2048

# Sent with every answer. The page and its scripts are the service's own files (plotly.js from the
# installed package): nothing from elsewhere may load, nothing may frame the page, and a browser may
# not guess a type other than the one sent. plotly.js draws with inline styles, renders images to
# data: and blob: URLs, and (to detect WebGL and its CSS support) probes a few features; it needs
# no eval. The API's answers are JSON, which no browser renders.
CONTENT_SECURITY_POLICY = ("default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
                           "img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self'; "
                           "frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
SECURITY_HEADERS = [(b"x-content-type-options", b"nosniff"), (b"x-frame-options", b"DENY"),
                    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
                    (b"referrer-policy", b"no-referrer")]


def error_body(message: str) -> bytes:
    """The JSON body of an error answered by the guard, as the routes' errors read."""
    return json.dumps({"status": "error", "error": message}).encode()


class Guard:
    """ASGI middleware: URL check, token check, size limit, headers and the request log, before any route runs."""

    def __init__(self, app, principals: dict, max_body_bytes: int):
        self.app, self.max_body = app, max_body_bytes
        self.principals = [(token.encode(), who) for token, who in principals.items()]

    def _needs_token(self, path: str) -> bool:
        if path in OPEN_PATHS or path in PUBLIC_EXACT or path.startswith(PUBLIC_PREFIXES):
            return False
        return True

    def _principal(self, scope):
        """Whom the request's bearer token speaks for, or None. Every known token is compared (in constant time)."""
        for name, value in scope.get("headers", []):
            if name == b"authorization":
                scheme, _, given = value.partition(b" ")
                given = given.strip()
                found = None
                for token, who in self.principals:
                    if hmac.compare_digest(given, token) and scheme.lower() == b"bearer":
                        found = who
                return found
        return None

    async def __call__(self, scope, receive, send):
        """One HTTP request through the guard: URL, token and body size checked, the body read whole, then the app;
        security headers on the answer and one log line. Other scopes go straight to the app."""
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        start, status = time.perf_counter(), [0]
        principal: list[Optional[object]] = [None]

        async def send_logged(message):
            if message["type"] == "http.response.start":
                status[0] = message["status"]
                headers = [*message.get("headers", []), *SECURITY_HEADERS]
                work = (scope.get("state") or {}).get("work_seconds")
                if work is not None:  # the library's share of the request (routes_api.compute), for clients and benchmarks
                    headers.append((b"server-timing", f"work;dur={work * 1000:.3f}".encode()))
                message = {**message, "headers": headers}
            await send(message)

        try:
            path = scope["path"]
            if "\x00" in path or len(scope.get("raw_path") or path) > MAX_URL_PATH_CHARS:
                return await _reply(send_logged, 400, f"path: expected a URL path of at most {MAX_URL_PATH_CHARS:,} "
                                                      "characters without NUL")
            if self._needs_token(path):
                principal[0] = self._principal(scope)
                if principal[0] is None:
                    return await _reply(send_logged, 401, "missing or wrong bearer token (send 'Authorization: Bearer TOKEN')",
                                        [(b"www-authenticate", b"Bearer")])
                scope.setdefault("state", {})["principal"] = principal[0]
            declared = dict(scope.get("headers", [])).get(b"content-length")
            if declared is not None and (not declared.isdigit() or int(declared) > self.max_body):
                return await _reply(send_logged, 413, f"request body larger than {self.max_body:,} bytes")
            # read the whole body first (a chunked request names no length), refusing it past the limit
            body, more = [], True
            while more:
                message = await receive()
                if message["type"] != "http.request":
                    return
                body.append(message.get("body", b""))
                more = message.get("more_body", False)
                if sum(map(len, body)) > self.max_body:
                    return await _reply(send_logged, 413, f"request body larger than {self.max_body:,} bytes")
            replay = [{"type": "http.request", "body": b"".join(body), "more_body": False}]

            async def receive_buffered():
                return replay.pop() if replay else await receive()

            try:
                await self.app(scope, receive_buffered, send_logged)
            except Exception as exc:  # noqa: BLE001 - Starlette re-raises what its 500 handler answered
                # (for the server to log it, with a traceback): the handler has logged it on one line;
                # anything that got past it is answered and logged here, on one line, and goes no further
                if status[0] == 0:
                    from planopt.service.errors import INTERNAL, one_line
                    log.error("internal error on %s %s: %s", scope["method"], shorten(path, 200), one_line(exc))
                    await _reply(send_logged, 500, INTERNAL)
        finally:
            client = scope.get("client") or ("-", 0)
            who = getattr(principal[0], "name", "-")
            log.info("%s %s %s %s %d %.1fms", client[0], who, scope["method"], shorten(scope["path"], 200).encode(
                "unicode_escape").decode(), status[0], (time.perf_counter() - start) * 1000)


async def _reply(send, status: int, message: str, headers=()) -> None:
    body = error_body(message)
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *headers]})
    await send({"type": "http.response.body", "body": body})
