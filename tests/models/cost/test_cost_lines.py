"""The cost lines issue 12 (item 8) adds: evaluation runs, network egress, log ingest.

Each is its own line of ``costs.cost_breakdown_usd``, each against its formula and
its sourced default; the lines still sum to the total, and the MIP equals both
oracles with them drawn at random (``tests/models/cost/test_lora.py`` runs the contract on
``adapter_instances``, which draw validation runs, egress and ingest too).
"""

from __future__ import annotations

import json

import pytest

from planopt.instance import load_instance
from planopt.models.catalog import defaults as d
from planopt.models.cost import physics as ph
from planopt.models.cost.evaluator import COST_KEYS, HOURS_KEYS, Evaluator
from planopt.models.cost.recipes import EVAL, evaluation_runs
from planopt.models.schema.instance import Instance
from planopt.instance import parse_instance
from planopt.job.model import solve

from tests.support.common import INSTANCES

NAMES = ["tiny", "qwen3-8b-math", "qwen3-32b-agentic-rl", "llama-70b-domain-injection"]


def instance(name: str = "qwen3-8b-math", **sections) -> Instance:
    data = json.loads((INSTANCES / f"{name}.json").read_text())
    for key, value in sections.items():
        data.setdefault(key, {}).update(value)
    return parse_instance(data)


def plan_of(inst: Instance):
    res = solve(inst)
    assert res.status == "optimal"
    return res.plan


def test_the_defaults_are_the_sourced_values():
    inst = instance()
    assert (inst.evaluation.every_steps, inst.evaluation.prompts) == (d.EVAL_EVERY_STEPS, d.EVAL_PROMPTS) == (10, 256)
    assert inst.network.egress_usd_per_gb == d.EGRESS_USD_PER_GB == 0.09 and inst.network.crosses_region == []
    assert inst.storage.log_ingest_usd_per_gb == d.LOG_INGEST_USD_PER_GB == 0.50


@pytest.mark.parametrize("name", NAMES)
def test_every_line_is_in_the_breakdown_and_they_sum_to_the_total(name):
    inst = load_instance(INSTANCES / f"{name}.json")
    res = solve(inst)
    m = res.metrics if res.plan is not None else None
    if m is None:
        pytest.skip("no plan")
    assert tuple(m.cost_breakdown_usd) == COST_KEYS and tuple(m.hours_breakdown) == HOURS_KEYS
    assert {"evaluation", "network", "log_ingest"} <= set(m.cost_breakdown_usd)
    assert sum(m.cost_breakdown_usd.values()) == pytest.approx(m.cost_usd, rel=1e-12)
    assert sum(m.hours_breakdown.values()) == pytest.approx(m.wall_hours, rel=1e-12)


def test_evaluation_is_a_decode_of_the_eval_set_on_the_plans_gpus():
    inst = instance()
    plan = plan_of(inst)
    ev = Evaluator(inst)
    m = ev.evaluate(plan)
    runs = evaluation_runs(inst, plan.recipe)
    assert runs == plan.steps // 10 > 0
    tokens = runs * 256 * inst.task.response_tokens
    assert ev.recipe(plan.recipe).amounts[EVAL] == tokens
    hours = tokens * ev.hardware(plan.hardware).seconds_per_unit(EVAL) / 3600
    assert m.hours_breakdown["evaluation"] == pytest.approx(hours, rel=1e-12)
    overhead = ev.hardware(plan.hardware).overhead_share(plan.checkpoint_interval_minutes)
    usd = plan.gpu_count * ev.hardware(plan.hardware).price_usd_per_gpu_hour * hours * (1 + overhead)
    assert m.cost_breakdown_usd["evaluation"] == pytest.approx(usd, rel=1e-12)
    # without validation runs the line and the hours vanish, and the plan is cheaper by exactly that GPU money
    off = Evaluator(instance(evaluation={"every_steps": None})).evaluate(plan)
    assert off.cost_breakdown_usd["evaluation"] == 0 and off.hours_breakdown["evaluation"] == 0
    assert m.cost_usd - off.cost_usd == pytest.approx(usd + inst.operations.usd_per_wall_hour * hours * (1 + overhead)
                                                      + (m.cost_breakdown_usd["storage"] - off.cost_breakdown_usd["storage"]),
                                                      rel=1e-9)
    more = Evaluator(instance(evaluation={"prompts": 1024, "every_steps": 5})).evaluate(plan)
    assert more.hours_breakdown["evaluation"] > 2 * m.hours_breakdown["evaluation"]


