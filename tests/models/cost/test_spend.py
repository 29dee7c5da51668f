"""The spend timeline (``models/cost/spend.py``): its charges add up to the plan's cost, its days to its charges,
and a line is reached where the cumulative spend, worked out by hand, reaches it."""

import json

import pytest

from planopt.instance import parse_instance
from planopt.models.cost.spend import Charge, daily, plan_charges, reached_at
from planopt.oracles.by_plan import all_plans

from tests.support.common import INSTANCES
from tests.support.staged_instances import shrunk_staged_job_dict


def _tiny_with_every_line() -> dict:
    data = json.loads((INSTANCES / "tiny.json").read_text())
    data["checkpointing"] = {**data.get("checkpointing", {}), "milestones_kept": 2, "milestone_retention_months": 3}
    data["operations"] = {"fixed_usd": 500.0, "usd_per_wall_hour": 12.0}
    return data


@pytest.mark.parametrize("data", [_tiny_with_every_line(), shrunk_staged_job_dict(3)], ids=["tiny", "staged"])
def test_charges_and_days_add_up_to_the_plan_cost(data):
    inst = parse_instance(data)
    plans = [p for p in all_plans(inst) if p.metrics.fits_memory][::37]
    assert plans
    for p in plans:
        charges = plan_charges(inst, p.plan)
        assert all(c.usd > 0 and c.end_hour >= c.start_hour >= 0 for c in charges)
        assert sum(c.usd for c in charges) == pytest.approx(p.metrics.cost_usd, rel=1e-12)
        assert sum(usd for _, _, usd in daily(charges)) == pytest.approx(p.metrics.cost_usd, rel=1e-12)
        # the GPUs are billed while the plan trains, never after its wall time
        gpu = [c for c in charges if c.component == "compute"]
        assert gpu and max(c.end_hour for c in gpu) == pytest.approx(p.metrics.wall_hours, rel=1e-12)
        assert len(gpu) == len(p.plan.stages)


def test_a_line_is_reached_where_the_cumulative_spend_reaches_it():
    # $100 evenly over hours [0, 48) and $50 at once at hour 10: by hand, $20.83 before the jump, $70.83 after it
    charges = [Charge("compute", 1, 0.0, 48.0, 100.0), Charge("data", 1, 10.0, 10.0, 50.0)]
    assert reached_at(charges, 60.0) == (10.0, 1)                      # by the jump
    hour, day = reached_at(charges, 80.0)                              # on the slope: 50 + 100 t / 48 = 80
    assert hour == pytest.approx(14.4) and day == 1
    hour, day = reached_at(charges, 150.0)                             # at the very end of day 2
    assert hour == pytest.approx(48.0) and day == 2
    assert reached_at(charges, 150.01) is None
    # split over days: day 0 holds 24/48 of the spread charge and the jump
    by_day = {}
    for d, _, usd in daily(charges):
        by_day[d] = by_day.get(d, 0.0) + usd
    assert by_day == pytest.approx({0: 100.0, 1: 50.0})
