"""The decisions of issue 12 and issue 9 together: split rollout GPUs, asynchronous RL,
checkpoint retention and CPU offload in one instance.

Each decision is held to both oracles on its own (``test_rollout.py``,
``test_asynchronous.py``, ``test_retention.py``, ``test_offload.py``); here they share
one model: the asynchronous epigraph on the compute hours, the retention split of the
hours per (hardware, interval), and offloading twins of split and colocated choices.
The MIP must still equal both oracles, and the random instances must exercise the
combinations (a guard asserts it).
"""

from __future__ import annotations

import random

import pytest

from planopt.instance import parse_instance
from planopt.oracles.by_plan import all_plans

from tests.support.oracle_checks import assert_mip_equals_both_oracles
from tests.support.random_instances import with_drawn_limits
from tests.support.retention_instances import retention_block, with_a_covering_option
from tests.support.async_instances import random_async_instance_dict
from tests.support.common import split_seeds

SEEDS = range(12)
SLOW_SEEDS = range(12, 40)


def combined_instance_dict(seed: int) -> dict:
    """An asynchronous-RL job with rollout GPUs (``test_asynchronous``), plus a retention block and
    ``cpu_offload: "if_needed"``, limits drawn again from its own plans."""
    rng = random.Random(50_000 + seed)
    inst = random_async_instance_dict(seed)
    inst.pop("constraints", None)
    inst["retention"] = retention_block(rng)
    with_a_covering_option(inst)
    inst["training"]["cpu_offload"] = "if_needed"
    plans = all_plans(parse_instance(inst), limit=10**9)
    return with_drawn_limits(inst, plans, rng)


def _solve(seed: int):
    inst = parse_instance(combined_instance_dict(seed))
    return assert_mip_equals_both_oracles(inst)


@pytest.mark.parametrize("seed", split_seeds(SEEDS, 4))
def test_mip_equals_both_oracles_with_every_new_decision(seed):
    _solve(seed)


@pytest.mark.slow
@pytest.mark.parametrize("seed", SLOW_SEEDS)
def test_mip_equals_both_oracles_with_every_new_decision_more_seeds(seed):
    _solve(seed)


@pytest.mark.slow  # solves every seed of SEEDS again (~15 s)
def test_the_combined_instances_exercise_the_combinations():
    """Guards the generator: optima that split and run asynchronously, under a retention choice."""
    results = [_solve(seed) for seed in SEEDS]
    optimal = [r for r in results if r.status == "optimal"]
    assert len(optimal) >= len(SEEDS) // 2
    assert all(r.plan.retention is not None for r in optimal)
    assert any(r.plan.rollout_gpu is not None for r in optimal)
    assert any(r.plan.staleness_steps > 0 for r in optimal)
