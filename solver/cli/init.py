"""``planopt init``: write a complete, valid job from a few flags (``planopt.job.template``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from planopt.cli.files import OutputFiles, write_text
from planopt.cli.guard import guarded
from planopt.cli.options import JSON
from planopt.cli.output import emit_json

commands = typer.Typer()


@commands.command()
@guarded
def init(out: Path = typer.Option(Path("job.json"), "--out", help="the job file to write (.json)"),
         student: Optional[str] = typer.Option(None, "--student", help="a catalog preset (`planopt catalog --models`)"),
         hf_config: Optional[Path] = typer.Option(None, "--hf-config", help="a Hugging Face config.json of the student"),
         task_score_baseline: Optional[float] = typer.Option(None, "--task-score-baseline", help="the student's task score before training"),
         target: Optional[float] = typer.Option(None, "--target", help="the quality floor: the task score the plan must reach"),
         methods: str = typer.Option("rl", "--methods", help="allowed methods, comma-separated: sft, rl, opd"),
         gpus: str = typer.Option("H100-SXM", "--gpus", help="catalog GPUs, comma-separated, each with its own counts "
                                  "after colons if you like: H100-SXM,B200:8:16 (`planopt catalog --gpus`)"),
         gpu_counts: str = typer.Option("8,16,32,64", "--gpu-counts", help="GPU counts of every GPU without its own"),
         budget_usd: Optional[float] = typer.Option(None, "--budget-usd", help="total budget, USD"),
         deadline_hours: Optional[float] = typer.Option(None, "--deadline-hours", help="wall-clock deadline, hours"),
         max_forgetting: Optional[float] = typer.Option(None, "--max-forgetting", help="forgetting tolerance, points"),
         teacher: Optional[str] = typer.Option(None, "--teacher", help="OPD's teacher: a preset or a config.json"),
         teacher_score: Optional[float] = typer.Option(None, "--teacher-score", help="the teacher's task score"),
         force: bool = typer.Option(False, "--force", help="overwrite --out if it exists"),
         json_out: bool = JSON):
    """Write a complete, valid job from a few flags; every other value sourced, and a list of what to edit."""
    from planopt.errors import InputError
    from planopt.job.template import build_template
    from planopt.messages import shorten
    if out.exists() and not out.is_dir() and not force:
        raise InputError(f"--out: {shorten(str(out))} exists; pass --force to overwrite it")
    with OutputFiles() as files:   # checked, then written whole under a temporary name and renamed
        path = files.check("--out", out, (".json",))
        template = build_template(student=student, hf_config=hf_config, task_score_baseline=task_score_baseline,
                                  target=target, methods=methods, gpus=gpus, gpu_counts=gpu_counts,
                                  budget_usd=budget_usd, deadline_hours=deadline_hours, max_forgetting=max_forgetting,
                                  teacher=teacher, teacher_score=teacher_score, name=out.stem, source=str(out))
        files.write(path, lambda p: write_text(p, json.dumps(template.data, indent=2) + "\n"))
    if json_out:
        emit_json({"ok": True, "path": str(out), **template.to_dict()})
        return
    lines = [f"wrote {out}: a valid job", "filled in:"]
    width = max(len(f) for f, _, _ in template.filled)
    lines += [f"  {f:<{width}}  {v}  [{s}]" for f, v, s in template.filled]
    lines.append("edit these (template values, not your job's):")
    width = max(len(f) for f, _ in template.edit)
    lines += [f"  {f:<{width}}  {w}" for f, w in template.edit]
    lines.append(f"next: planopt validate {out} && planopt solve {out}")
    typer.echo("\n".join(lines))
