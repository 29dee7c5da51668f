"""Random small RL jobs with separate rollout GPUs and staleness options (asynchronous RL, issue 12
item 4), limits drawn from their own plans: used by ``tests/models/cost/test_asynchronous.py`` and
``tests/models/formulation/test_combined_choices.py``."""

from __future__ import annotations

import random

from planopt.instance import parse_instance
from planopt.oracles.by_plan import all_plans

from tests.support.random_instances import random_job_dict, with_drawn_limits


def random_async_instance_dict(seed: int) -> dict:
    """A random small RL job with rollout GPUs and staleness options, limits drawn from its own plans."""
    return _random_async(random.Random(30_000 + seed), f"async-{seed}", "rl")


def random_async_opd_instance_dict(seed: int) -> dict:
    """A random small OPD job with rollout GPUs, staleness options and ``training.asynchronous_opd`` (issue 27,
    lever 6), limits drawn from its own plans; a generator of its own (``random.Random(450_000 + seed)``), so
    :func:`random_async_instance_dict`'s seeds keep their draws."""
    return _random_async(random.Random(450_000 + seed), f"async-opd-{seed}", "opd")


def _random_async(rng: random.Random, name: str, method: str) -> dict:
    """A random job offering ``method`` with rollout GPUs and staleness options (asynchronous OPD switched on for
    ``opd``), drawn again until it parses and has at most 40,000 plans."""
    while True:
        inst = random_job_dict(rng, name)
        if method not in inst["training"]["methods"]:
            continue
        inst["hardware"]["rollout_gpus"] = [{"name": g, "counts": sorted(rng.sample([2, 8, 16, 32], rng.randint(1, 2)))}
                                            for g in rng.sample(["H100-SXM", "H200", "A100-80GB", "L40S", "B200"], rng.randint(1, 2))]
        inst["training"]["staleness_steps_options"] = rng.choice([[0, 1], [0, 1, 2], [1]])
        if method == "opd":
            inst["training"]["asynchronous_opd"] = True
        try:
            parsed = parse_instance(inst)
        except ValueError:
            continue  # a rollout GPU too small for the student: drawn again
        plans = all_plans(parsed, limit=10**9)
        if len(plans) <= 40_000:
            return with_drawn_limits(inst, plans, rng)
