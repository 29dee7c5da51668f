r"""``planopt track``: where a run stands against its plan at its last logged step.

What it compares (the predicted bands are the P10-P90 of the uncertainty model's scenarios before the run, the
evaluator's own functions over them, ``ScenarioEvaluator``):

- **step seconds**: the mean logged step time against the plan's seconds per step (``fit.predict_scenarios``:
  compute hours × 3600 / steps, without checkpoint or failure overhead and without evaluation runs, as a pilot's
  step time is predicted);
- **task score** and **forgetting** (the general score's baseline minus its last value) at the last logged
  step, against the plan's stage stopped there (:func:`prefix_recipe`);
- **spend**: the run's money so far (logged, or GPUs × the plan's price × elapsed hours) against the plan's GPU
  money by that step, :math:`n p^s \cdot T^s_k (1 + o^s)`, :math:`T^s_k` the compute hours of the plan stopped there,
  evaluation runs included (``gpus_usd_per_hour``, ``overhead``);
- **the budget and alert lines**: the hour each is crossed at the measured burn rate,
  :math:`(L - C_{committed}) / (\text{spend}/t + c_{wall})`, where :math:`C_{committed}` is the plan's money
  that does not grow with time (data, storage, fixed operations, forgetting repair: its cost less the GPU money
  and the per-wall-hour operations, at the updated point values) and :math:`c_{wall}` the operations' USD per
  wall hour; the run's end is projected at its measured hours per step. With ``releases`` (``cost/releases.py``)
  the run is one release and the budget is over all of them: the other releases' GPU money and per-wall-hour
  operations are committed too (the plan's total less this run's), each release's GPU money being the same;
- **the share of scenarios in which the plan meets every limit**, before the run and updated by what it measured:
  the logged series become pilot rows (:func:`pilot_rows`) and go through ``fit``'s own Bayes update
  (``solver/uncertainty/fit.py``), whose fitted instance the plan's risk is then drawn on.

The verdict (first line): **off track: LIMIT** when the updated share meeting every limit is below
:data:`OFF_TRACK_SHARE` (missing is likelier than meeting); **at risk: LIMIT** when it is below the plan's
target, ``constraints.confidence`` or else :data:`AT_RISK_SHARE`; else **on track**. LIMIT is the limit met in
the fewest updated scenarios.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

import numpy as np

from planopt.models.cost.evaluator import Evaluator
from planopt.models.cost.releases import release_count
from planopt.models.schema.plan import Plan, Recipe
from planopt.models.uncertainty.model import DEFAULT_SEED, draw
from planopt.models.uncertainty.scenarios import ScenarioEvaluator

from planopt.errors import InputError
from planopt.runs import stages
from planopt.runs.stages import prefix_recipe  # noqa: F401  (replan's and the generator's)
from planopt.runs.state import RunState
from planopt.uncertainty import fit as fitting
from planopt.uncertainty.risk import Risk, check_scenarios, check_seed, plan_risk

if TYPE_CHECKING:
    import pandas as pd

# Verdict thresholds (shares of scenarios meeting every limit; the module docstring). 0.5: below it the plan is
# likelier to miss than to meet. 0.8: the central 80 % every default range of spreads.py is stated at, the
# confidence asked of a plan when it names none.
OFF_TRACK_SHARE = 0.5
AT_RISK_SHARE = 0.8
# The alert line as a share of the budget when the instance sets none (issue 26: "budget lines, alert lines").
DEFAULT_ALERT_SHARE = 0.8
# Scenarios behind the bands and the shares (``risk.REPORT_SCENARIOS``'s reasoning: a share's standard error at
# most 1.6 points at 1,000).
DEFAULT_TRACK_SCENARIOS = 1_000
# The most points of one score series made into pilot rows for the update (evenly spaced, the last kept): each
# row costs one evaluation per posterior grid point (``fit.GRID_POINTS``).
MAX_SCORE_ROWS = 20
# Points along the plan's steps at which the bands of the plot are drawn.
BAND_POINTS = 40
PERCENTILES = (10, 50, 90)
# The measured series drawn over the plan's bands (``track --plot``, ``track --json``'s ``series``, the page's Run
# view): the state's series, the band (``bands_frame``'s ``series``) it is drawn over, its label and unit. The
# general score is drawn as forgetting: ``task.general_score_baseline`` less it.
SERIES_PANELS = (("step_seconds", "step_seconds", "seconds per step (s)", "s"),
                 ("task_score", "task_score", "task score (points)", "points"),
                 ("general_score", "forgetting", "forgetting (points)", "points"))


def _row(kind: str, recipe: Recipe, value: float, stddev: float, hardware=None, before=()) -> fitting.PilotRow:
    return fitting.PilotRow(0, kind, recipe.method, recipe, hardware, float(value), float(stddev), tuple(before))


def _prefix_row(kind: str, plan: Plan, step: int, value: float, stddev: float) -> fitting.PilotRow:
    """A score row at the run's step ``step``: its stage stopped there, after the stages before it."""
    done = stages.prefix(plan, step)
    return _row(kind, done[-1][1], value, stddev, before=[r for _, r in done[:-1]])


