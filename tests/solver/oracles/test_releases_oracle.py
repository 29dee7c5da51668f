"""Repeated releases (``models/cost/releases.py``) against enumeration: on random jobs with a ``releases``
block the MIP's optimum equals both oracles' (plan by plan and vectorised), on staged jobs the staged
oracle's, and on jobs with candidate students the enumerated best over every student. A guard asserts
that the seeds exercise the lever: several releases, labels bought, and optima that differ from the
single run's."""

from __future__ import annotations

import pytest

from planopt.instance import parse_instance
from planopt.job.model import solve
from planopt.oracles.by_plan import all_plans

from tests.support.oracle_checks import (assert_candidate_contract, assert_chance_contract, assert_mip_equals_both_oracles,
                                         assert_staged_contract)
from tests.support.release_instances import release_instance_dict

JOB_SEEDS = range(16)
CHANCE_CASES = [(kind, seed) for kind, seeds in (("job", range(10)), ("staged", range(4)), ("candidates", range(4)))
                for seed in seeds]
CHANCE_SCENARIOS = 12
STAGED_SEEDS = range(6)
CANDIDATE_SEEDS = range(6)


@pytest.mark.parametrize("seed", JOB_SEEDS)
def test_mip_equals_both_oracles_with_releases(seed):
    assert_mip_equals_both_oracles(parse_instance(release_instance_dict(seed)))


@pytest.mark.parametrize("seed", STAGED_SEEDS)
def test_staged_mip_equals_the_staged_oracle_with_releases(seed):
    assert_staged_contract(parse_instance(release_instance_dict(seed, "staged")))


@pytest.mark.parametrize("seed", CANDIDATE_SEEDS)
def test_candidate_mip_equals_the_enumeration_with_releases(seed):
    inst = parse_instance(release_instance_dict(seed, "candidates"))
    assert_candidate_contract(inst, solve(inst), all_plans(inst))


def test_the_seeds_exercise_the_lever():
    """Some seeds run many releases, buy SFT labels with a share below 1, and change their optimum against the
    same job run once (the cost-optimal plan of the job without the block)."""
    changed, labels, many = 0, 0, 0
    for seed in JOB_SEEDS:
        data = release_instance_dict(seed)
        inst = parse_instance(data)
        many += inst.releases.releases >= 3
        mip = solve(inst)
        if mip.plan is None:
            continue
        labels += mip.metrics.quantities["labels_bought"] > 0 and inst.releases.sft_labels_rebuilt_share < 1
        once = solve(parse_instance({**data, "releases": None}))
        changed += once.plan is not None and once.plan != mip.plan
    assert many >= 5 and changed >= 2 and labels >= 1, (many, changed, labels)


@pytest.mark.parametrize("seed", range(4))
def test_retention_mip_equals_both_oracles_with_releases(seed):
    """A retention block (its recent checkpoints' money is per training hour: it recurs) composes."""
    import random

    from tests.support.release_instances import with_releases
    from tests.support.retention_instances import retention_job_dict
    from tests.support.random_instances import with_drawn_limits
    inst = with_releases(retention_job_dict(seed), random.Random(250_000 + seed))
    inst = with_drawn_limits(inst, all_plans(parse_instance(inst)), random.Random(260_000 + seed))
    assert parse_instance(inst).releases.releases > 1
    assert_mip_equals_both_oracles(parse_instance(inst))


@pytest.mark.parametrize("seed", range(6))
def test_the_risk_section_prices_the_releases_as_the_evaluator_does(seed):
    """The scenario evaluator (the Risk section's) equals the point evaluator on each scenario's instance."""
    from planopt.models.uncertainty import model as U

    from tests.support.oracle_checks import assert_scenarios_equal_the_evaluator
    inst = parse_instance(release_instance_dict(seed))
    plans = [p.plan for p in all_plans(inst) if p.metrics.fits_memory][::29][:4]
    assert_scenarios_equal_the_evaluator(inst, U.draw(inst, 6, seed), plans)


def trained_teacher_jobs(count: int):
    """Random OPD jobs whose teacher is trained as a stage, with releases (the first ``count`` seeds that have one)."""
    import random

    from tests.support.random_instances import random_job_dict
    from tests.support.release_instances import with_releases
    from tests.support.teacher_instances import with_trained_teacher
    out, seed = [], 0
    while len(out) < count:
        rng = random.Random(270_000 + seed)
        d = random_job_dict(rng, f"teacher-releases-{seed}")
        seed += 1
        if "opd" in d["training"]["methods"] and (d := with_trained_teacher(d, rng)) is not None:
            out.append(parse_instance(with_releases(d, rng)))
    return out


