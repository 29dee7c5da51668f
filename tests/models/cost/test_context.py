"""Long context and eager decode (issue 24 item 2): context parallelism divides activation memory and prices its
KV ring only beyond the attention it hides behind, a sequence too long for one GPU fits with it, decode without
CUDA graphs pays its launches, each by its formula recomputed here from the sources' figures; bad input is one
line naming the field, exit 2; the MIP equals both oracles on random instances that draw the new options."""

from __future__ import annotations

import json
import math
import random

import pytest

from tests.support.common import INSTANCES, refused, split_seeds
from tests.support.oracle_checks import assert_mip_equals_both_oracles, close
from tests.support.random_instances import random_job_dict
from planopt.instance import parse_instance
from planopt.job.model import solve
from planopt.models.catalog import find_gpu
from planopt.models.cost import physics as ph
from planopt.models.cost.evaluator import Evaluator
from planopt.models.cost.hardware import hardware_options
from planopt.models.schema.plan import HardwareChoice, Plan, Recipe

MATH = json.loads((INSTANCES / "qwen3-8b-math.json").read_text())
TINY = json.loads((INSTANCES / "tiny.json").read_text())


def rl_job(preset: str, response: float, longest: float, counts: list[int], degrees, gpu: str = "H100-SXM") -> dict:
    """An RL-only job of ``preset`` on ``gpu``, context parallelism at ``degrees``."""
    return {
        "name": "long-context", "student": {"preset": preset},
        "task": {"baseline_score": 40, "general_score_baseline": 70, "prompt_tokens": 150, "response_tokens": response,
                 "max_response_tokens": longest, "prompts_available": 40000},
        "training": {"methods": {"rl": {"steps_options": [100], "prompts_per_step": 64}},
                     "samples_per_prompt_options": [4], "context_parallel": degrees},
        "hardware": {"gpus": [{"name": gpu, "counts": counts}]},
        "objective": "cost",
    }


def rl_recipe(inst) -> Recipe:
    return Recipe("rl", 100, (4,) * inst.training.phases)


# --- memory: each GPU holds s/c of the activations ---------------------------------------------------------

def test_context_parallelism_divides_the_activation_memory_by_the_degree():
    # Qwen3-32B (catalog: 32.8B parameters, 64 layers, hidden 5120), a 100,150-token longest sequence, 16 H100s:
    # ZeRO-3 Adam state 16 bytes/param over 16 GPUs plus 2 bytes x layers x hidden x tokens/c of checkpoints
    inst = parse_instance(rl_job("Qwen3-32B", 40000, 100000, [16], [1, 2, 4]))
    ev, stu = Evaluator(inst), inst.student
    for cp in (1, 2, 4):
        got, _ = ev.hardware(HardwareChoice("H100-SXM", 16, context_parallel=cp)).memory_bytes_per_gpu("rl")
        expected = 16.0 * stu.params_b * 1e9 / 16 + 2.0 * stu.layers * stu.hidden * (150 + 100000) / cp
        assert got == pytest.approx(expected, rel=1e-12)


def test_a_sequence_too_long_for_one_gpu_fits_with_context_parallelism_and_the_mip_takes_it():
    # 98 GB/GPU of state and checkpoints at c = 1 against 0.9 x 80 GB usable: no plan without context parallelism
    alone = solve(parse_instance(rl_job("Qwen3-32B", 40000, 100000, [16], 1)))
    assert alone.status == "infeasible"
    inst = parse_instance(rl_job("Qwen3-32B", 40000, 100000, [16], [1, 2, 4]))
    mip = assert_mip_equals_both_oracles(inst)
    assert mip.status == "optimal" and mip.plan.hardware.context_parallel in (2, 4)
    assert Evaluator(inst).evaluate(mip.plan).fits_memory
    assert mip.plan.to_dict()["stages"][0]["context_parallel"] == mip.plan.hardware.context_parallel
    assert Plan.from_dict(json.loads(json.dumps(mip.plan.to_dict()))) == mip.plan


# --- the KV ring: only what the layer's attention does not hide ---------------------------------------------

