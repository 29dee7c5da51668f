"""CLI commands for the calibrate feature (registered on `planopt.cli.app`).

``planopt calibrate DIR [--json]``: exit 0 when every figure is within its
tolerance, 1 when any is not or cannot be predicted (its row carries ``error``),
among them a case whose fields are bad (an undefined or misspelled field, an
unknown release, a value of the wrong type, a missing figure: its rows carry
``error`` naming the fields, the other cases still run), 2 when a file is not
a JSON object or the folder holds no case. Each row says the trainer it was
priced with (``trainer``) and, under CPU offload, the host link (``host_link``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from planopt.cli.files import TABLE_SUFFIXES, OutputFiles, table_writer
from planopt.cli.guard import guarded
from planopt.cli.output import emit_json
from planopt.cli.progress import progress_bar

commands = typer.Typer()


@commands.command()
@guarded
def calibrate(directory: Path = typer.Argument(..., help="folder of calibration cases (*.json)"),
              json_out: bool = typer.Option(False, "--json", help="print one JSON array instead of a table"),
              intervals: bool = typer.Option(True, "--intervals/--no-intervals",
                                             help="P10-P90 of each prediction under the uncertainty model (rows gain interval)"),
              out: Optional[Path] = typer.Option(None, "--out", help="also write the rows to a .csv or .parquet file")):
    """Predict published runs with the evaluator and compare (exit 0 all pass, 1 any fails or has bad fields, 2 a
    file that is not JSON)."""
    from planopt.uncertainty.calibrate import calibrate_dir
    from planopt.report.text import table
    files = OutputFiles()
    files.check("--out", out, TABLE_SUFFIXES)
    with files:
        with progress_bar("calibration cases", unit="figures predicted") as bar:
            rows = calibrate_dir(directory, progress=bar.update)
        if intervals:
            from planopt.uncertainty.calibration_intervals import with_intervals
            with progress_bar("P10-P90 of each prediction"):
                rows = with_intervals(rows)
        if out is not None:
            files.write(out, table_writer(rows_frame(rows)))
    if json_out:
        from planopt.report.json_results import calibration_json
        emit_json(calibration_json(rows))
    else:
        from planopt.uncertainty.calibration_intervals import interval_cells, interval_footer
        extra = ("P10-P90", "inside") if intervals else ()
        body = [(r.id, r.figure, _num(r.predicted), _num(r.published), _num(r.ratio, 3) if r.ratio is not None else "-",
                 "-" if r.tolerance is None else f"{r.tolerance:g}", "pass" if r.passed else "FAIL", r.trainer or "-")
                + (interval_cells(r, _num) if intervals else ()) for r in rows]
        typer.echo(table(body, header=("id", "figure", "predicted", "published", "ratio", "tolerance", "pass", "trainer") + extra))
        for r in rows:
            if r.error is not None:
                typer.echo(f"{r.id} {r.figure}: {'' if r.error.startswith('not read: ') else 'not predicted: '}{r.error}")
        for case_id, link in dict.fromkeys((r.id, r.host_link) for r in rows if r.host_link is not None):
            typer.echo(f"{case_id}: host link {link}")
        failed = sum(not r.passed for r in rows)
        typer.echo(f"\n{len(rows) - failed} of {len(rows)} figures within tolerance")
        if intervals:
            typer.echo(interval_footer(rows))
    raise typer.Exit(0 if all(r.passed for r in rows) else 1)


def _num(x: float | None, digits: int = 4) -> str:
    if x is None:
        return "-"
    return f"{x:.{digits}g}" if abs(x) < 1e6 else f"{x:.{digits}e}"


def rows_frame(rows):
    """The calibration rows as a table: one row per figure, an interval as its two ends."""
    import pandas as pd
    records = []
    for r in rows:
        record = r.to_dict()
        interval = record.pop("interval", None)
        if interval is not None or "interval" in r.to_dict():
            record["interval_p10"], record["interval_p90"] = interval if interval is not None else (None, None)
        record["tolerance"] = r.tolerance
        records.append(record)
    return pd.DataFrame(records)
