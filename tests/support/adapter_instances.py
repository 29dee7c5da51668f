"""Random jobs where the adapter and the new cost lines matter (issue 12, items 2 and 8).

The job is ``random_instances.random_job_dict``'s (SMALL grid), then:

- LoRA is offered (with or without full weights) at one to three ranks;
- half of the jobs get memory-tight hardware (small-HBM GPUs at small counts, an
  8B-class student), where full weights' optimiser state does not fit and an
  adapter does;
- validation runs, egress across a region and log ingest are drawn too;
- limits come from the job's own plans (``random_limits``), and in a third of the
  jobs the forgetting tolerance sits below every full-weight plan's forgetting,
  so that only an adapter that forgets less can meet it.
"""

from __future__ import annotations

import random

from planopt.instance import parse_instance
from planopt.oracles.by_plan import all_plans

from tests.support.random_instances import OFF_LIMIT, random_job_dict, random_limits

RANKS = (1, 8, 16, 64, 256)
TIGHT_GPUS = ("L4", "L40S", "A100-40GB")
TIGHT_STUDENTS = ("Qwen3-4B", "Qwen3-8B", "Llama-3.1-8B")


def adapter_job_dict(seed: int) -> dict:
    rng = random.Random(120_000 + seed)
    inst = random_job_dict(rng, f"adapter-{seed}")
    inst["training"]["adapter_options"] = rng.choice([["full", "lora"], ["full", "lora"], ["lora"]])
    inst["training"]["lora_rank_options"] = sorted(rng.sample(RANKS, rng.randint(1, 3)))
    if rng.random() < 0.5:
        inst["student"] = {"preset": rng.choice(TIGHT_STUDENTS)}
        inst["hardware"] = {"gpus": [{"name": g, "counts": sorted(rng.sample([1, 2, 4, 8], rng.randint(1, 3)))}
                                     for g in rng.sample(TIGHT_GPUS, rng.randint(1, 2))]}
    inst["evaluation"] = {"every_steps": rng.choice([None, 5, 10, 50]), "prompts": rng.choice([64, 256, 1024])}
    inst["network"] = {"crosses_region": sorted(rng.sample(["final_weights", "trajectory_logs", "milestones"],
                                                           rng.randint(0, 3)))}
    inst["storage"]["log_ingest_usd_per_gb"] = rng.choice([0.0, 0.5, 5.0])
    return inst


def adapter_instance_dict(seed: int, edit=None) -> dict:
    """An adapter job with limits drawn from its own plans' metrics (``edit(job)`` first changes the job in place)."""
    inst = adapter_job_dict(seed)
    if edit is not None:
        edit(inst)
    rng = random.Random(140_000 + seed)
    plans = [p for p in all_plans(parse_instance(inst)) if p.metrics.fits_memory]
    values = {key: [getattr(p.metrics, key) for p in plans] for key in ("cost_usd", "wall_hours", "forgetting_points", "quality")}
    inst["constraints"] = random_limits(rng, values)
    full = [p.metrics.forgetting_points for p in plans if p.plan.adapter == "full"]
    lora = [p.metrics.forgetting_points for p in plans if p.plan.adapter == "lora"]
    if full and lora and min(lora) < min(full) and rng.random() < 0.33:
        inst["constraints"]["max_forgetting_points"] = (min(lora) + min(full)) / 2.0 * (1 + OFF_LIMIT)
    return inst