def _ring_expected_seconds_per_byte(arch, gpu, count: int, cp: int, seq: float, inst) -> float:
    """Ring Attention's max(compute, transfer) per layer-pass, written out from its inputs (cost/context.py)."""
    link = (gpu.intra_node_gb_per_s / 2.0 if cp <= gpu.scale_up_domain_gpus else gpu.inter_node_gb_per_s) * 1e9
    achieved = gpu.bf16_tflops * 1e12 * ph.mfu(arch, gpu, count, inst.efficiency)   # one GPU's FLOP/s at the curve
    kv_per_layer = 2.0 * arch.kv_heads * arch.head_dim * 2.0                        # K and V, bf16, one token
    attention = 4.0 * arch.hidden * seq * seq * 0.5 / cp / achieved                 # causal, per GPU and layer
    transfer = (cp - 1) / cp * seq * kv_per_layer / link
    return (cp - 1) / (count * link) * max(0.0, 1.0 - attention / transfer)


def test_the_ring_costs_what_outlasts_attention_on_a_small_model_across_nodes():
    # Qwen3-0.6B (hidden 1024, 8 KV heads of 128), 4,150-token sequences, rings of 16 over 16 H100s: the ring
    # leaves the 8-GPU node and its transfer outlasts the attention it overlaps
    inst = parse_instance(rl_job("Qwen3-0.6B", 4000, 8192, [16], [1, 16]))
    ev, stu, gpu = Evaluator(inst), inst.student, find_gpu("H100-SXM")
    r = rl_recipe(inst)
    ring = ev.compute_hours_by_component(r, HardwareChoice("H100-SXM", 16, context_parallel=16))
    flat = ev.compute_hours_by_component(r, HardwareChoice("H100-SXM", 16, context_parallel=1))
    u = _ring_expected_seconds_per_byte(stu, gpu, 16, 16, 4150.0, inst)
    assert u > 0
    samples = 100 * 64 * 4
    kv_all_layers = 2.0 * stu.layers * stu.kv_heads * stu.head_dim * 2.0
    train_units = 4.0 if inst.training.activation_recompute else 3.0    # forward, backward (KV and dKV), recompute
    # the reference's pass; the default release (NeMo RL v0.7, force_on_policy_ratio) skips the policy's own
    assert inst.efficiency.software_release == "nemo-rl-v0.7" and inst.training.reference_logprobs
    logprob_units = 1.0
    expected_train = samples * 4150.0 * kv_all_layers * train_units * u / 3600.0
    expected_logprob = samples * 4150.0 * kv_all_layers * logprob_units * u / 3600.0
    assert ring["cp_train_kv_bytes|rollout_sequence"] == pytest.approx(expected_train, rel=1e-9)
    assert ring["cp_logprob_kv_bytes|rollout_sequence"] == pytest.approx(expected_logprob, rel=1e-9)
    assert flat["cp_train_kv_bytes|rollout_sequence"] == flat["cp_logprob_kv_bytes|rollout_sequence"] == 0.0
    # everything else is the same work on the same GPUs
    for key, hours in flat.items():
        if not key.startswith("cp_"):
            assert ring[key] == pytest.approx(hours, rel=1e-12), key
    extra = ev.metrics(r, HardwareChoice("H100-SXM", 16, context_parallel=16), 60).cost_usd \
        - ev.metrics(r, HardwareChoice("H100-SXM", 16, context_parallel=1), 60).cost_usd
    assert extra > 0


def test_the_ring_is_hidden_where_attention_outlasts_it():
    # Qwen3-32B at 40,150 tokens in rings of 2 over NVLink: attention per layer is ~106x the KV transfer
    inst = parse_instance(rl_job("Qwen3-32B", 40000, 60000, [16], [1, 2]))
    stu, gpu = inst.student, find_gpu("H100-SXM")
    assert _ring_expected_seconds_per_byte(stu, gpu, 16, 2, 40150.0, inst) == 0.0
    ev, r = Evaluator(inst), rl_recipe(inst)
    hours = ev.compute_hours_by_component(r, HardwareChoice("H100-SXM", 16, context_parallel=2))
    assert hours["cp_train_kv_bytes|rollout_sequence"] == hours["cp_logprob_kv_bytes|rollout_sequence"] == 0.0


