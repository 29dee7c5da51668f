"""``planopt catalog``: the GPU price catalog by provider, region and tier, with sources; ``--models`` and ``--gpus``:
the model presets and accelerators an instance may name; ``planopt catalog import FILE``: a team's own prices (a
SkyPilot ``vms.csv`` or a negotiated-rate CSV) as a price file.

``catalog`` is a typer group whose callback is the listing (``invoke_without_command``), so ``planopt catalog
[--provider P] ...`` runs as before and ``import`` is its one subcommand."""

from __future__ import annotations

import csv
import json
import re
from enum import Enum
from pathlib import Path
from typing import Optional

import typer

from planopt.cli.files import OutputFiles, write_text
from planopt.cli.guard import guarded
from planopt.cli.options import JSON
from planopt.cli.output import emit_json

commands = typer.Typer(name="catalog", invoke_without_command=True, no_args_is_help=False,
                       help="List the GPU prices by provider, region and tier (or the presets); `catalog import` reads "
                            "your own prices.")


@commands.callback()
@guarded
def catalog(ctx: typer.Context, json_out: bool = JSON,
            provider: Optional[str] = typer.Option(None, "--provider", help="only this provider's offers"),
            gpu: Optional[str] = typer.Option(None, "--gpu", help="only this GPU (any catalog name or alias)"),
            out: Optional[Path] = typer.Option(None, "--out", help="also write the rows to a CSV file"),
            models: bool = typer.Option(False, "--models", help="list the model presets (`student: {\"preset\": NAME}`) instead of prices"),
            gpus: bool = typer.Option(False, "--gpus", help="list the accelerators (`hardware.gpus[].name`) instead of prices")):
    """List the GPU prices by provider, region and tier, each with its source and date; or, with --models and
    --gpus, the model presets and the accelerators an instance may name."""
    if ctx.invoked_subcommand is not None:
        return
    if models or gpus:
        _presets(models, gpus, json_out, provider, gpu, out)
        return
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


def _presets(models: bool, gpus: bool, json_out: bool, provider, gpu, out) -> None:
    """``planopt catalog --models`` / ``--gpus``: the presets as tables, or one JSON object."""
    from planopt.errors import InputError
    from planopt.models.catalog import load_gpus, load_models
    from planopt.report.json_results import presets_json
    used = [flag for flag, value in (("--provider", provider), ("--gpu", gpu), ("--out", out)) if value is not None]
    if used:
        raise InputError(f"{used[0]}: filters and writes the price list; --models and --gpus list every preset")
    model_specs = list(load_models().values()) if models else None
    gpu_specs = list(load_gpus().values()) if gpus else None
    if json_out:
        emit_json(presets_json(model_specs, gpu_specs))
        return
    from planopt.report.text import table
    parts = []
    if model_specs is not None:
        parts.append("Model presets (student, teacher.architecture: {\"preset\": NAME}; any alias works too)\n" + table(
            [(m.name, f"{m.params_b:g}", f"{m.active_params_b:g}", m.layers, m.hidden, m.heads, m.kv_heads, m.head_dim,
              f"{m.context_tokens:,}", "MoE" if m.moe else "dense", ", ".join(m.aliases)) for m in model_specs],
            header=("name", "params B", "active B", "layers", "hidden", "heads", "kv heads", "head dim", "context",
                    "kind", "aliases")) + f"\n{len(model_specs)} presets; sources: `planopt catalog --models --json`")
    if gpu_specs is not None:
        parts.append("GPUs (hardware.gpus[].name; any alias works too)\n" + table(
            [(g.name, g.vendor, f"{g.bf16_tflops:g}", "-" if g.fp8_tflops is None else f"{g.fp8_tflops:g}", f"{g.hbm_gb:g}",
              f"{g.hbm_tbps:g}", g.gpus_per_node, f"${g.price_on_demand_usd_per_gpu_hour:,.2f}",
              "-" if g.price_spot_usd_per_gpu_hour is None else f"${g.price_spot_usd_per_gpu_hour:,.2f}",
              ", ".join(g.aliases)) for g in gpu_specs],
            header=("name", "vendor", "bf16 TFLOPS", "fp8 TFLOPS", "HBM GB", "HBM TB/s", "per node", "on-demand $/h",
                    "spot $/h", "aliases")) + f"\n{len(gpu_specs)} GPUs; sources: `planopt catalog --gpus --json`")
    typer.echo("\n\n".join(parts))


