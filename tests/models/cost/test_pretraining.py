"""Continued pre-training (issue 27, lever 7; ``models/cost/pretraining.py``): each term against its formula, the MIP
against both oracles on random jobs with it on, the scenario evaluator against the evaluator, the plan's JSON, the
report and the refusals."""

from __future__ import annotations

import copy
import json
import math
import random

import pytest
from typer.testing import CliRunner

from planopt.cli import app
from planopt.instance import load_instance, parse_instance
from planopt.models.catalog import defaults as d
from planopt.models.catalog import spreads as sp
from planopt.models.cost import physics as ph
from planopt.models.cost import pretraining as pt
from planopt.models.cost import trainer as tr
from planopt.models.cost.evaluator import Evaluator
from planopt.models.cost.stage_outcomes import stage_outcome
from planopt.models.schema.plan import Plan, read_plan
from planopt.models.uncertainty import model as U
from planopt.oracles.by_plan import all_plans, space_size

from tests.support.common import INSTANCES, refused, split_seeds
from tests.support.layered_instances import pretraining_block
from tests.support.oracle_checks import assert_mip_equals_both_oracles, assert_scenarios_equal_the_evaluator, close
from tests.support.random_instances import random_job_dict, with_drawn_limits

SHIPPED = INSTANCES / "math-8b-pretrained-or-32b.json"


def _cpt_job(seed: int) -> dict | None:
    """A small random one-stage job with continued pre-training on and limits drawn from its own plans."""
    rng = random.Random(440_000 + seed)
    d_ = random_job_dict(rng, f"cpt-{seed}")
    d_["hardware"]["gpus"] = d_["hardware"]["gpus"][:1]
    d_["continued_pretraining"] = pretraining_block(rng)
    try:
        inst = parse_instance(d_)
    except ValueError:
        return None
    if space_size(inst) > 1500:
        return None
    return with_drawn_limits(d_, all_plans(inst), rng)


SEEDS = [s for s in range(45) if _cpt_job(s) is not None][:30]


def _shipped():
    return load_instance(SHIPPED)


def _plan(inst, tokens: float, student: str = "Qwen3-8B") -> Plan:
    ev = Evaluator(inst).for_student(student)
    recipes, hardware, intervals = ev.space()
    r = next(r for r in recipes if r.method == "opd" and r.steps == 400 and r.pretraining_tokens == tokens
             and r.teacher_precision == "fp8" and r.samples_per_prompt == (16, 16, 16))
    h = next(h for h in hardware if h.gpu == "MI300X" and h.count == 32)
    return Plan.of(r, h, intervals[-1], student=student)


def test_the_flops_are_six_n_t_and_eight_with_recomputation():
    arch = _shipped().for_student("Qwen3-8B").student
    n = arch.active_params_b * 1e9
    assert pt.model_flops(arch, 5e9) == pytest.approx(6.0 * n * 5e9, rel=1e-12)
    assert pt.pretrain_flops(arch, 5e9, False) == pytest.approx(6.0 * n * 5e9, rel=1e-12)
    assert pt.pretrain_flops(arch, 5e9, True) == pytest.approx(8.0 * n * 5e9, rel=1e-12)
    moe = load_instance(INSTANCES / "qwen3-8b-math.json").model_copy().student.model_copy(
        update={"params_b": 30.5, "active_params_b": 3.3})
    assert pt.model_flops(moe, 1e9) == pytest.approx(6.0 * 3.3e9 * 1e9, rel=1e-12)   # a MoE's active parameters


def test_the_hours_are_the_flops_at_the_hardware_s_training_speed():
    inst = _shipped().for_student("Qwen3-8B")
    plan = _plan(_shipped(), 5e9)
    ev = Evaluator(inst)
    by = ev.compute_hours_by_component(plan.recipe, plan.hardware)
    hp = ev.hardware(plan.hardware)
    per_flop = ph.compute_seconds(1.0, inst.student, hp.gpu, 32, inst.efficiency) / tr.train_speed(None)
    flops = pt.pretrain_flops(inst.student, 5e9, inst.training.activation_recompute)
    assert by[pt.PRETRAIN_KEY] == pytest.approx(flops * per_flop / 3600.0, rel=1e-12)
    without = ev.compute_hours_by_component(_plan(_shipped(), 0.0).recipe, plan.hardware)
    assert pt.PRETRAIN_KEY not in without
    assert ev.compute_hours(plan.recipe, plan.hardware) == pytest.approx(
        ev.compute_hours(_plan(_shipped(), 0.0).recipe, plan.hardware) + by[pt.PRETRAIN_KEY], rel=1e-12)


