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


def portfolio_job_with_releases() -> dict:
    doc = _load("portfolio-small.json")
    doc["jobs"][1]["instance"]["releases"] = {"count": 12}
    return doc


CASES = [three_stages_with_a_confidence, model_over_the_memory_cap, portfolio_job_over_the_memory_cap,
         portfolio_job_with_releases]


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


def test_generate_portfolio_refuses_an_infinite_bucket_length_in_one_line(tmp_path):
    """Item 11: ``--bucket-hours inf`` was pydantic's four lines."""
    for value in ("inf", "1e308"):
        res = runner.invoke(app, ["generate", "portfolio", "--bucket-hours", value, "--out", str(tmp_path / "p.json")])
        assert res.exit_code == 2
        assert res.stderr.count("\n") == 1 and res.stderr.startswith("error: --bucket-hours: ")


def test_the_resource_tracker_of_a_local_cluster_starts_without_its_leak_warning(monkeypatch):
    """Item 11: after Ctrl-C in a Dask sweep (``os._exit``) the tracker printed "There appear to be 14 leaked
    semaphore objects"; it inherits ``sys.warnoptions``, which now filter that warning out."""
    import sys
    import warnings

    from planopt.studies.distributed import RESOURCE_TRACKER_FILTER, quiet_resource_tracker
    monkeypatch.setattr(sys, "warnoptions", [])
    quiet_resource_tracker()
    quiet_resource_tracker()
    assert sys.warnoptions == [RESOURCE_TRACKER_FILTER]
    action, message, category = RESOURCE_TRACKER_FILTER.split(":")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        warnings.filterwarnings(action, message, {"UserWarning": UserWarning}[category])
        warnings.warn("resource_tracker: There appear to be 14 leaked semaphore objects to clean up at shutdown")
    assert not seen


def test_a_union_field_is_named_once_with_both_expectations(tmp_path):
    """A NaN where a count or a list of counts goes was two lines naming pydantic's branches
    (``on_demand_available_gpus.constrained-int``, ``...list[constrained-int]``); the fuzzer found it."""
    doc = _load("portfolio-providers.json")
    doc["gpus"][0]["on_demand_available_gpus"] = float("nan")
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc))
    res = runner.invoke(app, ["validate", str(path)])
    assert res.exit_code == 2
    assert res.stderr == (f"error: {path}: gpus.0.on_demand_available_gpus: Input should be a valid integer or a "
                          "valid list (got nan)\n")


def test_many_candidate_students_are_refused_at_once_naming_the_field(tmp_path):
    """Item 9: 30 candidate students of six phases without taper are over the memory cap, refused before any work."""
    doc = _load("math-8b-or-32b.json")
    doc["training"].update(phases=6, taper_only=False)
    doc["candidate_students"] = [{"name": f"s{i}", "architecture": {"preset": "Qwen3-4B"}, "baseline_score": 60.0,
                                  "general_score_baseline": 88.0} for i in range(30)]
    path = tmp_path / "students.json"
    path.write_text(json.dumps(doc))
    from planopt.instance import parse_instance
    from planopt.job.plan_space import plan_space
    space = plan_space(parse_instance(doc))
    # the option whose cut to one value shrinks the model most, counted over every student's block: here the
    # sampling schedules (729 per phase set), which every one of the 31 students offers
    assert space.dominant == "training.samples_per_prompt_options"
    assert space.model_mib_without["training.samples_per_prompt_options"] < space.model_mib_without["candidate_students"]
    for args in (["solve", str(path)], ["validate", str(path)]):
        res = runner.invoke(app, args)
        assert res.exit_code == 2
        assert res.stderr.startswith(f"error: {space.dominant}: ") and res.stderr.count("\n") == 1
        assert "for each of 31 students" in res.stderr and "one value would bring it to about" in res.stderr
