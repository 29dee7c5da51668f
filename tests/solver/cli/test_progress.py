"""Progress bars (issue 13 item 17): on stderr only, only on a terminal, only after a run has lasted
a while, never under -q; stdout keeps exactly the result (one JSON object under --json)."""

import json
import time

from typer.testing import CliRunner

from planopt import verbosity
from planopt.cli import app, progress
from planopt.cli.progress import ProgressBar, progress_bar

from tests.support.common import INSTANCES


def test_a_bar_appears_only_after_its_delay():
    with progress_bar("quick", total=3, enabled=True, after=5.0) as quick:
        quick.update(3)
    assert not quick.shown
    with progress_bar("slow", total=3, enabled=True, after=0.05) as slow:
        for k in range(1, 4):
            time.sleep(0.05)
            slow.update(k)
    assert slow.shown and slow.done == 3


def test_no_bar_off_a_terminal_or_when_quiet(monkeypatch):
    monkeypatch.setattr(progress, "stderr_is_terminal", lambda: False)
    assert not ProgressBar("x").enabled
    monkeypatch.setattr(progress, "stderr_is_terminal", lambda: True)
    assert ProgressBar("x").enabled
    verbosity.set_level(verbosity.QUIET)
    try:
        assert not ProgressBar("x").enabled
    finally:
        verbosity.set_level(verbosity.NORMAL)


def _count_bars(monkeypatch) -> list[str]:
    """Pretend stderr is a terminal with no delay, and record every bar drawn."""
    drawn: list[str] = []
    show = ProgressBar._show

    def record(bar):
        drawn.append(bar.label)
        show(bar)
    monkeypatch.setattr(progress, "stderr_is_terminal", lambda: True)
    monkeypatch.setattr(progress, "SHOW_AFTER_SECONDS", 0.0)
    monkeypatch.setattr(ProgressBar, "_show", record)
    return drawn


def test_frontier_and_sweep_show_a_bar_and_keep_stdout_one_json_object(monkeypatch):
    drawn = _count_bars(monkeypatch)
    runs = [["frontier", str(INSTANCES / "tiny.json"), "--json"],
            ["frontier", str(INSTANCES / "tiny.json"), "--x", "cost_usd", "--y", "probability", "--scenarios", "50", "--json"],
            ["sweep", str(INSTANCES / "tiny.json"), "--budget-usd", "700,900", "--json"]]
    for args in runs:
        res = CliRunner().invoke(app, args)
        assert res.exit_code == 0, res.stderr
        json.loads(res.stdout)  # exactly one JSON object: the bar never writes to stdout
    assert drawn == ["frontier of cost and quality", "frontier of expected cost and probability", "sweep of the budget"]


def test_quiet_draws_no_bar(monkeypatch):
    drawn = _count_bars(monkeypatch)
    res = CliRunner().invoke(app, ["-q", "frontier", str(INSTANCES / "tiny.json")])
    assert res.exit_code == 0 and drawn == [] and res.stderr == ""


def test_the_elapsed_time_counts_from_the_start_of_the_run():
    with progress_bar("slow", total=2, enabled=True, after=0.4) as bar:
        deadline = time.monotonic() + 10
        while not bar.shown and time.monotonic() < deadline:
            time.sleep(0.01)
        assert bar.shown
        assert bar._bar.tasks[0].elapsed >= 0.4  # just drawn, yet it says 0.4 s: the run's time, not the bar's
