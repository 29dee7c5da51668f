"""The portfolio output contract: `planopt schema --kind portfolio-result`, and real outputs hold to it."""

from __future__ import annotations

import json
import math

from typer.testing import CliRunner

from planopt.cli import app
from planopt.portfolio.solve import RESULT_VERSION, PortfolioResult, solve_portfolio
from planopt.report.portfolio_schema import PortfolioResultSchema

from tests.support.common import INSTANCES
from tests.support.portfolio_oracle import tiny_portfolio

runner = CliRunner()
SMALL = INSTANCES / "portfolio-small.json"


def test_the_schema_is_published_with_a_version_and_the_keys_a_replay_needs():
    res = runner.invoke(app, ["schema", "--kind", "portfolio-result"])
    assert res.exit_code == 0, res.output
    schema = json.loads(res.stdout)
    assert schema["properties"]["version"]["const"] == RESULT_VERSION
    assert {"version", "bucket_hours", "procurement", "jobs"} <= set(schema["required"])
    defs = schema["$defs"]
    assert {"provider", "gpu", "tier", "term", "start_bucket", "end_bucket", "gpus"} <= set(defs["ProcurementRow"]["required"])
    assert {"plan", "metrics", "release_bucket", "deadline_bucket", "finish_bucket", "schedule"} <= set(defs["JobResult"]["required"])
    assert {"bucket", "provider", "gpu", "tier", "gpus", "hours"} <= set(defs["ScheduleRow"]["required"])


def test_an_optimal_output_holds_to_the_schema():
    res = runner.invoke(app, ["solve", str(SMALL), "--json"])
    assert res.exit_code == 0
    PortfolioResultSchema.model_validate(json.loads(res.stdout))


def test_infeasible_and_time_limited_outputs_hold_to_the_schema():
    for seed in range(6):  # some of these are infeasible
        out = json.loads(json.dumps(solve_portfolio(tiny_portfolio(seed), rel_gap=1e-9).to_dict()))
        PortfolioResultSchema.model_validate(out)
    stopped = PortfolioResult("time_limit", gap=math.inf, bound_usd=-math.inf, buckets=2, bucket_hours=24.0).to_dict()
    PortfolioResultSchema.model_validate(json.loads(json.dumps(stopped, allow_nan=False)))


def test_the_schema_refuses_an_output_missing_a_key():
    out = json.loads(json.dumps(solve_portfolio(tiny_portfolio(0), rel_gap=1e-9).to_dict()))
    out["jobs"][0]["schedule"][0].pop("gpus")
    try:
        PortfolioResultSchema.model_validate(out)
    except ValueError as exc:
        assert "gpus" in str(exc)
    else:
        raise AssertionError("a schedule row without gpus passed the schema")
