"""The price catalog by provider and tier (models/catalog/prices.json) and `planopt catalog`."""

from __future__ import annotations

import csv
import json

import pytest
from typer.testing import CliRunner

from planopt.cli import app
from planopt.models.catalog import load_gpus
from planopt.models.catalog.prices import PROVIDER_KINDS, TIERS, inconsistencies, load_prices, parse_rows

runner = CliRunner()


def test_at_least_four_kinds_of_provider_and_every_catalog_gpu():
    rows = load_prices()
    assert {r.provider_kind for r in rows} == set(PROVIDER_KINDS)
    assert len({r.provider for r in rows}) >= 4
    assert {g.name for g in load_gpus().values()} <= {r.gpu for r in rows}


def test_every_row_has_a_source_a_date_and_a_known_tier():
    for r in load_prices():
        assert r.source and r.as_of[:4].isdigit() and r.tier in TIERS and r.usd_per_gpu_hour > 0, r


def test_tiers_are_consistent_within_each_provider():
    assert inconsistencies(list(load_prices())) == []


def test_inconsistent_tiers_are_flagged():
    base = {"provider": "x", "provider_kind": "gpu_cloud", "region": "r", "gpu": "H100-SXM", "node_gpus": 8,
            "interconnect": "infiniband", "source": "test", "as_of": "2026-01-01"}
    rows = parse_rows([{**base, "tier": "on_demand", "usd_per_gpu_hour": 2.0},
                       {**base, "tier": "spot", "usd_per_gpu_hour": 2.5},
                       {**base, "tier": "reserved_1y", "usd_per_gpu_hour": 1.5},
                       {**base, "tier": "reserved_3y", "usd_per_gpu_hour": 1.8}])
    problems = inconsistencies(rows)
    assert any("spot" in p and "not below on-demand" in p for p in problems)
    assert any("reserved_3y" in p and "more than reserved_1y" in p for p in problems)
    with pytest.raises(ValueError, match="prices.0.tier"):
        parse_rows([{**base, "tier": "weekly", "usd_per_gpu_hour": 1.0}])


def test_cli_table_json_and_csv(tmp_path):
    res = runner.invoke(app, ["catalog"])
    assert res.exit_code == 0 and "provider" in res.stdout and "reserved-1m" in res.stdout
    res = runner.invoke(app, ["catalog", "--json"])
    assert res.exit_code == 0
    rows = json.loads(res.stdout)["prices"]
    assert len(rows) == len(load_prices())
    assert all({"provider", "region", "gpu", "tier", "usd_per_gpu_hour", "source", "as_of"} <= set(r) for r in rows)
    out = tmp_path / "prices.csv"
    res = runner.invoke(app, ["catalog", "--provider", "lambda", "--out", str(out)])
    assert res.exit_code == 0, res.output
    with out.open() as f:
        written = list(csv.DictReader(f))
    assert written and {r["provider"] for r in written} == {"lambda"}


@pytest.mark.parametrize("args, flag", [(["--provider", "acme"], "--provider"), (["--gpu", "H10O"], "--gpu"),
                                        (["--out", "prices.txt"], "--out")])
def test_cli_bad_options_exit_2_in_one_line(args, flag):
    res = runner.invoke(app, ["catalog", *args])
    assert res.exit_code == 2
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and flag in lines[0], res.output
