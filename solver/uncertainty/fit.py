r"""``planopt fit``: update the uncertain parameters with what a pilot run measured.

The pilot file
--------------
A CSV, one measurement per row (lines starting with ``#`` are comments). The
header must hold every column of :data:`COLUMNS`; ``stddev`` and ``note`` may
be added. A cell a row's kind does not use is left empty.

==========================  ====================================================================
column                      meaning
==========================  ====================================================================
``kind``                    ``step_seconds`` | ``task_score`` | ``general_score_drop``
``method``                  ``sft`` | ``rl`` | ``opd`` (must be in ``training.methods``)
``gpu``, ``gpu_count``      step_seconds only: a GPU of ``hardware.gpus`` and one of its ``counts``
``steps``                   training steps done when measured (step_seconds: steps the time is
                            averaged over, empty = 1)
``samples_per_prompt``      rl/opd: a phase schedule, ``8`` (every phase) or ``8-4-4`` (one value
                            per phase of ``training.phases``; steps split evenly, as in a plan)
``teacher_precision``       opd: ``bf16`` | ``fp8`` | ``int8`` | ``int4`` (one of the instance's options)
``external_data_share``     sft: the share of new-domain data in the mix, in (0, 1]
                            (step_seconds: empty = 1, the time does not depend on it)
``value``                   the measurement: seconds per step; task score (0 to
                            ``task.score_ceiling``); general score before minus after training,
                            points (within ± ``task.general_score_baseline``)
``stddev``                  optional: its measurement error, same unit as ``value``
                            (defaults: :data:`DEFAULT_STEP_SECONDS_RELATIVE_STDDEV`,
                            :data:`DEFAULT_TASK_SCORE_STDDEV_SHARE_OF_CEILING`,
                            :data:`DEFAULT_GENERAL_DROP_STDDEV_POINTS`)
``note``                    optional free text (ignored)
==========================  ====================================================================

What each kind updates, and how it is predicted (always by the evaluator's own
functions, never by a second formula):

- ``step_seconds``: ``efficiency.mfu_factor`` and ``efficiency.decode_factor``.
  Predicted as the recipe's compute hours on the row's hardware
  (``Evaluator.compute_hours_by_component``, each component rescaled by its
  rate factor as ``ScenarioEvaluator`` does) × 3600 / steps: the seconds of an
  average training step without checkpoint or failure overhead and without the
  periodic evaluation runs (``predict.training_step``; a trainer logs them apart),
  as ``solver/uncertainty/calibrate.py`` prices a step (evaluation off). The two factors share one draw in the
  prior (group ``step_time``: whole step times cannot tell them apart), so
  they are fitted as one factor: the shared standard normal :math:`z`.
- ``task_score``: ``priors.<m>.signal_scale_samples`` and, for sft and rl,
  ``priors.<m>.ceiling_share_of_headroom`` (``ScenarioEvaluator.outcomes``:
  ``learning.py``'s curves).
- ``general_score_drop``: ``priors.<m>.forgetting_share_of_baseline``, and
  ``priors.sft_forgetting_mix_exponent`` when the sft rows hold two or more
  mixes (with one mix the exponent cannot be told from the share: it is
  marginalised and left as it was).

The method
----------
Every parameter :math:`\theta_j` is log-normal in the prior
(``uncertainty.parameters``): :math:`\theta_j = m_j e^{\sigma_j z_g}`, with one
standard normal :math:`z_g` per group :math:`g` (clipped to the parameter's
bounds). The fit is a Bayesian update of the groups' :math:`z`:

.. math::
   \log p(z \mid y) = \text{const} - \tfrac12 \lVert z \rVert^2
        - \tfrac12 \sum_i \Big(\frac{y_i - \hat y_i(\theta(z))}{s_i}\Big)^2

where :math:`\hat y_i` is the evaluator's prediction of row :math:`i`,
:math:`s_i` its stddev, and for step times :math:`y_i, \hat y_i` are
logarithms and :math:`s_i` the relative error (stddev / value). Rows are
grouped into *blocks* whose parameters no other block's rows touch (step
time; each method's learning curve with its forgetting for rl and opd, whose
forgetting follows the progress along the curve; sft's forgetting), so the
joint posterior is the product of the blocks' posteriors, each exact on a
grid of at most 3 dimensions (:data:`GRID_POINTS`). The grid starts on
:math:`\pm` :data:`FIRST_BOX_SD` prior standard deviations and is refined
around the posterior (mean :math:`\pm` :data:`BOX_HALF_WIDTH_SD` posterior
standard deviations) until it stops moving, so a sharp likelihood is
resolved. Each parameter is monotone in its group's :math:`z`, so its
posterior quantiles are its values at the marginal quantiles of :math:`z`:
the posterior median is written as the point value and the central 80 %
range (P10–P90) as the parameter's ``uncertainty`` entry.

A later stage's row (``PilotRow.before``: a staged run's, ``track``) starts from the score the stages before
it reach, so its block depends on theirs: blocks are fitted in stage order (step time, then sft, rl, opd), each
later block's predictions at the fitted points of the blocks before it (a sequential update that drops their
spread from its rows' predictions, as ``replan`` starts from the fitted score reached).

What this leaves out, by design: groups are drawn independently, so the fitted instance keeps each
parameter's marginal and drops the posterior correlation between groups (e.g. a learning curve's scale
and ceiling); its predictive spread at the pilot's points is wider than the joint posterior's, never narrower.
"""

