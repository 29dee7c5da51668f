"""What every test folder shares: the repository's paths, the seed split of the default run, and the
one-line refusal of ``planopt solve``."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
INSTANCES = ROOT / "instances"


def split_seeds(seeds, default: int) -> list:
    """Random-instance seeds for ``pytest.mark.parametrize``: the first ``default`` run in the default
    ``pytest -q``, the rest are marked ``slow`` (``.ci/run`` runs them with ``-m slow``), so the default run
    stays well under 10 minutes on 2 cores while CI still holds every seed to its oracle."""
    from _pytest.mark.structures import ParameterSet
    seeds = list(seeds)

    def slow(s):  # a seed already given marks (an xfail) keeps them
        if isinstance(s, ParameterSet):
            return pytest.param(*s.values, marks=[*s.marks, pytest.mark.slow], id=s.id)
        return pytest.param(s, marks=pytest.mark.slow)
    return seeds[:default] + [slow(s) for s in seeds[default:]]


def slow_cases(values, heavy) -> list:
    """``values`` for ``pytest.mark.parametrize`` with those for which ``heavy(value)`` is true marked ``slow``: the
    default run leaves them to ``.ci/run``'s ``-m slow`` (each names its measured seconds where it is used)."""
    return [pytest.param(v, marks=pytest.mark.slow) if heavy(v) else v for v in values]


def refused(tmp_path, data: dict, field: str, *options: str) -> str:
    """``planopt solve`` on ``data`` (written to a file, with ``options``) exits 2 with one line naming ``field``;
    returns that line."""
    import json
    from typer.testing import CliRunner
    from planopt.cli import app
    f = tmp_path / "refused.json"
    f.write_text(json.dumps(data))
    res = CliRunner().invoke(app, ["solve", str(f), *options])
    assert res.exit_code == 2, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and field in lines[0], res.output
    return lines[0]