@pytest.mark.parametrize("n", range(3))
def test_a_trained_teacher_is_paid_once_over_the_releases(n):
    """Its training is fixed (one teacher for every release): MIP = both oracles, and an OPD plan's total is the
    teacher's money once plus N times the rest's elastic part."""
    from planopt.models.cost.evaluator import Evaluator
    inst = trained_teacher_jobs(3)[n]
    assert_mip_equals_both_oracles(inst)
    plans = [p.plan for p in all_plans(inst) if p.metrics.fits_memory and p.plan.method == "opd"][::17][:3]
    assert plans
    once = Evaluator(inst.model_copy(update={"releases": None})).evaluate(plans[0])
    total = Evaluator(inst).evaluate(plans[0])
    assert once.fixed_cost_breakdown_usd["data"] > 0  # the teacher
    assert total.cost_usd == pytest.approx(once.fixed_cost_usd + inst.releases.releases * once.elastic_cost_usd)


@pytest.mark.slow  # 7 s on 2 cores (the default run's heaviest); .ci/run runs it with -m slow
def test_the_labels_share_is_uncertain_where_the_instance_gives_it_a_range():
    """``releases.sft_labels_rebuilt_share`` is a parameter of the uncertainty model (a point value by default:
    no published rate); given a range, each scenario prices its own share, as the evaluator does on that
    scenario's instance, and an SFT plan's cost spreads with it."""
    import json

    from planopt.models.uncertainty import model as U

    from tests.support.common import INSTANCES
    from tests.support.oracle_checks import assert_scenarios_equal_the_evaluator
    doc = json.loads((INSTANCES / "qwen3-8b-math-monthly.json").read_text())
    point = parse_instance(doc)
    names = {p.name: p for p in U.parameters(point)}
    assert names["releases.sft_labels_rebuilt_share"].low is None  # a point value without a range
    doc["uncertainty"] = {"releases.sft_labels_rebuilt_share": {"low": 0.2, "high": 0.8}}
    inst = parse_instance(doc)
    sft = [p.plan for p in all_plans(inst) if p.metrics.fits_memory and p.plan.method == "sft"
           and p.metrics.quantities["labels_bought"] > 0][:2]
    assert sft
    scenarios = U.draw(inst, 6, 1)
    shares = scenarios.values["releases.sft_labels_rebuilt_share"]
    assert shares.max() > shares.min() + 0.1 and (shares <= 1).all()
    assert_scenarios_equal_the_evaluator(inst, scenarios, sft)


def chance_release_case(kind: str, seed: int):
    """A release job of ``kind`` with a drawn confidence, the cost objective on about half, CVaR on some of those, and on some seeds a range on
    the labels share (then each scenario buys its own share of the SFT labels again)."""
    import random
    rng = random.Random(280_000 + seed)
    data = release_instance_dict(seed, kind, max_stages=2)  # the scenarios layer prices two stages
    if rng.random() < 0.5 and "sft" in data["training"]["methods"]:
        data["uncertainty"] = {"releases.sft_labels_rebuilt_share": {"low": 0.1, "high": 0.9}}
    if rng.random() < 0.5:  # the objective the releases move most
        data["objective"] = "cost"
    inst = parse_instance(data)
    confidence = rng.choice([0.5, 0.75, 0.9])
    return inst, confidence, rng.choice([None, 0.7]) if inst.objective == "cost" else None


@pytest.mark.parametrize("kind, seed", CHANCE_CASES)
def test_the_chance_constrained_mip_equals_the_enumeration_with_releases(kind, seed):
    """The scenarios layer prices the releases as the scenario evaluator does (hourly money N times, each recipe's
    fixed part once, the scenario's labels share, a staged plan's repair N times): the chance MIP's optimum
    equals the enumeration's over the same scenarios."""
    inst, confidence, cvar = chance_release_case(kind, seed)
    assert inst.releases.releases > 1
    assert_chance_contract(inst, confidence, cvar, CHANCE_SCENARIOS, seed, (kind, seed))


@pytest.mark.slow  # 3 s on 2 cores (the default run's heaviest); .ci/run runs it with -m slow
def test_the_chance_cases_exercise_the_releases():
    """Guards the cases above: most have an optimum, some with CVaR, some with a drawn labels share, and some whose
    optimum under uncertainty changes when the same job runs once."""
    from planopt.uncertainty.chance import solve_chance
    solved, cvars, drawn, changed, costs = 0, 0, 0, 0, 0
    for kind, seed in CHANCE_CASES:
        inst, confidence, cvar = chance_release_case(kind, seed)
        mip = solve_chance(inst, confidence, CHANCE_SCENARIOS, seed, cvar, out_of_sample=1, guard=False)
        if mip.plan is None:
            continue
        solved, cvars, costs = solved + 1, cvars + (cvar is not None), costs + (inst.objective == "cost")
        drawn += "releases.sft_labels_rebuilt_share" in inst.uncertainty
        once = solve_chance(inst.model_copy(update={"releases": None}), confidence, CHANCE_SCENARIOS, seed, cvar,
                            out_of_sample=1, guard=False)
        changed += once.plan != mip.plan
    assert solved >= 8 and costs >= 4 and cvars >= 1 and drawn >= 2 and changed >= 2, (solved, costs, cvars, drawn, changed)
