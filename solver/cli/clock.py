"""When the command began: the instant a whole-command time limit counts from.

``main`` starts it before any command module runs and stops it when the command has ended
(a process that goes on, such as a test's, must not count a later command from it), so
``planopt solve portfolio.json --time-limit S`` bounds what the user waits for from the moment
planopt runs its first line (the interpreter's own start-up, ~0.1 s, comes before). Without
``main`` (a test's ``CliRunner``, the Python API) nothing has started it and callers count from
their own start."""

from __future__ import annotations

import time

_started_at: float | None = None


def start() -> None:
    """Mark now as the instant the command began (``main`` calls it first)."""
    global _started_at
    _started_at = time.perf_counter()


def stop() -> None:
    """Forget the command's start, so that a later command in the same process does not count from it."""
    global _started_at
    _started_at = None


def started_at() -> float | None:
    """The ``time.perf_counter`` instant ``main`` began, or None outside ``main``."""
    return _started_at
