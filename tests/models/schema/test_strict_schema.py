"""Issue 13 item 19: the job and portfolio schemas are strict.

A boolean is not a number, a numeric string is not a number, an integer field
takes no 8.0, and Infinity / NaN (which Python's json module reads) are refused,
each with one line naming the field.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from planopt.cli import app

from planopt.errors import InputError
from planopt.instance import load_instance
from planopt.portfolio.solve import load_portfolio

ROOT = Path(__file__).resolve().parents[3]
TINY = json.loads((ROOT / "instances" / "tiny.json").read_text())
PORTFOLIO = ROOT / "instances" / "portfolio-small.json"


def _set(data: dict, path: str, value):
    *parents, last = path.split(".")
    node = data
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node.setdefault(key, {})
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return data


JOB_CASES = [
    ("constraints.min_quality", True, "constraints.min_quality"),
    ("constraints.budget_usd", False, "constraints.budget_usd"),
    ("task.prompt_tokens", "8", "task.prompt_tokens"),
    ("training.phases", "3", "training.phases"),
    ("operations.fixed_usd", float("inf"), "operations.fixed_usd"),
    ("constraints.budget_usd", float("nan"), "constraints.budget_usd"),
    ("operations.usd_per_wall_hour", float("-inf"), "operations.usd_per_wall_hour"),
    ("hardware.gpus.0.counts", [8.0], "hardware.gpus.0.counts.0"),
    ("hardware.gpus.0.counts", [1e40], "hardware.gpus.0.counts.0"),
    ("hardware.gpus.0.counts", [True], "hardware.gpus.0.counts.0"),
    ("checkpointing.interval_minutes_options", ["30"], "checkpointing.interval_minutes_options.0"),
    ("name", 7, "name"),
    ("training.taper_only", 1, "training.taper_only"),
    ("uncertainty", {"efficiency.mfu_factor": True}, "efficiency.mfu_factor"),
]


@pytest.mark.parametrize("path,value,field", JOB_CASES, ids=[f"{c[0]}={c[1]!r}" for c in JOB_CASES])
def test_job_schema_refuses_coercion_and_non_finite(path, value, field):
    data = _set(copy.deepcopy(TINY), path, value)
    with pytest.raises(InputError) as exc:
        load_instance(data)
    message = str(exc.value)
    assert field in message and "\n" not in message


def test_integers_and_floats_still_accepted_where_numbers_are_expected():
    data = _set(copy.deepcopy(TINY), "operations.fixed_usd", 500)      # an int where a float is expected
    data = _set(data, "constraints.budget_usd", 1e4)
    inst = load_instance(data)
    assert inst.operations.fixed_usd == 500.0 and isinstance(inst.operations.fixed_usd, float)


def test_json_infinity_in_a_file_is_refused_by_validate(tmp_path):
    text = (ROOT / "instances" / "tiny.json").read_text()
    data = json.loads(text)
    data["operations"]["fixed_usd"] = 12345.5
    bad = tmp_path / "inf.json"
    bad.write_text(json.dumps(data).replace("12345.5", "Infinity"))
    run = CliRunner().invoke(app, ["validate", str(bad)])
    assert run.exit_code == 2, run.output
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "operations.fixed_usd" in lines[0]
    assert "finite" in lines[0] and "Traceback" not in run.output


PORTFOLIO_CASES = [
    ("horizon.buckets", True, "horizon.buckets"),
    ("horizon.bucket_hours", "168", "horizon.bucket_hours"),
    ("budget_usd", float("inf"), "budget_usd"),
    ("gpus.0.spot_preemptions_per_gpu_hour", float("nan"), "gpus.0.spot_preemptions_per_gpu_hour"),
    ("jobs.0.deadline_bucket", 3.0, "jobs.0.deadline_bucket"),
]


@pytest.mark.parametrize("path,value,field", PORTFOLIO_CASES, ids=[f"{c[0]}={c[1]!r}" for c in PORTFOLIO_CASES])
def test_portfolio_schema_is_strict(tmp_path, path, value, field):
    data = json.loads(PORTFOLIO.read_text())
    for job in data["jobs"]:  # jobs given by path resolve against the portfolio's folder
        if isinstance(job.get("instance"), str):
            job["instance"] = str((PORTFOLIO.parent / job["instance"]).resolve())
    bad = tmp_path / "p.json"
    bad.write_text(json.dumps(_set(data, path, value)))
    with pytest.raises(InputError) as exc:
        load_portfolio(bad)
    assert field in str(exc.value) and "\n" not in str(exc.value)


# Issue 13 item 18: every number has a sane range, stated in the error (these values once reached the
# solver: 1e308 overflowed costs to inf, 5e-324 and 1e-300 divided to inf, 2**63 steps ended in StopIteration).
RANGE_CASES = [
    ("operations.fixed_usd", 1e308, "less than or equal to 1000000000000"),
    ("storage.log_retention_months", 1e40, "less than or equal to 1000000000000"),
    ("training.methods.opd.steps_options", [2**63], "less than or equal to 10000000"),
    ("hardware.gpus.0.counts", [10**8], "less than or equal to 10000000"),
    ("teacher.score", 1e308, "less than or equal to 1000000"),
    ("efficiency.mfu_train", 1e-300, "greater than or equal to 0.000000001"),
    ("checkpointing.interval_minutes_options", [5e-324], "greater than or equal to 0.000000001"),
    ("task.response_tokens", 1e-300, "greater than or equal to 0.000000001"),
    ("student", {"params_b": 1e9, "layers": 2, "hidden": 8, "kv_heads": 1, "head_dim": 8}, "less than or equal to 100000"),
    ("uncertainty", {"efficiency.mfu_factor": 1e308}, "from 0 to 1e+12"),
]


@pytest.mark.parametrize("path,value,expected", RANGE_CASES, ids=[c[0] for c in RANGE_CASES])
def test_numbers_outside_their_sane_range_are_refused_with_the_range(path, value, expected):
    data = _set(copy.deepcopy(TINY), path, value)
    with pytest.raises(InputError) as exc:
        load_instance(data)
    assert expected in str(exc.value) and "\n" not in str(exc.value)


def test_the_edges_of_the_ranges_are_accepted():
    data = _set(copy.deepcopy(TINY), "operations.fixed_usd", 1e12)
    data = _set(data, "efficiency.mfu_train", 1e-9)
    inst = load_instance(data)
    assert inst.operations.fixed_usd == 1e12 and inst.efficiency.mfu_train == 1e-9


@pytest.mark.parametrize("field, value", [("reliability.failures_per_gpu_hour", 100.0),
                                          ("reliability.failures_per_gpu_hour", 1e12),
                                          ("retention.rollback_events_per_gpu_hour", 1e12)])
def test_a_failure_rate_no_plan_can_run_under_is_one_line_naming_it(tmp_path, field, value):
    """Issue 28 item 6: a failure every 36 s per GPU (or a rollback rate of 1e12) was an internal error (exit 1);
    it is refused as physically meaningless, naming the field, exit 2."""
    import json
    from tests.support.common import INSTANCES, refused
    data = json.loads((INSTANCES / "tiny.json").read_text())
    block, name = field.split(".")
    if block == "retention":
        data["retention"] = {"keep_last_options": [2]}
    data.setdefault(block, {})[name] = value
    line = refused(tmp_path, data, field)
    assert "no plan would make progress" in line
