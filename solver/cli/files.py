"""Files a command writes: every path checked before any work, all of them written or none.

A command opens ``with OutputFiles() as files``, checks each path it was given
(``files.check(flag, path, suffixes)``) before it solves anything, then hands
each result to ``files.write(path, writer)``. A writer writes a *staging* file
in the destination's own folder (same suffix, so matplotlib and pandas pick the
format from it); only when the block ends normally are the staging files renamed
over their destinations (``os.replace``, atomic within a folder) and given the
mode the user's umask gives a new file (``publish``). An error or a
Ctrl-C anywhere in the block removes the staging files, so no half-written file
and no first-of-two outputs is left behind. Writing is the step that can fail
(a full disk, a bad value); the renames that follow it do not allocate.

The checks, each one line naming the flag: the suffix is one the writer can
write; the path is not a directory and not a device or pipe; its folder exists
(or the first existing ancestor is named, when that is a file); and a file can
really be created in that folder (a probe file, created and removed: this also
catches a read-only file system and names too long, which permission bits do not).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Callable, Iterable, Optional

from planopt.errors import InputError
from planopt.messages import shorten

TABLE_SUFFIXES = (".csv", ".parquet")
PLOT_SUFFIXES = (".png", ".svg", ".pdf")
JSON_SUFFIXES = (".json",)

# Every staging file not yet renamed or removed, so that Ctrl-C (interrupt.py) can remove them.
_STAGED: set[Path] = set()


def discard_all_staged() -> None:
    """Remove every staging file of this process, and the temporary files its writers left beside them."""
    for staging in list(_STAGED):
        for leftover in staging.parent.glob(f".{staging.name}.*"):  # plots.save_figure's own temporary file
            leftover.unlink(missing_ok=True)
        staging.unlink(missing_ok=True)
        _STAGED.discard(staging)


def check_output_path(flag: str, path: Path, suffixes: Iterable[str]) -> Path:
    """``path`` if a file with one of ``suffixes`` can be written there; else InputError naming ``flag``."""
    path = Path(path)
    shown = shorten(str(path))
    suffixes = tuple(suffixes)
    if path.suffix.lower() not in suffixes:
        names = ", ".join(suffixes[:-1]) + (" or " if len(suffixes) > 1 else "") + suffixes[-1]
        raise InputError(f"{flag}: expected a {names} file name, got {shown}")
    if path.is_dir():
        raise InputError(f"{flag}: {shown} is a directory, expected a file")
    if path.exists() and not path.is_file():
        raise InputError(f"{flag}: {shown} is not a regular file (a device or a pipe); name a file")
    parent = path.parent
    if not parent.is_dir():
        existing = next((a for a in (parent, *parent.parents) if a.exists()), None)
        if existing is not None and not existing.is_dir():
            raise InputError(f"{flag}: {shorten(str(existing))} is a file, not a folder, so {shown} cannot be written")
        raise InputError(f"{flag}: folder {shorten(str(parent))} does not exist")
    try:
        fd, probe = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".probe", dir=parent)
    except OSError as exc:
        raise InputError(f"{flag}: cannot write {shown}: {exc.strerror or exc}") from None
    os.close(fd)
    os.unlink(probe)
    return path


class OutputFiles:
    """The output files of one command, checked up front and written all-or-nothing (see the module's doc)."""

    def __init__(self) -> None:
        self._checked: dict[Path, str] = {}
        self._staged: list[tuple[Path, Path]] = []   # (staging file, destination)

    def check(self, flag: str, path: Optional[Path], suffixes: Iterable[str]) -> Optional[Path]:
        """Check ``path`` (None: nothing to check) and remember it; two flags may not name one file."""
        if path is None:
            return None
        path = check_output_path(flag, path, suffixes)
        key = Path(os.path.abspath(path))
        if key in self._checked:
            raise InputError(f"{flag}: {shorten(str(path))} is also given to {self._checked[key]}; name two files")
        self._checked[key] = flag
        return path

    def write(self, path: Optional[Path], writer: Callable[[Path], object]) -> None:
        """Have ``writer`` write a staging file for ``path`` (renamed into place when the block ends)."""
        if path is None:
            return
        path = Path(path)
        fd, staging = tempfile.mkstemp(prefix=f".{path.name}.", suffix=f".part{path.suffix}", dir=path.parent)
        os.close(fd)
        self._staged.append((Path(staging), path))
        _STAGED.add(Path(staging))
        try:
            writer(Path(staging))
        except OSError as exc:
            raise InputError(f"cannot write {shorten(str(path))}: {exc.strerror or exc}") from None

    def commit(self) -> None:
        """Rename every staging file over its destination, with the mode the user's umask gives."""
        staged, self._staged = self._staged, []
        for staging, path in staged:
            publish(staging, path)
            _STAGED.discard(staging)

    def discard(self) -> None:
        """Delete every staging file without touching the destinations."""
        staged, self._staged = self._staged, []
        for staging, _ in staged:
            staging.unlink(missing_ok=True)
            _STAGED.discard(staging)

    def __enter__(self) -> "OutputFiles":
        return self

    def __exit__(self, kind, exc, tb) -> bool:
        import typer
        # an exit with a code is a finished command (calibrate exits 1 when a figure fails, and still writes
        # its table); an exception, an input error or Ctrl-C is not
        if kind is None or issubclass(kind, (typer.Exit, SystemExit)):
            self.commit()
        else:
            self.discard()
        return False


def new_file_mode() -> int:
    """The mode a plain ``open(path, "w")`` gives a new file: ``0o666`` less the process's umask."""
    mask = os.umask(0o022)  # reading the umask means setting it: put it straight back
    os.umask(mask)
    return 0o666 & ~mask


def publish(staging: Path, path: Path) -> None:
    """Rename ``staging`` over ``path`` and give it the mode of a file the user creates (``new_file_mode``):
    ``tempfile.mkstemp`` makes its files 0600, which would leave every output readable by its owner only."""
    os.replace(staging, path)
    os.chmod(path, new_file_mode())


def write_text(path: Path, text: str) -> None:
    """A writer for ``OutputFiles.write``: ``text`` as UTF-8."""
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def table_writer(frame) -> Callable[[Path], None]:
    """A writer for ``OutputFiles.write``: ``frame`` as CSV or Parquet by the path's suffix."""
    def write(path: Path) -> None:
        if path.suffix.lower() == ".csv":
            frame.to_csv(path, index=False)
        else:
            frame.to_parquet(path, index=False)
    return write
