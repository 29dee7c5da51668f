"""Files a request may name: shipped instances by name, and paths only under the operator's folder.

A service must never read a file because a request says so: a portfolio whose
jobs are given by path (``"instance": "jobs/a.json"``) is read only when the
path, with every ``..`` and symlink resolved, lies under ``--allow-dir``.
Without ``--allow-dir`` no path is read at all.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Optional

from planopt.errors import InputError, read_json
from planopt.messages import shorten

# The repository's instances/ folder (an editable install, or a checkout on sys.path).
SHIPPED_DIR = Path(__file__).resolve().parents[2] / "instances"
# A shipped name is a file stem: letters, digits, dots, dashes, underscores; never a path.
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,100}$")


# The longest path a request may name, and its longest part: Linux's PATH_MAX and NAME_MAX. Longer
# ones cannot name a file; they are refused as bad input (400) before the file system is asked.
MAX_PATH_CHARS = 4096
MAX_PART_CHARS = 255


class PathRefused(InputError):
    """A path outside the allowed folder (the service answers 403)."""


class NotFound(Exception):
    """A shipped instance, case, file or job that does not exist (the service answers 404 with this line).
    Only this is a 404: a ``LookupError`` (``KeyError``, ``IndexError``) from inside the library is an
    internal error (500, a fixed sentence)."""


def shipped_names(folder: Path = SHIPPED_DIR) -> list[dict[str, str]]:
    """The shipped instances: name and kind (job or portfolio), sorted by name."""
    out = []
    for f in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            kind = json.loads(f.read_text()).get("kind", "job")
        except (json.JSONDecodeError, UnicodeDecodeError, AttributeError):
            continue
        out.append({"name": f.stem, "kind": kind})
    return out


def shipped(name: str, folder: Path = SHIPPED_DIR) -> dict[str, Any]:
    """A shipped instance by name (``tiny`` or ``tiny.json``), its job paths inlined; 404 when unknown."""
    stem = name.removesuffix(".json")
    if not NAME.match(stem) or not (folder / f"{stem}.json").is_file():
        known = ", ".join(s["name"] for s in shipped_names(folder))
        raise NotFound(f"instance: no shipped instance named {shorten(repr(name))} (shipped: {known})")
    data = price_catalogs(read_json(folder / f"{stem}.json"), folder, folder)
    return inline_jobs(data, folder, folder) if data.get("kind") == "portfolio" else data


def shipped_case(name: str, folder: Path = SHIPPED_DIR / "calibration") -> Path:
    """A shipped calibration case's file by name; NotFound when unknown."""
    stem = name.removesuffix(".json")
    if not NAME.match(stem) or not (folder / f"{stem}.json").is_file():
        known = ", ".join(sorted(f.stem for f in folder.glob("*.json")))
        raise NotFound(f"case: no shipped calibration case named {shorten(repr(name))} (shipped: {known})")
    return folder / f"{stem}.json"


def allowed_path(raw: str, allow_dir: Optional[Path], field: str, base: Optional[Path] = None) -> Path:
    """``raw`` resolved (relative to ``base``, else to ``allow_dir``); PathRefused unless it lies under ``allow_dir``."""
    if allow_dir is None:
        raise PathRefused(f"{field}: the service reads no files (start it with --allow-dir DIR to allow paths under DIR)")
    check_path_text(raw, field)
    root = allow_dir.resolve()
    try:
        path = (Path(base or root) / raw).resolve()
    except (OSError, ValueError, RuntimeError) as exc:  # a loop of symlinks, a name the file system refuses
        raise InputError(f"{field}: {shorten(repr(raw))} cannot be resolved ({getattr(exc, 'strerror', None) or 'invalid path'})") from None
    if path != root and root not in path.parents:
        raise PathRefused(f"{field}: {raw!r} lies outside the folder the service may read")
    return path


def check_path_text(raw: str, field: str) -> None:
    """A path as text: no NUL byte (no file name holds one), at most MAX_PATH_CHARS, each part at most
    MAX_PART_CHARS; else InputError naming ``field`` (a 400, not the file system's error as a 500)."""
    if "\x00" in raw:
        raise InputError(f"{field}: a path holds no NUL character (got {shorten(repr(raw))})")
    if len(raw) > MAX_PATH_CHARS:
        raise InputError(f"{field}: a path of at most {MAX_PATH_CHARS:,} characters, got {len(raw):,}")
    longest = max((len(part) for part in raw.split("/")), default=0)
    if longest > MAX_PART_CHARS:
        raise InputError(f"{field}: each part of a path (between slashes) has at most {MAX_PART_CHARS} characters, got one of {longest:,}")


def inline_jobs(portfolio: dict[str, Any], allow_dir: Optional[Path], base: Optional[Path] = None) -> dict[str, Any]:
    """The portfolio with every job given by path replaced by that file's instance (read under ``allow_dir``)."""
    jobs = portfolio.get("jobs")
    if not isinstance(jobs, list):
        return portfolio
    out = []
    for i, job in enumerate(jobs):
        if isinstance(job, dict) and isinstance(job.get("instance"), str):
            path = allowed_path(job["instance"], allow_dir, f"portfolio: jobs.{i}.instance", base)
            try:
                job = {**job, "instance": _read(path)}
            except InputError as exc:  # name the field, not the server's folder layout
                raise InputError(f"portfolio: jobs.{i}.instance: {str(exc).removeprefix(str(path) + ': ')}") from None
        out.append(job)
    return {**portfolio, "jobs": out}


def price_catalogs(data: dict[str, Any], allow_dir: Optional[Path], base: Optional[Path] = None) -> dict[str, Any]:
    """``data`` (a job or a portfolio) with each price file it names (``hardware.price_catalog``, a portfolio's
    ``price_catalog``, its inline jobs') read only under ``allow_dir``: replaced by its resolved path there, else
    refused (PathRefused, 403), so a request never makes the library read a file outside the operator's folder."""
    if not isinstance(data, dict):
        return data
    out = dict(data)
    if data.get("kind") == "portfolio":
        if isinstance(data.get("price_catalog"), str):
            out["price_catalog"] = str(allowed_path(data["price_catalog"], allow_dir, "price_catalog", base))
        jobs = data.get("jobs")
        if isinstance(jobs, list):
            out["jobs"] = [{**job, "instance": price_catalogs(job["instance"], allow_dir, base)}
                           if isinstance(job, dict) and isinstance(job.get("instance"), dict) else job for job in jobs]
        return out
    hardware = data.get("hardware")
    if isinstance(hardware, dict) and isinstance(hardware.get("price_catalog"), str):
        out["hardware"] = {**hardware, "price_catalog": str(allowed_path(hardware["price_catalog"], allow_dir,
                                                                         "hardware.price_catalog", base))}
    return out


def portfolio_file(raw: str, allow_dir: Optional[Path]) -> dict[str, Any]:
    """A portfolio file named by path (under ``allow_dir``), its jobs' paths resolved from its folder."""
    path = allowed_path(raw, allow_dir, "path")
    try:
        data = _read(path)
    except InputError as exc:
        raise InputError(f"path: {str(exc).removeprefix(str(path) + ': ')}") from None
    return price_catalogs(inline_jobs(data, allow_dir, path.parent), allow_dir, path.parent)


def _read(path: Path) -> dict[str, Any]:
    """``read_json``, with the file system's refusals (permission, a name too long) as bad input."""
    try:
        return read_json(path)
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror or 'error'})") from None
