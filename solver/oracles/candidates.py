"""The brute-force oracle of a job with a choice of student (``candidate_students``): every student's
plans, each scored by that student's evaluator, the best chosen by the lexicographic rule of
``oracle.lexicographic_best`` over all of them. The candidate MIP (``candidate_run.py``) is tested against it."""

from __future__ import annotations

import time
from dataclasses import dataclass

from planopt.models.schema.instance import Instance

from planopt.oracles.by_plan import MAX_PLANS, ScoredPlan, all_plans, lexicographic_best, space_size
from planopt.job.model import SolveResult


@dataclass
class StudentPlan(ScoredPlan):
    student: str = ""


def candidate_space_size(inst: Instance) -> int:
    return sum(space_size(inst.for_student(n)) for n in inst.student_names())


def all_candidate_plans(inst: Instance, limit: int = MAX_PLANS) -> list[StudentPlan]:
    """Every plan of every student with its metrics (feasible or not)."""
    from planopt.errors import InputError
    size = candidate_space_size(inst)
    if size > limit:
        raise InputError(f"enumerate: the instance has {size:,} plans over its students, over the oracle's limit of "
                         f"{limit:,}; use `planopt solve`")
    return [StudentPlan(sp.plan.with_student(name), sp.metrics, name) for name in inst.student_names()
            for sp in all_plans(inst.for_student(name), limit)]


def best_candidate_plan(inst: Instance, limit: int = MAX_PLANS) -> SolveResult:
    start = time.perf_counter()
    return _best_of(inst, [sp for sp in all_candidate_plans(inst, limit) if sp.feasible], start)


def _best_of(inst: Instance, feasible: list[StudentPlan], start: float) -> SolveResult:
    """The lexicographic best of ``feasible`` plans as a result naming its student (infeasible when none)."""
    seconds = time.perf_counter() - start
    if not feasible:
        return SolveResult("infeasible", inst.objective, solve_seconds=seconds, message="no enumerated plan satisfies every limit")
    best = lexicographic_best(feasible, inst.objective)
    return SolveResult("optimal", inst.objective, plan=best.plan, metrics=best.metrics, gap=0.0, solve_seconds=seconds,
                       student=best.student)


def best_candidate_plan_arrays(inst: Instance) -> SolveResult:
    """The same best plan with each student's space scored by the array oracle (``enumerate_arrays``, up to its
    limit per student); the students' bests compared by the lexicographic rule. (A student's best is the
    cheapest of its own ties; the rule's tie slack is 1e-7 relative, so two students' bests closer than
    that on the objective are told apart by cost as the plan-by-plan oracle would.)"""
    from planopt.oracles.arrays import best_plan_arrays
    start = time.perf_counter()
    bests = []
    for name in inst.student_names():
        res = best_plan_arrays(inst.for_student(name))
        if res.status == "optimal":
            bests.append(StudentPlan(res.plan.with_student(name), res.metrics, name))
        elif res.status != "infeasible":
            return res
    return _best_of(inst, bests, start)
