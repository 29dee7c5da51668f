"""Exact Pareto frontiers: the ε-constraint frontier equals the enumerated Pareto set.

The reference is the Pareto set of every feasible enumerated plan (what
`planopt enumerate --all` lists), with dominance judged at the tests' relative
tolerance: two metric values within 1e-6 relative count as equal, so plans that
differ only by floating-point noise in one metric form one point.
"""

import itertools
import json
import math

import pytest
from typer.testing import CliRunner

from planopt.cli import app
from planopt.studies.frontier import METRIC_SENSE, METRICS, pareto_frontier
from planopt.models.formulation import LIMITS
from planopt.models.schema.instance import Instance
from planopt.instance import parse_instance
from planopt.oracles.by_plan import all_plans
from planopt.job.model import PlanModel

from tests.support.common import INSTANCES, split_seeds
from tests.support.random_instances import random_instance_dict

REL = 1e-6
PAIRS = [("cost_usd", "quality"), ("wall_hours", "cost_usd"), ("forgetting_points", "quality"),
         ("quality", "wall_hours"), ("cost_usd", "forgetting_points")]


def tol(v: float) -> float:
    return REL * max(1.0, abs(v))


def dominates(a, b, x, y) -> bool:
    """a is at least as good as b in x and y (within tolerance) and better by more than it in one."""
    ok = all(METRIC_SENSE[k] * (a[i] - b[i]) <= tol(b[i]) for i, k in enumerate((x, y)))
    better = any(METRIC_SENSE[k] * (b[i] - a[i]) > tol(b[i]) for i, k in enumerate((x, y)))
    return ok and better


def reference_frontier(inst: Instance, x: str, y: str) -> list[tuple[float, float]]:
    vecs = [(getattr(p.metrics, x), getattr(p.metrics, y)) for p in all_plans(inst) if p.feasible]
    front = [v for v in sorted(set(vecs)) if not any(dominates(w, v, x, y) for w in vecs)]
    distinct = []  # vectors equal within the tolerance are one point
    for v in front:
        if not any(same(v, d) for d in distinct):
            distinct.append(v)
    return distinct


def same(a, b) -> bool:
    return all(math.isclose(p, q, rel_tol=REL, abs_tol=REL) for p, q in zip(a, b))


def assert_frontier_matches(inst: Instance, x: str, y: str):
    pm = PlanModel(inst)
    front = pareto_frontier(pm, x, y)
    got = [(getattr(p.metrics, x), getattr(p.metrics, y)) for p in front.points]
    ref = reference_frontier(inst, x, y)
    for p in front.points:
        assert p.metrics.feasible, p.metrics.violations
    # each found point is one of the enumerated Pareto points, and each of those is found
    for g in got:
        assert any(same(g, r) for r in ref), (x, y, "found point not Pareto-optimal", g, ref)
    for r in ref:
        assert any(same(g, r) for g in got), (x, y, "Pareto point missed", r, got)
    assert len(got) == len(ref), (got, ref)
    # points are distinct and ordered from best y to best x
    assert len(got) == len({(round(a, 9), round(b, 9)) for a, b in got})
    ys = [METRIC_SENSE[y] * v for _, v in got]
    assert ys == sorted(ys)
    # the model's limits and objective are left as they were
    assert pm.limits == {k: v for k, v in inst.constraints.model_dump().items() if k in LIMITS} and pm.objective == inst.objective
    return front


def tiny(limits: bool = True) -> dict:
    raw = json.loads((INSTANCES / "tiny.json").read_text())
    return raw if limits else {**raw, "constraints": {}}


@pytest.fixture
def tiny_free_file(tmp_path):
    """tiny.json without its limits (a file for the CLI, whose frontier is never empty)."""
    path = tmp_path / "tiny-free.json"
    path.write_text(json.dumps(tiny(limits=False)))
    return path


@pytest.mark.parametrize("limits", [True, False], ids=["own-limits", "no-limits"])
@pytest.mark.parametrize("x,y", list(itertools.permutations(METRICS, 2)))
def test_tiny_frontier_equals_enumerated_pareto_set(x, y, limits):
    assert_frontier_matches(parse_instance(tiny(limits)), x, y)


