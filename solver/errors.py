"""Input errors: one line that names the field and what was expected."""

from __future__ import annotations

import difflib
import json
import re
import sys
import types
from pathlib import Path
from typing import Annotated, Union, get_args, get_origin

from pydantic import ValidationError

from planopt.messages import shorten


class InputError(Exception):
    """Bad input; the CLI prints the message on one line and exits 2."""


class InputErrors(InputError):
    """Several errors of one input at once. ``lines`` holds each, one line naming its field (``planopt validate``
    prints them all); the message is the first, with how many there are and where to see them all, so a command
    that prints one line (``solve``, ``evaluate``) still prints one."""

    def __init__(self, lines: list[str], file: str | None = None):
        self.lines, self.file = list(lines), file
        where = f"run `planopt validate {file}` to see all" if file else "`planopt validate` lists them all"
        super().__init__(self.lines[0] if len(self.lines) == 1 else f"{self.lines[0]} ({len(self.lines)} errors; {where})")

    def __reduce__(self):
        """Pickled with its lines (a Dask worker's error reaches the service whole)."""
        return (type(self), (self.lines, self.file))


def describe_validation_error(exc: ValidationError, source: str, file: str | None = None) -> str:
    """The first error of a pydantic ValidationError as ``source: field: expected ...``; with several, how many
    there are and that ``planopt validate FILE`` lists them all."""
    return str(validation_input_error(exc, source, file))


def validation_input_error(exc: ValidationError, source: str, file: str | None = None) -> InputErrors:
    """Every error of a pydantic ValidationError, each one line ``source: field: expected ...``, as one
    :class:`InputErrors` (``file``: the file ``planopt validate`` would check, named in the hint; None: none named)."""
    return InputErrors(describe_validation_errors(exc, source), file)


def describe_validation_errors(exc: ValidationError, source: str) -> list[str]:
    """Every error of a pydantic ValidationError, each as ``source: field: expected ...``: an unknown field with
    "did you mean" the closest allowed name at its level, a value off a fixed list with the closest of the list."""
    root = _root_model(exc)
    lines, branches = [], {}
    for err in exc.errors():
        err = {**err, "loc": tuple(p for p in err["loc"] if not _is_union_branch(p))}
        loc = ".".join(str(p) for p in err["loc"]) or "(top level)"
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "missing":
            msg = "required field is missing"
        elif err["type"] == "extra_forbidden":
            msg = _unknown_field(root, err["loc"])
        elif err["type"] == "literal_error":
            msg = _off_the_list(err, msg)
        elif "input" in err and err["type"] not in ("value_error", "model_type") and not isinstance(err["input"], (dict, list)):
            msg = f"{msg} (got {err['input']!r})"
        if loc in branches:  # a union's branches (an integer or a list of them) failing: one line, "or" between
            at = lines.index(branches[loc])
            lines[at] = branches[loc] = _either(branches[loc], msg)
            continue
        line = f"{source}: {msg}" if not err["loc"] else f"{source}: {loc}: {msg}"  # a whole-instance check names its field
        if line not in lines:
            lines.append(line)
            branches[loc] = line
    return lines


# How pydantic names a union's branch in an error's location (``constrained-int``, ``list[constrained-int]``,
# ``function-after[...]``): not a field, so left out of the line, whose branches are then joined.
_BRANCH = re.compile(r"^(?:[a-z]+(?:-[a-z]+)*\[.*\]|(?:constrained|lax|strict|json)-[a-z-]+|int|float|str|bool|none|bytes)$")


def _is_union_branch(part) -> bool:
    """Whether a location part names a union's branch rather than a field."""
    return isinstance(part, str) and bool(_BRANCH.match(part))


def _either(line: str, msg: str) -> str:
    """``line`` with another branch's expectation: ``... a valid integer or a valid list (got nan)``."""
    got = re.search(r" \(got .*\)$", msg)
    expected = (msg[:got.start()] if got else msg).removeprefix("Input should be ")
    head, tail = (line[:line.rindex(" (got ")], line[line.rindex(" (got "):]) if " (got " in line else (line, "")
    return f"{head} or {expected}{tail}"


# Keys of a Hugging Face config.json (models/schema/hf_config.py reads them under an architecture's hf_config).
HF_KEYS = frozenset({"model_type", "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
                     "intermediate_size", "vocab_size", "max_position_embeddings", "tie_word_embeddings", "head_dim",
                     "num_experts", "n_routed_experts", "num_local_experts", "num_experts_per_tok",
                     "moe_intermediate_size", "n_shared_experts", "architectures", "torch_dtype"})


def _root_model(exc: ValidationError):
    """The schema class a ValidationError is about (by its title), or None."""
    from planopt.models.schema import instance, portfolio
    for module in (instance, portfolio):
        found = getattr(module, exc.title, None)
        if isinstance(found, type):
            return found
    return None


