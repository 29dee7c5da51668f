"""The correctness contract: the MIP's optimum equals exhaustive enumeration.

On random small instances (limits drawn from the instances' own plans, so many
bind and some are infeasible) the MIP and the oracle must agree on
feasibility and on the optimal objective to 1e-6 relative; the MIP's own
expressions must equal the evaluator's metrics of the plan it returns, and no
data-derived big-M may be exceeded.
"""

import math

import pytest

from planopt.instance import parse_instance
from planopt.oracles.by_plan import best_plan
from planopt.job.model import solve

from tests.support.random_instances import random_instance_dict
from tests.support.common import split_seeds

SEEDS = range(200)


def close(a: float, b: float, rel: float = 1e-6) -> bool:
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-6)


@pytest.mark.parametrize("seed", split_seeds(SEEDS, 50))
def test_mip_optimum_equals_enumerated_optimum(seed):
    inst = parse_instance(random_instance_dict(seed))
    mip, oracle = solve(inst), best_plan(inst)
    assert mip.status == oracle.status, (mip.status, oracle.status, mip.message)
    if oracle.status != "optimal":
        return
    objective = inst.objective
    assert close(mip.metrics.objective(objective), oracle.metrics.objective(objective)), (mip.plan, oracle.plan)
    # lexicographic tie-break: among equally good plans, the cheapest
    assert close(mip.metrics.cost_usd, oracle.metrics.cost_usd), (mip.plan, oracle.plan)
    assert mip.metrics.feasible, mip.metrics.violations
    for key, value in mip.mip_values.items():
        assert close(value, getattr(mip.metrics, key)), (key, value, getattr(mip.metrics, key))
    assert mip.big_m_breaches == []


@pytest.mark.slow  # 6 s on 2 cores (the default run's heaviest); .ci/run runs it with -m slow
def test_a_plan_on_a_limits_edge_is_judged_alike_by_solve_evaluate_and_both_oracles():
    """Issue 28 item 10: a limit placed where the rule (``costs.exceeds``) is decided by the last bits of a plan's
    value: the arrays oracle, the plan-by-plan oracle, the MIP and the evaluator accept or reject the same plans."""
    import json
    from planopt.models.cost.tolerance import limit_slack
    from planopt.oracles.arrays import best_plan_arrays
    from planopt.models.cost.evaluator import Evaluator
    checked = 0
    for seed in range(12):
        inst = parse_instance(random_instance_dict(seed))
        free = inst.model_copy(update={"constraints": inst.constraints.model_copy(update={"deadline_hours": None})})
        best = best_plan(free)
        if best.status != "optimal":
            continue
        wall = best.metrics.wall_hours
        for offset in (-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0):   # in units of the rule's slack, around the value
            deadline = (wall - offset * limit_slack(wall)) / (1 + 1e-9) if offset else wall / (1 + 1e-9)
            at = parse_instance(json.loads(free.model_copy(update={"constraints": free.constraints.model_copy(
                update={"deadline_hours": deadline})}).model_dump_json()))
            oracle, arrays, mip = best_plan(at), best_plan_arrays(at), solve(at)
            assert oracle.status == arrays.status == mip.status, (seed, offset, oracle.status, arrays.status, mip.status)
            if oracle.status == "optimal":
                obj = at.objective
                assert close(arrays.metrics.objective(obj), oracle.metrics.objective(obj)), (seed, offset)
                assert close(mip.metrics.objective(obj), oracle.metrics.objective(obj)), (seed, offset)
                assert not Evaluator(at).evaluate(mip.plan).violations
            checked += 1
    assert checked >= 20
