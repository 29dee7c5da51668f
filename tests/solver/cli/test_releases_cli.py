"""Repeated releases at the command line (``models/cost/releases.py``): a bad block is one line naming the field
(exit 2), a chance-constrained solve prices it, and the text and JSON reports show the count
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


def test_a_chance_constrained_solve_over_releases_prices_every_release_in_each_scenario():
    """``--confidence`` over releases is planned (it was refused): the JSON's risk and its releases line agree, and
    the expected cost is over the releases (above the first release's)."""
    res = runner.invoke(app, ["solve", str(MONTHLY), "--confidence", "0.75", "--scenarios", "50", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["risk"]["in_sample_share"] >= 0.75
    r = out["cost_split_usd"]["releases"]
    assert r["total_usd"] == pytest.approx(out["metrics"]["cost_usd"])
    assert out["risk"]["expected"]["cost_usd"] > r["first_release_usd"]


@pytest.mark.slow  # 26 s on 2 cores (a probability frontier solves one chance MIP per share); .ci/run runs it
def test_a_probability_frontier_over_releases_runs():
    """``frontier --y probability`` over releases (it was refused): its shares climb with the cost it allows, each
    point's cost being the total over the 12 releases."""
    res = runner.invoke(app, ["frontier", str(MONTHLY), "--x", "cost_usd", "--y", "probability", "--scenarios", "10",
                              "--json"])
    assert res.exit_code == 0, res.output
    points = [p for p in json.loads(res.stdout)["points"] if p["plan"] is not None]
    assert len(points) >= 3
    shares = [p["in_sample_share"] for p in sorted(points, key=lambda p: p["metrics"]["cost_usd"])]
    assert shares == sorted(shares) and shares[-1] > shares[0]


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
