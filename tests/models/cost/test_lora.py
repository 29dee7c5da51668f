"""LoRA or full fine-tuning as a plan decision (issue 12, item 2).

- Plan fields ``adapter`` and ``lora_rank``: a plan without them is full
  fine-tuning and evaluates exactly as before; bad ranks name the field.
- Each term against its formula: memory (frozen bf16 weights + adapter Adam state),
  FLOPs (4N instead of 6N), weight hand-over and checkpoint (adapter only), quality
  and forgetting (shares of full fine-tuning's, per method).
- The MIP equals both oracles on random instances where LoRA matters (memory-tight
  hardware, forgetting-tight limits), and LoRA is not always the answer.
- The scenario evaluator draws the LoRA shares and equals the evaluator per scenario.
"""

from __future__ import annotations

import json

import pytest

from planopt.instance import load_instance
from planopt.models.catalog import defaults as d
from planopt.models.cost import physics as ph
from planopt.models.uncertainty import model as U
from planopt.models.cost.evaluator import Evaluator
from planopt.models.cost.hardware import HardwareProfile
from planopt.models.schema.plan import HardwareChoice, Plan, Recipe
from planopt.models.schema.instance import Instance
from planopt.instance import parse_instance
from planopt.oracles.by_plan import all_plans, best_plan
from planopt.job.model import solve

from tests.support.adapter_instances import adapter_instance_dict, adapter_job_dict
from tests.support.oracle_checks import assert_mip_equals_both_oracles, assert_scenarios_equal_the_evaluator
from tests.support.common import INSTANCES, split_seeds

MATH = INSTANCES / "qwen3-8b-math.json"




def with_lora(path=MATH, ranks=(16,), options=("full", "lora"), **training) -> Instance:
    data = json.loads(path.read_text())
    data["training"].update(adapter_options=list(options), lora_rank_options=list(ranks), **training)
    data["constraints"] = {}
    return parse_instance(data)


# --- the plan fields ----------------------------------------------------------------

def test_a_plan_without_adapter_is_full_fine_tuning_and_evaluates_as_before():
    inst = load_instance(MATH)
    plan = solve(inst).plan.flat_dict()
    assert plan["adapter"] == "full" and plan["lora_rank"] is None
    old = {k: v for k, v in plan.items() if k not in ("adapter", "lora_rank")}
    a, b = Evaluator(inst).evaluate(Plan.from_dict(old)), Evaluator(inst).evaluate(Plan.from_dict(plan))
    assert a.cost_usd == b.cost_usd and a.quality == b.quality and a.cost_breakdown_usd == b.cost_breakdown_usd
    assert Plan.from_dict(plan).flat_dict() == plan


def test_a_lora_plan_is_refused_where_the_instance_offers_none():
    inst = load_instance(MATH)
    plan = {**solve(inst).plan.flat_dict(), "adapter": "lora", "lora_rank": 16}
    with pytest.raises(ValueError, match="plan.adapter"):
        Evaluator(inst).evaluate(Plan.from_dict(plan))
    inst = with_lora(ranks=(8,))
    with pytest.raises(ValueError, match="plan.lora_rank: 16 is not in training.lora_rank_options"):
        Evaluator(inst).evaluate(Plan.from_dict(plan))


@pytest.mark.parametrize("bad,message", [
    ({"adapter": "lora", "lora_rank": 0}, "plan.lora_rank"), ({"adapter": "lora", "lora_rank": -4}, "plan.lora_rank"),
    ({"adapter": "lora", "lora_rank": 2.5}, "plan.lora_rank"), ({"adapter": "lora", "lora_rank": None}, "plan.lora_rank"),
    ({"adapter": "full", "lora_rank": 16}, "plan.lora_rank"), ({"adapter": "qlora"}, "plan.adapter")])
def test_bad_adapter_fields_name_the_field(bad, message):
    base = {"method": "rl", "gpu": "H100-SXM", "gpu_count": 8, "steps": 10, "checkpoint_interval_minutes": 60}
    with pytest.raises(ValueError, match=message):
        Plan.from_dict({**base, **bad})


