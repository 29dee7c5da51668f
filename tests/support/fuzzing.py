"""The fuzzer of issue 13: mutated instances and portfolios, and the CLI contract each run must keep.

Used by ``tests/solver/cli/test_fuzz.py`` (a seeded sample) and ``benchmarks/fuzz.py`` (the full set).

Each case is one shipped input with one mutation, written as the bytes of a file:

- at a random place of the JSON tree: a field deleted, a wrong type (booleans, numeric strings,
  null, lists, objects), NaN / Infinity / -Infinity, huge and tiny numbers (1e308, 5e-324, -1),
  an empty list or object, a duplicated list element, an unknown name or an unknown field,
  unicode with mathtext and a lone surrogate;
- of the file: JSON truncated at a random byte, non-UTF-8 bytes, a document nested 5,000 deep;
- valid but huge: 20,000 GPU counts, 6 phases of 6 sampling options without tapering.

Issue 28 added the fields written since (``FIELD_BASES``, ``FIELD_PER_BASE`` mutations each, after the
old bases' cases): stages (``qwen3-32b-sft-then-rl.json``), ``candidate_students`` (``math-8b-or-32b.json``),
``hardware.rollout_gpus`` with ``training.staleness_steps_options`` (the split-rollout job), the ``retention``
block (``instances/retention/``), a trained teacher (``teacher.training``), ``uncertainty`` overrides with
``constraints.confidence``, a teacher precision per phase (``teacher.precision_by_phase``, issue 27 lever 6), the
portfolio offers of ``portfolio-providers.json`` (provider, region), and the
pilot CSV of ``planopt fit`` (its cells, rows and columns mutated as the JSON's nodes are), and (issue 27, lever
1) the ``environments`` block with its pools, overlap and traffic (``qwen3-32b-agentic-rl-environments.json``,
mutated within that block). Their solves
run with ``--time-limit FIELD_TIME_LIMIT_S`` (a job's limit now bounds the whole command).

:func:`cases` is deterministic: the same list for the same ``per_base``, in the same order.
:func:`run` runs ``planopt validate FILE`` and ``planopt solve FILE --json`` on a case (in this process,
through typer's test runner) and returns what broke the contract: an exception escaping the CLI (a
traceback), an exit code outside {0, 2, 3, 4}, stdout under ``--json`` that is not one strict JSON
object, or an input error that is not one line starting ``error:`` (``validate``: one such line per error).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parents[2]
BASES = ["tiny.json", "qwen3-8b-math.json", "infeasible-deadline.json", "llama-70b-domain-injection.json",
         "qwen3-32b-agentic-rl.json", "portfolio-small.json"]
WRONG_TYPES: list[Any] = [True, False, None, "8", "abc", "", [], {}, [1, "x"], {"a": 1}]
NUMBERS: list[Any] = [float("nan"), float("inf"), float("-inf"), 1e308, -1e308, 1e-300, 5e-324, 0, -1, 1e40, 2**63]
UNICODE = ["名前 $x^$ ☃", "cost $x^$", "\ud800", "a\u0000b", "x" * 300, "$\\frac{1}{0}$"]
UNKNOWN = ["H10O", "Bogus-Model-9B", "sft2", "fp3", "nemo-rl-v9"]
TREE_OPS = ["delete", "wrong_type", "number", "empty", "duplicate", "unknown_name", "unknown_field", "unicode"]
FILE_OPS = ["truncate", "non_utf8", "deep"]


def _with_staleness(doc: dict) -> dict:
    doc["training"]["staleness_steps_options"] = [0, 1, 2]
    return doc


def _with_precision_by_phase(doc: dict) -> dict:
    doc["teacher"]["precision_by_phase"] = True
    return doc


def _with_uncertainty(doc: dict) -> dict:
    doc["uncertainty"] = {"reliability.failures_per_gpu_hour": {"low": 3e-5, "high": 6e-5, "confidence": 0.8},
                          "efficiency.mfu_factor": 1.0}
    doc["constraints"]["confidence"] = 0.8
    return doc


# base name -> (shipped file under instances/, the edit that adds the field when no shipped file has it)
FIELD_BASES: dict[str, tuple[str, Any]] = {
    "qwen3-32b-sft-then-rl.json": ("qwen3-32b-sft-then-rl.json", None),
    "math-8b-or-32b.json": ("math-8b-or-32b.json", None),
    "split-rollout-staleness.json": ("qwen3-32b-agentic-rl-split-rollout.json", _with_staleness),
    "retention-long-rollback.json": ("retention/qwen3-8b-math-long-rollback-detection.json", None),
    "qwen3-8b-math-train-the-teacher.json": ("qwen3-8b-math-train-the-teacher.json", None),
    "qwen3-8b-math-uncertainty-confidence.json": ("qwen3-8b-math.json", _with_uncertainty),
    "qwen3-8b-math-precision-by-phase.json": ("qwen3-8b-math.json", _with_precision_by_phase),
    "portfolio-providers.json": ("portfolio-providers.json", None),
    "pilot-qwen3-8b-math.csv": ("pilot-qwen3-8b-math.csv", None),
    "qwen3-32b-agentic-rl-environments.json": ("qwen3-32b-agentic-rl-environments.json", None),
}
# The subtree a base's tree mutations land in (issue 27, lever 1: the environments block and its pools); elsewhere
# anywhere in the document.
FIELD_WITHIN: dict[str, tuple] = {"qwen3-32b-agentic-rl-environments.json": ("environments",)}
FIELD_PER_BASE = 60
PILOT_INSTANCE = "qwen3-8b-math.json"   # the job the pilot CSV is fitted to
FIELD_TIME_LIMIT_S = "3"


@dataclass(frozen=True)
class FuzzCase:
    id: str
    base: str
    operation: str
    where: str
    content: bytes

    @property
    def is_portfolio(self) -> bool:
        """Whether the case is a portfolio (solved with a time limit)."""
        return self.base.startswith("portfolio")

    @property
    def is_pilot(self) -> bool:
        """Whether the case is a pilot CSV (run through ``planopt fit``)."""
        return self.base.endswith(".csv")

    @property
    def is_field_base(self) -> bool:
        """Whether the case mutates a base of the fields issue 28 added (``FIELD_BASES``)."""
        return self.base in FIELD_BASES


def _paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path into the JSON tree (dict keys and list indices), the root excluded."""
    out = []
    if isinstance(node, dict):
        for k, v in node.items():
            out.append(prefix + (k,))
            out.extend(_paths(v, prefix + (k,)))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out.append(prefix + (i,))
            out.extend(_paths(v, prefix + (i,)))
    return out


