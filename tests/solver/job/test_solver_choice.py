"""Solver choice (issue 13 item 14): HiGHS by default, any MIP solver Pyomo's solver interfaces drive by
name, `--solver` on the command line and `solver=` in the API; the oracle contract holds with SCIP
(PySCIPOpt, from the test extra) as it does with HiGHS."""

import importlib.util
import json
import math

import pytest
from typer.testing import CliRunner

from planopt.api import solve_instance
from planopt.cli import app
from planopt.errors import InputError
from planopt.instance import parse_instance
from planopt.oracles.by_plan import best_plan
from planopt.job.model import solve
from tests.support.common import INSTANCES
from tests.support.random_instances import random_instance_dict

runner = CliRunner()
TINY = str(INSTANCES / "tiny.json")
needs_scip = pytest.mark.skipif(importlib.util.find_spec("pyscipopt") is None,
                                reason="PySCIPOpt is not installed (pip install -e '.[test]')")


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-6)


@needs_scip
@pytest.mark.parametrize("seed", range(24))
def test_scip_optimum_equals_enumerated_optimum(seed):
    inst = parse_instance(random_instance_dict(seed))
    mip, oracle = solve(inst, solver="scip"), best_plan(inst)
    assert mip.status == oracle.status, (mip.status, oracle.status, mip.message)
    if oracle.status != "optimal":
        return
    assert close(mip.metrics.objective(inst.objective), oracle.metrics.objective(inst.objective)), (mip.plan, oracle.plan)
    assert close(mip.metrics.cost_usd, oracle.metrics.cost_usd), (mip.plan, oracle.plan)
    assert mip.metrics.feasible, mip.metrics.violations
    for key, value in mip.mip_values.items():
        assert close(value, getattr(mip.metrics, key)), key


@needs_scip
def test_cli_solver_scip_gives_the_highs_answer_with_its_limits_table():
    highs = json.loads(runner.invoke(app, ["solve", TINY, "--json"]).stdout)
    res = runner.invoke(app, ["solve", TINY, "--json", "--solver", "scip"])
    assert res.exit_code == 0, res.output
    scip = json.loads(res.stdout)
    assert scip["plan"] == highs["plan"]
    assert scip["metrics"]["cost_usd"] == pytest.approx(highs["metrics"]["cost_usd"], rel=1e-9)
    assert [b["binding"] for b in scip.get("binding", [])] == [b["binding"] for b in highs.get("binding", [])]


@needs_scip
def test_api_solver_scip_explains_an_infeasible_job_as_highs_does():
    highs = solve_instance(TINY, sensitivity=False, min_quality=99)
    scip = solve_instance(TINY, sensitivity=False, min_quality=99, solver="scip")
    assert scip.status == highs.status == "infeasible"
    assert [r["constraint"] for r in scip.relaxations] == [r["constraint"] for r in highs.relaxations]


def test_an_unknown_solver_is_one_line_naming_the_flag():
    res = runner.invoke(app, ["solve", TINY, "--solver", "nope" * 100])
    assert res.exit_code == 2
    assert res.stderr.startswith("error: --solver: unknown solver") and res.stderr.count("\n") == 1
    assert "highs" in res.stderr and "scip" in res.stderr and len(res.stderr) < 600


def test_an_unavailable_solver_is_one_line_saying_so():
    res = runner.invoke(app, ["solve", TINY, "--solver", "gurobi_persistent"])  # no Gurobi on a test machine
    assert res.exit_code == 2 and res.stderr.startswith("error: --solver: gurobi_persistent is not available here")


def test_the_api_names_its_argument():
    with pytest.raises(InputError, match="^solver: unknown solver"):
        solve_instance(TINY, solver="nope")


@pytest.mark.parametrize("args", [["--confidence", "0.8"], ["--scenarios", "50"]])
def test_solver_choice_is_refused_where_it_does_not_apply(args):
    res = runner.invoke(app, ["solve", TINY, "--solver", "scip", *args])
    assert res.exit_code == 2 and "--solver" in res.stderr


def test_a_portfolio_refuses_solver_choice():
    res = runner.invoke(app, ["solve", str(INSTANCES / "portfolio-small.json"), "--solver", "scip"])
    assert res.exit_code == 2 and "--solver" in res.stderr
