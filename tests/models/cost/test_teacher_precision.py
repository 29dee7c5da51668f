"""The teacher's precision in each sampling phase as a plan decision (issue 27, lever 6;
``teacher.precision_by_phase``).

- Each term against its formula: each phase's teacher FLOPs under its own precision (their sum the one-precision
  recipe's), its hours at its precision's rate, each phase's move towards its own ceiling
  (:math:`C_j = T (1 - \\pi(p_j))`), forgetting against the last phase's ceiling, memory of the heaviest phase.
- Off, nothing moves: the one-precision recipes and their profiles are those of an instance without the option.
- The MIP equals both oracles on random instances with the option on (30 seeds by default, 30 more under
  ``slow``), and a precision per phase is the answer somewhere and not everywhere; where it is, it pays.
- The scenario evaluator equals the evaluator per scenario on per-phase plans.
- JSON in and out, the report's row, the export's note; bad input names the field.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

from planopt.cli import app
from planopt.instance import parse_instance
from planopt.job.model import solve
from planopt.job.plan_space import plan_space
from planopt.models.catalog import defaults as d
from planopt.models.cost import learning as lc
from planopt.models.cost import physics as ph
from planopt.models.cost.evaluator import Evaluator
from planopt.models.cost.hardware import HardwareProfile
from planopt.models.cost.recipes import enumerate_recipes, profile
from planopt.models.cost.stage_outcomes import stage_outcome
from planopt.models.schema.plan import HardwareChoice, Plan, Recipe, plan_json, read_plan
from planopt.models.uncertainty import model as U
from planopt.oracles.by_plan import best_plan

from tests.support.common import INSTANCES, split_seeds
from tests.support.oracle_checks import assert_mip_equals_both_oracles, assert_scenarios_equal_the_evaluator
from tests.support.precision_instances import random_precision_instance_dict

TINY = INSTANCES / "tiny.json"
A100 = HardwareChoice("A100-80GB", 8)
MIXED = Recipe("opd", 1000, (8, 4, 4), teacher_precision_by_phase=("int8", "bf16", "bf16"))


def cli(*args):
    res = CliRunner().invoke(app, [str(a) for a in args])
    return res.exit_code, res.stdout, res.stderr


def per_phase_data(by_phase: bool = True, **constraints) -> dict:
    """tiny.json as an OPD job on 8 A100s (int8 at twice bf16's rate, no fp8 units) with every precision."""
    data = json.loads(TINY.read_text())
    data["teacher"]["precision_options"] = ["bf16", "fp8", "int8", "int4"]
    data["teacher"]["precision_by_phase"] = by_phase
    data["hardware"]["gpus"] = [{"name": "A100-80GB", "counts": [8]}]
    data["training"]["methods"] = {"opd": {"steps_options": [1000, 3000], "prompts_per_step": 256}}
    for key in ("sft_data", "reward"):
        data.pop(key)
    data["constraints"] = constraints
    return data


def per_phase(by_phase: bool = True, **constraints):
    return parse_instance(per_phase_data(by_phase, **constraints))


# --- the terms ---------------------------------------------------------------------------------

def test_each_phase_is_scored_at_its_own_precision_and_the_flops_add_up():
    inst = per_phase()
    ev = Evaluator(inst)
    mixed, uniform = profile(inst, MIXED), profile(inst, Recipe("opd", 1000, (8, 4, 4), "bf16"))
    prompts = 1000 / 3 * 256
    seq = inst.task.prompt_tokens + inst.task.response_tokens
    per_token = ph.forward_flops_per_token(inst.teacher.architecture)
    assert mixed.amounts["teacher_flops|int8"] == pytest.approx(prompts * 8 * seq * per_token, rel=1e-12)
    assert mixed.amounts["teacher_flops|bf16"] == pytest.approx(prompts * 8 * seq * per_token, rel=1e-12)   # 4 + 4
    assert mixed.flops["teacher"] == pytest.approx(uniform.flops["teacher"], rel=1e-12)
    hours = ev.compute_hours_by_component(MIXED, A100)
    int8_rate = hours["teacher_flops|int8"] / mixed.amounts["teacher_flops|int8"]
    bf16_rate = hours["teacher_flops|bf16"] / mixed.amounts["teacher_flops|bf16"]
    spec = HardwareProfile(inst, A100).gpu
    assert bf16_rate / int8_rate == pytest.approx(ph.peak_tflops(spec, "int8") / ph.peak_tflops(spec, "bf16"), rel=1e-12)
    assert bf16_rate / int8_rate == pytest.approx(2.0, rel=1e-3)   # A100: int8 tensor cores at twice bf16's rate


def test_each_phase_moves_the_score_towards_its_own_teachers_ceiling():
    inst = per_phase()
    pri = inst.priors.opd
    q = inst.task.baseline_score
    prompts = lc.phase_effective_prompts(inst, MIXED, inst.priors.prompt_repeat_scale_epochs)
    for k, p, n in zip(MIXED.samples_per_prompt, MIXED.teacher_precision_by_phase, prompts):
        ceiling = inst.teacher.score * (1 - d.TEACHER_PRECISION_SCORE_PENALTY[p])
        q += (ceiling - q) * (1 - math.exp(-n * k / pri.signal_scale_samples))
    out = profile(inst, MIXED)
    assert out.quality == pytest.approx(q, rel=1e-12)
    last = inst.teacher.score * (1 - d.TEACHER_PRECISION_SCORE_PENALTY["bf16"])
    q0 = inst.task.baseline_score
    assert out.forgetting_points == pytest.approx(
        inst.task.general_score_baseline * pri.forgetting_share_of_baseline * (q - q0) / (last - q0), rel=1e-12)
    # the int8 phase's 2 % penalty costs quality against bf16 throughout, and gains it back against int8 throughout
    assert profile(inst, Recipe("opd", 1000, (8, 4, 4), "int8")).quality < out.quality \
        < profile(inst, Recipe("opd", 1000, (8, 4, 4), "bf16")).quality


def test_a_later_stage_starts_where_the_last_ended_and_a_first_one_is_the_profile():
    inst = per_phase()
    end, forgetting = stage_outcome(inst, MIXED, inst.task.baseline_score)
    out = profile(inst, MIXED)
    assert end == pytest.approx(out.quality, rel=1e-12) and forgetting == pytest.approx(out.forgetting_points, rel=1e-12)
    # affine in its start (each phase is), so a staged plan's tabulated pairs stay exact
    a, b, c = (stage_outcome(inst, MIXED, s)[0] for s in (30.0, 40.0, 50.0))
    assert b - a == pytest.approx(c - b, rel=1e-9)


def test_the_gpus_hold_the_heaviest_phases_teacher():
    assert MIXED.memory_class == "opd:bf16" and MIXED.teacher_precision == "int8"
    assert Recipe("opd", 1, (4, 4), teacher_precision_by_phase=("int4", "int8")).memory_class == "opd:int8"
    assert Recipe("opd", 1, (4, 4), teacher_precision_by_phase=("fp8", "fp8")).teacher_precision_by_phase == ()
    data = per_phase_data()
    data["teacher"]["architecture"] = {"preset": "Llama-3.1-70B"}
    data["hardware"]["gpus"] = [{"name": "A100-80GB", "counts": [2]}]
    inst = parse_instance(data)
    tight = HardwareChoice("A100-80GB", 2)   # 70B: holds the int8 teacher (70 GB over 2 × 80 GB), not the bf16 one
    assert HardwareProfile(inst, tight).fits("opd:int8") and not HardwareProfile(inst, tight).fits("opd:bf16")
    ev = Evaluator(inst)
    assert not ev.metrics(MIXED, tight, 60.0).fits_memory
    assert ev.metrics(Recipe("opd", 1000, (8, 4, 4), teacher_precision_by_phase=("int8", "int4", "int8")),
                      tight, 60.0).fits_memory


def test_off_nothing_moves_and_on_the_one_precision_recipes_are_the_same():
    on, off = per_phase(), per_phase(by_phase=False)
    a, b = enumerate_recipes(on), enumerate_recipes(off)
    assert len(a) == 2 * 4 * 4 ** 3 and len(b) == 2 * 4 * 4   # steps × tapered schedules of {4, 8} × precisions
    assert set(b) <= set(a) and all(not r.teacher_precision_by_phase for r in b)
    assert plan_space(on).recipes == len(a) and plan_space(off).recipes == len(b)
    for r in b:
        pa, pb = profile(on, r), profile(off, r)
        assert pa.quality == pb.quality and pa.forgetting_points == pb.forgetting_points and pa.amounts == pb.amounts


# --- the decision ------------------------------------------------------------------------------

def _contract(seed: int) -> bool:
    inst = parse_instance(random_precision_instance_dict(seed))
    mip = assert_mip_equals_both_oracles(inst)
    return mip.status == "optimal" and bool(mip.plan.recipe.teacher_precision_by_phase)


@pytest.mark.parametrize("seed", split_seeds(range(60), 30))
def test_mip_equals_both_oracles_with_a_precision_per_phase(seed):
    _contract(seed)


@pytest.mark.slow  # 5 s on 2 cores (the default run's heaviest); .ci/run runs it with -m slow
def test_a_precision_per_phase_is_the_answer_somewhere_and_not_everywhere():
    chosen = [best_plan(parse_instance(random_precision_instance_dict(seed))) for seed in range(30)]
    per_phase_optima = [o for o in chosen if o.plan is not None and o.plan.recipe.teacher_precision_by_phase]
    uniform_optima = [o for o in chosen if o.plan is not None and not o.plan.recipe.teacher_precision_by_phase]
    assert len(per_phase_optima) >= 3 and len(uniform_optima) >= 3


def test_where_it_is_chosen_it_pays():
    """On A100s (int8 at twice bf16's rate, no fp8 units) at a floor of 56 from 30 (teacher 60): the optimum scores
    one phase in int8 and the others in bf16, cheaper than any one precision for the run."""
    mixed, single = solve(per_phase(min_quality=56)), solve(per_phase(by_phase=False, min_quality=56))
    assert mixed.status == single.status == "optimal"
    assert set(mixed.plan.recipe.teacher_precision_by_phase) == {"int8", "bf16"}
    assert mixed.metrics.cost_usd < single.metrics.cost_usd * (1 - 1e-3)
    assert mixed.metrics.quality >= 56


def test_scenarios_equal_the_evaluator_on_per_phase_plans():
    inst = per_phase()
    plans = [Plan.of(MIXED, A100, 60.0),
             Plan.of(Recipe("opd", 3000, (8, 8, 4), teacher_precision_by_phase=("int4", "fp8", "bf16")), A100, 240.0)]
    assert_scenarios_equal_the_evaluator(inst, U.draw(inst, 5, seed=3), plans)


# --- JSON, report, export and refusals ------------------------------------------------------------

def test_a_per_phase_plan_prints_its_precisions_and_reads_back(tmp_path):
    inst_path = tmp_path / "inst.json"
    inst_path.write_text(json.dumps(per_phase_data(min_quality=56)))
    code, out, err = cli("solve", inst_path, "--json", "--no-sensitivity")
    assert code == 0, err
    stage = json.loads(out)["plan"]["stages"][0]
    assert stage["teacher_precision"] == stage["teacher_precision_by_phase"][0]
    assert len(stage["teacher_precision_by_phase"]) == 3 and len(set(stage["teacher_precision_by_phase"])) == 2
    plan = read_plan(json.loads(out)["plan"])
    assert Plan.from_dict(plan.to_dict()) == plan and Plan.from_dict(plan.flat_dict()).stages == plan.stages
    (tmp_path / "plan.json").write_text(out)
    code, again, err = cli("evaluate", inst_path, tmp_path / "plan.json", "--json")
    assert code == 0, err
    assert json.loads(again)["metrics"]["cost_usd"] == pytest.approx(json.loads(out)["metrics"]["cost_usd"], rel=1e-9)
    code, text, _ = cli("solve", inst_path, "--no-sensitivity")
    shown = " → ".join(stage["teacher_precision_by_phase"])
    assert code == 0 and f"{shown}  (one per phase)" in text, text
    code, _, err = cli("export", tmp_path / "plan.json", "--instance", inst_path, "--to", "nemo-rl",
                       "--out", tmp_path / "task.yaml", "--json")
    assert code == 0, err
    assert "teacher precision per phase" in (tmp_path / "task.yaml").read_text()


def test_a_one_precision_plan_has_no_per_phase_field():
    plan = solve(per_phase(by_phase=False, min_quality=56)).plan
    assert "teacher_precision_by_phase" not in plan_json(plan)["stages"][0]


@pytest.mark.parametrize("edit, message", [
    (lambda s: s.update(teacher_precision_by_phase=["int8", "bf16"]), "plan.teacher_precision_by_phase: expected 3 values"),
    (lambda s: s.update(teacher_precision_by_phase=["int8", "bf16", "fp4"]), "plan.teacher_precision_by_phase: expected 3 values"),
    (lambda s: s.update(teacher_precision_by_phase=["bf16", "int8", "bf16"]), "plan.stages.0.teacher_precision_by_phase: its first"),
    (lambda s: s.update(teacher_precision_by_phase="int8"), "plan.stages.0.teacher_precision_by_phase: expected a list"),
])
def test_bad_plan_fields_name_the_field(tmp_path, edit, message):
    inst_path = tmp_path / "inst.json"
    inst_path.write_text(json.dumps(per_phase_data()))
    plan = plan_json(Plan.of(MIXED, A100, 60.0))
    edit(plan["stages"][0])
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    code, _, err = cli("evaluate", inst_path, tmp_path / "plan.json")
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err


def test_a_per_phase_plan_is_refused_where_the_instance_offers_one_precision_per_run(tmp_path):
    inst_path = tmp_path / "inst.json"
    inst_path.write_text(json.dumps(per_phase_data(by_phase=False)))
    (tmp_path / "plan.json").write_text(json.dumps(plan_json(Plan.of(MIXED, A100, 60.0))))
    code, _, err = cli("evaluate", inst_path, tmp_path / "plan.json")
    assert code == 2 and "plan.teacher_precision_by_phase: teacher.precision_by_phase is false" in err, err


@pytest.mark.parametrize("edit", [
    lambda t: t["training"].update(phases=1),
    lambda t: t["teacher"].update(precision_options=["fp8"]),
    lambda t: t["teacher"].update(precision_by_phase="yes"),
])
def test_an_option_without_a_meaning_is_refused_naming_the_field(tmp_path, edit):
    data = per_phase_data()
    edit(data)
    path = tmp_path / "inst.json"
    path.write_text(json.dumps(data))
    code, _, err = cli("solve", path)
    assert code == 2 and "teacher.precision_by_phase" in err and len(err.strip().splitlines()) == 1, err


def test_random_instances_are_reproducible():
    a, b = random_precision_instance_dict(4), random_precision_instance_dict(4)
    assert a == b and a["teacher"]["precision_by_phase"] is True
    assert np.isfinite([a["task"]["baseline_score"]]).all()
