"""The teacher's prefix cache (issue 27, lever 6: "caching teacher log-probs for repeated prompts";
``teacher.prefix_caching``, ``recipes.teacher_tokens_by_phase``).

- The term against its formula: phase j's teacher tokens P_j (t_p + k_j t_r) with the cache, P_j k_j (t_p + t_r)
  without; the FLOPs, the hours and the key quantity read them; off, nothing moves.
- With a precision per phase and asynchronous OPD, each phase's scoring stays at its own precision and in its own
  phase.
- The MIP equals both oracles on random instances with the cache on; the scenario evaluator equals the evaluator.
- A prompt longer than its response gains most: the cache never costs anything (it is the engine's accounting, not
  a plan's choice: the README says why).
"""

from __future__ import annotations

import json

import pytest

from planopt.instance import parse_instance
from planopt.models.cost import physics as ph
from planopt.models.cost.evaluator import Evaluator
from planopt.models.cost.recipes import profile, teacher_tokens_by_phase
from planopt.models.schema.plan import HardwareChoice, Plan, Recipe, Stage
from planopt.models.uncertainty import model as U
from planopt.oracles.by_plan import all_plans

from tests.support.common import INSTANCES, split_seeds
from tests.support.oracle_checks import assert_mip_equals_both_oracles, assert_scenarios_equal_the_evaluator
from tests.support.precision_instances import random_precision_instance_dict

OPD = Recipe("opd", 1000, (8, 4, 4), "fp8")
H100 = HardwareChoice("H100-SXM", 8)


def tiny(caching: bool, prompt_tokens: float | None = None) -> dict:
    d = json.loads((INSTANCES / "tiny.json").read_text())
    d["teacher"]["prefix_caching"] = caching
    if prompt_tokens is not None:
        d["task"]["prompt_tokens"] = prompt_tokens
    return d


def test_the_teacher_scores_a_groups_prompt_once_with_the_cache():
    off, on = parse_instance(tiny(False)), parse_instance(tiny(True))
    t = on.task
    prompts = 1000 / on.training.phases * on.training.methods["opd"].prompts_per_step
    assert teacher_tokens_by_phase(on, OPD) == pytest.approx(
        [prompts * (t.prompt_tokens + k * t.response_tokens) for k in (8, 4, 4)], rel=1e-12)
    assert teacher_tokens_by_phase(off, OPD) == pytest.approx(
        [prompts * k * (t.prompt_tokens + t.response_tokens) for k in (8, 4, 4)], rel=1e-12)
    per_token = ph.forward_flops_per_token(on.teacher.architecture)
    assert profile(on, OPD).flops["teacher"] == pytest.approx(sum(teacher_tokens_by_phase(on, OPD)) * per_token, rel=1e-12)
    saved = sum(teacher_tokens_by_phase(off, OPD)) - sum(teacher_tokens_by_phase(on, OPD))
    assert saved == pytest.approx(prompts * t.prompt_tokens * (8 - 1 + 4 - 1 + 4 - 1), rel=1e-12)


def test_the_hours_and_the_key_quantity_read_the_cached_tokens_and_nothing_else_moves():
    off, on = Evaluator(parse_instance(tiny(False))), Evaluator(parse_instance(tiny(True)))
    plan = Plan((Stage(OPD, H100),), 60.0)
    h_off, h_on = off.compute_hours_by_component(OPD, H100), on.compute_hours_by_component(OPD, H100)
    teacher = [k for k in h_off if k.startswith("teacher_flops")]
    assert teacher and all(h_on[k] < h_off[k] for k in teacher)
    ratio = sum(teacher_tokens_by_phase(on.inst, OPD)) / sum(teacher_tokens_by_phase(off.inst, OPD))
    assert sum(h_on[k] for k in teacher) == pytest.approx(ratio * sum(h_off[k] for k in teacher), rel=1e-9)
    assert {k: v for k, v in h_on.items() if k not in teacher} == pytest.approx(
        {k: v for k, v in h_off.items() if k not in teacher}, rel=1e-12)
    m_off, m_on = off.plan_metrics(plan), on.plan_metrics(plan)
    assert m_on.cost_usd < m_off.cost_usd and m_on.quality == m_off.quality and m_on.forgetting_points == m_off.forgetting_points
    assert m_on.quantities["teacher_tokens_scored"] == pytest.approx(sum(teacher_tokens_by_phase(on.inst, OPD)), rel=1e-12)
    assert m_off.quantities["teacher_tokens_scored"] == pytest.approx(sum(teacher_tokens_by_phase(off.inst, OPD)), rel=1e-12)
    assert m_on.quantities["tokens_sampled"] == m_off.quantities["tokens_sampled"]