def test_the_corpus_is_in_the_data_line():
    inst = _shipped()
    a, b = (Evaluator(inst).evaluate(_plan(inst, t)) for t in (5e9, 0.0))
    assert a.cost_breakdown_usd["data"] - b.cost_breakdown_usd["data"] == pytest.approx(5.0 * 100.0, rel=1e-12)
    assert a.pretraining["data_usd"] == pytest.approx(500.0)


def test_the_start_score_follows_the_relation_and_the_stage_runs_from_it():
    inst = _shipped().for_student("Qwen3-8B")
    block, q0, top = inst.continued_pretraining, inst.task.baseline_score, inst.task.score_ceiling
    n = inst.student.params_b * 1e9
    for tokens in (1e9, 5e9, 2e10):
        share = d.CPT_HEADROOM_SHARE * (1.0 - math.exp(-tokens / (d.CPT_TOKENS_PER_PARAMETER_SCALE * n)))
        assert pt.start_score(inst, tokens, q0) == pytest.approx(q0 + share * (top - q0), rel=1e-12)
    assert block.headroom_share == d.CPT_HEADROOM_SHARE == pytest.approx((13.5 / 95.5 + 12.8 / 87.8) / 2, abs=1e-4)
    assert d.CPT_TOKENS_PER_PARAMETER_SCALE == pytest.approx((50 / 34) / math.log(10), abs=0.01)
    # saturation: at most s of the headroom however many tokens
    assert pt.start_score(inst, 1e15, q0) == pytest.approx(q0 + d.CPT_HEADROOM_SHARE * (top - q0), rel=1e-9)
    # the stage's own curve from that start: the recipe's quality is stage_outcome from the raised score
    plan, plain = _plan(_shipped(), 5e9), _plan(_shipped(), 0.0)
    ev = Evaluator(inst)
    start = pt.start_score(inst, 5e9, q0)
    end, _ = stage_outcome(inst, plain.recipe, start)
    assert ev.recipe(plan.recipe).quality == pytest.approx(end, rel=1e-12)
    assert ev.recipe(plan.recipe).quality > ev.recipe(plain.recipe).quality
    # its forgetting is the stage's move from the raised start (the pre-training's own is not priced)
    assert ev.recipe(plan.recipe).forgetting_points == pytest.approx(stage_outcome(inst, plain.recipe, start)[1], rel=1e-12)


def test_without_the_block_nothing_changes():
    base = json.loads((INSTANCES / "math-8b-or-32b.json").read_text())
    zero = {**base, "continued_pretraining": {"tokens_options": [0], "usd_per_billion_tokens": 100}}
    a, b = Evaluator(parse_instance(base)), Evaluator(parse_instance(zero))
    assert a.for_student("Qwen3-8B").space()[0] == b.for_student("Qwen3-8B").space()[0]


def test_the_uncertainty_model_draws_the_share_from_llemma_s_scatter():
    inst = _shipped()
    (p,) = [p for p in U.parameters(inst) if p.name == "continued_pretraining.headroom_share"]
    assert p.point == d.CPT_HEADROOM_SHARE and p.upper_bound == 1.0
    assert p.low == pytest.approx(d.CPT_HEADROOM_SHARE * sp.FACTOR_CPT_HEADROOM_SHARE[0])
    shares = [0.2894, 0.3111, 0.0345, 0.0516, 0.1682, 0.1429, 0.4823, 0.5269, 0.1414, 0.1458]
    logs = [math.log(s) for s in shares]
    mean = sum(logs) / len(logs)
    sigma = math.sqrt(sum((v - mean) ** 2 for v in logs) / (len(logs) - 1))
    assert sigma == pytest.approx(0.886, abs=0.002)
    assert "continued_pretraining.headroom_share" not in {q.name for q in U.parameters(load_instance(INSTANCES / "math-8b-or-32b.json"))}