def _spaced(n: int, most: int) -> list[int]:
    return sorted({int(round(i)) for i in np.linspace(0, n - 1, min(n, most))})


def pilot_rows(inst, plan: Plan, state: RunState) -> list[fitting.PilotRow]:
    """The run's measurements as ``fit``'s pilot rows: per stage the run has logged step times in, their mean over
    its steps done, and up to :data:`MAX_SCORE_ROWS` points of each score series (step 0, the baseline, left out),
    each at ``fit``'s default measurement error; a later stage's rows after the stages before it
    (``PilotRow.before``)."""
    step = state.step_seconds
    rows = []
    for stage, done, mean in zip(plan.stages, stages.steps_done_by_stage(plan, state.last_step),
                                 stages.stage_means(plan, step.steps, step.values)):
        if done and mean is not None:
            rows.append(_row("step_seconds", prefix_recipe(stage.recipe, done), mean,
                             fitting.DEFAULT_STEP_SECONDS_RELATIVE_STDDEV * mean, stage.hardware))
    task_sd = fitting.DEFAULT_TASK_SCORE_STDDEV_SHARE_OF_CEILING * inst.task.score_ceiling
    series = [("task_score", state.task_score, lambda v: v, task_sd)]
    if state.general_score is not None:
        base = inst.task.general_score_baseline
        series.append(("general_score_drop", state.general_score, lambda v: base - v,
                       fitting.DEFAULT_GENERAL_DROP_STDDEV_POINTS))
    for kind, s, value, sd in series:
        keep = np.flatnonzero(s.steps > 0)
        for i in _spaced(keep.size, MAX_SCORE_ROWS) if keep.size else []:
            j = keep[i]
            rows.append(_prefix_row(kind, plan, int(s.steps[j]), value(float(s.values[j])), sd))
    return rows


def _band(values: np.ndarray) -> dict[str, float]:
    return {f"p{q}": float(np.percentile(values, q)) for q in PERCENTILES}


def _position(measured: Optional[float], band: dict[str, float]) -> str:
    if measured is None:
        return "not measured"
    return "below P10" if measured < band["p10"] else "above P90" if measured > band["p90"] else "within P10–P90"


@dataclass
class Check:
    """One measured quantity against the plan's predicted band at the last logged step."""

    name: str
    unit: str
    measured: Optional[float]
    predicted: dict[str, float]          # p10, p50, p90

    @property
    def position(self) -> str:
        """``below P10``, ``within P10–P90``, ``above P90`` or ``not measured``."""
        return _position(self.measured, self.predicted)

    def to_dict(self) -> dict:
        """The check as ``track --json`` prints it."""
        return {"name": self.name, "unit": self.unit, "measured": self.measured, "predicted": dict(self.predicted),
                "position": self.position}


@dataclass
class BudgetLine:
    """A money line (the budget, the alert) and when the run crosses it at its measured burn rate."""

    name: str
    usd: float
    crossing_hours: Optional[float]      # hours from the run's start; None: never (no burn)

    def to_dict(self) -> dict:
        """The line as ``track --json`` prints it (hours and days from the run's start)."""
        return {"name": self.name, "usd": self.usd, "crossing_hours": self.crossing_hours,
                "crossing_day": None if self.crossing_hours is None else self.crossing_hours / 24.0}