def test_degrees_are_offered_only_where_they_divide_the_gpu_count():
    inst = parse_instance(rl_job("Qwen3-0.6B", 1000, 4096, [2, 4, 8], [1, 4]))
    offered = {(h.count, h.context_parallel) for h in hardware_options(inst)}
    assert offered == {(2, 1), (4, 1), (4, 4), (8, 1), (8, 4)}


# --- eager decode -----------------------------------------------------------------------------------------

def _eager_per_layer(batch: float) -> float:
    """The sources' per-layer launch overhead: vLLM PR #1440 (Llama 2 7B, batch 1: 1.2 s vs 1.05 s for 100
    tokens over 32 layers), xLLM PR #713 (Qwen3-0.6B, batch 30: 9.85 vs 9.11 ms TPOT over 28 layers), linear in
    log(batch) between them, flat outside."""
    at1, at30 = (1.2 - 1.05) / 100 / 32, (9.85e-3 - 9.11e-3) / 28
    if batch <= 1:
        return at1
    if batch >= 30:
        return at30
    return at1 + (at30 - at1) * math.log(batch) / math.log(30)


@pytest.mark.parametrize("batch", [1.0, 5.0, 30.0, 200.0])
def test_an_eager_decode_iteration_pays_its_launches_per_layer(batch):
    inst = parse_instance(TINY)
    eager = inst.efficiency.model_copy(update={"cuda_graphs": False})
    arch, gpu = inst.student, find_gpu("H100-SXM")
    graphs = ph.decode_step_seconds(arch, gpu, 1, batch, 2000.0, inst.efficiency)
    slower = ph.decode_step_seconds(arch, gpu, 1, batch, 2000.0, eager)
    assert slower - graphs == pytest.approx(arch.layers * _eager_per_layer(batch), rel=1e-12)
    # the decode factor of a fit or a scenario still scales the whole iteration
    fitted = eager.model_copy(update={"decode_factor": 2.0})
    assert ph.decode_step_seconds(arch, gpu, 1, batch, 2000.0, fitted) == pytest.approx(slower / 2.0, rel=1e-12)


def test_eager_decode_moves_only_the_engines_hours_and_by_its_formula():
    data = json.loads(json.dumps(TINY))
    plan = solve(parse_instance(data)).plan
    data.setdefault("efficiency", {})["cuda_graphs"] = False
    ev_g, ev_e = Evaluator(parse_instance(TINY)), Evaluator(parse_instance(data))
    r, h = plan.stages[0].recipe, plan.stages[0].hardware
    with_graphs, eager = ev_g.compute_hours_by_component(r, h), ev_e.compute_hours_by_component(r, h)
    for key, hours in with_graphs.items():
        family = key.split("|")[0]
        if family in ("decode_tokens", "rollout_tail_steps", "eval_decode_tokens"):
            assert eager[key] > hours, key
        else:
            assert eager[key] == hours, key
    # the tail decodes one sequence: its step grows by layers x the batch-1 overhead, per tail token
    inst = ev_g.inst
    tail_tokens = inst.task.max_response_tokens - inst.task.response_tokens
    added = tail_tokens * inst.student.layers * _eager_per_layer(1.0) * r.steps / 3600.0
    assert eager["rollout_tail_steps|" + r.memory_class] - with_graphs["rollout_tail_steps|" + r.memory_class] \
        == pytest.approx(added, rel=1e-9)
    assert ev_e.plan_metrics(plan).cost_usd > ev_g.plan_metrics(plan).cost_usd


# --- bad input ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("value, words", [
    (3, "not a power of two"), ([1, 6], "not a power of two"), ([2, 2], "twice"), ([], "non-empty"),
    (128, "larger than every GPU count"), (0, "training.context_parallel"), ("2", "training.context_parallel"),
])
def test_a_bad_context_parallel_degree_is_one_line_naming_the_field(tmp_path, value, words):
    data = json.loads(json.dumps(MATH))
    data["training"]["context_parallel"] = value
    line = refused(tmp_path, data, "training.context_parallel")
    assert words in line


def test_a_gpu_count_no_degree_divides_is_refused_naming_it(tmp_path):
    data = rl_job("Qwen3-0.6B", 1000, 4096, [2, 3, 4], [2, 4])
    assert "3 GPUs run no degree" in refused(tmp_path, data, "hardware.gpus.0.counts")


