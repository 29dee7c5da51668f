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
