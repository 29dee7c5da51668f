"""The trainer as an input and a decision (issue 24 item 1): each backend's factor is its sourced ratio, a plan
that names no trainer is priced as before, the MIP picks the backend that pays and equals both oracles on random
instances with trainer options, and bad input is one line naming the field, exit 2."""

from __future__ import annotations

import json
import random

import pytest

from tests.support.common import INSTANCES, refused, split_seeds
from tests.support.oracle_checks import assert_mip_equals_both_oracles, close
from tests.support.random_instances import random_job_dict
from planopt.instance import parse_instance
from planopt.job.model import solve
from planopt.models.catalog import defaults as d
from planopt.models.cost import physics as ph
from planopt.models.cost import trainer as tr
from planopt.models.cost.evaluator import Evaluator
from planopt.models.cost.hardware import HardwareProfile, hardware_options
from planopt.models.schema.plan import HardwareChoice, Plan, Recipe

MATH = json.loads((INSTANCES / "qwen3-8b-math.json").read_text())
BACKENDS = [{"backend": "megatron"}, {"backend": "fsdp"}, {"backend": "deepspeed", "zero_stage": 3},
            {"backend": "deepspeed", "zero_stage": 2}, {"backend": "deepspeed", "zero_stage": 1},
            {"backend": "deepspeed", "zero_stage": 3, "overlap_comm": False}]


def with_training(data: dict, **training) -> dict:
    """``data`` with ``training`` fields set."""
    out = json.loads(json.dumps(data))
    out["training"].update(training)
    return out


def sft_job(params_b_preset: str, counts: list[int], options: list[dict]) -> dict:
    """An SFT-only job of one-example micro-steps on H100s, the trainer a choice among ``options``."""
    return {
        "name": "sft-trainer", "student": {"preset": params_b_preset},
        "task": {"baseline_score": 30, "general_score_baseline": 70, "prompt_tokens": 200, "response_tokens": 1500,
                 "max_response_tokens": 4096, "prompts_available": 20000},
        "training": {"methods": {"sft": {"steps_options": [500], "prompts_per_step": 64}}, "trainer_options": options},
        "sft_data": {"examples_available": 40000, "usd_per_labeled_example": 1.0, "labeled_examples_per_day": 5000,
                     "example_tokens": 4000},
        "hardware": {"gpus": [{"name": "H100-SXM", "counts": counts}]},
        "objective": "cost",
    }


# --- the factors are the sourced ratios ---------------------------------------------------------------------

def test_each_backend_factor_is_its_sourced_ratio():
    # NeMo RL v0.3, Llama 3.1-8B Instruct on 8 H100: policy training 28 s (Megatron) vs 38 s (DTensor), log-probs 18 vs 19
    assert tr.train_speed("fsdp") == pytest.approx(28.0 / 38.0, rel=1e-15)
    assert tr.forward_speed("fsdp") == pytest.approx(18.0 / 19.0, rel=1e-15)
    # HF "Accelerate story of multiple backends", Table 3: ZeRO-3 3,094.5 vs FSDP 3,158.7 tokens/s/device
    for stage in (1, 2, 3):
        assert tr.train_speed(f"deepspeed-zero{stage}") == pytest.approx(28.0 / 38.0 * 3094.5 / 3158.7, rel=1e-15)
    assert tr.train_speed("megatron") == tr.forward_speed("megatron") == 1.0
    assert tr.efficiency(None) == {"train_speed": 1.0, "forward_speed": 1.0, "collective_share": 1.0, "overlap": False,
                                   "host_optimizer": False}
    assert [tr.zero_stage(k) for k in ("deepspeed-zero1", "deepspeed-zero3", "fsdp", None)] == [1, 3, None, None]


def test_a_step_on_each_backend_is_the_curve_time_over_its_factor():
    """Training FLOPs take 1/train_speed of the curve's time, scoring passes 1/forward_speed; decode does not move."""
    default = HardwareProfile(parse_instance(MATH), HardwareChoice("H100-SXM", 16))
    for option in BACKENDS:
        inst = parse_instance(with_training(MATH, trainer=option))
        key = inst.training.trainer.key
        hp = HardwareProfile(inst, HardwareChoice("H100-SXM", 16, trainer=key))
        assert hp.seconds_per_unit("train_flops") == pytest.approx(default.seconds_per_unit("train_flops") / tr.train_speed(key), rel=1e-12)
        assert hp.seconds_per_unit("student_logprob_flops") == pytest.approx(
            default.seconds_per_unit("student_logprob_flops") / tr.forward_speed(key), rel=1e-12)
        assert hp.seconds_per_unit("decode_tokens|rl|8") == default.seconds_per_unit("decode_tokens|rl|8")