def test_the_scenario_evaluator_equals_the_evaluator_on_pre_training_plans():
    inst = _shipped()
    scenarios = U.draw(inst, 5, 3)
    plans = [_plan(inst, 5e9), _plan(inst, 2e10), _plan(inst, 0.0), _plan(inst, 1e9, "Qwen3-32B")]
    assert_scenarios_equal_the_evaluator(inst, scenarios, plans)


@pytest.mark.parametrize("seed", split_seeds(SEEDS, 30))
def test_the_mip_equals_both_oracles_with_pre_training_on(seed):
    inst = parse_instance(_cpt_job(seed))
    assert_mip_equals_both_oracles(inst)


def test_the_random_jobs_choose_pre_training_somewhere():
    chosen = 0
    for seed in SEEDS[:12]:
        inst = parse_instance(_cpt_job(seed))
        best = max(all_plans(inst), key=lambda p: (p.metrics.feasible, p.metrics.quality))
        chosen += best.plan.stages[0].recipe.pretraining_tokens > 0
    assert chosen >= 3


def test_scenarios_on_random_pre_training_jobs():
    for seed in SEEDS[:4]:
        inst = parse_instance(_cpt_job(seed))
        plans = [p.plan for p in all_plans(inst) if p.metrics.fits_memory and p.plan.stages[0].recipe.pretraining_tokens][:3]
        assert_scenarios_equal_the_evaluator(inst, U.draw(inst, 4, seed), plans)


def test_the_plan_json_round_trips_and_carries_the_tokens_only_when_there_are_some():
    inst = _shipped()
    plan, plain = _plan(inst, 5e9), _plan(inst, 0.0)
    out = plan.to_dict()
    assert out["stages"][0]["pretraining_tokens"] == 5e9
    assert "pretraining_tokens" not in plain.to_dict()["stages"][0]
    assert read_plan(json.loads(json.dumps(out))) == plan
    assert read_plan(plan.flat_dict()).recipe == plan.recipe
    m = Evaluator(inst).evaluate(read_plan(out))
    assert m.quality == Evaluator(inst).evaluate(plan).quality


def _evaluate_refusal(tmp_path, plan: dict, field: str) -> None:
    f = tmp_path / "plan.json"
    f.write_text(json.dumps(plan))
    res = CliRunner().invoke(app, ["evaluate", str(SHIPPED), str(f)])
    assert res.exit_code == 2, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and field in lines[0], res.output


def test_a_plan_s_tokens_are_checked(tmp_path):
    plan = _plan(_shipped(), 5e9).to_dict()
    bad = copy.deepcopy(plan)
    bad["stages"][0]["pretraining_tokens"] = 3e9
    _evaluate_refusal(tmp_path, bad, "plan.pretraining_tokens: 3e+09 is not in continued_pretraining.tokens_options")
    bad["stages"][0]["pretraining_tokens"] = -1
    _evaluate_refusal(tmp_path, bad, "plan.stages.0.pretraining_tokens: expected a number of tokens")
    bad["stages"][0]["pretraining_tokens"] = "5e9"
    _evaluate_refusal(tmp_path, bad, "plan.stages.0.pretraining_tokens")
    base = json.loads((INSTANCES / "math-8b-or-32b.json").read_text())
    (tmp_path / "job.json").write_text(json.dumps(base))
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    res = CliRunner().invoke(app, ["evaluate", str(tmp_path / "job.json"), str(tmp_path / "plan.json")])
    assert res.exit_code == 2 and "plan.pretraining_tokens" in res.output and "no continued_pretraining" in res.output


def test_only_a_first_stage_pre_trains():
    inst = load_instance(INSTANCES / "qwen3-32b-sft-then-rl.json")
    data = json.loads((INSTANCES / "qwen3-32b-sft-then-rl.json").read_text())
    data["continued_pretraining"] = {"tokens_options": [0, 1e9], "usd_per_billion_tokens": 50}
    cpt = parse_instance(data)
    plan = planopt_solve(inst).plan.to_dict()
    plan["stages"][1]["pretraining_tokens"] = 1e9
    with pytest.raises(ValueError, match=r"plan\.stages\.1\.pretraining_tokens: only the first stage"):
        Evaluator(cpt).evaluate(read_plan(plan))
    ev = Evaluator(cpt)
    from planopt.models.formulation.space import collect_space
    space = collect_space(ev, prune=False)
    assert any(r.pretraining_tokens for r in space.slots[0].recipes)
    assert not any(r.pretraining_tokens for r in space.slots[1].recipes)