from __future__ import annotations

import copy
import csv
import io
import math
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from planopt.models.schema import instance as schema
from planopt.models.uncertainty import model as unc
from planopt.models.catalog import CatalogLookupError, find_gpu
from planopt.models.cost.environments import only_pool
from planopt.models.cost.evaluator import Evaluator
from planopt.models.schema.plan import HardwareChoice, Recipe
from planopt.models.uncertainty.scenarios import ScenarioEvaluator
from planopt.models.consistency import check_instance
from planopt.models.schema.instance import Instance, Range

from planopt.errors import InputError
from planopt.uncertainty.predict import log_likelihood, predict, predict_scenarios  # noqa: F401  (fit's API)

KINDS = ("step_seconds", "task_score", "general_score_drop")
METHODS = schema.METHODS
PRECISIONS = typing.get_args(schema.Precision)
COLUMNS = ("kind", "method", "gpu", "gpu_count", "steps", "samples_per_prompt", "teacher_precision",
           "external_data_share", "value")
OPTIONAL_COLUMNS = ("stddev", "note")

# Default measurement errors, used when a row leaves `stddev` empty.
# Step seconds: 5 % of the value (relative, dimensionless). A pilot's step time
# is a mean over tens of steps whose RL rollouts vary with response lengths;
# 5 % is the run-to-run spread we assume for such a mean (INFERRED, weak).
DEFAULT_STEP_SECONDS_RELATIVE_STDDEV = 0.05
# Task score: the binomial standard error of a benchmark of 500 items (the size
# of MATH-500) at a 50 % pass rate, its largest: sqrt(0.25 / 500) = 2.24 % of the
# score scale (points = this share x task.score_ceiling).
BENCHMARK_ITEMS = 500
DEFAULT_TASK_SCORE_STDDEV_SHARE_OF_CEILING = math.sqrt(0.25 / BENCHMARK_ITEMS)
# General score drop, points on a 0-100 scale: a difference of two scores, each
# with the binomial error of IF-eval's 541 prompts at a 50 % rate (its largest):
# sqrt(2) x 100 x sqrt(0.25 / 541) = 3.04 points.
GENERAL_BENCHMARK_ITEMS = 541
DEFAULT_GENERAL_DROP_STDDEV_POINTS = math.sqrt(2.0) * 100.0 * math.sqrt(0.25 / GENERAL_BENCHMARK_ITEMS)

# The posterior range written to the instance: central 80 % (P10-P90), the
# confidence of every default range in spreads.py.
POSTERIOR_RANGE_CONFIDENCE = 0.8
QUANTILES = (0.1, 0.5, 0.9)
# A pilot row whose fitted prediction stays more than this many of its standard deviations from what it
# measured is warned about (``row_warnings``): under the Gaussian error model that is a 0.27 % event per row.
OUTLIER_SIGMAS = 3.0
# Grid points per axis by the number of dimensions: 2,001 in 1-D, 201² = 40,401
# in 2-D, 61³ = 226,981 in 3-D (a few MB of float64 per array).
GRID_POINTS = {1: 2001, 2: 201, 3: 61}
# First grid: ±10 prior standard deviations (prior density e^-50 at the edge);
# posterior mass on its edge means the pilot contradicts the prior beyond
# anything the model can represent (a unit slip, say) and is refused.
FIRST_BOX_SD = 10.0
EDGE_MASS_LIMIT = 1e-3
# Refined grids: the posterior mean ± 6 posterior standard deviations (the mass
# outside is below 2e-9 for a normal posterior); at most 6 refinements, and
# stop when the box moves by under 5 % of its width.
BOX_HALF_WIDTH_SD = 6.0
MAX_REFINEMENTS = 6
BOX_STABLE_SHARE = 0.05