def _get(node: Any, path: tuple) -> Any:
    for p in path:
        node = node[p]
    return node


def _dump(doc: Any) -> bytes:
    # allow_nan: NaN and Infinity are what a user's file may hold; ensure_ascii keeps lone surrogates writable
    return json.dumps(doc, allow_nan=True).encode("utf-8")


def _mutate_tree(doc: Any, op: str, rng: random.Random, within: tuple = ()) -> tuple[Any, str]:
    """One mutation ``op`` at a random node of ``doc`` (of its subtree at ``within``, when given)."""
    paths = [p for p in _paths(doc) if tuple(p[:len(within)]) == within and len(p) > len(within)]
    if op == "duplicate":
        paths = [p for p in paths if isinstance(_get(doc, p), list) and _get(doc, p)] or paths
    if op == "empty":
        paths = [p for p in paths if isinstance(_get(doc, p), (list, dict))] or paths
    if op in ("unknown_name", "unicode"):
        paths = [p for p in paths if isinstance(_get(doc, p), str)] or paths
    if op == "number":
        paths = [p for p in paths if isinstance(_get(doc, p), (int, float)) and not isinstance(_get(doc, p), bool)] or paths
    path = rng.choice(paths)
    parent, key = _get(doc, path[:-1]), path[-1]
    where = ".".join(map(str, path))
    if op == "delete":
        if isinstance(parent, list):
            parent.pop(key)
        else:
            del parent[key]
    elif op == "wrong_type":
        parent[key] = rng.choice(WRONG_TYPES)
    elif op == "number":
        parent[key] = rng.choice(NUMBERS)
    elif op == "empty":
        parent[key] = [] if isinstance(parent[key], list) else {}
    elif op == "duplicate":
        value = parent[key]
        if isinstance(value, list) and value:
            value.append(json.loads(json.dumps(value[rng.randrange(len(value))])))
        else:
            parent[key] = [value, value]
    elif op == "unknown_name":
        parent[key] = rng.choice(UNKNOWN)
    elif op == "unknown_field":
        target = _get(doc, path) if isinstance(_get(doc, path), dict) else (parent if isinstance(parent, dict) else doc)
        target["bogus_field"] = 1
    elif op == "unicode":
        parent[key] = rng.choice(UNICODE)
    return doc, where


def _mutate_file(text: bytes, op: str, rng: random.Random) -> tuple[bytes, str]:
    if op == "truncate":
        cut = rng.randrange(0, len(text))
        return text[:cut], f"byte {cut}"
    if op == "non_utf8":
        at = rng.randrange(0, len(text))
        return text[:at] + b"\xff\xfe\xc3" + text[at:], f"byte {at}"
    depth = 5000
    return b'{"name": ' + b"[" * depth + b"]" * depth + b"}", f"depth {depth}"


