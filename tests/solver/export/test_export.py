"""`planopt export`: each target's file holds the plan's values (read back and compared with the plan JSON and the
instance, not with literals), staged plans write one file per stage, and a plan a target cannot run, a file that is
not a plan or a bad target is refused in one line, exit 2, with no file left."""

from __future__ import annotations

import json
import math

import pytest
import yaml
from typer.testing import CliRunner

from planopt.cli import app

from tests.solver.export.plans import instance, stage_dict, write_plan
from tests.support.common import INSTANCES


def export(plan, inst, target, out, *extra):
    return CliRunner().invoke(app, ["export", str(plan), "--to", target, "--out", str(out), "--instance", str(inst),
                                    *extra])


def read(path):
    text = path.read_text()
    return yaml.safe_load(text), [line for line in text.splitlines() if line.startswith("#")]


@pytest.fixture
def tiny_rl(tmp_path):
    inst = instance("tiny.json")
    stage = stage_dict(inst, "rl", schedule=[8, 4, 4], gpu_index=2, count=8)
    return write_plan(tmp_path, "tiny.json", [stage])


def test_verl_file_holds_the_plans_values(tiny_rl, tmp_path):
    plan_path, inst_path, plan = tiny_rl
    inst, stage = instance("tiny.json"), plan["stages"][0]
    result = export(plan_path, inst_path, "verl", tmp_path / "verl.yaml")
    assert result.exit_code == 0, result.stderr
    cfg, comments = read(tmp_path / "verl.yaml")
    node = inst.hardware.gpus[2].spec().gpus_per_node
    assert cfg["trainer"]["total_training_steps"] == stage["steps"]
    assert cfg["trainer"]["n_gpus_per_node"] * cfg["trainer"]["nnodes"] == stage["gpu_count"]
    assert cfg["trainer"]["nnodes"] == math.ceil(stage["gpu_count"] / node)
    assert cfg["data"]["train_batch_size"] == inst.training.methods["rl"].prompts_per_step
    assert cfg["data"]["max_response_length"] == math.ceil(inst.task.max_response_tokens)
    assert cfg["actor_rollout_ref"]["rollout"]["n"] == stage["samples_per_prompt"][0]
    assert cfg["actor_rollout_ref"]["model"]["lora_rank"] == 0
    assert cfg["actor_rollout_ref"]["actor"]["use_kl_loss"] is inst.training.reference_logprobs
    assert cfg["trainer"]["save_freq"] >= 1
    # the per-phase schedule has no verl key: listed in the file and on stdout
    schedule = str(stage["samples_per_prompt"])
    assert any(schedule in line for line in comments) and schedule in result.stdout


def test_nemo_rl_and_trl_hold_the_same_values(tiny_rl, tmp_path):
    plan_path, inst_path, plan = tiny_rl
    inst, stage = instance("tiny.json"), plan["stages"][0]
    assert export(plan_path, inst_path, "nemo-rl", tmp_path / "n.yaml").exit_code == 0
    nemo, _ = read(tmp_path / "n.yaml")
    assert nemo["grpo"] == {"num_prompts_per_step": inst.training.methods["rl"].prompts_per_step,
                            "num_generations_per_prompt": stage["samples_per_prompt"][0], "max_num_steps": stage["steps"]}
    assert nemo["cluster"]["gpus_per_node"] * nemo["cluster"]["num_nodes"] == stage["gpu_count"]
    result = export(plan_path, inst_path, "trl", tmp_path / "t.yaml", "--json")
    assert result.exit_code == 0, result.stderr
    answer = json.loads(result.stdout)
    trl, comments = read(tmp_path / "t.yaml")
    assert trl["max_steps"] == stage["steps"] and trl["num_generations"] == stage["samples_per_prompt"][0]
    assert trl["per_device_train_batch_size"] * stage["gpu_count"] == \
        inst.training.methods["rl"].prompts_per_step * stage["samples_per_prompt"][0]
    assert trl["save_steps"] == nemo["checkpointing"]["save_period"]   # one checkpoint interval, two spellings
    assert f"--num_processes {stage['gpu_count']}" in " ".join(comments)
    assert answer["files"] == [str(tmp_path / "t.yaml")] and answer["not_expressed"]
    assert all(note in trl_note for note, trl_note in zip(answer["not_expressed"], [c for c in comments if "  - " in c]))


