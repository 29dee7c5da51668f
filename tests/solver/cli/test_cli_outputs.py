"""Output files (issue 13 items 13 and 23): every path is checked before any solve (one line, exit 2),
files are written whole or not at all, and `--out FILE.csv|.parquet` exists on solve, enumerate --all,
frontier, sweep and calibrate."""

import json
import os

import pandas as pd
import pytest
from typer.testing import CliRunner

from planopt.cli import app
from planopt.cli.files import OutputFiles, check_output_path
from planopt.errors import InputError
from tests.support.common import INSTANCES

runner = CliRunner()
TINY = str(INSTANCES / "tiny.json")


def run(*args):
    return runner.invoke(app, [str(a) for a in args])


def no_solve(monkeypatch):
    """Make any model build fail loudly: a command that checks its paths first never gets there."""
    import planopt.job.model

    def refuse(*args, **kwargs):
        raise AssertionError("the command built a model before checking its output paths")
    monkeypatch.setattr(planopt.job.model.PlanModel, "__init__", refuse)


def bad_paths(tmp_path):
    (tmp_path / "folder.csv").mkdir()
    (tmp_path / "file").write_text("x")
    return {"directory": (tmp_path / "folder.csv", "is a directory"),
            "parent is a file": (tmp_path / "file" / "out.csv", "is a file, not a folder"),
            "missing folder": (tmp_path / "missing" / "out.csv", "does not exist"),
            "wrong suffix": (tmp_path / "out.txt", "expected a .csv"),
            "pipe": (fifo(tmp_path / "pipe.csv"), "not a regular file"),
            "unwritable file system": ("/proc/out.csv", "cannot write")}


def fifo(path):
    os.mkfifo(path)
    return path


COMMANDS = {"solve": ["solve", TINY], "enumerate --all": ["enumerate", TINY, "--all"],
            "frontier": ["frontier", TINY, "--x", "cost_usd", "--y", "quality"],
            "sweep": ["sweep", TINY, "--budget-usd", "500:900:3"]}


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("case", ["directory", "parent is a file", "missing folder", "wrong suffix", "pipe", "unwritable file system"])
def test_a_bad_out_path_is_refused_before_any_solve(tmp_path, monkeypatch, command, case):
    path, why = bad_paths(tmp_path)[case]
    no_solve(monkeypatch)
    res = run(*COMMANDS[command], "--out", path)
    assert res.exit_code == 2, res.output
    assert res.stderr.count("\n") == 1 and res.stderr.startswith("error: --out: ") and why in res.stderr, res.stderr


def test_a_device_is_not_an_output_file():
    with pytest.raises(InputError, match="not a regular file"):
        check_output_path("--out", "/dev/full", [""])


def test_a_failing_second_output_leaves_nothing_behind(tmp_path, monkeypatch):
    """`sweep --out good.csv --plot chart.png`: the chart fails after the table was written; neither stays."""
    import planopt.report.plots

    good = tmp_path / "good.csv"
    good.write_text("the previous table\n")

    def broken(*args, **kwargs):
        raise RuntimeError("the plotter broke")
    monkeypatch.setattr(planopt.report.plots, "plot_sweep", broken)
    res = run("sweep", TINY, "--budget-usd", "500:900:3", "--out", good, "--plot", tmp_path / "chart.png")
    assert res.exit_code == 1 and "the plotter broke" in res.stderr
    assert good.read_text() == "the previous table\n"  # untouched: replaced whole or not at all
    assert sorted(p.name for p in tmp_path.iterdir()) == ["good.csv"]  # no staging file, no chart


