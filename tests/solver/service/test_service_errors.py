"""What the service answers and logs when something goes wrong inside it (issue 28 items 4 and 5), in process.

The guarded application of ``planopt serve`` is called as its ASGI server would call it, with a
stand-in for the Dask cluster whose work raises what a library bug would: a ``KeyError`` or an
``IndexError`` is an internal error (500, the fixed sentence, nothing of its text), never a 404;
only the service's own lookups (``paths.NotFound``) are a 404. No exception leaves the application
(uvicorn would log it with a traceback): the log gets one line. Every answer carries the browser
security headers. The real-server checks of the same items are in tests/solver/service/test_service_security.py.
"""

import json
import logging

import pytest

from planopt.service.app import create_app
from planopt.service.errors import INTERNAL
from planopt.service.settings import Principal, Settings
from tests.support import asgi

TOKEN = "in-process-token-0123456789"


class FailingRunner:
    """The cluster, as far as a synchronous endpoint sees it: the work raises ``exc`` (as ``future.result()`` would)."""

    def __init__(self, exc: BaseException):
        self.exc = exc

    def submit_request(self, kind, instance, options):
        return kind

    async def wait(self, future):
        raise self.exc


def call(app, method: str, path: str, body=None, token: str = TOKEN):
    """One request through the ASGI app (``tests.support.asgi.call``), with this file's token by default."""
    return asgi.call(app, method, path, body, token)


@pytest.fixture
def app():
    return create_app(Settings(principals={TOKEN: Principal("admin", "admin")}))


@pytest.mark.parametrize("exc", [KeyError("secret-key-text"), IndexError("list index out of range secret"),
                                 LookupError("secret lookup"), ZeroDivisionError("secret division")])
def test_a_lookup_error_inside_the_library_is_a_500_with_the_fixed_sentence(app, exc, caplog):
    app.fastapi.state.runner = FailingRunner(exc)
    with caplog.at_level(logging.INFO, logger="planopt.service"):
        status, headers, out = call(app, "POST", "/api/solve", {"instance": {"name": "x"}})
    assert status == 500 and out == {"status": "error", "error": INTERNAL}, out
    assert "secret" not in json.dumps(out)
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and type(exc).__name__ in errors[0].getMessage(), [r.getMessage() for r in errors]
    assert all("\n" not in r.getMessage() and "Traceback" not in r.getMessage() for r in caplog.records)
    assert headers["x-content-type-options"] == "nosniff"


def test_the_services_own_lookups_are_404_and_nothing_else_is(app):
    status, _, out = call(app, "POST", "/api/calibrate", {"case": "no-such-case"})
    assert status == 404 and out["error"].startswith("case: no shipped calibration case named 'no-such-case'"), out
    status, _, out = call(app, "GET", "/api/instances/no-such-instance")
    assert status == 404 and out["error"].startswith("instance: no shipped instance"), out
    status, _, out = call(app, "GET", "/static/nosuch.js", token="")
    assert status == 404 and out["error"] == "no file 'nosuch.js'", out


@pytest.mark.parametrize("path", ["/api/instances/a\x00b", "/static/a\x00.js", "/api/jobs/" + "a" * 6000,
                                  "/api/instances/" + "b" * 6000])
def test_a_url_path_with_nul_or_of_6000_characters_is_a_400(app, path):
    status, headers, out = call(app, "GET", path)
    assert status == 400 and out["error"].startswith("path: "), (path[:40], status, out)
    assert headers["x-frame-options"] == "DENY"


@pytest.mark.parametrize("raw", ["jobs/a\x00b.json", "a" * 6000, "a/" * 3000 + "x.json", "b" * 300])
def test_a_file_path_in_a_body_with_nul_or_too_long_is_a_400(tmp_path, raw):
    app = create_app(Settings(principals={TOKEN: Principal("admin", "admin")}, allow_dir=tmp_path))
    status, _, out = call(app, "POST", "/api/portfolio/solve", {"path": raw})
    assert status == 400 and out["error"].startswith("path: "), (status, out)
    portfolio = {"kind": "portfolio", "name": "p", "jobs": [{"name": "a", "instance": raw}]}
    status, _, out = call(app, "POST", "/api/portfolio/solve", {"portfolio": portfolio})
    assert status == 400 and out["error"].startswith("portfolio: jobs.0.instance: "), (status, out)


def test_every_answer_carries_the_security_headers_and_docs_are_off_by_default(app):
    for method, path, token in (("GET", "/", ""), ("GET", "/static/page.js", ""), ("GET", "/api/health", ""),
                                ("GET", "/api/instances", TOKEN), ("GET", "/api/instances", "wrong-token-0123456789")):
        status, headers, _ = call(app, method, path, token=token)
        assert headers["x-content-type-options"] == "nosniff" and headers["x-frame-options"] == "DENY", path
        csp = headers["content-security-policy"]
        assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp and "unsafe-eval" not in csp, csp
    assert call(app, "GET", "/docs", token="")[0] == 404
    assert call(app, "GET", "/redoc", token=TOKEN)[0] == 404
    with_docs = create_app(Settings(principals={TOKEN: Principal("admin", "admin")}, docs=True))
    assert call(with_docs, "GET", "/docs", token="")[0] == 200
