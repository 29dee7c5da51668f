"""Random staged jobs: plans of one to three stages (``training.stage_sequences``), each stage with its
own recipe and hardware, small enough for the staged oracle to list every plan.

The job is ``random_instances.random_job_dict``'s (SMALL grid) with all three methods, a few options
each (so that three-stage spaces stay under ``oracle.MAX_PLANS``), LoRA offered on some, and a random
set of allowed sequences. Limits are drawn from the job's own staged plans, as for the contract tests.
"""

from __future__ import annotations

import itertools
import random

from planopt.instance import parse_instance
from planopt.oracles.by_plan import all_plans, space_size

from tests.support.random_instances import GPUS, SMALL_MODELS, TEACHERS, with_drawn_limits

# Every sequence the order sft, rl, opd allows, with at least two stages.
STAGED_SEQUENCES = [list(c) for n in (2, 3) for c in itertools.combinations(["sft", "rl", "opd"], n)]
MAX_STAGED_PLANS = 60_000


def staged_job_dict(seed: int) -> dict:
    rng = random.Random(110_000 + seed)
    baseline = rng.uniform(10, 60)
    staged = rng.sample(STAGED_SEQUENCES, rng.randint(1, 3))
    singles = [[m] for m in rng.sample(["sft", "rl", "opd"], rng.randint(0, 2))]
    sequences = staged + singles
    methods = sorted({m for seq in sequences for m in seq})
    lora = rng.random() < 0.4
    inst = {
        "name": f"staged-{seed}",
        "student": {"preset": rng.choice(SMALL_MODELS)},
        "task": {"baseline_score": baseline, "general_score_baseline": rng.uniform(50, 90),
                 "prompt_tokens": rng.choice([0, 100, 500]), "response_tokens": rng.choice([300, 1000]),
                 "max_response_tokens": 8192, "prompts_available": rng.choice([500, 50000])},
        "training": {"methods": {m: {"steps_options": sorted(rng.sample([50, 200, 1000], rng.randint(1, 2))),
                                     "prompts_per_step": rng.choice([32, 64])} for m in methods},
                     "phases": rng.randint(1, 2), "samples_per_prompt_options": sorted(rng.sample([2, 4, 8], rng.randint(1, 2))),
                     "stage_sequences": sequences,
                     "adapter_options": ["full", "lora"] if lora else ["full"], "lora_rank_options": [16]},
        # reference prices (one per type): these seeds exercise stages, and their guards were drawn so;
        # catalog offers are held to the oracles in tests/models/cost/test_catalog_offers.py
        "hardware": {"gpus": [{"name": g, "counts": sorted(rng.sample([1, 2, 8], rng.randint(1, 2)))}
                              for g in rng.sample(GPUS, rng.randint(1, 2))], "offers": "reference"},
        "checkpointing": {"interval_minutes_options": sorted(rng.sample([15, 60, 240], rng.randint(1, 2))),
                          "keep_last": rng.randint(1, 3), "milestones_kept": rng.randint(0, 2),
                          "milestone_retention_months": rng.choice([0, 3])},
        "operations": {"fixed_usd": rng.choice([0, 1000]), "usd_per_wall_hour": rng.choice([0, 30])},
        "forgetting_repair_usd_per_point": rng.choice([0, 500]),
        "objective": rng.choice(["cost", "cost", "quality", "time", "forgetting"]),
    }
    if "sft" in methods:
        inst["sft_data"] = {"examples_available": rng.choice([0, 10000]), "usd_per_labeled_example": rng.choice([0.5, 3.0]),
                            "labeled_examples_per_day": rng.choice([2000, 20000]), "example_tokens": rng.choice([800, 2000]),
                            "external_data_share_options": sorted(rng.sample([1.0, 0.5], rng.randint(1, 2)))}
    if "opd" in methods:
        # a teacher below the baseline now and then: an OPD stage may then pull a score down
        inst["teacher"] = {"architecture": {"preset": rng.choice(TEACHERS)}, "score": rng.uniform(baseline - 10, 95),
                           "exists": rng.random() < 0.8, "training_usd": 5000, "training_hours": 24,
                           "precision_options": sorted(rng.sample(["bf16", "fp8"], rng.randint(1, 2)))}
    if "rl" in methods:
        inst["reward"] = {"verifier_usd_per_sample": rng.choice([0.0, 0.001]), "design_usd": rng.choice([0, 3000])}
    return inst


def shrunk_staged_job_dict(seed: int) -> dict:
    """``staged_job_dict(seed)`` with fewer options when its space is over ``MAX_STAGED_PLANS``; no limits
    (cheap: it sizes the space without listing a plan)."""
    inst = staged_job_dict(seed)
    while space_size(parse_instance(inst)) > MAX_STAGED_PLANS:
        gpus = inst["hardware"]["gpus"]
        if len(gpus) > 1:
            gpus.pop()
        elif len(gpus[0]["counts"]) > 1:
            gpus[0]["counts"].pop()
        else:
            for opts in inst["training"]["methods"].values():
                opts["steps_options"] = opts["steps_options"][:1]
            inst["training"]["samples_per_prompt_options"] = inst["training"]["samples_per_prompt_options"][:1]
            inst["training"]["adapter_options"] = ["full"]
            inst["checkpointing"]["interval_minutes_options"] = inst["checkpointing"]["interval_minutes_options"][:1]
            break
    return inst


def staged_instance_dict(seed: int) -> dict:
    """A staged job with limits drawn from its own plans' metrics (fewer options when its space is too large)."""
    inst = shrunk_staged_job_dict(seed)
    rng = random.Random(130_000 + seed)
    return with_drawn_limits(inst, all_plans(parse_instance(inst)), rng)


def staged_split_instance(seed: int, max_plans: int = 3000, needs=("rl", "opd"), rng_base: int = 20_000,
                          training: dict | None = None):
    """A random staged job with one rollout option per instance (each stage then chooses colocated or split),
    limits drawn from its own staged plans; None when the job has none of the methods ``needs`` or lists too
    many plans. ``training`` updates the job's training block (e.g. staleness options)."""
    rng = random.Random(rng_base + seed)
    inst = shrunk_staged_job_dict(seed)
    if not set(needs) & set(inst["training"]["methods"]):
        return None
    inst["hardware"]["gpus"] = inst["hardware"]["gpus"][:1]
    inst["hardware"]["rollout_gpus"] = [{"name": rng.choice(["H100-SXM", "H200", "B200"]), "counts": [rng.choice([8, 16])]}]
    inst["training"].update(training or {})
    # the reference prices these seeds were drawn around (one price per type): what they exercise is split
    # rollout and staleness, and the guards that some optima use them; catalog offers have tests of their own
    inst["hardware"]["offers"] = "reference"
    if seed % 2:
        inst["objective"] = "time"  # where more GPUs generating pays most
    try:
        parsed = parse_instance(inst)
    except ValueError:
        return None
    if space_size(parsed) > max_plans:
        return None
    return parse_instance(with_drawn_limits(inst, all_plans(parsed), rng))
