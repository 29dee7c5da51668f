"""Jobs on an existing Dask cluster (``planopt serve --scheduler ADDRESS``): they run there, and
DELETE stops a running one by restarting its worker through the worker's nanny."""

import os

import pytest

from tests.support.service_server import Server, alive
from tests.support.service_server import long_job_body

# integration tests (real servers, clusters or long MIPs): run by .ci/run with `pytest -m slow`
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster():
    from distributed import Client, LocalCluster
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as c, Client(c) as client:
        yield c, client


def test_jobs_run_on_the_given_cluster_and_cancel_restarts_its_worker(cluster, tmp_path):
    local, client = cluster
    server = Server(tmp_path, "--scheduler", local.scheduler_address).start()
    try:
        job = server.wait_job(server.call("POST", "/api/jobs", {"kind": "solve", "body": {"instance": "tiny"}})["id"])
        assert job["status"] == "done" and job["result"]["status"] == "optimal"
        assert [d for d in server.descendants()] == []  # no cluster of its own: the work ran on the given one
        (worker_pid,) = client.run(os.getpid).values()
        job_id = server.call("POST", "/api/jobs", long_job_body())["id"]
        server.wait_job(job_id, until=("running",))
        assert server.call("DELETE", f"/api/jobs/{job_id}")["status"] == "cancelled"
        assert not alive(worker_pid), "the worker that ran the cancelled solve is still running"
        client.wait_for_workers(1, timeout=120)
        again = server.wait_job(server.call("POST", "/api/jobs", {"kind": "solve", "body": {"instance": "tiny"}})["id"])
        assert again["status"] == "done"
    finally:
        server.stop()


def test_an_unreachable_cluster_is_a_503_and_the_job_is_recorded_failed(tmp_path):
    from tests.support.service_server import free_port
    server = Server(tmp_path, "--scheduler", f"tcp://127.0.0.1:{free_port()}").start()
    try:
        status, out = server.request("POST", "/api/jobs", {"kind": "solve", "body": {"instance": "tiny"}})
        assert status == 503 and out["error"].startswith("the Dask cluster that runs jobs cannot be reached"), out
        (job,) = server.call("GET", "/api/jobs")
        assert job["status"] == "failed" and job["error"] == out["error"]
        # the synchronous endpoints do not need the cluster
        assert server.call("POST", "/api/solve", {"instance": "tiny", "sensitivity": False})["status"] == "optimal"
    finally:
        server.stop()
