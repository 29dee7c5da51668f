"""What a run has measured by its last logged step (:class:`RunState`), read from its log through a mapping that
names which logged series is which.

The mapping (a JSON object, ``--mapping FILE``) names series of the log; every key is optional:

=================  ===========================================================  ================================
key                the series                                                   when not mapped
=================  ===========================================================  ================================
``step``           the training step counter                                    the log's own step (TensorBoard's
                                                                                event step, W&B's ``_step``)
``step_seconds``   seconds per training step                                    a series named ``step_seconds``
``task_score``     the task benchmark's score (0 to ``task.score_ceiling``)    a series named ``task_score``
``general_score``  the general-capability score (forgetting is its baseline     a series named ``general_score``,
                   minus it)                                                    else not measured
``gpu_count``      GPUs training                                                the plan's count
``spend_usd``      money spent so far                                           GPUs × the plan's price × hours
=================  ===========================================================  ================================

A mapped name the log does not hold is refused, listing the series it has with the closest name. Replanning
(issue 26 item 3) reads the same :class:`RunState`.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import numpy as np

from planopt.errors import InputError
from planopt.runs import stages
from planopt.runs.readers import WANDB_STEP, RunLog, Series

if TYPE_CHECKING:
    import pandas as pd

MAPPING_KEYS = ("step", "step_seconds", "task_score", "general_score", "gpu_count", "spend_usd")
REQUIRED_SERIES = ("step_seconds", "task_score")
SECONDS_PER_HOUR = 3600.0


def read_mapping(path: Optional[str | Path]) -> dict[str, str]:
    """The mapping file's object (``{}`` without one), each key one of :data:`MAPPING_KEYS`."""
    if path is None:
        return {}
    from planopt.errors import read_json
    return check_mapping(read_json(Path(path)), str(path))


def check_mapping(obj, source: str) -> dict[str, str]:
    """``obj`` if it is a mapping of :data:`MAPPING_KEYS` to series names; InputError naming the key otherwise."""
    if not isinstance(obj, dict):
        raise InputError(f"{source}: expected a JSON object of {', '.join(MAPPING_KEYS)} to series names")
    for key, value in obj.items():
        if key not in MAPPING_KEYS:
            close = difflib.get_close_matches(str(key), MAPPING_KEYS, n=1, cutoff=0.6)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise InputError(f"{source}: {key}: unknown key: {hint}expected one of {', '.join(MAPPING_KEYS)}")
        if not isinstance(value, str) or not value.strip():
            raise InputError(f"{source}: {key}: expected the name of a logged series, got {json.dumps(value)}")
    return dict(obj)


@dataclass
class RunState:
    """A run at its last logged step: what it trained on, how far it got, how long it took, what it spent and each
    measured series (steps and values)."""

    source: str
    kind: str                        # tensorboard | wandb | pilot
    method: str
    gpu: str
    gpu_count: int
    plan_steps: int
    last_step: int                   # the last logged step: steps done
    elapsed_hours: float
    elapsed_measured: bool           # False: a pilot has no clock; steps × the mean step seconds
    spend_usd: float
    spend_measured: bool             # False: GPUs × the plan's price × elapsed hours
    step_seconds: Series
    task_score: Series
    general_score: Optional[Series]
    names: dict[str, str]            # mapping key -> the series it was read from
    stage: int = 0                   # the plan's stage the last step lies in (0: the first; ``runs/stages.py``)
    stages: int = 1                  # the plan's stages
    stage_start: int = 0             # the run's steps before that stage

    @property
    def steps_done(self) -> int:
        """Training steps done: the last logged step."""
        return self.last_step

    @property
    def stage_steps_done(self) -> int:
        """Steps done in the current stage (``steps_done`` for a one-stage plan)."""
        return self.last_step - self.stage_start

    @property
    def measured_step_seconds(self) -> Optional[float]:
        """The mean of the step times logged in the current stage (None when it logged none yet)."""
        values = self.step_seconds.values[self.step_seconds.steps > self.stage_start]
        return float(np.mean(values)) if values.size else None

    @property
    def share_done(self) -> float:
        """The share of the plan's steps done."""
        return self.last_step / self.plan_steps

    def frame(self) -> "pd.DataFrame":
        """Every measured series as rows (series, step, value)."""
        import pandas as pd
        parts = [("step_seconds", self.step_seconds), ("task_score", self.task_score)]
        if self.general_score is not None:
            parts.append(("general_score", self.general_score))
        return pd.DataFrame([(name, int(s), float(v)) for name, series in parts for s, v in zip(series.steps, series.values)],
                            columns=["series", "step", "value"])

    def to_dict(self) -> dict:
        """The state as ``track --json`` prints it (without the series)."""
        return {"source": self.source, "kind": self.kind, "method": self.method, "gpu": self.gpu,
                "gpu_count": self.gpu_count, "plan_steps": self.plan_steps, "last_step": self.last_step,
                "elapsed_hours": self.elapsed_hours, "elapsed_measured": self.elapsed_measured,
                "spend_usd": self.spend_usd, "spend_measured": self.spend_measured,
                "step_seconds": self.measured_step_seconds, "series": dict(self.names),
                "stage": self.stage + 1, "stages": self.stages, "stage_start": self.stage_start}


