"""The hours breakdown sums to the wall time, also where failures are frequent
(the exact checkpoint overhead is far from its first-order split there)."""

import json

import pytest

from planopt.instance import parse_instance
from planopt.oracles.by_plan import all_plans

from tests.support.common import INSTANCES


@pytest.mark.parametrize("failures_per_gpu_hour", [2e-5, 1e-3, 2e-2])
def test_hours_breakdown_sums_to_wall_time(failures_per_gpu_hour):
    data = json.loads((INSTANCES / "tiny.json").read_text())
    data["reliability"] = {"failures_per_gpu_hour": failures_per_gpu_hour}
    inst = parse_instance(data)
    plans = [p for p in all_plans(inst) if p.metrics.fits_memory]
    assert plans
    for p in plans[::25]:
        m = p.metrics
        assert sum(m.hours_breakdown.values()) == pytest.approx(m.wall_hours, rel=1e-12)
        assert m.hours_breakdown["failure_rework"] >= 0.0