class ImportFormat(str, Enum):
    """The formats ``catalog import --format`` reads."""

    skypilot = "skypilot"
    rates = "rates"


@commands.command("import")
@guarded
def import_prices(file: Path = typer.Argument(..., help="a SkyPilot catalog vms.csv, or a negotiated-rate CSV"),
                  out: Path = typer.Option(..., "--out", help="the price file to write (.json, in the format of the "
                                                              "shipped price catalog)"),
                  fmt: ImportFormat = typer.Option(ImportFormat.skypilot, "--format",
                                                   help="skypilot (vms.csv: InstanceType, AcceleratorName, "
                                                        "AcceleratorCount, Price, Region[, SpotPrice, AvailabilityZone]) | "
                                                        "rates (provider, region, gpu, tier, usd_per_gpu_hour, node_gpus, "
                                                        "interconnect, as_of, source[, provider_kind])"),
                  provider: Optional[str] = typer.Option(None, "--provider", help="skypilot: the provider the file is "
                                                         "of (the file does not name its cloud)"),
                  provider_kind: Optional[str] = typer.Option(None, "--provider-kind", help="skypilot: hyperscaler | "
                                                              "gpu_cloud | marketplace | capacity_block (default: the "
                                                              "shipped catalog's kind of --provider)"),
                  as_of: Optional[str] = typer.Option(None, "--as-of", help="skypilot: the date the file's prices were "
                                                      "read (the file holds none)"),
                  interconnect: Optional[str] = typer.Option(None, "--interconnect", help="skypilot: how the nodes are "
                                                             "linked (default ethernet: one-node plans only)"),
                  json_out: bool = JSON):
    """Read your own prices into a price file: per-GPU prices, on-demand and spot, one row per provider, region, GPU
    and tier (the lowest), each naming the file and row it came from; accelerators planopt does not know are listed."""
    from planopt.errors import InputError
    from planopt.models.catalog import price_import as pi
    from planopt.models.catalog.prices import inconsistencies, parse_rows
    skypilot_only = {"--provider": provider, "--provider-kind": provider_kind, "--as-of": as_of,
                     "--interconnect": interconnect}
    with OutputFiles() as files:
        path = files.check("--out", out, (".json",))
        if not file.is_file():
            raise InputError(f"{file}: file not found")
        try:
            if fmt is ImportFormat.skypilot:
                for flag in ("--provider", "--as-of"):
                    if skypilot_only[flag] is None:
                        raise InputError(f"{flag}: needed with --format skypilot (a vms.csv names neither its cloud "
                                         "nor its date)")
                if not re.fullmatch(r"\d{4}-\d{2}(-\d{2})?", as_of):
                    raise InputError(f"--as-of: expected a date YYYY-MM-DD (or YYYY-MM), got {as_of!r}")
                kind = pi.provider_kind(provider, provider_kind)
                imported = pi.import_skypilot(file, provider, kind, as_of, interconnect or pi.CAUTIOUS_INTERCONNECT)
            else:
                given = [flag for flag, value in skypilot_only.items() if value is not None]
                if given:
                    raise InputError(f"{given[0]}: only with --format skypilot (a rates CSV has the column)")
                imported = pi.import_rates(file)
            parse_rows(imported.prices)   # the shipped catalog's own checks
        except ValueError as exc:
            raise InputError(str(exc)) from None
        if not imported.prices:
            raise InputError(f"{file}: no row maps to a planopt GPU; nothing to write")
        document = pi.price_file(imported, file.name)
        files.write(path, lambda p: write_text(p, json.dumps(document, indent=1) + "\n"))
    warnings = inconsistencies(parse_rows(imported.prices))
    if json_out:
        emit_json({"status": "ok", "out": str(out), "rows": len(imported.prices), "merged": imported.merged,
                   "skipped_without_accelerator": imported.skipped, "unmapped": imported.unmapped,
                   "inconsistencies": warnings})
        return
    typer.echo(f"wrote {out}: {len(imported.prices)} prices")
    if imported.merged:
        typer.echo(f"kept the lowest price per GPU of each provider, region, GPU and tier: {imported.merged} rows "
                   "(other zones or instance sizes) left out")
    if imported.skipped:
        typer.echo(f"skipped {imported.skipped} rows without an accelerator")
    for row in imported.unmapped:
        typer.echo(f"unmapped: row {row['row']}: {row['accelerator']}: {row['reason']}")
    for line in warnings:
        typer.echo(f"inconsistent: {line}")
