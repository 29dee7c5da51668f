"""The brute-force oracle: every plan, scored by the evaluator.

It is the reference the MIP is tested against, and ``planopt enumerate``
exposes it. It refuses spaces over :data:`MAX_PLANS` plans. A plan is feasible
when the evaluator finds no violation, and the evaluator judges limits by
``costs.exceeds`` (slack ``costs.limit_slack``): the rule ``PlanModel.solve``
checks every plan it returns by, so `solve` and `enumerate` agree on plans
that sit on a limit.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass

from planopt.models.cost.evaluator import Evaluator, Metrics
from planopt.models.schema.plan import Plan
from planopt.models.schema.instance import Instance

from planopt.errors import InputError
from planopt.job.model import TIE_BREAK_RELATIVE, SolveResult

MAX_PLANS = 200_000


@dataclass
class ScoredPlan:
    plan: Plan
    metrics: Metrics

    @property
    def feasible(self) -> bool:
        return self.metrics.feasible


def space_size(inst: Instance) -> int:
    ev = Evaluator(inst)
    recipes, hardware, intervals = ev.space()
    return len(recipes) * len(hardware) * len(intervals) * max(1, len(ev.retention_options()))


def all_plans(inst: Instance, limit: int = MAX_PLANS) -> list[ScoredPlan]:
    """Every plan of the instance with its metrics (feasible or not); with a ``retention`` block,
    every retention option too (innermost)."""
    ev = Evaluator(inst)
    recipes, hardware, intervals = ev.space()
    retention = ev.retention_options() or [None]
    size = len(recipes) * len(hardware) * len(intervals) * len(retention)
    if size > limit:
        raise InputError(f"enumerate: the instance has {size:,} plans, over the oracle's limit of {limit:,}; use `planopt solve`")
    return [ScoredPlan(Plan.of(r, h, i, k, student=inst.student.preset), ev.metrics(r, h, i, k))
            for r, h, i, k in itertools.product(recipes, hardware, intervals, retention)]


def lexicographic_best(plans: list[ScoredPlan], objective: str) -> ScoredPlan:
    """Best objective, then the cheapest among plans within the MIP's tie-break tolerance of it."""
    best = min(sp.metrics.objective(objective) for sp in plans)
    slack = TIE_BREAK_RELATIVE * max(1.0, abs(best))
    ties = [sp for sp in plans if sp.metrics.objective(objective) <= best + slack]
    return min(ties, key=lambda sp: (sp.metrics.cost_usd, sp.metrics.objective(objective)))


def best_plan(inst: Instance, limit: int = MAX_PLANS) -> SolveResult:
    start = time.perf_counter()
    plans = [sp for sp in all_plans(inst, limit) if sp.feasible]
    seconds = time.perf_counter() - start
    if not plans:
        return SolveResult("infeasible", inst.objective, solve_seconds=seconds, message="no enumerated plan satisfies every limit")
    best = lexicographic_best(plans, inst.objective)
    return SolveResult("optimal", inst.objective, plan=best.plan, metrics=best.metrics, gap=0.0, solve_seconds=seconds,
                       student=inst.student.preset)