# --- the pilot file --------------------------------------------------------------

@dataclass(frozen=True)
class PilotRow:
    """One measurement: what was run (a recipe, on hardware for step times) and what it gave."""

    line: int
    kind: str
    method: str
    recipe: Recipe
    hardware: Optional[HardwareChoice]
    value: float
    stddev: float
    before: tuple[Recipe, ...] = ()      # a later stage's row: the recipes of the stages run before it, in order

    @property
    def recipes(self) -> tuple[Recipe, ...]:
        """The stages' recipes run up to the measurement: ``before``, then the row's."""
        return (*self.before, self.recipe)

    def describe(self) -> str:
        """The run for people: method, steps, sampling schedule, teacher precision, mix and GPUs; a later stage's
        row names the stages before it (``after sft 1500 steps``)."""
        r = self.recipe
        parts = [r.method, f"{r.steps} steps"]
        if r.samples_per_prompt:
            parts.append("k " + "-".join(map(str, r.samples_per_prompt)))
        if r.teacher_precision:
            parts.append(r.teacher_precision)
        if r.method == "sft" and self.kind != "step_seconds":
            parts.append(f"mix {r.external_data_share:g}")
        if self.hardware is not None:
            parts.append(f"{self.hardware.count}×{self.hardware.gpu}")
        parts += [f"after {b.method} {b.steps} steps" for b in self.before]
        return ", ".join(parts)


class _Cells:
    """Typed access to one CSV row; errors name the file, line and column."""

    def __init__(self, source: str, line: int, cells: dict[str, str]):
        self.source, self.line, self.cells = source, line, cells

    def fail(self, column: str, message: str) -> InputError:
        return InputError(f"{self.source}: line {self.line}: {column}: {message}")

    def text(self, column: str) -> str:
        return (self.cells.get(column) or "").strip()

    def required(self, column: str) -> str:
        value = self.text(column)
        if not value:
            raise self.fail(column, "empty; this row needs it")
        return value

    def empty(self, column: str, why: str) -> None:
        if self.text(column):
            raise self.fail(column, f"must be empty {why}, got {self.text(column)!r}")

    def number(self, column: str, default: Optional[float] = None) -> float:
        raw = self.text(column)
        if not raw and default is not None:
            return default
        if not raw:
            raise self.fail(column, "empty; this row needs a number")
        try:
            value = float(raw)
        except ValueError:
            raise self.fail(column, f"expected a number, got {raw!r}") from None
        if not math.isfinite(value):
            raise self.fail(column, f"expected a finite number, got {raw!r}")
        return value

    def count(self, column: str, default: Optional[int] = None) -> int:
        value = self.number(column, None if default is None else float(default))
        if value != int(value) or value < 1:
            raise self.fail(column, f"expected a whole number of at least 1, got {self.text(column)!r}")
        return int(value)


# The most rows a pilot is read with (each costs one evaluation per posterior grid point): 10,000 (the shipped
# pilot's 19 repeated) took 8.3 s to fit on 2 cores, 2026-12-02; 200,000 took 111 s (issue 28 item 9).
MAX_PILOT_ROWS = 10_000


def _data_lines(text: str) -> list[tuple[int, str]]:
    """Non-blank, non-comment lines with their 1-based line numbers."""
    return [(n, line) for n, line in enumerate(text.splitlines(), start=1)
            if line.strip() and not line.lstrip().startswith("#")]


def _read_text(path: Path) -> str:
    if not path.exists():
        raise InputError(f"{path}: file not found")
    if path.is_dir():
        raise InputError(f"{path}: is a directory, expected a CSV file")
    try:
        text = path.read_text(encoding="utf-8-sig")  # a spreadsheet may save a byte-order mark
    except UnicodeDecodeError:
        raise InputError(f"{path}: not a CSV file: not UTF-8 text") from None
    if "\x00" in text:
        raise InputError(f"{path}: not a CSV file: it holds a NUL byte")
    return text


