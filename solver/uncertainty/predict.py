r"""A pilot row's quantity as the evaluator predicts it (``fit``'s likelihood and its row report): a training step's
seconds (compute hours × 3600 / steps, without checkpoint or failure overhead and without the periodic evaluation
runs, which a trainer times and logs apart from its steps, and which ``calibrate`` leaves out of the published step
times it prices too), or the task score or forgetting after the row's recipes (a later stage's row chains the stages
before it, ``stage_outcomes.chain_outcomes``)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from planopt.models.cost.components import EVAL, family_of
from planopt.models.cost.evaluator import Evaluator, overlapped_sum
from planopt.models.cost.stage_outcomes import chain_outcomes
from planopt.models.uncertainty.scenarios import ScenarioEvaluator

if TYPE_CHECKING:
    from planopt.uncertainty.fit import PilotRow


def training_step(by_component: dict[str, float]) -> dict[str, float]:
    """A recipe's hours by component without its evaluation runs (``components.EVAL``): its training steps'."""
    return {k: v for k, v in by_component.items() if family_of(k) != EVAL}


def predict_scenarios(sev: ScenarioEvaluator, row: PilotRow) -> np.ndarray:
    """The row's quantity in each scenario of ``sev`` (a step's: its steps' compute hours, overlapped, per step)."""
    if row.kind == "step_seconds":
        compute = sev.compute_hours(training_step(sev.ev.step_hours_by_component(row.recipe, row.hardware)))
        return np.asarray(compute, dtype=float) * 3600.0 / row.recipe.steps + np.zeros(sev.sc.n)
    quality, forgetting = chain_outcomes(sev.inst, sev.outcomes(row.recipes[0]), row.recipes[1:], sev.stage_priors)
    return quality if row.kind == "task_score" else forgetting


def predict(ev: Evaluator, row: PilotRow) -> float:
    """The row's quantity under the instance's point values (a step's seconds as :func:`predict_scenarios`)."""
    if row.kind == "step_seconds":
        return overlapped_sum(training_step(ev.step_hours_by_component(row.recipe, row.hardware))) * 3600.0 / row.recipe.steps
    rp = ev.recipe(row.recipes[0])
    quality, forgetting = chain_outcomes(ev.inst, (rp.quality, rp.forgetting_points), row.recipes[1:])
    return quality if row.kind == "task_score" else forgetting


def log_likelihood(sev: ScenarioEvaluator, rows: list[PilotRow]) -> np.ndarray:
    """:math:`-\\frac12 \\sum_i ((y_i - \\hat y_i)/s_i)^2` per scenario (logs for step seconds)."""
    total = np.zeros(sev.sc.n)
    for row in rows:
        pred = predict_scenarios(sev, row)
        if row.kind == "step_seconds":
            resid = (math.log(row.value) - np.log(pred)) / (row.stddev / row.value)
        else:
            resid = (row.value - pred) / row.stddev
        total -= 0.5 * resid**2
    return total
