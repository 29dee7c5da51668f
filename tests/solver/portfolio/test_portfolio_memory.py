"""The portfolio model's size rule (``loading.portfolio_memory``, ``check_portfolio_size``): by
estimated memory, never by a job count, and ``generate portfolio`` reaches 1,000 jobs × 520 buckets."""

import json

import numpy as np
import pytest
from typer.testing import CliRunner

import planopt.portfolio.loading as loading
from planopt.cli import app
from planopt.portfolio.generate import random_portfolio
from planopt.portfolio.lagrange import job_plans
from planopt.portfolio.loading import check_portfolio_size, load_portfolio, portfolio_memory
from planopt.portfolio.solve import PortfolioModel

PLAN_ARRAYS = ("compute_hours", "fixed_usd", "work_gpu_hours", "allowed", "allowed_strict", "tier_ok", "hour_usd")


@pytest.mark.parametrize("seed", [1, 2])
def test_the_estimate_counts_the_models_keys_and_bounds_its_plan_arrays(seed):
    pm = PortfolioModel(random_portfolio(4, 3, 10, seed=seed))
    est = portfolio_memory(pm.data)
    assert len(pm.model.U) <= est.keys <= 1.5 * len(pm.model.U)   # spot counted wherever some is offered
    plans = [job_plans(pm, j) for j in range(len(pm.data.instances))]
    actual = sum(getattr(jp, a).nbytes for jp in plans for a in PLAN_ARRAYS)
    assert actual <= est.plan_bytes
    assert est.total_mib > loading.PORTFOLIO_BASE_MIB and "schedule variables" in est.describe()


def test_a_portfolio_over_the_memory_limit_is_refused_in_one_line(tmp_path, monkeypatch):
    p = tmp_path / "p.json"
    p.write_text(json.dumps(random_portfolio(3, 2, 6, seed=1)))
    est = portfolio_memory(load_portfolio(p)).total_mib
    monkeypatch.setattr(loading, "MAX_PORTFOLIO_MIB", int(est) - 1)
    res = CliRunner().invoke(app, ["solve", str(p), "--json"])
    assert res.exit_code == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "portfolio model: estimated" in lines[0] and f"over the {int(est) - 1:,} MiB limit" in lines[0]
    monkeypatch.setattr(loading, "MAX_PORTFOLIO_MIB", int(est) + 1)
    check_portfolio_size(load_portfolio(p))   # no job count: just under the limit passes


def test_generate_refuses_only_past_its_drawing_cap():
    res = CliRunner().invoke(app, ["generate", "portfolio", "--jobs", "10001"])
    assert res.exit_code == 2 and "--jobs: at most 10,000" in res.stderr


@pytest.mark.slow
def test_generate_reaches_1000_jobs_and_520_buckets_and_the_model_is_not_refused(tmp_path):
    out = tmp_path / "big.json"
    res = CliRunner().invoke(app, ["generate", "portfolio", "--jobs", "1000", "--gpu-types", "14", "--buckets", "520",
                                   "--seed", "1", "--out", str(out)])
    assert res.exit_code == 0, res.output
    data = load_portfolio(out)
    assert len(data.instances) == 1000 and len(data.buckets) == 520 and len(set(data.gpus)) == 14
    check_portfolio_size(data)
    assert portfolio_memory(data).total_mib < loading.MAX_PORTFOLIO_MIB
    assert np.isfinite(portfolio_memory(data).total_mib)
