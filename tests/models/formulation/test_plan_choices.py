"""``formulation.plan_choices``, the inverse of ``chosen_plan``: a plan written as the one-hot groups of a plan model.

A portfolio maps a plan found in one model (a plain twin's block) into another (the layered job's block) through it
(``solver/portfolio/twin.py``), so it must hold on every layer: one-stage and staged spaces, candidate students,
retention options, rollout hardware, a trained teacher.
"""

from __future__ import annotations

import dataclasses

import pytest

from planopt.job.model import PlanModel
from planopt.models.formulation import build, chosen_plan, collect_space, plan_choices
from planopt.models.cost.evaluator import Evaluator
from planopt.oracles.by_plan import all_plans

from tests.support.layered_instances import layered_job_dict
from tests.support.common import split_seeds
from planopt.instance import parse_instance

SEEDS = [s for s in range(40) if layered_job_dict(s) is not None]


def test_the_seeds_cover_every_layer():
    on = set().union(*(layered_job_dict(s)[1] for s in SEEDS))
    assert {"stages", "students", "retention", "rollout", "teacher"} <= on, on


@pytest.mark.parametrize("seed", split_seeds(SEEDS, 12))
def test_every_plan_of_the_space_is_written_and_read_back_as_itself(seed):
    """Over the unpruned space (a portfolio's), every plan that fits in memory is written, one option or none per
    group, and ``chosen_plan`` reads it back; over the pruned space (a job's), those written read back too."""
    d, on = layered_job_dict(seed)
    inst = parse_instance(d)
    plans = [sp.plan for sp in all_plans(inst) if sp.metrics.fits_memory]
    if not plans:
        pytest.skip("no plan of the seed fits in memory")
    for prune in (False, True):
        space = collect_space(Evaluator(inst), prune=prune)
        m = build(space)
        written = 0
        for plan in plans:
            values = plan_choices(m, space, plan)
            if values is None:
                assert prune, f"a plan of the unpruned space was not written: {plan}"
                continue
            for name, group in m.choice_groups.items():
                xs = [x for v, x in values if any(v is w for w in group)]
                assert len(xs) == len(group) and sum(xs) <= 1, name
            for v, x in values:
                v.set_value(x)
            assert chosen_plan(m, space)[0] == plan
            written += 1
        assert written == len(plans) if not prune else written >= 1


@pytest.mark.parametrize("seed", SEEDS[:6])
def test_a_plan_outside_the_space_is_none(seed):
    d, _ = layered_job_dict(seed)
    inst = parse_instance(d)
    pm = PlanModel(inst)
    res = pm.solve()
    if res.plan is None:
        pytest.skip("no plan")
    plan = res.plan
    assert plan_choices(pm.model, pm.space, plan) is not None
    off_interval = dataclasses.replace(plan, checkpoint_interval_minutes=plan.checkpoint_interval_minutes + 0.5)
    assert plan_choices(pm.model, pm.space, off_interval) is None
    stage = plan.stages[0]
    other = dataclasses.replace(stage, recipe=dataclasses.replace(stage.recipe, steps=stage.recipe.steps + 1))
    assert plan_choices(pm.model, pm.space, dataclasses.replace(plan, stages=(other,) + plan.stages[1:])) is None
