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
