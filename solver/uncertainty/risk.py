"""A plan's risk: its metrics over scenarios of the uncertainty model.

``planopt evaluate FILE PLAN --scenarios N`` and ``planopt solve FILE
--scenarios N`` report, for one plan, the share of scenarios meeting every
limit and each limit, and the 10th, 50th and 90th percentiles of cost, wall
time, quality and forgetting. Scenarios are evaluated all at once
(``models/uncertainty/scenarios.py``); the draw is seeded, so a run is reproducible.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from planopt.models.cost.evaluator import Evaluator
from planopt.models.schema.plan import Plan, read_plan
from planopt.models.uncertainty.scenarios import ScenarioEvaluator, ScenarioMetrics, limits_of, meets
from planopt.models.schema.instance import Instance
from planopt.models.uncertainty.model import DEFAULT_SEED, draw

from planopt.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

PERCENTILES = (10, 50, 90)
RISK_METRICS = ("cost_usd", "wall_hours", "quality", "forgetting_points")
# A scenario set this large is cut before any allocation: 1e6 scenarios are
# ~100 MB of arrays per plan, far beyond what a share estimate needs (its
# standard error is already 0.0005 at 1e6).
MAX_SCENARIOS = 1_000_000
# Scenarios behind the risk that every single-job report (solve, evaluate, frontier points,
# sweep rows) carries when --scenarios is not given: a share's standard error is at most
# 1.6 points at 1,000 (sqrt(0.25 / 1000)), and the scenario evaluator needs a few ms for them.
REPORT_SCENARIOS = 1_000


def check_seed(value: Any, flag: str = "--seed") -> int:
    """A seed of a scenario draw: numpy's generators take whole numbers from 0 (a negative one
    is their ValueError, an internal error); else InputError naming ``flag``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(f"{flag}: expected a whole number from 0, got {value!r}")
    return value


def check_scenarios(n: int, flag: str = "--scenarios") -> int:
    """``n`` if it is a whole number of scenarios from 1 to ``MAX_SCENARIOS``; InputError naming ``flag``
    otherwise."""
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_SCENARIOS:
        raise InputError(f"{flag}: expected a whole number of scenarios from 1 to {MAX_SCENARIOS:,}, got {n!r}")
    return n


@dataclass
class Risk:
    """A plan's metrics in each scenario of the uncertainty model and which limits each scenario meets."""

    scenarios: int
    seed: int
    limits: dict[str, float]
    samples: ScenarioMetrics
    meets_limit: dict[str, np.ndarray]
    fits_memory: bool

    @property
    def meets_all(self) -> np.ndarray:
        """Whether each scenario meets every limit (none when the plan does not fit in memory)."""
        ok = np.full(self.scenarios, self.fits_memory)
        for v in self.meets_limit.values():
            ok &= v
        return ok

    def share(self) -> float:
        """The share of scenarios meeting every limit."""
        return float(self.meets_all.mean())

    def percentiles(self) -> dict[str, dict[str, float]]:
        """P10, P50 and P90 of each risk metric over the scenarios."""
        return {m: {f"p{q}": float(np.percentile(self.samples.metric(m), q)) for q in PERCENTILES} for m in RISK_METRICS}

    def frame(self) -> "pd.DataFrame":
        """One row per scenario: the metrics and whether each limit (and all) is met."""
        import pandas as pd
        data = {m: self.samples.metric(m) for m in (*RISK_METRICS, "gpu_hours")}
        data.update({f"meets_{name}": v & self.fits_memory for name, v in self.meets_limit.items()})
        data["meets_all_limits"] = self.meets_all
        return pd.DataFrame(data)

    def to_dict(self) -> dict[str, Any]:
        """The JSON contract: ``{scenarios, share_meeting_all_limits, limits: {name: share}, percentiles}``."""
        return {"scenarios": self.scenarios, "seed": self.seed, "share_meeting_all_limits": self.share(),
                "limits": {name: float(v.mean()) if self.fits_memory else 0.0 for name, v in self.meets_limit.items()},
                "percentiles": self.percentiles(),
                "expected": {m: float(self.samples.metric(m).mean()) for m in RISK_METRICS}}


def report_scenarios(inst: Instance) -> int:
    """How many scenarios a plan's risk is reported over when none were asked for (``REPORT_SCENARIOS``)."""
    return REPORT_SCENARIOS


def plan_risk(inst: Instance, plan: Plan, n: int = 10_000, seed: int = DEFAULT_SEED, evaluator: Evaluator | None = None) -> Risk:
    """The plan's metrics over ``n`` seeded scenarios. A plan that does not fit in
    memory meets no limit in any scenario (memory is not uncertain)."""
    check_scenarios(n)
    ev = evaluator or Evaluator(inst)
    samples = ScenarioEvaluator(ev, draw(inst, n, seed)).plan_metrics(plan)  # checks the plan first
    student = ev.for_student(plan.student)
    fits = all(student.hardware(s.hardware).fits(s.recipe.memory_class) for s in plan.stages)
    limits = limits_of(inst)
    return Risk(n, seed, limits, samples, meets(samples, limits), fits)


def risk_of(source, plan, scenarios: int = 10_000, seed: int = DEFAULT_SEED) -> Risk:
    """``planopt.risk``: a plan's metrics over ``scenarios`` of the uncertainty model
    (an instance path, dict or Instance; a Plan or its dict). ``Risk.to_dict()``, ``Risk.frame()``."""
    from planopt.instance import load_instance
    inst = load_instance(source)
    return plan_risk(inst, plan if isinstance(plan, Plan) else read_plan(plan), scenarios, seed)


def report_risks(items) -> list:
    """Each plan's risk over the report's scenarios (None where there is no plan), as the frontier and sweep
    tables carry. ``items``: (instance with that row's limits, plan or None, student or None). One evaluator for
    every row: the limits differ per row, the profiles they share do not (each plan names its student)."""
    evaluator = None
    out = []
    for inst, plan, _student in items:
        if plan is None:
            out.append(None)
            continue
        evaluator = evaluator or Evaluator(inst)
        out.append(plan_risk(inst, plan, REPORT_SCENARIOS, evaluator=evaluator))
    return out