@pytest.mark.parametrize("ranks", [[0], [16, -1]])
def test_a_rank_that_is_not_positive_exits_2_naming_the_field(tmp_path, ranks):
    from typer.testing import CliRunner
    from planopt.cli import app
    data = json.loads(MATH.read_text())
    data["training"].update(adapter_options=["full", "lora"], lora_rank_options=ranks)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    res = CliRunner().invoke(app, ["solve", str(path)])
    assert res.exit_code == 2, res.output
    assert "training.lora_rank_options" in res.output and "Traceback" not in res.output
    assert len(res.output.strip().splitlines()) == 1


def test_evaluate_reads_a_lora_plan_and_refuses_a_bad_rank(tmp_path):
    from typer.testing import CliRunner
    from planopt.cli import app
    inst = with_lora(ranks=(16, 64), options=("lora",))
    path = tmp_path / "lora.json"
    path.write_text(inst.model_dump_json(exclude_none=True))
    runner = CliRunner()
    res = runner.invoke(app, ["solve", str(path), "--json", "--no-sensitivity"])
    assert res.exit_code == 0, res.output
    plan = json.loads(res.stdout)["plan"]
    stage = plan["stages"][0]
    assert stage["adapter"] == "lora" and stage["lora_rank"] in (16, 64)
    plan_path = tmp_path / "plan.json"
    plan_path.write_text(json.dumps(plan))
    assert runner.invoke(app, ["evaluate", str(path), str(plan_path), "--json"]).exit_code == 0
    plan_path.write_text(json.dumps({**plan, "stages": [{**stage, "lora_rank": 0}]}))
    res = runner.invoke(app, ["evaluate", str(path), str(plan_path)])
    assert res.exit_code == 2 and "plan.stages.0.lora_rank" in res.output and "Traceback" not in res.output


# --- each term against its formula -----------------------------------------------------

def test_adapter_parameters_follow_the_layer_shapes():
    stu = load_instance(MATH).student  # Qwen3-8B: 36 layers, hidden 4096, 8 KV heads of 128
    h, kv, layers = 4096.0, 8 * 128.0, 36
    inter = (stu.params_b * 1e9 / layers - 2 * h * h - 2 * h * kv) / (3 * h)
    assert ph.lora_params(stu, 16) == pytest.approx(16 * layers * (4 * h + 2 * (h + kv) + 3 * (h + inter)))
    assert ph.lora_params(stu, 64) == pytest.approx(4 * ph.lora_params(stu, 16))
    assert 40e6 < ph.lora_params(stu, 16) < 55e6          # PEFT counts 43.6M for Qwen3-8B all-linear r=16


def test_lora_memory_is_frozen_bf16_weights_plus_the_adapters_adam_state():
    inst = with_lora()
    stu, n, seq = inst.student, 8, 1000.0
    acts = d.ACTIVATION_BYTES_PER_ELEMENT * stu.layers * stu.hidden * seq
    full = ph.train_memory_bytes_per_gpu(stu, n, seq)
    lora = ph.train_memory_bytes_per_gpu(stu, n, seq, lora_rank=16)
    assert full == pytest.approx(16 * stu.params_b * 1e9 / n + acts)
    assert lora == pytest.approx((2 * stu.params_b * 1e9 + 16 * ph.lora_params(stu, 16)) / n + acts)


def test_on_memory_tight_hardware_only_the_adapter_fits():
    data = json.loads(MATH.read_text())
    data["hardware"] = {"gpus": [{"name": "L40S", "counts": [1, 2]}]}
    data["training"].update(adapter_options=["full", "lora"], lora_rank_options=[16])
    data["constraints"] = {}
    data["objective"] = "cost"
    inst = parse_instance(data)
    ev = Evaluator(inst)
    for n in (1, 2):
        assert not ev.hardware(HardwareChoice("L40S", n)).fits("sft")
        assert ev.hardware(HardwareChoice("L40S", n, 16)).fits("sft+lora16")
        assert not ev.hardware(HardwareChoice("L40S", n)).fits("sft+lora16")    # each choice holds its own adapter
    res = solve(inst)
    assert res.status == "optimal" and res.plan.adapter == "lora" and res.metrics.fits_memory