def _check_header(source: str, line: int, header: list[str]) -> None:
    names, expected = [h.strip() for h in header], f"(expected {', '.join(COLUMNS)}, optionally {', '.join(OPTIONAL_COLUMNS)})"
    missing = [c for c in COLUMNS if c not in names]
    if missing:
        raise InputError(f"{source}: line {line}: missing column(s) {', '.join(missing)} {expected}")
    unknown = [c for c in names if c not in COLUMNS + OPTIONAL_COLUMNS]
    if unknown:
        raise InputError(f"{source}: line {line}: unknown column {unknown[0]!r} {expected}")
    duplicated = sorted({c for c in names if names.count(c) > 1})
    if duplicated:
        raise InputError(f"{source}: line {line}: column {duplicated[0]!r} appears twice")


def read_pilot(path: str | Path, inst: Instance, text: Optional[str] = None) -> list[PilotRow]:
    """The pilot file's rows (``text``: its contents, named ``path``), checked against ``inst``; InputError naming the line and column."""
    path = Path(path)
    lines = _data_lines(_read_text(path) if text is None else text)
    if not lines:
        raise InputError(f"{path}: empty: expected a header ({', '.join(COLUMNS)}) and at least one row")
    if len(lines) > MAX_PILOT_ROWS + 1:
        raise InputError(f"{path}: {len(lines) - 1:,} rows, over the {MAX_PILOT_ROWS:,} a pilot is read with (a pilot is a "
                         "few measurements per setting; average repeated ones into one row with its stddev)")
    try:
        records = list(csv.reader(io.StringIO("\n".join(line for _, line in lines))))
    except csv.Error as exc:  # e.g. a cell over the reader's field limit
        raise InputError(f"{path}: not a CSV file the pilot reader takes: {exc}; keep each cell short") from None
    if len(records) != len(lines):
        raise InputError(f"{path}: a quoted cell holds a line break; put each row on one line")
    header = [h.strip() for h in records[0]]
    _check_header(str(path), lines[0][0], header)
    if len(records) < 2:
        raise InputError(f"{path}: no measurements: expected at least one row after the header")
    rows = []
    for (number, _), record in zip(lines[1:], records[1:]):
        if len(record) != len(header):
            raise InputError(f"{path}: line {number}: expected {len(header)} cells (one per column), got {len(record)}")
        rows.append(_row(_Cells(str(path), number, dict(zip(header, record))), inst))
    return rows


def _choice(c: _Cells, column: str, allowed: tuple[str, ...]) -> str:
    value = c.required(column)
    if value not in allowed:
        raise c.fail(column, f"expected one of {', '.join(allowed)}, got {value!r}")
    return value


def _row(c: _Cells, inst: Instance) -> PilotRow:
    kind = _choice(c, "kind", KINDS)
    method = _choice(c, "method", METHODS)
    if method not in inst.training.methods:
        raise c.fail("method", f"{method!r} is not in the instance's training.methods ({', '.join(inst.training.methods)})")
    recipe = _recipe(c, inst, kind, method)
    hardware = _hardware(c, inst, method) if kind == "step_seconds" else _no_hardware(c)
    value = c.number("value")
    _check_value(c, inst, kind, value)
    return PilotRow(c.line, kind, method, recipe, hardware, value, _stddev(c, inst, kind, value))


def _recipe(c: _Cells, inst: Instance, kind: str, method: str) -> Recipe:
    steps = c.count("steps", 1 if kind == "step_seconds" else None)
    if method == "sft":
        c.empty("samples_per_prompt", "for sft")
        c.empty("teacher_precision", "for sft")
        share = c.number("external_data_share", 1.0 if kind == "step_seconds" else None)
        if not 0.0 < share <= 1.0:
            raise c.fail("external_data_share", f"expected a share in (0, 1], got {c.text('external_data_share')!r}")
        return Recipe("sft", steps, (), None, share)
    c.empty("external_data_share", f"for {method}")
    schedule = _schedule(c, inst)
    if method == "rl":
        c.empty("teacher_precision", "for rl")
        return Recipe("rl", steps, schedule)
    precision = _choice(c, "teacher_precision", PRECISIONS)
    if precision not in inst.teacher.precision_options:
        raise c.fail("teacher_precision", f"{precision!r} is not in teacher.precision_options ({', '.join(inst.teacher.precision_options)})")
    return Recipe("opd", steps, schedule, precision)


