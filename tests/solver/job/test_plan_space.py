"""Issue 13 item 26: the plan-space size counted from the options equals the enumerated one, and a model
over the memory cap is refused, before any recipe is listed, with one line naming the option that blows it up."""

from __future__ import annotations

import copy
import json

import pytest
from typer.testing import CliRunner

from planopt.cli import app
from planopt.errors import InputError
from planopt.instance import load_instance
from planopt.models.cost.evaluator import Evaluator
from planopt.job.plan_space import MAX_MODEL_MIB, check_model_size, plan_space, schedule_count
from planopt.job.model import PlanModel
from tests.support.common import INSTANCES
from tests.support.random_instances import random_instance_dict

JOBS = sorted(p for p in INSTANCES.glob("*.json") if json.loads(p.read_text()).get("kind", "job") == "job")
QWEN = json.loads((INSTANCES / "qwen3-8b-math.json").read_text())


def _enumerated(inst):
    recipes, hardware, intervals = Evaluator(inst).space()
    return len(recipes), len(hardware), len(intervals)


@pytest.mark.parametrize("path", JOBS, ids=lambda p: p.stem)
def test_counts_equal_the_enumeration_on_shipped_instances(path):
    inst = load_instance(path)
    space = plan_space(inst)
    if inst.training.staged:  # the model holds each stage slot's recipes and the pairs of the first two
        from planopt.models.formulation.space import collect_space
        data = collect_space(Evaluator(inst), prune=False)
        assert space.recipes == sum(len(d.recipes) for d in data.slots)
        assert space.stage_pairs == int(data.pair_allowed.sum()) > 0
        assert (space.hardware, space.intervals) == _enumerated(inst)[1:]
        return
    assert (space.recipes, space.hardware, space.intervals) == _enumerated(inst)


@pytest.mark.parametrize("seed", range(40))
def test_counts_equal_the_enumeration_on_random_instances(seed):
    raw = random_instance_dict(seed)
    rng = seed % 4  # vary the sampling grid too: taper or not, 1 to 4 phases
    raw["training"] = {**raw["training"], "phases": 1 + rng, "taper_only": bool(seed % 2),
                       "adapter_options": [["full"], ["lora"], ["full", "lora"]][seed % 3],
                       "lora_rank_options": [[16], [8, 64]][seed % 2]}
    inst = load_instance(raw)
    space = plan_space(inst)
    assert (space.recipes, space.hardware, space.intervals) == _enumerated(inst)


@pytest.mark.parametrize("k,p", [(1, 1), (3, 1), (3, 3), (4, 6), (5, 2)])
def test_schedule_count_is_the_number_of_schedules(k, p):
    import itertools
    combos = list(itertools.product(range(k), repeat=p))
    assert schedule_count(k, p, False) == len(combos)
    assert schedule_count(k, p, True) == sum(all(a >= b for a, b in zip(c, c[1:])) for c in combos)


def _huge_counts() -> dict:
    raw = copy.deepcopy(QWEN)
    raw["hardware"]["gpus"][1]["counts"] = list(range(1, 20_001))
    return raw


def _huge_schedules() -> dict:
    raw = copy.deepcopy(QWEN)
    raw["training"].update(phases=6, taper_only=False, samples_per_prompt_options=[1, 2, 4, 8, 16, 32])
    return raw


@pytest.mark.parametrize("raw,option", [(_huge_counts(), "hardware.gpus.1.counts"),
                                        (_huge_schedules(), "training.samples_per_prompt_options")],
                         ids=["20000-gpu-counts", "6-phases-no-taper"])
def test_a_model_over_the_cap_is_refused_before_any_recipe_is_listed(monkeypatch, raw, option):
    inst = load_instance(raw)
    assert plan_space(inst).model_mib > MAX_MODEL_MIB and plan_space(inst).dominant == option

    def never(*args, **kwargs):
        raise AssertionError("the refusal must come before the recipes are listed")

    monkeypatch.setattr("planopt.models.cost.evaluator.enumerate_recipes", never)
    monkeypatch.setattr("planopt.models.cost.recipes.enumerate_recipes", never)
    with pytest.raises(InputError) as exc:
        PlanModel(inst)
    message = str(exc.value)
    assert message.startswith(f"{option}: ") and "\n" not in message
    assert f"cap of {MAX_MODEL_MIB:,} MiB" in message and f"{plan_space(inst).plans:,} plans" in message


def test_one_value_of_the_dominant_option_brings_the_model_under_the_cap():
    inst = load_instance(_huge_counts())
    space = plan_space(inst)
    assert space.model_mib_without[space.dominant] < MAX_MODEL_MIB
    fixed = copy.deepcopy(_huge_counts())
    fixed["hardware"]["gpus"][1]["counts"] = [8]
    assert check_model_size(load_instance(fixed)).model_mib < MAX_MODEL_MIB


def test_cli_solve_and_validate_refuse_with_one_line(tmp_path):
    path = tmp_path / "huge.json"
    path.write_text(json.dumps(_huge_schedules()))
    runner = CliRunner()
    solved = runner.invoke(app, ["solve", str(path), "--json"])
    assert solved.exit_code == 2
    assert json.loads(solved.stdout)["error"].startswith("training.samples_per_prompt_options: ")
    checked = runner.invoke(app, ["validate", str(path)])
    assert checked.exit_code == 2
    lines = checked.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: training.samples_per_prompt_options: ")
    assert "46,656 sampling schedules" in lines[0]


def test_validate_prints_the_size_and_the_estimate():
    res = CliRunner().invoke(app, ["validate", str(INSTANCES / "tiny.json")])
    assert res.exit_code == 0
    # 40 recipes x 9 hardware options x 3 intervals: L4 x 2, 4, 8 have no catalog offer (one-GPU ethernet nodes)
    assert "= 1,080 plans" in res.stdout and f"of the {MAX_MODEL_MIB:,} MiB cap" in res.stdout
    assert "left out: hardware.gpus.0: L4 × 2, 4, 8" in res.stdout


def test_validate_a_portfolio_counts_its_jobs_plans_and_refuses_a_huge_job(tmp_path):
    runner = CliRunner()
    ok = runner.invoke(app, ["validate", str(INSTANCES / "portfolio-small.json")])
    assert ok.exit_code == 0 and "plans over the jobs" in ok.stdout
    raw = json.loads((INSTANCES / "portfolio-small.json").read_text())
    raw["jobs"][1]["instance"]["training"].update(phases=6, taper_only=False, samples_per_prompt_options=[1, 2, 4, 8, 16, 32])
    path = tmp_path / "p.json"
    path.write_text(json.dumps(raw))
    res = runner.invoke(app, ["validate", str(path)])
    assert res.exit_code == 2
    line = res.stderr.strip()
    assert "\n" not in line and f"job '{raw['jobs'][1]['name']}': training.samples_per_prompt_options: " in line
