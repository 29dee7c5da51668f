"""Separate rollout hardware as a plan decision (issue 12, item 3; ``models/cost/rollout.py``).

- Each term of a split choice against its formula: generation on the rollout GPUs (their own
  tensor-parallel size, the dedicated HBM share), training and scoring on the training GPUs, the
  weight hand-over over the slower scale-out link, both sets' money, failures and GPU-hours; SFT
  fits no split choice.
- The MIP equals both oracles (plan by plan and vectorised) on random instances with rollout
  options (20 seeds by default, 60 more under ``slow``), and split is sometimes the answer.
- The scenario evaluator equals the evaluator per scenario on split plans (rollout GPU prices drawn).
- JSON in and out: ``rollout`` printed and read back, by ``solve --json`` and ``evaluate``; a plan
  naming a rollout set the instance lacks, a staleness above 0, a portfolio job with rollout GPUs
  and a rollout GPU too small for any shard of the student are refused in one line, exit 2.
- ``validate``'s count (``plan_space``) equals the options' count; a choice of student with rollout
  options equals its oracle (``slow``).
"""

from __future__ import annotations

import json
import random

import pytest

from planopt.models.catalog import defaults as d
from planopt.models.cost import physics as ph
from planopt.models.uncertainty import model as U
from planopt.models.cost.evaluator import Evaluator
from planopt.models.cost.hardware import hardware_options
from planopt.models.schema.plan import HardwareChoice, Plan, Recipe
from planopt.models.schema.instance import Instance
from planopt.instance import parse_instance
from planopt.models.schema.plan import Plan, plan_json, read_plan
from planopt.oracles.by_plan import all_plans
from planopt.job.plan_space import plan_space
from planopt.job.model import solve
from typer.testing import CliRunner
from planopt.cli import app

from tests.support.common import INSTANCES
from tests.support.oracle_checks import assert_mip_equals_both_oracles, assert_scenarios_equal_the_evaluator
from tests.support.random_instances import GPUS, random_job_dict, with_drawn_limits
from tests.support.staged_instances import staged_split_instance
from tests.support.common import split_seeds

TINY = INSTANCES / "tiny.json"


def cli(*args):
    res = CliRunner().invoke(app, [str(a) for a in args])
    return res.exit_code, res.stdout, res.stderr


def tiny_with_rollout(rollout=({"name": "L40S", "counts": [4, 8]}, {"name": "H100-SXM", "counts": [32]})) -> Instance:
    data = json.loads(TINY.read_text())
    data["hardware"]["rollout_gpus"] = [dict(o) for o in rollout]
    data["hardware"]["offers"] = "reference"  # the reference prices these checks are written in (one per type)
    data["constraints"] = {}
    return parse_instance(data)


# --- the terms of a split choice ------------------------------------------------------

def test_split_choices_are_every_training_choice_with_every_rollout_set():
    inst = tiny_with_rollout()
    options = hardware_options(inst)
    colocated = [h for h in options if not h.split]
    assert len(options) == len(colocated) * (1 + 3)
    assert HardwareChoice("H100-SXM", 8, None, "L40S", 4) in options
    assert plan_space(inst).hardware == len(options)
    # one type on both sides: together within the training entry's availability
    data = json.loads(TINY.read_text())
    data["hardware"]["offers"] = "reference"  # one price per type, every count (the pairing rules are the subject)
    data["hardware"]["gpus"][2]["available_gpus"] = 8
    data["hardware"]["rollout_gpus"] = [{"name": "H100-SXM", "counts": [4, 8]}]
    shared = parse_instance(data)
    pairs = [(h.count, h.rollout_count) for h in hardware_options(shared) if h.split and h.gpu == "H100-SXM"]
    assert pairs == [(1, 4), (2, 4), (4, 4)]
    assert plan_space(shared).hardware == len(hardware_options(shared))
    # one vendor on both sides: the weights go over one NCCL communicator
    data["hardware"]["rollout_gpus"] = [{"name": "MI300X", "counts": [8]}, {"name": "L40S", "counts": [8]}]
    data["hardware"]["gpus"].append({"name": "MI325X", "counts": [8]})
    mixed = parse_instance(data)
    pairs = {(h.gpu, h.rollout_gpu) for h in hardware_options(mixed) if h.split}
    assert ("MI325X", "MI300X") in pairs and ("H100-SXM", "L40S") in pairs
    assert not {("MI325X", "L40S"), ("H100-SXM", "MI300X"), ("L4", "MI300X")} & pairs
    assert plan_space(mixed).hardware == len(hardware_options(mixed))


