"""Inputs a newcomer gets wrong (issue 13): duplicate GPU types in a job (item 20), sweep values (item 12)."""

import json

import pytest
from typer.testing import CliRunner

from planopt.cli import app
from conftest import INSTANCES

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
                            "list each GPU type once, with all its counts in one entry")


def test_distinct_gpu_types_are_accepted(tmp_path):
    path = job_with_gpus(tmp_path, [{"name": "H100-SXM", "counts": [8]}, {"name": "H200", "counts": [8]}])
    assert runner.invoke(app, ["validate", str(path)]).exit_code == 0


# --- sweep values (item 12) -------------------------------------------------------------------

def test_sweep_parse_accepts_a_list_and_refuses_a_one_value_range_with_two_ends():
    from planopt.errors import InputError
    from planopt.sweep import parse_range
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
