"""A run's logs as named series: a TensorBoard log folder, a W&B-style CSV export of a run's history, or
planopt's own pilot CSV (``solver/uncertainty/fit.py``).

Every reader returns a :class:`RunLog`: per series name, the points in the order they were logged, each with its
step (the event's step; a W&B row's ``_step``; a pilot row's ``steps``) and the seconds since the run started
(TensorBoard: the event's wall time minus the first event's, which a writer logs when it opens, i.e. when the
run starts; W&B: ``_runtime``; a pilot has no clock: None).

TensorBoard event files are TFRecord files (a little-endian 64-bit length, its masked CRC32C, the serialised
``Event`` protocol buffer, its masked CRC32C). They are split here and each record's checksums verified with the
``crc32c`` package (C); each ``Event`` is parsed by the protocol-buffer classes ``tensorboardX`` ships. tbparse
(over tensorboard's ``EventAccumulator``) reads the same files, but took 11.6 s for a 100,000-point log on this
project's 2 cores (2026-12-02), against the 3 s ``track`` is held to (BENCHMARKS.md): tensorboard without
TensorFlow computes CRC32C in pure Python, byte by byte. The tests hold this reader to tbparse's scalars.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np

from planopt.errors import InputError

# The extra that installs the TensorBoard reader (pyproject.toml: [project.optional-dependencies] tensorboard).
TENSORBOARD_EXTRA = 'pip install "planopt[tensorboard]"'
# W&B's history export: every row holds the step counter and the seconds since the run started
# (docs.wandb.ai, "Export data": run.history() columns `_step`, `_runtime`, `_timestamp`).
WANDB_STEP, WANDB_RUNTIME = "_step", "_runtime"
WANDB_META = (WANDB_STEP, WANDB_RUNTIME, "_timestamp", "_wandb")
# The TFRecord framing: the masked CRC's rotation and constant (TensorFlow, core/lib/hash/crc32c.h: kMaskDelta).
CRC_MASK_DELTA = 0xA282EAD8
HEADER_BYTES = 12          # uint64 length + uint32 masked CRC of the length
FOOTER_BYTES = 4           # uint32 masked CRC of the data
# Series names a pilot CSV's rows become (its kinds, with the general score as a score rather than a drop).
PILOT_SERIES = {"step_seconds": "step_seconds", "task_score": "task_score", "general_score_drop": "general_score"}


@dataclass
class Series:
    """One logged series: steps, values and seconds since the run started (None: the log has no clock)."""

    steps: np.ndarray
    values: np.ndarray
    seconds: Optional[np.ndarray] = None


@dataclass
class RunLog:
    """Every series of a run's log, by name, and what kind of log it was."""

    source: str
    kind: str                                   # tensorboard | wandb | pilot
    series: dict[str, Series] = field(default_factory=dict)
    methods: set[str] = field(default_factory=set)  # a pilot's rows' methods (empty for the other logs)

    def names(self) -> list[str]:
        """The names of the series the log holds, sorted."""
        return sorted(self.series)


def read_run(path: str | Path, inst=None) -> RunLog:
    """The log at ``path``: a folder is a TensorBoard log folder; a CSV file a pilot (its header has ``kind``) or
    a W&B history export (``_step``). ``inst`` is needed for a pilot (its rows are checked against it)."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: not found: expected a TensorBoard log folder, a W&B history CSV or a pilot CSV")
    if path.is_dir():
        return read_tensorboard(path)
    return read_csv_text(_text(path), str(path), inst)


def read_csv_text(text: str, source: str, inst=None) -> RunLog:
    """A CSV log given as text (named ``source`` in errors): a pilot when its header has ``kind``, else a W&B
    history export."""
    header = next((line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")), "")
    columns = [c.strip() for c in header.split(",")]
    if "kind" in columns:
        if inst is None:
            raise InputError(f"{source}: a pilot CSV is read against its instance")
        return read_pilot_log(source, inst, text)
    return read_wandb_csv(text, source)


def _text(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise InputError(f"{path}: not a CSV file: not UTF-8 text") from None
    if "\x00" in text:
        raise InputError(f"{path}: not a CSV file: it holds a NUL byte")
    return text


# --- TensorBoard ---------------------------------------------------------------------------------------------

def _crc_and_events():
    try:
        from crc32c import crc32c
        from tensorboardX.proto import event_pb2
    except ImportError:
        raise InputError(f"a TensorBoard log needs the tensorboard extra: {TENSORBOARD_EXTRA}") from None
    return crc32c, event_pb2


def masked_crc32c(crc32c, data: bytes) -> int:
    """TFRecord's masked CRC32C of ``data``: the CRC rotated right by 15 bits plus ``CRC_MASK_DELTA``."""
    x = crc32c(data) & 0xFFFFFFFF
    return (((x >> 15) | (x << 17)) + CRC_MASK_DELTA) & 0xFFFFFFFF


def records(data: bytes, source: str, crc32c) -> list[bytes]:
    """The records of one TFRecord file, checksums verified. A record cut short at the end is left out (a
    writer still running may be half-way through one); a wrong checksum is bad input naming the offset."""
    out, pos, end = [], 0, len(data)
    while pos + HEADER_BYTES <= end:
        header = data[pos:pos + 8]
        (length,) = struct.unpack("<Q", header)
        (header_crc,) = struct.unpack_from("<I", data, pos + 8)
        if masked_crc32c(crc32c, header) != header_crc:
            raise InputError(f"{source}: not a TensorBoard event file (bad record checksum at byte {pos})")
        start = pos + HEADER_BYTES
        if start + length + FOOTER_BYTES > end:
            break
        body = data[start:start + length]
        (body_crc,) = struct.unpack_from("<I", data, start + length)
        if masked_crc32c(crc32c, body) != body_crc:
            raise InputError(f"{source}: corrupt TensorBoard event file (bad data checksum at byte {pos})")
        out.append(body)
        pos = start + length + FOOTER_BYTES
    return out


