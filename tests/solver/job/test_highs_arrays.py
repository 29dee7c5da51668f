"""The array hand-over to HiGHS (``highs_arrays.py``) against Pyomo's persistent interface: the same optima on every
kind of plan model, through the re-solves a sweep, an objective switch and a fixed variable make, and every row it
cannot read refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pyomo.core as pyo
import pytest

from planopt.instance import load_instance, parse_instance
from planopt.job.highs_arrays import ArrayHighs, NotLinear
from planopt.job.model import HighsWithStart, PlanModel, run_highs
from planopt.models.formulation import start_values
from planopt.models.formulation.limits import LIMITS
from tests.support.layered_instances import layered_instance
from tests.support.oracle_checks import close
from tests.support.common import slow_cases
from tests.support.random_instances import random_instance_dict

INSTANCES = Path(__file__).resolve().parents[3] / "instances"
SHIPPED = ["tiny.json", "qwen3-8b-math.json", "qwen3-32b-agentic-rl.json", "llama-70b-domain-injection.json",
           "qwen3-32b-sft-then-rl.json", "qwen3-32b-agentic-rl-split-rollout.json", "math-8b-or-32b.json",
           "qwen3-8b-math-train-the-teacher.json", "infeasible-deadline.json"]


def _pair(inst):
    """Two models of ``inst``: one solved through the arrays, one through Pyomo's persistent interface."""
    ours, reference = PlanModel(inst), PlanModel(inst)
    assert isinstance(ours.solver, ArrayHighs)
    reference.solver = HighsWithStart()
    if inst.retention is None:
        reference.solver.start = lambda: start_values(reference.model, reference.space)
    return ours, reference


def _same(a, b) -> None:
    assert a.status == b.status
    if a.metrics is not None:
        objective = a.objective
        assert close(a.metrics.objective(objective), b.metrics.objective(objective), 1e-7)
        assert close(a.metrics.cost_usd, b.metrics.cost_usd, 1e-7)


# the staged instance takes 8 s on 2 cores: the default run leaves it to -m slow (.ci/run)
@pytest.mark.parametrize("name", slow_cases(SHIPPED, lambda n: n == "qwen3-32b-sft-then-rl.json"))
def test_shipped_instances_solve_to_the_reference_optimum_through_a_sweep_and_objective_switches(name):
    inst = load_instance(json.loads((INSTANCES / name).read_text()))
    ours, reference = _pair(inst)
    _same(ours.solve(), reference.solve())
    budget = inst.constraints.budget_usd
    for factor in (0.6, 1.5, None):  # a tighter budget, a looser one, none: right-hand sides and deactivated rows
        value = None if factor is None or budget is None else budget * factor
        ours.set_limits(budget_usd=value)
        reference.set_limits(budget_usd=value)
        _same(ours.solve(), reference.solve())
    for objective in ("quality", "time", "forgetting", "cost"):
        ours.set_objective(objective)
        reference.set_objective(objective)
        _same(ours.solve(), reference.solve())


@pytest.mark.parametrize("seed", range(12))
def test_random_layered_jobs_solve_to_the_reference_optimum(seed):
    made = layered_instance(seed)
    if made is None:
        pytest.skip("no valid job for this seed")
    inst, _ = made
    ours, reference = _pair(inst)
    _same(ours.solve(), reference.solve())


def test_a_fixed_variable_is_a_column_with_both_bounds_at_its_value():
    inst = load_instance(json.loads((INSTANCES / "qwen3-8b-math.json").read_text()))
    pm = PlanModel(inst)
    pm.set_limits(**{name: None for name in LIMITS})  # every recipe feasible: ruling one out leaves others
    first = pm.solve()
    chosen = pm.chosen()["stage0.recipe"]
    var = pm.model.recipe_chosen[chosen]
    var.fix(0)  # the optimum's recipe ruled out: the next solve must choose another
    second = pm.solve()
    assert second.status == "optimal" and pm.chosen()["stage0.recipe"] != chosen
    assert second.metrics.cost_usd >= first.metrics.cost_usd - 1e-9
    var.unfix()
    third = pm.solve()
    assert close(third.metrics.cost_usd, first.metrics.cost_usd, 1e-9)