def _schedule(c: _Cells, inst: Instance) -> tuple[int, ...]:
    raw, phases = c.required("samples_per_prompt"), inst.training.phases
    try:
        values = tuple(int(v) for v in raw.split("-"))
    except ValueError:
        raise c.fail("samples_per_prompt", f"expected whole numbers joined by '-', like 8 or 8-4-4, got {raw!r}") from None
    if any(v < 1 for v in values):
        raise c.fail("samples_per_prompt", f"expected samples of at least 1, got {raw!r}")
    if len(values) == 1:
        return values * phases
    if len(values) != phases:
        raise c.fail("samples_per_prompt", f"expected one value or {phases} (training.phases), got {raw!r}")
    return values


def _hardware(c: _Cells, inst: Instance, method: str) -> HardwareChoice:
    name = c.required("gpu")
    names = [o.key for o in inst.hardware.gpus]
    try:
        canonical = name if name in names else find_gpu(name).name
    except CatalogLookupError:
        canonical = name
    option = next((o for o in inst.hardware.gpus if o.key == canonical), None)
    if option is None:
        raise c.fail("gpu", f"{name!r} is not in the instance's hardware.gpus ({', '.join(names)})")
    count = c.count("gpu_count")
    if count not in option.counts:
        raise c.fail("gpu_count", f"{count} is not in the counts of {option.key} {option.counts}")
    trainers, degrees = inst.training.trainer_keys(), inst.training.context_parallel_degrees()
    if len(trainers) > 1:  # the pilot ran on one trainer, and its rows do not say which
        raise c.fail("gpu", "the instance lists training.trainer_options, and a pilot row does not say which trainer "
                            "it ran; fit the instance with training.trainer set to the pilot's")
    if len(degrees) > 1 or count % degrees[0]:  # one degree, as for the trainer, that divides the pilot's GPUs
        raise c.fail("gpu_count", f"give training.context_parallel the one degree the pilot ran (dividing {count}), not {degrees}")
    return HardwareChoice(option.key, count, trainer=trainers[0], context_parallel=degrees[0],
                          environment_pool=only_pool(inst.environments, method, c.fail))


def _no_hardware(c: _Cells) -> None:
    c.empty("gpu", "for a score row (only step_seconds rows name hardware)")
    c.empty("gpu_count", "for a score row (only step_seconds rows name hardware)")
    return None


def _check_value(c: _Cells, inst: Instance, kind: str, value: float) -> None:
    task = inst.task
    if kind == "step_seconds" and value <= 0:
        raise c.fail("value", f"step seconds must be positive, got {value:g}")
    if kind == "task_score" and not 0.0 <= value <= task.score_ceiling:
        raise c.fail("value", f"task score {value:g} is outside [0, task.score_ceiling = {task.score_ceiling:g}]")
    if kind == "general_score_drop" and abs(value) > task.general_score_baseline:
        raise c.fail("value", f"a drop of {value:g} points is outside ± task.general_score_baseline "
                              f"({task.general_score_baseline:g})")


# The least error a row may state, as a share of its value: 5e-324 made the weights 1/σ² inf (exit 1).
MIN_STDDEV_SHARE = 1e-9

def _stddev(c: _Cells, inst: Instance, kind: str, value: float) -> float:
    """The row's measurement error in the unit of ``value`` (its default when the cell is empty)."""
    if c.text("stddev"):
        s = c.number("stddev")
        if not s >= MIN_STDDEV_SHARE * max(1.0, abs(value)):
            raise c.fail("stddev", f"expected a measurement error of at least {MIN_STDDEV_SHARE:g} of the value, got {s:g}")
        return s
    if kind == "step_seconds":
        return DEFAULT_STEP_SECONDS_RELATIVE_STDDEV * value
    if kind == "task_score":
        return DEFAULT_TASK_SCORE_STDDEV_SHARE_OF_CEILING * inst.task.score_ceiling
    return DEFAULT_GENERAL_DROP_STDDEV_POINTS


