"""Staged recipes (``training.stage_sequences``), held to the staged oracle and to the one-stage evaluator:

1. the staged MIP's optimum equals the staged oracle's on random staged instances (``staged_instances``;
   ``-m slow`` sweeps the larger ones), its plan is feasible and the MIP's metric values are the evaluator's;
2. one built model re-solved under changed limits and objectives equals the oracle at each (pair fixing
   by limits is exact and undone when a limit is loosened);
3. a one-stage staged plan has exactly the one-stage evaluator's metrics on every shipped instance;
4. the chained learning curves: a first stage is the recipe's profile, affine stages equal
   ``stage_outcome``, a later SFT or OPD stage gains less the higher it starts;
5. the scenario evaluator equals the point evaluator on staged plans;
6. the staged plan's JSON: round trips, the old one-stage shape, bad plans naming the field;
and the exact cost-quality frontier of staged instances. The CLI is in ``test_staged_cli.py``.

A product bug found by these tests is marked ``xfail(strict=True)`` with its reason until it is fixed.
"""

from __future__ import annotations

import copy
import functools
import json
import random

import numpy as np
import pytest

from planopt.instance import load_instance
from planopt.models.uncertainty import model as U
from planopt.models.cost.evaluator import Evaluator, exceeds
from planopt.models.formulation import LIMITS
from planopt.models.schema.plan import Plan
from planopt.models.uncertainty.scenarios import ScenarioEvaluator
from planopt.models.schema.instance import Instance
from planopt.instance import parse_instance
from planopt.models.cost.stage_outcomes import affine_stage, stage_outcome
from planopt.models.schema.plan import Stage, Plan, read_plan
from planopt.job.model import PlanModel, solve
from planopt.oracles.by_plan import all_plans, best_plan, space_size

from tests.support.common import INSTANCES
from tests.support.oracle_checks import (assert_least_relaxations_equal_the_oracle, assert_same_metrics, close, limit_steps,
                                         with_limits)
from tests.support.oracle_checks import assert_staged_contract
from tests.support.staged_instances import shrunk_staged_job_dict, staged_instance_dict
from tests.support.common import split_seeds

SUMMARY = ("cost_usd", "wall_hours", "quality", "forgetting_points", "gpu_hours")
SHIPPED = sorted(p for p in INSTANCES.glob("*.json") if json.loads(p.read_text()).get("kind", "job") == "job")


def seed_space_size(seed: int) -> int:
    return space_size(parse_instance(shrunk_staged_job_dict(seed)))


# The default run takes the seeds 0..59 whose space lists at most FAST_PLANS plans (52 of 60; the
# oracle and the limits of staged_instance_dict each list every plan, ~1 ms a plan); -m slow the rest.
FAST_PLANS = 1500
SIZES = {seed: seed_space_size(seed) for seed in range(60)}
FAST_SEEDS = [s for s, n in SIZES.items() if n <= FAST_PLANS]
SLOW_SEEDS = [s for s, n in SIZES.items() if n > FAST_PLANS] + list(range(60, 150))


@functools.lru_cache(maxsize=None)
def staged_instance(seed: int) -> Instance:
    return parse_instance(staged_instance_dict(seed))


@functools.lru_cache(maxsize=None)
def staged_oracle(seed: int):
    """The staged oracle's answer on ``staged_instance(seed)`` (listed once per run)."""
    return best_plan(staged_instance(seed))





# --- 1. the oracle contract ------------------------------------------------------------------

def test_the_fast_seeds_are_most_of_them_and_cover_staged_spaces():
    assert len(FAST_SEEDS) >= 45
    kinds = set()
    for seed in FAST_SEEDS:
        inst = parse_instance(shrunk_staged_job_dict(seed))
        kinds |= {len(seq) for seq in inst.training.sequences()}
        assert inst.training.staged
    assert kinds == {1, 2, 3}


# Seed 35: the only sequence is sft→opd and no OPD recipe fits on its hardware: infeasible, not a crash
# (an empty pair table once made the staged build fail).
KNOWN_BAD_SEEDS: dict[int, str] = {}


