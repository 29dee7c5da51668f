"""build -> solve -> extract for a job whose student is a choice (``candidate_students``).

``CandidatePlanModel`` is a ``PlanModel`` whose model is the union of one block
per student (``models/formulation/candidates.py``); solving, limits, objectives,
the tie-break by cost and the tolerance cuts are the one-job model's. Its result
names the student (``result.student``, ``plan.student`` in the JSON) and its
metrics come from that student's evaluator, which the MIP must agree with.
"""

from __future__ import annotations

import time

import pyomo.core as pyo  # not pyomo.environ: its plugins cost every CLI call ~0.3 s unused (BENCHMARKS.md §1)

from planopt.models.formulation.candidates import build_candidates
from planopt.models.plan import Plan
from planopt.models.schema import Instance

from .run import DEFAULT_SOLVER, PlanModel, SolveResult, drop_constant_rows, make_solver
from .verbosity import note


class CandidatePlanModel(PlanModel):
    """A built MIP choosing the student with everything else, re-solvable under changed limits and objectives."""

    def __init__(self, inst: Instance, evaluator=None, solver: str = DEFAULT_SOLVER):
        self.inst = inst
        self.solver = make_solver(solver)
        start = time.perf_counter()
        self.model, self.data = build_candidates(inst)
        self.evaluator = self.data.evaluators[0]  # the instance's own student's; each block has its own
        self.build_seconds = time.perf_counter() - start
        note(f"model of {len(self.data.names)} students built in {self.build_seconds:.3f} s")
        if self.model is not None:
            drop_constant_rows(self.model)
        from planopt.models.formulation import LIMITS
        self.limits = {k: v for k, v in inst.constraints.model_dump().items() if k in LIMITS}
        self.objective = inst.objective

    def _solve_once(self, time_limit):
        if self.model is None:
            return SolveResult("infeasible", self.objective, build_seconds=self.build_seconds,
                               message="no student has a recipe that fits on any (GPU, count) option")
        return super()._solve_once(time_limit)

    def extract(self, result: SolveResult) -> None:
        m, data = self.model, self.data
        j = next(i for i in m.J if pyo.value(m.student_chosen[i]) > 0.5)
        b, d = m.student[j], data.blocks[j]
        r = next(i for i in b.R if pyo.value(b.recipe_chosen[i]) > 0.5)
        h = next(i for i in b.H if pyo.value(b.hardware_chosen[i]) > 0.5)
        t = next(i for i in b.I if pyo.value(b.interval_chosen[i]) > 0.5)
        self._chosen = (j, r, h, t)
        recipe, hardware, interval = d.recipes[r], d.hardware[h], d.intervals[t]
        result.plan = Plan.of(recipe, hardware, interval)
        result.student = data.names[j]
        result.metrics = data.evaluators[j].metrics(recipe, hardware, interval)
        result.mip_values = {k: pyo.value(getattr(m, k)) for k in ("cost_usd", "wall_hours", "quality", "forgetting_points")}

    def _cut_off_last_plan(self) -> None:
        """Forbid the plan just extracted: a no-good cut on its student, recipe, hardware and interval."""
        m = self.model
        if not hasattr(m, "tolerance_cuts"):
            m.tolerance_cuts = pyo.ConstraintList()
        j, r, h, t = self._chosen
        b = m.student[j]
        m.tolerance_cuts.add(m.student_chosen[j] + b.recipe_chosen[r] + b.hardware_chosen[h] + b.interval_chosen[t] <= 3)