# --- blocks: parameters fitted together ------------------------------------------------

@dataclass
class Block:
    """Parameters fitted jointly on one grid, from the rows that inform them."""

    name: str
    groups: list[str]                    # the grid's axes: groups whose z the rows depend on
    rows: list[PilotRow]
    targets: list[str]                   # parameters this block updates (written to the instance)


def blocks(inst: Instance, rows: list[PilotRow]) -> list[Block]:
    """The independent blocks of the pilot's rows (see the module docstring)."""
    out = []
    step = [r for r in rows if r.kind == "step_seconds"]
    if step:
        out.append(Block("step time", ["step_time"], step, ["efficiency.mfu_factor", "efficiency.decode_factor"]))
    for m in METHODS:
        scores = [r for r in rows if r.method == m and r.kind == "task_score"]
        drops = [r for r in rows if r.method == m and r.kind == "general_score_drop"]
        learning = [f"signal_{m}"] + ([] if m == "opd" else [f"ceiling_{m}"])
        learn_targets = [f"priors.{m}.signal_scale_samples"] + ([] if m == "opd" else [f"priors.{m}.ceiling_share_of_headroom"])
        forget_target = [f"priors.{m}.forgetting_share_of_baseline"]
        if m == "sft":
            if scores:
                out.append(Block("sft learning curve", learning, scores, learn_targets))
            if drops:
                mixes = {r.recipe.external_data_share for r in drops}
                exponent = ["priors.sft_forgetting_mix_exponent"] if len(mixes) > 1 else []
                out.append(Block("sft forgetting", ["forgetting_sft", "mix_exponent"], drops, forget_target + exponent))
        elif scores or drops:
            groups = learning + ([f"forgetting_{m}"] if drops else [])
            targets = (learn_targets if scores else []) + (forget_target if drops else [])
            out.append(Block(f"{m} learning curve" + (" and forgetting" if drops else ""), groups, scores + drops, targets))
    return out


# --- the grid posterior -----------------------------------------------------------

@dataclass
class GridPosterior:
    """Posterior marginals of each axis's z on the last (finest) grid."""

    axes: dict[str, np.ndarray]
    marginals: dict[str, np.ndarray]
    refinements: int

    def quantile(self, group: str, q: float) -> float:
        """The posterior quantile ``q`` of ``group``'s z, interpolated on its marginal."""
        w, z = self.marginals[group], self.axes[group]
        cdf = np.cumsum(w) - 0.5 * w  # mass at the node, half counted
        return float(np.interp(q, cdf, z))