def _unknown_field(root, loc) -> str:
    """An unknown field's message: the closest allowed name at its level, or the names allowed there."""
    name = str(loc[-1]) if loc else ""
    try:
        allowed = allowed_fields(root, tuple(loc[:-1])) if root is not None else None
    except Exception:  # noqa: BLE001 - a hint only: a location the walk does not follow gets the plain message
        allowed = None
    if not allowed:
        return "unknown field (check the spelling; `planopt schema` lists the fields)"
    close = difflib.get_close_matches(name, allowed, n=2, cutoff=0.6)
    # a Hugging Face key in an architecture block: its whole config.json goes under hf_config
    hf = " (a Hugging Face config.json goes whole under 'hf_config')" if "hf_config" in allowed and name in HF_KEYS else ""
    if close:
        return f"unknown field: did you mean {' or '.join(repr(c) for c in close)}?{hf}"
    if hf:
        return f"unknown field{hf}"
    return f"unknown field; expected one of {', '.join(repr(a) for a in allowed)}"


def _off_the_list(err, msg: str) -> str:
    """A value off a fixed list (a Literal): the closest allowed value, when one is close."""
    value = err.get("input")
    allowed = re.findall(r"'([^']*)'", str((err.get("ctx") or {}).get("expected", "")))
    close = difflib.get_close_matches(value, allowed, n=2, cutoff=0.6) if isinstance(value, str) else []
    shown = f"{msg} (got {value!r})" if not isinstance(value, (dict, list)) else msg
    return f"{shown}: did you mean {' or '.join(repr(c) for c in close)}?" if close else shown


def allowed_fields(model, loc: tuple) -> list[str] | None:
    """The field names allowed at ``loc`` (a pydantic error location) under the schema class ``model``, or None
    where ``loc`` leads to no schema class (a list of numbers, a free dict)."""
    annotation = model
    parts = list(loc)
    while True:
        annotation = _strip(annotation)
        members = _union_members(annotation)
        if members is not None:   # Optional[X] or a union: the member the location leads through
            if parts and isinstance(parts[0], str) and any(_tag_of(m) in parts[0] for m in members):
                annotation = next(m for m in members if _tag_of(m) in parts[0])
                parts = parts[1:]
                continue
            for m in members:
                found = allowed_fields(m, tuple(parts)) if _is_model(_strip(m)) or get_origin(_strip(m)) else None
                if found:
                    return found
            return None
        if not parts:
            return list(annotation.model_fields) if _is_model(annotation) else None
        part, parts = parts[0], parts[1:]
        if _is_model(annotation):
            field = annotation.model_fields.get(str(part))
            if field is None:
                return None
            annotation = field.annotation
        elif get_origin(annotation) in (list, tuple) and isinstance(part, int):
            annotation = get_args(annotation)[0]
        elif get_origin(annotation) is dict and isinstance(part, str):
            annotation = get_args(annotation)[1]
        else:
            return None


def _strip(annotation):
    """``Annotated[X, ...]`` as X; a forward reference left as it is."""
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    return annotation


def _union_members(annotation):
    """The members of a union (``Optional[X]`` without None), or None for anything else."""
    if get_origin(annotation) in (Union, types.UnionType):
        return [m for m in get_args(annotation) if m is not type(None)]
    return None


def _is_model(annotation) -> bool:
    from pydantic import BaseModel
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _tag_of(member) -> str:
    member = _strip(member)
    return member.__name__ if isinstance(member, type) else "\0"


def read_json(path: str | Path) -> dict:
    """The JSON object in the file at ``path``; InputError naming the file (one line) for any reason it is not one."""
    p = Path(path)
    try:
        exists = p.exists()
    except (OSError, ValueError):  # a name too long, or with a NUL byte: no file can have it
        raise InputError(f"{shorten(str(path))}: not a file name (too long, or holding a NUL byte)") from None
    if not exists:
        raise InputError(f"{p}: file not found")
    if p.is_dir():
        raise InputError(f"{p}: is a directory, expected a JSON file")
    try:
        data = json.loads(p.read_text())
    except json.JSONDecodeError as exc:
        raise InputError(f"{p}: not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except UnicodeDecodeError:
        raise InputError(f"{p}: not valid JSON: not UTF-8 text") from None
    except OSError as exc:
        raise InputError(f"{p}: cannot be read: {exc.strerror or exc}") from None
    except RecursionError:  # json's decoder recurses once per nested array or object
        raise InputError(f"{p}: not valid JSON: nested deeper than {sys.getrecursionlimit():,} levels") from None
    if not isinstance(data, dict):
        raise InputError(f"{p}: expected a JSON object at the top level")
    return data
