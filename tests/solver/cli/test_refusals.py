"""Issue 28 item 7: every refusal ``solve`` makes of an instance that passes the schema is made by ``validate``
too, with the same line (both run ``solver/job/checks.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from planopt.cli import app

ROOT = Path(__file__).resolve().parents[3]
runner = CliRunner()


def _load(name: str) -> dict:
    return json.loads((ROOT / "instances" / name).read_text())


def three_stages_with_a_confidence() -> dict:
    doc = _load("qwen3-8b-math.json")
    doc["training"]["stage_sequences"] = [["sft", "rl", "opd"], ["rl"]]
    doc["constraints"]["confidence"] = 0.9
    return doc


def model_over_the_memory_cap() -> dict:
    doc = _load("qwen3-8b-math.json")
    doc["training"].update(phases=7, taper_only=False, samples_per_prompt_options=[2, 4, 8, 16])
    return doc


def portfolio_job_over_the_memory_cap() -> dict:
    doc = _load("portfolio-small.json")
    doc["jobs"][1]["instance"]["training"].update(phases=7, taper_only=False, samples_per_prompt_options=[2, 4, 8, 16])
    return doc


def portfolio_job_with_a_retention_block() -> dict:
    doc = _load("portfolio-small.json")
    doc["jobs"][1]["instance"]["retention"] = _load("retention/qwen3-8b-math-long-rollback-detection.json")["retention"]
    return doc


CASES = [three_stages_with_a_confidence, model_over_the_memory_cap, portfolio_job_over_the_memory_cap,
         portfolio_job_with_a_retention_block]


@pytest.mark.parametrize("make", CASES, ids=lambda f: f.__name__)
def test_validate_refuses_what_solve_refuses_with_the_same_line(tmp_path, make):
    path = tmp_path / "instance.json"
    path.write_text(json.dumps(make()))
    solved = runner.invoke(app, ["solve", str(path), "--no-sensitivity", "--time-limit", "20"])
    checked = runner.invoke(app, ["validate", str(path)])
    assert solved.exit_code == 2, solved.output
    assert checked.exit_code == 2, checked.output
    assert solved.stderr.count("\n") == 1 and solved.stderr.startswith("error: ")
    assert checked.stderr == solved.stderr