# Seed 37 (objective: quality): the cost tie-break among plans of equal quality, which differ by $13.87 of $13,796
# (RL with LoRA or full weights), comes back at $13,809.63 with HiGHS reporting it optimal (random_seed 0,
# tolerances 1e-9, presolve off), since the hours matrix is summed in a fixed order (models/cost/asynchronous.py,
# ``product``; before, BLAS's last bits hid it). The same model with random_seed 1, tolerances 1e-7 or presolve on
# returns the oracle's $13,795.77, and fixing the oracle's plan in the tie-break model gives its cost exactly: a
# solver tolerance, not the linearisation (as retention's seed 42, tests/models/cost/test_retention.py).
HIGHS_TIE_BREAK = {37: "HiGHS stops $13.87 above the cost tie-break optimum among equal-quality plans (see above)"}


def _seed_params(seeds):
    return [pytest.param(s, marks=pytest.mark.xfail(strict=True, reason=KNOWN_BAD_SEEDS[s])) if s in KNOWN_BAD_SEEDS
            else pytest.param(s, marks=pytest.mark.xfail(strict=False, reason=HIGHS_TIE_BREAK[s])) if s in HIGHS_TIE_BREAK
            else s for s in seeds]


@pytest.mark.parametrize("seed", split_seeds(_seed_params(FAST_SEEDS), 20))
def test_staged_mip_equals_the_oracle(seed):
    inst = staged_instance(seed)
    pm = PlanModel(inst)
    assert pm.space.staged
    assert_staged_contract(inst, staged_oracle(seed), pm.solve())


@pytest.mark.slow
@pytest.mark.parametrize("seed", _seed_params(SLOW_SEEDS))
def test_staged_mip_equals_the_oracle_slow(seed):
    assert_staged_contract(staged_instance(seed))


def test_a_staged_instance_whose_second_stage_fits_nowhere_is_infeasible():
    job = shrunk_staged_job_dict(35)
    assert job["training"]["stage_sequences"] == [["sft", "opd"]]
    assert job["hardware"]["gpus"] == [{"name": "L4", "counts": [1, 2]}]
    inst = parse_instance(job)
    assert best_plan(inst).status == "infeasible"
    result = solve(inst)    # ValueError from build_staged
    assert result.status == "infeasible" and result.plan is None


@pytest.mark.slow  # long (13-17 s on 2 cores); .ci/run runs it with -m slow
def test_the_contract_sees_optimal_and_infeasible_staged_plans_of_every_length():
    """The seeds above are not vacuous: some are infeasible, and optimal plans run 1, 2 and 3 stages."""
    lengths, statuses = set(), set()
    for seed in FAST_SEEDS:
        oracle = staged_oracle(seed)
        statuses.add(oracle.status)
        if oracle.status == "optimal":
            lengths.add(len(oracle.plan.stages))
    assert statuses == {"optimal", "infeasible"}
    assert {2, 3} <= lengths


# --- 2. re-solving one model under changed limits -------------------------------------------


def _paired_seeds(n: int, max_plans: int = 500) -> list[int]:
    """Seeds whose staged model pairs its first two stages (an SFT→RL sequence: pair fixing by limits)."""
    out = []
    for seed in FAST_SEEDS:
        job = shrunk_staged_job_dict(seed)
        if SIZES[seed] <= max_plans and any(seq[:2] == ["sft", "rl"] for seq in job["training"]["stage_sequences"]):
            out.append(seed)
    return out[:n]


# a seed none of whose plans fits in memory is skipped (test_some_seeds_pair_their_first_two_stages)
PAIRED_SEEDS = _paired_seeds(8)


def _oracle_at(plans, limits: dict, objective: str):
    """The staged oracle under ``limits``, over plans listed once: the evaluator's rule for a limit
    (``costs.exceeds``) and the oracle's lexicographic choice (``oracle.lexicographic_best``)."""
    from planopt.oracles.by_plan import lexicographic_best
    feasible = [p for p in plans if p.metrics.fits_memory and not any(
        limits.get(name) is not None and exceeds(getattr(p.metrics, expr), limits[name], sense)
        for name, (expr, sense) in LIMITS.items())]
    return lexicographic_best(feasible, objective) if feasible else None


