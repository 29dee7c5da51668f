"""The brute-force oracle: every plan of any plan space, scored by the evaluator.

It is the reference the MIP is tested against, and ``planopt enumerate`` exposes it. A plan
space is what the one plan model holds (``planopt.models.formulation``): every student (the
instance's, or each of ``candidate_students``), every allowed stage sequence, for each stage
every recipe of its method on every hardware choice, every checkpoint interval and, with a
``retention`` block, every retention option. Each plan is scored by the one evaluator
(``Evaluator.plan_metrics``); the best is chosen by the lexicographic rule of the MIP
(:func:`lexicographic_best`). The scenario counterpart is :func:`scored_under_scenarios`.

It refuses spaces over :data:`MAX_PLANS` plans. A plan is feasible when the evaluator finds no
violation, and the evaluator judges limits by ``costs.exceeds`` (slack ``costs.limit_slack``):
the rule ``PlanModel.solve`` checks every plan it returns by, so `solve` and `enumerate` agree on
plans that sit on a limit.

A one-stage instance lists every (recipe, hardware) pair, including pairs of two adapters (which
do not fit: the evaluator says so); a staged instance pairs each recipe only with hardware of its
own adapter, as its stages' blocks do.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from typing import Iterator

import numpy as np

from planopt.models.cost.evaluator import OBJECTIVE_METRIC, Evaluator, Metrics
from planopt.models.schema.plan import Plan, Stage
from planopt.models.schema.instance import Instance

from planopt.errors import InputError
from planopt.job.model import COST_TIE_RELATIVE, TIE_BREAK_RELATIVE, SolveResult

MAX_PLANS = 200_000


@dataclass
class ScoredPlan:
    """A plan of the enumeration and every metric the evaluator gives it."""

    plan: Plan
    metrics: Metrics

    @property
    def feasible(self) -> bool:
        """Whether the plan meets every limit and fits in memory."""
        return self.metrics.feasible

    @property
    def student(self) -> str | None:
        """The student the plan trains (as its JSON names it)."""
        return self.plan.student


def stage_options(ev: Evaluator) -> list[tuple[tuple[Stage, ...], ...]]:
    """Per stage sequence of ``ev``'s student, per stage, every (recipe, hardware) the stage can run."""
    recipes, hardware, _ = ev.space()
    matched = ev.inst.training.staged
    return [tuple(tuple(Stage(r, h) for r in recipes if r.method == method and (s == 0 or not r.pretraining_tokens)
                        for h in hardware if not matched or h.lora_rank == r.lora_rank) for s, method in enumerate(seq))
            for seq in ev.inst.training.sequences()]


def students(ev: Evaluator) -> list[tuple[str | None, Evaluator]]:
    """(the name a plan gives the student, its evaluator) of every student a plan may train."""
    inst = ev.inst
    if not inst.candidate_students:
        return [(inst.student.preset, ev)]
    return [(name, ev.for_student(name)) for name in inst.student_names()]


def space_size(inst: Instance) -> int:
    """The number of plans of the instance's plan space (the module docstring)."""
    ev = Evaluator(inst)
    total = 0
    for _, own in students(ev):
        per = len(own.space()[2]) * max(1, len(own.retention_options()))
        total += sum(per * int(np.prod([len(options) for options in seq])) for seq in stage_options(own))
    return total


def every_plan(inst: Instance, limit: int = MAX_PLANS) -> Iterator[tuple[Plan, Evaluator]]:
    """Every plan of the instance and its student's evaluator; InputError over ``limit`` plans."""
    size = space_size(inst)
    if size > limit:
        raise InputError(f"enumerate: the instance has {size:,} plans, over the oracle's limit of {limit:,}; use `planopt solve`")
    ev = Evaluator(inst)
    for name, own in students(ev):
        intervals, retention = own.space()[2], own.retention_options() or [None]
        for seq in stage_options(own):
            for combo in itertools.product(*seq):
                for interval, keep in itertools.product(intervals, retention):
                    yield Plan(tuple(combo), interval, name, keep), own


def all_plans(inst: Instance, limit: int = MAX_PLANS) -> list[ScoredPlan]:
    """Every plan of the instance with its metrics (feasible or not)."""
    return [ScoredPlan(plan, own.plan_metrics(plan)) for plan, own in every_plan(inst, limit)]


