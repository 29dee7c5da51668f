"""`planopt catalog import`: the shipped sample of SkyPilot's Lambda catalog imports into a price file the catalog's
own parser accepts, unmapped accelerators listed and repeated prices merged to the lowest; a rates CSV round trip;
missing columns and bad prices refused in one line naming the column and row, with no file."""

from __future__ import annotations

import csv
import json

import pytest
from typer.testing import CliRunner

from planopt.cli import app
from planopt.models.catalog import CatalogLookupError, find_gpu
from planopt.models.catalog.prices import inconsistencies, parse_rows

from tests.support.common import INSTANCES

SAMPLE = INSTANCES / "prices" / "skypilot-vms-sample.csv"
RATES_HEADER = "provider,region,gpu,tier,usd_per_gpu_hour,node_gpus,interconnect,as_of,source\n"


def run(*args):
    return CliRunner().invoke(app, ["catalog", "import", *map(str, args)])


def sample_rows():
    with open(SAMPLE, newline="") as fh:
        return list(csv.DictReader(fh))


def test_the_skypilot_sample_imports_into_a_valid_price_file(tmp_path):
    out = tmp_path / "prices.json"
    result = run(SAMPLE, "--provider", "lambda", "--as-of", "2026-11-30", "--out", out, "--json")
    assert result.exit_code == 0, result.stderr
    answer, document = json.loads(result.stdout), json.loads(out.read_text())
    rows = parse_rows(document["prices"])
    assert inconsistencies(rows) == []
    source = sample_rows()

    def known(name):
        try:
            return find_gpu(name).name
        except CatalogLookupError:
            return None
    # expected from the CSV itself: per (region, GPU) the lowest Price / AcceleratorCount of the mapped rows
    expected = {}
    for row in source:
        if row["AcceleratorName"] and known(row["AcceleratorName"]):
            key = (row["Region"], known(row["AcceleratorName"]))
            price = float(row["Price"]) / float(row["AcceleratorCount"])
            expected[key] = min(price, expected.get(key, price))
    assert {(r.region, r.gpu): r.usd_per_gpu_hour for r in rows} == pytest.approx(expected)
    assert {r.tier for r in rows} == {"on_demand"}        # Lambda's file gives no spot prices
    assert all(SAMPLE.name in r.source and r.as_of == "2026-11-30" for r in rows)
    unmapped = sorted({row["AcceleratorName"] for row in source if row["AcceleratorName"] and not known(row["AcceleratorName"])})
    assert sorted(u["accelerator"] for u in answer["unmapped"]) == unmapped and "A100" in unmapped
    mapped_rows = sum(1 for row in source if row["AcceleratorName"] and known(row["AcceleratorName"]))
    assert answer["merged"] == mapped_rows - len(rows)
    assert answer["skipped_without_accelerator"] == sum(1 for row in source if not row["AcceleratorName"])


def test_zones_and_spot_prices_keep_the_lowest_per_tier(tmp_path):
    csv_path = tmp_path / "vms.csv"
    csv_path.write_text("InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region,AvailabilityZone\n"
                        "p5.48xlarge,H100,8,192,2048,,98.32,20.0,us-east-1,use1-az1\n"
                        "p5.48xlarge,H100,8,192,2048,,98.32,16.0,us-east-1,use1-az2\n")
    out = tmp_path / "p.json"
    result = run(csv_path, "--provider", "aws", "--as-of", "2026-11-30", "--out", out)
    assert result.exit_code == 0, result.stderr
    rows = {r.tier: r for r in parse_rows(json.loads(out.read_text())["prices"])}
    assert rows["on_demand"].usd_per_gpu_hour == pytest.approx(98.32 / 8)
    assert rows["spot"].usd_per_gpu_hour == pytest.approx(16.0 / 8) and "use1-az2" in rows["spot"].source
    assert rows["spot"].node_gpus == 8 and rows["spot"].interconnect == "ethernet"
    assert "lowest" in result.stdout


