"""The vectorised enumeration oracle, and the MIP against it on large spaces.

1. The vectorised oracle (``enumerate_arrays``) equals the plan-by-plan oracle
   (``oracle.best_plan``) on small random instances: same status, same optimal
   objective and cost, and here the same plan.
2. The MIP equals the vectorised oracle on random instances of 10^5 to 10^6
   plans (limits drawn from the instances' own plans, so many bind), each
   solved well under a second.
3. Dominance pruning (``data.dominated_hardware``, ``data.dominated_recipes``)
   drops only hardware choices and recipes that a kept one beats or equals on
   every metric of every plan, checked on the evaluator's metric arrays, not on
   the MIP's coefficients; and pruned models keep every objective's optimum.
4. The memory guard refuses before it allocates.
"""

from __future__ import annotations

import json
import math
import random
import tracemalloc

import numpy as np
import pytest

from planopt.oracles.arrays import MAX_ARRAY_BYTES, best_plan_arrays, plan_arrays
from planopt.errors import InputError
from planopt.models.cost.evaluator import Evaluator
from planopt.models.formulation.data import collect, dominated_hardware, dominated_recipes
from planopt.instance import parse_instance
from planopt.oracles.by_plan import best_plan
from planopt.job.model import PlanModel

from tests.support.common import INSTANCES, split_seeds
from tests.support.random_instances import GPUS, LARGE as LARGE_GRID, random_instance_dict, random_job_dict, random_limits

REL = 1e-6


def close(a: float, b: float, rel: float = REL) -> bool:
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-6)


@pytest.mark.parametrize("seed", split_seeds(range(40), 8))
def test_vectorised_oracle_equals_plan_by_plan_oracle(seed):
    inst = parse_instance(random_instance_dict(seed))
    slow, fast = best_plan(inst), best_plan_arrays(inst)
    assert fast.status == slow.status
    if slow.status != "optimal":
        return
    assert close(fast.metrics.objective(inst.objective), slow.metrics.objective(inst.objective), 1e-9)
    assert close(fast.metrics.cost_usd, slow.metrics.cost_usd, 1e-9)
    assert fast.metrics.feasible
    assert fast.plan == slow.plan  # no near-ties in these instances: the same plan


def large_instance_dict(seed: int, low: int = 100_000, high: int = 1_000_000) -> dict:
    """A random job of ``low``..``high`` plans (the LARGE option grid), limits drawn from its
    own plans that fit in memory."""
    rng = random.Random(10_000 + seed)
    while True:
        inst = random_job_dict(rng, f"large-{seed}", LARGE_GRID)
        recipes, hardware, intervals = Evaluator(parse_instance(inst)).space()
        if low <= len(recipes) * len(hardware) * len(intervals) <= high:
            break
    _, mt = plan_arrays(parse_instance(inst))
    fits = mt["feasible"]  # no limits yet: fits in memory
    values = {key: np.asarray(mt[key])[fits] for key in ("cost_usd", "wall_hours", "forgetting_points", "quality")}
    inst["constraints"] = random_limits(rng, values)
    return inst


LARGE = range(30)


@pytest.fixture(scope="module")
def large_instances():
    return {seed: parse_instance(large_instance_dict(seed)) for seed in LARGE}


@pytest.mark.parametrize("seed", split_seeds(LARGE, 6))
def test_mip_equals_vectorised_oracle_on_large_spaces(seed, large_instances):
    inst = large_instances[seed]
    r, h, i = Evaluator(inst).space()
    assert 100_000 <= len(r) * len(h) * len(i) <= 1_000_000
    mip = PlanModel(inst).solve()  # speed is measured in benchmarks/bench_scale.py, not here
    oracle = best_plan_arrays(inst)
    assert mip.status == oracle.status, (mip.status, oracle.status, mip.message)
    if oracle.status == "optimal":
        assert close(mip.metrics.objective(inst.objective), oracle.metrics.objective(inst.objective)), (mip.plan, oracle.plan)
        assert close(mip.metrics.cost_usd, oracle.metrics.cost_usd), (mip.plan, oracle.plan)
        assert mip.metrics.feasible and mip.big_m_breaches == []
        for key, value in mip.mip_values.items():
            assert close(value, getattr(mip.metrics, key)), key