def test_no_trainer_keeps_todays_options_and_figures():
    inst = parse_instance(MATH)
    options = hardware_options(inst)
    assert all(h.trainer is None for h in options)
    assert inst.training.trainer_keys() == [None]
    # one trainer stated: the same choices, each naming it
    one = parse_instance(with_training(MATH, trainer={"backend": "fsdp"}))
    assert [HardwareChoice(h.gpu, h.count, h.lora_rank, h.rollout_gpu, h.rollout_count, h.cpu_offload) for h in
            hardware_options(one)] == options
    # options: each choice once per trainer
    many = parse_instance(with_training(MATH, trainer_options=BACKENDS[:3]))
    assert len(hardware_options(many)) == 3 * len(options)


# --- collectives: overlapped where the backend prefetches, in series where it does not ------------------------

def test_fsdp_hides_what_compute_covers_and_zero3_pays_it_in_series():
    inst = parse_instance(sft_job("Qwen3-8B", [16], BACKENDS))
    per_byte = ph.fsdp_seconds_per_byte(HardwareProfile(inst, HardwareChoice("H100-SXM", 16)).gpu, 16)
    units = {k: HardwareProfile(inst, HardwareChoice("H100-SXM", 16, trainer=k)).seconds_per_unit("train_fsdp_bytes")
             for k in inst.training.trainer_keys()}
    assert units["deepspeed-zero3-serial"] == pytest.approx(per_byte, rel=1e-12)
    assert units["deepspeed-zero2"] == units["deepspeed-zero1"] == pytest.approx(per_byte / 3.0, rel=1e-12)
    # DeepSpeed's own default at ZeRO-3 (overlap_comm true, parameters prefetched) hides them as FSDP does
    assert units["deepspeed-zero3"] == units["fsdp"]
    assert units["megatron"] == 0.0
    # 4,000 tokens of an 8B model take longer to compute than its 6N bytes take on NVLink: FSDP hides them all
    hp = HardwareProfile(inst, HardwareChoice("H100-SXM", 16, trainer="fsdp"))
    shape_flops = 4000 * (ph.train_flops_per_token(inst.student, True) + ph.attention_flops_per_token(inst.student, 4000, True))
    assert shape_flops * hp.seconds_per_unit("train_flops") > ph.fsdp_bytes_per_sequence(inst.student) * per_byte
    assert units["fsdp"] == 0.0
    # the exposed share is the part of the collectives longer than the compute
    assert tr.collective_seconds_per_byte("fsdp", 2.0, 3.0, 2.0) == pytest.approx(2.0 * (1 - 3.0 / 4.0))
    assert tr.collective_seconds_per_byte("fsdp", 2.0, 5.0, 2.0) == 0.0
    assert tr.collective_seconds_per_byte("deepspeed-zero3-serial", 2.0, 5.0, 2.0) == 2.0
    assert tr.collective_seconds_per_byte("deepspeed-zero3", 2.0, 5.0, 2.0) == 0.0
    # ZeRO-2 with overlap_comm: its third of the bytes, less what the compute covers
    assert tr.collective_seconds_per_byte("deepspeed-zero2-overlap", 2.0, 0.5, 3.0) == pytest.approx(2.0 / 3.0 * (1 - 0.5 / 2.0))


def test_zero_1_and_2_keep_part_of_the_state_whole_on_every_gpu():
    inst = parse_instance(sft_job("Qwen3-8B", [16], BACKENDS))
    arch = inst.student
    n, acts = 16, ph.train_memory_bytes_per_gpu(inst.student, 16, 1000.0, True)  # offload: activations only
    params = arch.params_b * 1e9
    assert ph.train_memory_bytes_per_gpu(arch, n, 1000.0, zero_stage=3) == ph.train_memory_bytes_per_gpu(arch, n, 1000.0)
    assert ph.train_memory_bytes_per_gpu(arch, n, 1000.0, zero_stage=2) == pytest.approx(acts + (2 + 14 / n) * params)
    assert ph.train_memory_bytes_per_gpu(arch, n, 1000.0, zero_stage=1) == pytest.approx(acts + (4 + 12 / n) * params)


