"""Tables for people, drawn by rich: one function, :func:`render_table`, for every table the CLI prints.

Two renderings, chosen by where stdout goes:

- **not a terminal** (a pipe, a file, typer's CliRunner): plain text that scripts and tests
  can read: no colour, no escape codes, ASCII only in the rules (a line of dashes under
  the header, columns apart by spaces, no frame), never wrapped: one row is one line.
- **a terminal**: a bold header over a light rule, fitted to the terminal's width: headers and
  long free-text cells wrap inside their column, short values never do, columns empty in every
  row are left out and, in a table wider than the window, the columns that hold one value in
  every row are said once beneath it, so an 80-100-column window stays readable; colour unless
  ``NO_COLOR``.

rich is imported here only, and only when a table is drawn, so that ``planopt solve --json``,
``schema`` and ``validate`` never load it (``tests/solver/cli/test_lean_cli.py``).
"""

from __future__ import annotations

import re
import shutil
import sys
from typing import Any, Optional, Sequence

from planopt.verbosity import is_terminal

DATE = re.compile(r"^\d{4}-\d{2}(-\d{2})?$")
# Columns are this many characters apart (a blank divider and one space of padding).
GAP = 2
# On a terminal, a cell up to this long is never wrapped; longer ones (free text) may be.
LONGEST_UNWRAPPED_CELL = 24
# Wide enough that no plain table is ever wrapped.
UNWRAPPED_WIDTH = 100_000


def stdout_is_terminal() -> bool:
    """Whether stdout is a terminal (tables are then drawn for people)."""
    return is_terminal(sys.stdout)


def numeric(text: str) -> bool:
    """A cell that reads as a number (``$1,200``, ``-3.5``, ``12.0 h``, ``80%``): right-aligned.
    A date (``2026-03``, ``2026-11-30``) is not."""
    return (bool(text) and (text[0].isdigit() or text[0] in "$-+") and any(ch.isdigit() for ch in text)
            and not DATE.match(text))


def _right_aligned(cells: list[list[str]], column: int) -> bool:
    """A column after the first whose every filled cell is a number."""
    values = [row[column] for row in cells if column < len(row) and row[column] not in ("", "-")]
    return column > 0 and bool(values) and all(numeric(v) for v in values)


def render_table(rows: Sequence[Sequence[Any]], header: Optional[Sequence[str]] = None, indent: str = "  ",
                 terminal: Optional[bool] = None) -> str:
    """``rows`` (and ``header``) as text, each line starting with ``indent``.

    ``terminal`` picks the rendering (default: whether stdout is a terminal)."""
    cells = [[str(c) for c in row] for row in rows]
    if not cells and not header:
        return ""
    terminal = stdout_is_terminal() if terminal is None else terminal
    columns = max([len(header or ())] + [len(r) for r in cells])
    head = list(header or ()) + [""] * (columns - len(header or ()))
    cells = [row + [""] * (columns - len(row)) for row in cells]
    keep = [i for i in range(columns) if not (terminal and header and i and _empty(cells, i))]
    shared = _shared_columns(cells, head, keep, _window(indent)) if terminal and header else []
    keep = [i for i in keep if i not in shared]
    from rich.table import Table
    from rich.text import Text
    table = Table(box=_box(terminal), show_header=bool(header), show_edge=False, pad_edge=False, padding=(0, 1),
                  collapse_padding=True, header_style="bold" if terminal else "", expand=False)
    widths = _fitted_widths(cells, head, keep, _window(indent)) if terminal else [None] * len(keep)
    for i, width in zip(keep, widths):
        justify = "right" if header and _right_aligned(cells, i) else "left"
        table.add_column(Text(head[i]), justify=justify, no_wrap=not terminal, overflow="fold", width=width)
    for row in cells:
        table.add_row(*(Text(row[i]) for i in keep))
    text = _draw(table, terminal, indent)
    if shared:
        import textwrap
        said = "every row: " + " · ".join(f"{head[i]} {cells[0][i]}" for i in shared)
        text += "\n" + textwrap.fill(said, width=_window(indent) + len(indent), initial_indent=indent,
                                     subsequent_indent=indent + "  ", break_on_hyphens=False, break_long_words=False)
    return text


def _shared_columns(cells: list[list[str]], head: list[str], keep: list[int], window: int) -> list[int]:
    """On a terminal, when a table is wider than the window: its columns (after the first) that hold
    the same value in every one of two or more rows, said once under the table instead
    (the plan parts no point of a frontier changes, say)."""
    natural = sum(max([len(head[i])] + [len(row[i]) for row in cells]) for i in keep) + GAP * (len(keep) - 1)
    if natural <= window or len(cells) < 2:
        return []
    return [i for i in keep[1:] if len({row[i] for row in cells}) == 1]


def _empty(cells: list[list[str]], column: int) -> bool:
    """A column with no value in any row (say, the SFT data mix of OPD plans): left out on a terminal."""
    return all(row[column] in ("", "-") for row in cells)


def _window(indent: str) -> int:
    return shutil.get_terminal_size().columns - len(indent)


def _fitted_widths(cells: list[list[str]], head: list[str], keep: list[int], window: int) -> list[int]:
    """Column widths for a terminal ``window`` wide: each column's natural width, and when they do not fit,
    the widest column narrowed one character at a time, never below :func:`_narrowest` (a table
    whose narrowest columns do not fit runs past the edge rather than lose a cell)."""
    natural = [max([len(head[i])] + [len(row[i]) for row in cells]) for i in keep]
    floor = [_narrowest(cells, head, i) for i in keep]
    widths = list(natural)
    room = window - GAP * (len(keep) - 1)
    while sum(widths) > room:
        shrinkable = [k for k in range(len(widths)) if widths[k] > floor[k]]
        if not shrinkable:
            break
        widest = max(shrinkable, key=lambda k: widths[k])
        widths[widest] -= 1
    return widths


def _narrowest(cells: list[list[str]], head: list[str], column: int) -> int:
    """How narrow a column may get on a terminal: its values whole (up to a point), its header's words whole."""
    value = min(max((len(row[column]) for row in cells), default=0), LONGEST_UNWRAPPED_CELL)
    return max([value] + [len(word) for word in head[column].split()])


def _box(terminal: bool):
    from rich import box
    if terminal:
        return box.SIMPLE_HEAD
    # Left, rule, divider, right for: top, head, head rule, mid, row, foot rule, foot, bottom. A blank
    # divider plus one space of (collapsed) padding puts columns two spaces apart; dashes rule the header.
    return box.Box("    \n"
                   "    \n"
                   " -  \n"
                   "    \n"
                   "    \n"
                   " -  \n"
                   "    \n"
                   "    \n", ascii=True)


def _draw(table, terminal: bool, indent: str) -> str:
    import io

    from rich.console import Console
    buffer = io.StringIO()
    console = Console(file=buffer, width=UNWRAPPED_WIDTH, force_terminal=terminal, no_color=not terminal or None,
                      color_system="auto" if terminal else None, highlight=False, emoji=False, legacy_windows=False,
                      soft_wrap=False)
    console.print(table)
    lines = buffer.getvalue().rstrip("\n").split("\n")
    return "\n".join((indent + line).rstrip() for line in lines)
