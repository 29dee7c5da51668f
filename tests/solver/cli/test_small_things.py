"""The small things a newcomer hits (issue 25 item 7): file modes, flags, exit codes, help text and summaries
of the command line, each held by a test that fails when it regresses."""

import json
import os
import stat

import pytest
from typer.testing import CliRunner

from planopt.cli import app
from tests.support.common import INSTANCES

runner = CliRunner()
TINY = str(INSTANCES / "tiny.json")
MATH = str(INSTANCES / "qwen3-8b-math.json")
PILOT = str(INSTANCES / "pilot-qwen3-8b-math.csv")


def run(*args):
    """The CLI on ``args`` (each made a string)."""
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture
def umask_022():
    """Run the test under umask 022 (a usual login shell's), then restore the caller's."""
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def mode(path) -> int:
    """The permission bits of ``path``."""
    return stat.S_IMODE(os.stat(path).st_mode)


# item 2: output files get the mode the user's umask gives, not mkstemp's 0600

def test_solve_out_and_plot_files_get_the_umask_mode(tmp_path, umask_022):
    csv, parquet, png = tmp_path / "plan.csv", tmp_path / "plan.parquet", tmp_path / "risk.png"
    assert run("solve", TINY, "--no-sensitivity", "--out", csv).exit_code == 0
    assert run("solve", TINY, "--confidence", "0.5", "--scenarios", "20", "--no-sensitivity",
               "--out", parquet, "--plot", png).exit_code == 0
    assert [mode(p) for p in (csv, parquet, png)] == [0o644] * 3


def test_fit_out_and_an_other_umask(tmp_path):
    old = os.umask(0o027)
    try:
        out = tmp_path / "fitted.json"
        assert run("fit", MATH, PILOT, "--out", out, "--json").exit_code == 0
        assert mode(out) == 0o640
    finally:
        os.umask(old)


def test_a_rewritten_file_gets_the_umask_mode_too(tmp_path, umask_022):
    out = tmp_path / "portfolio.json"
    out.write_text("{}")
    os.chmod(out, 0o600)
    res = run("generate", "portfolio", "--jobs", "2", "--gpu-types", "1", "--buckets", "2", "--out", out)
    assert res.exit_code == 0, res.output
    assert mode(out) == 0o644 and json.loads(out.read_text())["kind"] == "portfolio"


# item 6: -V and --version print the version, typed anywhere like -v and -q

@pytest.mark.parametrize("argv", [["-V"], ["--version"], ["solve", TINY, "-V"]])
def test_version_flags_print_the_version(argv, monkeypatch, capsys):
    import sys
    from importlib.metadata import version
    from planopt.cli import main
    monkeypatch.setattr(sys, "argv", ["planopt", *argv])
    with pytest.raises(SystemExit) as exit_:
        main()
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"planopt {version('planopt')}"


# item 7: no internal notes in --help

def all_command_paths():
    """Every command's words (``[]`` the root, ``["generate", "portfolio"]`` a nested one)."""
    import typer.main
    root = typer.main.get_command(app)
    out = [[]]

    def walk(group, prefix):
        for name, command in group.commands.items():
            out.append([*prefix, name])
            if hasattr(command, "commands"):
                walk(command, [*prefix, name])
    walk(root, [])
    return out


INTERNAL = [r"\bissue \d", r"\bitem \d", r"\bTODO\b", r"\bFIXME\b", r"\bXXX\b", r"\btests?/", r"\bthe tests\b",
            r"\b[\w/]+\.py\b", r"\bsolver/", r"\bmodels/", "``", r"\bPLANOPT_DEBUG\b"]


@pytest.mark.parametrize("words", all_command_paths(), ids=lambda w: " ".join(w) or "planopt")
def test_help_has_no_internal_notes(words):
    import re
    res = runner.invoke(app, [*words, "--help"], env={"COLUMNS": "400"})
    assert res.exit_code == 0, res.output
    text = " ".join(res.stdout.split())
    found = [p for p in INTERNAL if re.search(p, text, flags=re.I)]
    assert not found, (words, found, text)


# item 5: evaluate exits 3 on a plan that breaks a limit, and the exit codes are listed in --help

def test_evaluate_exits_3_on_a_plan_that_breaks_a_limit(tmp_path):
    solved = json.loads(run("solve", TINY, "--json", "--no-sensitivity").stdout)
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(solved["plan"]))
    ok = run("evaluate", TINY, plan, "--json")
    assert ok.exit_code == 0 and json.loads(ok.stdout)["feasible"] is True
    data = json.loads((INSTANCES / "tiny.json").read_text())
    data["constraints"]["min_quality"] = solved["metrics"]["quality"] + 1.0
    strict = tmp_path / "strict.json"
    strict.write_text(json.dumps(data))
    for extra in ([], ["--json"]):
        res = run("evaluate", strict, plan, *extra)
        assert res.exit_code == 3, res.output
    out = json.loads(res.stdout)
    assert out["feasible"] is False and any("quality" in v for v in out["violations"])


def test_root_help_lists_the_exit_codes():
    text = " ".join(runner.invoke(app, ["--help"], env={"COLUMNS": "400"}).stdout.split())
    assert "Exit codes: 0 optimal" in text and "3 infeasible (evaluate: the plan breaks a limit" in text


# item 4: validate --json is one object with ok and errors, valid or not

def test_validate_json_says_ok_and_lists_errors(tmp_path):
    good = run("validate", TINY, "--json")
    assert good.exit_code == 0
    answer = json.loads(good.stdout)
    assert answer["ok"] is True and answer["errors"] == [] and answer["kind"] == "job"
    data = json.loads((INSTANCES / "tiny.json").read_text())
    data["hardware"]["gpus"][0]["name"] = "H10O"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    res = run("validate", bad, "--json")
    assert res.exit_code == 2
    answer = json.loads(res.stdout)   # exactly one object
    assert answer["ok"] is False and len(answer["errors"]) == 1 and "H10O" in answer["errors"][0]
    assert res.stderr.count("\n") == 1 and res.stderr.startswith("error: ")
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    answer = json.loads(run("validate", broken, "--json").stdout)
    assert answer["ok"] is False and answer["errors"]
    text = run("validate", bad)
    assert text.exit_code == 2 and text.stdout == ""


# item 11: enumerate --all --out FILE writes the plans there and prints one line, not the listing

def test_enumerate_all_out_prints_one_summary_line(tmp_path):
    import pandas as pd
    path = tmp_path / "plans.csv"
    res = run("enumerate", TINY, "--all", "--out", path)
    assert res.exit_code == 0, res.output
    frame = pd.read_csv(path)
    lines = res.stdout.strip().splitlines()
    assert len(lines) == 1, res.stdout[:2000]
    assert lines[0] == (f"wrote {len(frame):,} plans to {path}: {int(frame['fits_memory'].sum()):,} fit in memory, "
                        f"{int(frame['feasible'].sum()):,} meet every limit")
    listing = run("enumerate", TINY, "--all")
    assert len(listing.stdout.strip().splitlines()) > len(frame)   # without --out, every plan is listed