# --- CPU offload: DeepSpeed updates the optimiser state on the host ---------------------------------------------

def test_the_host_optimizer_rate_is_the_tables_arithmetic():
    # chenyaofo's LLaMA-7B table (8 A800, ZeRO-3, checkpointing, 2 per device, 64 per step): 4.45 vs 2.05 samples/s
    assert d.DEEPSPEED_OFFLOAD_HOST_SECONDS_PER_PARAM_PER_STEP == pytest.approx((64 / 2.05 - 64 / 4.45) / 6_738_415_616,
                                                                                 rel=1e-15)
    assert d.DEEPSPEED_OFFLOAD_HOST_SECONDS_PER_PARAM_PER_STEP == pytest.approx(2.499e-9, rel=1e-3)
    assert [tr.host_optimizer(k) for k in ("deepspeed-zero1", "deepspeed-zero2-overlap", "deepspeed-zero3",
                                           "deepspeed-zero3-serial", "fsdp", "megatron", None)] == [True] * 4 + [False] * 3


@pytest.mark.parametrize("count", [8, 32])
def test_deepspeed_offload_pays_the_host_optimizer_step_per_node_and_the_others_the_host_link(count):
    job = with_training(sft_job("Qwen3-8B", [count], BACKENDS[:3]), cpu_offload=True)
    inst = parse_instance(job)
    ev = Evaluator(inst)
    recipe = Recipe("sft", 500, (), None, 1.0)
    state = ev.recipe(recipe).amounts["offload_state_bytes"]
    assert state == pytest.approx(500 * 24 * inst.student.params_b * 1e9)
    hours = {k: ev.compute_hours_by_component(recipe, HardwareChoice("H100-SXM", count, trainer=k))["offload_state_bytes"]
             for k in inst.training.trainer_keys()}
    nodes = count // 8
    # DeepSpeed: each node's host updates its GPUs' N / nodes parameters per optimiser step, the nodes in parallel
    assert hours["deepspeed-zero3"] * 3600 == pytest.approx(
        500 * inst.student.params_b * 1e9 / nodes * d.DEEPSPEED_OFFLOAD_HOST_SECONDS_PER_PARAM_PER_STEP, rel=1e-12)
    # Megatron and FSDP move the fp32 state over the host link, 24N / n per GPU, as before trainers
    link = ph.host_link_gb_per_s(HardwareProfile(inst, HardwareChoice("H100-SXM", count)).gpu) * 1e9
    for key in ("megatron", "fsdp"):
        assert hours[key] * 3600 == pytest.approx(state / (count * link), rel=1e-12)
    default = parse_instance(with_training(job, trainer_options=None, trainer=None))
    assert Evaluator(default).compute_hours_by_component(recipe, HardwareChoice("H100-SXM", count))[
        "offload_state_bytes"] == pytest.approx(hours["fsdp"], rel=1e-12)
    # the host step does not scale with the MFU factor (rate-free: recipes.RATE_FACTOR)
    assert ph.host_optimizer_seconds_per_state_byte(HardwareProfile(inst, HardwareChoice("H100-SXM", count)).gpu, count) \
        == pytest.approx(d.DEEPSPEED_OFFLOAD_HOST_SECONDS_PER_PARAM_PER_STEP / (24 * nodes), rel=1e-15)


def test_without_offload_no_trainer_pays_an_optimizer_step():
    inst = parse_instance(sft_job("Qwen3-8B", [16], BACKENDS[:3]))
    recipe = Recipe("sft", 500, (), None, 1.0)
    assert "offload_state_bytes" not in Evaluator(inst).recipe(recipe).amounts
    hp = HardwareProfile(inst, HardwareChoice("H100-SXM", 16, trainer="deepspeed-zero3"))
    assert hp.seconds_per_unit("offload_state_bytes") == 0.0


# --- the trainer as a decision ----------------------------------------------------------------------------------

def test_the_mip_picks_megatron_over_fsdp_and_deepspeed_for_rl():
    inst = parse_instance(with_training(MATH, trainer_options=BACKENDS[:3]))
    result = solve(inst)
    assert result.plan.hardware.trainer == "megatron"
    assert result.plan.to_dict()["stages"][0]["trainer"] == "megatron"


