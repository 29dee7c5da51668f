"""Repeated releases at the command line (``models/cost/releases.py``): a bad block is one line naming the field
(exit 2), the chance-constrained solve refuses it in one line, and the text and JSON reports show the count
and the per-release vs total cost (the JSON's matches the evaluator's)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from planopt.cli import app

from tests.support.common import INSTANCES

MONTHLY = INSTANCES / "qwen3-8b-math-monthly.json"
runner = CliRunner()


@pytest.mark.parametrize("block, line", [
    ({"horizon_months": 6, "interval_months": 7},
     "releases: interval_months: 7 is longer than horizon_months 6; expected at most the horizon"),
    ({"count": 2, "horizon_months": 6, "interval_months": 1},
     "releases: count: give count, or horizon_months and interval_months, not both"),
    ({"horizon_months": 6}, "releases: interval_months: expected a number of months with the other of the pair"),
    ({"count": 0}, "releases.count: Input should be greater than or equal to 1 (got 0)"),
    ({"count": 2, "sft_labels_rebuilt_share": 1.5},
     "releases.sft_labels_rebuilt_share: Input should be less than or equal to 1 (got 1.5)"),
])
@pytest.mark.parametrize("command", ["validate", "solve"])
def test_a_bad_releases_block_is_one_line_naming_the_field(tmp_path, block, line, command):
    doc = json.loads((INSTANCES / "tiny.json").read_text())
    doc["releases"] = block
    path = tmp_path / "job.json"
    path.write_text(json.dumps(doc))
    res = runner.invoke(app, [command, str(path)])
    assert res.exit_code == 2, res.output
    assert res.stderr == f"error: {path}: {line}\n"


@pytest.mark.parametrize("args", [["solve", str(MONTHLY), "--confidence", "0.9"],
                                  ["frontier", str(MONTHLY), "--x", "cost_usd", "--y", "probability", "--scenarios", "50"]])
def test_a_chance_constrained_solve_over_releases_is_refused_in_one_line(args):
    res = runner.invoke(app, args)
    assert res.exit_code == 2
    assert res.stderr.count("\n") == 1 and res.stderr.startswith("error: releases: plans under uncertainty")


def test_the_reports_show_the_count_and_the_cost_per_release_and_in_all():
    res = runner.invoke(app, ["solve", str(MONTHLY), "--json", "--no-sensitivity"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    r = out["cost_split_usd"]["releases"]
    assert r["count"] == 12 and r["sft_labels_rebuilt_share"] == 0.5
    assert r["total_usd"] == pytest.approx(out["metrics"]["cost_usd"])
    assert r["total_usd"] == pytest.approx(r["first_release_usd"] + 11 * r["later_release_usd"])
    text = runner.invoke(app, ["solve", str(MONTHLY), "--no-sensitivity"]).stdout
    first, later, total = (f"${round(r[k]):,}" for k in ("first_release_usd", "later_release_usd", "total_usd"))
    assert f"releases 12: the first {first}, each later one {later}" in text and f"total {total}" in text
    assert "Budget and alert lines (cumulative planned spend of the first release" in text