def lexicographic_best(plans: list, objective: str):
    """Best objective, then the cheapest among plans within the MIP's tie-break tolerance of it, then the first in
    the enumeration order among plans whose costs are equal up to ``COST_TIE_RELATIVE`` (float noise)."""
    best = min(sp.metrics.objective(objective) for sp in plans)
    slack = TIE_BREAK_RELATIVE * max(1.0, abs(best))
    ties = [sp for sp in plans if sp.metrics.objective(objective) <= best + slack]
    cheapest = min(sp.metrics.cost_usd for sp in ties)
    return next(sp for sp in ties if sp.metrics.cost_usd <= cheapest + COST_TIE_RELATIVE * max(1.0, abs(cheapest)))


def best_of(inst: Instance, feasible: list, start: float) -> SolveResult:
    """The lexicographic best of ``feasible`` plans as a result (infeasible when there is none)."""
    seconds = time.perf_counter() - start
    if not feasible:
        return SolveResult("infeasible", inst.objective, solve_seconds=seconds, message="no enumerated plan satisfies every limit")
    best = lexicographic_best(feasible, inst.objective)
    return SolveResult("optimal", inst.objective, plan=best.plan, metrics=best.metrics, gap=0.0, solve_seconds=seconds,
                       student=best.plan.student if best.plan.student is not None else inst.student.preset)


def best_plan(inst: Instance, limit: int = MAX_PLANS) -> SolveResult:
    """The optimum by enumeration: the MIP must equal it."""
    start = time.perf_counter()
    return best_of(inst, [sp for sp in all_plans(inst, limit) if sp.feasible], start)


# --- under scenarios --------------------------------------------------------------------------------------

@dataclass
class ScenarioPlan:
    """A plan under a scenario sample: how many scenarios it breaks a limit in, its expected metrics, CVaR."""

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


def scored_under_scenarios(inst: Instance, scenarios, cvar_level: float | None = None,
                           limit: int = MAX_PLANS) -> list[ScenarioPlan]:
    """Every plan that can run (it fits in memory and, with a retention block, its option covers the rollback
    detection delay: neither is uncertain), with its violations and expected metrics over ``scenarios``
    (``ScenarioEvaluator.plan_metrics``: the same evaluator, vectorised)."""
    from planopt.models.uncertainty.scenarios import ScenarioEvaluator, cvar, limits_of, meets_all
    ev = Evaluator(inst)
    se = ScenarioEvaluator(ev, scenarios)
    limits = limits_of(inst)
    out = []
    for plan, own in every_plan(inst, limit):
        if any(v.startswith(("memory:", "retention:")) for v in own.plan_metrics(plan).violations):
            continue
        sm = se.plan_metrics(plan)
        expected = {k: float(np.mean(sm.metric(k))) for k in OBJECTIVE_METRIC.values()}
        out.append(ScenarioPlan(plan, int((~meets_all(sm, limits)).sum()), expected,
                                cvar(sm.cost_usd, cvar_level) if cvar_level is not None else None))
    return out


def best_under_scenarios(inst: Instance, scenarios, confidence: float, cvar_level: float | None = None) -> ScenarioPlan | None:
    """The plan the chance-constrained MIP must find: at most ``allowed_violations`` broken scenarios, the best
    expected objective (or least CVaR), ties broken by expected cost; None when no plan is that reliable."""
    from planopt.models.formulation.scenarios import allowed_violations
    allowed = allowed_violations(confidence, scenarios.n)
    feasible = [p for p in scored_under_scenarios(inst, scenarios, cvar_level) if p.violations <= allowed]
    if not feasible:
        return None
    name = "cvar" if cvar_level is not None else inst.objective
    best = min(p.objective(name) for p in feasible)
    ties = [p for p in feasible if p.objective(name) <= best + TIE_BREAK_RELATIVE * max(1.0, abs(best))]
    cheapest = min(p.expected["cost_usd"] for p in ties)   # then the enumeration order, as lexicographic_best
    return next(p for p in ties if p.expected["cost_usd"] <= cheapest + COST_TIE_RELATIVE * max(1.0, abs(cheapest)))


def most_reachable_share(inst: Instance, scenarios) -> float:
    """The largest share of scenarios in which one plan meets every limit."""
    plans = scored_under_scenarios(inst, scenarios)
    return max(((scenarios.n - p.violations) / scenarios.n for p in plans), default=0.0)
