"""A solve's time: the deadline, the shares a portfolio solve's phases take, the measured restore time.

A single job's solve (``uncertainty/solve.py``: build, solve, the Limits re-solves, risk) spends one
:class:`TimeBudget` started when the command starts; so does a portfolio's, whose phases the rest of
this module is about (it lives in ``job/``, below both, for that reason).

A solve (``PortfolioModel.solve``) runs its phases one after another within one time limit
(``solver/portfolio/phases.py``): each takes a share of the time left, never a fixed slice, so a
phase that ends early leaves its time to the next. :class:`TimeBudget` is the one object they
share: the deadline (``end``), ``left()``, ``share(x)``, the time limit of a sub-solve
(``sub_solve_seconds``), the time kept for loading a schedule (``restore_seconds``, from the
longest schedule LP measured so far) and what each phase took (``spent``).

The shares and floors below are measured values (BENCHMARKS.md §3 has the runs), grouped by the
phase that takes them.
"""

from __future__ import annotations

import dataclasses
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator

# --- every phase ----------------------------------------------------------
MIN_SOLVE_SECONDS = 0.01   # the shortest time limit handed to HiGHS (the CLI's lower bound on --time-limit)
RESTORE_SECONDS = 3.0      # at least, kept for loading one schedule (its LP, all integers fixed: ~0.5-1.5 s on 50 jobs, ~2 s on 100; BENCHMARKS.md §3)
RESTORE_MARGIN = 1.5       # times the longest schedule LP measured in this solve, kept for loading the best schedule

# --- bound: the Lagrangian ascent, column generation, the branching --------
LAGRANGE_SECONDS = 10.0    # the subgradient ascent: on 50 jobs ~0.1 s an iteration, within 0.1 % of its plateau after ~90 (BENCHMARKS.md §3)
LAGRANGE_SHARE = 0.1       # of the time left, at most, for it
LAGRANGE_MORE_SHARE = 0.5  # of the time left after the search, at most, for column generation (converged in ~11 s on 50 jobs)
BRANCH_SHARE = 0.85        # of the time left after the master search, at most, for the branching (the MIP proper adds nothing on 50 jobs in 60 s)
FINISH_RESTORES = 3        # restore times the branching leaves: the leaves' masters, their schedules, the final load

# --- search: the greedy, the sub-MIPs of fixed plans, the integer master ----
COMPLETE_SECONDS = 10.0    # at most, for the sub-MIP completing the warm start's plans (~1 s on 50 jobs)
COMPLETE_SHARE = 0.15      # of the time left, at most, for it
SEARCH_SECONDS = 10.0      # without a time limit: the completion's share is taken of this
SEARCH_SHARE = 0.5         # of the time left after the warm start: what the search's sub-MIPs take a share of
GREEDY_SHARE = 0.2         # of the time left after the warm start, at most, for the greedy and its best responses
MASTER_SHARE = 0.6         # of the time left after column generation, at most, for the integer master (~3-5 s on 50 jobs)
RESERVATION_GREEDY_SHARE = 0.05   # of the time left, at most, for the greedy from a reservation vector the branching proposes
LAYERED_TWIN_SHARE = 0.4  # of the time left, at most, for the plain twin of a portfolio with layered jobs
LATER_BASE_SHARE = 0.5     # of the time left, at most, for the bucket-0 twin of a portfolio with later starts

# --- the MIP proper, the polish, the explanation ------------------------------
POLISH_SECONDS = 60.0      # at most, for the polish (the schedule LP at the MIP's integers) without a time limit
EXPLAIN_SECONDS = 30.0     # per one-job solve when explaining an infeasible portfolio

# Without a time limit the search's shares are taken of this notional time left: the sub-MIP of
# fixed plans gets COMPLETE_SHARE of it (3 s), as under a limit with SEARCH_SECONDS of search.
UNLIMITED_SEARCH_SECONDS = SEARCH_SECONDS / SEARCH_SHARE


@dataclass
class TimeBudget:
    """The time of one solve, shared by its phases.

    ``end`` is a ``time.perf_counter`` instant (None: no time limit), ``started`` when the limit
    began counting (loading and building included). ``restores`` are the wall seconds of every
    schedule LP (all integers fixed) measured so far; ``spent`` the seconds each named phase
    took. A phase that must stop before the solve does works within ``until(instant)``: the same
    budget with an earlier deadline, whose measurements land in the same ``restores`` and
    ``spent``."""

    end: float | None = None
    started: float = field(default_factory=time.perf_counter)
    restores: list[float] = field(default_factory=list)
    spent: dict[str, float] = field(default_factory=dict)

    @classmethod
    def of(cls, time_limit: float | None, started_at: float, restores: list[float] | None = None) -> "TimeBudget":
        """``time_limit`` seconds from ``started_at`` (None: no limit); ``restores`` carried over
        from an earlier solve of the same model (its schedule LPs take as long)."""
        return cls(None if time_limit is None else started_at + time_limit, started_at,
                   restores if restores is not None else [])

    @property
    def limited(self) -> bool:
        """Whether the solve has a deadline."""
        return self.end is not None

    def left(self, now: float | None = None) -> float | None:
        """Seconds to the deadline (negative past it); None without a time limit."""
        if self.end is None:
            return None
        return self.end - (time.perf_counter() if now is None else now)

    def expired(self, now: float | None = None) -> bool:
        """The deadline has passed (never without a time limit)."""
        return self.end is not None and (time.perf_counter() if now is None else now) >= self.end

    def share(self, x: float) -> float | None:
        """``x`` of the time left (None without a time limit)."""
        left = self.left()
        return None if left is None else x * left

    def until(self, end: float) -> "TimeBudget":
        """The same budget ending at ``end`` (a phase's own stop), sharing its measurements."""
        return dataclasses.replace(self, end=end)

    def sub_solve_seconds(self, share: float) -> float:
        """The time limit of a sub-MIP or schedule LP of the search: ``share`` of the time left
        (``UNLIMITED_SEARCH_SECONDS`` without a limit), within [MIN_SOLVE_SECONDS, COMPLETE_SECONDS]."""
        left = UNLIMITED_SEARCH_SECONDS if self.end is None else self.end - time.perf_counter()
        return max(MIN_SOLVE_SECONDS, min(COMPLETE_SECONDS, share * left))

    @property
    def longest_restore(self) -> float:
        """Wall seconds of the longest schedule LP measured so far (0 before any)."""
        return max(self.restores, default=0.0)

    def restore_seconds(self) -> float:
        """Wall seconds to keep for loading a schedule (its LP with every integer fixed, the bounds
        set through Pyomo included): ``RESTORE_MARGIN`` times the longest measured so far, at least
        ``RESTORE_SECONDS``."""
        return max(RESTORE_SECONDS, RESTORE_MARGIN * self.longest_restore)

    @contextmanager
    def restore(self) -> Iterator[None]:
        """Measure a schedule LP (its wall time joins ``restores``, even when it fails)."""
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.restores.append(time.perf_counter() - t0)

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Measure a phase: its wall seconds are added to ``spent[name]``."""
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.spent[name] = self.spent.get(name, 0.0) + time.perf_counter() - t0

    def seconds(self, *names: str) -> float:
        """What the named phases took together."""
        return sum(self.spent.get(name, 0.0) for name in names)
