"""Random small OPD jobs whose teacher may score at a different precision in each sampling phase
(``teacher.precision_by_phase``, issue 27 lever 6), limits drawn from their own plans: used by
``tests/models/cost/test_teacher_precision.py``; ``with_precision_by_phase`` switches the option on in the
layered generator (``layered_instances.py``)."""

from __future__ import annotations

import random

from planopt.instance import parse_instance
from planopt.oracles.by_plan import all_plans

from tests.support.random_instances import random_job_dict, with_drawn_limits

PRECISIONS = ["bf16", "fp8", "int8", "int4"]
# GPUs whose fp8 and int8 rates differ from bf16's in different ways (A100: int8 only; H100: both; L40S: both)
PRECISION_GPUS = ["A100-80GB", "H100-SXM", "L40S", "A100-40GB", "H200"]


def with_precision_by_phase(d: dict, rng: random.Random) -> bool:
    """Switch ``teacher.precision_by_phase`` on in job ``d`` (two or three phases, two or three precisions, one of
    them bf16's or fp8's lossless ceiling); False, and ``d`` unchanged, when it has no OPD."""
    if "opd" not in d["training"]["methods"]:
        return False
    d["training"]["phases"] = max(2, min(3, d["training"]["phases"]))
    options = set(d["teacher"]["precision_options"]) | {rng.choice(["bf16", "fp8"])}
    while len(options) < 2:
        options.add(rng.choice(PRECISIONS))
    d["teacher"]["precision_options"] = sorted(options)[:3]
    d["teacher"]["precision_by_phase"] = True
    return True


def random_precision_instance_dict(seed: int, max_plans: int = 30_000) -> dict:
    """A random small OPD job with a teacher precision per phase, limits drawn from its own plans."""
    rng = random.Random(60_000 + seed)
    while True:
        d = random_job_dict(rng, f"precision-{seed}")
        if "opd" not in d["training"]["methods"]:
            continue
        d["training"]["methods"] = {m: o for m, o in d["training"]["methods"].items() if m == "opd" or rng.random() < 0.3}
        d["training"]["methods"]["opd"]["steps_options"] = sorted(rng.sample([200, 1000, 3000], rng.randint(1, 2)))
        d["training"]["methods"]["opd"]["prompts_per_step"] = rng.choice([64, 256])
        d["hardware"]["gpus"] = [{"name": g, "counts": sorted(rng.sample([4, 8, 16], rng.randint(1, 2)))}
                                 for g in rng.sample(PRECISION_GPUS, rng.randint(1, 2))]
        d["training"]["samples_per_prompt_options"] = sorted(rng.sample([2, 4, 8], rng.randint(1, 2)))
        with_precision_by_phase(d, rng)
        d["teacher"]["precision_options"] = sorted(set(d["teacher"]["precision_options"]) | {rng.choice(PRECISIONS)})[:3]
        d["teacher"]["score"] = max(d["teacher"]["score"], d["task"]["baseline_score"] + rng.uniform(10, 30))
        try:
            parsed = parse_instance(d)
        except ValueError:
            continue
        plans = all_plans(parsed, limit=10**9)
        if len(plans) <= max_plans and any(p.metrics.fits_memory for p in plans):
            return with_drawn_limits(d, plans, rng)
