"""Pricing: each job's least share at given multipliers, in this process or on a Dask cluster.

The Lagrangian ascent (``lagrange.lagrangian_bound``) and column generation
(``columns.column_generation``, and through it every node of the branching) price
every job at each iteration: ``ruled_minimum`` of one job's ``JobPlans`` at the
multipliers :math:`\\lambda` [B, G, 3], one independent subproblem per job. A
*pricer* does that pass for all jobs:

- :class:`SerialPricer` one job after another in this process (the default, and the
  rule for a small portfolio: :func:`choose_pricing`);
- :class:`DaskPricer` on a ``distributed.Client``: the jobs' arrays are split into
  ``BATCHES_PER_WORKER`` contiguous batches per worker and scattered ONCE, each batch
  to one worker (``Client.scatter``); each pass then sends per batch only the
  multipliers, the reservation caps of the node (the G numbers ``cap_mask`` closes
  reserved tiers by) and the batch's branching rules, and gets back each job's least
  share and minimiser. The master LP, the multipliers and the bound stay in the client.

Both run the same function on the same arrays, so a pass returns the same floats in
the same order: a distributed solve returns the serial solve's bound, columns and
schedule (``tests/solver/portfolio/test_portfolio_dask.py``).

**When Dask.** ``choose_pricing`` picks Dask for ``--scheduler`` or ``--workers``; ``auto`` (the
CLI's default) picks a local cluster of the cores only when the portfolio has at least
``DASK_MIN_JOBS`` jobs, this process may use two cores or more, and all but one are idle (1-minute
load average at most cores - 1: the solve itself is the one busy process), else serial.

Measured by ``benchmarks/bench_portfolio_dask.py`` (BENCHMARKS.md §3, "Pricing on Dask"; 2026-12-02,
the 2-core machine shared with other sessions, load average 5-7) on generated portfolios of 100 and
400 jobs × 14 GPU types × 26 buckets, seeds 1-3: a 2-worker LocalCluster starts in 1.6-9.6 s and
takes the plans in 0.1-1.0 s; a pass costs the serial pass's compute split over the workers plus
0.08-0.2 s of round trips (a probe: 100 jobs, 8 passes); a serial pass costs 1.9-5.8 ms a job.
On idle cores two workers save half a pass less the round trips, which outweighs the start-up
over the 32-113 passes of an ascent and column generation from ~200 jobs on (``DASK_MIN_JOBS``).
On busy cores they save nothing: the kernel shares one session's CPU among its processes
(autogroup), so the workers' subproblems took 1.5-10× the serial time per pass, and every Dask run
there was slower overall (faster in column generation in 1 of 6); hence the load test.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from planopt.errors import InputError
from planopt.portfolio.lagrange import JobPlans, ruled_minimum

BATCHES_PER_WORKER = 2   # tasks per worker and pass: few enough that task overhead stays small, two to even out the load
DASK_MIN_JOBS = 200      # auto: Dask from this many jobs, on idle cores (module docstring: measured)


def cap_mask(jp: JobPlans, high: np.ndarray | None, gpu_index: dict) -> np.ndarray | None:
    """The tiers job ``jp`` may hold under reservation caps ``high`` [G] (None: no cap): no
    reserved tier for a pair whose count is over its type's cap; None when nothing is closed."""
    if high is None:
        return None
    over = [p for p in range(len(jp.pairs)) if jp.count[p] > high[gpu_index[jp.gpu[p]]] + 1e-9]
    if not over:
        return None
    mask = np.ones((len(jp.pairs), jp.tier_ok.shape[1], 3), dtype=bool)
    mask[over, :, 0] = False
    return mask


def price_jobs(plans: list, jobs: list, lam: np.ndarray, gpu_index: dict, rules: dict | None,
               high: np.ndarray | None) -> list[tuple[float, tuple | None]]:
    """``ruled_minimum`` of each of ``plans`` (the jobs ``jobs``, their indices in the portfolio)
    at ``lam``, under its rule in ``rules`` (job -> ``JobRule``) and the caps ``high``."""
    rules = rules or {}
    return [ruled_minimum(jp, lam, gpu_index, rules.get(j), cap_mask(jp, high, gpu_index)) for j, jp in zip(jobs, plans)]


@dataclass
class PlanBatch:
    """Some jobs' plan arrays as one object, scattered to one worker once (``DaskPricer``)."""
    jobs: list
    plans: list
    gpu_index: dict


def price_batch(batch: PlanBatch, lam: np.ndarray, rules: dict, high: np.ndarray | None) -> tuple[list, float]:
    """On a worker: ``price_jobs`` over one batch; its results and the seconds they took."""
    start = time.perf_counter()
    out = price_jobs(batch.plans, batch.jobs, lam, batch.gpu_index, rules, high)
    return out, time.perf_counter() - start


@dataclass
class PricingStats:
    """Where the pricing's time went: passes, seconds in them as the client waited, and the
    seconds the jobs' subproblems themselves took (on the workers, or here when serial)."""
    passes: int = 0
    seconds: float = 0.0
    compute_seconds: float = 0.0
    scatter_seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """The counts as a plain dict."""
        return {"passes": self.passes, "seconds": self.seconds, "compute_seconds": self.compute_seconds,
                "scatter_seconds": self.scatter_seconds}


