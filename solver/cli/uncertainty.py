"""``planopt uncertainty FILE [--json]``: the uncertain parameters of an instance.

One row per parameter: its point value (what a deterministic solve uses),
its P10/P50/P90 under the uncertainty model, the group it is drawn with, and
the source of its spread. The names are what an instance's ``uncertainty``
section and a pilot fit use.
"""

from __future__ import annotations

from pathlib import Path

import typer

from planopt.cli.guard import guarded
from planopt.cli.output import emit_json

commands = typer.Typer()


@commands.command()
@guarded
def uncertainty(file: Path = typer.Argument(..., help="instance JSON"),
                json_out: bool = typer.Option(False, "--json", help="print one JSON object instead of a table")):
    """List the instance's uncertain parameters: point value, P10-P90 and the source of each spread."""
    from planopt.models.uncertainty.model import parameters
    from planopt.instance import load_instance
    from planopt.report.text import table
    params = parameters(load_instance(file))
    if json_out:
        emit_json({"parameters": [p.to_dict() for p in params]})
        return
    rows = [(p.name, f"{p.point:.4g}", f"{p.quantile(0.1):.4g}", f"{p.quantile(0.5):.4g}", f"{p.quantile(0.9):.4g}",
             p.group, p.source) for p in params]
    typer.echo(table(rows, header=("parameter", "point", "P10", "P50", "P90", "drawn with", "source of the spread")))
