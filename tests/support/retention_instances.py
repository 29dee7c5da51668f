"""Random job instances with a ``retention`` block (issue 12 item 7): the random jobs of
``random_instances`` plus keep_last and tier options, a detection delay that makes some
(keep_last, interval) pairs uncover it, and rollback rates from the sourced one to one
high enough that the read-back fees of the cold tier matter."""

from __future__ import annotations

import math
import random

from planopt.models.catalog import defaults as d
from planopt.instance import parse_instance
from planopt.oracles.by_plan import all_plans

from tests.support.random_instances import random_job_dict, with_drawn_limits


def retention_block(rng: random.Random) -> dict:
    return {"keep_last_options": sorted(rng.sample([1, 2, 3, 5], rng.randint(1, 3))),
            "tiers": rng.choice([["hot"], ["cold"], ["hot", "cold"], ["hot", "cold"]]),
            "rollback_detection_hours": rng.choice([0.0, 0.5, 1.0, 3.0]),
            "rollback_events_per_gpu_hour": rng.choice([d.ROLLBACK_EVENTS_PER_GPU_HOUR, 1e-4]),
            "cold_min_storage_hours": rng.choice([0.0, d.COLD_MIN_STORAGE_HOURS]),
            "milestone_options": rng.choice([[0], [0], [0, 1], [0, 2], [1, 3]]),
            "milestone_every_checkpoints": rng.choice([1, 2, 4])}


def with_a_covering_option(inst: dict) -> dict:
    """Add the least keep_last that covers the detection delay at the longest interval when no option does
    (an instance without one is refused), so that every instance has some plan to offer."""
    block = inst["retention"]
    tau = max(inst["checkpointing"]["interval_minutes_options"]) / 60.0
    need = math.ceil(block["rollback_detection_hours"] / tau - 1e-9) + 1
    if max(block["keep_last_options"]) < need:
        block["keep_last_options"] = sorted(block["keep_last_options"] + [need])
    return inst


def retention_job_dict(seed: int) -> dict:
    """A random job with a retention block and no limits."""
    rng = random.Random(seed)
    inst = random_job_dict(rng, f"retention-{seed}")
    inst["retention"] = retention_block(rng)
    return with_a_covering_option(inst)


def retention_instance_dict(seed: int) -> dict:
    """``retention_job_dict`` with limits drawn from its plans' metrics (the draws go on from the same generator)."""
    rng = random.Random(10_000 + seed)
    inst = retention_job_dict(seed)
    return with_drawn_limits(inst, all_plans(parse_instance(inst)), rng)


def staged_retention_job_dict(seed: int) -> dict:
    """A random staged job (``staged_instances.shrunk_staged_job_dict``) with a retention block of two options."""
    from tests.support.staged_instances import shrunk_staged_job_dict
    rng = random.Random(20_000 + seed)
    inst = shrunk_staged_job_dict(seed)
    block = retention_block(rng)
    wide = rng.choice(["keep_last", "tiers", "milestones"])  # two options in all: one list of two values
    block["keep_last_options"] = sorted(rng.sample([1, 2, 3, 5], 2 if wide == "keep_last" else 1))
    block["tiers"] = ["hot", "cold"] if wide == "tiers" else [rng.choice(["hot", "cold"])]
    block["milestone_options"] = [0, rng.choice([1, 2])] if wide == "milestones" else [0]
    inst["retention"] = block
    return with_a_covering_option(inst)


def staged_retention_instance_dict(seed: int) -> dict:
    from planopt.oracles.by_plan import all_plans
    rng = random.Random(30_000 + seed)
    inst = staged_retention_job_dict(seed)
    return with_drawn_limits(inst, all_plans(parse_instance(inst)), rng)
