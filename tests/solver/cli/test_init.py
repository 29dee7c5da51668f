"""Start in minutes (issue 25 item 1): ``planopt init`` writes a job that validates and solves; ``catalog --models``
and ``--gpus`` list every preset; ``validate`` lists every error at once with "did you mean"; an ambiguous GPU
shorthand names its candidates; ``solve`` keeps one line that counts the errors."""

import json

import pytest
from typer.testing import CliRunner

from planopt.cli import app
from planopt.models.catalog import load_gpus, load_models
from tests.support.common import INSTANCES, ROOT

HF = ROOT / "tests" / "support" / "data" / "hf"
runner = CliRunner()


def run(*args):
    return runner.invoke(app, [str(a) for a in args])


def test_init_from_a_hf_config_alone_writes_a_job_that_validates_and_solves(tmp_path):
    out = tmp_path / "job.json"
    res = run("init", "--hf-config", HF / "qwen3-8b-config.json", "--out", out)
    assert res.exit_code == 0, res.output
    assert "filled in:" in res.stdout and "edit these" in res.stdout and "task.baseline_score" in res.stdout
    data = json.loads(out.read_text())
    assert data["student"]["layers"] == 36 and data["student"]["kv_heads"] == 8
    assert run("validate", out).exit_code == 0
    solved = run("solve", out, "--json", "--no-sensitivity")
    assert solved.exit_code == 0, solved.output
    assert json.loads(solved.stdout)["status"] == "optimal"


def test_init_with_every_flag_writes_them_and_solves(tmp_path):
    out = tmp_path / "job.json"
    res = run("init", "--student", "Qwen3-8B", "--task-score-baseline", "55", "--target", "62",
              "--methods", "sft,rl,opd", "--teacher", "Qwen3-32B", "--gpus", "H100-SXM,B200:8:16",
              "--budget-usd", "60000", "--deadline-hours", "336", "--out", out, "--json")
    assert res.exit_code == 0, res.output
    answer = json.loads(res.stdout)
    assert answer["ok"] is True and answer["instance"] == json.loads(out.read_text())
    data = answer["instance"]
    assert data["student"] == {"preset": "Qwen3-8B"} and set(data["training"]["methods"]) == {"sft", "rl", "opd"}
    assert data["hardware"]["gpus"] == [{"name": "H100-SXM", "counts": [8, 16, 32, 64]}, {"name": "B200", "counts": [8, 16]}]
    assert data["constraints"] == {"budget_usd": 60000, "deadline_hours": 336, "min_quality": 62}
    assert "sft_data" in data and data["teacher"]["architecture"] == {"preset": "Qwen3-32B"}
    assert {e["field"] for e in answer["edit"]} >= {"task.general_score_baseline", "sft_data", "teacher.score"}
    solved = run("solve", out, "--json", "--no-sensitivity")
    assert solved.exit_code == 0, solved.output
    assert json.loads(solved.stdout)["metrics"]["quality"] >= 62 - 1e-6


def test_init_from_a_moe_config(tmp_path):
    out = tmp_path / "job.json"
    res = run("init", "--hf-config", HF / "qwen3-30b-a3b-config.json", "--out", out)
    assert res.exit_code == 0, res.output
    student = json.loads(out.read_text())["student"]
    assert student["active_params_b"] < student["params_b"] and "3.353B active" in res.stdout


def test_init_refuses_to_overwrite_without_force(tmp_path):
    out = tmp_path / "job.json"
    out.write_text("mine")
    res = run("init", "--student", "Qwen3-8B", "--out", out)
    assert res.exit_code == 2 and res.stderr.strip().splitlines() == [
        f"error: --out: {out} exists; pass --force to overwrite it"]
    assert out.read_text() == "mine"
    assert run("init", "--student", "Qwen3-8B", "--out", out, "--force").exit_code == 0
    assert json.loads(out.read_text())["student"] == {"preset": "Qwen3-8B"}


@pytest.mark.parametrize("args, says", [
    (["--student", "Qwen3-8B", "--gpus", "A100"], "--gpus: GPU 'A100' is ambiguous: did you mean 'A100-40GB' or 'A100-80GB'?"),
    (["--student", "Qwen3-8B", "--methods", "rl,opdd"], "--methods: unknown method 'opdd': did you mean 'opd'?"),
    (["--student", "Qwen3-8B", "--methods", "opd"], "opd needs a teacher"),
    (["--student", "Qwen3-8"], "--student: unknown model 'Qwen3-8': did you mean 'Qwen3-8B'"),
    ([], "give one of --student PRESET"),
    (["--student", "Qwen3-8B", "--target", "nan"], "--target: expected a finite number"),
    (["--student", "Qwen3-8B", "--methods", "rl", "--teacher", "Qwen3-32B"], "--teacher: a teacher scores OPD's samples only"),
    (["--student", "Qwen3-8B", "--methods", "rl", "--teacher-score", "80"], "--teacher-score: a teacher scores OPD's"),
])
def test_bad_flags_are_one_line_and_leave_no_file(tmp_path, args, says):
    out = tmp_path / "job.json"
    res = run("init", *args, "--out", out)
    assert res.exit_code == 2, res.output
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], lines
    assert list(tmp_path.iterdir()) == []   # no file, no partial file, no staging file


