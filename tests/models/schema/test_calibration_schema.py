"""Issue 13: calibration cases are read with a pydantic model (``models/schema/calibration_case.py``), strict like
instances, with one-line errors naming the file and field, and a published schema (`planopt schema --kind
calibration`)."""

from __future__ import annotations

import copy
import json

import pytest
from typer.testing import CliRunner

from planopt.uncertainty.calibrate import load_case, parse_case
from planopt.cli import app
from planopt.errors import InputError
from planopt.models.schema.calibration_case import KIND_MODELS, KINDS
from tests.support.common import INSTANCES

CASES = sorted((INSTANCES / "calibration").glob("*.json")) + sorted((INSTANCES / "calibration-validation").glob("*.json"))
STEP = json.loads((INSTANCES / "calibration" / "nemo-rl-llama31-8b-16xh100.json").read_text())
RATIO = json.loads((INSTANCES / "calibration" / "qwen3-table21-rl-vs-opd.json").read_text())
runner = CliRunner()


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_every_shipped_case_reads_as_its_kind(path):
    case = load_case(path)
    assert type(case.spec) is KIND_MODELS[case.data["predict"]]
    assert case.spec.id == case.data["id"]


def test_every_kind_is_shipped():
    assert {json.loads(p.read_text())["predict"] for p in CASES} == set(KINDS)


BAD = [
    (STEP, lambda c: c.update(gpu_count=True), "gpu_count", "whole number"),
    (STEP, lambda c: c.update(gpu_count="16"), "gpu_count", "whole number"),
    (STEP, lambda c: c.update(gpu_count=16.5), "gpu_count", "whole number"),
    (STEP, lambda c: c["workload"].update(prompt_tokens="127"), "workload.prompt_tokens", "valid number"),
    (STEP, lambda c: c["workload"].update(response_tokens=float("nan")), "workload.response_tokens", "finite"),
    (STEP, lambda c: c["gpu"].update(bf16_tflops=float("inf")), "gpu.bf16_tflops", "finite"),
    (STEP, lambda c: c["workload"].update(activation_recompute="yes"), "workload.activation_recompute", "boolean"),
    (STEP, lambda c: c.update(tolerance=0.5), "tolerance", "greater than or equal to 1"),
    (STEP, lambda c: c.update(method="sft"), "method", "on-policy"),
    (STEP, lambda c: c.update(teacher_precision="fp4"), "teacher_precision", "'bf16'"),
    (STEP, lambda c: c["published"].clear(), "published.step_seconds", "missing"),
    (STEP, lambda c: c.pop("workload"), "workload", "missing"),
    (RATIO, lambda c: c["arms"].pop(), "arms", "at least 2"),
    (RATIO, lambda c: c.pop("teacher"), "teacher", "opd"),
]


@pytest.mark.parametrize("base,mutate,field,expected", BAD, ids=[f"{b[2]}-{n}" for n, b in enumerate(BAD)])
def test_bad_cases_name_the_file_and_field(tmp_path, base, mutate, field, expected):
    case = copy.deepcopy(base)
    mutate(case)
    path = tmp_path / "broken.json"
    with pytest.raises(InputError) as exc:
        parse_case(path, case)
    message = str(exc.value)
    assert message.startswith(f"{path}: {field}: ") and expected in message and "\n" not in message


def test_whole_floats_are_accepted_and_undefined_fields_refused(tmp_path):
    case = copy.deepcopy(STEP)
    case["gpu_count"] = 16.0
    case["student"]["layers"] = 32.0
    spec = parse_case(tmp_path / "c.json", case)
    assert spec.gpu_count == 16 and isinstance(spec.gpu_count, int) and spec.student.layers == 32
    # FORMAT.md: a field it does not define makes the case an error (citations go in `source` and `notes`)
    case["url"] = "https://example.org/run"
    with pytest.raises(InputError, match=r"c\.json: url: not a field FORMAT\.md defines"):
        parse_case(tmp_path / "c.json", case)


def test_cli_calibrate_makes_a_strictly_bad_case_an_error_row(tmp_path):
    case = copy.deepcopy(STEP)
    case["gpu_count"] = True
    (tmp_path / "broken.json").write_text(json.dumps(case))
    res = runner.invoke(app, ["calibrate", str(tmp_path), "--no-intervals"])
    assert res.exit_code == 1 and not res.stderr.strip()
    lines = [x for x in res.stdout.splitlines() if "not read:" in x]
    assert lines == [f"{STEP['id']} step_seconds: not read: gpu_count: expected a whole number, got True"]


def test_schema_kind_calibration_prints_every_kind():
    res = runner.invoke(app, ["schema", "--kind", "calibration"])
    assert res.exit_code == 0
    schema = json.loads(res.stdout)
    assert schema["discriminator"]["propertyName"] == "predict"
    assert set(schema["discriminator"]["mapping"]) == set(KINDS)
    step = schema["$defs"]["StepSecondsCase"]
    assert {"gpu", "gpu_count", "workload", "student", "published", "tolerance"} <= set(step["required"])


def test_schema_kind_unknown_is_refused():
    res = runner.invoke(app, ["schema", "--kind", "vibes"])
    assert res.exit_code == 2 and "calibration" in res.stderr
