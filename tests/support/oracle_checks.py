"""The oracle contract, checked in one place: on an instance, the MIP's optimum equals
both oracles' (plan by plan and vectorised), and the MIP's own values of every metric
equal the evaluator's on the plan it returns."""

from __future__ import annotations

import math

from planopt.oracles.arrays import best_plan_arrays
from planopt.models.cost.evaluator import Evaluator
from planopt.models.schema.instance import Instance
from planopt.models.schema.plan import Plan
from planopt.oracles.by_plan import best_plan, lexicographic_best
from planopt.job.model import SolveResult, solve


def close(a: float, b: float, rel: float = 1e-6) -> bool:
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-6)


def assert_mip_equals_both_oracles(inst: Instance) -> SolveResult:
    """Assert the contract on ``inst``; return the MIP's result for further checks."""
    mip, oracle, fast = solve(inst), best_plan(inst), best_plan_arrays(inst)
    assert mip.status == oracle.status == fast.status, (mip.status, oracle.status, fast.status)
    if oracle.status != "optimal":
        return mip
    objective = inst.objective
    for other in (oracle, fast):
        assert close(mip.metrics.objective(objective), other.metrics.objective(objective)), (mip.plan, other.plan)
        assert close(mip.metrics.cost_usd, other.metrics.cost_usd), (mip.plan, other.plan)
    assert mip.metrics.feasible
    for key, value in mip.mip_values.items():
        assert close(value, getattr(mip.metrics, key)), (key, value, getattr(mip.metrics, key))
    return mip


def assert_staged_mip_equals_the_staged_oracle(inst: Instance) -> SolveResult:
    """The staged contract: the MIP's status, objective and cost equal the staged oracle's, its plan re-evaluated
    by the staged evaluator is feasible at the same cost, and the MIP's own values equal the evaluator's."""
    from planopt.models.cost.evaluator import Evaluator
    from planopt.models.schema.plan import Plan
    from planopt.oracles.by_plan import best_plan
    mip, oracle = solve(inst), best_plan(inst)
    assert mip.status == oracle.status, (mip.status, oracle.status, mip.message)
    if oracle.status != "optimal":
        return mip
    assert close(mip.metrics.objective(inst.objective), oracle.metrics.objective(inst.objective)), (mip.plan, oracle.plan)
    assert close(mip.metrics.cost_usd, oracle.metrics.cost_usd), (mip.plan, oracle.plan)
    plan = mip.plan
    again = Evaluator(inst).evaluate(plan)
    assert again.feasible and close(again.cost_usd, mip.metrics.cost_usd)
    for key, value in mip.mip_values.items():
        assert close(value, getattr(mip.metrics, key)), (key, value, getattr(mip.metrics, key))
    return mip


def assert_scenarios_equal_the_evaluator(inst: Instance, scenarios, plans) -> None:
    """The vectorised scenario evaluator equals the point evaluator on each scenario's instance,
    for every plan given and every metric a limit or an objective reads."""
    import pytest

    from planopt.models.uncertainty import model as U
    from planopt.models.cost.evaluator import Evaluator
    from planopt.models.uncertainty.scenarios import ScenarioEvaluator
    se = ScenarioEvaluator(Evaluator(inst), scenarios)
    for plan in plans:
        sm = se.plan_metrics(plan)
        for s in range(scenarios.n):
            m = Evaluator(U.apply(inst, scenarios.at(s))).evaluate(plan)
            for key in ("cost_usd", "wall_hours", "quality", "forgetting_points", "gpu_hours"):
                assert sm.metric(key)[s] == pytest.approx(getattr(m, key), rel=1e-12, abs=1e-12), (key, s, plan)


def with_limits(inst: Instance, limits: dict) -> Instance:
    """``inst`` with some limits replaced (None removes one)."""
    return inst.model_copy(update={"constraints": inst.constraints.model_copy(update=limits)})


def assert_same_metrics(a, b, rel: float = 1e-12) -> None:
    """Every number, breakdown, flag and violation of two Metrics."""
    import pytest
    for key in ("cost_usd", "wall_hours", "quality", "forgetting_points", "gpu_hours", "memory_per_gpu_gb"):
        assert getattr(a, key) == pytest.approx(getattr(b, key), rel=rel, abs=1e-9), key
    for key in ("cost_breakdown_usd", "hours_breakdown", "flops"):
        da, db = getattr(a, key), getattr(b, key)
        assert list(da) == list(db), key
        for k in da:
            assert da[k] == pytest.approx(db[k], rel=rel, abs=1e-9), (key, k)
    assert a.fits_memory == b.fits_memory
    assert a.violations == b.violations
    assert a.feasible == b.feasible


