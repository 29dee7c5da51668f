"""Jobs over HTTP: submitted at once, run on Dask, results kept in the SQL store across restarts,
and cancelled for real (the worker process running the solver is gone after DELETE)."""

import time

import pytest

from planopt.service.store import JobStore
from tests.support.service_server import Server, alive, long_job_body, without_timings

# integration tests (real servers, clusters or long MIPs): run by .ci/run with `pytest -m slow`
pytestmark = pytest.mark.slow

# How long to let a job's worker burn CPU before telling which process is the solver.
CPU_SAMPLE_SECONDS = 1.5
# How long a SIGKILLed worker may take to be gone (delivered and reaped) on a loaded machine.
KILL_WAIT_SECONDS = 10.0


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("jobs"), "--max-jobs-per-client", "4").start()
    yield s
    s.stop()


def test_a_job_returns_an_id_at_once_and_its_result_is_the_endpoints(server):
    body = {"instance": "tiny", "budget_usd": 900}
    status, submitted = server.request("POST", "/api/jobs", {"kind": "solve", "body": body})
    assert status == 202 and submitted["status"] == "queued" and len(submitted["id"]) == 32
    job = server.wait_job(submitted["id"])
    assert job["status"] == "done", job
    assert job["started_at"] >= job["submitted_at"] and job["finished_at"] >= job["started_at"]
    assert without_timings(job["result"]) == without_timings(server.call("POST", "/api/solve", body))
    request = server.call("GET", f"/api/jobs/{submitted['id']}/request")
    assert request["options"]["budget_usd"] == 900 and request["instance"]["name"] == job["result"].get("name", request["instance"]["name"])
    assert submitted["id"] in [j["id"] for j in server.call("GET", "/api/jobs")]


def test_a_sweep_job_reports_progress_and_the_sweep_result(server):
    body = {"instance": "tiny", "limit": "budget_usd", "values": [600, 700, 800, 900, 1000]}
    job = server.wait_job(server.call("POST", "/api/jobs", {"kind": "sweep", "body": body})["id"])
    assert job["status"] == "done" and job["progress"] == {"done": 5, "total": 5}
    assert job["result"] == server.call("POST", "/api/sweep", body)


def test_a_bad_job_is_refused_at_submission_with_the_endpoints_message(server):
    status, out = server.request("POST", "/api/jobs", {"kind": "solve", "body": {"instance": "tiny", "budget_usd": -1}})
    assert status == 400 and out["error"].startswith("budget_usd: "), out
    status, out = server.request("POST", "/api/jobs", {"kind": "frontier", "body": {"instance": "tiny", "x": "speed"}})
    assert status == 422 and out["error"].startswith("body.x: "), out
    status, out = server.request("POST", "/api/jobs", {"kind": "bake", "body": {}})
    assert status == 422 and out["error"].startswith("kind: "), out
    assert server.request("GET", "/api/jobs/0123")[0] == 404
    assert server.request("DELETE", "/api/jobs/0123")[0] == 404


def test_delete_stops_a_running_job_and_ends_its_solver_process(server):
    job_id = server.call("POST", "/api/jobs", long_job_body())["id"]
    server.wait_job(job_id, until=("running",))
    before = server.descendants()
    time.sleep(CPU_SAMPLE_SECONDS)
    after = server.descendants()
    busy = max(after, key=lambda pid: after[pid] - before.get(pid, after[pid]))
    assert after[busy] > before[busy], "no worker process is burning CPU on the running job"
    out = server.call("DELETE", f"/api/jobs/{job_id}")
    assert out["status"] == "cancelled"
    # SIGKILL is sent before DELETE answers; the process is gone once the kernel has delivered it and
    # its nanny has reaped it, which on a loaded machine can take a moment after the answer
    deadline = time.monotonic() + KILL_WAIT_SECONDS
    while alive(busy) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(busy), "the worker process that ran the cancelled solve is still running"
    # the cluster is whole again: a new job runs to completion, and the cancelled one stays cancelled
    assert server.wait_job(server.call("POST", "/api/jobs", {"kind": "solve", "body": {"instance": "tiny"}})["id"])["status"] == "done"
    assert server.call("GET", f"/api/jobs/{job_id}")["status"] == "cancelled"


def test_results_survive_a_restart_and_a_crash_marks_running_jobs_interrupted(tmp_path):
    first = Server(tmp_path).start()
    try:
        done_id = first.call("POST", "/api/jobs", {"kind": "solve", "body": {"instance": "tiny"}})["id"]
        result = first.wait_job(done_id)["result"]
        running_id = first.call("POST", "/api/jobs", long_job_body())["id"]
        first.wait_job(running_id, until=("running",))
    finally:
        first.crash()  # SIGKILL: no chance to tidy the store
    second = Server(tmp_path).start()  # the same job store file
    try:
        kept = second.call("GET", f"/api/jobs/{done_id}")
        assert kept["status"] == "done" and kept["result"] == result
        lost = second.call("GET", f"/api/jobs/{running_id}")
        assert lost["status"] == "interrupted" and "submit it again" in lost["error"]
        assert lost["finished_at"] is not None
    finally:
        second.stop()


def test_the_store_marks_only_active_jobs_interrupted_and_never_reopens_a_finished_job(tmp_path):
    store = JobStore(f"sqlite:///{tmp_path / 's.sqlite'}")
    done, running, queued = (store.add("solve", "c", {"instance": {}}) for _ in range(3))
    store.set(done, status="done", result={"x": 1}, finished_at=1.0)
    store.set(running, status="running", started_at=1.0)
    assert store.active_count("c") == 2 and store.active_count("other") == 0
    assert store.mark_interrupted() == 2
    assert store.counts() == {"done": 1, "interrupted": 2}
    assert not store.set(done, status="cancelled")  # a late cancel cannot rewrite a finished job
    assert store.get(done)["status"] == "done" and store.get(done)["result"] == {"x": 1}
    store.close()