def _huge(doc: dict, variant: int) -> tuple[dict, str]:
    if doc.get("kind") == "portfolio":
        doc["horizon"]["buckets"] = 100_000
        return doc, "horizon.buckets"
    if variant == 0:
        # an entry whose type an InfiniBand-class offer sells (any count is bought: catalog offers), else the first
        gpus = doc["hardware"]["gpus"]
        n = next((i for i, g in enumerate(gpus) if g["name"] in ("H100-SXM", "A100-80GB", "B200")), 0)
        gpus[n]["counts"] = list(range(1, 20_001))
        gpus[n].pop("available_gpus", None)  # else availability caps the counts
        return doc, f"hardware.gpus.{n}.counts"
    doc["training"].update(phases=6, taper_only=False, samples_per_prompt_options=[1, 2, 4, 8, 16, 32])
    return doc, "training.samples_per_prompt_options"


def _inline_jobs(doc: dict) -> dict:
    """A portfolio with its job files read in, so a mutated copy can live anywhere."""
    for job in doc.get("jobs", []):
        if isinstance(job.get("instance"), str):
            job["instance"] = json.loads((ROOT / "instances" / job["instance"]).read_text())
    return doc


def _mutate_csv(text: bytes, op: str, rng: random.Random) -> tuple[bytes, str]:
    """A pilot CSV with one mutation: a cell deleted, replaced (wrong type, number, empty, unknown name, unicode),
    a row duplicated or a column added; of the file, truncated, non-UTF-8 bytes or one line of a megabyte."""
    if op in ("truncate", "non_utf8"):
        return _mutate_file(text, op, rng)
    lines = text.decode("utf-8").splitlines()
    data = [i for i, line in enumerate(lines) if line and not line.startswith("#")]
    header, rows = data[0], data[1:]
    if op == "deep":
        lines.append("," * 1_000_000)
        return "\n".join(lines).encode(), "a line of a million commas"
    if op == "unknown_field":
        lines[header] += ",bogus_field"
        return "\n".join(lines).encode(), "header"
    if op == "duplicate":
        i = rng.choice(rows)
        lines.insert(i, lines[i])
        return "\n".join(lines).encode(), f"line {i + 1}"
    i = rng.choice(rows)
    cells = lines[i].split(",")
    c = rng.randrange(len(cells))
    if op == "delete":
        cells.pop(c)
    else:
        pools = {"wrong_type": WRONG_TYPES, "number": NUMBERS, "unknown_name": UNKNOWN, "unicode": UNICODE}
        value = "" if op == "empty" else rng.choice(pools[op])
        cells[c] = value if isinstance(value, str) else json.dumps(value, allow_nan=True)
    lines[i] = ",".join(cells)
    return "\n".join(lines).encode("utf-8", "surrogatepass"), f"line {i + 1} cell {c}"


