"""Many independent solves, run through Dask.

A *task* is a plain, picklable dict describing one solve:

``instance``
    the instance as a dict (``Instance.model_dump()``) or a path to its JSON
    file (the path must then be readable by every worker);
``overrides``
    limits and objective to replace (``Instance.with_overrides``), optional;
``confidence``
    a share in (0, 1) for a chance-constrained solve (``chance.solve_chance``),
    or absent / None for a point solve (``uncertainty/solve.solve_instance``, the API's);
``scenarios``, ``seed``, ``cvar``
    the chance-constrained solve's sample size (default 200), seed (default 0)
    and optional CVaR level;
``time_limit``, ``sensitivity``
    seconds per solve; whether a point solve re-solves to find binding limits
    (default False: a grid wants plans, not sensitivities).

:func:`run_tasks` returns one ``SolveResult.to_dict()`` per task, in the
order of the tasks. By default the tasks run on a ``distributed.LocalCluster``
started for the run and closed after it: one worker *process* per core (never
more than there are tasks), one thread each, since Pyomo and HiGHS hold the
GIL. ``scheduler="tcp://host:port"`` runs them on an existing cluster instead
(left running); ``serial=True`` runs them one after another in this process,
with no Dask at all. Runs that last longer than :data:`PROGRESS_AFTER_SECONDS`
show a progress bar on stderr (never stdout, which ``--json`` owns). Ctrl-C
cancels the outstanding futures before the cluster is closed.
"""

from __future__ import annotations

import logging
import os
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Optional

from planopt.errors import InputError

# A run shows its progress bar once it has lasted this long.
PROGRESS_AFTER_SECONDS = 2.0
# Seconds to wait for a scheduler given by address before giving up.
CONNECT_TIMEOUT_SECONDS = 10
SCHEDULER_SCHEMES = ("tcp://", "tls://", "inproc://", "ws://", "wss://", "ucx://")


# --- one task (runs on a worker) ---------------------------------------------

def solve_task(task: dict[str, Any]) -> dict[str, Any]:
    """Solve one task description; ``SolveResult.to_dict()``."""
    from planopt.instance import load_instance
    inst = load_instance(task["instance"]).with_overrides(**task.get("overrides", {}))
    confidence = task.get("confidence")
    if confidence is None:
        from planopt.uncertainty.solve import solve_instance
        result = solve_instance(inst, time_limit=task.get("time_limit"), sensitivity=task.get("sensitivity", False))
    else:
        from planopt.uncertainty.chance import DEFAULT_SCENARIOS, solve_chance
        result = solve_chance(inst.with_overrides(confidence=confidence), confidence,
                              task.get("scenarios", DEFAULT_SCENARIOS), task.get("seed", 0),
                              task.get("cvar"), task.get("time_limit"))
    return result.to_dict()


def instance_payload(source) -> dict[str, Any]:
    """An instance (path, dict or Instance) as the plain dict a task carries, validated here first."""
    from planopt.instance import load_instance
    return load_instance(source).model_dump()


# --- where tasks run ----------------------------------------------------------

def check_scheduler(address: Optional[str], flag: str = "--scheduler") -> Optional[str]:
    """The Dask scheduler address as given (None: a local cluster); InputError naming ``flag`` unless it is
    ``SCHEME://HOST[:PORT]`` of a known scheme."""
    if address is None:
        return None
    if not isinstance(address, str) or not address.startswith(SCHEDULER_SCHEMES) or "://" == address[-3:]:
        raise InputError(f"{flag}: expected a scheduler address such as tcp://127.0.0.1:8786, got {address!r}")
    return address


def local_workers(n_tasks: int) -> int:
    """Worker processes of a local cluster: the cores this process may use, at most one per task."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(cores, n_tasks))


# The warning filter handed to multiprocessing's resource tracker (a process of its own, started with this
# interpreter's -W options, ``multiprocessing.util._args_from_interpreter_flags``). Ctrl-C ends a sweep with
# ``os._exit`` (``cli/interrupt.py``) while the LocalCluster's semaphores are open; the tracker then unlinks
# them, as it should, but also printed "resource_tracker: There appear to be 14 leaked semaphore objects"
# after ``interrupted`` (issue 28 item 11). The clean-up stays; the warning goes.
RESOURCE_TRACKER_FILTER = "ignore:resource_tracker:UserWarning"


def quiet_resource_tracker() -> None:
    """Start multiprocessing's resource tracker (if not yet started) with its leak warning filtered out."""
    import sys
    if RESOURCE_TRACKER_FILTER not in sys.warnoptions:
        sys.warnoptions.append(RESOURCE_TRACKER_FILTER)


