"""build -> solve -> extract for a job whose student is a choice (``candidate_students``).

``CandidatePlanModel`` is a ``PlanModel`` whose model is the union of one block
per student (``models/formulation/candidates.py``); solving, limits, objectives,
the tie-break by cost and the tolerance cuts are the one-job model's. Its result
names the student (``result.student``, ``plan.student`` in the JSON) and its
metrics come from that student's evaluator, which the MIP must agree with.
"""

from __future__ import annotations

import pyomo.core as pyo  # not pyomo.environ: its plugins cost every CLI call ~0.3 s unused (BENCHMARKS.md §1)

from planopt.models.formulation.candidates import build_candidates
from planopt.models.schema.plan import Plan

from planopt.job.model import PlanModel, SolveResult


class CandidatePlanModel(PlanModel):
    """A built MIP choosing the student with everything else, re-solvable under changed limits and objectives."""

    def _build(self):
        return build_candidates(self.inst)

    def _mip_start(self):
        return None  # HiGHS finds its own: the blocks' starts are per student

    def extract(self, result: SolveResult) -> None:
        m, data = self.model, self.data
        j = next(i for i in m.J if pyo.value(m.student_chosen[i]) > 0.5)
        b, d = m.student[j], data.blocks[j]
        r = next(i for i in b.R if pyo.value(b.recipe_chosen[i]) > 0.5)
        h = next(i for i in b.H if pyo.value(b.hardware_chosen[i]) > 0.5)
        t = next(i for i in b.I if pyo.value(b.interval_chosen[i]) > 0.5)
        k = next((i for i in b.RET if pyo.value(b.retention_chosen[i]) > 0.5), None) if hasattr(b, "RET") else None
        self._chosen = (j, r, h, t, k)
        recipe, hardware, interval = d.recipes[r], d.hardware[h], d.intervals[t]
        ev = data.evaluators[j]                                   # the chosen student's evaluator
        keep = None if k is None else ev.retention_options()[k]
        result.plan = Plan.of(recipe, hardware, interval, keep, student=data.names[j])
        result.student = data.names[j]
        result.metrics = ev.metrics(recipe, hardware, interval, keep)
        result.mip_values = {k: pyo.value(getattr(m, k)) for k in ("cost_usd", "wall_hours", "quality", "forgetting_points")}

    def _cut_off_last_plan(self) -> None:
        """Forbid the plan just extracted: a no-good cut on its student, recipe, hardware, interval (and retention)."""
        m = self.model
        if not hasattr(m, "tolerance_cuts"):
            m.tolerance_cuts = pyo.ConstraintList()
        j, r, h, t, k = self._chosen
        b = m.student[j]
        if k is None:
            m.tolerance_cuts.add(m.student_chosen[j] + b.recipe_chosen[r] + b.hardware_chosen[h] + b.interval_chosen[t] <= 3)
        else:
            m.tolerance_cuts.add(m.student_chosen[j] + b.recipe_chosen[r] + b.hardware_chosen[h] + b.interval_chosen[t]
                                 + b.retention_chosen[k] <= 4)
