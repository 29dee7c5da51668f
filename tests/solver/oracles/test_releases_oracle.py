"""Repeated releases (``models/cost/releases.py``) against enumeration: on random jobs with a ``releases``
block the MIP's optimum equals both oracles' (plan by plan and vectorised), on staged jobs the staged
oracle's, and on jobs with candidate students the enumerated best over every student. A guard asserts
that the seeds exercise the lever: several releases, labels bought, and optima that differ from the
single run's."""

from __future__ import annotations

import pytest

from planopt.instance import parse_instance
from planopt.job.model import solve
from planopt.oracles.by_plan import all_plans

from tests.support.oracle_checks import assert_candidate_contract, assert_mip_equals_both_oracles, assert_staged_contract
from tests.support.release_instances import release_instance_dict

JOB_SEEDS = range(16)
STAGED_SEEDS = range(6)
CANDIDATE_SEEDS = range(6)


@pytest.mark.parametrize("seed", JOB_SEEDS)
def test_mip_equals_both_oracles_with_releases(seed):
    assert_mip_equals_both_oracles(parse_instance(release_instance_dict(seed)))


@pytest.mark.parametrize("seed", STAGED_SEEDS)
def test_staged_mip_equals_the_staged_oracle_with_releases(seed):
    assert_staged_contract(parse_instance(release_instance_dict(seed, "staged")))


@pytest.mark.parametrize("seed", CANDIDATE_SEEDS)
def test_candidate_mip_equals_the_enumeration_with_releases(seed):
    inst = parse_instance(release_instance_dict(seed, "candidates"))
    assert_candidate_contract(inst, solve(inst), all_plans(inst))


def test_the_seeds_exercise_the_lever():
    """Some seeds run many releases, buy SFT labels with a share below 1, and change their optimum against the
    same job run once (the cost-optimal plan of the job without the block)."""
    changed, labels, many = 0, 0, 0
    for seed in JOB_SEEDS:
        data = release_instance_dict(seed)
        inst = parse_instance(data)
        many += inst.releases.releases >= 3
        mip = solve(inst)
        if mip.plan is None:
            continue
        labels += mip.metrics.quantities["labels_bought"] > 0 and inst.releases.sft_labels_rebuilt_share < 1
        once = solve(parse_instance({**data, "releases": None}))
        changed += once.plan is not None and once.plan != mip.plan
    assert many >= 5 and changed >= 2 and labels >= 1, (many, changed, labels)
