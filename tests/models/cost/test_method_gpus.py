"""``training.methods.<m>.gpus``: the GPUs (and counts) a method's stages may train on. A stage of that method on
any other hardware choice does not fit (``HardwareProfile.memory_bytes_per_gpu`` names the field), so the MIP, the
oracles and the pruning all read it through the fits they already share; held to the oracles on random one-stage and
staged jobs."""

import json
import random

import pytest
from typer.testing import CliRunner

from planopt.cli import app
from planopt.instance import parse_instance
from planopt.models.cost.evaluator import Evaluator

from tests.support.common import INSTANCES
from tests.support.oracle_checks import assert_mip_equals_both_oracles, assert_staged_contract
from tests.support.random_instances import random_instance_dict
from tests.support.staged_instances import staged_instance_dict
from tests.support.common import split_seeds

runner = CliRunner()
# seeds whose restriction moves the optimum (or makes the job infeasible): each test also holds that it does
ONE_STAGE_SEEDS = [1, 3, 8, 14, 22, 23, 29, 31, 38, 41, 46, 55]
# the last three take 3-13 s each on 2 cores: the default run leaves them to -m slow (.ci/run)
STAGED_SEEDS = [0, 5, 6, 22, 24, 29, 38, 16, 10, 30]


def restricted(raw: dict, seed: int) -> dict:
    """``raw`` with a random allowed subset of its (GPU, count) choices for some methods (at least one)."""
    rng = random.Random(900_000 + seed)
    pairs = [(g["name"], c) for g in raw["hardware"]["gpus"] for c in g["counts"]]
    methods = list(raw["training"]["methods"])
    chosen = [m for m in methods if rng.random() < 0.6] or [rng.choice(methods)]
    for m in chosen:
        keep = rng.sample(pairs, rng.randint(1, max(1, len(pairs) // 2)))
        by_name: dict[str, list[int]] = {}
        for name, c in keep:
            by_name.setdefault(name, []).append(c)
        raw["training"]["methods"][m]["gpus"] = [{"name": n, "counts": sorted(cs)} for n, cs in by_name.items()]
    return raw


def assert_respected(inst, plan) -> None:
    for stage in plan.stages:
        assert inst.training.methods[stage.method].allows(stage.hardware.gpu, stage.hardware.count), stage


def assert_binds(raw: dict, mip) -> None:
    from planopt.job.model import solve
    free = solve(parse_instance(raw))
    assert (free.status, free.plan) != (mip.status, mip.plan)


@pytest.mark.parametrize("seed", ONE_STAGE_SEEDS)
def test_a_one_stage_job_with_method_gpus_equals_both_oracles(seed):
    inst = parse_instance(restricted(random_instance_dict(seed), seed))
    mip = assert_mip_equals_both_oracles(inst)
    if mip.plan is not None:
        assert_respected(inst, mip.plan)
    assert_binds(random_instance_dict(seed), mip)


@pytest.mark.parametrize("seed", split_seeds(STAGED_SEEDS, 7))
def test_a_staged_job_with_method_gpus_equals_the_staged_oracle(seed):
    inst = parse_instance(restricted(staged_instance_dict(seed), seed))
    mip, _ = assert_staged_contract(inst)
    if mip.plan is not None:
        assert_respected(inst, mip.plan)
    assert_binds(staged_instance_dict(seed), mip)


def test_the_restriction_moves_the_optimum_and_a_plan_against_it_is_infeasible_naming_it():
    raw = json.loads((INSTANCES / "qwen3-32b-sft-then-rl.json").read_text())
    free = parse_instance(raw)
    raw["training"]["methods"]["rl"]["gpus"] = [{"name": "H100-SXM", "counts": [64]}]
    inst = parse_instance(raw)
    from planopt.job.model import solve
    free_result, result = solve(free), solve(inst)
    before, after = free_result.plan, result.plan
    # the README's figures ("GPUs per method")
    assert round(free_result.metrics.cost_usd) == 84_981 and round(result.metrics.cost_usd) == 100_247
    rl = next(s for s in after.stages if s.method == "rl")
    assert (rl.hardware.gpu, rl.hardware.count) == ("H100-SXM", 64)
    was = next(s for s in before.stages if s.method == "rl")
    assert (was.hardware.gpu, was.hardware.count) != ("H100-SXM", 64)   # the restriction binds
    metrics = Evaluator(inst).evaluate(before)
    assert not metrics.fits_memory and not metrics.feasible
    assert any("training.methods.rl.gpus" in v for v in metrics.violations), metrics.violations


@pytest.mark.parametrize("gpus,needle", [
    ([{"name": "L40S"}], "training.methods.rl.gpus.0.name: 'L40S' is not a GPU of hardware.gpus"),
    ([{"name": "B200@nowhere"}], "training.methods.rl.gpus.0.name: 'B200@nowhere' is not a GPU of hardware.gpus"),
    ([{"name": "H100-SXM", "counts": [48]}], "training.methods.rl.gpus.0.counts: 48 is not a count"),
    ([], "training.methods.rl.gpus"),
    ([{"name": "H100-SXM", "cores": 8}], "training.methods.rl.gpus.0.cores"),
])
def test_a_bad_method_gpu_is_refused_in_one_line(tmp_path, gpus, needle):
    raw = json.loads((INSTANCES / "qwen3-32b-sft-then-rl.json").read_text())
    raw["training"]["methods"]["rl"]["gpus"] = gpus
    path = tmp_path / "i.json"
    path.write_text(json.dumps(raw))
    out = runner.invoke(app, ["solve", str(path)])
    assert out.exit_code == 2 and needle in out.stderr, out.stderr
    assert out.stderr.strip().count("\n") == 0


def test_a_trained_teachers_methods_take_no_gpus():
    raw = json.loads((INSTANCES / "qwen3-8b-math-train-the-teacher.json").read_text())
    method = next(iter(raw["teacher"]["training"]["methods"]))
    raw["teacher"]["training"]["methods"][method]["gpus"] = [{"name": raw["hardware"]["gpus"][0]["name"]}]
    with pytest.raises(Exception, match=f"teacher.training.methods.{method}.gpus: the teacher's job takes its GPUs"):
        parse_instance(raw)


def test_an_infeasible_job_says_that_lifting_a_method_s_gpus_would_make_a_plan_exist(tmp_path):
    """RL kept to 8 × B200 misses a 200 h deadline the job meets on its own optimum (32 × B200, $84,981, 153.5 h):
    the relaxations list the option beside the limits, in the text and in --json."""
    raw = json.loads((INSTANCES / "qwen3-32b-sft-then-rl.json").read_text())
    raw["training"]["methods"]["rl"]["gpus"] = [{"name": "B200", "counts": [8]}]
    raw["constraints"]["deadline_hours"] = 200
    path = tmp_path / "i.json"
    path.write_text(json.dumps(raw))
    out = runner.invoke(app, ["solve", str(path), "--json"])
    assert out.exit_code == 3
    answer = json.loads(out.stdout)
    (lifted,) = [r for r in answer["relaxations"] if r.get("kind") == "option"]
    assert lifted["constraint"] == "training.methods.rl.gpus" and lifted["required"] is None
    assert lifted["text"] == "a plan then exists at $84,981; its rl stage trains on 32 × B200"
    assert any(r["constraint"] == "deadline_hours" for r in answer["relaxations"])
    text = runner.invoke(app, ["solve", str(path)])
    assert "training.methods.rl.gpus: null (every GPU of hardware.gpus)  (a plan then exists at $84,981" in text.stdout
