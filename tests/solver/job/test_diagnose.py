"""Sensitivity and infeasibility explanations, checked against brute force.

Sensitivity: a limit is reported binding exactly when dropping it improves the
enumerated optimum, and the reported objective after relaxing it equals the
enumerated optimum at the relaxed value. Infeasibility: each single relaxation
listed, passed back through the matching `planopt solve` flag, yields a plan,
and no plan meeting the other limits beats the required value by more than a
relative 1e-6; a limit not listed cannot be relaxed alone to make a plan exist.
"""

import json
import math
import random

import pytest
from typer.testing import CliRunner

from planopt.api import solve_instance
from planopt.cli import app
from planopt.models.formulation import LIMITS
from planopt.models.schema.instance import Instance
from planopt.instance import parse_instance
from planopt.oracles.by_plan import all_plans, best_plan

from tests.support.common import INSTANCES, split_seeds
from tests.support.random_instances import random_instance_dict

FLAGS = {"budget_usd": "--budget-usd", "deadline_hours": "--deadline-hours",
         "max_forgetting_points": "--max-forgetting", "min_quality": "--min-quality"}
REL = 1e-6
EVAL_TOL = 1e-9  # the evaluator's limit tolerance (planopt.models.cost.evaluator.LIMIT_RELATIVE_TOLERANCE)


def meets(metrics, name: str, limit: float) -> bool:
    value = getattr(metrics, LIMITS[name][0])
    tol = EVAL_TOL * max(1.0, abs(limit))
    return value <= limit + tol if LIMITS[name][1] == "<=" else value >= limit - tol


def with_limits(inst: Instance, **changes) -> Instance:
    cons = {k: v for k, v in {**inst.constraints.model_dump(), **changes}.items() if v is not None and k in LIMITS}
    return parse_instance({**inst.model_dump(), "constraints": cons})


def objective_value(result, objective):
    return result.metrics.objective(objective)


# --- sensitivity ------------------------------------------------------------

@pytest.mark.parametrize("seed", split_seeds(range(40), 8))
def test_sensitivity_agrees_with_brute_force(seed):
    inst = parse_instance(random_instance_dict(seed))
    result = solve_instance(inst)
    if result.status != "optimal":
        pytest.skip("infeasible instance (covered by the infeasibility tests)")
    obj = inst.objective
    base = objective_value(result, obj)
    active = {k for k, v in inst.constraints.model_dump().items() if v is not None and k in LIMITS}
    assert {row["constraint"] for row in result.binding} == active
    for row in result.binding:
        name = row["constraint"]
        free = best_plan(with_limits(inst, **{name: None}))
        gain = base - objective_value(free, obj)  # >= 0: dropping a limit never hurts
        assert gain >= -REL * max(1.0, abs(base))
        if REL * max(1.0, abs(base)) >= gain > 1e-9 * max(1.0, abs(base)):
            continue  # within solver tolerances of the binding threshold: either answer is right
        assert row["binding"] == (gain > 0), (name, row, gain)
        assert math.isclose(row["plan_value"], getattr(result.metrics, LIMITS[name][0]), rel_tol=1e-12)
        if row["binding"]:
            relaxed = best_plan(with_limits(inst, **{name: row["relaxed_to"]}))
            assert row["objective_after"] is not None
            natural = relaxed.metrics.quality if obj == "quality" else objective_value(relaxed, obj)
            assert math.isclose(row["objective_after"], natural, rel_tol=REL, abs_tol=REL)
            assert row["improvement"] >= -REL * max(1.0, abs(base))  # relaxing improves or keeps


def _tiny_quality_instance(**limits) -> Instance:
    raw = json.loads((INSTANCES / "tiny.json").read_text())
    return parse_instance({**raw, "objective": "quality", "constraints": limits})


def test_binding_budget_and_slack_deadline_on_tiny():
    free = solve_instance(_tiny_quality_instance(), sensitivity=False)
    plans = sorted((p for p in all_plans(_tiny_quality_instance()) if p.feasible), key=lambda p: p.metrics.cost_usd)
    cheaper = [p for p in plans if p.metrics.quality < free.metrics.quality - 1e-6]
    assert cheaper, "tiny.json should trade money for quality"
    # a budget between the cheapest plan and the best-quality plan binds; a 10-year deadline does not
    budget = math.sqrt(plans[0].metrics.cost_usd * free.metrics.cost_usd)
    inst = _tiny_quality_instance(budget_usd=budget, deadline_hours=24 * 3650)
    result = solve_instance(inst)
    rows = {r["constraint"]: r for r in result.binding}
    assert result.status == "optimal" and result.metrics.cost_usd <= budget * (1 + 1e-9)
    assert rows["budget_usd"]["binding"] is True
    assert rows["deadline_hours"]["binding"] is False and "relaxed_to" not in rows["deadline_hours"]
    assert rows["budget_usd"]["relaxed_to"] > budget
    assert rows["budget_usd"]["improvement"] >= 0  # more budget: the same or more quality
    relaxed = best_plan(with_limits(inst, budget_usd=rows["budget_usd"]["relaxed_to"]))
    assert math.isclose(rows["budget_usd"]["objective_after"], relaxed.metrics.quality, rel_tol=REL)