def _grid(box: list[tuple[float, float]]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    points = GRID_POINTS[len(box)]
    axes = [np.linspace(lo, hi, points) for lo, hi in box]
    mesh = np.meshgrid(*axes, indexing="ij")
    return axes, [m.ravel() for m in mesh]


def _marginals(logpost: np.ndarray, d: int) -> list[np.ndarray]:
    w = np.exp(logpost - logpost.max())
    w = (w / w.sum()).reshape((GRID_POINTS[d],) * d)
    return [w.sum(axis=tuple(j for j in range(d) if j != i)) for i in range(d)]


def _moments(axis: np.ndarray, w: np.ndarray) -> tuple[float, float]:
    mean = float((axis * w).sum())
    return mean, float(math.sqrt(max((((axis - mean) ** 2) * w).sum(), 0.0)))


def grid_posterior(groups: list[str], loglik: Callable[[dict[str, np.ndarray]], np.ndarray],
                   describe: Callable[[str], str]) -> GridPosterior:
    r"""Posterior of independent standard normal :math:`z_g` (one per group) times :math:`e^{\mathrm{loglik}}`."""
    d = len(groups)
    box = [(-FIRST_BOX_SD, FIRST_BOX_SD)] * d
    for refinement in range(MAX_REFINEMENTS + 1):
        axes, flat = _grid(box)
        z = dict(zip(groups, flat))
        logpost = -0.5 * sum(v**2 for v in flat) + loglik(z)
        marginals = _marginals(logpost, d)
        if refinement == 0:
            _check_edges(groups, marginals, describe)
        new_box = []
        for axis, w in zip(axes, marginals):
            mean, sd = _moments(axis, w)
            half = BOX_HALF_WIDTH_SD * max(sd, axis[1] - axis[0])
            new_box.append((mean - half, mean + half))
        if all(abs(a[0] - b[0]) + abs(a[1] - b[1]) < BOX_STABLE_SHARE * (a[1] - a[0]) for a, b in zip(box, new_box)):
            break
        box = new_box
    return GridPosterior(dict(zip(groups, axes)), dict(zip(groups, marginals)), refinement)


def _check_edges(groups: list[str], marginals: list[np.ndarray], describe: Callable[[str], str]) -> None:
    for g, w in zip(groups, marginals):
        if w[0] + w[-1] > EDGE_MASS_LIMIT:
            raise InputError(f"the pilot puts {describe(g)} more than {FIRST_BOX_SD:g} prior standard deviations "
                             f"from its prior: check the rows' units and values")


# --- the fit ---------------------------------------------------------------------------

@dataclass
class FittedParameter:
    """One parameter of a fit: its prior, posterior percentiles, the rows and block that fitted it, or why it was
    held."""

    name: str
    prior: unc.Parameter
    posterior: dict[str, float]          # p10, p50, p90
    rows: int
    block: str
    note: str = ""

    @property
    def point_before(self) -> float:
        """The instance's value before the fit."""
        return self.prior.point

    @property
    def point_after(self) -> float:
        """The fitted value: the posterior median."""
        return self.posterior["p50"]

    @property
    def updated(self) -> bool:
        """Whether the fit changed the parameter (no note saying why it was held)."""
        return not self.note

    def to_dict(self) -> dict:
        """The parameter as ``planopt fit --json`` prints it."""
        p = self.prior
        return {"name": self.name, "block": self.block, "rows": self.rows, "updated": self.updated,
                "prior": {"p10": p.quantile(0.1), "p50": p.quantile(0.5), "p90": p.quantile(0.9)},
                "posterior": dict(self.posterior), "point_before": self.point_before, "point_after": self.point_after,
                **({"note": self.note} if self.note else {})}


@dataclass
class FitResult:
    """A fit: the input and fitted instances, the pilot rows, every parameter and the grid refinements per block."""

    instance: Instance                   # the input instance
    fitted: Instance                     # fitted point values and uncertainty ranges set
    rows: list[PilotRow]
    parameters: list[FittedParameter]
    refinements: dict[str, int] = field(default_factory=dict)

    def values(self) -> dict[str, float]:
        """The fitted point value of each updated parameter."""
        return {p.name: p.point_after for p in self.parameters if p.updated}

    def ranges(self) -> dict[str, dict[str, float]]:
        """The posterior P10-P90 of each updated parameter, as an ``uncertainty`` range."""
        return {p.name: {"low": p.posterior["p10"], "high": p.posterior["p90"], "confidence": POSTERIOR_RANGE_CONFIDENCE}
                for p in self.parameters if p.updated}

    def row_fits(self) -> list[dict]:
        """Each pilot row with its measurement, the evaluator's prediction before and after the fit, and how many
        of the row's standard deviations the fitted prediction lies from it (``sigmas_off``, signed)."""
        before, after = Evaluator(measured_job(self.instance)), Evaluator(measured_job(self.fitted))
        out = []
        for r in self.rows:
            fitted = predict(after, r)
            out.append({"line": r.line, "kind": r.kind, "run": r.describe(), "measured": r.value, "stddev": r.stddev,
                        "predicted_before": predict(before, r), "predicted_after": fitted,
                        "sigmas_off": (fitted - r.value) / r.stddev})
        return out


def row_warnings(row_fits: list[dict], sigmas: float = OUTLIER_SIGMAS) -> list[str]:
    """One sentence per pilot row (of ``FitResult.row_fits``) whose fitted prediction lies more than ``sigmas`` of its
    standard deviations from what it measured: the fit could not explain it (a unit slip, a run unlike the
    others, or a cost model that misses it)."""
    return [f"pilot line {r['line']} ({r['kind']}, {r['run']}): measured {r['measured']:.4g} ± {r['stddev']:.4g}, "
            f"the fitted model predicts {r['predicted_after']:.4g}, {abs(r['sigmas_off']):.1f} σ off; check the row, "
            "or trust the fit less there"
            for r in row_fits if abs(r["sigmas_off"]) > sigmas]


def _fit_block(inst: Instance, ev: Evaluator, params: dict[str, unc.Parameter], block: Block) -> tuple[list[FittedParameter], int]:
    by_group = {g: [p for p in params.values() if p.group == g] for g in block.groups}
    axes = [g for g in block.groups if any(p.sigma > 0 for p in by_group[g])]
    held = [name for name in block.targets if params[name].sigma == 0]

    def loglik(z: dict[str, np.ndarray]) -> np.ndarray:
        n = len(next(iter(z.values())))
        values = {p.name: p.values(z[g]) for g in axes for p in by_group[g]}
        return log_likelihood(ScenarioEvaluator(ev, unc.Scenarios(n, 0, values)), block.rows)

    def describe(g: str) -> str:
        return " and ".join(p.name for p in by_group[g])

    post = grid_posterior(axes, loglik, describe) if axes else None
    out = []
    for name in block.targets:
        p = params[name]
        if name in held or post is None:
            q = {"p10": p.quantile(0.1), "p50": p.point, "p90": p.quantile(0.9)}
            out.append(FittedParameter(name, p, q, len(block.rows), block.name,
                                       "held: the instance gives a point value (no spread to update)"))
            continue
        zq = [post.quantile(p.group, q) for q in QUANTILES]
        v = p.values(np.array(zq))
        out.append(FittedParameter(name, p, {"p10": float(v[0]), "p50": float(v[1]), "p90": float(v[2])},
                                   len(block.rows), block.name))
    return out, (post.refinements if post else 0)


def measured_job(inst: Instance) -> Instance:
    """The job a pilot's rows are predicted on: with a teacher trained as a stage, the same job with that teacher
    as an empty lump. The teacher's own plan moves only the OPD recipe's data money and lead time
    (``teacher_training.py``), which no pilot row measures (step times, task scores, general-score drops), so the
    rows' predictions are those of the job itself; the fitted values are written into the job as it is."""
    t = inst.teacher
    if t is None or t.training is None:
        return inst
    lump = t.model_copy(update={"training": None, "training_usd": 0.0, "training_hours": 0.0})
    return inst.model_copy(update={"teacher": lump})


def fit(inst: Instance, rows: list[PilotRow]) -> FitResult:
    """The posterior of every parameter the rows inform, and the fitted instance."""
    params = {p.name: p for p in unc.parameters(inst)}
    result = FitResult(inst, inst, rows, [], {})
    for block in blocks(inst, rows):  # in stage order: step time, then sft, rl, opd (schema.METHODS)
        got, result.refinements[block.name] = _fit_block(inst, Evaluator(measured_job(result.fitted)), params, block)
        result.parameters.extend(got)
        if any(r.before for r in rows):  # a later stage's rows start from the earlier stages' fitted points
            result.fitted = fitted_instance(inst, result.values(), result.ranges())
    result.fitted = fitted_instance(inst, result.values(), result.ranges())
    return result


def fitted_instance(inst: Instance, values: dict[str, float], ranges: dict[str, dict]) -> Instance:
    """``inst`` with the fitted point values in their fields and the ranges in ``uncertainty``."""
    merged = {**inst.uncertainty, **{name: Range(**r) for name, r in ranges.items()}}
    fitted = unc.apply(inst, values).model_copy(update={"uncertainty": merged})
    check_instance(fitted)  # model_copy runs no validator: the consistency checks of a loaded instance
    return fitted


# --- the written file: the input JSON with the fitted fields set ------------------------

def _set_path(raw: dict, model, path: list[str], value: float) -> None:
    """Set ``raw[path]``; a missing sub-object is filled from the model's current value (non-default fields)."""
    node, sub = raw, model
    for key in path[:-1]:
        sub = getattr(sub, key)
        if not isinstance(node.get(key), dict):
            node[key] = sub.model_dump(mode="json", exclude_defaults=True)
        node = node[key]
    node[path[-1]] = value


def fitted_json(raw: dict, inst: Instance, result: FitResult) -> dict:
    """The input instance's JSON object with the fitted values and ranges written into it."""
    out = copy.deepcopy(raw)
    for name, value in result.values().items():
        _set_path(out, inst, name.split("."), value)
    unc_section = dict(out.get("uncertainty") or {})
    unc_section.update(result.ranges())
    out["uncertainty"] = unc_section
    return out
