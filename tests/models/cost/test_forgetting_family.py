"""Forgetting by benchmark family (issue 24, item 4): each family of the general score has its own SFT
forgetting share from a published figure, the mix curve does not collapse below the shares it was measured at,
an unknown family is refused in one line, and the default family keeps today's numbers."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

from planopt.cli import app
from planopt.models.catalog import defaults as d
from planopt.models.catalog import spreads as sp
from planopt.models.cost import learning as lc
from planopt.models.cost.evaluator import Evaluator
from planopt.models.schema.instance import Instance
from planopt.models.schema.plan import Recipe
from planopt.models.uncertainty import model as U
from planopt.models.uncertainty.scenarios import ScenarioEvaluator
from tests.support.common import INSTANCES

runner = CliRunner()
DOMAIN = INSTANCES / "llama-70b-domain-injection.json"


def raw(path=DOMAIN) -> dict:
    return json.loads(path.read_text())


def with_family(family: str | None, path=DOMAIN) -> Instance:
    data = raw(path)
    if family is not None:
        data["task"]["general_score_family"] = family
    return Instance.model_validate(data)


def test_each_family_share_is_its_sources_arithmetic():
    shares = d.SFT_FORGETTING_SHARE_OF_BASELINE_BY_FAMILY
    assert set(shares) == set(d.GENERAL_SCORE_FAMILIES) == set(d.SFT_FORGETTING_MIX_EXPONENT_BY_FAMILY)
    assert set(shares) == set(sp.FACTOR_FORGETTING_SFT_BY_FAMILY) == set(sp.FACTOR_SFT_MIX_EXPONENT_BY_FAMILY)
    # TML personalisation: IF-eval 85 -> 45 at 100 % new-domain data, 85 -> 79 at 70 %
    assert shares["instruction_following"] == pytest.approx((85.0 - 45.0) / 85.0)
    assert d.SFT_FORGETTING_MIX_EXPONENT_BY_FAMILY["instruction_following"] == pytest.approx(
        math.log(6.0 / 40.0) / math.log(0.7), abs=0.005)
    # Biderman et al. 2024 Fig. 3: mean of HellaSwag, ARC-C, WinoGrande 0.645 -> 0.57 (math IFT), a 0.195 drop (code IFT)
    assert shares["knowledge"] == pytest.approx(math.sqrt((0.645 - 0.57) / 0.645 * 0.195 / 0.645))
    # DeepSeekMath Table 7: HumanEval 25.0 -> 12.2, MBPP 40.0 -> 17.0 after math only; MBPP 39.4 with math at 150/550
    assert shares["coding"] == pytest.approx(math.sqrt((25.0 - 12.2) / 25.0 * (40.0 - 17.0) / 40.0))
    assert d.SFT_FORGETTING_MIX_EXPONENT_BY_FAMILY["coding"] == pytest.approx(
        math.log(0.6 / 23.0) / math.log(150.0 / 550.0))
    for family, share in shares.items():
        assert with_family(family).priors.sft.forgetting_share_of_baseline == pytest.approx(share)
        assert with_family(family).priors.sft_forgetting_mix_exponent == d.SFT_FORGETTING_MIX_EXPONENT_BY_FAMILY[family]


@pytest.mark.parametrize("family", d.GENERAL_SCORE_FAMILIES)
def test_a_saturated_sft_run_on_new_data_only_forgets_its_familys_share(family):
    inst = with_family(family)
    ev = Evaluator(inst)
    steps = max(inst.training.methods["sft"].steps_options)
    full = ev.recipe(Recipe("sft", steps, (), None, 1.0)).forgetting_points
    examples = steps * inst.training.methods["sft"].prompts_per_step
    saturation = 1.0 - math.exp(-examples / inst.priors.sft_forgetting_scale_samples)
    assert full == pytest.approx(inst.task.general_score_baseline * d.SFT_FORGETTING_SHARE_OF_BASELINE_BY_FAMILY[family]
                                 * saturation)


@pytest.mark.parametrize("family", d.GENERAL_SCORE_FAMILIES)
def test_small_shares_forget_a_sourced_non_negligible_amount(family):
    alpha = d.SFT_FORGETTING_MIX_EXPONENT_BY_FAMILY[family]
    measured = d.SFT_FORGETTING_MIX_MEASURED_SHARE_MIN_BY_FAMILY[family]
    assert lc.sft_mix_factor(1.0, alpha, measured) == pytest.approx(1.0)
    # below the smallest measured share, linear in the share from the measured point
    assert lc.sft_mix_factor(0.2, alpha, measured) == pytest.approx(measured ** alpha * 0.2 / measured)
    assert lc.sft_mix_factor(0.2, alpha, measured) > 0.015 > 50 * 0.2 ** 5.32
    shares = np.linspace(0.01, 1.0, 200)
    assert np.all(np.diff(lc.sft_mix_factor(shares, alpha, measured)) > 0)
    assert lc.sft_mix_factor(measured - 1e-9, alpha, measured) == pytest.approx(lc.sft_mix_factor(measured, alpha, measured))
    # the scenario model's arrays of exponents take the same curve element by element
    drawn = np.array([0.8, 1.0, 1.2]) * alpha
    assert np.allclose(lc.sft_mix_factor(0.3, drawn, measured), [lc.sft_mix_factor(0.3, a, measured) for a in drawn])


def test_the_measured_mix_points_are_reproduced():
    # TML: 6 of 40 points at 70 % new-domain data; DeepSeekMath: 0.6 of 23 MBPP points at 150/550
    assert lc.sft_mix_factor(0.7, d.SFT_FORGETTING_MIX_EXPONENT_IF, 0.7) == pytest.approx(6.0 / 40.0, rel=0.01)
    coding = (d.SFT_FORGETTING_MIX_EXPONENT_CODING, d.SFT_FORGETTING_MIX_SHARE_CODING_MIXED)
    assert lc.sft_mix_factor(150.0 / 550.0, *coding) == pytest.approx(0.6 / 23.0)
    # at 20 % new-domain data the old power law kept 2e-4 of full forgetting; the curve keeps 2 % or more
    for family in d.GENERAL_SCORE_FAMILIES:
        kept = lc.sft_mix_factor(0.2, d.SFT_FORGETTING_MIX_EXPONENT_BY_FAMILY[family],
                                 d.SFT_FORGETTING_MIX_MEASURED_SHARE_MIN_BY_FAMILY[family])
        assert kept > 100 * 0.2 ** 5.32


def test_an_unknown_family_is_one_line_naming_the_field_and_the_families(tmp_path):
    data = raw()
    data["task"]["general_score_family"] = "math"
    path = tmp_path / "job.json"
    path.write_text(json.dumps(data))
    for command in ("solve", "validate"):
        res = runner.invoke(app, [command, str(path)])
        assert res.exit_code == 2, res.output
        lines = res.stderr.strip().splitlines()
        assert len(lines) == 1
        assert "task.general_score_family" in lines[0] and "'math'" in lines[0]
        for family in d.GENERAL_SCORE_FAMILIES:
            assert f"'{family}'" in lines[0]


def test_the_default_family_keeps_todays_numbers():
    assert d.GENERAL_SCORE_FAMILY_DEFAULT == "instruction_following"
    assert d.SFT_FORGETTING_SHARE_OF_BASELINE == pytest.approx(40.0 / 85.0)
    assert d.SFT_FORGETTING_MIX_EXPONENT == 5.32
    plain, named = with_family(None), with_family("instruction_following")
    assert plain.priors == named.priors
    ev_plain, ev_named = Evaluator(plain), Evaluator(named)
    for share in plain.sft_data.external_data_share_options:
        if share < d.SFT_FORGETTING_MIX_MEASURED_SHARE_MIN_IF:
            continue  # the curve below the measured shares is new (issue 24, item 4)
        r = Recipe("sft", max(plain.training.methods["sft"].steps_options), (), None, share)
        today = (plain.task.general_score_baseline * 40.0 / 85.0 * share ** 5.32
                 * (1 - math.exp(-r.steps * plain.training.methods["sft"].prompts_per_step / d.SFT_FORGETTING_SCALE_SAMPLES)))
        assert ev_plain.recipe(r).forgetting_points == pytest.approx(today)
        assert ev_named.recipe(r).forgetting_points == pytest.approx(today)


def test_the_shipped_forgetting_case_still_reproduces_tml():
    from planopt.uncertainty.calibrate import calibrate_case
    rows = calibrate_case(INSTANCES / "calibration" / "tml-personalization-forgetting.json")
    assert [round(r.predicted, 2) for r in rows] == [40.0, 6.0]


def test_given_priors_are_kept_whatever_the_family():
    data = raw()
    data["task"]["general_score_family"] = "knowledge"
    data["priors"] = {"sft": {"signal_scale_samples": d.SFT_SIGNAL_SCALE_SAMPLES, "ceiling_share_of_headroom": 0.7,
                              "forgetting_share_of_baseline": 0.3}, "sft_forgetting_mix_exponent": 2.0}
    inst = Instance.model_validate(data)
    assert inst.priors.sft.forgetting_share_of_baseline == 0.3
    assert inst.priors.sft_forgetting_mix_exponent == 2.0
    data["priors"] = {"sft_forgetting_mix_exponent": 2.0}
    inst = Instance.model_validate(data)
    assert inst.priors.sft.forgetting_share_of_baseline == pytest.approx(d.SFT_FORGETTING_SHARE_KNOWLEDGE_OF_BASELINE)
    assert inst.priors.sft_forgetting_mix_exponent == 2.0


def test_a_candidate_student_of_another_family_forgets_its_own_share():
    data = raw(INSTANCES / "math-8b-or-32b.json")
    assert data["task"].get("general_score_family") is None
    data["candidate_students"][0]["general_score_family"] = "knowledge"
    inst = Instance.model_validate(data)
    name = data["candidate_students"][0]["name"]
    own = inst.for_student(name)
    assert own.task.general_score_family == "knowledge"
    assert own.priors.sft.forgetting_share_of_baseline == pytest.approx(d.SFT_FORGETTING_SHARE_KNOWLEDGE_OF_BASELINE)
    assert inst.for_student(inst.student_name).priors.sft.forgetting_share_of_baseline == pytest.approx(40 / 85)
    if "sft" in inst.training.methods:
        sc = U.draw(inst, 64, seed=3)
        se = ScenarioEvaluator(Evaluator(inst), sc).for_student(name)
        drawn = se.value("priors.sft.forgetting_share_of_baseline", 0.0)
        ratio = d.SFT_FORGETTING_SHARE_KNOWLEDGE_OF_BASELINE / d.SFT_FORGETTING_SHARE_IF_OF_BASELINE
        assert np.allclose(drawn, sc.values["priors.sft.forgetting_share_of_baseline"] * ratio)


@pytest.mark.parametrize("family", d.GENERAL_SCORE_FAMILIES)
def test_scenarios_draw_the_familys_share_with_its_spread(family):
    inst = with_family(family)
    params = {p.name: p for p in U.default_parameters(inst)}
    p = params["priors.sft.forgetting_share_of_baseline"]
    low, high = sp.FACTOR_FORGETTING_SFT_BY_FAMILY[family]
    share = d.SFT_FORGETTING_SHARE_OF_BASELINE_BY_FAMILY[family]
    assert (p.point, p.low, p.high) == pytest.approx((share, share * low, share * high))
    assert family in p.source


@pytest.mark.slow  # long (20-60 s on 2 cores); .ci/run runs it with -m slow
def test_scenarios_of_a_candidate_of_another_family_equal_the_evaluator():
    from planopt.oracles.by_plan import all_plans
    from tests.support.oracle_checks import assert_scenarios_equal_the_evaluator
    data = raw(INSTANCES / "math-8b-or-32b.json")
    data["candidate_students"][0]["general_score_family"] = "coding"
    data["task"]["general_score_family"] = "knowledge"
    inst = Instance.model_validate(data)
    name = data["candidate_students"][0]["name"]
    plans = [sp_.plan for sp_ in all_plans(inst) if sp_.plan.stages[0].recipe.method == "sft"]
    plans = [p for p in plans if p.student == name][:3] + [p for p in plans if p.student != name][:2]
    assert plans and any(p.student == name for p in plans)
    assert_scenarios_equal_the_evaluator(inst, U.draw(inst, 16, seed=5), plans)
    # the candidate's point priors are the coding family's, whatever the task's family
    own = inst.for_student(name).priors
    assert own.sft.forgetting_share_of_baseline == pytest.approx(d.SFT_FORGETTING_SHARE_CODING_OF_BASELINE)
    assert own.sft_forgetting_mix_exponent == pytest.approx(d.SFT_FORGETTING_MIX_EXPONENT_CODING)