def test_skypilot_task_from_a_spot_offer(tmp_path):
    data = json.loads((INSTANCES / "tiny.json").read_text())
    data["hardware"]["pricing"] = "spot"
    data["hardware"]["gpus"] = [{"name": "H100-SXM", "provider": "aws", "region": "us-east-1", "counts": [8]}]
    (tmp_path / "job.json").write_text(json.dumps(data))
    inst = instance("tiny.json").model_validate(data)
    stage = stage_dict(inst, "opd", schedule=[8, 4, 4], count=8)
    plan = {"version": "2.1", "status": "optimal", "metrics": {},
            "plan": {"student": inst.student_name, "stages": [stage], "retention": None,
                     "checkpoint_interval_minutes": inst.checkpointing.interval_minutes_options[0]}}
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    result = export(tmp_path / "plan.json", tmp_path / "job.json", "skypilot", tmp_path / "task.yaml")
    assert result.exit_code == 0, result.stderr
    task, _ = read(tmp_path / "task.yaml")
    option = inst.hardware.gpus[0]
    assert task["resources"] == {"accelerators": {"H100": min(8, option.spec().gpus_per_node)}, "use_spot": True,
                                 "cloud": option.provider, "region": option.region}
    assert task["num_nodes"] == math.ceil(stage["gpu_count"] / option.spec().gpus_per_node)
    assert task["run"].startswith("#")


@pytest.mark.slow
def test_skypilots_own_parser_reads_the_task(tiny_rl, tmp_path):
    """SkyPilot's task parser (`sky.Task.from_yaml`; its import takes ~5 s, hence slow) accepts the task and reads
    the plan's node count and accelerators back."""
    sky = pytest.importorskip("sky")
    plan_path, inst_path, plan = tiny_rl
    assert export(plan_path, inst_path, "skypilot", tmp_path / "task.yaml").exit_code == 0
    task = sky.Task.from_yaml(str(tmp_path / "task.yaml"))
    resources = next(iter(task.resources))
    assert task.num_nodes * sum(resources.accelerators.values()) == plan["stages"][0]["gpu_count"]
    assert resources.use_spot is False


def test_a_staged_plan_writes_one_file_per_stage(tmp_path):
    inst = instance("qwen3-32b-sft-then-rl.json")
    stages = [stage_dict(inst, "sft", lora_rank=16, gpu_index=2, count=8),
              stage_dict(inst, "rl", schedule=[16, 16, 4], lora_rank=16, gpu_index=2, count=32)]
    plan_path, inst_path, plan = write_plan(tmp_path, "qwen3-32b-sft-then-rl.json", stages)
    result = export(plan_path, inst_path, "verl", tmp_path / "job.yaml")
    assert result.exit_code == 0, result.stderr
    files = [tmp_path / "job.stage1-sft.yaml", tmp_path / "job.stage2-rl.yaml"]
    assert sorted(tmp_path.glob("job*.yaml")) == files
    sft, _ = read(files[0])
    rl, rl_comments = read(files[1])
    assert any("starts from stage 1's final checkpoint" in line for line in rl_comments)
    assert sft["model"]["lora_rank"] == stages[0]["lora_rank"] and sft["trainer"]["total_training_steps"] == stages[0]["steps"]
    assert sft["data"]["train_batch_size"] == inst.training.methods["sft"].prompts_per_step
    assert rl["actor_rollout_ref"]["model"]["lora_rank"] == stages[1]["lora_rank"]
    assert rl["trainer"]["n_gpus_per_node"] * rl["trainer"]["nnodes"] == stages[1]["gpu_count"]


