"""Evaluation frequency at the command line (issue 27, lever 3, blocked on a source): ``evaluation.every_steps`` is
an input, not a decision. An interval that is not a whole number of steps, or not positive, is one line naming the
field (exit 2); a list of candidate intervals is refused as an unknown field rather than silently dropped; and
switching evaluation off changes the plan's money and hours but not its quality, the limitation the README states
(``models/catalog/reference/post-training.md`` §7)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from planopt.cli import app
from planopt.instance import parse_instance
from planopt.job.model import solve
from planopt.models.cost.evaluator import Evaluator

from tests.support.common import INSTANCES

runner = CliRunner()


def _write(tmp_path, evaluation: dict):
    doc = json.loads((INSTANCES / "tiny.json").read_text())
    doc["evaluation"] = evaluation
    path = tmp_path / "job.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize("evaluation, line", [
    ({"every_steps": 12.5}, "evaluation.every_steps: Input should be a valid integer (got 12.5)"),
    ({"every_steps": 10.0}, "evaluation.every_steps: Input should be a valid integer (got 10.0)"),
    ({"every_steps": "ten"}, "evaluation.every_steps: Input should be a valid integer (got 'ten')"),
    ({"every_steps": 0}, "evaluation.every_steps: Input should be greater than or equal to 1 (got 0)"),
    ({"every_steps": -10}, "evaluation.every_steps: Input should be greater than or equal to 1 (got -10)"),
    ({"every_steps_options": [10, 50]}, "evaluation.every_steps_options: unknown field: did you mean 'every_steps'?"),
])
@pytest.mark.parametrize("command", ["validate", "solve"])
def test_a_bad_evaluation_interval_is_one_line_naming_the_field(tmp_path, evaluation, line, command):
    path = _write(tmp_path, evaluation)
    res = runner.invoke(app, [command, str(path)])
    assert res.exit_code == 2, res.output
    assert res.stderr == f"error: {path}: {line}\n"


def test_switching_evaluation_off_saves_its_gpu_time_and_nothing_prices_the_score():
    """The same plan with and without validation runs: cost and hours fall by the evaluation lines (and the
    operations of the shorter wall time), quality and forgetting do not move. When a sourced score-lost term is
    added, this test fails on purpose and the README's paragraph must change with it."""
    doc = json.loads((INSTANCES / "qwen3-8b-math.json").read_text())
    on = parse_instance(doc)
    off = parse_instance({**doc, "evaluation": {"every_steps": None}})
    plan = solve(on).plan
    m_on, m_off = Evaluator(on).evaluate(plan), Evaluator(off).evaluate(plan)
    assert m_on.cost_breakdown_usd["evaluation"] > 0 and m_off.cost_breakdown_usd["evaluation"] == 0
    assert m_on.hours_breakdown["evaluation"] > 0 and m_off.hours_breakdown.get("evaluation", 0.0) == 0
    assert m_off.cost_usd < m_on.cost_usd and m_off.wall_hours < m_on.wall_hours
    assert m_off.quality == m_on.quality and m_off.forgetting_points == m_on.forgetting_points
    assert m_on.quantities["evaluations_run"] == plan.stages[0].recipe.steps // 10
    assert m_off.quantities["evaluations_run"] == 0