@dataclass
class TrackResult:
    """Where a run stands against its plan: the verdict, the checks, the money lines, the shares before and
    after the update, and the fit that updated them."""

    state: RunState
    plan: Plan
    verdict: str                          # on track | at risk | off track
    verdict_limit: Optional[str]
    target_share: float
    before: Risk
    after: Risk
    checks: list[Check]
    lines: list[BudgetLine]
    committed_usd: float
    burn_usd_per_hour: float
    projected_end_hours: float
    fit: fitting.FitResult
    scenario_evaluator: ScenarioEvaluator   # the prior's scenarios the bands are drawn from

    @functools.cached_property
    def bands(self) -> "pd.DataFrame":
        """The plan's predicted P10-P50-P90 along its steps (:func:`bands_frame`; drawn when first asked for)."""
        return bands_frame(self.scenario_evaluator, self.plan)

    def series(self) -> list[dict]:
        """Each measured series of :data:`SERIES_PANELS` over the plan's predicted band along its steps
        (:attr:`bands`): ``{name, label, unit, measured: {step, value} or None when not logged, predicted: {step, p10,
        p50, p90}}``, forgetting as the general score's baseline less it. ``track --plot`` draws these,
        ``track --json`` (and ``/api/track``) carries them as ``series``, and the page's Run view draws them."""
        bands, out = self.bands, []
        for measured, band_name, label, unit in SERIES_PANELS:
            b = bands[bands["series"] == band_name]
            series = getattr(self.state, measured)
            points = None
            if series is not None:
                values = series.values.astype(float)
                if measured == "general_score":
                    values = self.fit.instance.task.general_score_baseline - values
                points = {"step": [int(v) for v in series.steps], "value": [float(v) for v in values]}
            out.append({"name": band_name, "label": label, "unit": unit, "measured": points,
                        "predicted": {"step": [int(v) for v in b["step"]],
                                      **{f"p{q}": [float(v) for v in b[f"p{q}"]] for q in PERCENTILES}}})
        return out

    @property
    def headline(self) -> str:
        """The verdict line: ``on track``, ``at risk: LIMIT`` or ``off track: LIMIT``."""
        return self.verdict + (f": {self.verdict_limit}" if self.verdict_limit else "")

    def to_dict(self) -> dict:
        """The JSON object ``planopt track --json`` prints."""
        return {"verdict": self.verdict, "limit": self.verdict_limit, "headline": self.headline,
                "target_share": self.target_share, "state": self.state.to_dict(),
                "share_meeting_all_limits": {"before": self.before.share(), "after": self.after.share()},
                "limits": {name: {"before": float(self.before.meets_limit[name].mean()),
                                  "after": float(self.after.meets_limit[name].mean())} for name in self.after.meets_limit},
                "checks": [c.to_dict() for c in self.checks], "lines": [ln.to_dict() for ln in self.lines],
                "committed_usd": self.committed_usd, "burn_usd_per_hour": self.burn_usd_per_hour,
                "projected_end_hours": self.projected_end_hours, "scenarios": self.after.scenarios, "seed": self.after.seed,
                "fitted": [p.to_dict() for p in self.fit.parameters], "series": self.series()}

    def frame(self) -> "pd.DataFrame":
        """The measured series (series, step, value): ``RunState.frame``."""
        return self.state.frame()


def alert_share(inst) -> float:
    """The alert line's share of the budget: ``constraints.alert_share`` where the instance has it, else
    :data:`DEFAULT_ALERT_SHARE`."""
    # constraints.alert_share is being added to the schema by another change (issue 26); until it lands (or when an
    # instance leaves it unset) the default applies
    share = getattr(inst.constraints, "alert_share", DEFAULT_ALERT_SHARE)
    return DEFAULT_ALERT_SHARE if share is None else float(share)