def test_a_method_the_target_cannot_run_is_refused_and_nothing_written(tmp_path):
    inst = instance("tiny.json")
    plan_path, inst_path, _ = write_plan(tmp_path, "tiny.json", [stage_dict(inst, "opd", schedule=[8, 4, 4], gpu_index=2)])
    result = export(plan_path, inst_path, "verl", tmp_path / "v.yaml")
    assert result.exit_code == 2 and result.stderr.count("\n") == 1 and "--to verl" in result.stderr
    assert list(tmp_path.glob("*.yaml")) == [] and list(tmp_path.glob(".*")) == []


def test_a_staged_plan_with_one_refused_stage_writes_no_stage(tmp_path):
    inst = instance("tiny.json")
    data = json.loads((INSTANCES / "tiny.json").read_text())
    data["training"]["stage_sequences"] = [["sft", "opd"]]
    (tmp_path / "job.json").write_text(json.dumps(data))
    stages = [stage_dict(inst, "sft", gpu_index=2), stage_dict(inst, "opd", schedule=[8, 4, 4], gpu_index=2)]
    plan = {"version": "2.1", "status": "optimal", "metrics": {},
            "plan": {"student": inst.student_name, "stages": stages, "retention": None,
                     "checkpoint_interval_minutes": inst.checkpointing.interval_minutes_options[0]}}
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    result = export(tmp_path / "plan.json", tmp_path / "job.json", "verl", tmp_path / "v.yaml")
    assert result.exit_code == 2, result.stdout + result.stderr
    assert list(tmp_path.glob("v*.yaml")) == []


@pytest.mark.parametrize("content, expected", [
    ({"status": "optimal"}, "not a `planopt solve --json` plan"),
    ({"version": "2.1", "status": "infeasible", "plan": None, "metrics": None}, "holds no plan"),
    ("[1, 2", "not valid JSON"),
])
def test_a_file_that_is_not_a_plan_is_refused(tmp_path, content, expected):
    path = tmp_path / "plan.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    result = export(path, INSTANCES / "tiny.json", "trl", tmp_path / "t.yaml", "--json")
    assert result.exit_code == 2 and expected in result.stderr
    assert json.loads(result.stdout)["status"] == "error" and not (tmp_path / "t.yaml").exists()


def test_a_plan_of_another_instance_and_an_unknown_target_are_refused(tiny_rl, tmp_path):
    plan_path, _, _ = tiny_rl
    other = export(plan_path, INSTANCES / "qwen3-32b-sft-then-rl.json", "trl", tmp_path / "t.yaml")
    assert other.exit_code == 2 and "not a plan of" in other.stderr
    unknown = export(plan_path, INSTANCES / "tiny.json", "slurm", tmp_path / "t.yaml")
    assert unknown.exit_code == 2 and "--to" in unknown.stderr
    assert list(tmp_path.glob("t*.yaml")) == []


def test_files_get_the_mode_the_umask_gives(tiny_rl, tmp_path):
    import os
    plan_path, inst_path, _ = tiny_rl
    old = os.umask(0o027)
    try:
        assert export(plan_path, inst_path, "trl", tmp_path / "t.yaml").exit_code == 0
    finally:
        os.umask(old)
    assert (tmp_path / "t.yaml").stat().st_mode & 0o777 == 0o640


def test_separate_rollout_gpus_are_listed_by_every_framework(tmp_path):
    inst = instance("qwen3-32b-agentic-rl-split-rollout.json")
    stage = stage_dict(inst, "rl", schedule=[16, 16, 16], gpu_index=0, count=16)
    rollout = inst.hardware.rollout_gpus[0]
    stage["rollout"] = {"gpu": rollout.key, "gpu_count": min(rollout.counts)}
    plan_path, inst_path, _ = write_plan(tmp_path, "qwen3-32b-agentic-rl-split-rollout.json", [stage])
    for target in ("skypilot", "verl", "nemo-rl", "trl"):
        result = export(plan_path, inst_path, target, tmp_path / f"{target}.yaml", "--json")
        assert result.exit_code == 0, (target, result.stderr)
        notes = json.loads(result.stdout)["not_expressed"]
        assert any(f"{stage['rollout']['gpu_count']} separate {rollout.key}" in n for n in notes), (target, notes)