def test_a_mutable_parameter_moves_the_row_it_is_in():
    m = pyo.ConcreteModel()
    m.x = pyo.Var(bounds=(0, 10), domain=pyo.Integers)
    m.y = pyo.Var(bounds=(0, 10))
    m.p = pyo.Param(mutable=True, initialize=3.5)
    m.e = pyo.Expression(expr=2 * m.x + m.y)
    m.row = pyo.Constraint(expr=m.e <= m.p + 0 * m.y)
    m.obj = pyo.Objective(expr=-(m.x + m.y) - 1.0)
    solver = ArrayHighs()
    res = run_highs(solver, m, None)
    res.solution_loader.load_vars()
    assert close(res.incumbent_objective, -4.5)          # x = 0, y = 3.5
    m.p.set_value(10.0)
    res = run_highs(solver, m, None)
    res.solution_loader.load_vars()
    assert close(res.incumbent_objective, -11.0) and close(pyo.value(m.x + m.y), 10.0)


def test_a_nonlinear_row_is_refused_in_one_line():
    m = pyo.ConcreteModel()
    m.x = pyo.Var(bounds=(0, 1))
    m.row = pyo.Constraint(expr=m.x * m.x <= 1)
    m.obj = pyo.Objective(expr=m.x)
    with pytest.raises(NotLinear, match="linear rows only; got ProductExpression"):
        run_highs(ArrayHighs(), m, None)


def test_every_limit_row_is_read_again_when_its_right_hand_side_moves():
    inst = load_instance(json.loads((INSTANCES / "tiny.json").read_text()))
    pm = PlanModel(inst)
    pm.solve()
    rows = pm.solver._rows
    for name in LIMITS:
        con = getattr(pm.model, f"{name}_bound")
        if con.active:
            assert rows[id(con)][2].dynamic, name


def test_a_parameter_as_a_coefficient_of_a_flat_row_is_read_at_each_solve():
    from planopt.models.formulation.linear import linear
    m = pyo.ConcreteModel()
    m.x = pyo.Var(bounds=(0, 10))
    m.p = pyo.Param(mutable=True, initialize=2.0)
    m.row = pyo.Constraint(expr=linear([1.0], [m.x]) + m.p * m.x <= 6.0)  # (1 + p) x <= 6
    m.obj = pyo.Objective(expr=m.x, sense=pyo.maximize)
    solver = ArrayHighs()
    assert close(run_highs(solver, m, None).incumbent_objective, 2.0)
    m.p.set_value(0.5)
    assert close(run_highs(solver, m, None).incumbent_objective, 4.0)


@pytest.mark.parametrize("name", ["qwen3-8b-math.json", "qwen3-32b-sft-then-rl.json", "math-8b-or-32b.json"])
def test_the_mip_values_read_from_the_rows_are_pyomos_values(name):
    inst = load_instance(json.loads((INSTANCES / name).read_text()))
    pm = PlanModel(inst)
    result = pm.solve()
    for key, value in result.mip_values.items():
        assert close(value, pyo.value(getattr(pm.model, key)), 1e-9), key


def test_a_run_with_a_known_feasible_point_leaves_feasibility_jump_off_for_itself_only():
    """``optimise(known_feasible=True)`` runs HiGHS without feasibility jump (KNOWN_FEASIBLE_OPTIONS); the next
    run of the same persistent HiGHS has it back on, as HiGHS's default, and the optimum is the same."""
    for seed in range(20):
        pm = PlanModel(parse_instance(random_instance_dict(seed)))
        first = pm.solve()
        if first.metrics is not None:
            break
    else:
        pytest.fail("no random instance with a plan")
    jump = lambda: pm.solver._h.getOptionValue("mip_heuristic_run_feasibility_jump")[1]  # noqa: E731
    assert jump() is True
    cost = pm.metric("cost_usd")
    least = pm.optimise(cost, pyo.minimize, known_feasible=True)
    assert jump() is False
    pm.set_objective("cost")
    again = pm.solve()
    assert jump() is True
    assert least <= first.metrics.cost_usd * (1 + 1e-9)    # the least cost is no more than the chosen plan's
    assert again.metrics.cost_usd == pytest.approx(first.metrics.cost_usd, rel=1e-9)