class SerialPricer:
    """Every job priced in this process, one after another."""
    kind = "serial"

    def __init__(self, plans: list, gpu_index: dict):
        self.plans, self.gpu_index = plans, gpu_index
        self.stats = PricingStats()

    def price(self, lam: np.ndarray, rules: dict | None = None, high: np.ndarray | None = None) -> tuple[list, list]:
        """Each job's least share and minimiser at ``lam`` (``price_jobs``), in job order."""
        start = time.perf_counter()
        out = price_jobs(self.plans, list(range(len(self.plans))), lam, self.gpu_index, rules, high)
        took = time.perf_counter() - start
        self.stats.passes += 1
        self.stats.seconds += took
        self.stats.compute_seconds += took
        return [v for v, _ in out], [ch for _, ch in out]

    def close(self) -> None:
        """Nothing to release."""


class DaskPricer:
    """Every job priced on the workers of ``client``: its plans scattered once, in
    ``BATCHES_PER_WORKER`` batches per worker, each pass sending the multipliers alone."""
    kind = "dask"

    def __init__(self, client: Any, plans: list, gpu_index: dict, batches_per_worker: int = BATCHES_PER_WORKER):
        self.client, self.plans, self.gpu_index = client, plans, gpu_index
        self.stats = PricingStats()
        start = time.perf_counter()
        workers = sorted(client.scheduler_info()["workers"])
        n = max(1, min(len(plans), len(workers) * batches_per_worker))
        bounds = np.linspace(0, len(plans), n + 1).round().astype(int)
        self.batches = [list(range(a, b)) for a, b in zip(bounds[:-1], bounds[1:]) if b > a]
        self.futures = [client.scatter(PlanBatch(jobs, [plans[j] for j in jobs], gpu_index),
                                       workers=[workers[k % len(workers)]] if workers else None, hash=False)
                        for k, jobs in enumerate(self.batches)]
        self.stats.scatter_seconds = time.perf_counter() - start

    def price(self, lam: np.ndarray, rules: dict | None = None, high: np.ndarray | None = None) -> tuple[list, list]:
        """As ``SerialPricer.price``, one task per batch on the worker that holds it."""
        start = time.perf_counter()
        rules = rules or {}
        tasks = [self.client.submit(price_batch, f, lam, {j: rules[j] for j in jobs if j in rules}, high, pure=False)
                 for f, jobs in zip(self.futures, self.batches)]
        mins: list = []
        chs: list = []
        for out, took in self.client.gather(tasks):
            mins.extend(v for v, _ in out)
            chs.extend(ch for _, ch in out)
            self.stats.compute_seconds += took
        self.stats.passes += 1
        self.stats.seconds += time.perf_counter() - start
        return mins, chs

    def close(self) -> None:
        """Release the scattered plans on the cluster."""
        for f in self.futures:
            f.release()
        self.futures = []


def pricer_of(pm, plans: list, gpu_index: dict):
    """The model's pricer when it prices these very ``plans`` (``pm.pricer``), else a serial one."""
    pricer = getattr(pm, "pricer", None)
    if pricer is not None and pricer.plans is plans:
        return pricer
    return SerialPricer(plans, gpu_index)


@dataclass(frozen=True)
class Pricing:
    """Where a portfolio solve prices its jobs: ``mode`` ``serial``, ``dask`` (the cluster at
    ``scheduler``, else a LocalCluster of ``workers`` processes, default one per core) or
    ``auto`` (``choose_pricing``); ``client`` an open ``distributed.Client`` to use as is."""
    mode: str = "serial"
    scheduler: Optional[str] = None
    workers: Optional[int] = None
    client: Any = field(default=None, compare=False)


def check_pricing(scheduler: Optional[str], workers: Optional[int], serial: bool) -> Pricing:
    """The CLI's ``--scheduler``, ``--workers`` and ``--serial`` as a ``Pricing``; one-line InputError
    for a bad address, a worker count below 1 or two that contradict each other."""
    from planopt.studies.distributed import check_scheduler
    check_scheduler(scheduler)
    if serial and (scheduler is not None or workers is not None):
        other = "--scheduler" if scheduler is not None else "--workers"
        raise InputError(f"--serial: cannot be combined with {other} (one prices here, the other on a cluster)")
    if workers is not None and scheduler is not None:
        raise InputError("--workers: sizes the local cluster; a cluster at --scheduler has its own workers")
    if workers is not None and workers < 1:
        raise InputError(f"--workers: expected at least 1, got {workers}")
    if serial:
        return Pricing("serial")
    return Pricing("dask" if scheduler is not None or workers is not None else "auto", scheduler, workers)


def usable_cores() -> int:
    """The cores this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def idle_cores() -> float:
    """The usable cores less the 1-minute load average (this solve's own process counts in it)."""
    return usable_cores() - (os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0)


def choose_pricing(pricing: Pricing | None, jobs: int) -> Pricing:
    """``auto`` resolved (module docstring): Dask from ``DASK_MIN_JOBS`` jobs on two cores or more
    of which all but one are idle, else serial; None (the Python API's default) is serial."""
    if pricing is None:
        return Pricing("serial")
    if pricing.mode != "auto":
        return pricing
    dask = jobs >= DASK_MIN_JOBS and usable_cores() >= 2 and idle_cores() >= 1
    return Pricing("dask") if dask else Pricing("serial")
