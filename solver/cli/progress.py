"""A progress bar on stderr for the commands that can run for more than a few seconds
(frontiers, sweeps, portfolios, calibration).

The bar is drawn by rich on stderr, never on stdout (which holds the result, and under
``--json`` exactly one JSON object). It appears only when stderr is a terminal, only
after the run has lasted :data:`SHOW_AFTER_SECONDS` (a quick run prints nothing), and
never under ``-q/--quiet``; it disappears when the run ends. rich is imported only
when the bar is about to be drawn.

    with progress_bar("frontier points") as bar:
        front = pareto_frontier(pm, x, y, progress=bar.update)
"""

from __future__ import annotations

import sys
import threading
import time
from contextlib import contextmanager
from typing import Iterator, Optional

from planopt.verbosity import is_terminal

# A run shows its bar once it has lasted this long.
SHOW_AFTER_SECONDS = 2.0


def stderr_is_terminal() -> bool:
    """Whether stderr is a terminal (where progress bars are drawn)."""
    return is_terminal(sys.stderr)


class ProgressBar:
    """A bar for ``label``: ``total`` steps; or, with no total, a count of ``unit`` found so far
    (frontier points), or only the time elapsed (no unit: one long solve)."""

    def __init__(self, label: str, total: Optional[int] = None, enabled: Optional[bool] = None,
                 after: Optional[float] = None, unit: Optional[str] = None):
        from planopt.verbosity import quiet
        self.label, self.total, self.unit = label, total, unit
        self.after = SHOW_AFTER_SECONDS if after is None else after
        self.enabled = (stderr_is_terminal() and not quiet()) if enabled is None else enabled
        self.done = 0
        self.shown = False  # whether the bar has been drawn (tests read it)
        self._bar = self._task = self._timer = None
        self._began = time.monotonic()
        self._lock = threading.Lock()

    def start(self) -> "ProgressBar":
        """Start the clock, and show the bar now (``after`` <= 0) or after ``after`` seconds; returns the bar."""
        self._began = time.monotonic()
        if self.enabled and self.after <= 0:
            self._show()
        elif self.enabled:
            self._timer = threading.Timer(self.after, self._show)
            self._timer.daemon = True
            self._timer.start()
        return self

    def update(self, done: int) -> None:
        """``done`` steps finished so far."""
        with self._lock:
            self.done = done
            if self._bar is not None:
                self._bar.update(self._task, completed=done)

    def _show(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
        counted = ([BarColumn(), MofNCompleteColumn()] if self.total else
                   [TextColumn(f"{{task.completed}} {self.unit}")] if self.unit else [])
        with self._lock:
            if self._bar is not None or not self.enabled:
                return
            self._bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), *counted, TimeElapsedColumn(),
                                 console=Console(stderr=True), transient=True)
            self._bar.start()
            self._task = self._bar.add_task(self.label, total=self.total, completed=self.done)
            # the elapsed time counts from the run's start, not from when the bar appeared (rich's clock is monotonic)
            task = next(t for t in self._bar.tasks if t.id == self._task)
            task.start_time = self._began
            self.shown = True

    def stop(self) -> None:
        """Hide the bar and cancel a pending show; nothing is drawn after this."""
        with self._lock:
            self.enabled = False  # a timer firing now draws nothing
            if self._timer is not None:
                self._timer.cancel()
            if self._bar is not None:
                self._bar.stop()
                self._bar = None


@contextmanager
def progress_bar(label: str, total: Optional[int] = None, enabled: Optional[bool] = None,
                 after: Optional[float] = None, unit: Optional[str] = None) -> Iterator[ProgressBar]:
    """A :class:`ProgressBar`, started on entry and removed on exit (Ctrl-C included)."""
    bar = ProgressBar(label, total, enabled, after, unit).start()
    try:
        yield bar
    finally:
        bar.stop()