def test_generation_runs_on_the_rollout_gpus_and_training_on_the_training_gpus():
    inst = tiny_with_rollout()
    ev = Evaluator(inst)
    colocated, split = ev.hardware(HardwareChoice("H100-SXM", 8)), ev.hardware(HardwareChoice("H100-SXM", 8, None, "L40S", 8))
    alone = ev.hardware(HardwareChoice("L4", 8))  # any colocated choice of other training GPUs
    rp = ev.recipe(Recipe("opd", 1000, (8, 4, 4), "fp8"))
    for key in rp.amounts:
        fam = key.split("|")[0]
        if fam in ("decode_tokens", "rollout_tail_steps", "eval_decode_tokens"):
            assert split.seconds_per_unit(key) != colocated.seconds_per_unit(key), key
        elif fam == "weight_sync_steps":
            expect = ph.handover_bytes(inst.student) / (min(50, 6.25, d.REFIT_GB_PER_S_PER_GPU) * ph.GB)
            assert split.seconds_per_unit(key) == pytest.approx(expect, rel=1e-12)
        elif fam == "prefill_flops":
            assert split.seconds_per_unit(key) == ph.compute_seconds(1.0, inst.student, split.rollout_gpu, 8, inst.efficiency)
        else:  # scoring, training, environment waits: the training GPUs', as colocated
            assert split.seconds_per_unit(key) == colocated.seconds_per_unit(key), key
    assert alone.seconds_per_unit("train_flops") != split.seconds_per_unit("train_flops")
    # the engine has the rollout GPUs to itself: the dedicated share of their HBM
    assert split.rollout_tp == ph.rollout_tensor_parallel(inst.student, split.rollout_gpu, 8,
                                                          inst.efficiency.model_copy(update={"rollout_hbm_share": 0.9}),
                                                          inst.task.prompt_tokens + inst.task.max_response_tokens)


def test_a_split_plan_pays_both_gpu_sets_and_counts_their_failures_and_gpu_hours():
    inst = tiny_with_rollout()
    inst = inst.model_copy(update={"reliability": inst.reliability.model_copy(update={"failures_per_gpu_hour": 1e-3})})
    ev = Evaluator(inst)
    h = HardwareChoice("H100-SXM", 8, None, "L40S", 4)
    hp = ev.hardware(h)
    assert hp.usd_per_hour_of_gpus == pytest.approx(8 * 1.87 + 4 * 1.86)
    assert hp.failures_per_hour == pytest.approx(12 * 1e-3)
    m = ev.metrics(Recipe("rl", 300, (8, 4, 4)), h, 60.0)
    assert m.fits_memory
    train = m.wall_hours - m.hours_breakdown["data_lead_time"]
    assert m.gpu_hours == pytest.approx(12 * train)
    assert m.cost_breakdown_usd["compute"] + m.cost_breakdown_usd["evaluation"] == pytest.approx(hp.usd_per_hour_of_gpus * train)


def test_sft_fits_no_split_choice():
    ev = Evaluator(tiny_with_rollout())
    why = ev.hardware(HardwareChoice("H100-SXM", 8, None, "L40S", 4)).memory_bytes_per_gpu("sft")[1]
    assert why is not None and "SFT generates nothing" in why
    assert ev.hardware(HardwareChoice("H100-SXM", 8)).fits("sft")


# --- the MIP against both oracles ------------------------------------------------------

def random_split_instance_dict(seed: int) -> dict:
    """A random small job whose methods generate, with one or two rollout GPU types that can hold the student."""
    rng = random.Random(10_000 + seed)
    while True:
        inst = random_job_dict(rng, f"split-{seed}")
        if not {"rl", "opd"} & set(inst["training"]["methods"]):
            continue
        inst["hardware"]["rollout_gpus"] = [{"name": g, "counts": sorted(rng.sample([1, 2, 4, 8, 16], rng.randint(1, 2)))}
                                            for g in rng.sample(GPUS, rng.randint(1, 2))]
        try:
            parsed = parse_instance(inst)
        except ValueError:
            continue  # a rollout GPU too small for the student: drawn again
        if len(all_plans(parsed, limit=10**9)) <= 60_000:
            return with_drawn_limits(inst, all_plans(parsed), rng)