@pytest.mark.parametrize("recompute", [False, True])
def test_frozen_weights_take_4n_instead_of_6n_flops_per_token(recompute):
    stu = load_instance(MATH).student
    full = ph.train_flops_per_token(stu, recompute)
    lora = ph.train_flops_per_token(stu, recompute, 16)
    adapter = 6 * ph.lora_params(stu, 16)
    assert lora - adapter == pytest.approx(full * (4 / 6 if not recompute else 6 / 8))
    inst = with_lora()
    ev = Evaluator(inst)
    r_full = next(r for r in ev.space()[0] if r.method == "rl" and r.lora_rank is None)
    r_lora = Recipe(r_full.method, r_full.steps, r_full.samples_per_prompt, lora_rank=16)
    a, b = ev.recipe(r_full).amounts, ev.recipe(r_lora).amounts
    assert b["train_flops"] / a["train_flops"] == pytest.approx(ph.train_flops_per_token(stu, inst.training.activation_recompute, 16)
                                                                / ph.train_flops_per_token(stu, inst.training.activation_recompute))
    assert b["prefill_flops"] == a["prefill_flops"]                            # generation is unchanged


def test_hand_over_and_checkpoint_hold_the_adapter_only():
    inst = with_lora()
    stu = inst.student
    adapter = ph.lora_params(stu, 16)
    assert ph.checkpoint_bytes(stu, 16) == pytest.approx(14 * adapter)
    assert ph.handover_bytes(stu, 16) == pytest.approx(2 * adapter) and ph.handover_bytes(stu) == pytest.approx(2 * stu.params_b * 1e9)
    full, lora = HardwareProfile(inst, HardwareChoice("H100-SXM", 8)), HardwareProfile(inst, HardwareChoice("H100-SXM", 8, 16))
    assert lora.seconds_per_unit("weight_sync_steps|rl+lora16") / full.seconds_per_unit("weight_sync_steps|rl") \
        == pytest.approx(adapter / (stu.params_b * 1e9))
    assert lora.checkpoint_write_hours / full.checkpoint_write_hours == pytest.approx(adapter / (stu.params_b * 1e9))
    plan = solve(load_instance(MATH)).plan                                     # full weights
    assert plan.adapter == "full"
    lplan = Plan.from_dict({**plan.flat_dict(), "adapter": "lora", "lora_rank": 16})
    m_full, m_lora = Evaluator(inst).evaluate(plan), Evaluator(inst).evaluate(lplan)
    assert m_lora.hours_breakdown["checkpoint_writes"] < m_full.hours_breakdown["checkpoint_writes"] / 100


@pytest.mark.parametrize("method", ["sft", "rl", "opd"])
def test_quality_and_forgetting_are_shares_of_full_fine_tunings(method):
    data = json.loads(MATH.read_text())
    data["training"].update(adapter_options=["full", "lora"], lora_rank_options=[8])
    data["training"]["methods"] = {method: data["training"]["methods"].get(method, {"steps_options": [400], "prompts_per_step": 64})}
    if method == "sft":
        data.setdefault("sft_data", {"examples_available": 1000, "usd_per_labeled_example": 1.0,
                                     "labeled_examples_per_day": 1e4, "example_tokens": 1000})
    inst = parse_instance(data)
    ev = Evaluator(inst)
    q0 = inst.task.baseline_score
    g, phi = getattr(inst.priors.lora_gain_share, method), getattr(inst.priors.lora_forgetting_share, method)
    assert (g, phi) == (d.LORA_GAIN_SHARE[method], d.LORA_FORGETTING_SHARE[method])
    for r in [r for r in ev.space()[0] if r.lora_rank is None][:6]:
        full = ev.recipe(r)
        lora = ev.recipe(Recipe(r.method, r.steps, r.samples_per_prompt, r.teacher_precision, r.external_data_share,
                                r.max_epochs, 8))
        assert lora.quality - q0 == pytest.approx(g * (full.quality - q0), rel=1e-12)
        assert lora.forgetting_points == pytest.approx(phi * full.forgetting_points, rel=1e-12)
    if method == "sft":
        assert g < 1 and phi < 1      # learns less and forgets less
    if method == "rl":
        assert g == 1.0               # matches full fine-tuning in RL