@pytest.mark.parametrize("seed", split_seeds(range(12), 6))
def test_dropped_recipes_are_dominated_on_every_plan(seed):
    """Each recipe ``dominated_recipes`` drops has a kept recipe at least as good on every metric of every plan."""
    inst = parse_instance({**random_instance_dict(seed), "constraints": {}})
    data = collect(Evaluator(inst))
    if not data.recipes or not data.hardware:
        return
    dropped = dominated_recipes(data)
    kept = np.flatnonzero(~dropped)
    assert len(kept) >= 1
    p, mt = plan_arrays(inst)
    assert [r for r in p.recipes.recipes] == data.recipes
    cols = [p.hardware.hardware.index(hw) for hw in data.hardware]  # collect drops hardware nothing fits on
    fits = mt["feasible"][:, cols]  # no limits: fits in memory
    values = {k: np.asarray(mt[k])[:, cols] for k in ("cost_usd", "wall_hours", "forgetting_points")}
    quality = np.asarray(mt["quality"])[:, cols]
    slack = 1e-12
    for b in np.flatnonzero(dropped):
        where = fits[b]
        ok = np.ones(len(kept), dtype=bool)
        for n, a in enumerate(kept):
            ok[n] = (fits[a][where].all()
                     and all((values[k][a][where] <= values[k][b][where] * (1 + slack) + slack).all() for k in values)
                     and (quality[a][where] >= quality[b][where] * (1 - slack) - slack).all())
        assert ok.any(), f"recipe {data.recipes[b]} dropped, but no kept recipe dominates it"


def test_dominance_pruning_leaves_the_optimum_of_every_objective_and_limit():
    """Pruned and unpruned models agree under each objective and a tightening budget (the limits a sweep sets)."""
    from planopt.models.formulation import collect_space
    inst = parse_instance({**large_instance_dict(3, 20_000, 200_000), "constraints": {}})
    ev = Evaluator(inst)
    pruned = collect_space(ev).slots[0]
    full = collect(ev)
    assert len(pruned.recipes) < len(full.recipes), "nothing dominated: this test checks nothing"
    for objective in ("cost", "quality", "time", "forgetting"):
        for budget in (None, 2.0, 1.2):
            base = inst.model_copy(update={"objective": objective})
            if budget is not None:
                cheapest = PlanModel(inst.model_copy(update={"objective": "cost"})).solve().metrics.cost_usd
                base = base.model_copy(update={"constraints": base.constraints.model_copy(update={"budget_usd": cheapest * budget})})
            a, b = PlanModel(base).solve(), best_plan_arrays(base)
            assert a.status == b.status == "optimal"
            assert close(a.metrics.objective(objective), b.metrics.objective(objective))
            assert close(a.metrics.cost_usd, b.metrics.cost_usd)


def test_plan_arrays_refuse_before_allocating():
    """A space whose arrays would pass the cap is refused in one line naming its options, with nothing large allocated."""
    raw = json.loads((INSTANCES / "qwen3-8b-math.json").read_text())
    raw["training"]["samples_per_prompt_options"] = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32]
    raw["checkpointing"]["interval_minutes_options"] = list(range(5, 245, 5))
    raw["hardware"]["gpus"] = [{"name": g, "counts": [8, 16, 24, 32, 48, 64, 96, 128]} for g in GPUS]
    raw["hardware"]["offers"] = "reference"  # every count priced, so the space is the full product
    inst = parse_instance(raw)
    tracemalloc.start()
    try:
        with pytest.raises(InputError) as err:
            plan_arrays(inst)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    msg = str(err.value)
    assert "\n" not in msg and "over the cap" in msg
    assert "samples_per_prompt_options" in msg and "interval_minutes_options" in msg and "hardware.gpus" in msg
    assert peak < MAX_ARRAY_BYTES / 20, peak
    with pytest.raises(InputError, match="over the vectorised oracle's limit"):
        best_plan_arrays(inst, max_plans=1000)


