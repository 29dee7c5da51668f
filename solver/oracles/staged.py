"""The brute-force oracle of staged plans: every sequence, stage recipe, stage hardware and interval.

The staged MIP (``staged_run.py``) is tested against it on instances small
enough to list (at most ``oracle.MAX_PLANS`` plans); each plan is scored by the
staged evaluator (``models/cost/staged.py``), and the best is chosen by the
same lexicographic rule as for one-stage plans (``oracle.lexicographic_best``).
"""

from __future__ import annotations

import itertools
import time

from planopt.models.cost.evaluator import Evaluator
from planopt.models.schema.instance import Instance
from planopt.models.schema.plan import Plan, Stage

from planopt.errors import InputError
from planopt.oracles.by_plan import MAX_PLANS, ScoredPlan, lexicographic_best
from planopt.job.model import SolveResult


def staged_space(ev: Evaluator) -> list[tuple[tuple[Stage, ...], ...]]:
    """Per sequence, per stage, every (recipe, hardware) the stage can run."""
    recipes, hardware, _ = ev.space()
    out = []
    for seq in ev.inst.training.sequences():
        out.append(tuple(tuple(Stage(r, h) for r in recipes if r.method == method for h in hardware
                               if h.lora_rank == r.lora_rank) for method in seq))
    return out


def staged_space_size(inst: Instance) -> int:
    ev = Evaluator(inst)
    n_i = len(ev.space()[2]) * max(1, len(ev.retention_options()))  # intervals × retention options
    total = 0
    for stages in staged_space(ev):
        n = n_i
        for options in stages:
            n *= len(options)
        total += n
    return total


def all_staged_plans(inst: Instance, limit: int = MAX_PLANS) -> list[ScoredPlan]:
    """Every staged plan of the instance with its metrics (feasible or not)."""
    size = staged_space_size(inst)
    if size > limit:
        raise InputError(f"enumerate: the instance has {size:,} staged plans, over the oracle's limit of {limit:,}; "
                         "use `planopt solve`")
    ev = Evaluator(inst)
    intervals = ev.space()[2]
    retention = ev.retention_options() or [None]
    out = []
    for stages in staged_space(ev):
        for combo in itertools.product(*stages):
            for interval, keep in itertools.product(intervals, retention):
                plan = Plan(tuple(combo), interval, inst.student.preset, keep)
                out.append(ScoredPlan(plan, ev.plan_metrics(plan)))
    return out


def best_staged_plan(inst: Instance, limit: int = MAX_PLANS) -> SolveResult:
    start = time.perf_counter()
    plans = [sp for sp in all_staged_plans(inst, limit) if sp.feasible]
    seconds = time.perf_counter() - start
    if not plans:
        return SolveResult("infeasible", inst.objective, solve_seconds=seconds,
                           message="no enumerated plan satisfies every limit")
    best = lexicographic_best(plans, inst.objective)
    return SolveResult("optimal", inst.objective, plan=best.plan, metrics=best.metrics, gap=0.0, solve_seconds=seconds,
                       student=inst.student.preset)
