"""Export a plan: one file per stage, its not-expressed choices as a comment block at its top.

Names: a one-stage plan is written to ``--out`` as given; a staged plan writes one file per stage beside it,
``STEM.stageN-METHOD.SUFFIX`` (``--out task.yaml``: ``task.stage1-sft.yaml``, ``task.stage2-rl.yaml``), and never
``--out`` itself. Every file is YAML (SkyPilot, verl and NeMo RL configs are YAML; TRL's scripts read a flat YAML
``--config``).
"""

from __future__ import annotations

from pathlib import Path

import yaml

from planopt.export import nemo_rl, skypilot, trl, verl
from planopt.export.common import Rendered, stage_header

TARGETS = {m.NAME: m for m in (skypilot, verl, nemo_rl, trl)}
SUFFIXES = (".yaml", ".yml")
YAML_LINE_CHARS = 1000   # no folding of long strings (PyYAML folds at 80 by default)


def stage_paths(out: Path, job) -> list[Path]:
    """The file of each stage (see the module's doc)."""
    if not job.staged:
        return [out]
    return [out.with_name(f"{out.stem}.stage{s.number}-{s.method}{out.suffix}") for s in job.stages]


def render_all(target: str, job) -> list[Rendered]:
    """Every stage rendered for ``target``; a stage the target cannot run refuses the whole plan (InputError)."""
    module = TARGETS[target]
    return [module.render(job, stage) for stage in job.stages]


def file_text(target: str, job, stage, rendered: Rendered) -> str:
    """A stage's file: a comment header (what it is, what it cannot express), then the YAML."""
    lines = [f"planopt export --to {target}: stage {stage.number} of {len(job.stages)} ({stage.method}, "
             f"{stage.steps} steps on {stage.gpu_count} x {stage.gpu_key}), student {job.student}"]
    lines += rendered.header + stage_header(job, stage)
    if rendered.not_expressed:
        lines.append(f"not expressed in this file ({target} has no field for them):")
        lines += [f"  - {note}" for note in rendered.not_expressed]
    header = "".join(f"# {line}\n" for line in lines)
    return header + yaml.safe_dump(rendered.content, sort_keys=False, default_flow_style=False, width=YAML_LINE_CHARS)
