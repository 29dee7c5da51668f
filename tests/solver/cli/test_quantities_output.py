"""`planopt solve` shows a plan's key quantities and its fixed vs elastic cost in the JSON, the text report and the
`--out` row (issue 27, lever 8)."""

from __future__ import annotations

import csv
import json

import pytest
from typer.testing import CliRunner

from planopt.cli import app
from planopt.models.catalog import defaults as d
from planopt.report.result_schema import SolveResultSchema

from tests.support.common import INSTANCES

runner = CliRunner()
TINY = str(INSTANCES / "tiny.json")


def test_the_json_carries_quantities_and_a_split_that_adds_up():
    res = runner.invoke(app, ["solve", TINY, "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    SolveResultSchema.model_validate(out)
    split, q = out["cost_split_usd"], out["quantities"]
    assert split["fixed"] + split["elastic"] == pytest.approx(out["metrics"]["cost_usd"])
    assert sum(split["fixed_by_line"].values()) == pytest.approx(split["fixed"])
    # tiny's fixed money: operations.fixed_usd ($500), plus reward.design_usd ($2,000) for an RL plan
    rl = out["plan"]["stages"][0]["method"] == "rl"
    assert split["fixed"] == pytest.approx(500 + (2000 if rl else 0))
    assert q["gpu_hours"] == pytest.approx(out["metrics"]["gpu_hours"])
    assert q["evaluations_run"] == out["plan"]["stages"][0]["steps"] // d.EVAL_EVERY_STEPS   # tiny sets no evaluation block


def test_the_report_and_the_out_row_show_them(tmp_path):
    path = tmp_path / "plan.csv"
    res = runner.invoke(app, ["solve", TINY, "--out", str(path)])
    assert res.exit_code == 0, res.output
    assert "Quantities" in res.output and "tokens sampled" in res.output
    line = next(ln for ln in res.output.splitlines() if ln.strip().startswith("fixed $"))
    assert "elastic $" in line
    row = next(csv.DictReader(path.open()))
    assert float(row["cost_split_usd.fixed"]) + float(row["cost_split_usd.elastic"]) == pytest.approx(float(row["cost_usd"]))
    assert float(row["quantities.tokens_sampled"]) > 0
