"""Pricing on Dask (``solver/portfolio/pricing.py``): the distributed solve equals the serial one.

A real ``distributed.LocalCluster`` (2 in-process workers, one thread each) prices generated
portfolios (``generate.random_portfolio``); the Lagrangian ascent, column generation and the
whole solve must return exactly the serial run's bound, columns and schedule.
"""

import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

from planopt.cli import app
from planopt.errors import InputError
from planopt.portfolio.columns import column_generation
from planopt.portfolio.generate import random_portfolio
from planopt.portfolio.lagrange import JobRule, job_plans, lagrangian_bound, reservation_floors
from planopt.portfolio.pricing import (DASK_MIN_JOBS, DaskPricer, Pricing, SerialPricer, check_pricing, choose_pricing)
from planopt.portfolio.solve import PortfolioModel

TIMING = ("build_seconds", "solve_seconds", "warm_start_seconds")


@pytest.fixture(scope="module")
def client():
    from distributed import Client, LocalCluster
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0") as lc, Client(lc) as c:
        yield c


@pytest.fixture(scope="module", params=[1, 2])
def portfolio(request):
    return random_portfolio(6, 3, 8, seed=request.param)


def _model(raw):
    pm = PortfolioModel(raw)
    plans = [job_plans(pm, j) for j in range(len(pm.data.instances))]
    return pm, plans, {g: n for n, g in enumerate(pm.data.gpus)}


def test_a_pass_on_the_cluster_equals_the_serial_pass(client, portfolio):
    pm, plans, gi = _model(portfolio)
    rng = np.random.default_rng(0)
    lam = rng.uniform(0, 50, size=(len(pm.data.buckets), len(pm.data.gpus), 3))
    rules = {1: JobRule(buckets_out=frozenset({2})), 3: JobRule(buckets_in=frozenset({pm.data.portfolio.jobs[3].release_bucket}))}
    high = np.full(len(pm.data.gpus), 8.0)
    dask = DaskPricer(client, plans, gi, batches_per_worker=2)
    try:
        assert len(dask.batches) == 4 and sorted(j for b in dask.batches for j in b) == list(range(6))
        for args in ((lam,), (lam, rules, high), (np.zeros_like(lam),)):
            assert dask.price(*args) == SerialPricer(plans, gi).price(*args)
        assert dask.stats.passes == 3 and dask.stats.compute_seconds > 0
    finally:
        dask.close()


def test_ascent_and_column_generation_on_the_cluster_equal_the_serial_ones(client, portfolio):
    """Iteration-bounded (never time-bounded) runs: the same multipliers, bound and columns."""
    out = []
    for use_dask in (False, True):
        pm, plans, gi = _model(portfolio)
        pm.pricer = DaskPricer(client, plans, gi) if use_dask else SerialPricer(plans, gi)
        floor = reservation_floors(pm, plans)
        lag = lagrangian_bound(pm, seconds=math.inf, iterations=40, plans=plans, reserved_floor=floor)
        cg = column_generation(pm, plans, floor, math.inf, start=lag)
        out.append((lag.bound_usd, lag.history, cg.bound_usd, cg.history, cg.master[1], list(cg.lp_columns),
                    cg.choice, pm.pricer.stats.passes))
        pm.pricer.close()
    assert out[0] == out[1]
    assert out[1][-1] >= 2   # the ascent and column generation both priced through the pricer


