"""Asynchronous RL inside staged plans and with a choice of student (issue 12, items 1, 4 and 6 together).

An asynchronous RL stage keeps :math:`(1 - \\delta)^s` of the gain it makes from the
score it starts at (``stage_outcomes.stage_outcome``), its forgetting as synchronous
RL's, and its hours overlap generation and training phase by phase as a one-stage
plan's do. Held to the staged oracle on random staged jobs with rollout GPUs and
staleness options, to the candidate oracle on a choice of student, and the scenario
evaluator to the evaluator on a staged asynchronous plan.
"""

from __future__ import annotations

import json

import pytest

from planopt.models.uncertainty import model as U
from planopt.models.cost.evaluator import Evaluator
from planopt.models.schema.plan import Recipe
from planopt.models.schema.instance import Instance
from planopt.instance import parse_instance
from planopt.models.uncertainty.scenarios import ScenarioEvaluator
from planopt.models.cost.stage_outcomes import stage_outcome
from planopt.models.schema.plan import Plan
from planopt.job.model import solve

from tests.support.common import INSTANCES, split_seeds
from tests.support.oracle_checks import assert_staged_mip_equals_the_staged_oracle

SEEDS = range(30)


def staged_async_instance(seed: int, max_plans: int = 4000) -> Instance | None:
    """A random staged job with RL, one rollout option and staleness options [0, 1] (``test_rollout``'s
    generator); limits drawn from its own staged plans; None when the job has no RL or lists too many plans."""
    from tests.support.staged_instances import staged_split_instance
    return staged_split_instance(seed, max_plans, needs=("rl",), rng_base=70_000,
                                 training={"staleness_steps_options": [0, 1]})


def _stages(plan):
    return [] if plan is None else list(plan.stages)


def test_an_asynchronous_first_stage_ends_where_the_one_stage_plan_does():
    data = json.loads((INSTANCES / "qwen3-8b-math.json").read_text())
    data["hardware"]["rollout_gpus"] = [{"name": "H100-SXM", "counts": [8]}]
    data["training"]["staleness_steps_options"] = [0, 1]
    inst = parse_instance(data)
    ev = Evaluator(inst)
    for r in ev.space()[0]:
        if r.method == "rl" and r.staleness_steps:
            end, forgetting = stage_outcome(inst, r, inst.task.baseline_score)
            assert end == pytest.approx(ev.recipe(r).quality, rel=1e-12)
            assert forgetting == pytest.approx(ev.recipe(r).forgetting_points, rel=1e-12)
            sync = Recipe(r.method, r.steps, r.samples_per_prompt, r.teacher_precision, r.external_data_share,
                          r.max_epochs, r.lora_rank)
            assert end < ev.recipe(sync).quality                       # staleness costs quality
            assert forgetting == pytest.approx(ev.recipe(sync).forgetting_points, rel=1e-12)
            break
    else:
        pytest.fail("no asynchronous RL recipe")


@pytest.mark.parametrize("seed", split_seeds(SEEDS, 12))
def test_the_staged_mip_equals_the_staged_oracle_with_staleness_options(seed):
    inst = staged_async_instance(seed)
    if inst is None:
        pytest.skip("no RL, or too many plans to enumerate")
    assert_staged_mip_equals_the_staged_oracle(inst)


@pytest.mark.slow  # 7 s on 2 cores (the default run's heaviest); .ci/run runs it with -m slow
def test_the_staged_seeds_exercise_asynchronous_stages():
    """Guards the generator: enough staged seeds exist, and some optimum runs an RL stage asynchronously."""
    insts = [i for i in (staged_async_instance(seed) for seed in SEEDS) if i is not None]
    assert len(insts) >= 8
    stale = 0
    for inst in insts:
        stages = _stages(solve(inst).plan)
        stale += any(getattr(s, "recipe", s).staleness_steps for s in stages if len(stages) > 1)
    assert stale > 0


def test_scenarios_equal_the_evaluator_on_a_staged_asynchronous_plan():
    from planopt.oracles.by_plan import all_plans
    for seed in SEEDS:
        inst = staged_async_instance(seed)
        if inst is None:
            continue
        plans = [p.plan for p in all_plans(inst)
                 if len(p.plan.stages) > 1 and any(s.recipe.staleness_steps for s in p.plan.stages)]
        if plans:
            break
    else:
        pytest.fail("no staged asynchronous plan among the seeds")
    scenarios = U.draw(inst, 6, seed=4)
    assert "priors.staleness_gain_loss_per_step" in scenarios.values
    se = ScenarioEvaluator(Evaluator(inst), scenarios)
    for plan in plans[:5]:
        sm = se.plan_metrics(plan)
        for s in range(scenarios.n):
            m = Evaluator(U.apply(inst, scenarios.at(s))).plan_metrics(plan)
            for key in ("cost_usd", "wall_hours", "quality", "forgetting_points", "gpu_hours"):
                assert sm.metric(key)[s] == pytest.approx(getattr(m, key), rel=1e-12, abs=1e-12), (key, s)


@pytest.mark.slow  # the candidate oracle lists every student's plans
def test_a_choice_of_student_with_staleness_options_equals_its_oracle():
    from planopt.oracles.by_plan import best_plan
    data = json.loads((INSTANCES / "math-8b-or-32b.json").read_text())
    data["hardware"]["rollout_gpus"] = [{"name": "H100-SXM", "counts": [8, 32]}]
    data["training"]["staleness_steps_options"] = [0, 1]
    data["objective"] = "time"
    inst = parse_instance(data)
    mip, oracle = solve(inst), best_plan(inst)
    assert mip.status == oracle.status == "optimal"
    assert mip.metrics.wall_hours == pytest.approx(oracle.metrics.wall_hours, rel=1e-9)
    assert mip.metrics.cost_usd == pytest.approx(oracle.metrics.cost_usd, rel=1e-9)