def field_cases(per_base: int = FIELD_PER_BASE, seed: int = 0) -> list[FuzzCase]:
    """``per_base`` mutations of each base of ``FIELD_BASES`` (the fields added since issue 13), deterministic."""
    out = []
    for base, (shipped, edit) in FIELD_BASES.items():
        rng = random.Random(f"{seed}:{base}")
        original = (ROOT / "instances" / shipped).read_bytes()
        for n in range(per_base):
            op = FILE_OPS[(n // 10) % len(FILE_OPS)] if n % 10 == 0 else TREE_OPS[n % len(TREE_OPS)]
            if base.endswith(".csv"):
                content, where = _mutate_csv(original, op, rng)
            else:
                doc = _inline_jobs(json.loads(original))
                doc = edit(doc) if edit is not None else doc
                if op in FILE_OPS:
                    content, where = _mutate_file(_dump(doc), op, rng)
                else:
                    doc, where = _mutate_tree(doc, op, rng, FIELD_WITHIN.get(base, ()))
                    content = _dump(doc)
            out.append(FuzzCase(f"{Path(base).stem}-{n:03d}-{op}", base, op, where, content))
    return out


def cases(per_base: int = 260, seed: int = 0, field_per_base: int = FIELD_PER_BASE) -> list[FuzzCase]:
    """``per_base`` mutations of each shipped base of ``BASES`` (``len(BASES) * per_base`` cases), then
    ``field_per_base`` of each of ``FIELD_BASES``; deterministic in ``seed``."""
    out = []
    for base in BASES:
        rng = random.Random(f"{seed}:{base}")
        original = (ROOT / "instances" / base).read_text()
        for n in range(per_base):
            doc = _inline_jobs(json.loads(original))
            if n < 2:  # the valid-but-huge cases come first, so every sample can hold them
                doc, where = _huge(doc, n)
                op, content = "huge", _dump(doc)
            elif n % 10 == 0:
                op = FILE_OPS[(n // 10) % len(FILE_OPS)]
                content, where = _mutate_file(_dump(doc), op, rng)
            else:
                op = TREE_OPS[n % len(TREE_OPS)]
                doc, where = _mutate_tree(doc, op, rng)
                content = _dump(doc)
            out.append(FuzzCase(f"{Path(base).stem}-{n:03d}-{op}", base, op, where, content))
    return out + field_cases(field_per_base, seed)


ALLOWED_EXIT_CODES = {0, 2, 3, 4}
# A portfolio solve is a MIP over every job: bounded, so the fuzzer measures robustness, not search time
# (exit 4, a time limit, is an allowed outcome).
PORTFOLIO_TIME_LIMIT_S = "5"


@dataclass(frozen=True)
class Outcome:
    case: str
    command: str
    exit_code: int
    problem: Optional[str]  # None: the run kept the contract


def _strict_json_object(text: str) -> Optional[str]:
    """None when ``text`` is exactly one strict JSON object; else what is wrong with it."""
    def refuse(token):
        raise ValueError(f"non-strict JSON constant {token}")
    try:
        value = json.loads(text, parse_constant=refuse)
    except ValueError as exc:
        return f"stdout is not one strict JSON object: {exc}"
    return None if isinstance(value, dict) else f"stdout is JSON but not an object: {type(value).__name__}"


def commands(case: FuzzCase, path: Path) -> list[list[str]]:
    """The runs of a case: ``validate`` and ``solve --json`` of an instance; ``fit --json`` of a pilot CSV."""
    if case.is_pilot:
        return [["fit", str(ROOT / "instances" / PILOT_INSTANCE), str(path), "--out", str(path.with_suffix(".fitted.json")),
                 "--json"]]
    solve = ["solve", str(path), "--json"]
    if case.is_portfolio:
        solve += ["--time-limit", PORTFOLIO_TIME_LIMIT_S]
    elif case.is_field_base:  # the limit bounds the whole command, the limits table included
        solve += ["--time-limit", FIELD_TIME_LIMIT_S]
    else:
        solve += ["--no-sensitivity"]
    return [["validate", str(path)], solve]


@dataclass
class _Captured:
    text: str = ""


@contextlib.contextmanager
def _raw_stdout():
    """What is written to file descriptor 1 meanwhile: typer's runner captures ``sys.stdout``, not C code
    (HiGHS) writing to the descriptor, which in a real process would land in the middle of --json output."""
    captured = _Captured()
    sys.stdout.flush()
    saved = os.dup(1)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 1)
        try:
            yield captured
        finally:
            os.dup2(saved, 1)
            os.close(saved)
            sink.seek(0)
            captured.text = sink.read().decode("utf-8", "replace")


def run(case: FuzzCase, folder: Path) -> list[Outcome]:
    """Run the case's commands on its file, written into ``folder``; one Outcome per command."""
    from typer.testing import CliRunner
    from planopt.cli import app
    path = folder / (f"{case.id}.csv" if case.is_pilot else f"{case.id}.json")
    path.write_bytes(case.content)
    out = []
    for args in commands(case, path):
        with _raw_stdout() as raw:
            res = CliRunner().invoke(app, args)
        problem = None
        if raw.text:  # a library printing past the CLI (a solver log) would break --json's one object
            problem = f"wrote to the process's stdout past the CLI: {raw.text[:200]!r}"
        elif res.exception is not None and not isinstance(res.exception, SystemExit):
            problem = f"{type(res.exception).__name__} escaped the CLI: {str(res.exception)[:200]}"
        elif "Traceback" in res.output:
            problem = "a traceback was printed"
        elif res.exit_code not in ALLOWED_EXIT_CODES:
            problem = f"exit {res.exit_code}: {res.stderr.strip()[-300:]}"
        elif "--json" in args:
            problem = _strict_json_object(res.stdout)
        if problem is None and res.exit_code == 2:
            lines = res.stderr.strip().splitlines()
            # validate lists every error of the schema at once, one line each; every other command gives one line
            one_each = args[0] == "validate" and lines
            if not (one_each or len(lines) == 1) or not all(line.startswith("error: ") for line in lines):
                problem = f"an input error is not one 'error: ' line: {res.stderr[:300]!r}"
        out.append(Outcome(case.id, args[0], res.exit_code, problem))
    return out
