"""How the CLI emits results: one strict JSON object on stdout.

JSON has no Infinity or NaN, so non-finite floats become ``null``
(``json.dumps(..., allow_nan=False)`` then refuses anything that slipped through).
"""

from __future__ import annotations

import json
import math
from typing import Any

import typer


_emitted = False


def emit_json(obj: Any) -> None:
    """One strict JSON object: non-finite numbers become null (JSON has no Infinity or NaN)."""
    from .interrupt import print_answer
    text = json.dumps(_finite(obj), indent=2, default=_json_default, allow_nan=False)

    def write() -> None:
        global _emitted
        _emitted = True
        typer.echo(text)
    print_answer(write)


def emitted() -> bool:
    """Whether this process printed its JSON object already (an interrupt then adds none)."""
    return _emitted


def _finite(o: Any) -> Any:
    if hasattr(o, "to_dict"):
        o = o.to_dict()
    if isinstance(o, float):
        return o if math.isfinite(o) else None
    if isinstance(o, dict):
        return {k: _finite(v) for k, v in o.items()}
    if isinstance(o, (list, tuple, set)):
        return [_finite(v) for v in o]
    return o


def _json_default(o: Any):
    if hasattr(o, "to_dict"):
        return o.to_dict()
    if isinstance(o, (set, tuple)):
        return list(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")