def test_the_mip_picks_zero2_where_it_fits_and_zero3_where_only_it_does():
    """ZeRO-2 moves a third of ZeRO-3's bytes at the same compute speed: cheaper where its whole bf16 weights and
    gradients fit; a 32B model's 2 + 14/n bytes per parameter fit no 8 H100, so there ZeRO-3 runs."""
    options = [{"backend": "deepspeed", "zero_stage": 3, "overlap_comm": False}, {"backend": "deepspeed", "zero_stage": 2}]
    small = solve(parse_instance(sft_job("Qwen3-0.6B", [8], options)))
    assert small.plan.hardware.trainer == "deepspeed-zero2"
    big = parse_instance(sft_job("Qwen3-32B", [8], options))
    assert not HardwareProfile(big, HardwareChoice("H100-SXM", 8, trainer="deepspeed-zero2")).fits("sft")
    assert solve(big).plan.hardware.trainer == "deepspeed-zero3-serial"


def test_evaluate_refuses_a_trainer_the_instance_does_not_offer():
    inst = parse_instance(with_training(MATH, trainer_options=BACKENDS[:2]))
    ev = Evaluator(inst)
    recipe = Recipe("rl", 100, (8, 8, 8))
    with pytest.raises(ValueError, match=r"^plan\.trainer: 'deepspeed-zero3-serial' is not a trainer of the instance"):
        ev.check_stage(recipe, HardwareChoice("H100-SXM", 16, trainer="deepspeed-zero3-serial"))
    with pytest.raises(ValueError, match=r"^plan\.trainer: 'fsdp' is not a trainer of the instance; expected none"):
        Evaluator(parse_instance(MATH)).check_stage(recipe, HardwareChoice("H100-SXM", 16, trainer="fsdp"))
    plan = Plan.of(recipe, HardwareChoice("H100-SXM", 16, trainer="fsdp"), 60)
    assert Plan.from_dict(plan.to_dict()) == plan and Plan.from_dict(plan.flat_dict()) == plan


def _random_with_trainers(seed: int) -> dict:
    rng = random.Random(seed)
    d_ = random_job_dict(rng, f"trainers-{seed}")
    d_["training"]["trainer_options"] = rng.sample(BACKENDS, rng.randint(2, 3))
    return d_


def test_the_random_seeds_choose_more_than_one_trainer():
    """Guards the generator: the optimum is not always the same backend, so the contract below tests a choice."""
    chosen = {solve(parse_instance(_random_with_trainers(s))).plan for s in range(12)}
    assert len({p.hardware.trainer for p in chosen if p is not None}) >= 3


@pytest.mark.parametrize("seed", split_seeds(range(12), 4))
def test_the_mip_equals_both_oracles_with_trainer_options(seed):
    inst = parse_instance(_random_with_trainers(seed))
    mip = assert_mip_equals_both_oracles(inst)
    if mip.plan is not None:
        assert mip.plan.hardware.trainer in inst.training.trainer_keys()
        again = Evaluator(inst).evaluate(mip.plan)
        assert close(again.cost_usd, mip.metrics.cost_usd)


def _layered_with_trainers(seed: int, max_stages: int = 3):
    """A layered job (stages, students, retention, rollout, asynchronous RL, a trained teacher at random) whose
    trainer is a choice of two or three backends; None where the seed gives no layered job."""
    from tests.support.layered_instances import layered_job_dict
    got = layered_job_dict(seed, max_stages)
    if got is None:
        return None
    data, on = got
    data["training"]["trainer_options"] = random.Random(seed).sample(BACKENDS, random.Random(seed + 1).randint(2, 3))
    data["objective"] = random.Random(seed).choice(["cost", "cost", "quality", "time", "forgetting"])
    try:
        return parse_instance(data), on
    except ValueError:  # a trained teacher that fits none of the drawn trainers' memory
        return None


LAYERED = [s for s in range(30) if _layered_with_trainers(s) is not None]


@pytest.mark.parametrize("seed", split_seeds(LAYERED, 3))
def test_every_layer_composes_with_trainer_options(seed):
    """Stages, a choice of student, separate rollout GPUs, a trained teacher: the MIP equals the plan-by-plan oracle."""
    from planopt.job.model import PlanModel
    from planopt.oracles.by_plan import best_plan
    inst, on = _layered_with_trainers(seed)
    mip, oracle = PlanModel(inst).solve(), best_plan(inst)
    assert mip.status == oracle.status, (on, mip.status, oracle.status, mip.message)
    if oracle.status == "optimal":
        assert close(mip.metrics.objective(inst.objective), oracle.metrics.objective(inst.objective)), (on, mip.plan, oracle.plan)
        assert close(mip.metrics.cost_usd, oracle.metrics.cost_usd), (on, mip.plan, oracle.plan)


