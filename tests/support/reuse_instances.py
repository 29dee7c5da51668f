"""Random jobs where data reuse matters: few distinct prompts, few owned SFT examples,
and SFT epochs over owned data as a choice (``sft_data.max_epochs_options``).

The job is ``random_instances.random_job_dict``'s (SMALL grid); only the data it
has is redrawn, so that RL/OPD plans draw each prompt from once to hundreds of
times and SFT plans choose between buying labels and repeating owned ones. Limits
are drawn from the job's own plans, as for the contract tests.
"""

from __future__ import annotations

import random

from planopt.instance import parse_instance
from planopt.oracles.by_plan import all_plans

from tests.support.random_instances import random_job_dict, with_drawn_limits

PROMPTS_AVAILABLE = (50, 500, 5000, 50000)
EXAMPLES_OWNED = (1000, 10000, 100000)
EPOCHS = (1, 2, 3, 4, 8, 16)


def reuse_job_dict(seed: int) -> dict:
    rng = random.Random(70_000 + seed)
    inst = random_job_dict(rng, f"reuse-{seed}")
    inst["task"]["prompts_available"] = rng.choice(PROMPTS_AVAILABLE)
    if "sft" in inst["training"]["methods"]:
        inst["sft_data"]["examples_available"] = rng.choice(EXAMPLES_OWNED)
        inst["sft_data"]["max_epochs_options"] = sorted(rng.sample(EPOCHS, rng.randint(1, 3)))
    return inst


def reuse_instance_dict(seed: int) -> dict:
    """A reuse job with limits drawn from its own plans' metrics."""
    inst = reuse_job_dict(seed)
    rng = random.Random(90_000 + seed)
    return with_drawn_limits(inst, all_plans(parse_instance(inst)), rng)
