"""``planopt catalog``: the GPU price catalog by provider, region and tier, with sources."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Optional

import typer

from planopt.cli.files import OutputFiles
from planopt.cli.guard import guarded
from planopt.cli.options import JSON
from planopt.cli.output import emit_json

commands = typer.Typer()


@commands.command()
@guarded
def catalog(json_out: bool = JSON,
            provider: Optional[str] = typer.Option(None, "--provider", help="only this provider's offers"),
            gpu: Optional[str] = typer.Option(None, "--gpu", help="only this GPU (any catalog name or alias)"),
            out: Optional[Path] = typer.Option(None, "--out", help="also write the rows to a CSV file")):
    """List the GPU prices by provider, region and tier, each with its source and date."""
    from planopt.models.catalog.prices import COLUMNS, select_prices

    from planopt.errors import InputError
    from planopt.report.text import table
    try:
        rows = select_prices(provider, gpu)
    except KeyError as exc:
        raise InputError(f"--{exc.args[0]}: {exc.args[1]}") from None

    def write_rows(path: Path) -> None:
        with path.open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(COLUMNS) + ["provider_kind", "node_gpus", "interconnect"])
            writer.writeheader()
            writer.writerows(r.to_dict() for r in rows)
    with OutputFiles() as files:  # checked, then written whole under a temporary name and renamed
        files.write(files.check("--out", out, (".csv",)), write_rows)
    if json_out:
        from planopt.report.json_results import catalog_json
        emit_json(catalog_json(rows))
        return
    typer.echo(table([(r.provider, r.provider_kind, r.region, r.gpu, r.tier.replace("_", "-"), f"${r.usd_per_gpu_hour:,.3f}",
                       r.node_gpus, r.interconnect, r.as_of) for r in rows],
                     header=("provider", "kind", "region", "GPU", "tier", "$/GPU-h", "node", "interconnect", "as of")))
    typer.echo(f"\n{len(rows)} prices; sources: `planopt catalog --json` or --out FILE.csv")
    if out is not None:
        typer.echo(f"wrote {out}")
