"""One tolerance rule for limits (issue 13, item 27).

The evaluator, the oracle, the recipe fixing and the MIP all judge a limit by
``costs.exceeds`` (value past ``limit ± costs.limit_slack(limit)``). A limit
placed exactly on, just inside or just outside the tolerance around a plan's
value must give the same answer from `solve` and `enumerate`, on tiny.json and
on random instances.
"""

import json
import math
import random

import pytest
from typer.testing import CliRunner

from planopt.cli import app
from planopt.studies.frontier import pareto_filter
from planopt.instance import load_instance
from planopt.models.cost.evaluator import LIMIT_RELATIVE_TOLERANCE, Evaluator, exceeds, limit_slack
from planopt.models.formulation import LIMITS
from planopt.oracles.by_plan import all_plans, best_plan
from planopt.job.model import TIE_BREAK_RELATIVE, PlanModel

from tests.support.common import INSTANCES, split_seeds
from tests.support.random_instances import random_instance_dict

OBJECTIVE_METRIC = {"cost": "cost_usd", "time": "wall_hours", "quality": "quality", "forgetting": "forgetting_points"}
# How far past the limit a plan's value lies, in multiples of the slack: on the
# limit, halfway into the tolerance (accepted) and twice the tolerance (refused).
PLACEMENTS = {"on": 0.0, "inside": 0.5, "outside": 2.0}
# Frontier points tested per (instance, limit): enough to hit binding limits, few enough to stay fast.
POINTS_PER_LIMIT = 3
RANDOM_SEEDS = range(30)


def limit_past(value: float, sense: str, slacks: float) -> float:
    """The limit that ``value`` lies ``slacks`` slacks beyond (on the breaking side)."""
    step = slacks * limit_slack(value)
    return value - step if sense == "<=" else value + step


# --- the rule itself -----------------------------------------------------------

def test_slack_is_relative_with_a_floor_of_one():
    assert limit_slack(736.0) == pytest.approx(LIMIT_RELATIVE_TOLERANCE * 736.0)
    assert limit_slack(0.25) == LIMIT_RELATIVE_TOLERANCE
    assert limit_slack(-50.0) == pytest.approx(LIMIT_RELATIVE_TOLERANCE * 50.0)


@pytest.mark.parametrize("sense", ["<=", ">="])
def test_exceeds_accepts_on_and_inside_and_refuses_outside(sense):
    value = 736.7776441845593
    assert not exceeds(value, limit_past(value, sense, PLACEMENTS["on"]), sense)
    assert not exceeds(value, limit_past(value, sense, PLACEMENTS["inside"]), sense)
    assert exceeds(value, limit_past(value, sense, PLACEMENTS["outside"]), sense)


def test_exceeds_works_element_wise_on_arrays():
    """The recipe fixing applies the rule to every recipe at once (numpy arrays)."""
    import numpy as np
    values = np.array([100.0, 100.0 + 0.5e-7, 100.0 + 2e-7])
    assert exceeds(values, 100.0, "<=").tolist() == [False, False, True]
    assert exceeds(-values + 200.0, 100.0, ">=").tolist() == [False, False, True]


def test_exceeds_refuses_an_unknown_sense():
    with pytest.raises(ValueError, match="sense"):
        exceeds(1.0, 2.0, "<")


def test_evaluator_judges_min_quality_by_the_limit_slack():
    """The slack is the limit's, for a minimum as for a maximum (it was the plan value's for quality)."""
    inst = load_instance(INSTANCES / "tiny.json")
    ev = Evaluator(inst)
    plan = best_plan(inst).plan
    quality = ev.evaluate(plan).quality
    for placement, slacks in PLACEMENTS.items():
        limited = inst.with_overrides(min_quality=limit_past(quality, ">=", slacks))
        broken = not Evaluator(limited).evaluate(plan).feasible
        assert broken == (placement == "outside"), placement


# --- solve and the oracle agree at the boundary ----------------------------------

def frontier_values(plans, limit_metric: str, objective_metric: str) -> list[float]:
    """Values of ``limit_metric`` at the non-dominated plans of (limit metric, objective): where a limit binds."""
    vectors = [(getattr(p.metrics, limit_metric), getattr(p.metrics, objective_metric)) for p in plans]
    return [vectors[i][0] for i in pareto_filter(vectors, limit_metric, objective_metric)]