@pytest.mark.parametrize("seed", split_seeds([s for s in LAYERED if _layered_with_trainers(s, 2) is not None], 2))
def test_the_chance_model_equals_the_oracle_with_trainer_options(seed):
    from planopt.models.uncertainty.model import draw
    from planopt.oracles.by_plan import best_under_scenarios
    from planopt.uncertainty.chance import solve_chance
    inst, on = _layered_with_trainers(seed, 2)
    mip = solve_chance(inst, 0.75, 8, seed, None, out_of_sample=20, guard=False)
    oracle = best_under_scenarios(inst, draw(inst, 8, seed), 0.75, None)
    assert (mip.status == "optimal") == (oracle is not None), (on, mip.status, mip.message)
    if oracle is not None:
        metric = {"cost": "cost_usd", "time": "wall_hours", "quality": "quality", "forgetting": "forgetting_points"}[inst.objective]
        assert close(mip.risk["expected"][metric], oracle.expected[metric]), (on, mip.plan, oracle.plan)


# --- bad input ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("trainer, field", [
    ({"backend": "jax"}, "training.trainer.backend"),
    ({"backend": "deepspeed", "zero_stage": 4}, "training.trainer.zero_stage"),
    ({"backend": "deepspeed", "zero_stage": 0}, "training.trainer.zero_stage"),
    ({"backend": "fsdp", "zero_stage": 3}, "training.trainer.zero_stage"),
    ({"backend": "megatron", "zero_stag": 3}, "training.trainer.zero_stag"),
])
def test_a_bad_trainer_is_one_line_naming_the_field(tmp_path, trainer, field):
    line = refused(tmp_path, with_training(MATH, trainer=trainer), field)
    assert line.startswith("error: ") and field in line


def test_trainer_and_trainer_options_together_are_refused(tmp_path):
    both = with_training(MATH, trainer={"backend": "fsdp"}, trainer_options=[{"backend": "megatron"}])
    assert "not both" in refused(tmp_path, both, "training.trainer_options")
    twice = with_training(MATH, trainer_options=[{"backend": "fsdp"}, {"backend": "fsdp"}])
    assert "twice" in refused(tmp_path, twice, "training.trainer_options")


def test_a_pilot_fit_prices_its_rows_on_the_instances_trainer():
    from planopt.errors import InputError
    from planopt.uncertainty.fit import read_pilot
    pilot = INSTANCES / "pilot-qwen3-8b-math.csv"
    rows = read_pilot(pilot, parse_instance(with_training(MATH, trainer={"backend": "fsdp"})))
    assert {r.hardware.trainer for r in rows if r.hardware is not None} == {"fsdp"}
    assert {r.hardware.trainer for r in read_pilot(pilot, parse_instance(MATH)) if r.hardware is not None} == {None}
    with pytest.raises(InputError, match="training.trainer_options"):
        read_pilot(pilot, parse_instance(with_training(MATH, trainer_options=BACKENDS[:2])))


def test_overlap_comm_is_deepspeeds_and_names_the_trainer_only_where_it_departs_from_deepspeeds_default(tmp_path):
    from planopt.models.schema.training import deepspeed_key
    assert [deepspeed_key(3, None), deepspeed_key(3, True), deepspeed_key(3, False)] == \
        ["deepspeed-zero3", "deepspeed-zero3", "deepspeed-zero3-serial"]
    assert [deepspeed_key(2, None), deepspeed_key(2, False), deepspeed_key(2, True), deepspeed_key(None, None)] == \
        ["deepspeed-zero2", "deepspeed-zero2", "deepspeed-zero2-overlap", "deepspeed-zero3"]
    with pytest.raises(ValueError, match="overlap_comm is DeepSpeed's, and backend is 'fsdp'"):
        parse_instance(sft_job("Qwen3-8B", [16], [{"backend": "fsdp", "overlap_comm": True}]))
    assert "overlap_comm is DeepSpeed's" in refused(
        tmp_path, sft_job("Qwen3-8B", [16], [{"backend": "megatron", "overlap_comm": False}]), "overlap_comm")