@pytest.mark.slow
def test_a_distributed_solve_returns_the_serial_schedule(client, portfolio):
    """The whole solve (ascent, search, column generation, master, MIP): its bound, chosen
    columns and schedule JSON equal the serial solve's (the time limit never binds here)."""
    runs = []
    for pricing in (None, Pricing("dask", client=client)):
        pm = PortfolioModel(portfolio)
        res = pm.solve(time_limit=120, rel_gap=1e-9, pricing=pricing)
        assert pm.pricing_stats is not None and pm.pricing_stats.passes > 0
        master = pm.lagrange.master[1] if pm.lagrange is not None and pm.lagrange.master is not None else None
        runs.append((res, master, pm.pricer_client))
    (serial, cols0, _), (dist, cols1, _) = runs
    assert serial.status == dist.status == "optimal"
    assert serial.bound_usd == dist.bound_usd and cols0 == cols1
    a, b = serial.to_dict(), dist.to_dict()
    for k in TIMING:
        a.pop(k), b.pop(k)
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def test_pricing_options_are_checked_in_one_line():
    assert check_pricing(None, None, False) == Pricing("auto")
    assert check_pricing("tcp://127.0.0.1:8786", None, False) == Pricing("dask", "tcp://127.0.0.1:8786")
    assert check_pricing(None, 3, False) == Pricing("dask", None, 3)
    assert check_pricing(None, None, True) == Pricing("serial")
    for args, msg in (((None, 0, False), "--workers: expected at least 1"),
                      (("tcp://h:1", 2, False), "--workers: sizes the local cluster"),
                      (("tcp://h:1", None, True), "--serial: cannot be combined with --scheduler"),
                      ((None, 2, True), "--serial: cannot be combined with --workers"),
                      (("h:1", None, False), "--scheduler: expected a scheduler address")):
        with pytest.raises(InputError, match=msg):
            check_pricing(*args)


def test_auto_is_serial_below_the_measured_job_count_or_on_busy_cores(monkeypatch):
    import planopt.portfolio.pricing as pricing
    monkeypatch.setattr(pricing, "usable_cores", lambda: 2)
    monkeypatch.setattr(pricing.os, "getloadavg", lambda: (1.0, 1.0, 1.0))   # this solve alone
    assert choose_pricing(Pricing("auto"), DASK_MIN_JOBS - 1).mode == "serial"
    assert choose_pricing(Pricing("auto"), DASK_MIN_JOBS).mode == "dask"
    assert choose_pricing(None, 10_000).mode == "serial"   # the Python API: serial unless asked
    assert choose_pricing(Pricing("dask", workers=2), 1).mode == "dask"   # asked for: always
    monkeypatch.setattr(pricing.os, "getloadavg", lambda: (1.5, 1.0, 1.0))   # another process busy
    assert choose_pricing(Pricing("auto"), 10_000).mode == "serial"
    monkeypatch.setattr(pricing.os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    monkeypatch.setattr(pricing, "usable_cores", lambda: 1)
    assert choose_pricing(Pricing("auto"), 10_000).mode == "serial"


def test_cli_refuses_pricing_flags_it_cannot_honour(tmp_path):
    from tests.support.common import INSTANCES
    p = tmp_path / "p.json"
    p.write_text(json.dumps(random_portfolio(2, 2, 4, seed=1)))
    runner = CliRunner()
    for args, msg in (([INSTANCES / "tiny.json", "--workers", "2"], "--workers: applies to a portfolio"),
                      ([INSTANCES / "tiny.json", "--serial"], "--serial: applies to a portfolio"),
                      ([p, "--serial", "--scheduler", "tcp://127.0.0.1:1"], "--serial: cannot be combined"),
                      ([p, "--workers", "2", "--confidence", "0.9"], "--workers: the schedule held at --confidence")):
        res = runner.invoke(app, ["solve", *map(str, args)])
        assert res.exit_code == 2, res.output
        lines = res.stderr.strip().splitlines()
        assert len(lines) == 1 and msg in lines[0], res.stderr


@pytest.mark.slow
def test_cli_solves_on_a_local_cluster_of_its_own_and_on_one_at_an_address(tmp_path, client):
    p = tmp_path / "p.json"
    p.write_text(json.dumps(random_portfolio(3, 2, 6, seed=1)))
    runner = CliRunner()
    outs = [runner.invoke(app, ["solve", str(p), "--json", "--time-limit", "60", *flags])
            for flags in (["--serial"], ["--workers", "2"], ["--scheduler", client.scheduler.address])]
    assert [o.exit_code for o in outs] == [0, 0, 0], [o.output for o in outs]
    a, b, c = (json.loads(o.stdout) for o in outs)
    assert a["status"] == b["status"] == c["status"] == "optimal" and a["jobs"] == b["jobs"] == c["jobs"]