def assert_least_relaxations_equal_the_oracle(inst: Instance, fitting) -> dict:
    """``explain_infeasible`` on ``inst`` (infeasible): each limit relaxed alone needs exactly the best value
    of its metric among the plans (``fitting``: every plan's Metrics that fit in memory) meeting the other
    limits, and a limit no such plan exists for is not offered. Returns the relaxations alone."""
    from planopt.job.diagnose import explain_infeasible
    from planopt.models.cost.evaluator import exceeds
    from planopt.models.formulation import LIMITS
    from planopt.job.model import PlanModel
    active = {k: v for k, v in inst.constraints.model_dump().items() if k in LIMITS and v is not None}
    rows = explain_infeasible(PlanModel(inst))
    alone = {r["constraint"]: r["required"] for r in rows if not r["together"]}
    assert set(alone) <= set(active)
    for name, (expr, sense) in LIMITS.items():
        if name not in active:
            continue
        others = [getattr(m, expr) for m in fitting if not any(
            exceeds(getattr(m, LIMITS[o][0]), active[o], LIMITS[o][1]) for o in active if o != name)]
        if not others:
            assert name not in alone, (name, alone)
            continue
        need = min(others) if sense == "<=" else max(others)
        assert name in alone and close(alone[name], need), (name, alone, need)
    return alone


def quantile(values, q: float) -> float:
    """The value at share ``q`` of the sorted ``values`` (a limit drawn from the plans' own metrics)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def limit_steps(fitting) -> list[dict]:
    """Limit changes for re-solving one built model (``fitting``: Metrics of the plans that fit): tighten,
    loosen and remove a quality floor, then a budget, both, forgetting and deadline, each from the plans'
    values, ending with no limit set."""
    quality = [m.quality for m in fitting]
    cost = [m.cost_usd for m in fitting]
    wall = [m.wall_hours for m in fitting]
    forgetting = [m.forgetting_points for m in fitting]
    return [{"min_quality": quantile(quality, 0.9)}, {"min_quality": quantile(quality, 0.3)},
            {"min_quality": max(quality)}, {"min_quality": None},
            {"budget_usd": quantile(cost, 0.1)}, {"budget_usd": quantile(cost, 0.6)},
            {"min_quality": quantile(quality, 0.7)}, {"budget_usd": None}, {"min_quality": min(quality) - 1.0},
            {"min_quality": max(quality) + 1.0}, {"min_quality": None},
            {"max_forgetting_points": quantile(forgetting, 0.2), "deadline_hours": quantile(wall, 0.5)},
            {"min_quality": quantile(quality, 0.5)}, {"max_forgetting_points": None},
            {"deadline_hours": quantile(wall, 0.05)}, {"deadline_hours": None, "min_quality": None}]


def assert_staged_contract(inst: Instance, oracle=None, mip=None):
    """The staged MIP's status equals the oracle's; on optimal, its objective and cost equal the
    oracle's, its plan is one of the instance's options and feasible, and the MIP's own values of
    the metrics equal the evaluator's on that plan."""
    mip = mip if mip is not None else solve(inst)   # PlanModel dispatches to the staged model
    oracle = oracle if oracle is not None else best_plan(inst)
    assert mip.status == oracle.status, (mip.status, oracle.status, mip.message)
    if oracle.status != "optimal":
        assert mip.plan is None
        return mip, oracle
    objective = inst.objective
    assert isinstance(mip.plan, Plan)
    assert close(mip.metrics.objective(objective), oracle.metrics.objective(objective)), (mip.plan, oracle.plan)
    assert close(mip.metrics.cost_usd, oracle.metrics.cost_usd), (mip.plan, oracle.plan)
    ev = Evaluator(inst)
    ev.check_plan(mip.plan)    # one of the instance's options (ValueError otherwise)
    again = ev.evaluate(mip.plan)
    assert_same_metrics(mip.metrics, again)
    assert again.feasible and mip.metrics.feasible, again.violations
    assert set(mip.mip_values) == {"cost_usd", "wall_hours", "quality", "forgetting_points"}
    for key, value in mip.mip_values.items():
        assert close(value, getattr(mip.metrics, key)), (key, value, getattr(mip.metrics, key), mip.plan)
    return mip, oracle