def test_off_the_profiles_are_those_of_an_instance_without_the_field():
    d = tiny(False)
    d["teacher"].pop("prefix_caching")
    bare, off = parse_instance(d), parse_instance(tiny(False))
    assert profile(bare, OPD).amounts == profile(off, OPD).amounts


def test_each_phase_keeps_its_precision_and_its_phase_under_asynchronous_opd():
    d = tiny(True, prompt_tokens=2000)
    d["teacher"]["precision_options"] = ["bf16", "fp8"]
    d["teacher"]["precision_by_phase"] = True
    inst = parse_instance(d)
    mixed = Recipe("opd", 1000, (8, 4, 4), teacher_precision_by_phase=("fp8", "bf16", "bf16"))
    tokens = teacher_tokens_by_phase(inst, mixed)
    per_token = ph.forward_flops_per_token(inst.teacher.architecture)
    amounts = profile(inst, mixed).amounts
    assert amounts["teacher_flops|fp8"] == pytest.approx(tokens[0] * per_token, rel=1e-12)
    assert amounts["teacher_flops|bf16"] == pytest.approx((tokens[1] + tokens[2]) * per_token, rel=1e-12)
    from planopt.models.cost.recipes import _split_by_phase
    from planopt.models.cost.asynchronous import PHASE_MARK
    split = _split_by_phase(inst, mixed, {"teacher_flops|bf16": amounts["teacher_flops|bf16"]}, PHASE_MARK)
    assert sorted(split.values()) == pytest.approx(sorted([tokens[1] * per_token, tokens[2] * per_token]), rel=1e-12)


@pytest.mark.parametrize("seed", split_seeds(range(16), 6))
def test_mip_equals_both_oracles_with_the_cache(seed):
    d = random_precision_instance_dict(seed)
    d["teacher"]["prefix_caching"] = True
    d["task"]["prompt_tokens"] = max(d["task"]["prompt_tokens"], d["task"]["response_tokens"])  # the cache matters
    assert_mip_equals_both_oracles(parse_instance(d))


def test_scenarios_equal_the_evaluator_with_the_cache():
    inst = parse_instance(tiny(True, prompt_tokens=2000))
    plans = [sp.plan for sp in all_plans(inst)[:40]]
    assert_scenarios_equal_the_evaluator(inst, U.draw(inst, 20, seed=3), plans)


@pytest.mark.parametrize("field", ["prefix_caching", "precision_by_phase"])
def test_an_opd_scoring_option_without_opd_is_refused_in_one_line(tmp_path, field):
    """The teacher scores only OPD's samples: either option on a job without OPD would be silently inert."""
    from tests.support.common import refused
    name = "qwen3-8b-math-teacher-precision-by-phase.json" if field == "precision_by_phase" else "tiny.json"
    data = json.loads((INSTANCES / name).read_text())
    data["teacher"][field] = True
    parse_instance(data)   # with OPD: accepted
    data["training"]["methods"].pop("opd")
    data["training"].pop("stage_sequences", None)
    line = refused(tmp_path, data, f"teacher.{field}")
    assert "training.methods has no 'opd'" in line