def _money_lines(inst, plan: Plan, state: RunState, fitted) -> tuple[list[BudgetLine], float, float, float]:
    """The budget and alert lines' crossings, the committed money, the burn rate and the projected end."""
    metrics = Evaluator(fitted).evaluate(plan)
    per_wall = inst.operations.usd_per_wall_hour
    breakdown = metrics.cost_breakdown_usd
    # with releases the lines are totals (cost/releases.py): the run burns one release's GPU money, the other
    # releases' stays committed, as every release's GPU money is elastic (the same in each release)
    runs = release_count(fitted)
    committed = metrics.cost_usd - (breakdown["compute"] + breakdown["evaluation"]) / runs - per_wall * metrics.wall_hours
    burn = state.spend_usd / state.elapsed_hours + per_wall if state.elapsed_hours > 0 else per_wall
    lines = []
    budget = inst.constraints.budget_usd
    if budget is not None:
        for name, usd in (("budget", budget), ("alert", alert_share(inst) * budget)):
            hours = max(0.0, (usd - committed) / burn) if burn > 0 else None
            lines.append(BudgetLine(name, usd, hours))
    return lines, committed, burn, _projected_end(plan, state, fitted)


def _projected_end(plan: Plan, state: RunState, fitted) -> float:
    """Hours from the run's start to its end: the current stage's remaining steps at the run's measured hours per
    step in it (its share of the hours, ``stages.stage_seconds``), then each later stage's wall hours at the
    updated point values. One stage: elapsed × plan steps / steps done."""
    ev = Evaluator(fitted).for_student(plan.student)
    k, done = state.stage, state.last_step - state.stage_start
    seconds = stages.stage_seconds(plan, state.last_step, state.step_seconds.steps, state.step_seconds.values)
    per_step = state.elapsed_hours * seconds[k] / seconds.sum() / done   # the current stage's share of the hours
    later = sum(ev.metrics(s.recipe, s.hardware, plan.checkpoint_interval_minutes, plan.retention).wall_hours
                for s in plan.stages[k + 1:])
    return state.elapsed_hours + (plan.stages[k].recipe.steps - done) * per_step + later


def _at_step(sev: ScenarioEvaluator, plan: Plan, step: int) -> dict[str, np.ndarray]:
    """The plan stopped at the run's step ``step`` in each scenario: the current stage's seconds per training step
    (``fit.predict_scenarios``: without evaluation runs), the hours and GPU money so far (each stage's compute hours
    so far, its evaluation runs included, stretched by its checkpoint and failure overhead), the task score and the
    forgetting (the stages chained, ``stage_outcomes.chain_outcomes``)."""
    hours, spend = np.zeros(sev.sc.n), np.zeros(sev.sc.n)
    done = stages.prefix(plan, step)
    for stage, recipe in done:
        step_s = fitting.predict_scenarios(sev, _row("step_seconds", recipe, 1.0, 1.0, stage.hardware))
        compute = np.asarray(sev.compute_hours(sev.ev.step_hours_by_component(recipe, stage.hardware)), dtype=float)
        h = compute * (1.0 + sev.overhead(stage.hardware, plan.checkpoint_interval_minutes)) + np.zeros(sev.sc.n)
        hours, spend = hours + h, spend + sev.gpus_usd_per_hour(stage.hardware) * h
    quality, forgetting = fitting.predict_scenarios(sev, _prefix_row("task_score", plan, step, 0.0, 1.0)), \
        fitting.predict_scenarios(sev, _prefix_row("general_score_drop", plan, step, 0.0, 1.0))
    return {"step_seconds": step_s, "hours": hours, "spend": spend, "task_score": quality, "forgetting": forgetting}


def _checks(sev: ScenarioEvaluator, plan: Plan, state: RunState, inst) -> list[Check]:
    at = _at_step(sev, plan, state.last_step)
    step_s, hours, spend, quality, forgetting = (at[k] for k in ("step_seconds", "hours", "spend", "task_score", "forgetting"))
    general = state.general_score
    return [Check("spend", "USD", state.spend_usd, _band(spend)),
            Check("elapsed", "hours", state.elapsed_hours, _band(hours)),
            Check("step_seconds", "s", state.measured_step_seconds, _band(step_s)),
            Check("task_score", "points", float(state.task_score.values[-1]), _band(quality)),
            Check("forgetting", "points", None if general is None else inst.task.general_score_baseline - float(general.values[-1]),
                  _band(forgetting))]