def test_outputs_are_renamed_into_place_only_when_the_block_ends(tmp_path):
    first, second = tmp_path / "a.csv", tmp_path / "b.csv"
    with pytest.raises(KeyboardInterrupt):
        with OutputFiles() as files:
            files.check("--out", first, [".csv"])
            files.check("--also", second, [".csv"])
            files.write(first, lambda p: p.write_text("a\n"))
            assert not first.exists()  # staged beside it, not yet in place
            raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []
    with OutputFiles() as files:
        files.write(files.check("--out", first, [".csv"]), lambda p: p.write_text("a\n"))
    assert first.read_text() == "a\n" and len(list(tmp_path.iterdir())) == 1


def test_one_file_for_two_flags_is_refused(tmp_path):
    files = OutputFiles()
    files.check("--out", tmp_path / "x.csv", [".csv"])
    with pytest.raises(InputError, match="also given to --out"):
        files.check("--other", tmp_path / "x.csv", [".csv"])


def test_long_paths_are_shortened_in_messages(tmp_path):
    res = run("solve", TINY, "--out", tmp_path / ("x" * 5000 + ".txt"))
    assert res.exit_code == 2 and len(res.stderr) < 400 and "more characters" in res.stderr


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_solve_out_writes_the_plan_its_metrics_and_breakdowns(tmp_path, suffix):
    path = tmp_path / f"plan{suffix}"
    res = run("solve", TINY, "--json", "--no-sensitivity", "--out", path)
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    frame = pd.read_csv(path) if suffix == ".csv" else pd.read_parquet(path)
    assert len(frame) == 1
    row = frame.iloc[0]
    stage = out["plan"]["stages"][0]
    assert row["status"] == "optimal" and row["gpu"] == stage["gpu"] and row["gpu_count"] == stage["gpu_count"]
    assert row["samples_per_prompt"] == "-".join(map(str, stage["samples_per_prompt"]))
    assert row["cost_usd"] == pytest.approx(out["metrics"]["cost_usd"], rel=1e-12)
    for part, value in out["cost_breakdown_usd"].items():
        assert row[f"cost_usd.{part}"] == pytest.approx(value, rel=1e-12, abs=1e-12)
    for part, value in out["hours_breakdown"].items():
        assert row[f"hours.{part}"] == pytest.approx(value, rel=1e-12, abs=1e-12)
    if suffix == ".parquet":
        assert str(frame["gpu_count"].dtype) == "Int64"


def test_solve_out_on_an_infeasible_job_writes_its_status(tmp_path):
    path = tmp_path / "plan.csv"
    res = run("solve", TINY, "--min-quality", "99", "--no-sensitivity", "--out", path)
    assert res.exit_code == 3
    assert pd.read_csv(path)["status"].tolist() == ["infeasible"]


def test_enumerate_all_out_lists_every_plan(tmp_path):
    path = tmp_path / "plans.parquet"
    res = run("enumerate", TINY, "--all", "--json", "--out", path)
    assert res.exit_code == 0, res.output
    plans = json.loads(res.stdout)["plans"]
    frame = pd.read_parquet(path)
    assert len(frame) == len(plans)
    assert frame["fits_memory"].tolist() == [p["fits_memory"] for p in plans]
    assert frame.loc[~frame["fits_memory"], "cost_usd"].isna().all()  # a plan that cannot run does no work
    assert frame.loc[frame["fits_memory"], "cost_usd"].tolist() == pytest.approx(
        [p["metrics"]["cost_usd"] for p in plans if p["fits_memory"]], rel=1e-12)


def test_enumerate_out_needs_all(tmp_path):
    res = run("enumerate", TINY, "--out", tmp_path / "x.csv")
    assert res.exit_code == 2 and "--out: needs --all" in res.stderr


def test_calibrate_out_writes_every_row(tmp_path):
    path = tmp_path / "calibration.csv"
    res = run("calibrate", INSTANCES / "calibration", "--json", "--no-intervals", "--out", path)
    assert res.exit_code in (0, 1), res.output
    rows = json.loads(res.stdout)
    frame = pd.read_csv(path)
    assert len(frame) == len(rows) and frame["id"].tolist() == [r["id"] for r in rows]


