"""One request through the service's ASGI application in this process (no server, no cluster): the in-process
service tests' caller."""

from __future__ import annotations

import asyncio
import json


def call(app, method: str, path: str, body=None, token: str = ""):
    """One request through the ASGI app: (status, headers, parsed body); the page and its scripts come back as bytes."""
    messages = []
    data = json.dumps(body).encode() if body is not None else b""

    async def receive():
        return {"type": "http.request", "body": data, "more_body": False}

    async def send(message):
        messages.append(message)

    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    if token:
        headers.append((b"authorization", f"Bearer {token}".encode()))
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method, "scheme": "http",
             "path": path, "raw_path": path.encode("utf-8", "surrogateescape"), "query_string": b"", "root_path": "",
             "headers": headers, "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 8000), "state": {}}
    asyncio.run(app(scope, receive, send))
    start = next(m for m in messages if m["type"] == "http.response.start")
    text = b"".join(m.get("body", b"") for m in messages if m["type"] == "http.response.body")
    try:
        parsed = json.loads(text) if text else None
    except (json.JSONDecodeError, UnicodeDecodeError):  # the page and its scripts
        parsed = text
    return start["status"], {k.decode(): v.decode() for k, v in start["headers"]}, parsed
