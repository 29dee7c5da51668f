"""The CLI on staged instances (``training.stage_sequences``): solve, evaluate, enumerate and validate
agree with each other and with the staged oracle; bad sequences and chance constraints get one line
and exit 2."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from planopt.cli import app
from planopt.instance import parse_instance
from planopt.oracles.by_plan import space_size

from tests.support.common import INSTANCES
from tests.support.oracle_checks import close
from tests.support.staged_instances import staged_instance_dict

runner = CliRunner()

# a small staged job (360 plans: sft→opd, sft→rl→opd, sft→rl and rl alone), with limits from its own plans
SEED = 3


def run(*args):
    res = runner.invoke(app, [str(a) for a in args])
    return res.exit_code, res.stdout, res.stderr


def write(tmp_path, data, name="staged.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    data = staged_instance_dict(SEED)
    assert len(data["training"]["stage_sequences"]) > 1
    return write(tmp_path_factory.mktemp("staged"), data), data


def agentic_rl(sequences):
    data = json.loads((INSTANCES / "qwen3-32b-agentic-rl.json").read_text())
    data["training"]["stage_sequences"] = sequences
    return data


def test_solve_json_prints_one_object_with_stages_and_evaluate_gives_the_same_metrics(small, tmp_path):
    path, data = small
    code, out, err = run("solve", path, "--json")
    assert code == 0, (out, err)
    result = json.loads(out)   # the whole of stdout is one JSON object
    assert result["status"] == "optimal"
    plan = result["plan"]
    assert set(plan) == {"student", "stages", "checkpoint_interval_minutes", "retention"}
    assert 1 <= len(plan["stages"]) <= 3
    assert tuple(s["method"] for s in plan["stages"]) in parse_instance(data).training.sequences()
    assert result["metrics"]["cost_usd"] == pytest.approx(sum(result["cost_breakdown_usd"].values()), rel=1e-9)
    assert result["metrics"]["wall_hours"] == pytest.approx(sum(result["hours_breakdown"].values()), rel=1e-9)
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps(plan))
    whole_file = tmp_path / "whole.json"
    whole_file.write_text(out)
    for given in (plan_file, whole_file):
        code, ev_out, err = run("evaluate", path, given, "--json")
        assert code == 0, (ev_out, err)
        evaluated = json.loads(ev_out)
        assert evaluated["plan"] == plan
        assert evaluated["feasible"] is True and evaluated["violations"] == []
        for key, value in result["metrics"].items():
            assert evaluated["metrics"][key] == pytest.approx(value, rel=1e-9), key
        for key, value in result["cost_breakdown_usd"].items():
            assert evaluated["cost_breakdown_usd"][key] == pytest.approx(value, rel=1e-9, abs=1e-9), key


def test_solve_text_shows_the_stages(small):
    path, _ = small
    code, out, err = run("solve", path)
    assert code == 0, (out, err)
    for heading in ("Plan", "Results", "Cost breakdown", "Time breakdown"):
        assert heading in out
    assert "stage 1" in out


def test_enumerate_gives_the_same_optimum_as_solve(small):
    path, data = small
    inst = parse_instance(data)
    solved = json.loads(run("solve", path, "--json", "--no-sensitivity")[1])
    code, out, err = run("enumerate", path, "--json")
    assert code == 0, (out, err)
    enum = json.loads(out)
    assert enum["status"] == solved["status"] == "optimal"
    objective = inst.objective
    key = {"cost": "cost_usd", "quality": "quality", "time": "wall_hours", "forgetting": "forgetting_points"}[objective]
    assert close(enum["metrics"][key], solved["metrics"][key])
    assert close(enum["metrics"]["cost_usd"], solved["metrics"]["cost_usd"])
    assert len(enum["plan"]["stages"]) >= 1
    code, out, err = run("enumerate", path, "--all", "--json")
    assert code == 0, err
    listing = json.loads(out)["plans"]
    assert len(listing) == space_size(inst)
    assert {len(p["plan"]["stages"]) for p in listing} == {len(s) for s in inst.training.sequences()}


def test_enumerate_and_solve_agree_on_an_infeasible_override(small):
    path, _ = small
    solved = run("solve", path, "--json", "--min-quality", "100")
    enum = run("enumerate", path, "--json", "--min-quality", "100")
    assert solved[0] == enum[0] == 3, (solved, enum)
    assert json.loads(solved[1])["status"] == json.loads(enum[1])["status"] == "infeasible"


def test_validate_a_staged_instance(small):
    path, _ = small
    code, out, err = run("validate", path)
    assert code == 0, (out, err)
    assert "valid" in out


def test_a_shipped_instance_with_stage_sequences_solves(tmp_path):
    path = write(tmp_path, agentic_rl([["sft", "rl"], ["rl"]]))
    code, out, err = run("solve", path, "--json", "--no-sensitivity")
    assert code == 0, (out, err)
    result = json.loads(out)
    assert result["status"] == "optimal" and result["plan"]["stages"]
    code, out, err = run("validate", path)
    assert code == 0 and "valid" in out, (out, err)


BAD_SEQUENCES = [
    ("wrong order", [["rl", "sft"]], "training.stage_sequences"),
    ("empty list", [], "training.stage_sequences"),
    ("four stages", [["sft", "rl", "opd", "opd"]], "training.stage_sequences"),
    ("repeated method", [["sft", "sft"]], "training.stage_sequences"),
    ("method not offered", [["sft", "opd"]], "training.stage_sequences.0"),
    ("not a list", "sft,rl", "training.stage_sequences"),
]


@pytest.mark.parametrize("command", ["solve", "validate"])
@pytest.mark.parametrize("sequences, field", [pytest.param(s, f, id=name) for name, s, f in BAD_SEQUENCES])
def test_bad_stage_sequences_exit_2_with_one_line(tmp_path, command, sequences, field):
    path = write(tmp_path, agentic_rl(sequences))   # methods: sft and rl (no opd, no teacher)
    code, out, err = run(command, path)
    assert code == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert field in lines[0] and "Traceback" not in err, err
    if "opd" in json.dumps(sequences) and field.endswith(".0"):
        assert "'opd'" in lines[0]


def test_bad_stage_sequences_under_json_print_one_error_object(tmp_path):
    path = write(tmp_path, agentic_rl([["rl", "sft"]]))
    code, out, err = run("solve", path, "--json")
    assert code == 2
    assert json.loads(out)["status"] == "error" and "training.stage_sequences" in json.loads(out)["error"]


@pytest.mark.parametrize("where", ["flag", "instance"])
def test_a_chance_constrained_staged_plan_is_refused_with_one_line(small, tmp_path, where):
    path, data = small
    if where == "instance":
        data = json.loads(json.dumps(data))
        data.setdefault("constraints", {})["confidence"] = 0.9
        path, args = write(tmp_path, data, "confident.json"), ()
    else:
        args = ("--confidence", "0.9")
    code, out, err = run("solve", path, *args)
    assert code == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert "confidence" in lines[0]


def test_evaluate_names_the_field_of_a_bad_staged_plan(small, tmp_path):
    path, _ = small
    result = json.loads(run("solve", path, "--json", "--no-sensitivity")[1])
    plan = result["plan"]
    plan["stages"][0]["gpu"] = "B300-NOT-A-GPU"
    bad = tmp_path / "bad-plan.json"
    bad.write_text(json.dumps(plan))
    code, out, err = run("evaluate", path, bad)
    assert code == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "plan.stages.0.gpu" in lines[0], err


def test_a_staged_instance_whose_second_stage_fits_nowhere_exits_3(tmp_path):
    from tests.support.staged_instances import shrunk_staged_job_dict
    data = shrunk_staged_job_dict(35)   # sft→opd only, on 1 or 2 L4s: no OPD recipe fits with its teacher
    assert data["training"]["stage_sequences"] == [["sft", "opd"]]
    path = write(tmp_path, data)
    assert run("enumerate", path, "--json")[0] == 3
    code, out, err = run("solve", path, "--json")
    assert code == 3, (out, err)
    assert json.loads(out)["status"] == "infeasible"


def test_evaluate_refuses_a_one_stage_plan_of_a_sequence_not_allowed(tmp_path):
    data = agentic_rl([["sft", "rl"]])
    data["constraints"] = {}
    path = write(tmp_path, data)
    solved = json.loads(run("solve", path, "--json", "--no-sensitivity")[1])
    assert [s["method"] for s in solved["plan"]["stages"]] == ["sft", "rl"]
    rl = dict(solved["plan"]["stages"][1])
    for key in ("rollout", "staleness_steps"):
        rl.pop(key)
    rl["checkpoint_interval_minutes"] = solved["plan"]["checkpoint_interval_minutes"]   # the one-stage shape
    plan_file = tmp_path / "rl-alone.json"
    plan_file.write_text(json.dumps(rl))
    code, out, err = run("evaluate", path, plan_file)
    assert code == 2, out
    assert len(err.strip().splitlines()) == 1 and "plan" in err


def _methods(plan: dict) -> tuple[str, ...]:
    """A plan's stage methods, in the staged shape or the one-stage one."""
    return tuple(s["method"] for s in plan["stages"]) if "stages" in plan else (plan["method"],)




