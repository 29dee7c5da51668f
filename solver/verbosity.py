"""How much the command line says besides its result: ``-q/--quiet``, normal, ``-v/--verbose``.

- quiet: no progress bars and no notes on stderr; errors are still printed (one line).
- verbose: the solver's own log and the time of each stage, on stderr.

stdout only ever holds the result, so ``--json`` stays one JSON object at every level.
One process-wide setting, set by the CLI's root options for each invocation;
the library's default is normal (no solver log).
"""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from typing import Iterator

QUIET, NORMAL, VERBOSE = -1, 0, 1
_level = NORMAL


def set_level(level: int) -> None:
    """Set the process-wide verbosity (``QUIET``, ``NORMAL`` or ``VERBOSE``)."""
    global _level
    _level = level


def quiet() -> bool:
    """Whether the level is quiet (no progress bars, no notes)."""
    return _level <= QUIET


def verbose() -> bool:
    """Whether the level is verbose (the solver's log and each stage's time)."""
    return _level >= VERBOSE


def is_terminal(stream) -> bool:
    """Whether ``stream`` is a terminal (False for pipes, files, test captures and closed streams)."""
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False


def solver_log_streams() -> list:
    """Where a solver's log goes: stderr when verbose, nowhere otherwise (never stdout)."""
    return [sys.stderr] if verbose() else []


def note(message: str) -> None:
    """A line on stderr when verbose."""
    if verbose():
        print(f"planopt: {message}", file=sys.stderr, flush=True)


@contextmanager
def timed(stage: str) -> Iterator[None]:
    """Note how long ``stage`` took, when verbose."""
    start = time.perf_counter()
    try:
        yield
    finally:
        note(f"{stage}: {time.perf_counter() - start:.3f} s")