def unique_student(plans, objective: str, best) -> bool:
    """Whether no other student has a feasible plan whose objective and cost both tie with ``best``'s
    (rel 1e-6): then the student of the optimum is determined and the MIP must name it."""
    for sp in plans:
        if sp.feasible and sp.student != best.student and \
                close(sp.metrics.objective(objective), best.metrics.objective(objective)) and \
                close(sp.metrics.cost_usd, best.metrics.cost_usd):
            return False
    return True


def assert_candidate_contract(inst: Instance, mip, plans, oracle=None, objective=None):
    """``mip`` against the oracle (``oracle``, or the lexicographic best of the feasible ``plans``)."""
    objective = objective or inst.objective
    if oracle is None:
        feasible = [p for p in plans if p.feasible]
        oracle_status = "optimal" if feasible else "infeasible"
        best = lexicographic_best(feasible, objective) if feasible else None
    else:
        oracle_status, best = oracle.status, oracle
    assert mip.status == oracle_status, (mip.status, oracle_status, mip.message)
    if oracle_status != "optimal":
        assert mip.plan is None and mip.student is None
        assert mip.message
        return
    assert close(mip.metrics.objective(objective), best.metrics.objective(objective)), (mip.student, mip.plan, best.student, best.plan)
    assert close(mip.metrics.cost_usd, best.metrics.cost_usd), (mip.student, mip.plan, best.student, best.plan)
    assert mip.student in inst.student_names()
    if unique_student(plans, objective, best):
        assert mip.student == best.student, (mip.student, best.student)
    # the plan's metrics are its student's evaluator's, and it meets every limit
    again = Evaluator(inst.for_student(mip.student)).evaluate(mip.plan)
    assert_same_metrics(mip.metrics, again)
    assert mip.metrics.feasible and again.feasible, again.violations
    assert set(mip.mip_values) == {"cost_usd", "wall_hours", "quality", "forgetting_points"}
    for key, value in mip.mip_values.items():
        assert close(value, getattr(mip.metrics, key)), (key, value, getattr(mip.metrics, key), mip.student, mip.plan)


def assert_chance_contract(inst: Instance, confidence: float, cvar: float | None, scenarios: int, seed: int,
                           label=None):
    """The chance-constrained MIP over ``scenarios`` draws of ``seed`` equals the enumeration over the same draws
    (feasibility, the objective or CVaR, the expected cost as the tie-break), its own expressions equal the scenario
    evaluator's values on its plan, and its plan meets the share in sample. Returns (MIP result, oracle's best)."""
    from planopt.models.uncertainty.model import draw
    from planopt.oracles.by_plan import best_under_scenarios
    from planopt.uncertainty.chance import solve_chance
    mip = solve_chance(inst, confidence, scenarios, seed, cvar, out_of_sample=50, guard=False)
    oracle = best_under_scenarios(inst, draw(inst, scenarios, seed), confidence, cvar)
    assert (mip.status == "optimal") == (oracle is not None), (label, mip.status, mip.message)
    if oracle is None:
        return mip, oracle
    def near(a: float, b: float, rel: float = 1e-6) -> bool:  # relative, and absolute below 1 (test_layers' rule)
        return abs(a - b) <= rel * max(1.0, abs(a), abs(b))

    metric = {"cost": "cost_usd", "time": "wall_hours", "quality": "quality", "forgetting": "forgetting_points"}
    if cvar is not None:
        assert near(mip.mip_values["cvar_cost_usd"], oracle.cvar_cost_usd), (label, mip.plan, oracle.plan)
    else:
        key = metric[inst.objective]
        assert near(mip.risk["expected"][key], oracle.expected[key]), (label, mip.plan, oracle.plan)
        assert near(mip.risk["expected"]["cost_usd"], oracle.expected["cost_usd"]), (label, mip.plan, oracle.plan)
    for name, key in metric.items():  # the MIP's expressions are the scenario evaluator's values on its plan
        assert near(mip.mip_values[f"expected_{name}"], mip.risk["expected"][key], 1e-5), (label, name)
    assert mip.risk["in_sample_share"] >= confidence - 1e-9
    return mip, oracle
