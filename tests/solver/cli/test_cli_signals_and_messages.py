"""Ctrl-C (issue 13 item 25), usage errors as one line (item 28), -v/--verbose and -q/--quiet (item 15),
exercised through the `planopt` script as a user runs it."""

import json
import signal
import subprocess
import sys
import time

import pytest

from tests.support.common import INSTANCES

PLANOPT = [sys.executable, "-m", "planopt.cli"]
TINY = str(INSTANCES / "tiny.json")
QWEN = str(INSTANCES / "qwen3-8b-math.json")


def planopt(*args, **kwargs):
    return subprocess.run([*PLANOPT, *map(str, args)], capture_output=True, text=True, **kwargs)


def test_ctrl_c_stops_a_sweep_at_once_and_writes_nothing(tmp_path):
    """SIGINT in the middle of a long sweep (400 solves): exit 130 within a second, `interrupted` as the
    last line, no traceback, the JSON error object on stdout, and neither output file nor a staging file."""
    out, plot = tmp_path / "sweep.csv", tmp_path / "sweep.png"
    proc = subprocess.Popen([*PLANOPT, "-v", "sweep", QWEN, "--budget-usd", "3000:60000:400", "--resolve-all",
                             "--json", "--out", str(out), "--plot", str(plot)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    before = []
    for line in proc.stderr:  # -v notes each stage: wait until the sweep's solves have begun
        before.append(line)
        if "solver run" in line:
            break
    else:
        pytest.fail("the sweep ended before it could be interrupted: " + "".join(before[-5:]))
    proc.send_signal(signal.SIGINT)
    sent = time.monotonic()
    stdout, stderr = proc.communicate(timeout=30)
    stopped_after = time.monotonic() - sent
    assert proc.returncode == 130
    assert stopped_after < 1.0, stopped_after
    lines = (("".join(before) + stderr).strip().splitlines())
    assert lines[-1] == "interrupted"
    assert not any(word in stderr for word in ("Traceback", "KeyboardInterrupt", "Ctrl-C pressed"))
    assert json.loads(stdout) == {"status": "error", "error": "interrupted"}
    assert list(tmp_path.iterdir()) == []


def test_a_bad_flag_value_is_one_line_not_a_usage_box():
    res = planopt("solve", TINY, "--objective", "bogus")
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.count("\n") == 1
    assert res.stderr.startswith("error: Invalid value for '--objective': 'bogus' is not one of")
    assert "Usage" not in res.stderr and "╭" not in res.stderr and "Value error" not in res.stderr


@pytest.mark.parametrize("args", [["solve", TINY, "--bogus"], ["solve"], ["nonsense"]])
def test_every_usage_error_is_one_line(args):
    res = planopt(*args)
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and res.stderr.startswith("error: "), res.stderr


def test_a_long_bad_value_is_shortened():
    res = planopt("solve", TINY, "--objective", "x" * 100_000)
    assert res.returncode == 2 and res.stderr.count("\n") == 1
    assert len(res.stderr) < 400 and "more characters" in res.stderr


def test_a_long_bad_value_in_an_input_error_is_shortened():
    res = planopt("schema", "--kind", "y" * 100_000)
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and len(res.stderr) < 400


def test_verbose_sends_the_solver_log_and_timings_to_stderr_and_keeps_stdout_json():
    res = planopt("solve", TINY, "--json", "-v", "--no-sensitivity")  # -v typed after the command
    assert res.returncode == 0
    assert json.loads(res.stdout)["status"] == "optimal"
    assert "planopt: model built in" in res.stderr and "planopt: solver run:" in res.stderr
    assert "HiGHS" in res.stderr  # the solver's own log


def test_normal_and_quiet_runs_print_nothing_on_stderr():
    for flags in ([], ["-q"], ["--quiet"]):
        res = planopt("solve", TINY, "--json", "--no-sensitivity", *flags)
        assert res.returncode == 0 and res.stderr == "", (flags, res.stderr)


def test_quiet_and_verbose_together_are_refused():
    res = planopt("-v", "-q", "schema")
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "choose one" in res.stderr


def test_quiet_sweep_has_no_progress_bar_even_on_a_terminal(monkeypatch, capsys):
    """-q: the sweep's progress bar (drawn on stderr) is not started at all."""
    import rich.progress

    from planopt.cli import main

    def no_bar(*args, **kwargs):
        raise AssertionError("a progress bar under -q")
    monkeypatch.setattr(rich.progress, "Progress", no_bar)
    monkeypatch.setattr(sys, "argv", ["planopt", "sweep", TINY, "--budget-usd", "500:900:3", "-q"])
    with pytest.raises(SystemExit) as exit_:
        main()
    assert exit_.value.code == 0
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("delay_s", [0.0, 0.03, 0.08, 0.15])
def test_ctrl_c_at_any_moment_of_a_sweep_is_exit_130_and_one_json_object(tmp_path, delay_s):
    """Whatever the main thread is doing when the signal lands (a solve, an extraction, a
    staged write), it never answers for itself: no 'internal error', exit 130, stdout one
    JSON object (a race once let a clean-up error end the run with exit 1)."""
    proc = subprocess.Popen([*PLANOPT, "-v", "sweep", QWEN, "--budget-usd", "3000:60000:400", "--resolve-all",
                             "--json", "--out", str(tmp_path / "s.csv")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for line in proc.stderr:
        if "solver run" in line:
            break
    time.sleep(delay_s)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130, stderr[-500:]
    assert "internal error" not in stderr + stdout
    assert json.loads(stdout) == {"status": "error", "error": "interrupted"}
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow  # long (13-17 s on 2 cores); .ci/run runs it with -m slow
def test_verbose_portfolio_solve_shows_the_solver_log_on_stderr_only():
    """item 15 for portfolios: -v puts HiGHS's log on stderr; stdout stays one JSON object."""
    portfolio = INSTANCES / "portfolio-small.json"
    loud = planopt("-v", "solve", portfolio, "--json")
    assert loud.returncode == 0, loud.stderr
    json.loads(loud.stdout)
    assert "MIP has" in loud.stderr and "integer variables" in loud.stderr
    quiet = planopt("solve", portfolio, "--json")
    assert quiet.returncode == 0 and "MIP has" not in quiet.stderr
    assert json.loads(quiet.stdout)["jobs"] == json.loads(loud.stdout)["jobs"]