def _unknown(log: RunLog, key: str, name: str, mapped: bool) -> InputError:
    have = log.names()
    close = difflib.get_close_matches(name, have, n=1, cutoff=0.5)
    hint = f"did you mean {close[0]!r}? " if close else ""
    listed = ", ".join(have) if have else "(none)"
    if mapped:
        return InputError(f"{log.source}: mapping {key}: no series {name!r} in the log: {hint}the log has {listed}")
    return InputError(f"{log.source}: no series {name!r} ({key}); {hint}name the log's {key} series with --mapping "
                      f"(the log has {listed})")


def _series(log: RunLog, mapping: dict[str, str], key: str, required: bool) -> tuple[Optional[Series], str]:
    name = mapping.get(key, key)
    if name in log.series:
        return log.series[name], name
    if key in mapping or required:
        raise _unknown(log, key, name, key in mapping)
    return None, name


def _check_order(log: RunLog, name: str, series: Series) -> None:
    back = np.flatnonzero(np.diff(series.steps) < 0)
    if back.size:
        i = int(back[0])
        raise InputError(f"{log.source}: series {name!r}: steps go backwards (step {int(series.steps[i + 1])} logged "
                         f"after step {int(series.steps[i])}); a restarted run logs each step once: drop the "
                         "repeated steps, or read the run from its restart")


def _restep(log: RunLog, counter: Series, name: str, series: Series) -> Series:
    """``series`` with its steps replaced by the step counter's value at the same log step (points the counter did
    not log at are left out)."""
    lookup = dict(zip(counter.steps.tolist(), counter.values.tolist()))
    keep = np.array([s in lookup for s in series.steps.tolist()], dtype=bool)
    steps = np.array([lookup[s] for s in series.steps[keep].tolist()], dtype=float)
    if steps.size and not (np.isfinite(steps).all() and (steps == np.round(steps)).all()):
        raise InputError(f"{log.source}: mapping step: series {name!r} holds steps that are not whole numbers")
    return Series(steps.astype(np.int64), series.values[keep], None if series.seconds is None else series.seconds[keep])


def _check_values(log: RunLog, name: str, series: Series, low: float, high: float, what: str) -> None:
    if series.values.size == 0:
        raise InputError(f"{log.source}: series {name!r} holds no points")
    bad = np.flatnonzero(~((series.values >= low) & (series.values <= high)))
    if bad.size:
        i = int(bad[0])
        raise InputError(f"{log.source}: series {name!r}: step {int(series.steps[i])}: {series.values[i]:g} is not {what}")


