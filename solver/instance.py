"""Load and validate instances from files or dicts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from planopt.models.schema import Instance

from .errors import InputError, describe_validation_error, read_json


def load_instance(source: str | Path | dict[str, Any] | Instance) -> Instance:
    """An :class:`Instance` from a path, a dict or an Instance; raises InputError naming the field."""
    if isinstance(source, Instance):
        return source
    name = "instance"
    if not isinstance(source, dict):
        name = str(source)
        source = read_json(source)
    try:
        return Instance.model_validate(source)
    except ValidationError as exc:
        raise InputError(describe_validation_error(exc, name)) from None