def test_no_staging_file_survives_a_successful_run(tmp_path):
    res = run("frontier", TINY, "--x", "cost_usd", "--y", "quality", "--out", tmp_path / "f.csv", "--plot", tmp_path / "f.png")
    assert res.exit_code == 0, res.output
    assert sorted(os.listdir(tmp_path)) == ["f.csv", "f.png"]


def test_portfolio_solve_out_has_one_row_per_job_and_checks_paths_first(tmp_path, monkeypatch):
    portfolio = str(INSTANCES / "portfolio-small.json")
    path = tmp_path / "jobs.parquet"
    res = run("solve", portfolio, "--json", "--out", path)
    assert res.exit_code == 0, res.output
    jobs = json.loads(res.stdout)["jobs"]
    frame = pd.read_parquet(path)
    assert frame["job"].tolist() == [j["name"] for j in jobs]
    import planopt.portfolio.solve

    def refuse(*args, **kwargs):
        raise AssertionError("solved before checking the output paths")
    monkeypatch.setattr(planopt.portfolio.solve, "solve_portfolio", refuse)
    res = run("solve", portfolio, "--out", tmp_path / "missing" / "jobs.csv")
    assert res.exit_code == 2 and res.stderr.startswith("error: --out: folder")


def test_generate_checks_its_out_path_first(tmp_path):
    res = run("generate", "portfolio", "--jobs", 2, "--out", tmp_path / "missing" / "p.json")
    assert res.exit_code == 2 and res.stderr.startswith("error: --out: folder")
    res = run("generate", "portfolio", "--jobs", 2, "--out", tmp_path / "p.json")
    assert res.exit_code == 0 and json.loads((tmp_path / "p.json").read_text())["kind"] == "portfolio"
    assert [p.name for p in tmp_path.iterdir()] == ["p.json"]


@pytest.mark.parametrize("flag, value", [("--jobs", "100000"), ("--buckets", "100000")])
def test_generate_refuses_a_portfolio_too_big_to_plan_at_once(tmp_path, flag, value):
    """issue 13 item 26: `generate portfolio --jobs 100000` ran for minutes with no word."""
    out = tmp_path / "p.json"
    res = CliRunner().invoke(app, ["generate", "portfolio", flag, value, "--out", str(out)])
    assert res.exit_code == 2
    assert res.output.strip().startswith(f"error: {flag}: at most") and res.output.strip().count("\n") == 0
    assert not out.exists()


def test_solve_out_json_is_the_object_json_prints_and_export_reads(tmp_path):
    """``solve --out plan.json`` writes what ``solve --json`` prints; ``export`` takes it; ``--format`` with a .json
    --out and a portfolio's .json --out are refused in one line."""
    res = run("solve", TINY, "--out", tmp_path / "plan.json", "--no-sensitivity")
    assert res.exit_code == 0, res.output
    printed = json.loads(run("solve", TINY, "--json", "--no-sensitivity").stdout)
    saved = json.loads((tmp_path / "plan.json").read_text())
    assert saved["plan"] == printed["plan"] and saved["metrics"] == printed["metrics"]
    exported = run("export", tmp_path / "plan.json", "--instance", TINY, "--to", "skypilot", "--out", tmp_path / "task.yaml")
    assert exported.exit_code == 0 and (tmp_path / "task.yaml").read_text().strip(), exported.output
    for extra in (["--format", "focus"], ["--format", "plan"]):
        bad = run("solve", TINY, "--out", tmp_path / "again.json", *extra)
        assert bad.exit_code == 2 and bad.stderr.count("\n") == 1 and bad.stderr.startswith("error: --format: "), bad.stderr
    portfolio = run("solve", INSTANCES / "portfolio-providers.json", "--out", tmp_path / "p.json")
    assert portfolio.exit_code == 2 and "expected a .csv or .parquet" in portfolio.stderr, portfolio.stderr
