"""A portfolio's ``price_catalog``: its gpus entries' provider offers (prices, term, node size, interconnect,
region) read from an imported price file; the MIP still equals the enumerated optimum; bad files and a job's own
price file refused in one line."""

from __future__ import annotations

import json
import math

import pytest
from typer.testing import CliRunner

from planopt.cli import app
from planopt.models.catalog.prices import TERM_HOURS
from planopt.portfolio.solve import load_portfolio, solve_portfolio

from tests.support.common import refused
from tests.support.portfolio_oracle import best_portfolio_cost, close, one_job_portfolio
from tests.support.price_files import price_row, write_price_file


def acme_rows(node_gpus: int = 4, interconnect: str = "infiniband") -> list[dict]:
    """A provider the shipped catalog does not know, with on-demand, spot and a one-month reservation."""
    return [price_row("acme", "gpu_cloud", "H100-SXM", tier, usd, node_gpus, interconnect, region="moon-1")
            for tier, usd in (("on_demand", 2.2), ("spot", 0.9), ("reserved_1m", 1.3))]


def test_the_entries_read_the_file_s_offer(tmp_path):
    path = write_price_file(tmp_path / "prices.json", acme_rows())
    p = {**one_job_portfolio({"name": "H100-SXM", "provider": "acme", "on_demand_available_gpus": 16}),
         "price_catalog": str(path)}
    data = load_portfolio(p)
    g = data.gpu["H100-SXM"]
    assert (g.on_demand_usd_per_gpu_hour, g.spot_usd_per_gpu_hour, g.reserved_usd_per_gpu_hour) == (2.2, 0.9, 1.3)
    assert (g.reserved_term, g.node_gpus, g.interconnect, g.region) == ("1m", 4, "infiniband", "moon-1")
    assert data.committed_hours["H100-SXM"] == TERM_HOURS["reserved_1m"]
    assert data.provider["H100-SXM"] == "acme"


@pytest.mark.parametrize("node_gpus,interconnect,counts", [(4, "infiniband", (4, 8)), (2, "ethernet", (2, 4)),
                                                            (8, "infiniband", (8,))])
def test_the_mip_equals_the_enumerated_optimum_on_imported_prices(tmp_path, node_gpus, interconnect, counts):
    path = write_price_file(tmp_path / "prices.json", acme_rows(node_gpus, interconnect))
    p = {**one_job_portfolio({"name": "H100-SXM", "provider": "acme", "on_demand_available_gpus": 8,
                              "spot_available_gpus": 4}, counts=counts), "price_catalog": str(path)}
    res = solve_portfolio(p, rel_gap=1e-9)
    oracle = best_portfolio_cost(load_portfolio(p))
    assert res.status == "optimal" and oracle is not None and close(res.cost_usd, oracle)
    rows = [row for job in res.to_dict()["jobs"] for row in job["schedule"]]
    assert rows and {row["provider"] for row in rows} == {"acme"}
    if interconnect == "ethernet":   # one node at most over an ethernet-only link
        assert res.jobs[0].plan.gpu_count <= node_gpus


def test_the_path_is_read_beside_the_portfolio_file(tmp_path):
    write_price_file(tmp_path / "prices.json", acme_rows())
    p = {**one_job_portfolio({"name": "H100-SXM", "provider": "acme", "on_demand_available_gpus": 16}),
         "price_catalog": "prices.json"}
    (tmp_path / "p.json").write_text(json.dumps(p))
    res = CliRunner().invoke(app, ["solve", str(tmp_path / "p.json"), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert {row["provider"] for row in out["procurement"]} == {"acme"}
    row = next(r for r in out["procurement"] if r["tier"] != "reserved")
    assert math.isclose(row["usd_per_gpu_hour"], {"on_demand": 2.2, "spot": 0.9}[row["tier"]])


def test_bad_portfolio_price_files_are_refused_naming_the_field(tmp_path):
    base = one_job_portfolio({"name": "H100-SXM", "provider": "acme", "on_demand_available_gpus": 16})
    line = refused(tmp_path, {**base, "price_catalog": str(tmp_path / "none.json")}, "price_catalog")
    assert "file not found" in line
    (tmp_path / "bad.json").write_text("{")
    assert "not JSON" in refused(tmp_path, {**base, "price_catalog": str(tmp_path / "bad.json")}, "price_catalog")
    path = write_price_file(tmp_path / "prices.json", acme_rows())
    line = refused(tmp_path, {**base, "gpus": [{"name": "H100-SXM", "provider": "lambda", "on_demand_available_gpus": 8}],
                              "price_catalog": str(path)}, "gpus.0")
    assert "provider: expected one of acme" in line, line
    own = {**base, "gpus": [{"name": "H100-SXM", "reserved_usd_per_gpu_hour": 1.0, "on_demand_available_gpus": 8}],
           "price_catalog": str(path)}
    assert "no gpus entry names a provider" in refused(tmp_path, own, "price_catalog")


def test_a_job_s_own_price_file_is_refused_in_a_portfolio(tmp_path):
    path = write_price_file(tmp_path / "prices.json", acme_rows())
    p = one_job_portfolio({"name": "H100-SXM", "provider": "acme", "on_demand_available_gpus": 16})
    p["price_catalog"] = str(path)
    p["jobs"][0]["instance"]["hardware"]["price_catalog"] = str(path)
    line = refused(tmp_path, p, "jobs.0.instance.hardware.price_catalog")
    assert "portfolio's price_catalog" in line