# --- infeasibility ----------------------------------------------------------

def infeasible_instance(seed: int) -> Instance | None:
    """A random instance made infeasible by pulling two or three limits against each other."""
    rng = random.Random(1000 + seed)
    raw = random_instance_dict(seed)
    plans = [p.metrics for p in all_plans(parse_instance(raw)) if p.metrics.fits_memory]
    if len(plans) < 2:
        return None
    def q(key, share):
        values = sorted(getattr(p, key) for p in plans)
        return values[min(len(values) - 1, int(share * len(values)))]
    names = rng.sample(list(LIMITS), rng.choice([2, 2, 3]))
    cons = {}
    for name in names:
        key = LIMITS[name][0]
        if LIMITS[name][1] == ">=":
            cons[name] = q(key, rng.uniform(0.6, 1.0)) * (1 - 1e-6)
        else:
            cons[name] = q(key, rng.uniform(0.0, 0.4)) * rng.choice([0.5, 1.0 + 1e-6])
    inst = parse_instance({**raw, "constraints": cons})
    return inst if best_plan(inst).status == "infeasible" else None


def best_value_under_others(inst: Instance, name: str) -> float | None:
    """The best value of ``name``'s metric among plans meeting every other limit (None: no such plan)."""
    others = {k: v for k, v in inst.constraints.model_dump().items() if v is not None and k != name and k in LIMITS}
    values = [getattr(p.metrics, LIMITS[name][0]) for p in all_plans(inst)
              if p.metrics.fits_memory and all(meets(p.metrics, k, v) for k, v in others.items())]
    if not values:
        return None
    return min(values) if LIMITS[name][1] == "<=" else max(values)


def check_explanation(inst: Instance, path) -> list[dict]:
    result = solve_instance(inst)
    assert result.status == "infeasible"
    rows = result.relaxations
    path.write_text(json.dumps(inst.model_dump(mode="json")))
    runner = CliRunner()
    single = {r["constraint"]: r["required"] for r in rows if not r["together"]}
    for name, limit in inst.constraints.model_dump().items():  # the limits, not alert_share or confidence
        if name not in LIMITS:
            continue
        if limit is None:
            continue
        best = best_value_under_others(inst, name)
        if best is None:
            assert name not in single, (name, "listed, but no plan meets the other limits")
            continue
        assert name in single, (name, "not listed, but relaxing it alone to", best, "makes a plan exist")
        required = single[name]
        # minimal: no plan meeting the other limits beats the required value by more than 1e-6 relative
        tol = REL * max(1.0, abs(required))
        if LIMITS[name][1] == "<=":
            assert required >= limit and best >= required - tol, (name, required, best)
        else:
            assert required <= limit and best <= required + tol, (name, required, best)
        # and sufficient, through the CLI flag
        res = runner.invoke(app, ["solve", str(path), "--json", "--no-sensitivity", FLAGS[name], repr(required)])
        assert res.exit_code == 0, (name, required, res.output)
        assert json.loads(res.stdout)["status"] == "optimal"
    together = [r for r in rows if r["together"]]
    if together:
        assert not single
        args = [a for r in together for a in (FLAGS[r["constraint"]], repr(r["required"]))]
        res = runner.invoke(app, ["solve", str(path), "--json", "--no-sensitivity", *args])
        assert res.exit_code == 0, (together, res.output)
    return rows


@pytest.mark.parametrize("seed", split_seeds(range(40), 8))
def test_infeasibility_explanations_are_minimal_and_sufficient(seed, tmp_path):
    inst = infeasible_instance(seed)
    if inst is None:
        pytest.skip("no infeasible variant for this seed")
    check_explanation(inst, tmp_path / "inst.json")


@pytest.mark.slow  # 5 s on 2 cores (the default run's heaviest); .ci/run runs it with -m slow
def test_infeasible_random_instances_are_covered():
    assert sum(infeasible_instance(s) is not None for s in range(40)) >= 20


def test_infeasible_deadline_instance(tmp_path):
    inst = parse_instance(json.loads((INSTANCES / "infeasible-deadline.json").read_text()))
    rows = check_explanation(inst, tmp_path / "inst.json")
    # the deadline is what no plan meets: relaxing it alone is the one fix, to a sensible number of hours
    assert [(r["constraint"], r["together"]) for r in rows] == [("deadline_hours", False)]
    assert 0.25 < rows[0]["required"] < 72
    res = CliRunner().invoke(app, ["solve", str(INSTANCES / "infeasible-deadline.json"), "--json"])
    assert res.exit_code == 3
    data = json.loads(res.stdout)
    assert data["status"] == "infeasible"
    assert data["relaxations"] == [{"constraint": "deadline_hours", "required": rows[0]["required"], "together": False}]