def planopt_solve(inst):
    from planopt.job.model import PlanModel
    return PlanModel(inst).solve()


@pytest.mark.parametrize("block, field", [
    ({"tokens_options": [0, -1e9], "usd_per_billion_tokens": 10}, "continued_pretraining.tokens_options"),
    ({"tokens_options": [0, 1e9, 1e9], "usd_per_billion_tokens": 10}, "continued_pretraining.tokens_options"),
    ({"tokens_options": [], "usd_per_billion_tokens": 10}, "continued_pretraining.tokens_options"),
    ({"tokens_options": [0, 1e9]}, "continued_pretraining.usd_per_billion_tokens"),
    ({"tokens_options": [0, 1e9], "usd_per_billion_tokens": -1}, "continued_pretraining.usd_per_billion_tokens"),
    ({"tokens_options": [0, 1e9], "usd_per_billion_tokens": 1, "headroom_share": 1.5}, "continued_pretraining.headroom_share"),
    ({"tokens_options": [0, 1e9], "usd_per_billion_tokens": 1, "tokens_per_parameter_scale": 0},
     "continued_pretraining.tokens_per_parameter_scale"),
    ({"tokens_options": [0, 1e9], "usd_per_billion_tokens": 1, "tokens": 3}, "continued_pretraining.tokens"),
])
def test_bad_blocks_are_refused_naming_the_field(tmp_path, block, field):
    data = json.loads(SHIPPED.read_text())
    data["continued_pretraining"] = block
    refused(tmp_path, data, field)


def test_pre_training_with_releases_is_refused(tmp_path):
    data = json.loads(SHIPPED.read_text())
    data["releases"] = {"count": 3}
    refused(tmp_path, data, "continued_pretraining: not modelled with releases yet")


def test_pre_training_without_full_weights_is_refused_not_ignored(tmp_path):
    """A LoRA-only job could take no token option (continued pre-training trains every weight): the block would do
    nothing, so it is refused in one line."""
    data = json.loads(SHIPPED.read_text())
    data["training"]["adapter_options"] = ["lora"]
    refused(tmp_path, data, "continued_pretraining.tokens_options: continued pre-training trains every weight")


def test_the_report_and_the_json_show_it():
    res = CliRunner().invoke(app, ["solve", str(SHIPPED), "--no-sensitivity"])
    assert res.exit_code == 0, res.output
    assert "continued pre-training  5 B tokens of domain text first" in res.output
    assert "continued pre-training: 5 B tokens of domain text first" in res.output
    res = CliRunner().invoke(app, ["solve", str(SHIPPED), "--no-sensitivity", "--json"])
    out = json.loads(res.output)
    assert out["plan"]["stages"][0]["pretraining_tokens"] == 5e9
    assert out["pretraining"]["tokens"] == 5e9 and out["pretraining"]["start_score"] > out["pretraining"]["baseline_score"]
    from planopt.report.result_schema import ResultSchema
    ResultSchema.model_validate(out)


def test_the_export_says_to_pre_train_first_and_its_steps_leave_the_tokens_out(tmp_path):
    from planopt.export.plan_file import load_job
    inst = _shipped()
    solved = json.loads(CliRunner().invoke(app, ["solve", str(SHIPPED), "--json", "--no-sensitivity"]).stdout)
    files = {}
    for tokens in (5e9, 0.0):
        f = tmp_path / f"plan-{tokens:g}.json"
        f.write_text(json.dumps({**solved, "plan": _plan(inst, tokens).to_dict()}))
        files[tokens] = load_job(f, SHIPPED).stages[0]
    assert files[5e9].pretraining_tokens == 5e9 and files[0.0].pretraining_tokens == 0.0
    assert files[5e9].hours_per_step == pytest.approx(files[0.0].hours_per_step, rel=1e-12)
    res = CliRunner().invoke(app, ["export", str(tmp_path / "plan-5e+09.json"), "--instance", str(SHIPPED), "--to",
                                   "nemo-rl", "--out", str(tmp_path / "nemo.yaml")])
    assert "continued pre-training on 5 B tokens of domain text first" in (tmp_path / "nemo.yaml").read_text(), res.output
