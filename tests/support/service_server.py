"""A real `planopt serve` for the service tests: a subprocess on a free loopback port, spoken to over HTTP.

The server runs in its own process group, so stopping it (or killing it, to
simulate a crash) also ends the Dask worker processes it started.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Optional

TOKEN = "test-token-0123456789abcdef"
# Generous bounds on waiting for a server to come up or a job to end; a hang fails instead of stalling CI.
START_TIMEOUT_SECONDS = 120
JOB_TIMEOUT_SECONDS = 300


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """``planopt serve`` with a token file, a job store in ``folder`` and the given extra options."""

    def __init__(self, folder: Path, *options: str, token: Optional[str] = TOKEN, db: Optional[str] = None, env=None):
        self.folder, self.options, self.token = folder, list(options), token
        self.db = db or f"sqlite:///{folder / 'jobs.sqlite'}"
        self.env = env
        self.process: Optional[subprocess.Popen] = None
        self.log = folder / "server.log"

    def start(self) -> "Server":
        self.port = free_port()
        args = [sys.executable, "-m", "planopt.cli", "serve", "--port", str(self.port), "--db", self.db, *self.options]
        if self.token is not None:
            token_file = self.folder / "token"
            token_file.write_text(self.token + "\n")
            args += ["--token-file", str(token_file)]
        env = {k: v for k, v in os.environ.items() if k != "PLANOPT_TOKEN"} | (self.env or {})
        self._log = open(self.log, "ab")
        self.process = subprocess.Popen(args, cwd=self.folder, stdout=self._log, stderr=self._log,
                                        start_new_session=True, env=env)
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"planopt serve exited with {self.process.returncode}:\n{self.log.read_text()[-3000:]}")
            try:
                if self.request("GET", "/api/health", token=None)[0] == 200:
                    return self
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"planopt serve did not answer in {START_TIMEOUT_SECONDS} s:\n{self.log.read_text()[-3000:]}")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def request(self, method: str, path: str, body: Any = None, token: Optional[str] = "default",
                raw: Optional[bytes] = None, headers: Optional[dict] = None, chunks=None) -> tuple[int, Any]:
        """One HTTP request; (status, parsed JSON body or the text)."""
        token = self.token if token == "default" else token
        sent = {"content-type": "application/json", **(headers or {})}
        if token is not None:
            sent["authorization"] = f"Bearer {token}"
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=JOB_TIMEOUT_SECONDS)
        try:
            if chunks is not None:
                conn.request(method, path, body=chunks, headers=sent, encode_chunked=True)
            else:
                conn.request(method, path, body=data, headers=sent)
            response = conn.getresponse()
            text = response.read().decode()
            self.last_headers = dict(response.getheaders())
        finally:
            conn.close()
        try:
            return response.status, json.loads(text)
        except json.JSONDecodeError:
            return response.status, text

    def call(self, method: str, path: str, body: Any = None) -> Any:
        """A request that must succeed (2xx); its JSON."""
        status, out = self.request(method, path, body)
        assert 200 <= status < 300, (method, path, status, out)
        return out

    def wait_job(self, job_id: str, until=("done", "failed", "cancelled", "interrupted")) -> dict:
        deadline = time.monotonic() + JOB_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            job = self.call("GET", f"/api/jobs/{job_id}")
            if job["status"] in until:
                return job
            time.sleep(0.2)
        raise AssertionError(f"job {job_id} not {until} within {JOB_TIMEOUT_SECONDS} s: {job}")

    def stop(self) -> None:
        """A clean stop (SIGTERM to the server; its cluster closes), then anything left in its group is killed."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                pass
        self._kill_group()

    def crash(self) -> None:
        """SIGKILL the server and its worker processes at once, as a machine failure would."""
        self._kill_group()

    def _kill_group(self) -> None:
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait(30)
        self._log.close()
        self.process = None

    def descendants(self) -> dict[int, int]:
        """The server's descendant processes (its Dask workers and nannies): pid -> CPU ticks used."""
        parent_of, ticks = {}, {}
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                if fields[0] != "Z":
                    parent_of[int(entry.name)] = int(fields[1])
                    ticks[int(entry.name)] = int(fields[11]) + int(fields[12])
        out = {}
        for pid in parent_of:
            p = pid
            while p in parent_of and p != self.process.pid and p > 1:
                p = parent_of[p]
            if p == self.process.pid and pid != p:
                out[pid] = ticks[pid]
        return out


def without_timings(obj):
    """A JSON answer without its ``*_seconds`` fields: what two runs of the same request share."""
    if isinstance(obj, dict):
        return {k: without_timings(v) for k, v in obj.items() if not k.endswith("_seconds")}
    if isinstance(obj, list):
        return [without_timings(v) for v in obj]
    return obj


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its parent counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


# A portfolio whose MIP runs for minutes on this machine: long enough to be caught running and cancelled.
LONG_PORTFOLIO = {"jobs": 40, "gpu_types": 4, "buckets": 12, "seed": 3}


def long_job_body():
    """A job of ``LONG_PORTFOLIO``, the body of ``POST /api/jobs``."""
    from planopt.portfolio.generate import random_portfolio
    p = LONG_PORTFOLIO
    return {"kind": "portfolio", "body": {"portfolio": random_portfolio(p["jobs"], p["gpu_types"], p["buckets"], seed=p["seed"])}}
