"""How the CLI emits results: one strict JSON object on stdout.

JSON has no Infinity or NaN, so non-finite floats become ``null``
(``json.dumps(..., allow_nan=False)`` then refuses anything that slipped through).
"""

from __future__ import annotations

import json
from typing import Any

import typer

from planopt.cli.interrupt import print_answer
from planopt.json_safe import finite_json


def emit_json(obj: Any) -> None:
    """One strict JSON object: non-finite numbers become null (JSON has no Infinity or NaN). Printed through
    ``interrupt.print_answer``, which records that the answer is out (an interrupt then adds no error object)."""
    text = json_text(obj)
    print_answer(lambda: typer.echo(text))


def json_text(obj: Any) -> str:
    """``obj`` as the strict JSON text ``--json`` prints (non-finite numbers as null)."""
    return json.dumps(finite_json(obj), indent=2, default=_json_default, allow_nan=False)


def _json_default(o: Any):
    if hasattr(o, "to_dict"):
        return o.to_dict()
    if isinstance(o, (set, tuple)):
        return list(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")