def test_frontier_of_a_staged_instance_lists_staged_plans(small):
    path, data = small
    code, out, err = run("frontier", path, "--x", "cost_usd", "--y", "quality", "--json")
    assert code == 0, (out, err)
    points = json.loads(out)["points"]
    allowed = parse_instance(data).training.sequences()
    assert len(points) > 1
    assert all(_methods(p["plan"]) in allowed for p in points)
    solved = json.loads(run("solve", path, "--json", "--no-sensitivity")[1])
    assert close(min(p["cost_usd"] for p in points), solved["metrics"]["cost_usd"])




def test_the_probability_frontier_of_a_staged_instance_is_refused_or_follows_its_sequences(small):
    path, data = small
    code, out, err = run("frontier", path, "--x", "cost_usd", "--y", "probability", "--scenarios", "50", "--json")
    if code == 2:
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
        return
    assert code == 0, (out, err)
    allowed = parse_instance(data).training.sequences()
    methods = [_methods(p["plan"]) for p in json.loads(out)["points"]]
    assert methods and all(m in allowed for m in methods), (methods, allowed)




def test_evaluate_reports_a_staged_plan_that_does_not_fit_in_memory(tmp_path):
    from planopt.api import evaluate_plan
    from tests.support.staged_instances import shrunk_staged_job_dict
    data = shrunk_staged_job_dict(0)   # Qwen3-30B-A3B on TPU-v5p; sequences sft→opd, rl→opd, sft
    path = write(tmp_path, data)
    stage = {"samples_per_prompt": [], "teacher_precision": None, "external_data_share": None, "max_epochs": None,
             "adapter": "full", "lora_rank": None, "gpu": "TPU-v5p", "gpu_count": 1, "rollout": None, "staleness_steps": 0}
    plan = {"student": "Qwen3-30B-A3B", "checkpoint_interval_minutes": 60.0, "retention": None,
            "stages": [dict(stage, method="sft", steps=50, external_data_share=1.0, max_epochs=1),
                       dict(stage, method="opd", steps=200, samples_per_prompt=[2, 2], teacher_precision="bf16")]}
    metrics = evaluate_plan(path, plan)   # the evaluator: a valid plan that does not fit
    assert not metrics.fits_memory and "stage 2" in metrics.violations[0]
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps(plan))
    code, out, err = run("evaluate", path, plan_file, "--json")
    assert code == 3, (out, err)   # a plan that cannot run is infeasible
    result = json.loads(out)
    assert result["fits_memory"] is False and result["metrics"] is None
    assert "stage 2" in result["violations"][0]
