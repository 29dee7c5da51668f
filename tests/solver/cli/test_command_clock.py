"""A portfolio's --time-limit bounds the whole command: ``main`` starts the clock
(``planopt.cli.clock``) before any command module runs, and the portfolio command hands that
instant to the options it checks, so loading, building and the solve all count."""

from __future__ import annotations

import sys
import time

import pytest

import planopt.portfolio.options as portfolio_options
from planopt.cli import clock
from planopt.cli.app import main

from tests.support.common import INSTANCES


def test_main_starts_the_clock_and_the_portfolio_limit_counts_from_it(monkeypatch):
    seen = {}
    real = portfolio_options.check_portfolio_options

    def spy(*args, **kwargs):
        seen["started_at"], seen["called_at"] = kwargs.get("started_at"), time.perf_counter()
        seen["clock"] = clock.started_at()
        options = real(*args, **kwargs)
        seen["options"] = options
        return options

    monkeypatch.setattr(portfolio_options, "check_portfolio_options", spy)
    before = time.perf_counter()
    monkeypatch.setattr(sys, "argv", ["planopt", "-q", "solve", str(INSTANCES / "portfolio-small.json"), "--json",
                                      "--time-limit", "30"])
    with pytest.raises(SystemExit) as stop:
        main()
    assert stop.value.code == 0
    assert seen["started_at"] == seen["clock"] is not None
    assert before <= seen["started_at"] < seen["called_at"]
    assert seen["options"].started_at == seen["started_at"]   # the solve's end is counted from it
    assert clock.started_at() is None   # stopped with the command: a later one in this process counts anew


def test_a_command_after_main_in_the_same_process_counts_from_its_own_start(monkeypatch):
    """A portfolio solved through the app after ``main`` has run in this process (a test suite, an
    embedding program) must not count its time limit from that earlier command."""
    from typer.testing import CliRunner
    from planopt.cli import app
    monkeypatch.setattr(sys, "argv", ["planopt", "-q", "solve", str(INSTANCES / "portfolio-small.json"), "--json"])
    with pytest.raises(SystemExit):
        main()
    time.sleep(1.5)
    res = CliRunner().invoke(app, ["solve", str(INSTANCES / "portfolio-small.json"), "--time-limit", "1", "--json"])
    assert res.exit_code == 0, res.output   # counted from main's start it would be out of time (exit 4)


def test_without_main_the_options_count_from_their_own_call():
    t0 = time.perf_counter()
    options = portfolio_options.check_portfolio_options(INSTANCES / "portfolio-small.json", time_limit=5.0)
    assert t0 <= options.started_at <= time.perf_counter()
    given = t0 - 2.0
    assert portfolio_options.check_portfolio_options(INSTANCES / "portfolio-small.json", started_at=given).started_at == given
