"""Whose job is whose (issue 28 items 2 and 3), from outside: a real `planopt serve` with a token file of
three principals, spoken to over HTTP.

- A job belongs to the principal whose token submitted it: another principal's token cannot list it,
  read it, fetch its request or cancel it (each a 404, as for a job that does not exist); an admin's can.
- The per-client job cap counts the principal's jobs: a different ``X-Forwarded-For`` (or any header) on
  each request does not get past it, and one principal at its cap does not stop another.
- The token file's mistakes are one line naming the file, the line and the field, exit 2.
"""

import pytest
from typer.testing import CliRunner

from tests.support.service_server import Server

ALICE, BOB, ROOT = "alice-token-0123456789abcdef", "bob-token-0123456789abcdef", "root-token-0123456789abcdef"
TOKENS = f"# planopt serve --token-file: TOKEN NAME ROLE\n{ALICE} alice user\n\n{BOB} bob user\n{ROOT} ops admin\n"
CAP = 2


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("principals")
    (folder / "tokens").write_text(TOKENS)
    s = Server(folder, "--token-file", str(folder / "tokens"), "--max-jobs-per-client", str(CAP), token=None).start()
    s.token = ALICE
    yield s
    s.stop()


def as_(server, token, method, path, body=None, headers=None):
    return server.request(method, path, body, token=token, headers=headers)


@pytest.mark.slow
def test_a_job_is_seen_and_cancelled_only_by_its_owner_and_an_admin(server):
    from tests.support.service_server import long_job_body
    status, done = as_(server, ALICE, "POST", "/api/jobs", {"kind": "solve", "body": {"instance": "tiny"}})
    assert status == 202
    assert server.wait_job(done["id"])["status"] == "done"
    status, running = as_(server, ALICE, "POST", "/api/jobs", long_job_body())
    assert status == 202
    try:
        for job_id in (done["id"], running["id"]):
            for method, path in (("GET", f"/api/jobs/{job_id}"), ("GET", f"/api/jobs/{job_id}/request"),
                                 ("DELETE", f"/api/jobs/{job_id}")):
                status, out = as_(server, BOB, method, path)
                assert status == 404 and out == {"status": "error", "error": f"job: no job '{job_id}'"}, (method, path, out)
            assert job_id not in [j["id"] for j in as_(server, BOB, "GET", "/api/jobs")[1]]
            # the owner and an admin see it
            mine = [j for j in as_(server, ALICE, "GET", "/api/jobs")[1] if j["id"] == job_id]
            assert len(mine) == 1 and mine[0]["owner"] == "alice"
            assert job_id in [j["id"] for j in as_(server, ROOT, "GET", "/api/jobs")[1]]
            assert as_(server, ROOT, "GET", f"/api/jobs/{job_id}")[1]["owner"] == "alice"
            assert as_(server, ROOT, "GET", f"/api/jobs/{job_id}/request")[0] == 200
        # the other principal's refused cancel left it running; the admin cancels it
        assert as_(server, ALICE, "GET", f"/api/jobs/{running['id']}")[1]["status"] in ("queued", "running")
        status, out = as_(server, ROOT, "DELETE", f"/api/jobs/{running['id']}")
        assert status == 200 and out["status"] == "cancelled"
    finally:
        as_(server, ALICE, "DELETE", f"/api/jobs/{running['id']}")
    # bob's own job is his: alice cannot see it, and only his shows in his list
    status, bobs = as_(server, BOB, "POST", "/api/jobs", {"kind": "solve", "body": {"instance": "tiny", "sensitivity": False}})
    assert status == 202 and as_(server, ALICE, "GET", f"/api/jobs/{bobs['id']}")[0] == 404
    assert {j["owner"] for j in as_(server, BOB, "GET", "/api/jobs")[1]} == {"bob"}
    assert {j["owner"] for j in as_(server, ROOT, "GET", "/api/jobs")[1]} >= {"alice", "bob"}


