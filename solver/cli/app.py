"""The ``planopt`` typer app: the root options, and every command group collected in one place.

Command modules define their commands on a module-level ``commands = typer.Typer()``
and never import this module; this module imports them and merges their commands
(``add_typer`` without a name), so the import graph has no circle:
``app -> solve, check, frontier, ... -> options, guard, output``.

Exit codes (``EXIT_CODES``, the epilog of ``planopt --help``): 0 optimal (or valid), 1 internal error,
2 invalid input, 3 infeasible (``evaluate``: the plan breaks a limit), 4 time limit (the incumbent and
its gap are printed), 130 interrupted.
"""

from __future__ import annotations

import gc
import sys

import typer

from planopt.cli import calibrate, catalog, check, export, fit, frontier, init, portfolio, replan, serve, solve, track, uncertainty
from planopt.cli.output import emit_json

HELP = "Exact planner for LLM post-training: SFT, RL or on-policy distillation, on which GPUs, for least cost."
EXIT_CODES = ("Exit codes: 0 optimal (or valid), 1 internal error, 2 invalid input, 3 infeasible (evaluate: the plan "
              "breaks a limit or does not fit in memory), 4 time limit (the incumbent and its gap are printed), "
              "130 interrupted.")

app = typer.Typer(add_completion=True, no_args_is_help=True, help=HELP, epilog=EXIT_CODES)


def _print_version(value: bool) -> None:
    if value:
        from planopt import __version__
        typer.echo(f"planopt {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(version: bool = typer.Option(False, "--version", "-V", callback=_print_version, is_eager=True,
                                       help="print planopt's version and exit"),
          verbose: bool = typer.Option(False, "--verbose", "-v", help="the solver's log and each stage's time on stderr"),
          quiet: bool = typer.Option(False, "--quiet", "-q", help="nothing on stderr but errors (no progress bars)")) -> None:
    """Exact planner for LLM post-training: SFT, RL or on-policy distillation, on which GPUs, for least cost."""
    from planopt import verbosity
    if verbose and quiet:
        raise typer.BadParameter("choose one of -v/--verbose and -q/--quiet")
    verbosity.set_level(verbosity.VERBOSE if verbose else verbosity.QUIET if quiet else verbosity.NORMAL)


# the order here is the order of `planopt --help`
for group in (init, solve, check, frontier, calibrate, fit, track, replan, uncertainty, serve):
    app.add_typer(group.commands)
app.add_typer(catalog.commands, name="catalog")
app.add_typer(export.commands)
app.add_typer(portfolio.generate_app, name="generate")


ROOT_FLAGS = ("-v", "--verbose", "-q", "--quiet", "-V", "--version")


def main() -> None:
    """The console script ``planopt``.

    Every failure before a command runs (a bad flag, a bad value, a missing argument) is one line
    ``error: ...`` and exit 2, under ``--json`` also one JSON error object on stdout; Ctrl-C is one
    line ``interrupted`` and exit 130 (``interrupt.py``)."""
    from planopt.cli import clock
    clock.start()   # a portfolio's --time-limit counts from here (clock.py)
    # A name from the user may hold a lone surrogate (JSON's "\ud800"); print it escaped, not crash.
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    argv = hoist_root_flags(sys.argv[1:])
    json_out = "--json" in argv
    from planopt.cli import interrupt
    from planopt.verbosity import timed
    interrupt.install(json_out)
    try:
        command = next((a for a in argv if not a.startswith("-")), "")
        with timed(f"planopt {command} in all"):  # the whole command's time, under -v
            code = app(args=argv, prog_name="planopt", standalone_mode=False)
    except (typer.Abort, KeyboardInterrupt):
        interrupt.stop(json_out)
    except typer.TyperException as exc:  # click's usage errors, as typer vendors them
        _usage_failure(exc, json_out)
    finally:
        clock.stop()
        interrupt.hold_if_stopping()
        interrupt.uninstall()
    # The interpreter's last garbage collection would walk every object left (a 40-job portfolio's
    # Pyomo model: ~900,000 in cycles, 0.4-0.7 s after the answer is printed). Frozen objects are
    # left to the operating system; atexit handlers (Dask's clean-up) still run.
    gc.freeze()
    sys.exit(code if isinstance(code, int) else 0)


def hoist_root_flags(argv: list[str]) -> list[str]:
    """``planopt solve x.json -v`` as ``planopt -v solve x.json``: -v/-q (and -V/--version) are root options,
    typed anywhere."""
    end = argv.index("--") if "--" in argv else len(argv)
    flags = [a for a in argv[:end] if a in ROOT_FLAGS]
    return flags + [a for a in argv[:end] if a not in ROOT_FLAGS] + argv[end:]


def _usage_failure(exc, json_out: bool) -> None:
    """One line for a usage error (no usage box), the user's long strings shortened."""
    from planopt.messages import shorten_words
    if exc.__class__.__name__ == "NoArgsIsHelpError":  # `planopt` alone: typer has printed the help, as asked
        sys.exit(0)
    message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
    message = shorten_words(" ".join(message.replace("Value error, ", "").split()))
    typer.echo(f"error: {message}", err=True)
    if json_out:
        emit_json({"status": "error", "error": message})
    sys.exit(getattr(exc, "exit_code", 2) or 2)