def run_state(log: RunLog, mapping: dict[str, str], inst, plan, ev) -> RunState:
    """The run's :class:`RunState` against its ``plan`` of ``inst`` (``ev``: the plan's student's evaluator, for the
    price of its GPUs), its steps counted from the run's start over the plan's stages (``runs/stages.py``).
    InputError naming the series for a missing or unknown series, steps that go backwards, values out of range, or
    a run longer than its plan."""
    if log.methods - set(plan.methods):
        raise InputError(f"{log.source}: a pilot row of method {sorted(log.methods - set(plan.methods))[0]!r}; the plan "
                         f"trains {', then '.join(plan.methods)} (track a run with the rows of its own stages)")
    if mapping.get("step") == WANDB_STEP and log.kind == "wandb":  # the export's own counter: the default
        mapping = {k: v for k, v in mapping.items() if k != "step"}
    found = {key: _series(log, mapping, key, key in REQUIRED_SERIES) for key in MAPPING_KEYS if key != "step"}
    counter = None
    if "step" in mapping:
        counter, _ = _series(log, mapping, "step", True)
    names, series = {}, {}
    for key, (s, name) in found.items():
        if s is None:
            continue
        _check_order(log, name, s)
        series[key] = _restep(log, counter, name, s) if counter is not None else s
        names[key] = name
    task = inst.task
    _check_values(log, names["step_seconds"], series["step_seconds"], np.nextafter(0, 1), np.inf, "a positive number of seconds")
    _check_values(log, names["task_score"], series["task_score"], 0.0, task.score_ceiling,
                  f"a score in [0, task.score_ceiling = {task.score_ceiling:g}]")
    if "general_score" in series:
        _check_values(log, names["general_score"], series["general_score"], 0.0, np.inf, "a score of at least 0")
    last = int(max(series["step_seconds"].steps.max(), series["task_score"].steps.max()))
    if last < 1:
        raise InputError(f"{log.source}: the run has logged no training step yet (last step {last})")
    total = stages.total_steps(plan)
    if last > total:
        raise InputError(f"{log.source}: the run has reached step {last:,}, past the plan's {total:,} steps: "
                         "this is not the plan's run, or the plan was changed (track it against the plan it runs)")
    k = stages.stage_of(plan, last)
    stage = plan.stages[k]
    gpu_count = stage.hardware.count
    if "gpu_count" in series:
        _check_values(log, names["gpu_count"], series["gpu_count"], 1, np.inf, "a GPU count of at least 1")
        gpu_count = int(round(series["gpu_count"].values[-1]))
    step_s = series["step_seconds"]
    seconds = stages.stage_seconds(plan, last, step_s.steps, step_s.values)
    clocks = [float(s.seconds.max()) for s in series.values() if s.seconds is not None and s.seconds.size]
    elapsed_measured = bool(clocks)  # the latest point logged, in hours since the run started; a pilot has no clock
    elapsed = max(clocks) / SECONDS_PER_HOUR if clocks else float(seconds.sum()) / SECONDS_PER_HOUR
    if "spend_usd" in series:
        _check_values(log, names["spend_usd"], series["spend_usd"], 0.0, np.inf, "an amount of at least 0")
        spend, spend_measured = float(series["spend_usd"].values[-1]), True
    else:  # each stage's GPUs at their price for its share of the hours; the current stage's at the logged count
        counts = [s.hardware.count for s in plan.stages[:k]] + [gpu_count]
        per_gpu = [ev.hardware(s.hardware).usd_per_hour_of_gpus / s.hardware.total_count for s in plan.stages[:k + 1]]
        hours = elapsed * seconds[:k + 1] / seconds.sum()   # each stage's share of the run's time
        spend, spend_measured = float(sum(n * p * h for n, p, h in zip(counts, per_gpu, hours))), False
    return RunState(log.source, log.kind, stage.method, stage.hardware.gpu, gpu_count, total, last,
                    elapsed, elapsed_measured, spend, spend_measured, series["step_seconds"], series["task_score"],
                    series.get("general_score"), names, k, len(plan.stages), stages.stage_start(plan, k))