@pytest.mark.parametrize("seed", PAIRED_SEEDS)
def test_one_model_resolved_under_changed_limits_equals_the_oracle(seed):
    job = shrunk_staged_job_dict(seed)
    job["objective"] = random.Random(seed).choice(["cost", "quality"])
    inst = parse_instance(job)
    plans = all_plans(inst)
    fitting = [p.metrics for p in plans if p.metrics.fits_memory]
    if not fitting:
        pytest.skip("no plan of this seed fits in memory")
    pm = PlanModel(inst)
    assert pm.space.staged and hasattr(pm.model, "pair")
    pairs = pm.model.limit_fixed_vars
    # tighten, loosen, remove; then the budget; then both; then forgetting and deadline; each from the plans' values
    steps = limit_steps(fitting)
    limits: dict = {}
    fixed_somewhere = False
    for change in steps:
        limits.update(change)
        pm.set_limits(**change)
        fixed_somewhere |= any(v.ub == 0 for v in pairs)
        mip = pm.solve()
        oracle = _oracle_at(plans, limits, inst.objective)
        assert mip.status == ("optimal" if oracle else "infeasible"), (limits, mip.status, oracle)
        if oracle is not None:
            assert close(mip.metrics.objective(inst.objective), oracle.metrics.objective(inst.objective)), (limits, mip.plan, oracle.plan)
            assert close(mip.metrics.cost_usd, oracle.metrics.cost_usd), (limits, mip.plan, oracle.plan)
            for name, (expr, sense) in LIMITS.items():
                if limits.get(name) is not None:
                    assert not exceeds(getattr(mip.metrics, expr), limits[name], sense), (name, limits, mip.plan)
    # the oracle at the last limits is the product's own oracle too
    final = best_plan(with_limits(inst, limits))
    assert final.status == mip.status and (final.status != "optimal" or close(final.metrics.cost_usd, mip.metrics.cost_usd))
    # with no limit left every pair is free again
    assert all(v.ub == 1 for v in pairs), [v.name for v in pairs if v.ub != 1]
    assert fixed_somewhere   # some limit above did rule out a pair on its own


@pytest.mark.parametrize("seed", [s for s in FAST_SEEDS if SIZES[s] <= 400][5:11])
def test_one_model_resolved_under_each_objective_equals_the_oracle(seed):
    from planopt.oracles.by_plan import lexicographic_best
    inst = staged_instance(seed)
    feasible = [p for p in all_plans(inst) if p.feasible]
    pm = PlanModel(inst)
    for objective in ("quality", "time", "forgetting", "cost", "quality"):
        pm.set_objective(objective)
        mip = pm.solve()
        if not feasible:
            assert mip.status == "infeasible"
            continue
        best = lexicographic_best(feasible, objective)
        assert mip.status == "optimal", (objective, mip.status)
        assert close(mip.metrics.objective(objective), best.metrics.objective(objective)), (objective, mip.plan, best.plan)
        assert close(mip.metrics.cost_usd, best.metrics.cost_usd), (objective, mip.plan, best.plan)
        for key, value in mip.mip_values.items():
            assert close(value, getattr(mip.metrics, key)), (objective, key)


@pytest.mark.parametrize("seed", [s for s in FAST_SEEDS if SIZES[s] <= 400][:8])
def test_the_least_relaxations_of_an_infeasible_staged_instance_equal_the_oracles(seed):
    """``explain_infeasible`` (what an infeasible `planopt solve` prints) on a staged model: with a deadline
    of half the fastest plan's, each limit relaxed alone needs exactly what the oracle says (the best
    value of its metric among the plans that meet the other limits), and no more."""
    inst = staged_instance(seed)
    fitting = [p.metrics for p in all_plans(inst) if p.metrics.fits_memory]
    if not fitting:
        pytest.skip("no plan of this seed fits in memory")
    inst = with_limits(inst, {"deadline_hours": 0.5 * min(m.wall_hours for m in fitting)})
    assert_least_relaxations_equal_the_oracle(inst, fitting)


