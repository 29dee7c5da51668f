"""``hardware.price_catalog`` end to end: ``planopt catalog import`` of the shipped SkyPilot sample, then ``solve``,
``validate`` and ``export`` of a job that points at the file; every bad file refused in one line naming the field."""

from __future__ import annotations

import csv
import json
import math

import pytest
from typer.testing import CliRunner

from planopt.cli import app

from tests.support.common import INSTANCES, refused
from tests.support.price_files import price_row, write_price_file

SAMPLE = INSTANCES / "prices" / "skypilot-vms-sample.csv"


def imported(tmp_path) -> dict:
    """The sample imported as Lambda's prices into ``tmp_path/prices.json``; the file's content."""
    res = CliRunner().invoke(app, ["catalog", "import", str(SAMPLE), "--provider", "lambda", "--as-of", "2026-11-30",
                                   "--out", str(tmp_path / "prices.json")])
    assert res.exit_code == 0, res.output
    return json.loads((tmp_path / "prices.json").read_text())


def job(price_catalog: str, gpus=None, **hardware) -> dict:
    data = json.loads((INSTANCES / "tiny.json").read_text())
    data["hardware"] = {"gpus": gpus or [{"name": "H100-SXM", "counts": [1, 2, 4, 8, 16]}],
                        "price_catalog": price_catalog, **hardware}
    return data


