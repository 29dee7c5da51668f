r"""The MIP of a job that may post-train one of several students (``candidate_students``).

Each student :math:`j` is a block built by the single-job steps over its own
coefficients (its architecture, its scores on the task: ``Instance.for_student``),
pruned exactly as a one-student job is (``data.prune``: dominance within the
student's own options). A one-hot :math:`u_j` chooses the student, and each
block's one-hot rows are scaled by it:

.. math::
   \sum_j u_j = 1, \qquad \sum_r x_{j,r} = \sum_h z_{j,h} = \sum_\tau y_{j,\tau} \;(= \sum_k v_{j,k}) = u_j \quad\text{(choices_of_student)}

Every other row of a block is homogeneous in its choices (work, hours and money
are 0 when its choices are), so a block not chosen contributes nothing and the
chosen one is exactly the one-student model. With a ``retention`` block each student's
block has its own retention one-hot :math:`v_{j,k}` (``retention.py``), scaled by :math:`u_j` too. The plan's metrics are the sums
over the blocks, plus the fixed operations cost :math:`K` once:

.. math::
   \mathrm{cost} = K + \sum_j \mathrm{cost}_j, \quad \mathrm{wall} = \sum_j \mathrm{wall}_j, \quad
   q = \sum_j q_j, \quad F = \sum_j F_j

A limit fixes to 0 each recipe of each student that breaks it on its own
(``limits.recipe_within_limits`` over every block's recipes, with each student's floors).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pyomo.core as pyo  # not pyomo.environ: its plugins cost every CLI call ~0.3 s unused (BENCHMARKS.md §1)

from planopt.models.cost.evaluator import Evaluator
from planopt.models.schema.instance import Instance
from planopt.models.formulation.accounting import define_accounting
from planopt.models.formulation.checkpointing import define_checkpointing
from planopt.models.formulation.choices import define_choices
from planopt.models.formulation.data import FormulationData, collect, prune
from planopt.models.formulation.limits import recipe_floors, define_limits, recipe_within_limits
from planopt.models.formulation.linear import flattened, linear
from planopt.models.formulation.objectives import activate_objective, define_objectives
from planopt.models.formulation.retention import define_retention
from planopt.models.formulation.work import define_work


@dataclass
class CandidatesData:
    names: list[str]
    evaluators: list[Evaluator]
    blocks: list[FormulationData | None]        # None: the student has no recipe or no hardware that holds one

    @property
    def recipes(self) -> list:
        return [r for d in self.blocks if d is not None for r in d.recipes]

    @property
    def hardware(self) -> list:
        return [h for d in self.blocks if d is not None for h in d.hardware]


def collect_candidates(inst: Instance, prune_dominated: bool = True) -> CandidatesData:
    names = inst.student_names()
    evaluators = [Evaluator(inst.for_student(n)) for n in names]
    blocks = []
    for ev in evaluators:
        data = collect(ev)
        if data.recipes and data.hardware and prune_dominated:
            data = prune(data)
        blocks.append(data if data.recipes and data.hardware else None)
    return CandidatesData(names, evaluators, blocks)


def build_candidates(inst: Instance) -> tuple[pyo.ConcreteModel | None, CandidatesData]:
    data = collect_candidates(inst)
    if all(d is None for d in data.blocks):
        return None, data
    m = pyo.ConcreteModel(name=inst.name)
    m.J = pyo.Set(initialize=range(len(data.names)))
    m.student_chosen = pyo.Var(m.J, domain=pyo.Binary)
    u = list(m.student_chosen.values())
    m.one_student = pyo.Constraint(expr=linear([1.0] * len(u), u) == 1)
    m.student = pyo.Block(m.J)
    floors: dict[str, list] = {}
    fixed = []
    for j, d in enumerate(data.blocks):
        b = m.student[j]
        if d is None:
            u[j].fix(0)
            for name in ("cost_usd", "wall_hours", "quality", "forgetting_points"):
                b.add_component(name, pyo.Expression(expr=0.0))
            continue
        for name, values in recipe_floors(d).items():
            floors.setdefault(name, []).append(np.asarray(values, dtype=float))
        d = replace(d, constant_usd=0.0)  # K is the plan's, added once
        define_choices(b, d)
        define_work(b, d, one_row_per_hardware=True)
        define_checkpointing(b, d)
        define_accounting(b, d)
        define_retention(b, d)  # the student's retention option, when the instance has a retention block
        b.one_recipe.deactivate()
        b.one_hardware.deactivate()
        b.one_interval.deactivate()
        one_hots = [b.recipe_chosen, b.hardware_chosen, b.interval_chosen]
        if hasattr(b, "one_retention"):
            b.one_retention.deactivate()
            one_hots.append(b.retention_chosen)
        b.choices_of_student = pyo.ConstraintList()
        for var in one_hots:
            values = list(var.values())
            b.choices_of_student.add(linear([1.0] * len(values) + [-1.0], values + [u[j]]) == 0)
        fixed.extend(b.recipe_chosen.values())
    m.cost_usd = pyo.Expression(expr=flattened(inst.operations.fixed_usd + sum(m.student[j].cost_usd for j in m.J)))
    for name in ("wall_hours", "quality", "forgetting_points"):
        m.add_component(name, pyo.Expression(expr=flattened(sum(getattr(m.student[j], name) for j in m.J))))
    define_limits(m, inst.constraints)
    m.recipe_floor = {name: np.concatenate(parts) for name, parts in floors.items()}
    m.limit_fixed_vars = fixed
    recipe_within_limits(m)
    define_objectives(m)
    activate_objective(m, inst.objective)
    return m, data
