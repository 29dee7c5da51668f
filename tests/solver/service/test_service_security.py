"""The service's guards, tried from outside over HTTP: the token, the body size limit, files outside the
allowed folder (and ``../``), a flood of jobs, no internal text in answers, and what the log keeps."""

import json
import re
import time

import pytest

from tests.support.service_server import TOKEN, Server

# integration tests (real servers, clusters or long MIPs): run by .ci/run with `pytest -m slow`
pytestmark = pytest.mark.slow

SECRET_NAME = "confidential-job-name-4f1c"  # must never reach the log
LOG_WAIT_SECONDS = 10


@pytest.fixture(scope="module")
def allowed(tmp_path_factory):
    """An allowed folder with a portfolio whose job is given by path, and a secret file next to it (outside)."""
    root = tmp_path_factory.mktemp("security")
    allowed = root / "allowed"
    (allowed / "jobs").mkdir(parents=True)
    from tests.support.common import INSTANCES
    portfolio = json.loads((INSTANCES / "portfolio-small.json").read_text())
    first = portfolio["jobs"][0]
    (allowed / "jobs" / "first.json").write_text(json.dumps(first["instance"]))
    portfolio["jobs"] = [{**first, "instance": "jobs/first.json"}]
    (allowed / "portfolio.json").write_text(json.dumps(portfolio))
    (root / "secret.json").write_text(json.dumps(first["instance"]))
    return allowed


@pytest.fixture(scope="module")
def server(allowed):
    s = Server(allowed.parent, "--allow-dir", str(allowed), "--max-jobs-per-client", "3").start()
    yield s
    s.stop()


def test_health_needs_no_token_but_every_other_endpoint_does(server):
    assert server.request("GET", "/api/health", token=None)[0] == 200
    for method, path, body in (("POST", "/api/solve", {"instance": "tiny"}), ("GET", "/api/catalog", None),
                               ("GET", "/api/instances", None), ("POST", "/api/jobs", {"kind": "solve", "body": {}}),
                               ("GET", "/api/jobs/x", None), ("DELETE", "/api/jobs/x", None)):
        for token in (None, "wrong-token-0123456789", TOKEN + "x", ""):
            status, out = server.request(method, path, body, token=token)
            assert status == 401, (method, path, token, status)
            assert out["error"].startswith("missing or wrong bearer token")
    status, _ = server.request("GET", "/api/catalog", headers={"authorization": f"Basic {TOKEN}"}, token=None)
    assert status == 401


def test_an_oversized_body_is_refused_whether_or_not_it_says_its_length(server):
    big = b'{"instance": "' + b"x" * 2_000_000 + b'"}'
    status, out = server.request("POST", "/api/solve", raw=big)
    assert status == 413 and "larger than" in out["error"]
    status, out = server.request("POST", "/api/solve", chunks=iter([big[i:i + 65536] for i in range(0, len(big), 65536)]))
    assert status == 413 and "larger than" in out["error"]
    assert server.request("GET", "/api/health", token=None)[0] == 200  # and the server is fine


def test_a_portfolio_file_under_the_allowed_folder_is_read(server):
    out = server.call("POST", "/api/portfolio/solve", {"path": "portfolio.json"})
    assert out["status"] == "optimal" and len(out["jobs"]) == 1


@pytest.mark.parametrize("path", ["../secret.json", "jobs/../../secret.json", "/etc/passwd", "%2e%2e/secret.json"])
def test_a_path_outside_the_allowed_folder_is_refused(server, path):
    status, out = server.request("POST", "/api/portfolio/solve", {"path": path})
    if path.startswith("%"):  # not decoded by the service: a file name that does not exist, inside the folder
        assert status == 400 and out["error"].startswith("path: "), out
        return
    assert status == 403 and out["error"].startswith("path: ") and "outside" in out["error"], out
    assert "secret" not in json.dumps(out).replace(path, "")  # nothing read from the file shows


def test_a_job_given_by_path_inside_an_inline_portfolio_is_held_to_the_allowed_folder(server, allowed):
    portfolio = json.loads((allowed / "portfolio.json").read_text())
    for path, status in (("../secret.json", 403), (str(allowed.parent / "secret.json"), 403), ("jobs/first.json", 200)):
        portfolio["jobs"][0]["instance"] = path
        got, out = server.request("POST", "/api/portfolio/solve", {"portfolio": portfolio})
        assert got == status, (path, got, out)
        got, out = server.request("POST", "/api/jobs", {"kind": "portfolio", "body": {"portfolio": portfolio}})
        assert got == (202 if status == 200 else status), (path, got, out)
        if got == 202:
            assert server.wait_job(out["id"])["status"] == "done"