@pytest.mark.parametrize("seed", split_seeds(range(60), 12))
def test_random_frontier_equals_enumerated_pareto_set(seed):
    inst = parse_instance(random_instance_dict(seed))
    x, y = PAIRS[seed % len(PAIRS)]
    assert_frontier_matches(inst, x, y)
    x2, y2 = PAIRS[(seed + 2) % len(PAIRS)]
    assert_frontier_matches(inst, x2, y2)


def test_frontier_keeps_the_instance_limits():
    free = pareto_frontier(PlanModel(parse_instance(tiny(limits=False))), "cost_usd", "quality").points
    qualities = sorted(p.metrics.quality for p in free)
    cut = qualities[len(qualities) // 2]  # a quality floor and a forgetting cap that cut the free frontier
    forget = sorted(p.metrics.forgetting_points for p in free)[-2]
    inst = parse_instance({**tiny(), "constraints": {"min_quality": cut, "max_forgetting_points": forget}})
    tight = pareto_frontier(PlanModel(inst), "cost_usd", "quality").points
    assert tight and len(tight) < len(free)
    assert all(p.metrics.quality >= cut - 1e-9 and p.metrics.forgetting_points <= forget + 1e-9 for p in tight)
    assert_frontier_matches(inst, "cost_usd", "quality")


def test_frontier_of_an_infeasible_instance_is_empty(tmp_path):
    inst = parse_instance({**tiny(), "constraints": {"budget_usd": 1.0}})
    assert pareto_frontier(PlanModel(inst), "cost_usd", "quality").points == []
    path = tmp_path / "broke.json"
    path.write_text(json.dumps({**tiny(), "constraints": {"budget_usd": 1.0}}))
    res = CliRunner().invoke(app, ["frontier", str(path), "--json"])
    assert res.exit_code == 3 and json.loads(res.stdout)["points"] == []


def test_cli_frontier_json_csv_parquet_and_plot(tmp_path, tiny_free_file):
    runner = CliRunner()
    out_csv, out_pq, png = tmp_path / "f.csv", tmp_path / "f.parquet", tmp_path / "f.png"
    res = runner.invoke(app, ["frontier", str(tiny_free_file), "--x", "cost_usd", "--y", "quality",
                              "--json", "--out", str(out_csv), "--plot", str(png)])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    ref = reference_frontier(parse_instance(tiny(limits=False)), "cost_usd", "quality")
    assert len(data["points"]) == len(ref) > 1
    for p in data["points"]:
        assert set(p) >= {"cost_usd", "wall_hours", "quality", "forgetting_points", "plan"}
        assert {"method", "gpu", "gpu_count"} <= set(p["plan"]["stages"][0])
    import pandas as pd
    df = pd.read_csv(out_csv)
    assert len(df) == len(ref) and {"cost_usd", "quality", "method", "gpu", "gpu_count"} <= set(df.columns)
    assert png.stat().st_size > 1000 and png.read_bytes()[:4] == b"\x89PNG"
    res = runner.invoke(app, ["frontier", str(tiny_free_file), "--x", "wall_hours", "--y", "quality",
                              "--out", str(out_pq)])
    assert res.exit_code == 0, res.output
    assert "quality" in res.stdout and len(pd.read_parquet(out_pq)) >= 1


@pytest.mark.parametrize("args", [["--x", "price", "--y", "quality"], ["--x", "quality", "--y", "quality"],
                                  ["--x", "cost_usd", "--y", "quality", "--out", "f.xlsx"]])
def test_cli_frontier_rejects_bad_arguments(args):
    res = CliRunner().invoke(app, ["frontier", str(INSTANCES / "tiny.json"), *args])
    assert res.exit_code == 2, res.output
    assert "error:" in res.output


def test_python_api_frontier_dataframe():
    import planopt
    df = planopt.frontier(tiny(limits=False), "cost_usd", "quality")
    assert len(df) == len(reference_frontier(parse_instance(tiny(limits=False)), "cost_usd", "quality")) > 1
    assert list(df["cost_usd"]) == sorted(df["cost_usd"], reverse=True)
    assert {"cost_usd", "wall_hours", "quality", "forgetting_points", "method", "gpu", "gpu_count"} <= set(df.columns)


@pytest.mark.parametrize("command", [["frontier"], ["sweep", "--budget-usd", "1:2:3"]])
def test_cli_rejects_portfolio_instances(command):
    res = CliRunner().invoke(app, [command[0], str(INSTANCES / "portfolio-small.json"), *command[1:]])
    assert res.exit_code == 2 and "portfolio" in res.output
