"""TRL: the fields of ``GRPOConfig`` (RL), ``GKDConfig`` (on-policy distillation) and ``SFTConfig`` (SFT), all
``transformers.TrainingArguments``, plus peft's ``LoraConfig.r``, written as one JSON object per stage.

Keys (huggingface/trl docs: grpo_trainer.md, gkd_trainer.md, sft_trainer.md; transformers TrainingArguments;
trl ModelConfig): ``num_generations``, ``max_completion_length``, ``per_device_train_batch_size``, ``max_steps``,
``save_strategy: "steps"`` with ``save_steps``; ``GKDConfig.lmbda`` (1.0: every sequence is the student's own,
on-policy) and ``max_new_tokens``; ``SFTConfig.max_length``; ``ModelConfig.use_peft`` and ``lora_r`` (peft's
``LoraConfig.r``). The file is the flat YAML that TRL's scripts read with ``--config`` (``TrlParser``). TRL runs on
the GPUs its launch gives it: the node and GPU counts are the ``accelerate launch --num_machines N --num_processes M``
line of the file's header.
"""

from __future__ import annotations

import math

from planopt.export.common import Rendered, common_notes, phase_schedule

NAME = "trl"
LAUNCH_PREFIX = "accelerate launch --num_machines"
ON_POLICY_LAMBDA = 1.0   # GKDConfig.lmbda: the share of student-generated sequences; OPD samples only its own


def _per_device(stage, samples_per_step: int, notes: list[str]) -> int:
    """Per-device batch that makes the plan's samples per step across every GPU (one gradient-accumulation step)."""
    per_device = max(1, samples_per_step // stage.gpu_count)
    if per_device * stage.gpu_count != samples_per_step:
        notes.append(f"stage {stage.number}: {samples_per_step} samples per step do not split evenly over "
                     f"{stage.gpu_count} GPUs; per_device_train_batch_size {per_device} gives "
                     f"{per_device * stage.gpu_count}")
    return per_device


def render(job, stage) -> Rendered:
    """TRL's config fields for one stage."""
    notes = common_notes(stage, NAME)
    fields = {"max_steps": stage.steps, "save_strategy": "steps", "save_steps": stage.save_every_steps}
    if stage.method == "sft":
        fields.update(per_device_train_batch_size=_per_device(stage, stage.prompts_per_step, notes),
                      max_length=math.ceil(job.sft_example_tokens))
        config = "SFTConfig"
    elif stage.method == "rl":
        n, schedule = phase_schedule(stage, NAME, "num_generations")
        notes = schedule + notes
        fields.update(num_generations=n, max_completion_length=math.ceil(job.max_response_tokens),
                      per_device_train_batch_size=_per_device(stage, stage.prompts_per_step * n, notes))
        config = "GRPOConfig"
        if job.reference_logprobs:
            notes.append(f"stage {stage.number}: the plan prices reference log-probs (a KL penalty, "
                         "training.reference_logprobs); set beta above 0, the KL coefficient, which the plan does not choose")
    else:
        n, schedule = phase_schedule(stage, NAME, "samples per prompt")
        notes = schedule + notes
        if n > 1:
            notes.append(f"stage {stage.number}: {n} samples per prompt; GKDConfig draws one completion per prompt, so "
                         f"the batch holds {n} copies of each prompt")
        fields.update(lmbda=ON_POLICY_LAMBDA, max_new_tokens=math.ceil(job.max_response_tokens),
                      per_device_train_batch_size=_per_device(stage, stage.prompts_per_step * n, notes))
        notes.append(f"stage {stage.number}: teacher precision {stage.teacher_precision}; GKDConfig loads the teacher "
                     "through teacher_model_init_kwargs: set its dtype or quantisation there")
        config = "GKDConfig"
    if stage.lora_rank is not None:
        fields.update(use_peft=True, lora_r=stage.lora_rank)
    header = [f"TRL {config} fields (trl's scripts: --config FILE)",
              f"{LAUNCH_PREFIX} {stage.num_nodes} --num_processes {stage.gpu_count}"]
    if stage.cpu_offload:
        notes.append(f"stage {stage.number}: CPU offload of the training state; set it in the DeepSpeed or FSDP config "
                     "that accelerate launches with")
    return Rendered(fields, notes, header)
