"""``planopt track``: the verdict line first, strict JSON, the plot written whole, and each bad input one line
naming it with exit 2 (no traceback, no plot left behind)."""

import json

import pytest
from typer.testing import CliRunner

from planopt.cli import app

from tests.support.common import INSTANCES

RUN = INSTANCES / "runs" / "qwen3-8b-math-slow"
BASE = [str(RUN / "instance.json"), str(RUN / "plan.json")]
MAPPING = ["--mapping", str(RUN / "mapping.json")]
FAST = ["--scenarios", "100"]


def invoke(*args):
    return CliRunner().invoke(app, ["track", *map(str, args)])


def refused(*args, json_out=False) -> str:
    res = invoke(*args, *(["--json"] if json_out else []))
    assert res.exit_code == 2, (res.exit_code, res.stdout, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), res.stderr
    assert "Traceback" not in res.stderr + res.stdout
    if json_out:   # stdout still holds exactly one strict JSON object: the error
        assert strict(res.stdout) == {"status": "error", "error": lines[0].removeprefix("error: ")}
    return lines[0]


def strict(text: str) -> dict:
    def no_constant(name):
        raise ValueError(f"not strict JSON: {name}")
    obj = json.loads(text, parse_constant=no_constant)
    assert isinstance(obj, dict)
    return obj


def test_the_json_is_one_strict_object(tmp_path):
    out = invoke(*BASE, RUN / "tensorboard", *MAPPING, *FAST, "--json")
    assert out.exit_code == 0, out.stderr
    obj = strict(out.stdout)
    assert obj["headline"] == f"{obj['verdict']}: {obj['limit']}"
    assert obj["verdict"] in ("at risk", "off track")
    assert obj["state"]["last_step"] == 80 and obj["scenarios"] == 100
    assert {c["name"] for c in obj["checks"]} == {"spend", "elapsed", "step_seconds", "task_score", "forgetting"}


def test_the_text_starts_with_the_verdict_and_the_plot_is_written_and_nothing_else(tmp_path):
    plot = tmp_path / "track.png"
    res = invoke(*BASE, RUN / "wandb.csv", *MAPPING, *FAST, "--plot", plot)
    assert res.exit_code == 0, res.stderr
    first = res.stdout.splitlines()[0]
    assert first in ("on track", "at risk: min_quality", "off track: min_quality"), first
    assert "every limit" in res.stdout and "budget line" in res.stdout
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p.name for p in tmp_path.iterdir()] == ["track.png"]


def test_a_log_without_the_named_series_names_it_and_lists_the_series(tmp_path):
    line = refused(*BASE, RUN / "tensorboard")                      # no mapping: the default names are not logged
    assert "'step_seconds'" in line and "train/step_time_s" in line and "--mapping" in line


def test_a_mapping_naming_an_unknown_series_says_what_the_log_has(tmp_path):
    mapping = tmp_path / "m.json"
    mapping.write_text(json.dumps({**json.loads((RUN / "mapping.json").read_text()), "step_seconds": "train/step_time"}))
    line = refused(*BASE, RUN / "wandb.csv", "--mapping", mapping)
    assert "mapping step_seconds" in line and "did you mean 'train/step_time_s'" in line and "eval/math500" in line


def test_a_mapping_with_an_unknown_key_is_refused_with_the_closest(tmp_path):
    mapping = tmp_path / "m.json"
    mapping.write_text(json.dumps({"task_scor": "eval/math500"}))
    assert "did you mean 'task_score'" in refused(*BASE, RUN / "wandb.csv", "--mapping", mapping)


def test_steps_that_go_backwards_are_refused(tmp_path):
    lines = (RUN / "wandb.csv").read_text().splitlines()
    back = tmp_path / "back.csv"
    back.write_text("\n".join(lines[:31] + lines[21:]) + "\n")      # a restart from step 20 logs 21.. again
    line = refused(*BASE, back, *MAPPING, json_out=True)
    assert "steps go backwards" in line and "step 21 logged after step 30" in line


def test_a_run_longer_than_its_plan_is_refused(tmp_path):
    long = tmp_path / "long.csv"
    long.write_text("_step,_runtime,step_seconds,task_score\n1,300,300,55\n401,120300,300,60\n")
    line = refused(*BASE, long, json_out=True)
    assert "step 401" in line and "400 steps" in line


def test_a_plan_of_another_instance_is_refused_as_evaluate_refuses_it(tmp_path):
    plan = json.loads((RUN / "plan.json").read_text())
    plan["plan"]["stages"][0]["gpu_count"] = 48                    # not one of MI300X's counts
    other = tmp_path / "plan.json"
    other.write_text(json.dumps(plan))
    line = refused(RUN / "instance.json", other, RUN / "wandb.csv", *MAPPING)
    assert str(other) in line and "gpu_count" in line


def test_a_run_on_other_gpus_than_the_plan_is_refused(tmp_path):
    text = (RUN / "wandb.csv").read_text().replace(",32,", ",16,")
    csv = tmp_path / "run.csv"
    csv.write_text(text)
    assert "the run logged 16 GPUs" in refused(*BASE, csv, *MAPPING)


@pytest.mark.parametrize("content, expected", [
    ("", "not a CSV file the W&B reader takes"),
    ("a,b\n1,2\n", "missing column(s) _step, _runtime"),
    ("_step,_runtime,step_seconds,task_score\n1,300,fast,55\n", "column step_seconds: expected a number"),
    ("_step,_runtime,step_seconds,task_score\n1,300,300,155\n", "is not a score in [0, task.score_ceiling"),
])
def test_a_bad_csv_is_one_line(tmp_path, content, expected):
    csv = tmp_path / "run.csv"
    csv.write_text(content)
    assert expected in refused(*BASE, csv)


def test_a_bad_plot_path_and_options_are_refused_before_any_work(tmp_path):
    assert "--plot" in refused(*BASE, RUN / "wandb.csv", *MAPPING, "--plot", tmp_path / "x.gif")
    assert "--scenarios" in refused(*BASE, RUN / "wandb.csv", *MAPPING, "--scenarios", "0")
    assert "--seed" in refused(*BASE, RUN / "wandb.csv", *MAPPING, "--seed", "-1")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "no TensorBoard event file" in refused(*BASE, empty)
    assert "not found" in refused(*BASE, tmp_path / "missing")


def test_a_job_of_several_releases_is_tracked_with_the_other_releases_committed(tmp_path):
    """A run in flight is one release of a job with releases (it was refused): ``--json`` is one strict object
    whose committed money is above the single run's."""
    doc = json.loads((RUN / "instance.json").read_text())
    doc["releases"] = {"count": 12}
    inst = tmp_path / "instance.json"
    inst.write_text(json.dumps(doc))
    many = invoke(inst, RUN / "plan.json", RUN / "wandb.csv", *MAPPING, *FAST, "--json")
    once = invoke(*BASE, RUN / "wandb.csv", *MAPPING, *FAST, "--json")
    assert many.exit_code == 0 and once.exit_code == 0, many.output
    assert strict(many.stdout)["committed_usd"] > strict(once.stdout)["committed_usd"]
