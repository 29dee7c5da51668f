"""Inputs a newcomer gets wrong (issue 13): duplicate GPU types in a job (item 20), sweep values (item 12)."""

import json

import pytest
from typer.testing import CliRunner

from planopt.cli import app
from tests.support.common import INSTANCES

runner = CliRunner()


def job_with_gpus(tmp_path, gpus):
    data = json.loads((INSTANCES / "tiny.json").read_text())
    data["hardware"]["gpus"] = gpus
    path = tmp_path / "job.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("second", [
    {"name": "H100-SXM", "counts": [8], "price_usd_per_gpu_hour": 0.5},   # a cheaper copy, first or last
    {"name": "H100", "counts": [4]},                                      # a catalog alias of the same GPU
])
@pytest.mark.parametrize("first_is_copy", [False, True])
def test_duplicate_gpu_types_in_a_job_are_refused(tmp_path, second, first_is_copy):
    original = {"name": "H100-SXM", "counts": [4, 8]}
    gpus = [second, original] if first_is_copy else [original, second]
    path = job_with_gpus(tmp_path, [{"name": "L4", "counts": [1]}, *gpus])
    for command in ("solve", "validate", "enumerate"):
        res = runner.invoke(app, [command, str(path)])
        assert res.exit_code == 2, res.output
        lines = res.stderr.strip().splitlines()
        assert len(lines) == 1
        assert lines[0] == (f"error: {path}: hardware.gpus: entries 1 and 2 are both 'H100-SXM'; "
                            "list each GPU type once, with all its counts in one entry "
                            "(or tell two offers apart with 'offer')")


def test_distinct_gpu_types_are_accepted(tmp_path):
    path = job_with_gpus(tmp_path, [{"name": "H100-SXM", "counts": [8]}, {"name": "H200", "counts": [8]}])
    assert runner.invoke(app, ["validate", str(path)]).exit_code == 0


# --- sweep values (item 12) -------------------------------------------------------------------

def test_sweep_parse_accepts_a_list_and_refuses_a_one_value_range_with_two_ends():
    from planopt.errors import InputError
    from planopt.studies.sweep import parse_range
    assert parse_range("500,700,900", "--budget-usd") == [500.0, 700.0, 900.0]
    assert parse_range("750", "--budget-usd") == [750.0]
    assert parse_range("0:10:3", "--budget-usd") == [0.0, 5.0, 10.0]
    with pytest.raises(InputError, match=r"--budget-usd: LO:HI:1 is one value but LO and HI differ"):
        parse_range("500:900:1", "--budget-usd")
    for bad in ("500,,900", "500,nan", "a,b"):
        with pytest.raises(InputError, match="--budget-usd"):
            parse_range(bad, "--budget-usd")


def test_cli_sweep_over_a_list_solves_each_value(tmp_path):
    res = runner.invoke(app, ["sweep", str(INSTANCES / "tiny.json"), "--budget-usd", "500,700,900", "--json"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)["rows"]
    assert [r["budget_usd"] for r in rows] == [500.0, 700.0, 900.0]
    assert [r["status"] for r in rows] == ["infeasible", "infeasible", "optimal"]  # the optimum costs $736.78


def test_cli_sweep_refuses_lo_hi_1(tmp_path):
    res = runner.invoke(app, ["sweep", str(INSTANCES / "tiny.json"), "--budget-usd", "500:900:1"])
    assert res.exit_code == 2
    assert res.stderr.strip().splitlines() == [
        "error: --budget-usd: LO:HI:1 is one value but LO and HI differ; give N of at least 2 "
        "(both ends included) or the single value alone, got '500:900:1'"]


# --- absurd limits in an instance file or a sweep (item 18) ------------------------------------

@pytest.mark.parametrize("field, value", [("min_quality", 1e25), ("budget_usd", 1e308), ("deadline_hours", float("inf")),
                                          ("max_forgetting_points", float("nan"))])
def test_absurd_limits_in_an_instance_are_one_line_exit_2(tmp_path, field, value):
    data = json.loads((INSTANCES / "tiny.json").read_text())
    data["constraints"][field] = value
    path = tmp_path / "job.json"
    path.write_text(json.dumps(data))  # Python writes inf and nan as Infinity and NaN, which json.loads reads back
    res = runner.invoke(app, ["solve", str(path), "--json"])
    assert res.exit_code == 2, res.output
    assert res.stderr.strip().splitlines() == [f"error: {json.loads(res.stdout)['error']}"]
    assert res.stderr.startswith(f"error: {path}: constraints.{field}: ")  # the schema or the range check


@pytest.mark.parametrize("flag, values", [("--min-quality", "1e308"), ("--min-quality", "10,1e25"),
                                          ("--budget-usd", "0:1e308:3"), ("--deadline-hours", "5,1e7")])
def test_absurd_sweep_values_are_one_line_exit_2(flag, values):
    """--min-quality 1e25 ended in an internal error (StopIteration) after the solve."""
    res = runner.invoke(app, ["sweep", str(INSTANCES / "tiny.json"), flag, values])
    assert res.exit_code == 2, res.output
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: sweep: ") and "expected a finite number from" in lines[0]
