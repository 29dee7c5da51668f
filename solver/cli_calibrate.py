"""CLI commands for the calibrate feature (registered on `planopt.cli.app`).

``planopt calibrate DIR [--json]``: exit 0 when every figure is within its
tolerance, 1 when any is not or cannot be predicted (its row carries ``error``),
2 when a case cannot be read.
"""

from __future__ import annotations

from pathlib import Path

import typer

from .cli import app, emit_json, guarded


@app.command()
@guarded
def calibrate(directory: Path = typer.Argument(..., help="folder of calibration cases (*.json)"),
              json_out: bool = typer.Option(False, "--json", help="print one JSON array instead of a table")):
    """Predict published runs with the evaluator and compare (exit 0 all pass, 1 any fails, 2 unreadable case)."""
    from .calibrate import calibrate_dir
    from .report import table
    rows = calibrate_dir(directory)
    if json_out:
        emit_json([r.to_dict() for r in rows])
    else:
        body = [(r.id, r.figure, _num(r.predicted), _num(r.published), _num(r.ratio, 3) if r.ratio is not None else "-",
                 f"{r.tolerance:g}", "pass" if r.passed else "FAIL") for r in rows]
        typer.echo(table(body, header=("id", "figure", "predicted", "published", "ratio", "tolerance", "pass")))
        for r in rows:
            if r.error is not None:
                typer.echo(f"{r.id} {r.figure}: not predicted: {r.error}")
        failed = sum(not r.passed for r in rows)
        typer.echo(f"\n{len(rows) - failed} of {len(rows)} figures within tolerance")
    raise typer.Exit(0 if all(r.passed for r in rows) else 1)


def _num(x: float | None, digits: int = 4) -> str:
    if x is None:
        return "-"
    return f"{x:.{digits}g}" if abs(x) < 1e6 else f"{x:.{digits}e}"