# --- MIP = oracles where the adapter matters ------------------------------------------------

SEEDS = range(40)


@pytest.mark.parametrize("seed", split_seeds(SEEDS, 10))
def test_mip_equals_both_oracles_where_the_adapter_matters(seed):
    inst = parse_instance(adapter_instance_dict(seed))
    mip = assert_mip_equals_both_oracles(inst)
    if mip.status != "optimal":
        return
    again = Evaluator(inst).evaluate(Plan.from_dict(json.loads(json.dumps(mip.plan.to_dict()))))
    assert again.cost_usd == mip.metrics.cost_usd


def test_the_random_adapter_instances_exercise_both_adapters_memory_and_forgetting():
    """The contract above is only worth something if its instances make the adapter matter."""
    only_lora_fits = forgetting_binds = lora_optimal = full_optimal = 0
    for seed in SEEDS:
        inst = parse_instance(adapter_instance_dict(seed))
        plans = [p for p in all_plans(inst)]
        fits = {(p.plan.gpu, p.plan.gpu_count, p.plan.adapter) for p in plans if p.metrics.fits_memory}
        only_lora_fits += any((g, n, "full") not in fits for g, n, a in fits if a == "lora") \
            and "full" in inst.training.adapter_options
        limit = inst.constraints.max_forgetting_points
        forgetting_binds += limit is not None and all(p.metrics.forgetting_points > limit for p in plans if p.plan.adapter == "full") \
            and any(p.metrics.forgetting_points <= limit for p in plans if p.plan.adapter == "lora")
        best = best_plan(inst)
        if best.status == "optimal":
            lora_optimal += best.plan.adapter == "lora"
            full_optimal += best.plan.adapter == "full"
    assert only_lora_fits >= 5 and forgetting_binds >= 3 and lora_optimal >= 5 and full_optimal >= 1


def test_the_objective_decides_between_full_and_lora_sft():
    data = json.loads(MATH.read_text())
    data["training"]["methods"] = {"sft": {"steps_options": [400], "prompts_per_step": 64}}
    data["training"].update(adapter_options=["full", "lora"], lora_rank_options=[16])
    data["sft_data"] = {"examples_available": 100000, "usd_per_labeled_example": 1.0, "labeled_examples_per_day": 1e4,
                        "example_tokens": 1000}
    data["constraints"] = {}
    plans = {}
    for objective in ("quality", "forgetting"):
        data["objective"] = objective
        res = solve(parse_instance(data))
        assert res.status == "optimal"
        plans[objective] = res.plan.adapter
    assert plans == {"quality": "full", "forgetting": "lora"}


# --- scenarios -----------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(6))
def test_scenario_evaluator_equals_the_evaluator_with_lora(seed):
    inst = parse_instance(adapter_job_dict(seed))
    scenarios = U.draw(inst, 4, seed)
    assert any(name.startswith("priors.lora_gain_share.") for name in scenarios.values)
    plans = [p.plan for p in all_plans(inst) if p.metrics.fits_memory and p.plan.adapter == "lora"][::17][:4]
    assert plans
    assert_scenarios_equal_the_evaluator(inst, scenarios, plans)


def test_when_nothing_fits_in_memory_solve_says_an_adapter_would():
    data = json.loads(MATH.read_text())
    data["hardware"] = {"gpus": [{"name": "L40S", "counts": [1, 2]}]}
    data["constraints"] = {}
    res = solve(parse_instance(data))
    assert res.status == "infeasible"
    lora = [r for r in res.relaxations if r["constraint"] == "training.adapter_options"]
    assert len(lora) == 1 and lora[0]["change"] == '["full", "lora"]' and "1 × L40S" in lora[0]["fits_on"]
    data["training"].update(adapter_options=["full", "lora"])
    assert solve(parse_instance(data)).plan.adapter == "lora"
    data["hardware"] = {"gpus": [{"name": "L4", "counts": [1]}]}
    data["student"] = {"preset": "Llama-3.1-70B"}
    data["training"].update(adapter_options=["full"])
    res = solve(parse_instance(data))
    assert res.status == "infeasible"     # no adapter fits either: no false hope
    assert "training.adapter_options" not in {r["constraint"] for r in res.relaxations}
