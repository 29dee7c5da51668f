"""A request never makes the service read a price file outside the operator's folder (``service/paths.py``)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from planopt.service.paths import PathRefused, price_catalogs
from planopt.service.routes_api import resolve_instance
from tests.support.common import INSTANCES

PRICED = json.loads((INSTANCES / "prices" / "tiny-lambda-prices.json").read_text())


def test_a_job_naming_a_price_file_is_refused_without_an_allowed_folder():
    with pytest.raises(PathRefused, match=r"^hardware\.price_catalog: the service reads no files"):
        resolve_instance(PRICED, SimpleNamespace(allow_dir=None))


def test_a_price_file_outside_the_allowed_folder_is_refused_and_one_inside_is_read_there(tmp_path):
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    (allowed / "p.json").write_text((INSTANCES / "prices" / "lambda-vms-sample.json").read_text())
    escape = {**PRICED, "hardware": {**PRICED["hardware"], "price_catalog": "../../etc/passwd"}}
    with pytest.raises(PathRefused, match="lies outside the folder the service may read"):
        resolve_instance(escape, SimpleNamespace(allow_dir=allowed))
    inside = {**PRICED, "hardware": {**PRICED["hardware"], "price_catalog": "p.json"}}
    out = resolve_instance(inside, SimpleNamespace(allow_dir=allowed))
    assert out["hardware"]["price_catalog"] == str((allowed / "p.json").resolve())


def test_a_portfolio_and_its_inline_jobs_have_their_price_files_checked_too(tmp_path):
    portfolio = {"kind": "portfolio", "price_catalog": "/etc/hosts", "jobs": [{"instance": PRICED}]}
    with pytest.raises(PathRefused, match=r"^price_catalog: "):
        price_catalogs(portfolio, tmp_path)
    with pytest.raises(PathRefused, match=r"^hardware\.price_catalog: "):
        price_catalogs({**portfolio, "price_catalog": None}, None)