def test_a_provider_without_a_skypilot_cloud_leaves_cloud_and_region_out(tmp_path):
    data = json.loads((INSTANCES / "tiny.json").read_text())
    data["hardware"]["gpus"] = [{"name": "H200", "provider": "spheron", "counts": [8]}]
    (tmp_path / "job.json").write_text(json.dumps(data))
    inst = instance("tiny.json").model_validate(data)
    stage = stage_dict(inst, "rl", count=8)
    plan = {"version": "2.1", "status": "optimal", "metrics": {},
            "plan": {"student": inst.student_name, "stages": [stage], "retention": None,
                     "checkpoint_interval_minutes": inst.checkpointing.interval_minutes_options[0]}}
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    result = export(tmp_path / "plan.json", tmp_path / "job.json", "skypilot", tmp_path / "task.yaml")
    assert result.exit_code == 0, result.stderr
    task, comments = read(tmp_path / "task.yaml")
    assert "cloud" not in task["resources"] and "region" not in task["resources"]
    assert any("spheron has no SkyPilot cloud" in line for line in comments) and "spheron" in result.stdout


@pytest.mark.parametrize("target", ["nemo-rl", "trl"])
def test_a_staged_plans_sft_stage_in_nemo_rl_and_trl(tmp_path, target):
    inst = instance("qwen3-32b-sft-then-rl.json")
    stages = [stage_dict(inst, "sft", lora_rank=16, gpu_index=2, count=8),
              stage_dict(inst, "rl", schedule=[16, 16, 4], lora_rank=16, gpu_index=2, count=32)]
    plan_path, inst_path, _ = write_plan(tmp_path, "qwen3-32b-sft-then-rl.json", stages)
    assert export(plan_path, inst_path, target, tmp_path / "job.yaml").exit_code == 0
    sft, comments = read(tmp_path / "job.stage1-sft.yaml")
    examples = inst.training.methods["sft"].prompts_per_step
    if target == "nemo-rl":
        assert sft["sft"]["max_num_steps"] == stages[0]["steps"]
        assert sft["policy"]["train_global_batch_size"] == examples
        assert any("LoRA rank 16" in line for line in comments)
    else:
        assert sft["max_steps"] == stages[0]["steps"] and sft["lora_r"] == stages[0]["lora_rank"]
        assert sft["per_device_train_batch_size"] * stages[0]["gpu_count"] == examples


def test_a_skypilot_task_names_the_catalog_offer_the_plan_is_bought_from(tmp_path):
    """A GPU entry without a provider is bought at the catalog's cheapest offer that holds the count
    (`hardware.offer_of`): the task names that offer's cloud and region, its node size and the tier."""
    from planopt.models.catalog.prices import load_prices
    from planopt.export.skypilot import CLOUDS, PLACEHOLDER_REGIONS
    inst = instance("qwen3-8b-math.json")
    stage = stage_dict(inst, "rl", gpu_index=0, count=16)  # 16 x H100-SXM: two nodes, so not the marketplace
    plan_path, inst_path, _ = write_plan(tmp_path, "qwen3-8b-math.json", [stage])
    result = export(plan_path, inst_path, "skypilot", tmp_path / "task.yaml")
    assert result.exit_code == 0, result.stderr
    task, _ = read(tmp_path / "task.yaml")
    gpu = inst.hardware.gpus[0].name
    rows = [r for r in load_prices() if r.gpu == gpu and r.tier == "on_demand"
            and (r.interconnect != "ethernet" or 16 <= r.node_gpus)]
    best = min(rows, key=lambda r: r.usd_per_gpu_hour)
    res = task["resources"]
    assert res["use_spot"] is False and task["num_nodes"] == math.ceil(16 / best.node_gpus)
    if best.provider in CLOUDS:
        assert res["cloud"] == CLOUDS[best.provider]
        if best.region not in PLACEHOLDER_REGIONS:
            assert res["region"] == best.region
