"""Tables drawn by rich (issue 13 item 17): plain, ASCII-ruled and unwrapped off a terminal, so that
scripts and tests can read them; fitted to an 80-100-column window on a terminal, without losing a value."""

import re

import pytest

from planopt.report.tables import render_table

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
HEADER = ("limit", "value", "plan", "binding", "relaxing one step")
ROWS = [("budget_usd", "$60,000", "$35,630", "yes", "at $66,000: better by $13,740 " + "and a long explanation " * 6),
        ("min_quality", "70.00 pts", "71.20 pts", "no", "")]


def test_plain_rendering_is_one_line_per_row_ascii_ruled_and_without_escapes():
    text = render_table(ROWS, HEADER, terminal=False)
    lines = text.splitlines()
    assert len(lines) == 2 + len(ROWS)  # header, rule, one line per row: a 160-character cell is not wrapped
    assert "\x1b" not in text
    assert set(lines[1].strip()) == {"-", " "}  # the header's rule is ASCII dashes
    assert all(ord(ch) < 128 for ch in lines[0] + lines[1])
    assert lines[2].split()[:4] == ["budget_usd", "$60,000", "$35,630", "yes"]
    assert lines[2].endswith(ROWS[0][4].rstrip())
    # numbers are right-aligned under their header: the header and each value end in the same column
    end = lines[0].index("value") + len("value")
    assert lines[2].index("$60,000") + len("$60,000") == end == lines[3].index("70.00 pts") + len("70.00 pts")


def test_plain_rendering_prints_markup_and_odd_names_as_typed():
    text = render_table([("name", "[bold]cost $x^$[/bold] \\ud800")], terminal=False)
    assert "[bold]cost $x^$[/bold] \\ud800" in text


@pytest.mark.parametrize("columns", [80, 100])
def test_terminal_rendering_fits_the_window_and_keeps_every_value_whole(monkeypatch, columns):
    monkeypatch.setenv("COLUMNS", str(columns))
    rows = [("1", "$810", "42.349", "5.6 h", "0.576", "91%", "opd", "8×H100-SXM", "-"),
            ("2", "$775", "40.817", "5.0 h", "0.505", "88%", "opd", "8×H100-SXM", "-")]
    header = ("#", "cost", "quality", "wall time", "forgetting", "limits met", "method", "GPUs", "data mix")
    plain = [ANSI.sub("", line) for line in render_table(rows, header, terminal=True).splitlines()]
    assert max(len(line) for line in plain) <= columns
    for row in rows:
        line = next(line for line in plain if line.split()[:1] == [row[0]])
        assert all(cell in line for cell in row[1:-1])  # no short value is wrapped
    assert not any("data mix" in line for line in plain)  # a column empty in every row is left out
    long = [ANSI.sub("", line) for line in render_table(ROWS, HEADER, terminal=True).splitlines()]
    assert max(len(line) for line in long) <= columns and len(long) > 2 + len(ROWS)  # free text wraps instead


def test_terminal_rendering_runs_past_the_edge_rather_than_drop_a_column(monkeypatch):
    monkeypatch.setenv("COLUMNS", "40")
    header = tuple(f"column{i}" for i in range(8))
    rows = [tuple(f"value{i}" for i in range(8))]
    text = ANSI.sub("", render_table(rows, header, terminal=True))
    assert all(h in text for h in header) and all(v in text for v in rows[0])


def test_solve_report_off_a_terminal_is_plain(tmp_path):
    from typer.testing import CliRunner

    from planopt.cli import app
    from tests.support.common import INSTANCES
    res = CliRunner().invoke(app, ["solve", str(INSTANCES / "tiny.json")])
    assert res.exit_code == 0, res.stderr
    assert "\x1b" not in res.stdout and "─" not in res.stdout
    limits = res.stdout[res.stdout.index("Limits"):res.stdout.index("Cost breakdown")].splitlines()
    assert limits[1].split() == ["limit", "value", "plan", "binding", "relaxing", "one", "step"]
    assert set(limits[2].strip()) == {"-", " "}


def test_a_reader_that_stops_reading_is_no_error():
    """`planopt frontier x.json | head -1`: the pipe closes before the table is written; no 'internal error'."""
    import subprocess
    import sys

    from tests.support.common import INSTANCES
    proc = subprocess.Popen([sys.executable, "-m", "planopt.cli", "frontier", str(INSTANCES / "tiny.json")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader is gone before anything is written
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0 and err == "", err


def test_dates_stay_left_aligned_and_numbers_go_right():
    text = render_table([("a", "2025-10", "$6.880"), ("b", "2026-11-30", "$12.500")], ("gpu", "as of", "$/GPU-h"),
                        terminal=False)
    lines = text.splitlines()
    assert lines[2].index("2025-10") == lines[3].index("2026-11-30")
    assert lines[2].index("$6.880") + 6 == lines[3].index("$12.500") + 7


def test_a_wide_terminal_table_says_its_shared_columns_once(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    header = ("#", "cost", "quality", "forgetting", "P10-P90 of quality", "method", "GPUs", "steps", "samples", "teacher")
    rows = [(str(n), f"${700 + n}", f"4{n}.000", "0.500", "39.592–51.627", "opd", "8×H100-SXM", "1000", s, "fp8")
            for n, s in enumerate(("8-8-8", "8-8-4", "8-4-4"), 1)]
    lines = [ANSI.sub("", line) for line in render_table(rows, header, terminal=True).splitlines()]
    assert max(len(line) for line in lines) <= 80
    said = " ".join(lines[lines.index(next(l for l in lines if "every row:" in l)):]).split()
    assert " ".join(said) == ("every row: forgetting 0.500 · P10-P90 of quality 39.592–51.627 · method opd · "
                              "GPUs 8×H100-SXM · steps 1000 · teacher fp8")
    assert all(s in "\n".join(lines) for s in ("8-8-8", "8-8-4", "8-4-4"))  # the column that changes stays
    plain = render_table(rows, header, terminal=False)
    assert "every row" not in plain and plain.count("8×H100-SXM") == 3  # scripts get every cell in place
    narrow = render_table(rows[:1] + rows[:1], header[:3], terminal=True)
    assert "every row" not in narrow  # a table that fits keeps its columns