def test_egress_is_billed_only_for_what_crosses_a_region():
    inst = instance()
    plan = plan_of(inst)
    assert Evaluator(inst).evaluate(plan).cost_breakdown_usd["network"] == 0.0        # inside one cluster: free
    weights = instance(network={"crosses_region": ["final_weights"]})
    m = Evaluator(weights).evaluate(plan)
    gb = ph.handover_bytes(inst.student, plan.recipe.lora_rank) / ph.GB
    assert m.cost_breakdown_usd["network"] == pytest.approx(gb * 0.09, rel=1e-12)
    milestones = instance(network={"crosses_region": ["milestones"]}, checkpointing={"milestones_kept": 2})
    m = Evaluator(milestones).evaluate(plan)
    assert m.cost_breakdown_usd["network"] == pytest.approx(2 * ph.checkpoint_bytes(inst.student) / ph.GB * 0.09, rel=1e-12)


def test_a_lora_plan_ships_its_adapter_not_the_weights():
    inst = instance(network={"crosses_region": ["final_weights"]},
                    training={"adapter_options": ["full", "lora"], "lora_rank_options": [16]})
    plan = plan_of(instance())
    lora = type(plan).from_dict({**plan.flat_dict(), "adapter": "lora", "lora_rank": 16})
    full_usd = Evaluator(inst).evaluate(plan).cost_breakdown_usd["network"]
    lora_usd = Evaluator(inst).evaluate(lora).cost_breakdown_usd["network"]
    assert lora_usd == pytest.approx(full_usd * ph.lora_params(inst.student, 16) / (inst.student.params_b * 1e9), rel=1e-12)


def test_log_ingest_prices_the_logged_trajectories():
    inst = instance("qwen3-32b-agentic-rl", storage={"trajectory_log_share": 0.1})
    plan = plan_of(load_instance(INSTANCES / "qwen3-32b-agentic-rl.json"))
    ev = Evaluator(inst)
    log_gb = ev.recipe(plan.recipe).extra["log_gb"]
    assert log_gb > 0
    m = ev.evaluate(plan)
    assert m.cost_breakdown_usd["log_ingest"] == pytest.approx(log_gb * 0.50, rel=1e-12)
    crossing = Evaluator(instance("qwen3-32b-agentic-rl", storage={"trajectory_log_share": 0.1},
                                  network={"crosses_region": ["trajectory_logs"]})).evaluate(plan)
    assert crossing.cost_breakdown_usd["network"] == pytest.approx(log_gb * 0.09, rel=1e-12)
    none = Evaluator(instance("qwen3-32b-agentic-rl", storage={"trajectory_log_share": 0.0})).evaluate(plan)
    assert none.cost_breakdown_usd["log_ingest"] == 0.0


def test_the_mip_prices_the_new_lines_like_the_evaluator():
    inst = instance("qwen3-32b-agentic-rl", storage={"trajectory_log_share": 0.2}, evaluation={"every_steps": 5},
                    network={"crosses_region": ["final_weights", "trajectory_logs", "milestones"]},
                    checkpointing={"milestones_kept": 1, "milestone_retention_months": 3})
    res = solve(inst)
    assert res.status == "optimal"
    assert res.mip_values["cost_usd"] == pytest.approx(res.metrics.cost_usd, rel=1e-9)
    assert all(res.metrics.cost_breakdown_usd[k] > 0 for k in ("evaluation", "network", "log_ingest"))


@pytest.mark.parametrize("bad,field", [({"evaluation": {"every_steps": 0}}, "evaluation.every_steps"),
                                       ({"network": {"crosses_region": ["everything"]}}, "network.crosses_region"),
                                       ({"storage": {"log_ingest_usd_per_gb": -1}}, "storage.log_ingest_usd_per_gb")])
def test_bad_cost_line_inputs_exit_2_naming_the_field(tmp_path, bad, field):
    from typer.testing import CliRunner
    from planopt.cli import app
    data = json.loads((INSTANCES / "tiny.json").read_text())
    for key, value in bad.items():
        data.setdefault(key, {}).update(value)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    res = CliRunner().invoke(app, ["solve", str(path)])
    assert res.exit_code == 2 and field in res.output and "Traceback" not in res.output
