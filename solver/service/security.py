"""The service's guards: the bearer token, the body size limit, and one log line per request.

The token is compared in constant time. The size limit is enforced on the bytes
actually received, not only on the Content-Length a client claims. The log line
names the method, path, status, time and client address, never the body (an
instance may be confidential).
"""

from __future__ import annotations

import hmac
import json
import logging
import time

log = logging.getLogger("planopt.service")

OPEN_PATHS = ("/api/health",)   # the only API endpoint answered without a token
# The page, its static files and the API's published contract hold no data: a browser must be able to
# load them before it has a token (the page asks for it and sends it with every API call).
PUBLIC_PREFIXES = ("/static/",)
PUBLIC_EXACT = ("/", "/favicon.ico", "/openapi.json", "/docs", "/docs/oauth2-redirect")


def error_body(message: str) -> bytes:
    return json.dumps({"status": "error", "error": message}).encode()


class Guard:
    """ASGI middleware: size limit, token check and request log, before any route runs."""

    def __init__(self, app, token: str, max_body_bytes: int):
        self.app, self.token, self.max_body = app, token.encode(), max_body_bytes

    def _needs_token(self, path: str) -> bool:
        if path in OPEN_PATHS or path in PUBLIC_EXACT or path.startswith(PUBLIC_PREFIXES):
            return False
        return True

    def _authorised(self, scope) -> bool:
        for name, value in scope.get("headers", []):
            if name == b"authorization":
                scheme, _, given = value.partition(b" ")
                return scheme.lower() == b"bearer" and hmac.compare_digest(given.strip(), self.token)
        return False

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        start, status = time.perf_counter(), [0]

        async def send_logged(message):
            if message["type"] == "http.response.start":
                status[0] = message["status"]
                work = (scope.get("state") or {}).get("work_seconds")
                if work is not None:  # the library's share of the request (routes_api.timed), for clients and benchmarks
                    message = {**message, "headers": [*message.get("headers", []),
                                                      (b"server-timing", f"work;dur={work * 1000:.3f}".encode())]}
            await send(message)

        try:
            if self._needs_token(scope["path"]) and not self._authorised(scope):
                return await _reply(send_logged, 401, "missing or wrong bearer token (send 'Authorization: Bearer TOKEN')",
                                    [(b"www-authenticate", b"Bearer")])
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

            await self.app(scope, receive_buffered, send_logged)
        finally:
            client = scope.get("client") or ("-", 0)
            log.info("%s %s %s %d %.1fms", client[0], scope["method"], scope["path"], status[0],
                     (time.perf_counter() - start) * 1000)


async def _reply(send, status: int, message: str, headers=()) -> None:
    body = error_body(message)
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *headers]})
    await send({"type": "http.response.body", "body": body})
