"""The CLI's error boundary: input errors are one line and exit 2, anything else exit 1
(but a closed pipe on stdout, which ends the command quietly).

Every command is wrapped in ``guarded``; under ``--json`` stdout then still holds
exactly one JSON object, ``{"status": "error", "error": ...}``.
"""

from __future__ import annotations

import functools
import os

import typer

from planopt.cli.interrupt import hold_if_stopping
from planopt.cli.output import emit_json


def guarded(fn):
    """Turn input errors into one line and exit 2, anything unexpected into exit 1.

    Under ``--json`` (a ``json_out`` argument) stdout also gets one JSON object,
    ``{"status": "error", "error": ...}``, so it always holds exactly one."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        from planopt.errors import InputError
        json_out = bool(kwargs.get("json_out"))
        try:
            return fn(*args, **kwargs)
        except (typer.Exit, typer.Abort, SystemExit):
            raise
        except BrokenPipeError:
            reader_left()
        except InputError as exc:
            hold_if_stopping()
            fail(f"error: {exc}", str(exc), json_out, 2)
        except Exception as exc:  # noqa: BLE001 - the CLI's last line of defence
            hold_if_stopping()  # an error caused by Ctrl-C's clean-up is not the command's answer
            if os.environ.get("PLANOPT_DEBUG"):
                raise
            why = f"{type(exc).__name__}: {exc}"
            fail(f"internal error: {why} (set PLANOPT_DEBUG=1 for a traceback)", f"internal error: {why}", json_out, 1)
    return wrapper


def fail(line: str, error: str, json_out: bool, code: int):
    """Print ``line`` on stderr (and the JSON error object on stdout under --json); exit with ``code``.
    Long words (a 200 kB bad value) are shortened."""
    from planopt.messages import shorten_words
    line, error = shorten_words(line), shorten_words(error)
    typer.echo(line, err=True)
    if json_out:
        emit_json({"status": "error", "error": error})
    raise typer.Exit(code)


def reader_left():
    """stdout's reader stopped reading (``planopt frontier x.json | head``): no error, nothing more to say.
    stdout is pointed at /dev/null so that the interpreter's last flush does not fail again."""
    import sys
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # not a real file (typer's CliRunner): nothing to redirect
        pass
    raise typer.Exit(0)
