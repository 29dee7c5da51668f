"""The brute-force oracle of chance-constrained plans: every plan, every scenario.

Each plan's metrics come from the scenario evaluator (``models/uncertainty/scenarios.py``),
itself held to the point evaluator scenario by scenario; the best plan is the
one the MIP (``formulation/chance.py``) must find: fits in memory, breaks a
limit in at most ``allowed_violations`` scenarios, and has the best expected
objective (or least CVaR of cost), ties broken by expected cost.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from planopt.models.cost.evaluator import Evaluator
from planopt.models.formulation.chance import OBJECTIVE_METRIC, allowed_violations
from planopt.models.schema.plan import Plan
from planopt.models.uncertainty.scenarios import ScenarioEvaluator, limits_of, meets_all
from planopt.models.schema.instance import Instance
from planopt.models.uncertainty.model import Scenarios

from planopt.uncertainty.chance import cvar
from planopt.job.model import TIE_BREAK_RELATIVE


@dataclass
class ChancePlan:
    plan: Plan
    violations: int
    expected: dict[str, float]
    cvar_cost_usd: float | None

    def objective(self, name: str) -> float:
        """Minimised value: expected metric (quality negated), or CVaR of cost."""
        if name == "cvar":
            return self.cvar_cost_usd
        value = self.expected[OBJECTIVE_METRIC[name]]
        return -value if name == "quality" else value


def scored_plans(inst: Instance, scenarios: Scenarios, cvar_level: float | None = None) -> list[ChancePlan]:
    """Every plan that fits in memory, with its violations and expected metrics."""
    ev = Evaluator(inst)
    se = ScenarioEvaluator(ev, scenarios)
    limits = limits_of(inst)
    recipes, hardware, intervals = ev.space()
    out = []
    for r, h, tau in itertools.product(recipes, hardware, intervals):
        if not ev.hardware(h).fits(r.memory_class):
            continue
        sm = se.metrics(r, h, tau)
        violations = int((~meets_all(sm, limits)).sum())
        expected = {k: float(np.mean(sm.metric(k))) for k in OBJECTIVE_METRIC.values()}
        out.append(ChancePlan(Plan.of(r, h, tau, student=inst.student.preset), violations, expected,
                              cvar(sm.cost_usd, cvar_level) if cvar_level is not None else None))
    return out


def best_chance_plan(inst: Instance, scenarios: Scenarios, confidence: float, cvar_level: float | None = None) -> ChancePlan | None:
    allowed = allowed_violations(confidence, scenarios.n)
    feasible = [p for p in scored_plans(inst, scenarios, cvar_level) if p.violations <= allowed]
    if not feasible:
        return None
    name = "cvar" if cvar_level is not None else inst.objective
    best = min(p.objective(name) for p in feasible)
    ties = [p for p in feasible if p.objective(name) <= best + TIE_BREAK_RELATIVE * max(1.0, abs(best))]
    return min(ties, key=lambda p: (p.expected["cost_usd"], p.objective(name)))


def most_reachable_share(inst: Instance, scenarios: Scenarios) -> float:
    """The largest share of scenarios in which one plan meets every limit."""
    plans = scored_plans(inst, scenarios)
    return max(((scenarios.n - p.violations) / scenarios.n for p in plans), default=0.0)
