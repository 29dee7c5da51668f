"""Long work as jobs, run on Dask and remembered in the job store.

``submit`` stores the job and hands it to Dask at once (a LocalCluster of one
single-threaded worker process per core, started on the first job, or the
cluster at ``--scheduler``); the id comes back before any solving starts.
The synchronous endpoints run on the same cluster (:func:`run_request`, ahead of
queued jobs), so no solve ever runs in the service's own process. The task itself
(:func:`run_job`, on a worker) reports that it started, on
which worker and process, and its progress, as Dask worker events on the
job's own topic; the service reads them when asked (``refresh``) and when the
task ends (a future's done-callback stores the result).

Cancelling must really stop the solver: HiGHS runs in C and cannot be
interrupted from Python, so a cancelled job that a worker has taken gets that
worker process ended (SIGKILL on our LocalCluster, whose nanny starts a fresh
one; ``Client.restart_workers`` on a cluster at ``--scheduler``). One worker has
one thread and takes one task at a time (worker saturation 1.0), so that ends
this job's solve and nothing else.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from typing import Any, Optional

from planopt.service.store import JobStore

log = logging.getLogger("planopt.service")

TOPIC = "planopt-job-{}"
# Seconds to wait for a worker's nanny to kill and restart it on cancel.
RESTART_TIMEOUT_SECONDS = 60
INTERNAL = "internal error while running the job (the service log has the details)"
# Dask priority of a synchronous request's work: above jobs' (0), so a quick answer does not queue
# behind long jobs that have not started yet (it still waits for a worker to be free).
REQUEST_PRIORITY = 10


def run_job(job_id: str, kind: str, instance: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """On a Dask worker: one job's payload; ``{"ok": True, "result": ...}`` or ``{"ok": False, "error": line}``
    for bad input (anything else raises, and the service reports an internal error without its text)."""
    from distributed import get_worker
    from planopt.errors import InputError
    from planopt.service.payloads import KINDS
    worker = get_worker()
    topic = TOPIC.format(job_id)
    worker.log_event(topic, {"started": time.time(), "pid": os.getpid(), "worker": worker.address})
    progress = lambda done, total: worker.log_event(topic, {"done": done, "total": total})  # noqa: E731
    try:
        return {"ok": True, "result": KINDS[kind](instance, options, progress)}
    except InputError as exc:
        return {"ok": False, "error": str(exc)}


def run_request(kind: str, instance: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """On a Dask worker: a synchronous endpoint's work (``payloads.WORK``); ``{"ok": True, "result": ...}``
    or ``{"ok": False, "error": line}`` for bad input, with the seconds the library took (anything else
    raises, and the service answers with its fixed internal-error sentence).

    The service's own process never runs a solve: HiGHS's output capture (Pyomo's ``capture_output``,
    around every run) redirects the process's file descriptors 1 and 2, so two solves in two threads
    of one process deadlock (issue 28 item 1). A worker is one single-threaded process: one solve at a time."""
    from planopt.errors import InputError
    from planopt.service.payloads import WORK
    start = time.perf_counter()
    try:
        return {"ok": True, "result": WORK[kind](instance, options), "seconds": time.perf_counter() - start}
    except InputError as exc:
        return {"ok": False, "error": str(exc), "seconds": time.perf_counter() - start}


def _import_library() -> None:
    """On each worker: import what the payloads use, before the first task needs it."""
    import planopt.api  # noqa: F401
    import planopt.service.payloads  # noqa: F401
    import planopt.uncertainty.risk  # noqa: F401


def _placed_on(dask_scheduler, key: str) -> Optional[tuple[str, int]]:
    """On the scheduler: the address and process id of the worker a task was sent to (None while it is queued)."""
    task = dask_scheduler.tasks.get(key)
    if task is None or task.processing_on is None:
        return None
    return task.processing_on.address, task.processing_on.pid


class JobRunner:
    """Submits jobs to Dask, records their ends in the store, cancels them for real."""

    def __init__(self, store: JobStore, scheduler: Optional[str] = None, workers: Optional[int] = None):
        self.store, self.scheduler, self.workers = store, scheduler, workers
        self._client = None          # jobs' cluster: the one at --scheduler, else our LocalCluster
        self._local_client = None    # our LocalCluster: synchronous requests always run there
        self._cluster = None
        self._futures: dict[str, Any] = {}
        self._where: dict[str, dict[str, Any]] = {}   # job id -> its start event (worker, pid)
        self._lock = threading.Lock()
        self._closed = False

    # --- the clusters -----------------------------------------------------
    def client(self):
        """The Dask client of jobs, connecting (or starting the LocalCluster) on first use."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the service is stopping: its cluster is closed")
            if self._client is None:
                if self.scheduler is not None:
                    from distributed import Client
                    from planopt.studies.distributed import CONNECT_TIMEOUT_SECONDS, check_scheduler
                    self._client = Client(check_scheduler(self.scheduler), timeout=CONNECT_TIMEOUT_SECONDS)
                else:
                    self._client = self._local()
            return self._client

    def request_client(self):
        """The Dask client of synchronous requests: always the service's own LocalCluster (the cluster of
        jobs when there is no --scheduler; with one, a LocalCluster started on the first request), so a
        quick answer does not depend on a remote cluster, as it did not when requests ran in this process."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the service is stopping: its cluster is closed")
            return self._local()

    def _local(self):
        """Our LocalCluster's client, started on first use (under the lock)."""
        if self._local_client is None:
            import dask
            from distributed import Client, LocalCluster
            from planopt.studies.distributed import local_workers
            n = self.workers or local_workers(os.cpu_count() or 1)
            # one task per single-threaded worker at a time: a task the scheduler has placed on a
            # worker is the one that worker runs, so cancelling it may restart that worker (below)
            with dask.config.set({"distributed.scheduler.worker-saturation": 1.0}):
                # its HTTP server (health, dashboard) on a free loopback port: None would take 8787, and a
                # second service on the machine would print a multi-line warning into the log
                self._cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                             dashboard_address="127.0.0.1:0", silence_logs=logging.CRITICAL)
            self._local_client = Client(self._cluster)
        return self._local_client

    def warm_up(self) -> Optional[threading.Thread]:
        """Start the LocalCluster and have every worker import the library, in a background thread: the
        first requests then wait for neither (a LocalCluster takes seconds to start, an import of Pyomo and
        the models another second or two per worker). A failure is logged; the first request tries again.
        With --scheduler nothing starts before it is needed (as before: the remote cluster is connected to
        on the first job, a LocalCluster for requests on the first request)."""
        if self.scheduler is not None:
            return None

        def run() -> None:
            try:
                self.request_client().run(_import_library)
            except Exception as exc:  # noqa: BLE001 - a request will say the cluster is unavailable
                if self._closed:  # the service stopped while its cluster was starting: nothing to say
                    return
                from planopt.service.errors import one_line
                log.warning("the Dask cluster did not start: %s", one_line(exc))
        thread = threading.Thread(target=run, name="planopt-cluster-start", daemon=True)
        thread.start()
        return thread

    def close(self) -> None:
        """Cancel what is still running (the store marks it interrupted) and stop the LocalCluster."""
        with self._lock:
            self._closed = True
            futures, self._futures = list(self._futures.values()), {}
            client, local, cluster = self._client, self._local_client, self._cluster
            self._client = self._local_client = self._cluster = None
        self.store.mark_interrupted()
        try:
            if client is not None:
                try:
                    client.cancel(futures, force=True)
                finally:
                    client.close()
        finally:
            if local is not None and local is not client:
                local.close()
            if cluster is not None:
                cluster.close()

    # --- jobs -------------------------------------------------------------
    def submit(self, job_id: str, kind: str, instance: dict[str, Any], options: dict[str, Any]) -> None:
        """Run job ``job_id`` on the cluster (:func:`run_job`); its result lands in the store when it finishes."""
        client = self.client()
        future = client.submit(run_job, job_id, kind, instance, options, key=TOPIC.format(job_id), pure=False)
        with self._lock:
            self._futures[job_id] = future
        future.add_done_callback(lambda f, job_id=job_id: self._finished(job_id, f))

    def submit_request(self, kind: str, instance: dict[str, Any], options: dict[str, Any]):
        """A synchronous endpoint's work on the cluster (:func:`run_request`); its Dask future. Ahead of queued
        jobs (a request is waited for, a job is not). Blocks while the cluster starts: call it from a thread."""
        return self.request_client().submit(run_request, kind, instance, options, pure=False, priority=REQUEST_PRIORITY)

    async def wait(self, future) -> dict[str, Any]:
        """The outcome of :meth:`submit_request`'s future, awaited without holding a thread; the remote
        exception raised if the work failed. A request given up (its coroutine cancelled) cancels the work."""
        import asyncio
        from starlette.concurrency import run_in_threadpool
        loop = asyncio.get_running_loop()
        done = loop.create_future()

        def finished(_):
            loop.call_soon_threadsafe(lambda: done.done() or done.set_result(None))
        future.add_done_callback(finished)
        try:
            await done
        except asyncio.CancelledError:
            future.cancel()
            raise
        return await run_in_threadpool(future.result)

    def refresh(self, job_id: str) -> None:
        """Fold the job's worker events (started, progress) into the store."""
        client = self._client
        if client is None or job_id not in self._futures:
            return
        try:
            events = client.get_events(TOPIC.format(job_id))
        except Exception:  # noqa: BLE001 - a cluster going away must not fail a status request
            return
        progress = None
        for _, event in events:
            if "started" in event and job_id not in self._where:
                self._where[job_id] = event
                self.store.set(job_id, status="running", started_at=event["started"])
            if "done" in event:
                progress = {"done": event["done"], "total": event["total"]}
        if progress is not None:
            self.store.set(job_id, progress=progress)

    def _finished(self, job_id: str, future) -> None:
        if future.cancelled():
            return
        self.refresh(job_id)
        try:
            outcome = future.result()
        except Exception as exc:  # noqa: BLE001 - logged here, never sent to the client
            from planopt.service.errors import one_line
            log.error("job %s failed: %s", job_id, one_line(exc))
            outcome = {"ok": False, "error": INTERNAL}
        now = time.time()
        if outcome["ok"]:
            self.store.set(job_id, status="done", result=outcome["result"], finished_at=now)
        else:
            self.store.set(job_id, status="failed", error=outcome["error"], finished_at=now)
        with self._lock:
            self._futures.pop(job_id, None)
            self._where.pop(job_id, None)

    def cancel(self, job_id: str) -> bool:
        """Stop the job: cancel its future and, if it has started, restart its worker process. False if it had ended."""
        self.refresh(job_id)
        if not self.store.set(job_id, status="cancelled", finished_at=time.time()):
            return False
        with self._lock:
            future = self._futures.pop(job_id, None)
            where = self._where.pop(job_id, None)
        client = self._client
        if future is not None and client is not None:
            # ask before cancelling: once cancelled, the scheduler forgets where the task was placed, while
            # the worker goes on running it (its start event may not have arrived yet)
            placed = client.run_on_scheduler(_placed_on, key=future.key)
            if placed is None and where is not None:
                placed = (where["worker"], where["pid"])
            client.cancel(future, force=True)
            if placed is not None:  # it is running in C inside that process: only ending the process stops it
                self._end_worker(*placed)
        return True

    def _end_worker(self, address: str, pid: int) -> None:
        """End a worker process mid-task. On our own LocalCluster: SIGKILL it (a worker busy in C may not
        answer a polite close), and its nanny starts a fresh one. On a cluster at --scheduler: restart it
        through its nanny (the process is on another machine)."""
        if self.scheduler is None:  # the job ran on our LocalCluster
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        else:
            self._client.restart_workers([address], timeout=RESTART_TIMEOUT_SECONDS, raise_for_error=False)