def bands_frame(sev: ScenarioEvaluator, plan: Plan) -> "pd.DataFrame":
    """The plan's predicted P10, P50 and P90 of step seconds, task score and forgetting along its steps."""
    import pandas as pd
    rows = []
    steps = set(np.linspace(1, stages.total_steps(plan), BAND_POINTS).astype(int)) | set(stages.stage_ends(plan))
    for k in sorted(int(v) for v in steps):
        at = _at_step(sev, plan, k)
        for name in ("step_seconds", "task_score", "forgetting"):
            rows.append({"series": name, "step": k, **_band(at[name])})
    return pd.DataFrame(rows)


def fit_run(inst, plan: Plan, state: RunState) -> fitting.FitResult:
    """``fit``'s Bayes update of ``inst`` by what the run measured (:func:`pilot_rows`)."""
    return fitting.fit(inst, pilot_rows(inst, plan, state))


def check_gpu_count(plan: Plan, state: RunState, verb: str = "track") -> None:
    """Refuse, naming ``gpu_count``, a run whose logged GPUs are not its current stage's."""
    stage = plan.stages[state.stage]
    if state.gpu_count != stage.hardware.count:
        at = f" in stage {state.stage + 1} ({stage.method})" if len(plan.stages) > 1 else ""
        raise InputError(f"{state.source}: gpu_count: the run logged {state.gpu_count} GPUs, the plan runs "
                         f"{stage.hardware.count} × {stage.hardware.gpu}{at} ({verb} it against the plan it runs)")


def track(inst, plan: Plan, state: RunState, scenarios: int = DEFAULT_TRACK_SCENARIOS,
          seed: int = DEFAULT_SEED) -> TrackResult:
    """Where the run ``state`` of ``plan`` (one of ``inst``'s plans, of its student's instance) stands."""
    check_scenarios(scenarios)
    check_seed(seed)
    check_gpu_count(plan, state)
    ev = Evaluator(inst)
    sev = ScenarioEvaluator(ev, draw(inst, scenarios, seed)).for_student(plan.student)
    result = fit_run(inst, plan, state)
    before, after = plan_risk(inst, plan, scenarios, seed), plan_risk(result.fitted, plan, scenarios, seed)
    lines, committed, burn, end = _money_lines(inst, plan, state, result.fitted)
    target = inst.constraints.confidence or AT_RISK_SHARE
    share = after.share()
    per_limit = {name: float(v.mean()) for name, v in after.meets_limit.items()}
    worst = min(per_limit, key=per_limit.get) if per_limit else None
    verdict = "off track" if share < OFF_TRACK_SHARE else "at risk" if share < target else "on track"
    return TrackResult(state, plan, verdict, None if verdict == "on track" else worst, target, before, after,
                       _checks(sev, plan, state, inst), lines, committed, burn, end, result, sev)


def track_given(inst, raw_plan: Any, plan_label: str, log, mapping: dict | None = None,
                scenarios: int | None = None, seed: int = 0):
    """``planopt track`` and ``POST /api/track``: the plan's JSON read and checked on ``inst`` (as ``evaluate``
    checks it: a plan of another instance is refused naming the field), the run's :class:`RunState` read from
    ``log`` (a ``RunLog``) through ``mapping``, and where it stands (``runs.track.TrackResult``)."""
    from planopt.instance import evaluate_given_plan, instance_for_plan
    from planopt.runs.state import check_mapping, run_state
    plan, _ = evaluate_given_plan(inst, raw_plan, plan_label)
    shown = instance_for_plan(inst, plan)
    state = run_state(log, check_mapping(mapping or {}, "mapping"), shown, plan, Evaluator(shown))
    return track(shown, plan, state, DEFAULT_TRACK_SCENARIOS if scenarios is None else scenarios, seed)
