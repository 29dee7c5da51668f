"""The single-job output contract: `planopt schema --kind result`, and real outputs of every shipped instance hold to it."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from planopt.cli import app
from planopt.report.result_schema import EvaluateResultSchema, ResultSchema, SolveResultSchema
from planopt.job.model import RESULT_VERSION

from tests.support.common import INSTANCES

runner = CliRunner()
JOBS = sorted(p for p in INSTANCES.glob("*.json") if json.loads(p.read_text()).get("kind") != "portfolio")


def _json(args: list[str], codes=(0,)) -> dict:
    res = runner.invoke(app, args)
    assert res.exit_code in codes, (args, res.output)
    return json.loads(res.stdout)


def test_the_schema_is_published_with_a_version_and_both_shapes():
    schema = _json(["schema", "--kind", "result"])
    assert schema["$id"] == f"planopt/result/{RESULT_VERSION}"
    shapes = {ref["$ref"].rsplit("/", 1)[-1] for ref in schema["anyOf"]}
    assert shapes == {"SolveResultSchema", "EvaluateResultSchema"}
    for shape in shapes:
        props = schema["$defs"][shape]["properties"]
        assert props["version"]["const"] == RESULT_VERSION
        assert "version" in schema["$defs"][shape]["required"]
    assert {"status", "plan", "metrics", "gap"} <= set(schema["$defs"]["SolveResultSchema"]["required"])


def test_an_unknown_kind_names_the_new_one():
    res = runner.invoke(app, ["schema", "--kind", "results"])
    assert res.exit_code == 2
    assert "'result'" in res.output


@pytest.mark.parametrize("path", JOBS, ids=lambda p: p.stem)
def test_every_shipped_instance_solves_and_evaluates_to_the_schema(path, tmp_path):
    out = _json(["solve", str(path), "--json"], codes=(0, 3))
    parsed = SolveResultSchema.model_validate(out)
    ResultSchema.model_validate(out)
    assert parsed.version == RESULT_VERSION
    if parsed.status == "infeasible":
        assert parsed.plan is None and parsed.relaxations, out   # the infeasible shape: relaxations, no plan
        return
    # every plan's risk, a trained teacher's too (its plan priced in each scenario: test_teacher_stage.py)
    assert parsed.status == "optimal" and parsed.plan is not None and parsed.risk is not None
    # the plan read back by evaluate: its output holds to the other shape
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps(out))
    ev = _json(["evaluate", str(path), str(plan_file), "--json"])
    EvaluateResultSchema.model_validate(ev)
    ResultSchema.model_validate(ev)
    assert ev["plan"] == out["plan"] and ev["fits_memory"] and ev["feasible"]


def test_a_chance_constrained_solve_and_a_risk_evaluation_hold_to_the_schema(tmp_path):
    tiny = INSTANCES / "tiny.json"
    out = _json(["solve", str(tiny), "--json", "--confidence", "0.8"])
    parsed = SolveResultSchema.model_validate(out)
    assert parsed.risk is not None and out["risk"]["confidence"] == 0.8
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps(out["plan"]))
    ev = _json(["evaluate", str(tiny), str(plan_file), "--json", "--scenarios", "50"])
    assert EvaluateResultSchema.model_validate(ev).risk.scenarios == 50


def test_the_schema_refuses_an_output_missing_a_key_or_with_another_version():
    out = _json(["solve", str(INSTANCES / "tiny.json"), "--json"])
    for broken in ({k: v for k, v in out.items() if k != "plan"},
                   {**out, "version": "0.9"},
                   {**out, "plan": {k: v for k, v in out["plan"].items() if k != "checkpoint_interval_minutes"}},
                   {**out, "plan": {**out["plan"], "stages": [{k: v for k, v in out["plan"]["stages"][0].items() if k != "gpu_count"}]}}):
        with pytest.raises(ValidationError):
            SolveResultSchema.model_validate(broken)
