"""verl: the overrides of ``verl/trainer/config/ppo_trainer.yaml`` (RL) and ``verl/trainer/config/sft_trainer.yaml``
(SFT, ``fsdp_sft_trainer``) that the plan decides.

Keys (verl docs/examples/config.rst, "ppo_trainer.yaml for RL FSDP Backend", and the two YAML files):
``data.train_batch_size`` (prompts per step), ``data.max_response_length``, ``actor_rollout_ref.rollout.n``
(samples per prompt), ``actor_rollout_ref.model.lora_rank`` (0: full fine-tuning),
``actor_rollout_ref.actor.fsdp_config.param_offload`` / ``optimizer_offload``, ``trainer.n_gpus_per_node``,
``trainer.nnodes``, ``trainer.save_freq`` (steps), ``trainer.total_training_steps``, ``algorithm.adv_estimator: grpo``
(the cost model prices no critic: generation, reference log-probs and the policy update, which is GRPO's step) and
``actor_rollout_ref.actor.use_kl_loss`` (the instance's ``training.reference_logprobs``); for SFT ``data.train_batch_size``,
``data.max_length``, ``model.lora_rank``, ``trainer.total_training_steps``, ``trainer.save_freq``,
``trainer.n_gpus_per_node``, ``trainer.nnodes``. verl's trainer has no on-policy distillation from a teacher:
an OPD stage is refused.
"""

from __future__ import annotations

import math

from planopt.export.common import Rendered, common_notes, phase_schedule, refuse

NAME = "verl"
CRITIC_FREE_ESTIMATOR = "grpo"   # verl's algorithm.adv_estimator for a group baseline and no critic


def render(job, stage) -> Rendered:
    """verl's config fields for one stage."""
    if stage.method == "opd":
        refuse(NAME, f"stage {stage.number} is on-policy distillation, which verl's PPO and SFT trainers do not run; "
                     "export it --to nemo-rl or --to trl")
    trainer = {"n_gpus_per_node": stage.gpus_on_each_node, "nnodes": stage.num_nodes,
               "total_training_steps": stage.steps, "save_freq": stage.save_every_steps}
    notes = common_notes(stage, NAME)
    if stage.method == "sft":
        content = {"data": {"train_batch_size": stage.prompts_per_step, "max_length": math.ceil(job.sft_example_tokens)},
                   "model": {"lora_rank": stage.lora_rank or 0}, "trainer": trainer}
        return Rendered(content, notes)
    n, schedule = phase_schedule(stage, NAME, "actor_rollout_ref.rollout.n")
    offload = {"param_offload": stage.cpu_offload, "optimizer_offload": stage.cpu_offload}
    content = {"data": {"train_batch_size": stage.prompts_per_step, "max_response_length": math.ceil(job.max_response_tokens)},
               "algorithm": {"adv_estimator": CRITIC_FREE_ESTIMATOR},
               "actor_rollout_ref": {"model": {"lora_rank": stage.lora_rank or 0},
                                     "actor": {"use_kl_loss": job.reference_logprobs, "fsdp_config": offload},
                                     "rollout": {"n": n}},
               "trainer": trainer}
    return Rendered(content, schedule + notes)
