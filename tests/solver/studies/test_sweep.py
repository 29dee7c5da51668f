"""Sweeps: one persistent model re-solved over a limit's values equals independent solves."""

import json
import math
import random

import pytest
from typer.testing import CliRunner

from planopt.cli import app
from planopt.models.schema.instance import Instance
from planopt.instance import parse_instance
from planopt.oracles.by_plan import all_plans
from planopt.job.model import PlanModel
from planopt.studies.sweep import parse_range, run_sweep
from planopt.errors import InputError

from tests.support.common import INSTANCES
from tests.support.random_instances import random_instance_dict

LIMIT_METRIC = {"budget_usd": "cost_usd", "deadline_hours": "wall_hours",
                "max_forgetting_points": "forgetting_points", "min_quality": "quality"}


def close(a, b, rel=1e-6):
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-6)


def sweep_values(inst: Instance, limit: str, rng: random.Random, n: int = 8) -> list[float]:
    """Values spread over the plans' own range of the swept metric, some below, some above, shuffled."""
    values = sorted(getattr(p.metrics, LIMIT_METRIC[limit]) for p in all_plans(inst) if p.metrics.fits_memory)
    if not values:
        return [1.0, 2.0]
    out = [values[int(rng.random() * len(values))] * rng.choice([0.97, 1.0 + 1e-6, 1.03]) for _ in range(n)]
    out += [values[0] * 0.5, values[-1] * 2.0]
    rng.shuffle(out)
    return [max(0.0, v) for v in out]


def assert_rows_equal_independent_solves(inst: Instance, limit: str, values: list[float], reuse: bool):
    pm = PlanModel(inst)
    before = dict(pm.limits)
    rows = run_sweep(pm, limit, values, reuse=reuse)
    assert [r.value for r in rows] == values and all(r.limit == limit for r in rows)
    assert pm.limits == before  # the swept limit is restored
    for row in rows:
        alone = PlanModel(inst.with_overrides(**{limit: row.value})).solve()
        got = row.result
        assert got.status == alone.status, (limit, row.value, got.status, alone.status)
        if alone.status == "optimal":
            obj = inst.objective
            assert close(got.metrics.objective(obj), alone.metrics.objective(obj)), (limit, row.value, got.plan, alone.plan)
            assert close(got.metrics.cost_usd, alone.metrics.cost_usd), (limit, row.value, got.plan, alone.plan)
            check = parse_instance({**inst.model_dump(), "constraints": {**inst.constraints.model_dump(), limit: row.value}})
            from planopt.models.cost.evaluator import evaluate
            assert evaluate(check, got.plan).feasible
    return rows


@pytest.mark.parametrize("seed", range(24))
def test_sweep_rows_equal_independent_solves(seed):
    rng = random.Random(seed)
    inst = parse_instance(random_instance_dict(seed))
    limit = ["budget_usd", "deadline_hours", "max_forgetting_points", "min_quality"][seed % 4]
    values = sweep_values(inst, limit, rng)
    assert_rows_equal_independent_solves(inst, limit, values, reuse=seed % 3 != 0)


def test_tiny_budget_sweep_with_quality_objective_reuses_exactly():
    raw = json.loads((INSTANCES / "tiny.json").read_text())
    inst = parse_instance({**raw, "constraints": {}, "objective": "quality"})
    values = sweep_values(inst, "budget_usd", random.Random(1), n=14)
    rows = assert_rows_equal_independent_solves(inst, "budget_usd", values, reuse=True)
    assert any(r.reused for r in rows) and not all(r.reused for r in rows)
    # more budget never lowers the best quality
    ordered = sorted((r for r in rows if r.result.metrics), key=lambda r: r.value)
    qualities = [r.result.metrics.quality for r in ordered]
    assert all(b >= a - 1e-9 for a, b in zip(qualities, qualities[1:]))


def test_parse_range():
    assert parse_range("0:10:3", "--budget-usd") == [0.0, 5.0, 10.0]
    assert parse_range("7:7:1", "--budget-usd") == [7.0]
    for bad in ["1:2", "a:2:3", "1:2:0", "5:1:3", "1:2:3.5", "1:inf:3", "1:2:3:4"]:
        with pytest.raises(InputError):
            parse_range(bad, "--budget-usd")


def test_cli_sweep_json_out_and_plot(tmp_path):
    raw = json.loads((INSTANCES / "tiny.json").read_text())
    path = tmp_path / "tiny-free.json"
    path.write_text(json.dumps({**raw, "constraints": {}}))
    csv, pq, png = tmp_path / "s.csv", tmp_path / "s.parquet", tmp_path / "s.png"
    res = CliRunner().invoke(app, ["sweep", str(path), "--budget-usd", "0:20000:9", "--objective", "quality",
                                   "--json", "--out", str(csv), "--plot", str(png)])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)  # no progress bar mixed into the JSON
    assert [r["budget_usd"] for r in data["rows"]] == [2500.0 * i for i in range(9)]
    assert data["rows"][0]["status"] == "infeasible" and data["rows"][0]["plan"] is None
    assert any(r["status"] == "optimal" for r in data["rows"])
    for r in data["rows"]:
        assert set(r) >= {"budget_usd", "status", "plan", "metrics"}
        if r["status"] == "optimal":
            assert r["metrics"]["cost_usd"] <= r["budget_usd"] * (1 + 1e-9)
    import pandas as pd
    df = pd.read_csv(csv)
    assert len(df) == 9 and {"budget_usd", "status", "cost_usd", "quality", "method", "gpu"} <= set(df.columns)
    assert png.read_bytes()[:4] == b"\x89PNG"
    res = CliRunner().invoke(app, ["sweep", str(path), "--min-quality", "30:40:5", "--out", str(pq)])
    assert res.exit_code == 0, res.output
    assert "over 5 values of the minimum quality" in res.stdout and len(pd.read_parquet(pq)) == 5


@pytest.mark.parametrize("args", [["--budget-usd", "1:2"], ["--budget-usd", "x:2:3"], [],
                                  ["--budget-usd", "1:2:3", "--deadline-hours", "1:2:3"],
                                  ["--budget-usd", "-5:2:3"], ["--budget-usd", "1:2:3", "--out", "s.txt"],
                                  ["--budget-usd", "1:2:3", "--plot", "s.jpg"]])
def test_cli_sweep_rejects_bad_arguments(args):
    res = CliRunner().invoke(app, ["sweep", str(INSTANCES / "tiny.json"), *args])
    assert res.exit_code == 2, res.output
    assert "error:" in res.output


def test_python_api_sweep_dataframe():
    import planopt
    raw = json.loads((INSTANCES / "tiny.json").read_text())
    df = planopt.sweep({**raw, "constraints": {}}, "deadline_hours", [1.0, 10.0, 100.0, 1000.0])
    assert list(df["deadline_hours"]) == [1.0, 10.0, 100.0, 1000.0]
    assert set(df["status"]) <= {"optimal", "infeasible"} and (df["status"] == "optimal").any()
    feasible = df[df["status"] == "optimal"]
    assert (feasible["wall_hours"] <= feasible["deadline_hours"] * (1 + 1e-9)).all()
    with pytest.raises(InputError):
        planopt.sweep(raw, "budget", [1.0])