def _contract(seed: int) -> bool:
    inst = parse_instance(random_split_instance_dict(seed))
    mip = assert_mip_equals_both_oracles(inst)
    return mip.status == "optimal" and mip.plan.rollout_gpu is not None


@pytest.mark.parametrize("seed", split_seeds(range(20), 10))
def test_mip_equals_both_oracles_with_rollout_options(seed):
    _contract(seed)


@pytest.mark.slow
def test_mip_equals_both_oracles_with_rollout_options_more_seeds():
    splits = sum(_contract(seed) for seed in range(20, 80))
    assert splits > 0  # split is sometimes the answer, not never


def test_split_is_the_answer_somewhere_and_not_everywhere():
    picked = [solve(tiny_with_rollout().model_copy(update={"objective": objective})).plan.rollout_gpu
              for objective in ("cost", "time")]
    assert picked[0] is None and picked[1] is not None, picked


# --- scenarios ---------------------------------------------------------------------------

def test_scenarios_equal_the_evaluator_on_split_plans():
    inst = tiny_with_rollout()
    assert "hardware.L40S.price_usd_per_gpu_hour" in U.point_scenario(inst)
    plans = [Plan.of(Recipe("rl", 300, (8, 4, 4)), HardwareChoice("H100-SXM", 8, None, "L40S", 4), 60.0),
             Plan.of(Recipe("opd", 1000, (8, 4, 4), "fp8"), HardwareChoice("A100-80GB", 4, None, "H100-SXM", 32), 240.0)]
    assert_scenarios_equal_the_evaluator(inst, U.draw(inst, 5, seed=3), plans)


# --- JSON in and out -----------------------------------------------------------------------

def test_a_split_plan_prints_its_rollout_and_reads_back():
    inst = tiny_with_rollout().model_copy(update={"objective": "time"})
    plan = solve(inst).plan
    out = plan_json(plan)
    stage = out["stages"][0]
    assert stage["rollout"] == {"gpu": plan.rollout_gpu, "gpu_count": plan.rollout_gpu_count} and stage["staleness_steps"] == 0
    back = read_plan(json.loads(json.dumps(out)))
    assert back == plan
    assert Plan.from_dict(plan.to_dict()) == plan
    staged = Plan.from_dict(out)
    assert staged.stages[0].hardware == plan.hardware and staged.to_dict() == out


def test_a_colocated_plan_prints_a_null_rollout_and_its_one_stage_dict_as_before():
    plan = solve(tiny_with_rollout()).plan
    assert plan_json(plan)["stages"][0]["rollout"] is None
    assert "rollout" not in plan.flat_dict() and "rollout_gpu" not in plan.flat_dict()


@pytest.mark.parametrize("rollout, staleness, field", [
    # options the instance lacks: named as the one-stage plan's fields (as plan.gpu is)
    ({"gpu": "H200", "gpu_count": 8}, 0, "plan.rollout.gpu: 'H200' is not in hardware.rollout_gpus"),
    ({"gpu": "L40S", "gpu_count": 16}, 0, "plan.rollout.gpu_count: 16"),
    ({"gpu": "L40S"}, 0, "plan.stages.0.rollout.gpu_count"),
    ({"gpu": "L40S", "gpu_count": 4, "tp": 2}, 0, "plan.stages.0.rollout.tp"),
    ("L40S", 0, "plan.stages.0.rollout"),
    ({"gpu": "L40S", "gpu_count": 4}, 1, "plan.staleness_steps: 1 is not an option"),  # the instance offers [0]
])
def test_bad_rollout_fields_of_a_plan_are_refused_naming_the_field(tmp_path, rollout, staleness, field):
    plan = plan_json(solve(tiny_with_rollout()).plan)
    plan["stages"][0].update(rollout=rollout, staleness_steps=staleness)
    inst_path = tmp_path / "inst.json"
    inst_path.write_text(json.dumps(tiny_with_rollout().model_dump(mode="json", exclude_none=True)))
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    code, _, err = cli("evaluate", inst_path, tmp_path / "plan.json")
    assert code == 2, err
    assert field in err and len(err.strip().splitlines()) == 1, err


