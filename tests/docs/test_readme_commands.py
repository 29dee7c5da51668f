"""Every `planopt` command shown in the README's shell blocks runs as written.

Each command is taken from a ```bash block of README.md (the part after the
last `&&` of a chained line) and run through the CLI in a scratch folder that
sees the repository's `instances/`, so files the examples write (plots, CSV)
land there. An example may end infeasible (exit 3) to show an explanation;
none may end in bad input (2), an internal error (1) or a time limit (4).
A command that names a Dask scheduler (``--scheduler tcp://HOST:PORT``) runs
against a real local cluster started at that address, as the README starts one.
"""

import contextlib

import re
import shlex

import pytest
from typer.testing import CliRunner

from planopt.cli import app

from tests.support.common import ROOT

README = (ROOT / "README.md").read_text()
PROGRAMS = ("planopt", ".venv/bin/planopt")


def readme_commands() -> list[str]:
    out = []
    for block in re.findall(r"```bash\n(.*?)```", README, flags=re.S):
        for line in block.splitlines():
            command = line.split("&&")[-1].strip()
            if command.split(" ", 1)[0] in PROGRAMS:
                out.append(command)
    return out


COMMANDS = readme_commands()


@contextlib.contextmanager
def scheduler_for(args: list[str]):
    """A local Dask cluster at the address a command's --scheduler names (none otherwise)."""
    if "--scheduler" not in args:
        yield
        return
    from distributed import LocalCluster
    host, port = args[args.index("--scheduler") + 1].removeprefix("tcp://").rsplit(":", 1)
    with LocalCluster(host=host, scheduler_port=int(port), n_workers=2, threads_per_worker=1,
                      processes=True, dashboard_address=None):
        yield


def test_the_readme_shows_commands():
    assert len(COMMANDS) >= 4, COMMANDS


@pytest.mark.parametrize("command", COMMANDS)
def test_readme_command_runs_as_written(command, tmp_path, monkeypatch):
    (tmp_path / "instances").symlink_to(ROOT / "instances")
    monkeypatch.chdir(tmp_path)
    args = shlex.split(command)[1:]
    with scheduler_for(args):
        result = CliRunner().invoke(app, args)
    assert result.exit_code in (0, 3), (command, result.exit_code, result.stderr, result.stdout[-2000:])
    assert result.stdout.strip(), command
    assert "internal error" not in result.stderr
