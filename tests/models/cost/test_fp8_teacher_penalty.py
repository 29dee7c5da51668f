"""The error of fp8 teacher scoring (issue 27, lever 6): a point 0 with a sourced spread in the scenario model.

- The point is 0 and the prior reads and overrides like any other (``priors.fp8_teacher_score_penalty``); a value
  given moves the ceiling of every fp8 phase by its formula, :math:`C = T (1 - \\pi)`, and nothing else.
- The scenario model draws it where an OPD plan may score in fp8, and only there: additive, a normal centred on the
  point 0 with P10-P90 -0.86 %-0.86 % (``spreads.ABSOLUTE_FP8_TEACHER_SCORE_PENALTY``) clipped at 0, so the point is
  its median and lies within its own P10-P90; its group is drawn after the others, so every other draw of a seed
  stays.
- The scenario evaluator equals the evaluator per scenario on fp8 plans, one-stage and staged.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from planopt.instance import parse_instance
from planopt.models.catalog import defaults as d
from planopt.models.catalog import spreads as sp
from planopt.models.cost import learning as lc
from planopt.models.cost.evaluator import Evaluator
from planopt.models.cost.recipes import enumerate_recipes
from planopt.models.schema.plan import HardwareChoice, Plan, Recipe, Stage
from planopt.models.uncertainty import model as U
from planopt.models.uncertainty.scenarios import ScenarioEvaluator

from tests.support.common import INSTANCES
from tests.support.oracle_checks import assert_scenarios_equal_the_evaluator

TINY = INSTANCES / "tiny.json"
H100 = HardwareChoice("H100-SXM", 8)
FP8 = Recipe("opd", 1000, (8, 4, 4), "fp8")
BF16 = Recipe("opd", 1000, (8, 4, 4), "bf16")
NAME = "priors.fp8_teacher_score_penalty"


def tiny(**priors):
    data = json.loads(TINY.read_text())
    data.setdefault("priors", {}).update(priors)
    return parse_instance(data)


def test_the_point_is_zero_and_a_given_value_lowers_only_the_fp8_ceiling():
    assert d.TEACHER_PRECISION_SCORE_PENALTY["fp8"] == 0.0
    base, given = tiny(), tiny(fp8_teacher_score_penalty=0.003)
    assert base.priors.fp8_teacher_score_penalty == 0.0
    teacher = base.teacher.score
    assert lc.phase_ceilings(base, FP8, 1.0) == [teacher] * 3
    assert lc.phase_ceilings(given, FP8, 1.0) == pytest.approx([teacher * (1 - 0.003)] * 3, rel=1e-15)
    assert lc.phase_ceilings(given, BF16, 1.0) == [teacher] * 3
    q_base = Evaluator(base).evaluate(Plan.of(FP8, H100, 240.0)).quality
    q_given = Evaluator(given).evaluate(Plan.of(FP8, H100, 240.0)).quality
    assert q_given < q_base
    assert Evaluator(given).evaluate(Plan.of(BF16, H100, 240.0)).quality == Evaluator(base).evaluate(
        Plan.of(BF16, H100, 240.0)).quality


def test_the_spread_is_the_sourced_one_and_only_where_fp8_scores_an_opd_plan():
    (p,) = [p for p in U.parameters(tiny()) if p.name == NAME]
    assert (p.point, p.low, p.high) == (0.0, *sp.ABSOLUTE_FP8_TEACHER_SCORE_PENALTY) == (0.0, -0.0086, 0.0086)
    assert p.additive and p.median == 0.0
    assert p.quantile(0.1) == 0.0 == p.quantile(0.5) and p.quantile(0.9) == pytest.approx(0.0086)
    assert p.quantile(0.1) <= p.point <= p.quantile(0.9)   # the point within its own interval
    z = np.random.default_rng(0).standard_normal(200_000)   # a normal clipped at 0: half at 0, mean σ/√(2π)
    v = p.values(z)
    assert np.mean(v == 0.0) == pytest.approx(0.5, abs=0.01)
    assert v.mean() == pytest.approx(p.sigma / np.sqrt(2 * np.pi), rel=0.02) and v.min() == 0.0
    data = json.loads(TINY.read_text())
    data["teacher"]["precision_options"] = ["bf16"]
    assert NAME not in {p.name for p in U.parameters(parse_instance(data))}
    data = json.loads(TINY.read_text())
    data["training"]["methods"].pop("opd")
    assert NAME not in {p.name for p in U.parameters(parse_instance(data))}
    given = [p for p in U.parameters(tiny(fp8_teacher_score_penalty=0.01)) if p.name == NAME][0]
    assert (given.point, given.low) == (0.01, None)   # the user's measured value is a point


def test_its_group_draws_last_so_every_other_draw_of_a_seed_stays():
    without = json.loads(TINY.read_text())
    without["teacher"]["precision_options"] = ["bf16"]
    a, b = U.draw(tiny(), 64, seed=5), U.draw(parse_instance(without), 64, seed=5)
    assert set(a.values) - set(b.values) == {NAME}
    for name, values in b.values.items():
        assert np.array_equal(a.values[name], values), name
    assert np.all(a.values[NAME] >= 0) and np.any(a.values[NAME] > 0) and np.any(a.values[NAME] == 0)


def test_a_drawn_penalty_costs_an_fp8_plan_quality_and_not_a_bf16_one():
    inst = tiny()
    se = ScenarioEvaluator(Evaluator(inst), U.draw(inst, 32, seed=1))
    q_fp8, _ = se.outcomes(FP8)
    q_bf16, _ = se.outcomes(BF16)
    point = Evaluator(inst).evaluate(Plan.of(FP8, H100, 240.0)).quality
    assert np.ptp(q_fp8) > 0
    assert np.all(q_fp8 < q_bf16 + 1e-12) and np.any(q_fp8 < point - 1e-3)


def test_scenarios_equal_the_evaluator_on_fp8_plans_one_stage_and_staged():
    data = json.loads(TINY.read_text())
    data["training"]["stage_sequences"] = [["opd"], ["sft", "opd"]]
    inst = parse_instance(data)
    sft = next(r for r in enumerate_recipes(inst) if r.method == "sft")
    plans = [Plan.of(FP8, H100, 240.0), Plan((Stage(sft, H100), Stage(FP8, H100)), 240.0)]
    scenarios = U.draw(inst, 4, seed=2)
    assert NAME in scenarios.values
    assert_scenarios_equal_the_evaluator(inst, scenarios, plans)
