"""Simultaneous synchronous solves against a real `planopt serve` (issue 28 item 1).

Run:  python benchmarks/bench_concurrency.py [--requests 100] [--clients 4] [--instance tiny] [--workers N]

A server on loopback with a token file of ``--clients`` principals (``user`` role), its cluster
warmed by one solve; then every request is sent at once (one thread each, the principals taking
turns) as ``POST /api/solve`` and timed by the client from the common start. Every answer must be
200 with the CLI's JSON for the instance (timings aside). Prints the latency percentiles, the
wall time until the last answer, and the library's own seconds (the ``Server-Timing: work``
header) summed and divided by the workers: the least wall time the workers could have taken.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the tests' real-server harness (tests/support/): a subprocess on a free port

from tests.support.service_server import Server, without_timings  # noqa: E402


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100), nearest rank."""
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, int(round(q / 100 * len(ordered) + 0.5)) - 1))]


def token_file(folder: Path, clients: int) -> list[str]:
    tokens = [f"bench-token-{k:02d}-0123456789abcdef" for k in range(clients)]
    (folder / "tokens").write_text("".join(f"{t} client{k} user\n" for k, t in enumerate(tokens)))
    return tokens


def run(requests: int, clients: int, instance: str, workers: int | None) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        tokens = token_file(folder, clients)
        options = ["--token-file", str(folder / "tokens")] + (["--workers", str(workers)] if workers else [])
        server = Server(folder, *options, token=None).start()
        server.token = tokens[0]
        try:
            body = {"instance": instance}
            expected = without_timings(server.call("POST", "/api/solve", body))  # also warms the cluster
            start = threading.Event()

            def one(k: int):
                start.wait()
                t = time.perf_counter()
                status, out = server.request("POST", "/api/solve", body, token=tokens[k % clients])
                seconds = time.perf_counter() - t0[0]
                work = float(server.last_headers.get("server-timing", "work;dur=nan").split("dur=")[1]) / 1000 \
                    if status == 200 else float("nan")
                return status, out, seconds, time.perf_counter() - t, work

            t0 = [0.0]
            with ThreadPoolExecutor(requests) as pool:
                futures = [pool.submit(one, k) for k in range(requests)]
                time.sleep(0.5)  # every thread waiting at the start line
                t0[0] = time.perf_counter()
                start.set()
                answers = [f.result() for f in futures]
            wall = max(a[2] for a in answers)
            ok = sum(a[0] == 200 and without_timings(a[1]) == expected for a in answers)
            latencies = [a[2] for a in answers]
            works = [a[4] for a in answers if a[0] == 200]
            n_workers = workers or _workers(server)
        finally:
            server.stop()
    return {"requests": requests, "clients": clients, "instance": instance, "workers": n_workers,
            "correct": ok, "p50_s": statistics.median(latencies), "p95_s": percentile(latencies, 95),
            "max_s": max(latencies), "wall_s": wall, "work_median_s": statistics.median(works),
            "work_sum_per_worker_s": sum(works) / n_workers}


def _workers(server: Server) -> int:
    """The local cluster's worker processes: the server's descendants that are Dask workers (one per core)."""
    import os
    return os.cpu_count() or 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--instance", default="tiny")
    parser.add_argument("--workers", type=int, default=None)
    args = parser.parse_args()
    out = run(args.requests, args.clients, args.instance, args.workers)
    print(json.dumps(out, indent=1))
    print(f"| {out['requests']} simultaneous `POST /api/solve` ({out['instance']}, {out['clients']} principals, "
          f"{out['workers']} workers) | {out['correct']} of {out['requests']} correct | p50 {out['p50_s']:.2f} s | "
          f"p95 {out['p95_s']:.2f} s | max {out['max_s']:.2f} s | library {out['work_median_s'] * 1000:.0f} ms per solve "
          f"(median), {out['work_sum_per_worker_s']:.2f} s summed per worker |")


if __name__ == "__main__":
    main()
