"""Ctrl-C stops the whole command at once: one line ``interrupted``, exit 130, no output file half-written.

Python turns SIGINT into KeyboardInterrupt only between bytecodes of the main
thread, which a long HiGHS solve (C++, run from the main thread) delays, and
highspy catches it to cancel just that solve, so a sweep went on to the next one.
Here the signal is blocked in the main thread (and so in every thread it starts,
HiGHS's included) and received by one waiting thread (``signal.sigwait``), which
runs while the main thread is inside the solver: it removes the staging files of
``files.OutputFiles`` (destinations are only ever replaced whole, by a rename),
stops child processes (a local Dask cluster's workers), prints ``interrupted``
(and, under ``--json`` when nothing was printed yet, the JSON error object) and
ends the process with ``os._exit(130)`` (128 + SIGINT, the shell's convention).
It writes to copies of the original stdout and stderr descriptors, taken at install:
while a solver runs, Pyomo has descriptor 1 redirected to capture the solver's log.
"""

from __future__ import annotations

import os
import signal
import sys
import threading

EXIT_INTERRUPTED = 128 + signal.SIGINT

_waiter: threading.Thread | None = None
_streams: tuple[int, int] | None = None   # duplicates of the original stdout and stderr descriptors
_json_out = False                         # whether the command running now prints JSON
# Set as soon as a stop begins. The main thread goes on running while the waiting thread
# cleans up; left alone it could fail on a staging file just removed, print its own error
# and exit 1 (or 0) before the waiting thread's exit 130. Every way out of the main
# thread (an error, a JSON answer, the end of the command) waits here instead.
_stopping = threading.Event()
# The command's one JSON answer and a stop's JSON error object exclude each other: whoever
# takes this lock first prints, and a stop waits for an answer being printed to end. Every
# answer is printed through ``print_answer`` (``output.emit_json``), so ``_stdout_claimed``
# says whether this process printed one.
_stdout_lock = threading.Lock()
_stdout_claimed = False


def install(json_out: bool) -> bool:
    """Route SIGINT to the waiting thread; False (nothing done) off the main thread or without POSIX signals."""
    global _waiter, _streams, _json_out
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "pthread_sigmask"):
        return False
    if _streams is None:
        try:
            _streams = (os.dup(sys.stdout.fileno()), os.dup(sys.stderr.fileno()))
        except (AttributeError, OSError, ValueError):  # streams without descriptors (a test's capture)
            return False
    _json_out = json_out
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    if _waiter is None:  # one waiting thread per process, whatever runs in it next
        _waiter = threading.Thread(target=_wait, name="planopt-interrupt", daemon=True)
        _waiter.start()
    return True


def uninstall() -> None:
    """Let SIGINT reach the main thread again (the command is over; a caller such as a test goes on)."""
    if threading.current_thread() is threading.main_thread() and hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def hold_if_stopping() -> None:
    """In the main thread while a stop is under way: wait for the process to end with 130
    (``stop`` ends it with ``os._exit``), rather than print or exit on our own."""
    if _stopping.is_set() and threading.current_thread() is threading.main_thread():
        threading.Event().wait()


def print_answer(write) -> None:
    """Run ``write`` (print the command's JSON answer) unless a stop has begun; then wait for the stop."""
    global _stdout_claimed
    with _stdout_lock:
        if not _stopping.is_set():
            _stdout_claimed = True
            write()
            return
    hold_if_stopping()


def _wait() -> None:
    signal.sigwait({signal.SIGINT})
    stop(_json_out)


def stop(json_out: bool) -> None:
    """Clean up and end the process now (see the module's doc)."""
    import json

    from planopt.cli import files
    with _stdout_lock:  # an answer being printed is printed whole, and then no error object follows
        _stopping.set()
        answered = _stdout_claimed
    out, err = _streams if _streams is not None else (1, 2)
    if _streams is not None:  # what the main thread prints from now on (a -v timing, a table) goes nowhere
        devnull = os.open(os.devnull, os.O_WRONLY)
        for fd in (1, 2):
            try:
                os.dup2(devnull, fd)
            except OSError:
                pass
    try:
        files.discard_all_staged()
        import multiprocessing
        for child in multiprocessing.active_children():
            child.terminate()
        os.write(err, b"interrupted\n")
        if json_out and not answered:
            os.write(out, (json.dumps({"status": "error", "error": "interrupted"}, indent=2) + "\n").encode())
    finally:
        os._exit(EXIT_INTERRUPTED)
