"""Plans to export, built from an instance's own options (no solve: each is checked by ``Evaluator.check_plan``)
and written in the shape `planopt solve --json` prints (its ``version``, ``status``, ``plan`` and ``metrics``)."""

from __future__ import annotations

import json

from planopt.instance import load_instance
from planopt.models.cost.evaluator import Evaluator
from planopt.models.schema.plan import Plan

from tests.support.common import INSTANCES


def stage_dict(inst, method: str, schedule=None, lora_rank=None, gpu_index=0, count=None) -> dict:
    """One stage of ``method`` on the instance's GPU entry ``gpu_index`` at ``count`` (default its largest)."""
    options = inst.training.methods[method]
    gpu = inst.hardware.gpus[gpu_index]
    phases = inst.training.phases
    samples = [] if method == "sft" else list(schedule or [max(inst.training.samples_per_prompt_options)] * phases)
    return {"method": method, "steps": options.steps_options[0], "samples_per_prompt": samples,
            "teacher_precision": inst.teacher.precision_options[0] if method == "opd" else None,
            "external_data_share": inst.sft_data.external_data_share_options[0] if method == "sft" else None,
            "max_epochs": inst.sft_data.max_epochs_options[0] if method == "sft" else None,
            "adapter": "full" if lora_rank is None else "lora", "lora_rank": lora_rank, "cpu_offload": False,
            "gpu": gpu.key, "gpu_count": count or max(gpu.counts), "rollout": None, "staleness_steps": 0}


def write_plan(tmp_path, instance: str, stages: list[dict], name: str = "plan.json"):
    """The plan file and the instance path; the plan is checked against the instance first."""
    inst_path = INSTANCES / instance
    inst = load_instance(inst_path)
    plan = {"student": inst.student_name, "stages": stages,
            "checkpoint_interval_minutes": inst.checkpointing.interval_minutes_options[0], "retention": None}
    metrics = Evaluator(inst).evaluate(Plan.from_dict(plan))
    path = tmp_path / name
    path.write_text(json.dumps({"version": "2.1", "status": "optimal", "objective": "cost", "plan": plan,
                                "metrics": {"cost_usd": metrics.cost_usd, "wall_hours": metrics.wall_hours}}))
    return path, inst_path, plan


def instance(name: str):
    """A shipped instance, loaded."""
    return load_instance(INSTANCES / name)
