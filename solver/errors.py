"""Input errors: one line that names the field and what was expected."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pydantic import ValidationError


class InputError(Exception):
    """Bad input; the CLI prints the message on one line and exits 2."""


def describe_validation_error(exc: ValidationError, source: str) -> str:
    """The first error of a pydantic ValidationError as ``source: field: expected ...``."""
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err["loc"]) or "(top level)"
    msg = err["msg"].removeprefix("Value error, ")
    if err["type"] == "missing":
        msg = "required field is missing"
    elif err["type"] == "extra_forbidden":
        msg = "unknown field (check the spelling; `planopt schema` lists the fields)"
    elif "input" in err and err["type"] not in ("value_error", "model_type") and not isinstance(err["input"], (dict, list)):
        msg = f"{msg} (got {err['input']!r})"
    extra = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    if not err["loc"]:  # a whole-instance check names its own field(s) in the message
        return f"{source}: {msg}{extra}"
    return f"{source}: {loc}: {msg}{extra}"


def read_json(path: str | Path) -> dict:
    """The JSON object in ``path``; InputError in one line when the file is missing, a directory, not valid JSON or
    not an object."""
    p = Path(path)
    if not p.exists():
        raise InputError(f"{p}: file not found")
    if p.is_dir():
        raise InputError(f"{p}: is a directory, expected a JSON file")
    try:
        data = json.loads(p.read_text())
    except json.JSONDecodeError as exc:
        raise InputError(f"{p}: not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except UnicodeDecodeError:
        raise InputError(f"{p}: not valid JSON: not UTF-8 text") from None
    except RecursionError:  # json's decoder recurses once per nested array or object
        raise InputError(f"{p}: not valid JSON: nested deeper than {sys.getrecursionlimit():,} levels") from None
    if not isinstance(data, dict):
        raise InputError(f"{p}: expected a JSON object at the top level")
    return data