@pytest.mark.slow
def test_the_job_cap_follows_the_token_not_a_forwarded_address(server):
    from tests.support.service_server import long_job_body
    body = long_job_body()
    accepted = []
    try:
        answers = [as_(server, ALICE, "POST", "/api/jobs", body, headers={"x-forwarded-for": f"10.0.0.{k}",
                                                                          "x-real-ip": f"10.1.0.{k}", "forwarded": f"for=10.2.0.{k}"})
                   for k in range(CAP + 3)]
        accepted = [out["id"] for status, out in answers if status == 202]
        assert [status for status, _ in answers] == [202] * CAP + [429] * 3, [s for s, _ in answers]
        # another principal is not held by alice's jobs
        status, out = as_(server, BOB, "POST", "/api/jobs", {"kind": "solve", "body": {"instance": "tiny", "sensitivity": False}})
        assert status == 202, out
        accepted.append(out["id"])
    finally:
        for job_id in accepted:
            as_(server, ROOT, "DELETE", f"/api/jobs/{job_id}")
    # the log names the socket's address and the principal, never the forwarded one
    log = server.log.read_text()
    assert "10.0.0." not in log and "10.1.0." not in log and " alice POST /api/jobs 429 " in log


@pytest.mark.slow
def test_a_wrong_or_missing_token_is_401_for_every_principal_kind(server):
    for token in (None, "", ALICE + "x", ALICE[:-1], "alice", "user"):
        assert as_(server, token, "GET", "/api/jobs")[0] == 401, token
    assert all(as_(server, t, "GET", "/api/instances")[0] == 200 for t in (ALICE, BOB, ROOT))


@pytest.mark.parametrize("text, field", [
    ("short alice user\n", "line 1: token: 5 characters"),
    (f"{ALICE} alice\n{BOB} bob user\n", "line 1: expected TOKEN NAME ROLE"),
    (f"{ALICE} alice root\n", "line 1: role: expected one of admin, user"),
    (f"{ALICE} al/ice user\n", "line 1: name: expected letters"),
    (f"{ALICE} alice user\n{ALICE} bob user\n", "line 2: token: the same token is given twice"),
    (f"{ALICE} alice user\n{BOB} alice admin\n", "line 2: role: 'alice' is given both 'user' and 'admin'"),
    ("# only a comment\n\n", "holds no token"),
])
def test_a_bad_token_file_is_one_line_naming_the_line_and_field(tmp_path, text, field):
    from planopt.cli import app
    (tmp_path / "tokens").write_text(text)
    result = CliRunner().invoke(app, ["serve", "--token-file", str(tmp_path / "tokens"), "--port", "1"])
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 1 and lines[0].startswith("error: --token-file: ") and field in lines[0], result.output
    assert ALICE not in result.output and BOB not in result.output  # a token is never echoed


def test_a_one_token_file_is_one_admin_and_principals_are_read_as_documented(tmp_path, monkeypatch):
    from planopt.service.settings import Principal, read_principals
    (tmp_path / "one").write_text(f"  {ALICE}  \n")
    assert read_principals(tmp_path / "one") == ({ALICE: Principal("admin", "admin")}, None)
    (tmp_path / "many").write_text(TOKENS)
    assert read_principals(tmp_path / "many")[0] == {ALICE: Principal("alice", "user"), BOB: Principal("bob", "user"),
                                                     ROOT: Principal("ops", "admin")}
    monkeypatch.setenv("PLANOPT_TOKEN", BOB)
    assert read_principals(None) == ({BOB: Principal("admin", "admin")}, None)
    monkeypatch.delenv("PLANOPT_TOKEN")
    principals, generated = read_principals(None)
    assert principals == {generated: Principal("admin", "admin")} and len(generated) >= 32


@pytest.mark.parametrize("args, field", [(["--workers", "0"], "--workers: expected"), (["--max-jobs-per-client", "0"], "--max-jobs-per-client")])
def test_serve_refuses_a_bad_option_in_one_line(tmp_path, args, field):
    from planopt.cli import app
    (tmp_path / "tokens").write_text(f"{ALICE} alice user\n")
    result = CliRunner().invoke(app, ["serve", "--token-file", str(tmp_path / "tokens"), "--port", "1", *args])
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 1 and lines[0].startswith(f"error: {field}"), result.output
