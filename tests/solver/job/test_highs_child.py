"""Stoppable HiGHS runs (``highs_child.py``): the same answer as a run in process, a run past its deadline killed
with nothing claimed from it, the process's own HiGHS left consistent, and the chance explanation's runs made so
under a time limit."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pyomo.core as pyo
import pytest

from planopt.instance import load_instance, parse_instance
from planopt.job.highs_child import run_stoppable, stopped_answer
from planopt.job.model import PlanModel
from planopt.uncertainty.chance import ChanceModel
from tests.support.oracle_checks import close
from tests.support.random_instances import random_instance_dict

INSTANCES = Path(__file__).resolve().parents[3] / "instances"


def _one_column_lp() -> dict:
    """min x subject to x >= 0.25 (one row), 0 <= x <= 1."""
    return {"num_col": 1, "num_row": 1, "num_nz": 1, "a_format": 2, "sense": 1, "offset": 2.0,
            "col_cost": np.ones(1), "col_lower": np.zeros(1), "col_upper": np.ones(1), "row_lower": np.array([0.25]),
            "row_upper": np.array([np.inf]), "a_start": np.zeros(1, dtype=np.int32), "a_index": np.zeros(1, dtype=np.int32),
            "a_value": np.ones(1), "integrality": np.zeros(1, dtype=np.int32), "start": None}


def test_a_child_run_answers_what_highs_does():
    answer = run_stoppable(_one_column_lp(), {"threads": 1}, time.perf_counter() + 60.0)
    assert answer["status"] == "kOptimal" and answer["has_solution"]
    assert close(answer["objective"], 2.25, 1e-9) and close(answer["values"][0], 0.25, 1e-9)


def test_a_child_not_back_by_its_deadline_is_killed_and_claims_nothing(monkeypatch):
    """A deadline (with no grace) shorter than the child's start: the run is killed, and read as stopped at its
    limit with no solution."""
    import planopt.job.highs_child as child
    monkeypatch.setattr(child, "KILL_GRACE_SECONDS", 0.0)
    began = time.perf_counter()
    answer = child.run_stoppable(_one_column_lp(), {"threads": 1}, began + 0.001)
    assert answer == stopped_answer()
    assert time.perf_counter() - began < 1.0  # killed, not waited for


def test_a_child_that_fails_raises_one_line():
    bad = {**_one_column_lp(), "a_index": np.array([5], dtype=np.int32)}  # a column the LP does not have
    with pytest.raises(RuntimeError, match="child process"):
        run_stoppable({**bad, "num_nz": "one"}, {}, time.perf_counter() + 60.0)


@pytest.mark.parametrize("name", ["qwen3-8b-math.json", "math-8b-or-32b.json", "qwen3-32b-sft-then-rl.json"])
def test_a_stoppable_run_finds_the_in_process_optimum_and_leaves_the_process_model_right(name):
    """The cost optimum through a child equals the in-process one; a later in-process solve after a row was replaced
    during the child run still finds the reference optimum (the model is handed over in full again)."""
    inst = load_instance(json.loads((INSTANCES / name).read_text()))
    pm = PlanModel(inst)
    first = pm.solve()
    cost = pm.model.cost_usd if hasattr(pm.model, "cost_usd") else None
    if cost is None:
        pytest.skip("no cost expression on this model")
    inside = pm.optimise(cost, pyo.minimize, 600.0)
    outside = pm.optimise(cost, pyo.minimize, 600.0, stoppable=True)
    assert pm.optimised_status == "optimal"
    assert close(inside, outside, 1e-7) and close(outside, first.metrics.cost_usd, 1e-6)
    pm.set_objective("cost")
    again = pm.solve()
    assert again.status == first.status and close(again.metrics.cost_usd, first.metrics.cost_usd, 1e-7)


def test_the_explanation_under_a_time_limit_runs_stoppable_and_counts_the_same():
    """Under a limited budget every explanation run is stoppable, and its count is the in-process one."""
    from planopt.job.budget import TimeBudget
    for seed in range(40):
        inst = parse_instance(random_instance_dict(seed))
        model = ChanceModel(inst, 0.99, 40, seed)
        if model.plan_model.model is None:
            continue
        inside = model._least_violations(model.limits, None).least
        if not inside:
            continue
        model._stoppable = True
        assert model._least_violations(model.limits, 600.0).least == inside
        seen = []
        real = model.plan_model.optimise
        model.plan_model.optimise = lambda *a, **k: seen.append(k.get("stoppable")) or real(*a, **k)
        model.budget = TimeBudget.of(600.0, time.perf_counter())
        model.explain_infeasible(600.0)
        assert seen and all(seen)
        return
    pytest.fail("no random instance whose limits break in some scenario")


def test_a_partial_start_reaches_the_child_as_it_reaches_the_process():
    """The portfolio's MIP proper under a time limit runs in a child (``phases.mip_phase``), with the warm start's
    plans as a partial start: the child completes the same start and proves the same optimum as the process does,
    and the solution it sends back loads into the model."""
    from planopt.portfolio.search import set_start
    from planopt.portfolio.solve import PortfolioModel
    answers = []
    for stoppable in (False, True):
        pm = PortfolioModel(INSTANCES / "portfolio-small.json")
        pm.warm_start(floors=False, starts=True)
        assert pm.solver.pending is not None and len(pm.solver.pending[0]) > 0
        set_start(pm, pm.plan_fixes)
        res = pm.solver.solve(pm.model, time_limit=300.0, rel_gap=1e-9, abs_gap=0.0,
                              solver_options={"random_seed": 0, "threads": 1}, stoppable=stoppable)
        assert pm.solver.pending is None   # the start was handed over, in process or to the child
        res.solution_loader.load_vars()
        answers.append((str(res.termination_condition), res.incumbent_objective, pyo.value(pm.model.objective)))
    (t0, inc0, loaded0), (t1, inc1, loaded1) = answers
    assert t0 == t1 and "convergence" in t0.lower()
    assert close(inc0, inc1, 1e-9) and close(loaded1, inc1, 1e-7) and close(loaded0, inc0, 1e-7)