def test_without_an_allowed_folder_no_path_is_read(tmp_path):
    s = Server(tmp_path).start()
    try:
        (tmp_path / "p.json").write_text("{}")
        status, out = s.request("POST", "/api/portfolio/solve", {"path": "p.json"})
        assert status == 403 and "--allow-dir" in out["error"], out
    finally:
        s.stop()


def test_a_flood_of_jobs_gets_429_beyond_the_clients_limit(server):
    from tests.support.service_server import long_job_body
    body = long_job_body()
    answers = [server.request("POST", "/api/jobs", body) for _ in range(8)]
    accepted = [out["id"] for status, out in answers if status == 202]
    refused = [out for status, out in answers if status == 429]
    try:
        assert len(accepted) == 3 and len(refused) == 5, [s for s, _ in answers]
        assert all(out["error"].startswith("at most 3 jobs") for out in refused)
    finally:
        for job_id in accepted:
            assert server.call("DELETE", f"/api/jobs/{job_id}")["status"] == "cancelled"
    # a cancelled job frees its slot
    status, out = server.request("POST", "/api/jobs", {"kind": "solve", "body": {"instance": "tiny"}})
    assert status == 202 and server.wait_job(out["id"])["status"] == "done"


def test_the_log_has_one_line_per_request_and_no_instance_contents(server):
    from tests.support.common import INSTANCES
    instance = json.loads((INSTANCES / "tiny.json").read_text()) | {"name": SECRET_NAME}
    before = server.log.read_text().count("\n")
    server.call("POST", "/api/solve", {"instance": instance, "sensitivity": False})
    server.request("POST", "/api/solve", {"instance": {**instance, "student": {"preset": SECRET_NAME}}})
    deadline = time.monotonic() + LOG_WAIT_SECONDS  # the line is written as the response goes out
    while True:
        lines = server.log.read_text().splitlines()[before:]
        # this test's two requests (a previous test's last line may still be written after `before`)
        requests = [line for line in lines if re.search(r" POST /api/solve ", line)]
        if len(requests) >= 2 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert len(requests) == 2, lines
    assert "POST /api/solve 200" in requests[0] and "POST /api/solve 400" in requests[1]
    assert SECRET_NAME not in server.log.read_text()


def test_no_answer_carries_internal_error_text(server):
    """Malformed bodies of every kind, on every endpoint: each a 4xx, one line, nothing of Python's insides."""
    bodies = [b"", b"null", b"[]", b'{"instance": null}', b'{"instance": 5}', b'{"instance": {"kind": "portfolio"}}',
              b'{"instance": {"student": 5}}', b'{"instance": "tiny", "plan": 5}', b'{"instance": "tiny", "plan": {}}',
              b'{"portfolio": {"kind": "portfolio", "jobs": 5}}', b'{"case": {"id": 5}}', b'{"kind": "solve", "body": 5}',
              b'\xff\xfe', b'{"instance": "tiny", "x": "quality", "y": "quality"}']
    for path in ("/api/validate", "/api/solve", "/api/evaluate", "/api/frontier", "/api/sweep", "/api/portfolio/solve",
                 "/api/calibrate", "/api/jobs"):
        for raw in bodies:
            status, out = server.request("POST", path, raw=raw)
            assert 400 <= status < 500, (path, raw, status, out)
            text = json.dumps(out)
            assert "Traceback" not in text and 'File "' not in text and "Error:" not in text, (path, raw, out)
            assert set(out) == {"status", "error"} and "\n" not in out["error"], (path, raw, out)


def test_without_a_token_file_or_variable_a_random_token_is_printed_once(tmp_path):
    s = Server(tmp_path, token=None)
    s.start()
    try:
        printed = re.findall(r"bearer token \(printed once\): (\S+)", s.log.read_text())
        assert len(printed) == 1 and len(printed[0]) >= 32
        s.token = printed[0]
        assert s.call("GET", "/api/instances")
        assert s.request("GET", "/api/instances", token=TOKEN)[0] == 401
    finally:
        s.stop()
