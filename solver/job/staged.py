"""build -> solve -> extract for an instance whose plans may run several stages (``training.stage_sequences``).

``StagedPlanModel`` is a ``PlanModel`` whose model is the staged MIP
(``models/formulation/staged.py``); solving, limits, objectives, the tie-break by
cost and the tolerance cuts are the one-job model's. Its result's ``plan`` is a
``StagedPlan``, and the metrics come from the staged evaluator
(``models/cost/staged.py``), which the MIP must agree with.
"""

from __future__ import annotations

import pyomo.core as pyo  # not pyomo.environ: its plugins cost every CLI call ~0.3 s unused (BENCHMARKS.md §1)

from planopt.models.formulation.staged import build_staged
from planopt.models.formulation.staged_start import staged_start
from planopt.models.schema.instance import Instance
from planopt.models.schema.plan import Plan, Stage

from planopt.job.model import DEFAULT_SOLVER, PlanModel, SolveResult


class StagedPlanModel(PlanModel):
    """A built staged MIP for one instance, re-solvable under changed limits and objectives."""

    def _build(self):
        return build_staged(self.evaluator)

    def _mip_start(self):
        if self.inst.retention is not None:  # the start does not set the retention option
            return None
        return lambda: staged_start(self.model, self.data)  # formulation/staged_start.py

    def chosen(self) -> tuple[int, list[tuple[int, int, int]], int]:
        """(sequence index, (slot, recipe, hardware) per stage of it, interval index) of the loaded solution."""
        m, data = self.model, self.data
        q = next(i for i in m.Q if pyo.value(m.sequence_chosen[i]) > 0.5)
        t = next(i for i in m.I if pyo.value(m.interval_chosen[i]) > 0.5)
        stages = []
        for s in range(len(data.sequences[q])):
            b = m.stage[s]
            r = next(i for i in b.R if pyo.value(b.recipe_chosen[i]) > 0.5)
            h = next(i for i in b.H if pyo.value(b.hardware_chosen[i]) > 0.5)
            stages.append((s, r, h))
        return q, stages, t

    def retention_chosen(self) -> int | None:
        """The loaded solution's retention option index (None without a ``retention`` block)."""
        m = self.model
        return next(k for k in m.RET if pyo.value(m.retention_chosen[k]) > 0.5) if hasattr(m, "RET") else None

    def extract(self, result: SolveResult) -> None:
        q, stages, t = self.chosen()
        k = self.retention_chosen()
        self._chosen = (q, stages, t, k)
        slots = self.data.slots
        keep = None if k is None else self.evaluator.retention_options()[k]
        plan = Plan(tuple(Stage(slots[s].recipes[r], slots[s].hardware[h]) for s, r, h in stages),
                    self.data.intervals[t], self.inst.student.preset, keep)
        result.plan = plan
        result.student = self.inst.student.preset
        result.metrics = self.evaluator.plan_metrics(plan)
        m = self.model
        result.mip_values = {k: pyo.value(getattr(m, k)) for k in ("cost_usd", "wall_hours", "quality", "forgetting_points")}

    def _cut_off_last_plan(self) -> None:
        """Forbid the plan just extracted: a no-good cut on its sequence, stage recipes, hardware and interval."""
        m = self.model
        if not hasattr(m, "tolerance_cuts"):
            m.tolerance_cuts = pyo.ConstraintList()
        q, stages, t, k = self._chosen
        chosen = [m.sequence_chosen[q], m.interval_chosen[t]] + [v for s, r, h in stages
                                           for v in (m.stage[s].recipe_chosen[r], m.stage[s].hardware_chosen[h])]
        if k is not None:
            chosen.append(m.retention_chosen[k])
        m.tolerance_cuts.add(sum(chosen) <= len(chosen) - 1)


def solve_staged(inst: Instance, time_limit: float | None = None, solver: str = DEFAULT_SOLVER) -> SolveResult:
    return StagedPlanModel(inst, solver=solver).solve(time_limit)
