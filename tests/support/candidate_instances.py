"""Random jobs with a choice of student (``candidate_students``): the SMALL-grid job of
``random_instances.random_job_dict`` plus one or two other base models of other sizes, each with its
own baseline and general scores. Limits are drawn from all students' plans."""

from __future__ import annotations

import random

from planopt.instance import parse_instance
from planopt.oracles.by_plan import all_plans

from tests.support.random_instances import SMALL_MODELS, random_job_dict, with_drawn_limits


def candidate_job_dict(seed: int) -> dict:
    rng = random.Random(150_000 + seed)
    inst = random_job_dict(rng, f"candidates-{seed}")
    own = inst["student"]["preset"]
    others = rng.sample([m for m in SMALL_MODELS if m != own], rng.randint(1, 2))
    base = inst["task"]["baseline_score"]
    inst["candidate_students"] = [{"name": m, "architecture": {"preset": m},
                                   "baseline_score": min(99.0, base + rng.uniform(-10, 15)),
                                   "general_score_baseline": rng.uniform(50, 90)} for m in others]
    inst["hardware"]["offers"] = "reference"  # the prices these seeds' guards were drawn with (catalog offers: test_catalog_offers)
    return inst


def candidate_instance_dict(seed: int) -> dict:
    inst = candidate_job_dict(seed)
    rng = random.Random(170_000 + seed)
    return with_drawn_limits(inst, all_plans(parse_instance(inst)), rng)