@contextmanager
def dask_client(scheduler: Optional[str], n_tasks: int, workers: Optional[int] = None) -> Iterator[Any]:
    """A ``distributed.Client``: on the cluster at ``scheduler``, else on a LocalCluster closed afterwards
    (``workers`` processes, default ``local_workers(n_tasks)``)."""
    from distributed import Client, LocalCluster
    if scheduler is not None:
        try:
            client = Client(check_scheduler(scheduler), timeout=CONNECT_TIMEOUT_SECONDS)
        except OSError as exc:
            raise InputError(f"--scheduler: cannot reach a Dask scheduler at {scheduler} ({exc})") from None
        with client:
            yield client
        return
    # silence_logs: the workers' own log lines (e.g. a heartbeat racing the close) stay off the
    # user's stderr; a failing task still raises here, through gather
    quiet_resource_tracker()
    with LocalCluster(n_workers=workers or local_workers(n_tasks), threads_per_worker=1, processes=True,
                      dashboard_address=":0", silence_logs=logging.CRITICAL) as cluster, Client(cluster) as client:
        yield client


# --- running ------------------------------------------------------------------

def run_tasks(tasks: list[dict[str, Any]], scheduler: Optional[str] = None, serial: bool = False,
              progress: bool = True, label: str = "solves") -> list[dict[str, Any]]:
    """Solve every task; one result dict per task, in the tasks' order.

    A single task without a scheduler runs in this process (a cluster would
    only add its start-up time)."""
    if serial and scheduler is not None:
        raise InputError("--serial: cannot be combined with --scheduler (one runs here, the other on a cluster)")
    tasks = list(tasks)
    if not tasks:
        return []
    if serial or (scheduler is None and len(tasks) == 1):
        return run_serial(tasks, progress, label)
    return run_dask(tasks, scheduler, progress, label)


def run_serial(tasks: list[dict[str, Any]], progress: bool = True, label: str = "solves") -> list[dict[str, Any]]:
    """Solve ``tasks`` one after another in this process, with a progress bar; their result dicts in order."""
    out: list[dict[str, Any]] = []
    with _Progress(len(tasks), label, progress) as bar:
        for task in tasks:
            out.append(solve_task(task))
            bar.advance()
    return out


def run_dask(tasks: list[dict[str, Any]], scheduler: Optional[str] = None, progress: bool = True,
             label: str = "solves", client: Any = None) -> list[dict[str, Any]]:
    """Solve on Dask: the given ``client``, else the cluster at ``scheduler``, else a LocalCluster."""
    if client is not None:
        return _map_gather(client, tasks, progress, label)
    with dask_client(scheduler, len(tasks)) as own:
        return _map_gather(own, tasks, progress, label)


def _map_gather(client: Any, tasks: list[dict[str, Any]], progress: bool, label: str) -> list[dict[str, Any]]:
    from distributed import as_completed
    futures = client.map(solve_task, tasks, pure=False)
    try:
        with _Progress(len(tasks), label, progress) as bar:
            for _ in as_completed(futures):
                bar.advance()
        return client.gather(futures)
    except KeyboardInterrupt:
        client.cancel(futures)
        raise
    finally:
        for f in futures:
            f.release()


class _Progress:
    """A rich progress bar on stderr that appears only once the run has lasted PROGRESS_AFTER_SECONDS."""

    def __init__(self, total: int, label: str, enabled: bool, after: float = PROGRESS_AFTER_SECONDS,
                 clock: Callable[[], float] = time.perf_counter):
        self.total, self.label, self.enabled, self.after, self.clock = total, label, enabled, after, clock
        self.done, self.bar, self.task = 0, None, None

    def __enter__(self) -> "_Progress":
        self.start = self.clock()
        return self

    def advance(self) -> None:
        self.done += 1
        if self.bar is None and self.enabled and self.done < self.total and self.clock() - self.start >= self.after:
            self._show()
        if self.bar is not None:
            self.bar.update(self.task, completed=self.done)

    def _show(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                            console=Console(stderr=True), transient=True)
        self.bar.start()
        self.task = self.bar.add_task(self.label, total=self.total)

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.stop()
