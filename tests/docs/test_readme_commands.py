"""Every `planopt` command shown in the README's shell blocks runs as written, in a fresh shell: each names
the program in the virtual environment the set-up command makes (`.venv/bin/planopt`), so none needs the
environment activated first (issue 25 item 7, item 1). The README opens with exactly two commands: set up
and solve a shipped instance, and run the tests.

Each command is taken from a ```bash block of README.md (the part after the
last `&&` of a chained line) and run through the CLI in a scratch folder that
sees the repository's `instances/`, so files the examples write (plots, CSV)
land there. An example may end infeasible (exit 3) to show an explanation;
none may end in bad input (2), an internal error (1) or a time limit (4).
A command that names a Dask scheduler (``--scheduler tcp://HOST:PORT``) runs
against a real local cluster started at that address, as the README starts one.
A block that starts with `planopt init` is a walk-through (issue 25 item 1): its commands run in order in one
folder, each on the files the ones before it wrote; at most three of them reach a solved plan, and the first block
of the README after its two commands goes from `init` through `solve` to `export` (issue 25's first screen).
"""

import contextlib

import re
import shlex

import pytest
from typer.testing import CliRunner

from planopt.cli import app

from tests.support.common import ROOT

README = (ROOT / "README.md").read_text()
PROGRAM = ".venv/bin/planopt"
SHELL_BLOCKS = re.findall(r"```(?:bash|sh)\n(.*?)```", README, flags=re.S)


def block_commands(block: str) -> list[str]:
    """The planopt commands of one shell block (the part after the last `&&` of each line)."""
    out = []
    for line in block.splitlines():
        command = line.split("&&")[-1].strip()
        if command.split(" ", 1)[0] == PROGRAM:
            out.append(command)
    return out


def is_walk_through(commands: list[str]) -> bool:
    """A block that starts by writing a job with `planopt init`: its commands depend on each other."""
    return bool(commands) and shlex.split(commands[0])[1:2] == ["init"]


BLOCKS = [block_commands(b) for b in re.findall(r"```bash\n(.*?)```", README, flags=re.S)]
WALK_THROUGHS = [b for b in BLOCKS if is_walk_through(b)]
COMMANDS = [c for b in BLOCKS if not is_walk_through(b) for c in b]


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
    assert WALK_THROUGHS, "README.md lost its walk-through (`planopt init`, `solve`, `export`)"


def test_the_first_screen_goes_from_init_through_solve_to_export():
    """The first shell block after the two commands is the walk-through ``init`` -> ``solve`` -> ``export``."""
    after = README[README.index("## The two commands"):]
    after = after[after.index("\n## ", 1):]
    first = block_commands(re.findall(r"```bash\n(.*?)```", after, flags=re.S)[0])
    assert [shlex.split(c)[1] for c in first] == ["init", "solve", "export"], first


def test_every_shell_command_runs_in_a_fresh_shell():
    """No command of a shell block calls a program of the virtual environment by its bare name (`planopt`,
    `pytest`, `dask`, `pip`): a fresh shell has not activated `.venv`, so each is `.venv/bin/NAME`."""
    bare = []
    for block in SHELL_BLOCKS:
        for line in block.splitlines():
            for command in re.split(r"&&|&|\|", line):
                words = command.split()
                if words and words[0] in ("planopt", "pytest", "dask", "pip", "python"):
                    bare.append(line)
    assert bare == [], bare


def test_the_readme_opens_with_two_commands_set_up_and_solve_then_test():
    head = README[README.index("## The two commands"):]
    head = head[:head.index("\n## ", 1)]
    blocks = re.findall(r"```bash\n(.*?)```", head, flags=re.S)
    assert [b.strip() for b in blocks] == [
        'python3 -m venv .venv && .venv/bin/pip install -e ".[test]" && .venv/bin/planopt solve instances/qwen3-8b-math.json',
        ".venv/bin/pytest -q"]


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


@pytest.mark.parametrize("commands", WALK_THROUGHS, ids=[f"walk-through{n}" for n in range(len(WALK_THROUGHS))])
def test_a_walk_through_reaches_a_solved_plan_in_three_commands(commands, tmp_path, monkeypatch):
    """`init`, then the commands of the block in one folder, in order: each succeeds; at most three reach `solve`,
    which prints the optimum the README states beneath the block; what follows (`export`) reads the files `solve`
    wrote."""
    names = [shlex.split(c)[1] for c in commands]
    assert "solve" in names and names.index("solve") < 3, commands
    solve = commands[names.index("solve")]
    (tmp_path / "instances").symlink_to(ROOT / "instances")
    monkeypatch.chdir(tmp_path)
    for command in commands:
        result = CliRunner().invoke(app, shlex.split(command)[1:])
        assert result.exit_code == 0, (command, result.exit_code, result.stderr, result.stdout[-2000:])
        assert result.stdout.strip(), command
    block_end = README.index(commands[-1]) + len(commands[-1])
    solve_args = shlex.split(solve)[1:]
    saved = None
    if "--out" in solve_args:  # the answer is read again below, on stdout, and must be what --out saved
        at = solve_args.index("--out")
        saved = solve_args[at + 1]
        del solve_args[at:at + 2]
    stated = re.search(r"The optimum: (?P<method>RL|SFT|OPD) on (?P<count>\d+) × (?P<gpu>[\w-]+) for (?P<steps>[\d,]+) "
                       r"steps, \$(?P<cost>[\d,]+) in (?P<hours>[\d,]+) h, quality (?P<quality>\d+\.\d+)", README[block_end:])
    assert stated, "the walk-through states no optimum beneath its block"
    import json
    answer = json.loads(CliRunner().invoke(app, [*solve_args, "--json", "--no-sensitivity"]).stdout)
    stage, metrics = answer["plan"]["stages"][0], answer["metrics"]
    assert (stage["method"], stage["gpu_count"], stage["gpu"], stage["steps"]) == (
        stated["method"].lower(), int(stated["count"]), stated["gpu"], int(stated["steps"].replace(",", "")))
    assert f"{metrics['cost_usd']:,.0f}" == stated["cost"] and f"{metrics['wall_hours']:,.0f}" == stated["hours"]
    assert f"{metrics['quality']:.2f}" == stated["quality"]
    if saved is not None and saved.endswith(".json"):
        assert json.loads((tmp_path / saved).read_text())["plan"] == answer["plan"]
    for command in commands[names.index("solve") + 1:]:
        args = shlex.split(command)
        if "--out" in args:
            assert (tmp_path / args[args.index("--out") + 1]).stat().st_size > 0, command