def test_a_job_solved_on_imported_prices_names_the_file_s_provider_and_price(tmp_path):
    rows = imported(tmp_path)["prices"]
    (tmp_path / "job.json").write_text(json.dumps(job("prices.json")))   # relative to the instance's folder
    res = CliRunner().invoke(app, ["solve", str(tmp_path / "job.json"), "--json", "--no-sensitivity"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    (offer,) = out["offers"]
    row = next(r for r in rows if r["region"] == offer["region"] and r["tier"] == offer["tier"])
    assert (offer["provider"], offer["gpu"], offer["interconnect"]) == ("lambda", "H100-SXM", "ethernet")
    assert offer["usd_per_gpu_hour"] == row["usd_per_gpu_hour"] == 23.92 / 8   # the sample's 8-GPU node, per GPU
    assert offer["source"] == row["source"] and offer["source"].startswith("skypilot-vms-sample.csv row ")
    assert offer["count"] <= row["node_gpus"]   # an ethernet-only offer holds one node
    breakdown = out["cost_breakdown_usd"]
    assert math.isclose(out["metrics"]["gpu_hours"] * row["usd_per_gpu_hour"], breakdown["compute"]
                        + breakdown["evaluation"], rel_tol=1e-6)
    (tmp_path / "plan.json").write_text(res.stdout)
    res = CliRunner().invoke(app, ["validate", str(tmp_path / "job.json")])   # 16 GPUs: two ethernet-linked nodes
    assert res.exit_code == 0 and "left out: hardware.gpus.0: H100-SXM × 16" in res.stdout, res.stdout
    res = CliRunner().invoke(app, ["export", str(tmp_path / "plan.json"), "--instance", str(tmp_path / "job.json"),
                                   "--to", "skypilot", "--out", str(tmp_path / "task.yaml")])
    assert res.exit_code == 0, res.output
    task = (tmp_path / "task.yaml").read_text()
    assert "cloud: lambda" in task and f"region: {offer['region']}" in task
    res = CliRunner().invoke(app, ["solve", str(tmp_path / "job.json"), "--format", "focus", "--start-date",
                                   "2026-12-01", "--out", str(tmp_path / "spend.csv")])
    assert res.exit_code == 0, res.output
    gpu_rows = [r for r in csv.DictReader((tmp_path / "spend.csv").open()) if r["ServiceName"] == "GPU compute"]
    assert gpu_rows and all((r["ProviderName"], r["RegionName"], float(r["ListUnitPrice"]))
                            == ("lambda", offer["region"], row["usd_per_gpu_hour"]) for r in gpu_rows)


def test_the_shipped_example_is_the_sample_imported(tmp_path):
    """``instances/prices/lambda-vms-sample.json`` (the README's example reads it) is what the import writes."""
    assert imported(tmp_path) == json.loads((INSTANCES / "prices" / "lambda-vms-sample.json").read_text())


def test_an_instance_given_as_an_object_reads_the_path_from_the_working_directory(tmp_path, monkeypatch):
    from planopt.instance import load_instance
    imported(tmp_path)
    monkeypatch.chdir(tmp_path)
    inst = load_instance(job("prices.json"))
    assert inst.hardware.price_catalog == str((tmp_path / "prices.json").resolve())
    assert {r.provider for r in inst.hardware.price_rows()} == {"lambda"}


def bad_files(tmp_path) -> dict[str, tuple[str, str]]:
    """Name -> (path, what the line says)."""
    (tmp_path / "text.json").write_text("provider,gpu\nlambda,H100\n")
    (tmp_path / "list.json").write_text(json.dumps([1, 2]))
    (tmp_path / "empty.json").write_text(json.dumps({"prices": []}))
    row = price_row("acme", "gpu_cloud", "H100-SXM", "on_demand", 2.0, 8, "infiniband")
    write_price_file(tmp_path / "tier.json", [{**row, "tier": "weekly"}])
    write_price_file(tmp_path / "field.json", [{k: v for k, v in row.items() if k != "source"}])
    write_price_file(tmp_path / "price.json", [{**row, "usd_per_gpu_hour": -1}])
    (tmp_path / "folder.json").mkdir()
    return {"missing": (str(tmp_path / "nowhere.json"), "file not found"),
            "folder": (str(tmp_path / "folder.json"), "is a directory"),
            "not json": (str(tmp_path / "text.json"), "not JSON"),
            "not a price file": (str(tmp_path / "list.json"), "expected a price file"),
            "no rows": (str(tmp_path / "empty.json"), "expected at least one offer"),
            "bad tier": (str(tmp_path / "tier.json"), "prices.0.tier: expected one of"),
            "missing field": (str(tmp_path / "field.json"), "prices.0:"),
            "bad price": (str(tmp_path / "price.json"), "prices.0.usd_per_gpu_hour: expected a positive number")}


@pytest.mark.parametrize("case", ["missing", "folder", "not json", "not a price file", "no rows", "bad tier",
                                  "missing field", "bad price"])
def test_a_bad_price_file_is_one_line_naming_the_field(tmp_path, case):
    path, says = bad_files(tmp_path)[case]
    line = refused(tmp_path, job(path), "hardware.price_catalog")
    assert says in line, line


def test_a_file_without_an_offer_of_a_listed_type_names_the_types(tmp_path):
    imported(tmp_path)
    gpus = [{"name": "H100-SXM", "counts": [8]}, {"name": "A100-80GB", "counts": [8]}, {"name": "L4", "counts": [1]},
            {"name": "B200", "counts": [8], "price_usd_per_gpu_hour": 6.0}]   # its own price: not read from the file
    line = refused(tmp_path, job(str(tmp_path / "prices.json"), gpus), "hardware.price_catalog")
    assert "has no offer of A100-80GB, L4 (it offers H100-SXM)" in line, line


def test_a_file_no_entry_reads_is_refused(tmp_path):
    imported(tmp_path)
    line = refused(tmp_path, job(str(tmp_path / "prices.json"), offers="reference"), "hardware.price_catalog")
    assert "no price is read from it" in line and "reference" in line, line


def test_validate_names_the_field_and_the_service_too(tmp_path):
    res = CliRunner().invoke(app, ["validate", str(_write(tmp_path, job("nowhere.json")))])
    assert res.exit_code == 2 and "hardware.price_catalog:" in res.output and "file not found" in res.output
    from planopt.errors import InputError
    from planopt.instance import load_instance
    with pytest.raises(InputError, match="hardware.price_catalog: .*nowhere.json: file not found"):
        load_instance(job("nowhere.json"))


def _write(tmp_path, data: dict):
    path = tmp_path / "job.json"
    path.write_text(json.dumps(data))
    return path