def test_some_seeds_pair_their_first_two_stages():
    fitting = [seed for seed in PAIRED_SEEDS if _fitting_plans(seed)[1]]
    assert len(fitting) >= 4, fitting


# --- 3. a one-stage staged plan is a plan ----------------------------------------------------

def _sample_singles(inst: Instance, n: int, seed: int):
    ev = Evaluator(inst)
    recipes, hardware, intervals = ev.space()
    combos = [(r, h) for r in recipes for h in hardware if h.lora_rank == r.lora_rank]
    rng = random.Random(seed)
    picked = rng.sample(combos, min(n, len(combos)))
    for method in inst.training.methods:  # every method once at least, whatever the sample drew
        if not any(r.method == method for r, _ in picked):
            picked += [next((r, h) for r, h in combos if r.method == method)]
    return ev, [(r, h, rng.choice(intervals)) for r, h in picked]


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_a_one_stage_staged_plan_has_the_evaluators_metrics(path):
    inst = load_instance(path)
    ev, sample = _sample_singles(inst, 60, 7)
    methods, infeasible = set(), 0
    for r, h, interval in sample:
        alone = ev.metrics(r, h, interval)
        plan = Plan.of(r, h, interval, student=inst.student.preset)
        assert_same_metrics(ev.plan_metrics(plan), alone)
        assert_same_metrics(ev.evaluate(plan), ev.evaluate(Plan.of(r, h, interval, student=inst.student.preset)))
        methods.add(r.method)
        infeasible += not alone.feasible
    assert methods == set(inst.training.methods)
    assert infeasible > 0   # violations (limits; memory on tiny and infeasible-deadline) are compared where there are some


def test_the_shipped_instances_are_sampled():
    assert len(SHIPPED) >= 4 and all(p.suffix == ".json" for p in SHIPPED)


# --- 4. the chained learning curves ----------------------------------------------------------

