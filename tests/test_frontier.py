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
from planopt.frontier import METRIC_SENSE, METRICS, pareto_frontier
from planopt.models.schema import Instance
from planopt.oracle import all_plans
from planopt.run import PlanModel

from conftest import INSTANCES
from random_instances import random_instance_dict

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
    front = [v for v in set(vecs) if not any(dominates(w, v, x, y) for w in vecs)]
    return sorted(front)


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
    # points are distinct and ordered from best y to best x
    assert len(got) == len({(round(a, 9), round(b, 9)) for a, b in got})
    ys = [METRIC_SENSE[y] * v for _, v in got]
    assert ys == sorted(ys)
    # the model's limits and objective are left as they were
    assert pm.limits == inst.constraints.model_dump() and pm.objective == inst.objective
    return front


@pytest.mark.parametrize("x,y", list(itertools.permutations(METRICS, 2)))
def test_tiny_frontier_equals_enumerated_pareto_set(x, y):
    inst = Instance.model_validate(json.loads((INSTANCES / "tiny.json").read_text()))
    assert_frontier_matches(inst, x, y)


@pytest.mark.parametrize("seed", range(60))
def test_random_frontier_equals_enumerated_pareto_set(seed):
    inst = Instance.model_validate(random_instance_dict(seed))
    x, y = PAIRS[seed % len(PAIRS)]
    assert_frontier_matches(inst, x, y)
    x2, y2 = PAIRS[(seed + 2) % len(PAIRS)]
    assert_frontier_matches(inst, x2, y2)


def test_frontier_keeps_the_instance_limits():
    raw = json.loads((INSTANCES / "tiny.json").read_text())
    inst = Instance.model_validate(raw)
    loose = Instance.model_validate({**raw, "constraints": {}})
    tight = pareto_frontier(PlanModel(inst), "cost_usd", "quality").points
    free = pareto_frontier(PlanModel(loose), "cost_usd", "quality").points
    assert all(p.metrics.quality >= 38 - 1e-9 and p.metrics.forgetting_points <= 5 + 1e-9 for p in tight)
    assert len(free) > len(tight)  # tiny.json's limits cut the frontier


def test_frontier_of_an_infeasible_instance_is_empty():
    raw = json.loads((INSTANCES / "tiny.json").read_text())
    inst = Instance.model_validate({**raw, "constraints": {"budget_usd": 1.0}})
    assert pareto_frontier(PlanModel(inst), "cost_usd", "quality").points == []


def test_cli_frontier_json_csv_parquet_and_plot(tmp_path):
    runner = CliRunner()
    out_csv, out_pq, png = tmp_path / "f.csv", tmp_path / "f.parquet", tmp_path / "f.png"
    res = runner.invoke(app, ["frontier", str(INSTANCES / "tiny.json"), "--x", "cost_usd", "--y", "quality",
                              "--json", "--out", str(out_csv), "--plot", str(png)])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    inst = Instance.model_validate(json.loads((INSTANCES / "tiny.json").read_text()))
    ref = reference_frontier(inst, "cost_usd", "quality")
    assert len(data["points"]) == len(ref)
    for p in data["points"]:
        assert set(p) >= {"cost_usd", "wall_hours", "quality", "forgetting_points", "plan"}
        assert {"method", "gpu", "gpu_count"} <= set(p["plan"])
    import pandas as pd
    df = pd.read_csv(out_csv)
    assert len(df) == len(ref) and {"cost_usd", "quality", "method", "gpu", "gpu_count"} <= set(df.columns)
    assert png.stat().st_size > 1000 and png.read_bytes()[:4] == b"\x89PNG"
    res = runner.invoke(app, ["frontier", str(INSTANCES / "tiny.json"), "--x", "wall_hours", "--y", "quality",
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
    df = planopt.frontier(INSTANCES / "tiny.json", "cost_usd", "quality")
    inst = Instance.model_validate(json.loads((INSTANCES / "tiny.json").read_text()))
    assert len(df) == len(reference_frontier(inst, "cost_usd", "quality"))
    assert list(df["cost_usd"]) == sorted(df["cost_usd"], reverse=True)
    assert {"cost_usd", "wall_hours", "quality", "forgetting_points", "method", "gpu", "gpu_count"} <= set(df.columns)
