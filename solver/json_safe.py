"""Plain, strict JSON data: what the CLI's ``--json`` and the service's answers both print.

JSON has no NaN or infinities, so a non-finite float becomes null (an unbounded gap, a
bound HiGHS did not find); objects with ``to_dict`` become their dicts; keys become strings.
"""

from __future__ import annotations

import math
from typing import Any


def finite_json(obj: Any) -> Any:
    """``obj`` as plain JSON data with NaN and infinities as null."""
    if hasattr(obj, "to_dict"):
        obj = obj.to_dict()
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k if isinstance(k, str) else str(k): finite_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set)):
        return [finite_json(v) for v in obj]
    return obj