def assert_solve_matches_oracle(pm: PlanModel, inst, name: str, limit: float) -> None:
    limited = inst.with_overrides(**{name: limit})
    pm.set_limits(**{name: limit})
    try:
        mip = pm.solve()
    finally:
        pm.set_limits(**{name: None})
    oracle = best_plan(limited)
    where = f"{inst.name}: {name}={limit!r}"
    assert mip.status == oracle.status, (where, mip.status, oracle.status)
    if oracle.status != "optimal":
        return
    objective = inst.objective
    best = oracle.metrics.objective(objective)
    # plans within the tie-break slack of the best objective are tied, and told apart by cost (run.py, oracle.py)
    tied = TIE_BREAK_RELATIVE * max(1.0, abs(best))
    assert abs(mip.metrics.objective(objective) - best) <= tied, (where, mip.plan, oracle.plan)
    assert math.isclose(mip.metrics.cost_usd, oracle.metrics.cost_usd, rel_tol=1e-6), (where, mip.plan, oracle.plan)
    assert Evaluator(limited).evaluate(mip.plan).feasible, where


def check_boundaries(inst, rng: random.Random) -> int:
    """Every limit placed on, inside and outside the tolerance around binding plan values; returns the cases run."""
    plans = [p for p in all_plans(inst) if p.metrics.fits_memory]
    pm = PlanModel(inst)
    cases = 0
    for name, (metric, sense) in LIMITS.items():
        values = frontier_values(plans, metric, OBJECTIVE_METRIC[inst.objective])
        for value in rng.sample(values, min(POINTS_PER_LIMIT, len(values))):
            for slacks in PLACEMENTS.values():
                assert_solve_matches_oracle(pm, inst, name, limit_past(value, sense, slacks))
                cases += 1
            assert_solve_matches_oracle(pm, inst, name, round(value, 6))  # the case: a value rounded for print
            cases += 1
    return cases


def without_limits(data: dict) -> dict:
    return {**data, "constraints": {}}


@pytest.mark.slow  # long (20-60 s on 2 cores); .ci/run runs it with -m slow
def test_tiny_limits_on_inside_and_outside_the_tolerance():
    data = without_limits(json.loads((INSTANCES / "tiny.json").read_text()))
    assert check_boundaries(load_instance(data), random.Random(0)) >= len(LIMITS) * len(PLACEMENTS)


@pytest.mark.parametrize("seed", split_seeds(RANDOM_SEEDS, 6))
def test_random_instances_limits_on_inside_and_outside_the_tolerance(seed):
    check_boundaries(load_instance(without_limits(random_instance_dict(seed))), random.Random(seed))


def test_solve_and_enumerate_agree_on_the_rounded_optimum():
    """The issue's report: the budget set to the optimum rounded to 6 decimals."""
    runner = CliRunner()
    tiny = str(INSTANCES / "tiny.json")
    optimum = json.loads(runner.invoke(app, ["enumerate", tiny, "--json"]).stdout)["metrics"]["cost_usd"]
    for budget in (round(optimum, 6), optimum, limit_past(optimum, "<=", PLACEMENTS["inside"])):
        solved = runner.invoke(app, ["solve", tiny, "--json", "--no-sensitivity", "--budget-usd", repr(budget)])
        enumerated = runner.invoke(app, ["enumerate", tiny, "--json", "--budget-usd", repr(budget)])
        assert solved.exit_code == enumerated.exit_code == 0, (budget, solved.output, enumerated.output)
        assert json.loads(solved.stdout)["plan"] == json.loads(enumerated.stdout)["plan"]
    outside = limit_past(optimum, "<=", PLACEMENTS["outside"])
    solved = runner.invoke(app, ["solve", tiny, "--json", "--no-sensitivity", "--budget-usd", repr(outside)])
    enumerated = runner.invoke(app, ["enumerate", tiny, "--json", "--budget-usd", repr(outside)])
    assert solved.exit_code == enumerated.exit_code == 3


def test_a_plan_admitted_only_by_the_solver_tolerance_is_cut_off(monkeypatch):
    """Simulate a solver whose rows are far looser than the rule (0.1 %): the deadline row then admits the
    cheapest plan although the deadline sits just outside the tolerance around its wall time.

    ``PlanModel.solve`` must check the plan by the rule, cut it off and return the oracle's answer."""
    monkeypatch.setattr("planopt.job.model.SEARCH_WIDTH_SLACKS", 1e6)  # 1e6 slacks = 1e-3 relative
    inst = load_instance(without_limits(json.loads((INSTANCES / "tiny.json").read_text())))
    cheapest = best_plan(inst).metrics
    deadline = limit_past(cheapest.wall_hours, "<=", PLACEMENTS["outside"])
    expected = best_plan(inst.with_overrides(deadline_hours=deadline))
    assert expected.status == "optimal" and expected.metrics.cost_usd > cheapest.cost_usd
    pm = PlanModel(inst)
    pm.set_limits(deadline_hours=deadline)
    result = pm.solve()
    assert result.status == "optimal"
    assert not exceeds(result.metrics.wall_hours, deadline, "<=")
    assert result.metrics.cost_usd == pytest.approx(expected.metrics.cost_usd, rel=1e-9)
    assert not hasattr(pm.model, "tolerance_cuts")  # the cuts do not outlive the solve
    assert pm.model.row_width_slacks < 1e6  # nor the search width
