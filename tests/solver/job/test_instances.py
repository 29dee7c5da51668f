"""Every shipped job instance: valid, solvable, and the MIP agrees with the evaluator."""

import json
import math

import pytest

from planopt.instance import load_instance
from planopt.oracles.by_plan import MAX_PLANS, best_plan, space_size
from planopt.job.model import solve
from tests.support.common import INSTANCES, slow_cases

JOBS = sorted(p for p in INSTANCES.glob("*.json") if json.loads(p.read_text()).get("kind", "job") == "job")


def test_enough_instances_ship():
    assert len(JOBS) >= 4
    assert sum(space_size(load_instance(p)) <= MAX_PLANS for p in JOBS) >= 2


@pytest.mark.parametrize("path", JOBS, ids=lambda p: p.stem)
def test_mip_metrics_equal_evaluator(path):
    inst = load_instance(path)
    res = solve(inst)
    assert res.status in ("optimal", "infeasible")
    if res.status == "optimal":
        assert res.big_m_breaches == []
        for key, value in res.mip_values.items():
            assert math.isclose(value, getattr(res.metrics, key), rel_tol=1e-6, abs_tol=1e-6), key
        assert res.metrics.feasible


def plans_of(inst) -> int:
    """The instance's plan count as its oracle lists it: staged plans, every student's plans, or one job's."""
    from planopt.oracles.by_plan import space_size
    from planopt.oracles.by_plan import space_size
    if inst.training.staged:
        return space_size(inst)
    return space_size(inst) if inst.candidate_students else space_size(inst)


def reference_best(inst, limit: int):
    from planopt.oracles.by_plan import best_plan
    from planopt.oracles.by_plan import best_plan
    if inst.training.staged:
        return best_plan(inst, limit)
    return best_plan(inst, limit) if inst.candidate_students else best_plan(inst, limit=limit)


# the monthly instance takes 7 s on 2 cores: the default run leaves it to -m slow (.ci/run)
@pytest.mark.parametrize("path", slow_cases([p for p in JOBS if plans_of(load_instance(p)) <= 20_000],
                                            lambda p: p.stem == "qwen3-8b-math-monthly"), ids=lambda p: p.stem)
def test_enumerable_instances_match_oracle(path):
    inst = load_instance(path)
    mip, oracle = solve(inst), reference_best(inst, 20_000)
    assert mip.status == oracle.status
    if mip.status == "optimal":
        assert math.isclose(mip.metrics.objective(inst.objective), oracle.metrics.objective(inst.objective), rel_tol=1e-6)