def test_a_rates_csv_round_trips(tmp_path):
    rates = tmp_path / "rates.csv"
    rates.write_text(RATES_HEADER + "lambda,us,H100,reserved_1y,1.85,8,infiniband,2026-10,contract 42\n"
                                    "lambda,us,H100,on_demand,2.60,8,infiniband,2026-10,contract 42\n"
                                    "acme,eu,V100,on_demand,0.5,8,ethernet,2026-10,quote\n")
    out = tmp_path / "p.json"
    result = run(rates, "--format", "rates", "--out", out, "--json")
    assert result.exit_code == 0, result.stderr
    rows = parse_rows(json.loads(out.read_text())["prices"])
    assert [(r.gpu, r.tier, r.usd_per_gpu_hour, r.provider_kind) for r in rows] == [
        ("H100-SXM", "reserved_1y", 1.85, "gpu_cloud"), ("H100-SXM", "on_demand", 2.60, "gpu_cloud")]
    assert [u["accelerator"] for u in json.loads(result.stdout)["unmapped"]] == ["V100"]


@pytest.mark.parametrize("text, fmt, expected", [
    ("InstanceType,AcceleratorName,Price,Region\nx,H100,1,us\n", "skypilot", "column 'AcceleratorCount' is missing"),
    ("InstanceType,AcceleratorName,AcceleratorCount,Price,Region\nx,H100,8,-3,us\n", "skypilot", "row 2: column 'Price'"),
    ("InstanceType,AcceleratorName,AcceleratorCount,Price,Region\nx,H100,8,abc,us\n", "skypilot", "row 2: column 'Price'"),
    (RATES_HEADER.replace(",source", "") + "lambda,us,H100,on_demand,2,8,infiniband,2026-10\n", "rates", "column 'source' is missing"),
    (RATES_HEADER + "lambda,us,H100,on_demand,-1,8,infiniband,2026-10,x\n", "rates", "row 2: column 'usd_per_gpu_hour'"),
    (RATES_HEADER + "lambda,us,H100,weekly,1,8,infiniband,2026-10,x\n", "rates", "row 2: column 'tier'"),
])
def test_a_bad_csv_is_one_line_naming_the_column_and_no_file(tmp_path, text, fmt, expected):
    path = tmp_path / "in.csv"
    path.write_text(text)
    extra = ["--provider", "lambda", "--as-of", "2026-11-30"] if fmt == "skypilot" else []
    result = run(path, "--format", fmt, *extra, "--out", tmp_path / "p.json")
    assert result.exit_code == 2 and expected in result.stderr and result.stderr.count("\n") == 1, result.stderr
    assert not (tmp_path / "p.json").exists() and list(tmp_path.glob(".p.json*")) == []


def test_skypilot_needs_its_provider_and_date_and_the_listing_still_works(tmp_path):
    result = run(SAMPLE, "--out", tmp_path / "p.json")
    assert result.exit_code == 2 and "--provider" in result.stderr
    listing = CliRunner().invoke(app, ["catalog", "--provider", "lambda", "--json"])
    assert listing.exit_code == 0 and json.loads(listing.stdout)


def test_a_bad_date_and_a_skypilot_flag_with_rates_are_refused(tmp_path):
    bad = run(SAMPLE, "--provider", "lambda", "--as-of", "last week", "--out", tmp_path / "p.json")
    assert bad.exit_code == 2 and "--as-of" in bad.stderr
    rates = tmp_path / "rates.csv"
    rates.write_text(RATES_HEADER + "lambda,us,H100,on_demand,2.6,8,infiniband,2026-10,x\n")
    mixed = run(rates, "--format", "rates", "--provider", "lambda", "--out", tmp_path / "p.json")
    assert mixed.exit_code == 2 and "--provider: only with --format skypilot" in mixed.stderr
    assert not (tmp_path / "p.json").exists()