def test_a_bad_cuda_graphs_value_is_one_line_naming_the_field(tmp_path):
    data = json.loads(json.dumps(TINY))
    data["efficiency"] = {"cuda_graphs": "yes"}
    refused(tmp_path, data, "efficiency.cuda_graphs")


def test_evaluate_refuses_a_degree_the_instance_does_not_offer():
    inst = parse_instance(rl_job("Qwen3-0.6B", 1000, 4096, [8], [1, 2]))
    plan = solve(inst).plan
    for cp in (4, 3):
        bad = Plan.from_dict({**plan.to_dict(), "stages": [{**plan.to_dict()["stages"][0], "context_parallel": cp}]})
        with pytest.raises(ValueError, match="plan.context_parallel"):
            Evaluator(inst).evaluate(bad)


# --- the MIP equals both oracles with the new options drawn -----------------------------------------------

def _random_long_context(seed: int) -> dict:
    rng = random.Random(seed)
    d_ = random_job_dict(rng, f"long-context-{seed}")
    most = max(n for g in d_["hardware"]["gpus"] for n in g["counts"])
    d_["training"]["context_parallel"] = [c for c in (1, 2, 4) if c <= most]
    if rng.random() < 0.5:
        d_["efficiency"] = {"cuda_graphs": False}
    return d_


@pytest.mark.parametrize("seed", split_seeds(range(10), 4))
def test_the_mip_equals_both_oracles_with_context_parallel_and_eager_options(seed):
    inst = parse_instance(_random_long_context(seed))
    mip = assert_mip_equals_both_oracles(inst)
    if mip.plan is not None:
        assert mip.plan.hardware.context_parallel in inst.training.context_parallel_degrees()
        assert close(Evaluator(inst).evaluate(mip.plan).cost_usd, mip.metrics.cost_usd)


# --- calibration cases state their degree and their decode mode -------------------------------------------

STEP_CASE = json.loads((INSTANCES / "calibration" / "nemo-rl-llama31-8b-16xh100.json").read_text())


def _case_seconds(tmp_path, **workload):
    from planopt.uncertainty.calibrate import load_case, step_seconds
    case = json.loads(json.dumps(STEP_CASE))
    case["workload"].update(workload)
    f = tmp_path / "case.json"
    f.write_text(json.dumps(case))
    return step_seconds(load_case(f))


def test_a_case_decoding_eagerly_is_slower_by_its_launches_alone(tmp_path):
    total, by = _case_seconds(tmp_path)
    eager_total, eager = _case_seconds(tmp_path, cuda_graphs=False)
    assert eager_total > total
    for key, seconds in by.items():
        if key.split("|")[0] in ("decode_tokens", "rollout_tail_steps"):
            assert eager[key] > seconds, key
        else:
            assert eager[key] == seconds, key


def test_a_case_with_context_parallelism_prices_its_ring_and_a_bad_degree_is_its_fields_error(tmp_path):
    from planopt.uncertainty.calibrate import load_case
    _, by = _case_seconds(tmp_path, context_parallel=2)
    assert "cp_train_kv_bytes|rollout_sequence" in by and "cp_logprob_kv_bytes|rollout_sequence" in by
    case = json.loads(json.dumps(STEP_CASE))
    case["workload"]["context_parallel"] = 3
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(case))
    from planopt.errors import InputError
    with pytest.raises(InputError, match="workload.context_parallel") as exc:
        load_case(f)
    assert "not a power of two" in str(exc.value) and len(str(exc.value).splitlines()) == 1


def test_a_context_parallel_plan_round_trips_through_solve_json_and_evaluate(tmp_path):
    from typer.testing import CliRunner
    from planopt.cli import app
    from planopt.report.result_schema import SolveResultSchema
    job = tmp_path / "long.json"
    job.write_text(json.dumps(rl_job("Qwen3-32B", 40000, 100000, [16], [1, 2, 4])))
    res = CliRunner().invoke(app, ["solve", str(job), "--json", "--no-sensitivity"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    SolveResultSchema.model_validate(out)
    assert out["plan"]["stages"][0]["context_parallel"] in (2, 4)
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(out["plan"]))
    again = CliRunner().invoke(app, ["evaluate", str(job), str(plan), "--json"])
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["metrics"]["cost_usd"] == pytest.approx(out["metrics"]["cost_usd"], rel=1e-9)
