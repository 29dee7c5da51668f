"""Properties the optimiser must have whatever the coefficients."""

import math

import pytest

from planopt.instance import load_instance
from planopt.models.cost import physics
from planopt.models.cost.evaluator import Evaluator
from planopt.instance import parse_instance
from planopt.oracles.by_plan import all_plans
from planopt.job.model import PlanModel, solve
from tests.support.common import INSTANCES
from tests.support.random_instances import random_instance_dict


def _tiny(**changes) -> dict:
    data = load_instance(INSTANCES / "tiny.json").model_dump(exclude_none=True)
    data["constraints"] = {}
    for key, value in changes.items():
        data[key] = value
    return data


def test_young_daly_interval_comes_out_when_nothing_else_pulls():
    # Only write overhead and lost work depend on the interval; a grid of
    # one-minute options lets the optimiser land on sqrt(2 w MTBF) itself.
    data = _tiny(checkpointing={"interval_minutes_options": list(range(1, 601)), "keep_last": 1},
                 reliability={"failures_per_gpu_hour": 0.002, "restart_minutes": 0,
                              "checkpoint_write_gb_per_s_per_node": 0.5})
    data["hardware"] = {"gpus": [{"name": "H100-SXM", "counts": [8]}]}
    res = solve(parse_instance(data))
    assert res.status == "optimal"
    hp = Evaluator(parse_instance(data)).hardware(res.plan.hardware)
    tau_star = 60 * physics.young_daly_interval_hours(hp.checkpoint_write_hours, hp.failures_per_hour)
    assert 5 < tau_star < 595  # the optimum lies inside the grid, so the test can fail
    assert abs(res.plan.checkpoint_interval_minutes - tau_star) <= 1.0


def test_chosen_interval_minimises_overhead_on_chosen_hardware():
    inst = load_instance(INSTANCES / "qwen3-8b-math.json")
    res = solve(inst)
    hp = Evaluator(inst).hardware(res.plan.hardware)
    best = min(inst.checkpointing.interval_minutes_options, key=hp.overhead_share)
    assert res.plan.checkpoint_interval_minutes == best


def test_a_plan_that_does_not_fit_in_memory_is_never_chosen():
    data = _tiny()
    data["student"] = {"preset": "Qwen3-8B"}
    data["teacher"]["architecture"] = {"preset": "Qwen3-32B"}
    data["teacher"]["score"] = 60.0
    data["hardware"] = {"gpus": [{"name": "L4", "counts": [1, 2]}, {"name": "H100-SXM", "counts": [8]}]}
    inst = parse_instance(data)
    plans = all_plans(inst)
    misfits = [p for p in plans if not p.metrics.fits_memory]
    res = solve(inst)
    assert res.status == "optimal" and res.metrics.fits_memory
    # the memory constraint must matter: some misfit plan would have been cheaper
    assert misfits and min(p.metrics.cost_usd for p in misfits) < res.metrics.cost_usd
    assert res.plan.gpu == "H100-SXM"


@pytest.mark.parametrize("seed", range(25))
def test_tightening_a_limit_never_yields_a_cheaper_plan(seed):
    data = random_instance_dict(seed)
    data["objective"] = "cost"
    data["constraints"] = {}
    inst = parse_instance(data)
    pm = PlanModel(inst)
    free = pm.solve()
    if free.status != "optimal":
        pytest.skip("no plan fits at all")
    m = free.metrics
    sequences = {
        "deadline_hours": [m.wall_hours * f for f in (4, 1, 0.7, 0.4)],
        "max_forgetting_points": [m.forgetting_points * f for f in (4, 1, 0.7, 0.4)],
        "min_quality": [m.quality + d for d in (-5, 0, 2, 5)],
        "budget_usd": [m.cost_usd * f for f in (4, 2, 1.2)],
    }
    for limit, values in sequences.items():
        last = -math.inf
        for v in values:
            pm.set_limits(**{limit: v})
            res = pm.solve()
            cost = res.metrics.cost_usd if res.metrics else math.inf
            if last == math.inf:
                assert math.isinf(cost), (limit, v)  # once infeasible, tighter stays infeasible
            else:
                assert cost >= last - 1e-6 * max(1.0, abs(last)), (limit, v)
            last = cost
        pm.set_limits(**{limit: None})


def test_more_distinct_prompts_never_lower_the_best_quality():
    """Repeated prompts are worth less (learning.effective_draws): the most-quality optimum can
    only rise with task.prompts_available, and it does rise where the longest run repeats prompts."""
    data = _tiny(objective="quality")
    data["training"]["methods"].pop("sft", None)
    best = []
    for n in (10, 1_000, 10_000, 100_000):
        data["task"] = {**data["task"], "prompts_available": n}
        res = solve(parse_instance(data))
        assert res.status == "optimal"
        best.append(res.metrics.quality)
    assert all(a <= b + 1e-9 for a, b in zip(best, best[1:])), best
    assert best[0] < best[-1] - 1.0, best