def test_init_from_a_config_of_an_unknown_family_is_one_line(tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"model_type": "gemma3", "hidden_size": 2560}))
    res = run("init", "--hf-config", config, "--out", tmp_path / "job.json")
    assert res.exit_code == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "model_type 'gemma3' is not understood" in lines[0] and "deepseek_v3" in lines[0]
    assert not (tmp_path / "job.json").exists()


def test_catalog_lists_every_model_preset_and_gpu():
    text = run("catalog", "--models", "--gpus")
    assert text.exit_code == 0, text.output
    for name in [*load_models(), *load_gpus()]:
        assert f" {name} " in text.stdout, name
    answer = json.loads(run("catalog", "--models", "--gpus", "--json").stdout)
    assert [m["name"] for m in answer["models"]] == list(load_models())
    assert [g["name"] for g in answer["gpus"]] == list(load_gpus())
    assert all(m["source"] for m in answer["models"]) and all(g["source"] for g in answer["gpus"])
    only = json.loads(run("catalog", "--models", "--json").stdout)
    assert list(only) == ["models"]
    refused = run("catalog", "--models", "--provider", "lambda")
    assert refused.exit_code == 2 and len(refused.stderr.strip().splitlines()) == 1


def broken_job(tmp_path):
    data = json.loads((INSTANCES / "tiny.json").read_text())
    data["task"]["baseline_scor"] = data["task"].pop("baseline_score")
    data["training"]["methods"]["rl"]["stepz_options"] = [100]
    data["hardware"]["gpus"][0]["name"] = "A100"
    data["checkpointing"]["keep_lats"] = 3
    data["student"] = {"hidden_size": 4096, "preset": "Qwen3-1.7B"}
    data["objective"] = "costt"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    return path


EXPECTED = [
    "student.hidden_size: unknown field: did you mean 'hidden'? (a Hugging Face config.json goes whole under 'hf_config')",
    "task.baseline_score: required field is missing",
    "task.baseline_scor: unknown field: did you mean 'baseline_score'?",
    "training.methods.rl.stepz_options: unknown field: did you mean 'steps_options'?",
    "hardware.gpus.0: GPU 'A100' is ambiguous: did you mean 'A100-40GB' or 'A100-80GB'?",
    "checkpointing.keep_lats: unknown field: did you mean 'keep_last'?",
    "objective: Input should be 'cost', 'quality', 'time' or 'forgetting' (got 'costt'): did you mean 'cost'?",
]


def test_validate_lists_every_error_with_did_you_mean(tmp_path):
    path = broken_job(tmp_path)
    res = run("validate", path)
    assert res.exit_code == 2 and res.stdout == ""
    lines = res.stderr.strip().splitlines()
    assert len(lines) == len(EXPECTED), lines
    for line, expected in zip(lines, EXPECTED):
        assert line.startswith(f"error: {path}: {expected}"), (line, expected)
    answer = json.loads(run("validate", path, "--json").stdout)   # one object carrying them all
    assert answer["ok"] is False and answer["error_count"] == len(EXPECTED)
    assert [e.removeprefix(f"{path}: ")[:len(x)] for e, x in zip(answer["errors"], EXPECTED)] == EXPECTED


def test_solve_and_evaluate_keep_one_line_that_counts_the_errors(tmp_path):
    path = broken_job(tmp_path)
    for args in (["solve", path], ["evaluate", path, INSTANCES / "tiny.json"], ["solve", path, "--json"]):
        res = run(*args)
        assert res.exit_code == 2, res.output
        lines = res.stderr.strip().splitlines()
        assert len(lines) == 1, lines
        assert lines[0].startswith(f"error: {path}: {EXPECTED[0]}")
        assert lines[0].endswith(f"({len(EXPECTED)} errors; run `planopt validate {path}` to see all)")


def test_names_resolve_and_shorthands_do_not():
    """Only a catalog name or a listed alias resolves ('H100' is one of H100-SXM's); a shorthand is never completed,
    even when a single name starts with it, and one that starts several is refused naming them."""
    from planopt.models.catalog import CatalogLookupError, find_gpu
    assert find_gpu("H100").name == "H100-SXM" and find_gpu("a100 80gb").name == "A100-80GB"
    with pytest.raises(CatalogLookupError, match=r"^GPU 'A100' is ambiguous: did you mean 'A100-40GB' or 'A100-80GB'\?$"):
        find_gpu("A100")
    with pytest.raises(CatalogLookupError, match=r"^unknown GPU 'MI300': did you mean 'MI300X'"):
        find_gpu("MI300")
