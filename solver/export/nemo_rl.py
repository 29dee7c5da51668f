"""NeMo RL: the overrides of ``examples/configs/grpo_math_1B.yaml`` (RL), ``examples/configs/distillation_math.yaml``
(on-policy distillation) and ``examples/configs/sft.yaml`` (SFT) that the plan decides.

Keys (NVIDIA-NeMo/RL, those files and docs/about/algorithms/on-policy-distillation.md): ``grpo.num_prompts_per_step``,
``grpo.num_generations_per_prompt``, ``grpo.max_num_steps``; ``distillation.num_prompts_per_step``,
``distillation.num_generations_per_prompt``, ``distillation.max_num_steps``, ``teacher.precision``;
``sft.max_num_steps``, ``policy.train_global_batch_size``; ``policy.max_total_sequence_length``,
``policy.dtensor_cfg.cpu_offload``, ``cluster.gpus_per_node``, ``cluster.num_nodes``,
``checkpointing.save_period`` (steps). LoRA is not a key of these configs: a LoRA plan is listed.
"""

from __future__ import annotations

import math

from planopt.export.common import Rendered, common_notes, phase_schedule

NAME = "nemo-rl"
# planopt precision -> NeMo RL's precision string (policy.precision of grpo_math_1B.yaml: "bfloat16")
PRECISIONS = {"bf16": "bfloat16"}


def render(job, stage) -> Rendered:
    """NeMo RL's config fields for one stage."""
    notes = common_notes(stage, NAME)
    if stage.lora_rank is not None:
        notes.append(f"stage {stage.number}: LoRA rank {stage.lora_rank}; these NeMo RL configs train full weights, "
                     "so set the adapter in the policy's backend")
    cluster = {"gpus_per_node": stage.gpus_on_each_node, "num_nodes": stage.num_nodes}
    checkpointing = {"save_period": stage.save_every_steps}
    if stage.method == "sft":
        policy = {"train_global_batch_size": stage.prompts_per_step,
                  "max_total_sequence_length": math.ceil(job.sft_example_tokens),
                  "dtensor_cfg": {"cpu_offload": stage.cpu_offload}}
        return Rendered({"sft": {"max_num_steps": stage.steps}, "policy": policy, "cluster": cluster,
                         "checkpointing": checkpointing}, notes)
    section = "grpo" if stage.method == "rl" else "distillation"
    n, schedule = phase_schedule(stage, NAME, f"{section}.num_generations_per_prompt")
    policy = {"max_total_sequence_length": math.ceil(job.prompt_tokens + job.max_response_tokens),
              "dtensor_cfg": {"cpu_offload": stage.cpu_offload}}
    notes.append(f"stage {stage.number}: policy.max_total_sequence_length is the mean prompt (task.prompt_tokens) plus the "
                 "longest response; the instance holds no longest prompt: add your prompts' spread")
    content = {section: {"num_prompts_per_step": stage.prompts_per_step, "num_generations_per_prompt": n,
                         "max_num_steps": stage.steps},
               "policy": policy, "cluster": cluster, "checkpointing": checkpointing}
    if stage.method == "opd":
        precision = PRECISIONS.get(stage.teacher_precision)
        if precision is None:
            notes.append(f"stage {stage.number}: teacher precision {stage.teacher_precision}; the teacher's config here "
                         "has no such precision: quantise the teacher's weights before the run")
        else:
            content["teacher"] = {"precision": precision}
    return Rendered(content, schedule + notes)
