"""Key quantities of a plan and its fixed vs elastic cost (issue 27, lever 8; ``models/cost/quantities.py``).

Expected values come from the instance's own fields (steps, prompts per step, samples per prompt, token
lengths, ``operations.fixed_usd``, ``reward.design_usd``), not from the evaluator's output."""

from __future__ import annotations

import json

import pytest

from planopt.instance import parse_instance
from planopt.models.cost.evaluator import Evaluator
from planopt.models.schema.plan import HardwareChoice, Plan, Recipe
from planopt.oracles.by_plan import every_plan

from tests.support.common import INSTANCES
from tests.support.staged_instances import staged_job_dict

H100 = HardwareChoice("H100-SXM", 8)


def tiny(**training) -> Evaluator:
    data = json.loads((INSTANCES / "tiny.json").read_text())
    for method, steps in training.items():
        data["training"]["methods"][method]["steps_options"] = steps
    return Evaluator(parse_instance(data))


def samples_of(inst, method: str, steps: int, schedule: tuple[int, ...]) -> float:
    """Samples drawn: per phase (steps / phases) steps x prompts per step x samples per prompt."""
    prompts = inst.training.methods[method].prompts_per_step
    return sum(steps / len(schedule) * prompts * k for k in schedule)


def test_rl_quantities_follow_the_instance():
    ev = tiny()
    m = ev.evaluate(Plan.of(Recipe("rl", 300, (8, 4, 4)), H100, 60))
    n = samples_of(ev.inst, "rl", 300, (8, 4, 4))            # 100 x 64 x 16 = 102,400
    assert n == pytest.approx(102_400)
    q = m.quantities
    assert q["tokens_sampled"] == pytest.approx(n * ev.inst.task.response_tokens)
    assert q["reward_calls"] == pytest.approx(n)
    assert q["teacher_tokens_scored"] == 0 and q["labels_bought"] == 0
    assert q["checkpoints_kept"] == ev.inst.checkpointing.keep_last
    assert q["evaluations_run"] == 300 // ev.inst.evaluation.every_steps
    assert q["gpu_hours"] == pytest.approx(m.gpu_hours)
    # one write per interval of work: the write hours are the writes times one write's hours
    write_hours = ev.hardware(H100).checkpoint_write_hours
    assert q["checkpoints_written"] * write_hours == pytest.approx(m.hours_breakdown["checkpoint_writes"])


def test_opd_scores_every_sampled_token_with_its_prompt():
    ev = tiny()
    m = ev.evaluate(Plan.of(Recipe("opd", 100, (4, 4, 4), "bf16"), H100, 60))
    n = samples_of(ev.inst, "opd", 100, (4, 4, 4))
    task = ev.inst.task
    assert m.quantities["teacher_tokens_scored"] == pytest.approx(n * (task.prompt_tokens + task.response_tokens))
    assert m.quantities["reward_calls"] == 0


def test_sft_buys_labels_beyond_the_owned_examples():
    ev = tiny()
    m = ev.evaluate(Plan.of(Recipe("sft", 2000, (), None, 1.0, 1), H100, 60))
    examples = 2000 * ev.inst.training.methods["sft"].prompts_per_step   # 128,000 new-domain examples, one epoch
    assert m.quantities["labels_bought"] == pytest.approx(examples - ev.inst.sft_data.examples_available)
    assert m.quantities["tokens_sampled"] == 0


def test_doubling_the_steps_keeps_the_fixed_part_and_moves_the_elastic():
    ev = tiny(rl=[150, 300])
    short, long = (ev.evaluate(Plan.of(Recipe("rl", s, (8, 4, 4)), H100, 60)) for s in (150, 300))
    # fixed: operations' fixed fee and the reward design, paid once (tiny has no archived milestones or egress)
    expected = ev.inst.operations.fixed_usd + ev.inst.reward.design_usd
    assert short.fixed_cost_usd == pytest.approx(expected) == long.fixed_cost_usd
    assert long.elastic_cost_usd > 1.5 * short.elastic_cost_usd
    for m in (short, long):
        assert m.fixed_cost_usd + m.elastic_cost_usd == pytest.approx(m.cost_usd)
        assert all(m.fixed_cost_breakdown_usd[k] <= m.cost_breakdown_usd[k] + 1e-9 for k in m.cost_breakdown_usd)


def test_archived_milestones_are_fixed_storage():
    data = json.loads((INSTANCES / "tiny.json").read_text())
    data["checkpointing"].update(milestones_kept=3, milestone_retention_months=6)
    ev = Evaluator(parse_instance(data))
    m = ev.evaluate(Plan.of(Recipe("rl", 300, (8, 4, 4)), H100, 60))
    st = ev.inst.storage
    gb = ev.recipe(Recipe("rl", 300, (8, 4, 4))).checkpoint_gb
    assert m.fixed_cost_breakdown_usd["storage"] == pytest.approx(3 * gb * st.cold_usd_per_gb_month * 6)
    assert m.quantities["checkpoints_archived"] == 3


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_staged_plan_sums_its_stages(seed):
    inst = parse_instance(staged_job_dict(seed))
    plan, ev = next((p, own) for p, own in every_plan(inst) if len(p.stages) > 1)
    m = ev.plan_metrics(plan)
    alone = [ev.metrics(s.recipe, s.hardware, plan.checkpoint_interval_minutes, plan.retention)
             for s in plan.stages]
    for k, v in m.quantities.items():
        assert v == pytest.approx(sum(a.quantities[k] for a in alone)), k
    # operations' fixed fee is the plan's, once; each stage alone carries it too
    assert m.fixed_cost_usd == pytest.approx(sum(a.fixed_cost_usd for a in alone)
                                             - (len(alone) - 1) * inst.operations.fixed_usd)
