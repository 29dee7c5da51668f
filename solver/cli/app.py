"""The ``planopt`` typer app: the root options, and every command group collected in one place.

Command modules define their commands on a module-level ``commands = typer.Typer()``
and never import this module; this module imports them and merges their commands
(``add_typer`` without a name), so the import graph has no circle:
``app -> solve, check, frontier, ... -> options, guard, output``.

Exit codes: 0 optimal (or valid), 1 internal error, 2 invalid input,
3 infeasible, 4 time limit (the incumbent and its gap are printed).
"""

from __future__ import annotations

import sys

import typer

from . import calibrate, catalog, check, fit, frontier, portfolio, serve, solve, uncertainty
from .output import emit_json

HELP = "Exact planner for LLM post-training: SFT, RL or on-policy distillation, on which GPUs, for least cost."

app = typer.Typer(add_completion=True, no_args_is_help=True, help=HELP)


def _print_version(value: bool) -> None:
    if value:
        from planopt import __version__
        typer.echo(f"planopt {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True,
                                       help="print planopt's version and exit")) -> None:
    """Exact planner for LLM post-training: SFT, RL or on-policy distillation, on which GPUs, for least cost."""


# the order here is the order of `planopt --help`
for group in (solve, check, frontier, calibrate, fit, uncertainty, serve, catalog):
    app.add_typer(group.commands)
app.add_typer(portfolio.generate_app, name="generate")


def main() -> None:
    """The console script ``planopt``."""
    # A name from the user may hold a lone surrogate (JSON's "\ud800"); print it escaped, not crash.
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    if "--json" in sys.argv[1:]:
        _main_json()
    app()


def _main_json() -> None:
    """Run under --json: a bad flag or argument (a usage error, raised before any command runs)
    also prints one JSON error object, so stdout always holds exactly one."""
    try:
        code = app(standalone_mode=False)
    except typer.Abort:
        _usage_failure("aborted", 1)
    except typer.TyperException as exc:  # click's usage errors, as typer vendors them
        message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
        _usage_failure(message, getattr(exc, "exit_code", 2))
    sys.exit(code if isinstance(code, int) else 0)


def _usage_failure(message: str, code: int) -> None:
    typer.echo(f"error: {message}", err=True)
    emit_json({"status": "error", "error": message})
    sys.exit(code)