def _recipes(inst: Instance, n: int = 200):
    recipes = Evaluator(inst).space()[0]
    step = max(1, len(recipes) // n)
    return recipes[::step]


def _instances_for_curves():
    out = [load_instance(p) for p in SHIPPED]
    lora = [s for s in FAST_SEEDS if "lora" in shrunk_staged_job_dict(s)["training"]["adapter_options"]][:8]
    out += [parse_instance(shrunk_staged_job_dict(s)) for s in FAST_SEEDS[:8] + lora]
    return out


CURVE_INSTANCES = _instances_for_curves()


def test_the_curve_instances_cover_every_method_and_lora():
    seen = {(r.method, r.lora_rank is not None) for inst in CURVE_INSTANCES for r in _recipes(inst)}
    assert {(m, lora) for m in ("sft", "rl", "opd") for lora in (False, True)} <= seen


@pytest.mark.parametrize("k", range(len(CURVE_INSTANCES)))
def test_a_first_stage_reaches_the_recipes_profile(k):
    inst = CURVE_INSTANCES[k]
    ev = Evaluator(inst)
    for r in _recipes(inst):
        end, forgetting = stage_outcome(inst, r, inst.task.baseline_score)
        profile = ev.recipe(r)
        assert end == pytest.approx(profile.quality, rel=1e-12, abs=1e-12), r
        assert forgetting == pytest.approx(profile.forgetting_points, rel=1e-12, abs=1e-12), r


def _starts(inst: Instance) -> list[float]:
    base, ceiling = inst.task.baseline_score, inst.task.score_ceiling
    return sorted({0.0, base * 0.5, base, (base + ceiling) / 2, ceiling * 0.97, ceiling})


@pytest.mark.parametrize("k", range(len(CURVE_INSTANCES)))
def test_affine_stages_equal_the_stage_outcome_at_every_start(k):
    inst = CURVE_INSTANCES[k]
    for r in _recipes(inst):
        if r.method not in ("sft", "opd"):
            with pytest.raises(ValueError):
                affine_stage(inst, r)
            continue
        a = affine_stage(inst, r)
        assert 0.0 <= a.end_slope <= 1.0 + 1e-12, r
        for s in _starts(inst):
            end, forgetting = stage_outcome(inst, r, s)
            assert a.end(s) == pytest.approx(end, rel=1e-9, abs=1e-9), (r, s)
            assert a.forgetting(s) == pytest.approx(forgetting, rel=1e-9, abs=1e-9), (r, s)


@pytest.mark.parametrize("k", range(len(CURVE_INSTANCES)))
def test_a_later_opd_or_sft_stage_gains_less_the_higher_it_starts(k):
    inst = CURVE_INSTANCES[k]
    checked = 0
    for r in _recipes(inst):
        if r.method not in ("opd", "sft"):
            continue
        starts = _starts(inst)
        outcomes = [stage_outcome(inst, r, s)[0] for s in starts]
        gains = [e - s for e, s in zip(outcomes, starts)]
        for (s0, e0, g0), (s1, e1, g1) in zip(zip(starts, outcomes, gains), zip(starts[1:], outcomes[1:], gains[1:])):
            assert g1 <= g0 + 1e-9, (r, s0, g0, s1, g1)     # less headroom, less gain
            assert e1 >= e0 - 1e-9, (r, s0, e0, s1, e1)     # but never a lower end score
            if r.method == "opd" and e0 != s0:
                assert g1 < g0, (r, s0, g0, s1, g1)         # strictly, when it moves the score at all
        checked += r.method == "opd"
    if "opd" in inst.training.methods:
        assert checked


# --- 5. scenarios of staged plans -------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _fitting_plans(seed: int) -> tuple[Instance, list[Plan]]:
    inst = parse_instance(shrunk_staged_job_dict(seed))
    return inst, [p.plan for p in all_plans(inst) if p.metrics.fits_memory]


def _staged_sample(seed: int, n: int = 6):
    """Up to ``n`` plans of two or three stages, two with a LoRA stage and two of any length, among those
    that fit in memory."""
    inst, plans = _fitting_plans(seed)
    multi = [p for p in plans if len(p.stages) > 1]
    lora = [p for p in multi if any(st.recipe.lora_rank is not None for st in p.stages)]
    rng = random.Random(seed)
    return inst, (rng.sample(multi, min(n, len(multi))) + rng.sample(lora, min(2, len(lora)))
                  + rng.sample(plans, min(2, len(plans))))


# small spaces; a seed none of whose plans fits in memory is skipped (test_scenario_seeds_have_plans)
SCENARIO_SEEDS = [s for s in FAST_SEEDS if SIZES[s] <= 600][:12]


def test_scenario_seeds_have_plans():
    samples = [_staged_sample(seed)[1] for seed in SCENARIO_SEEDS]
    assert sum(bool(plans) for plans in samples) >= 9
    stages = [st for plans in samples for p in plans for st in p.stages]
    assert {st.method for st in stages} == {"sft", "rl", "opd"}
    assert any(st.recipe.lora_rank is not None for st in stages)
    assert any(len(p.stages) == 3 for plans in samples for p in plans)


@pytest.mark.parametrize("seed", SCENARIO_SEEDS)
def test_point_scenarios_of_staged_plans_equal_the_evaluator(seed):
    inst, plans = _staged_sample(seed)
    if not plans:
        pytest.skip("no plan of this seed fits in memory")
    params = U.parameters(inst)
    scenarios = U.Scenarios(3, 0, {p.name: np.full(3, p.point) for p in params})
    ev = Evaluator(inst)
    se = ScenarioEvaluator(ev, scenarios)
    for plan in plans:
        point = ev.plan_metrics(plan)
        for sm in (se.plan_metrics(plan),):
            for key in SUMMARY:
                assert sm.metric(key) == pytest.approx(np.full(3, getattr(point, key)), rel=1e-12, abs=1e-9), (key, plan)


@pytest.mark.parametrize("seed", SCENARIO_SEEDS[:6])
def test_drawn_scenarios_of_staged_plans_equal_the_evaluator_on_each_scenarios_instance(seed):
    inst, plans = _staged_sample(seed, 4)
    if not plans:
        pytest.skip("no plan of this seed fits in memory")
    scenarios = U.draw(inst, 4, seed)
    se = ScenarioEvaluator(Evaluator(inst), scenarios)
    for plan in plans:
        sm = se.plan_metrics(plan)
        for s in range(scenarios.n):
            m = Evaluator(U.apply(inst, scenarios.at(s))).plan_metrics(plan)
            for key in SUMMARY:
                assert sm.metric(key)[s] == pytest.approx(getattr(m, key), rel=1e-12, abs=1e-12), (key, s, plan)


@pytest.mark.parametrize("seed", SCENARIO_SEEDS[:3])
def test_plan_risk_of_a_staged_plan_without_spread_is_its_point_metrics(seed):
    """``plan_risk`` (what ``--scenarios`` reports) of staged plans on the instance with its limits and every
    uncertain parameter fixed at its point value (``uncertainty``): every percentile is the plan's metric,
    and the plan meets its limits in all scenarios or in none, as the evaluator says."""
    from planopt.uncertainty.risk import plan_risk
    _, plans = _staged_sample(seed, 3)
    if not plans:
        pytest.skip("no plan of this seed fits in memory")
    job = staged_instance_dict(seed)
    job["uncertainty"] = {p.name: p.point for p in U.parameters(parse_instance(job))}
    inst = parse_instance(job)
    ev = Evaluator(inst)
    for plan in plans:
        point = ev.plan_metrics(plan)
        risk = plan_risk(inst, plan, n=40, seed=seed).to_dict()
        for key in ("cost_usd", "wall_hours", "quality", "forgetting_points"):
            for p in ("p10", "p50", "p90"):
                assert risk["percentiles"][key][p] == pytest.approx(getattr(point, key), rel=1e-9, abs=1e-9), (key, p, plan)
            assert risk["expected"][key] == pytest.approx(getattr(point, key), rel=1e-9, abs=1e-9), (key, plan)
        assert risk["share_meeting_all_limits"] == (1.0 if point.feasible else 0.0), (point.violations, risk)


# --- 6. the staged plan's JSON ----------------------------------------------------------------

def _json_plans():
    """A few plans of every length, LoRA stages among them."""
    out = []
    for seed in SCENARIO_SEEDS:
        inst, plans = _staged_sample(seed, 8)
        singles = [p for p in _fitting_plans(seed)[1] if len(p.stages) == 1][:2]
        lora = [p for p in _fitting_plans(seed)[1] if any(st.recipe.lora_rank for st in p.stages)][:2]
        out += [(inst, p) for p in plans + singles + lora]
    return out


def test_staged_plans_round_trip_through_json():
    cases = _json_plans()
    assert {len(p.stages) for _, p in cases} == {1, 2, 3}
    assert any(st.recipe.lora_rank for _, p in cases for st in p.stages)
    for inst, plan in cases:
        data = plan.to_dict()
        assert set(data) == {"student", "stages", "checkpoint_interval_minutes", "retention"}
        assert data["retention"] is None and data["student"] == inst.student.preset
        for stage in data["stages"]:
            assert list(stage) == ["method", "steps", "samples_per_prompt", "teacher_precision", "external_data_share",
                                   "max_epochs", "adapter", "lora_rank", "cpu_offload", "gpu", "gpu_count", "rollout", "staleness_steps"]
            assert stage["rollout"] is None and stage["staleness_steps"] == 0
        for back in (Plan.from_dict(data), Plan.from_dict(json.loads(json.dumps(data)))):
            assert back == plan
            assert back.to_dict() == data
        ev = Evaluator(inst)
        assert_same_metrics(ev.evaluate(Plan.from_dict(json.loads(json.dumps(data)))), ev.plan_metrics(plan))
        read = read_plan(json.loads(json.dumps(data)))
        if len(plan.stages) > 1:
            assert read == plan
        else:   # a one-stage plan may be read as the Plan it is; either way it is the same plan
            stage = plan.stages[0]
            assert read in (plan, Plan.of(stage.recipe, stage.hardware, plan.checkpoint_interval_minutes))


def test_an_old_one_stage_plan_reads_as_a_plan():
    inst = load_instance(INSTANCES / "tiny.json")
    ev, sample = _sample_singles(inst, 10, 3)
    for r, h, interval in sample:
        old = Plan.of(r, h, interval)
        data = json.loads(json.dumps(old.flat_dict()))
        assert "stages" not in data
        back = read_plan(data)
        assert isinstance(back, Plan) and back == old
        as_staged = Plan.from_dict(data)
        assert as_staged == old and len(as_staged.stages) == 1
        assert_same_metrics(ev.evaluate(as_staged), ev.evaluate(old))


@functools.lru_cache(maxsize=None)
def three_stage_case():
    """A three-stage plan that fits in memory, and its instance: the base of the bad plans below."""
    for seed in SCENARIO_SEEDS:
        inst, plans = _staged_sample(seed, 30)
        three = [p for p in plans if len(p.stages) == 3]
        if three:
            return inst, three[0]
    raise AssertionError("no three-stage plan among the scenario seeds")


def _bad(edit):
    inst, plan = three_stage_case()
    data = copy.deepcopy(plan.to_dict())
    edit(data, inst)
    return inst, data


def _gpu_not_offered(data, inst):
    offered = {g.name for g in inst.hardware.gpus}
    data["stages"][1]["gpu"] = next(g for g in ("H100-SXM", "A100-80GB", "H200", "L40S", "B200") if g not in offered)


def _wrong_sequence(data, inst):
    """Two of the three stages, in a sequence the instance does not allow (a one-stage plan of a sequence
    not allowed: test_a_staged_one_stage_plan_of_a_sequence_not_allowed_is_refused)."""
    allowed = inst.training.sequences()
    first, second, third = data["stages"]
    for candidate in ([first, second], [second, third], [first, third]):
        if tuple(s["method"] for s in candidate) not in allowed:
            data["stages"] = candidate
            return
    raise AssertionError("every two-stage sub-sequence is allowed")


def _interval_not_offered(data, inst):
    data["checkpoint_interval_minutes"] = 7.0


def _steps_not_offered(data, inst):
    data["stages"][2]["steps"] = 12345


# An interval the instance does not offer is named by the plan's own field, plan.checkpoint_interval_minutes.

BAD_PLANS = [
    ("unknown top-level field", lambda d, i: d.update(colour="red"), "plan.colour"),
    ("unknown stage field", lambda d, i: d["stages"][1].update(colour="red"), "plan.stages.1.colour"),
    ("four stages", lambda d, i: d["stages"].append(copy.deepcopy(d["stages"][2])), "plan.stages"),
    ("no stage", lambda d, i: d.update(stages=[]), "plan.stages"),
    ("stages not a list", lambda d, i: d.update(stages={"0": d["stages"][0]}), "plan.stages"),
    ("rollout hardware", lambda d, i: d["stages"][1].update(rollout={"gpu": "H100-SXM", "gpu_count": 8}), "plan.stages.1.rollout.gpu"),
    ("asynchronous", lambda d, i: d["stages"][0].update(staleness_steps=2), "plan.stages.0.staleness_steps"),
    ("retention", lambda d, i: d.update(retention={"keep_last": 2, "tier": "hot"}), "plan.retention"),   # no retention block
    ("interval missing", lambda d, i: d.pop("checkpoint_interval_minutes"), "plan.checkpoint_interval_minutes"),
    ("stage not an object", lambda d, i: d["stages"].__setitem__(1, "rl"), "plan.stages.1"),
    ("stage method unknown", lambda d, i: d["stages"][1].update(method="dpo"), "plan.stages"),   # names the sequence
    ("wrong sequence", _wrong_sequence, "plan.stages"),
    ("gpu not offered", _gpu_not_offered, "plan.stages.1.gpu"),
    ("steps not offered", _steps_not_offered, "plan.stages.2.steps"),
    ("interval not offered", _interval_not_offered, "plan.checkpoint_interval_minutes"),
]
XFAIL: dict = {}


@pytest.mark.parametrize("edit, field", [pytest.param(edit, field, id=name, marks=XFAIL.get(name, ()))
                                         for name, edit, field in BAD_PLANS])
def test_bad_staged_plan_json_names_the_field(edit, field):
    inst, data = _bad(edit)
    with pytest.raises(ValueError) as info:
        Evaluator(inst).evaluate(read_plan(json.loads(json.dumps(data))))
    message = str(info.value)
    assert message.split(":")[0] == field, message
    if field == "plan.stages" and "dpo" in json.dumps(data):
        assert "'dpo'" in message


def test_the_bad_plan_base_is_a_valid_three_stage_plan():
    inst, plan = three_stage_case()
    assert len(plan.stages) == 3
    assert_same_metrics(Evaluator(inst).evaluate(read_plan(plan.to_dict())), Evaluator(inst).plan_metrics(plan))
    assert isinstance(plan.stages[0], Stage)


# --- a one-stage plan must follow the instance's sequences too --------------------------------

def _sft_then_rl_only() -> Instance:
    """The agentic-RL instance with one allowed sequence, SFT then RL (no RL alone), and no limits."""
    data = json.loads((INSTANCES / "qwen3-32b-agentic-rl.json").read_text())
    data["training"]["stage_sequences"] = [["sft", "rl"]]
    data["constraints"] = {}
    return parse_instance(data)


def _rl_alone(inst: Instance):
    ev = Evaluator(inst)
    recipes, hardware, intervals = ev.space()
    r = next(r for r in recipes if r.method == "rl")
    h = next(h for h in hardware if h.lora_rank == r.lora_rank and ev.hardware(h).fits(r.memory_class))
    return ev, r, h, intervals[0]


def test_a_staged_one_stage_plan_of_a_sequence_not_allowed_is_refused():
    inst = _sft_then_rl_only()
    ev, r, h, interval = _rl_alone(inst)
    with pytest.raises(ValueError, match=r"^plan\.stages: the methods \['rl'\]"):
        ev.evaluate(Plan.of(r, h, interval))
    from planopt.api import evaluate_plan
    from planopt.errors import InputError
    with pytest.raises(InputError, match="plan.stages"):
        evaluate_plan(inst, Plan.of(r, h, interval).to_dict())


# An old-shape (one-stage) plan is checked against training.stage_sequences too.


def test_an_old_shape_plan_of_a_sequence_not_allowed_is_refused():
    from planopt.api import evaluate_plan
    from planopt.errors import InputError
    inst = _sft_then_rl_only()
    ev, r, h, interval = _rl_alone(inst)
    with pytest.raises(InputError, match="plan"):
        evaluate_plan(inst, Plan.of(r, h, interval).to_dict())


# --- the exact frontier of a staged instance ----------------------------------------------------

def _pareto(metrics, x: str, y: str):
    """The oracle's non-dominated (least x, greatest y) points among feasible plans."""
    front = []
    for m in sorted(metrics, key=lambda m: (getattr(m, x), -getattr(m, y))):
        if not front or getattr(m, y) > front[-1][1] + 1e-9 * max(1.0, abs(front[-1][1])):
            front.append((getattr(m, x), getattr(m, y)))
    return front


@pytest.mark.parametrize("seed", [s for s in FAST_SEEDS if SIZES[s] <= 400][:5])
def test_the_cost_quality_frontier_of_a_staged_instance_equals_the_oracles(seed):
    from planopt.studies.frontier import pareto_frontier
    inst = staged_instance(seed)
    feasible = [p.metrics for p in all_plans(inst) if p.feasible]
    front = pareto_frontier(PlanModel(inst), "cost_usd", "quality")
    expected = _pareto(feasible, "cost_usd", "quality")
    got = sorted((p.metrics.cost_usd, p.metrics.quality) for p in front.points)
    assert len(got) == len(expected), (got, expected)
    for (c, q), (ec, eq) in zip(got, expected):
        assert close(c, ec) and close(q, eq), ((c, q), (ec, eq))
    for p in front.points:
        assert isinstance(p.plan, Plan) and p.metrics.feasible
        Evaluator(inst).check_plan(p.plan)