def _scalar(value) -> Optional[float]:
    """A summary value's scalar: ``simple_value`` (tensorboardX, PyTorch) or a one-element float tensor (TF2's
    ``tf.summary.scalar``); None for anything else (images, histograms, text)."""
    if value.HasField("simple_value"):
        return float(value.simple_value)
    if value.HasField("tensor"):
        t = value.tensor
        if t.float_val:
            return float(t.float_val[0])
        if t.double_val:
            return float(t.double_val[0])
        if t.tensor_content and t.dtype in (1, 2):  # DT_FLOAT, DT_DOUBLE (tensorflow/core/framework/types.proto)
            arr = np.frombuffer(t.tensor_content, dtype="<f4" if t.dtype == 1 else "<f8")
            return float(arr[0]) if arr.size == 1 else None
    return None


def read_tensorboard(folder: Path) -> RunLog:
    """Every scalar series of the event files under ``folder`` (recursively, by file name)."""
    files = sorted(p for p in folder.rglob("*") if p.is_file() and "tfevents" in p.name)
    if not files:
        raise InputError(f"{folder}: no TensorBoard event file (events.out.tfevents.*) in this folder")
    crc32c, event_pb2 = _crc_and_events()
    raw: dict[str, tuple[list, list, list]] = {}
    start = math.inf
    for path in files:
        for body in records(path.read_bytes(), str(path), crc32c):
            event = event_pb2.Event.FromString(body)
            start = min(start, event.wall_time)
            for v in event.summary.value:
                x = _scalar(v)
                if x is not None:
                    steps, values, walls = raw.setdefault(v.tag, ([], [], []))
                    steps.append(event.step)
                    values.append(x)
                    walls.append(event.wall_time)
    log = RunLog(str(folder), "tensorboard")
    for tag, (steps, values, walls) in raw.items():
        log.series[tag] = Series(np.asarray(steps, dtype=np.int64), np.asarray(values, dtype=float),
                                 np.asarray(walls, dtype=float) - start)
    return log


# --- W&B history export -------------------------------------------------------------------------------------

def read_wandb_csv(text: str, source: str) -> RunLog:
    """A W&B run's history as CSV (``run.history().to_csv()`` or the UI's export): one row per logged step, the
    columns ``_step`` and ``_runtime`` and one per series (empty where a row did not log it)."""
    import io

    import pandas as pd
    try:
        frame = pd.read_csv(io.StringIO(text), comment="#", skip_blank_lines=True)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as exc:
        raise InputError(f"{source}: not a CSV file the W&B reader takes: {' '.join(str(exc).split())}") from None
    missing = [c for c in (WANDB_STEP, WANDB_RUNTIME) if c not in frame.columns]
    if missing:
        raise InputError(f"{source}: missing column(s) {', '.join(missing)}: expected a W&B history export "
                         f"({WANDB_STEP}, {WANDB_RUNTIME} and one column per series) or a pilot CSV (kind, ...)")
    if frame.empty:
        raise InputError(f"{source}: no rows: expected one row per logged step after the header")
    numeric = {}
    for column in frame.columns:
        values = pd.to_numeric(frame[column], errors="coerce")
        bad = frame[column].notna() & values.isna()
        if column in (WANDB_STEP, WANDB_RUNTIME) and frame[column].isna().any():
            bad |= frame[column].isna()
        if bad.any():
            if column in WANDB_META[2:]:
                continue
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise InputError(f"{source}: row {row + 1}: column {column}: expected a number, got {frame[column].iloc[row]!r}")
        numeric[column] = values.to_numpy(dtype=float)
    if not np.isfinite(numeric[WANDB_STEP]).all() or not (numeric[WANDB_STEP] == np.round(numeric[WANDB_STEP])).all():
        raise InputError(f"{source}: column {WANDB_STEP}: expected whole step numbers")
    steps, seconds = numeric[WANDB_STEP].astype(np.int64), numeric[WANDB_RUNTIME]
    log = RunLog(source, "wandb")
    for column, values in numeric.items():
        if column in WANDB_META:
            continue
        keep = np.isfinite(values)
        log.series[column] = Series(steps[keep], values[keep], seconds[keep])
    return log


# --- planopt's pilot CSV ------------------------------------------------------------------------------------

def read_pilot_log(path, inst, text: Optional[str] = None) -> RunLog:
    """A pilot CSV (``fit.read_pilot``, checked against ``inst``) as series: ``step_seconds`` (each row at its
    ``steps``), ``task_score`` and ``general_score`` (the instance's general-score baseline minus each row's
    drop). A pilot has no clock; its rows' methods are checked against the plan when the state is built."""
    from planopt.uncertainty.fit import read_pilot
    rows = read_pilot(path, inst, text)
    log = RunLog(str(path), "pilot")
    grouped: dict[str, tuple[list, list]] = {}
    for row in rows:
        name = PILOT_SERIES[row.kind]
        value = inst.task.general_score_baseline - row.value if row.kind == "general_score_drop" else row.value
        steps, values = grouped.setdefault(name, ([], []))
        steps.append(row.recipe.steps)
        values.append(value)
    log.series = {name: Series(np.asarray(s, dtype=np.int64), np.asarray(v, dtype=float)) for name, (s, v) in grouped.items()}
    log.methods = {row.method for row in rows}
    return log
