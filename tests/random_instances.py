"""Random small job instances for the correctness contract (MIP vs enumeration).

Limits are drawn from the enumerated plans' own metrics (a random quantile,
or none), so that about half of the instances have binding limits and some
are infeasible.
"""

from __future__ import annotations

import random

from planopt.models.schema import Instance
from planopt.oracle import all_plans

SMALL_MODELS = ["Qwen3-0.6B", "Qwen3-1.7B", "Qwen3-4B", "Qwen3-8B", "Llama-3.1-8B", "Qwen3-30B-A3B"]
TEACHERS = ["Qwen3-8B", "Qwen3-14B", "Qwen3-32B", "Qwen3-30B-A3B", "Llama-3.1-70B"]
GPUS = ["L4", "L40S", "A100-40GB", "A100-80GB", "H100-SXM", "H100-PCIe", "H200", "B200", "MI300X", "TPU-v5p"]


def random_instance_dict(seed: int) -> dict:
    rng = random.Random(seed)
    methods = rng.sample(["sft", "rl", "opd"], rng.randint(1, 3))
    baseline = rng.uniform(10, 70)
    prompts_per_step = rng.choice([16, 32, 64, 128])
    phases = rng.randint(1, 3)
    training = {"methods": {}, "phases": phases,
                "samples_per_prompt_options": sorted(rng.sample([1, 2, 4, 8, 16], rng.randint(1, 3))),
                "taper_only": rng.random() < 0.7, "activation_recompute": rng.random() < 0.5,
                "reference_logprobs": rng.random() < 0.5}
    for m in methods:
        steps = sorted(rng.sample([20, 50, 100, 200, 400, 1000, 3000], rng.randint(1, 3)))
        training["methods"][m] = {"steps_options": steps, "prompts_per_step": prompts_per_step}
    inst = {
        "name": f"random-{seed}",
        "student": {"preset": rng.choice(SMALL_MODELS)},
        "task": {"baseline_score": baseline, "general_score_baseline": rng.uniform(50, 90),
                 "prompt_tokens": rng.choice([0, 100, 500]), "response_tokens": rng.choice([300, 1000, 3000]),
                 "max_response_tokens": 8192, "prompts_available": 50000},
        "training": training,
        "hardware": {"gpus": [{"name": g, "counts": sorted(rng.sample([1, 2, 4, 8, 16, 32], rng.randint(1, 3)))}
                              for g in rng.sample(GPUS, rng.randint(1, 3))]},
        "checkpointing": {"interval_minutes_options": sorted(rng.sample([5, 15, 30, 60, 120, 480], rng.randint(1, 4))),
                          "keep_last": rng.randint(1, 3), "milestones_kept": rng.randint(0, 2),
                          "milestone_retention_months": rng.choice([0, 3])},
        "reliability": {"failures_per_gpu_hour": rng.choice([2e-5, 1e-3])},
        "operations": {"fixed_usd": rng.choice([0, 1000]), "usd_per_wall_hour": rng.choice([0, 30])},
        "storage": {"trajectory_log_share": rng.choice([0.0, 0.1])},
        "forgetting_repair_usd_per_point": rng.choice([0, 500]),
        "objective": rng.choice(["cost", "cost", "quality", "time", "forgetting"]),
    }
    if "sft" in methods:
        inst["sft_data"] = {"examples_available": rng.choice([0, 10000]), "usd_per_labeled_example": rng.choice([0.5, 3.0]),
                            "labeled_examples_per_day": rng.choice([2000, 20000]), "example_tokens": rng.choice([800, 2000]),
                            "external_data_share_options": sorted(rng.sample([1.0, 0.85, 0.7, 0.5], rng.randint(1, 2)))}
    if "opd" in methods:
        inst["teacher"] = {"architecture": {"preset": rng.choice(TEACHERS)}, "score": rng.uniform(baseline, 95),
                           "exists": rng.random() < 0.8, "training_usd": 5000, "training_hours": 24,
                           "precision_options": sorted(rng.sample(["bf16", "fp8", "int8", "int4"], rng.randint(1, 2)))}
    if "rl" in methods:
        inst["reward"] = {"verifier_usd_per_sample": rng.choice([0.0, 0.001]), "design_usd": rng.choice([0, 3000])}
        if rng.random() < 0.3:
            inst["reward"]["reward_model"] = {"preset": rng.choice(["Qwen3-1.7B", "Qwen3-8B"])}
        inst["environments"] = {"cpu_seconds_per_sample": rng.choice([0, 5]), "sandbox_usd_per_cpu_hour": 0.05,
                                "latency_seconds_per_step": rng.choice([0, 20])}
    return _with_random_limits(rng, inst)


# A limit is placed a relative 1e-6 off the plan value it was drawn from: a plan
# sitting exactly on a limit is decided by the solver's feasibility tolerance,
# not by the model, and this contract is about the model.
OFF_LIMIT = 1e-6


def _with_random_limits(rng: random.Random, inst: dict) -> dict:
    plans = [p.metrics for p in all_plans(Instance.model_validate(inst)) if p.metrics.fits_memory]
    limits = {}
    if plans:
        def quantile(key):
            values = sorted(getattr(p, key) for p in plans)
            return values[min(len(values) - 1, int(rng.random() * len(values)))]
        if rng.random() < 0.5:
            limits["budget_usd"] = quantile("cost_usd") * rng.choice([0.9, 1.0, 1.5]) * (1 + OFF_LIMIT)
        if rng.random() < 0.5:
            limits["deadline_hours"] = quantile("wall_hours") * rng.choice([0.9, 1.0, 1.5]) * (1 + OFF_LIMIT)
        if rng.random() < 0.4:
            limits["max_forgetting_points"] = quantile("forgetting_points") * (1 + OFF_LIMIT)
        if rng.random() < 0.4:
            limits["min_quality"] = quantile("quality") * (1 - OFF_LIMIT)
    inst["constraints"] = limits
    return inst