def test_a_rollout_gpu_too_small_for_any_shard_is_refused_naming_the_field(tmp_path):
    data = json.loads(TINY.read_text())
    data["student"] = {"preset": "Qwen3-32B"}
    data["hardware"]["rollout_gpus"] = [{"name": "L40S", "counts": [8]}, {"name": "L4", "counts": [1]}]
    path = tmp_path / "inst.json"
    path.write_text(json.dumps(data))
    code, _, err = cli("validate", path)
    assert code == 2
    line = err.strip()
    assert len(line.splitlines()) == 1 and "hardware.rollout_gpus.1" in line and "too little memory for any model shard" in line


def test_rollout_gpus_on_a_job_that_generates_nothing_are_refused(tmp_path):
    data = json.loads(TINY.read_text())
    data["training"]["methods"] = {"sft": data["training"]["methods"]["sft"]}
    data["hardware"]["rollout_gpus"] = [{"name": "L40S", "counts": [8]}]
    path = tmp_path / "inst.json"
    path.write_text(json.dumps(data))
    code, _, err = cli("validate", path)
    assert code == 2 and "hardware.rollout_gpus" in err and len(err.strip().splitlines()) == 1, err


# --- staged plans: each stage may split --------------------------------------------------------

# seeds of range(40) whose staged_split_instance exists (test_the_staged_seeds_exist_and_some_split checks them)
STAGED_SEEDS = [0, 1, 5, 6, 9, 11]


def test_the_staged_seeds_exist_and_some_split():
    splits = 0
    for seed in STAGED_SEEDS:
        inst = staged_split_instance(seed, max_plans=1500)
        assert inst is not None, seed
        plan = solve(inst).plan
        stages = [] if plan is None else plan.stages
        splits += any(getattr(s, "hardware", s).rollout_gpu is not None for s in stages)
    assert splits > 0


@pytest.mark.parametrize("seed", STAGED_SEEDS)
def test_the_staged_mip_equals_the_staged_oracle_with_rollout_options(seed):
    from tests.support.oracle_checks import assert_staged_mip_equals_the_staged_oracle
    assert_staged_mip_equals_the_staged_oracle(staged_split_instance(seed, max_plans=1500))


# --- the chance-constrained model prices split choices per scenario ------------------------------

@pytest.mark.parametrize("seed", [11, 13, 50, 56, 63, 78])  # seeds whose point optimum splits (and a few more)
def test_the_chance_mip_equals_enumeration_with_rollout_options(seed):
    from planopt.uncertainty.chance import solve_chance
    from planopt.oracles.by_plan import best_under_scenarios
    from tests.support.oracle_checks import close
    inst = parse_instance(random_split_instance_dict(seed))
    mip = solve_chance(inst, 0.7, 16, seed, out_of_sample=100, guard=False)
    oracle = best_under_scenarios(inst, U.draw(inst, 16, seed), 0.7)
    assert (mip.status == "optimal") == (oracle is not None), (mip.status, mip.message)
    if oracle is None:
        return
    key = {"cost": "cost_usd", "time": "wall_hours", "quality": "quality", "forgetting": "forgetting_points"}[inst.objective]
    assert close(mip.risk["expected"][key], oracle.expected[key]), (mip.plan, oracle.plan)
    assert close(mip.risk["expected"]["cost_usd"], oracle.expected["cost_usd"]), (mip.plan, oracle.plan)


@pytest.mark.slow  # 35 s on 2 cores (the default run's heaviest); .ci/run runs it with -m slow
def test_a_choice_of_student_with_rollout_options_equals_its_oracle():
    """candidate_students: one block per student, each with split choices (a student too large for a rollout set
    simply does not fit it); the time optimum splits."""
    from planopt.oracles.by_plan import best_plan
    data = json.loads((INSTANCES / "math-8b-or-32b.json").read_text())
    data["hardware"]["rollout_gpus"] = [{"name": "H100-SXM", "counts": [8, 32]}, {"name": "L40S", "counts": [1]}]
    data["objective"] = "time"
    inst = parse_instance(data)
    mip, oracle = solve(inst), best_plan(inst)
    assert mip.status == oracle.status == "optimal"
    assert mip.metrics.wall_hours == pytest.approx(oracle.metrics.wall_hours, rel=1e-9)
    assert mip.plan.rollout_gpu == "H100-SXM"
