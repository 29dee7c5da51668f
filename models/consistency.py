"""Consistency checks of a parsed instance: the cross-field rules that need the domain (the cost model's
physics, the uncertainty model, the teacher's own job), run after the schema has parsed the input, as
PyPSA runs its ``consistency.check_*`` functions after reading data. The schema
(``models/schema/``) holds input shapes only.

:func:`check_instance` runs every check, in this order (each raises ValueError naming the field, the
message the entry points print after the file's name):

1. ``uncertainty``'s keys name parameters of the instance (``uncertainty/model.check_overrides``);
2. the physics (``cost/consistency.check_physics``): separate rollout hardware, asynchronous RL's
   staleness options, retention options that cover the rollback detection delay;
3. a teacher trained as a stage (``cost/teacher_training.check_teacher_training``: its own job is
   built, checked and priced).

Every entry point that reads an instance runs it: ``planopt.instance`` (``load_instance``,
``parse_instance``), the portfolio loader (each job, and each job restricted to the portfolio),
calibration cases, the random portfolio generator and a fitted instance.
"""

from __future__ import annotations

from planopt.models.cost.consistency import check_physics
from planopt.models.cost.evaluator import Evaluator
from planopt.models.cost.teacher_training import check_teacher_training
from planopt.models.schema.instance import Instance
from planopt.models.uncertainty.model import check_overrides


def check_instance(inst: Instance) -> None:
    """Every consistency check of ``inst`` (see the module's doc); ValueError naming the field."""
    if inst.uncertainty:
        check_overrides(inst)  # the parameter names depend on the instance
    check_physics(inst)
    if inst.teacher is not None and inst.teacher.training is not None:
        check_teacher_training(inst, Evaluator)  # builds the teacher's own job (an Instance)