@pytest.mark.parametrize("seed", split_seeds(range(12), 6))
def test_dropped_hardware_is_dominated_on_every_plan(seed):
    """Each hardware choice ``dominated_hardware`` drops has a kept one on which every recipe's best plan
    is at least as good, on the evaluator's metrics, as its every plan on the dropped one."""
    inst = parse_instance({**random_instance_dict(seed), "constraints": {}})
    data = collect(Evaluator(inst))
    if len(data.hardware) < 2:
        return
    dropped = dominated_hardware(data)
    p, mt = plan_arrays(inst)
    cols = np.array([p.hardware.hardware.index(hw) for hw in data.hardware])
    fits = mt["feasible"][:, cols, 0]                      # [recipe, hardware] (no limits: memory)
    cost, wall = (np.asarray(mt[k])[:, cols] for k in ("cost_usd", "wall_hours"))
    slack = 1e-12
    for h2 in np.flatnonzero(dropped):
        rs = fits[:, h2]
        found = False
        for h1 in np.flatnonzero(~dropped):
            if not fits[rs, h1].all():
                continue
            best_cost, best_wall = cost[rs, h1].min(axis=1), wall[rs, h1].min(axis=1)  # its best interval
            if ((best_cost[:, None] <= cost[rs, h2] * (1 + slack)).all()
                    and (best_wall[:, None] <= wall[rs, h2] * (1 + slack)).all()):
                found = True
                break
        assert found, f"{data.hardware[h2]} dropped, but no kept hardware dominates it"


@pytest.mark.parametrize("seed", list(range(6)))
def test_mip_start_is_a_feasible_plan_and_optimal_when_only_recipe_limits_bind(seed):
    """The floor-plan start (formulation/start.py) meets every limit by the evaluator's rule; with only
    quality and forgetting limits (recipe-level) and least cost, the cheapest floor plan is the optimum."""
    from planopt.models.formulation.start import floor_plan
    raw = large_instance_dict(seed)
    recipe_only = {k: v for k, v in raw["constraints"].items() if k in ("min_quality", "max_forgetting_points")}
    for constraints, objective in ((raw["constraints"], raw["objective"]), (recipe_only, "cost")):
        inst = parse_instance({**raw, "constraints": constraints, "objective": objective})
        pm = PlanModel(inst)
        if pm.model is None:
            continue
        plan = floor_plan(pm.model, pm.space.slots[0])
        best = best_plan_arrays(inst)
        if plan is None:
            continue
        r, h, i, _ = plan   # and the retention option (None without a retention block)
        metrics = pm.evaluator.metrics(pm.space.slots[0].recipes[r], pm.space.slots[0].hardware[h], pm.space.slots[0].intervals[i])
        assert metrics.feasible, metrics.violations
        assert best.status == "optimal"
        if objective == "cost" and constraints is recipe_only:
            assert close(metrics.cost_usd, best.metrics.cost_usd, 1e-9), (metrics.cost_usd, best.metrics.cost_usd)


def reuse_large_instance_dict(seed: int) -> dict:
    """A LARGE-grid job (2e4-4e5 plans) with few distinct prompts and SFT epochs over owned
    examples as a choice, limits drawn from its own plans."""
    rng = random.Random(50_000 + seed)
    while True:
        inst = random_job_dict(rng, f"reuse-large-{seed}", LARGE_GRID)
        inst["task"]["prompts_available"] = rng.choice([100, 2_000, 30_000])
        if "sft" in inst["training"]["methods"]:
            inst["sft_data"]["examples_available"] = rng.choice([2_000, 50_000])
            inst["sft_data"]["max_epochs_options"] = sorted(rng.sample([1, 2, 4, 8, 16], rng.randint(2, 4)))
        recipes, hardware, intervals = Evaluator(parse_instance(inst)).space()
        if 20_000 <= len(recipes) * len(hardware) * len(intervals) <= 400_000:
            break
    _, mt = plan_arrays(parse_instance(inst))
    fits = mt["feasible"]
    values = {key: np.asarray(mt[key])[fits] for key in ("cost_usd", "wall_hours", "forgetting_points", "quality")}
    inst["constraints"] = random_limits(rng, values)
    return inst


@pytest.mark.parametrize("seed", range(8))
def test_mip_equals_vectorised_oracle_where_data_repeats(seed):
    inst = parse_instance(reuse_large_instance_dict(seed))
    mip, oracle = PlanModel(inst).solve(), best_plan_arrays(inst)
    assert mip.status == oracle.status, (mip.status, oracle.status, mip.message)
    if oracle.status == "optimal":
        assert close(mip.metrics.objective(inst.objective), oracle.metrics.objective(inst.objective)), (mip.plan, oracle.plan)
        assert close(mip.metrics.cost_usd, oracle.metrics.cost_usd), (mip.plan, oracle.plan)
        assert mip.metrics.feasible and mip.big_m_breaches == []
