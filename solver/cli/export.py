"""``planopt export PLAN.json --to skypilot|verl|nemo-rl|trl --out FILE --instance INSTANCE.json``: a solved plan
as the SkyPilot task or the framework config that runs it (``planopt.export``)."""

from __future__ import annotations

from enum import Enum
from pathlib import Path

import typer

from planopt.cli.files import OutputFiles, write_text
from planopt.cli.guard import guarded
from planopt.cli.options import JSON
from planopt.cli.output import emit_json

commands = typer.Typer()


class Target(str, Enum):
    """The targets ``--to`` accepts."""

    skypilot = "skypilot"
    verl = "verl"
    nemo_rl = "nemo-rl"
    trl = "trl"


@commands.command()
@guarded
def export(plan: Path = typer.Argument(..., help="what `planopt solve INSTANCE --json` printed, saved to a file"),
           to: Target = typer.Option(..., "--to", help="skypilot (a task YAML) | verl | nemo-rl | trl (config fields)"),
           out: Path = typer.Option(..., "--out", help="the file to write (.yaml); a staged plan writes one file per "
                                                       "stage beside it, OUT_STEM.stageN-METHOD.yaml"),
           instance: Path = typer.Option(..., "--instance", help="the instance the plan was solved for (required: the "
                                         "plan JSON holds no batch sizes, lengths, node sizes, provider or pricing tier)"),
           json_out: bool = JSON):
    """Write a solved plan as a SkyPilot task or a verl / NeMo RL / TRL config, one file per stage, and list the
    plan's choices the target cannot express (in each file's header and here)."""
    from planopt.export.plan_file import as_dict, load_job
    from planopt.export.writer import SUFFIXES, file_text, render_all, stage_paths
    from planopt.cli.files import check_output_path
    check_output_path("--out", out, SUFFIXES)
    job = load_job(plan, instance)
    rendered = render_all(to.value, job)
    paths = stage_paths(out, job)
    with OutputFiles() as files:  # every file checked, then all written or none
        for path, stage, r in zip(paths, job.stages, rendered):
            text = file_text(to.value, job, stage, r)
            files.write(files.check("--out", path, SUFFIXES), lambda p, text=text: write_text(p, text))
    notes = [note for r in rendered for note in r.not_expressed]
    if json_out:
        emit_json({"status": "ok", "target": to.value, "files": [str(p) for p in paths],
                   "stages": [as_dict(s) for s in job.stages], "not_expressed": notes})
        return
    for path, stage in zip(paths, job.stages):
        typer.echo(f"wrote {path}: stage {stage.number} ({stage.method}, {stage.steps} steps on "
                   f"{stage.num_nodes} x {stage.gpus_on_each_node} {stage.gpu_key})")
    if notes:
        typer.echo(f"not expressed in {to.value}:")
        for note in notes:
            typer.echo(f"  - {note}")
