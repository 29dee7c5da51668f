"""Asynchronous RL as a plan decision (issue 12, item 4; ``models/cost/asynchronous.py``).

- Each term against its formula: compute hours S + Σ_p max(G_p, T_p) on split hardware (the hours
  breakdown still sums to the wall time), quality q0 + (1 − δ)^s (q − q0), forgetting unchanged,
  no fit on colocated hardware.
- The MIP (its overlap epigraph) equals both oracles on random instances with rollout and staleness
  options (20 seeds by default, 40 more under ``slow``), and asynchronous plans are sometimes the answer.
- The scenario evaluator equals the evaluator per scenario on asynchronous plans (δ drawn).
- JSON in and out; staleness options the instance cannot honour, and chance constraints on an
  instance that offers staleness, are refused in one line naming the field.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from planopt.cli import app
from planopt.models.catalog import defaults as d
from planopt.models.uncertainty import model as U
from planopt.models.cost.evaluator import Evaluator
from planopt.models.schema.plan import HardwareChoice, Plan, Recipe
from planopt.models.schema.instance import Instance
from planopt.instance import parse_instance
from planopt.models.schema.plan import plan_json, read_plan
from planopt.job.plan_space import plan_space
from planopt.models.cost.hardware import hardware_options
from planopt.models.cost.recipes import enumerate_recipes
from planopt.job.model import solve

from tests.support.common import INSTANCES
from tests.support.oracle_checks import assert_mip_equals_both_oracles, assert_scenarios_equal_the_evaluator
from tests.support.common import split_seeds
from tests.support.async_instances import random_async_instance_dict

TINY = INSTANCES / "tiny.json"
SPLIT = HardwareChoice("H100-SXM", 8, None, "H100-SXM", 8)


def cli(*args):
    res = CliRunner().invoke(app, [str(a) for a in args])
    return res.exit_code, res.stdout, res.stderr


def tiny_async(**update) -> Instance:
    data = json.loads(TINY.read_text())
    data["hardware"]["rollout_gpus"] = [{"name": "H100-SXM", "counts": [8, 32]}]
    data["training"]["staleness_steps_options"] = [0, 1, 2]
    data["constraints"] = {}
    data.update(update)
    return parse_instance(data)


# --- the terms ---------------------------------------------------------------------------

def test_an_asynchronous_step_lasts_the_longer_of_generation_and_training_per_phase():
    inst = tiny_async()
    ev = Evaluator(inst)
    sync, stale = Recipe("rl", 300, (8, 4, 4)), Recipe("rl", 300, (8, 4, 4), staleness_steps=1)
    a, b = ev.compute_hours_by_component(sync, SPLIT), ev.compute_hours_by_component(stale, SPLIT)
    assert sum(a.values()) == pytest.approx(sum(b.values()), rel=1e-12)   # the same work, split by phase
    gen, train, serial = {}, {}, 0.0
    for key, hours in b.items():
        fam, phase = key.split("|")[0], key.rsplit("|", 1)[-1]
        if fam in ("decode_tokens", "rollout_tail_steps", "prefill_flops", "env_wait_seconds"):
            gen[phase] = gen.get(phase, 0.0) + hours
        elif fam in ("student_logprob_flops", "train_flops", "reward_model_flops"):
            train[phase] = train.get(phase, 0.0) + hours
        else:
            assert fam in ("weight_sync_steps", "eval_decode_tokens"), key
            serial += hours
    assert set(gen) == set(train) == {"@p0", "@p1", "@p2"}
    compute = serial + sum(max(gen[p], train[p]) for p in gen)
    m, m0 = ev.metrics(stale, SPLIT, 60.0), ev.metrics(sync, SPLIT, 60.0)
    o = ev.hardware(SPLIT).overhead_share(60.0)
    assert m.wall_hours == pytest.approx(compute * (1 + o), rel=1e-12)
    assert m.wall_hours < m0.wall_hours
    assert sum(m.hours_breakdown.values()) == pytest.approx(m.wall_hours, rel=1e-12)
    assert m.hours_breakdown["async_overlap"] == pytest.approx(compute - sum(b.values()), rel=1e-12)
    assert m.hours_breakdown["async_overlap"] < 0
    assert "async_overlap" not in m0.hours_breakdown


def test_staleness_costs_a_share_of_the_gain_and_leaves_forgetting():
    inst = tiny_async()
    ev = Evaluator(inst)
    q0 = inst.task.baseline_score
    base = ev.recipe(Recipe("rl", 1000, (8, 4, 4)))
    for s in (1, 2):
        r = ev.recipe(Recipe("rl", 1000, (8, 4, 4), staleness_steps=s))
        kept = (1 - d.STALENESS_GAIN_LOSS_PER_STEP) ** s
        assert r.quality - q0 == pytest.approx(kept * (base.quality - q0), rel=1e-12)
        assert r.forgetting_points == base.forgetting_points


def test_an_asynchronous_recipe_fits_split_hardware_only():
    ev = Evaluator(tiny_async())
    r = Recipe("rl", 300, (8, 4, 4), staleness_steps=1)
    assert ev.metrics(r, SPLIT, 60.0).fits_memory
    why = ev.metrics(r, HardwareChoice("H100-SXM", 8), 60.0).violations
    assert any("needs separate rollout GPUs" in v for v in why)


def test_recipes_and_plan_space_count_each_staleness_for_rl_only():
    inst = tiny_async()
    recipes = enumerate_recipes(inst)
    assert {r.staleness_steps for r in recipes if r.method == "rl"} == {0, 1, 2}
    assert {r.staleness_steps for r in recipes if r.method != "rl"} == {0}
    space = plan_space(inst)
    assert (space.recipes, space.hardware) == (len(recipes), len(hardware_options(inst)))


# --- the MIP against both oracles ---------------------------------------------------------

def _contract(seed: int) -> bool:
    inst = parse_instance(random_async_instance_dict(seed))
    mip = assert_mip_equals_both_oracles(inst)
    return mip.status == "optimal" and mip.plan.staleness_steps > 0


@pytest.mark.parametrize("seed", split_seeds(range(20), 10))
def test_mip_equals_both_oracles_with_staleness_options(seed):
    _contract(seed)


@pytest.mark.slow
def test_mip_equals_both_oracles_with_staleness_options_more_seeds():
    assert sum(_contract(seed) for seed in range(20, 60)) > 0


def test_asynchronous_rl_is_the_answer_somewhere_and_not_everywhere():
    fast = solve(tiny_async(objective="time")).plan
    cheap = solve(tiny_async()).plan
    assert fast.staleness_steps == 1 and fast.rollout_gpu is not None   # one step of staleness is all the overlap needs
    assert cheap.staleness_steps == 0


# --- scenarios ------------------------------------------------------------------------------

def test_scenarios_equal_the_evaluator_on_asynchronous_plans():
    inst = tiny_async()
    assert "priors.staleness_gain_loss_per_step" in U.point_scenario(inst)
    plans = [Plan.of(Recipe("rl", 300, (8, 4, 4), staleness_steps=s), h, 60.0)
             for s in (1, 2) for h in (SPLIT, HardwareChoice("A100-80GB", 4, None, "H100-SXM", 32))]
    assert_scenarios_equal_the_evaluator(inst, U.draw(inst, 5, seed=7), plans)


# --- JSON and refusals ------------------------------------------------------------------------

def test_an_asynchronous_plan_prints_its_staleness_and_reads_back():
    plan = solve(tiny_async(objective="time")).plan
    out = plan_json(plan)
    assert out["stages"][0]["staleness_steps"] == plan.staleness_steps == 1
    assert read_plan(json.loads(json.dumps(out))) == plan and Plan.from_dict(plan.to_dict()) == plan


@pytest.mark.parametrize("edit, field", [
    (lambda t: t["hardware"].pop("rollout_gpus"), "training.staleness_steps_options"),
    (lambda t: t["training"].update(methods={"opd": t["training"]["methods"]["opd"]}), "training.staleness_steps_options"),
    (lambda t: t["training"].update(staleness_steps_options=[0, -1]), "training.staleness_steps_options.1"),
])
def test_staleness_options_an_instance_cannot_honour_are_refused(tmp_path, edit, field):
    data = json.loads(TINY.read_text())
    data["hardware"]["rollout_gpus"] = [{"name": "H100-SXM", "counts": [8]}]
    data["training"]["staleness_steps_options"] = [0, 1]
    edit(data)
    path = tmp_path / "inst.json"
    path.write_text(json.dumps(data))
    code, _, err = cli("validate", path)
    assert code == 2 and field in err and len(err.strip().splitlines()) == 1, err


def test_a_staleness_the_instance_does_not_offer_is_refused(tmp_path):
    inst = tiny_async()
    plan = plan_json(solve(inst.model_copy(update={"objective": "time"})).plan)
    plan["stages"][0]["staleness_steps"] = 3
    (tmp_path / "inst.json").write_text(json.dumps(inst.model_dump(mode="json", exclude_none=True)))
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    code, _, err = cli("evaluate", tmp_path / "inst.json", tmp_path / "plan.json")
    assert code == 2 and "plan.staleness_steps: 3 is not an option" in err and len(err.strip().splitlines()) == 1, err


def test_chance_constraints_on_an_instance_with_staleness_run(tmp_path):
    """The overlap of each scenario is an epigraph (formulation/scenarios.py): a chance-constrained solve runs
    (held to the oracle on random asynchronous jobs in test_layers.py)."""
    path = tmp_path / "inst.json"
    path.write_text(json.dumps(tiny_async().model_dump(mode="json", exclude_none=True)))
    code, out, err = cli("solve", path, "--confidence", "0.6", "--scenarios", "30", "--json")
    assert code in (0, 3), err
    result = json.loads(out)
    assert result["plan"] is None or result["risk"]["in_sample_share"] >= 0.6 - 1e-9
