"""The checks of a parsed instance that need the cost model's physics (run after parsing, as PyPSA runs
its ``consistency.check_*`` functions after reading data; the schema holds input shapes only).

``check_physics`` runs them in order: separate rollout hardware that can be honoured
(``rollout.check_rollout_options``), asynchronous RL's staleness options
(``asynchronous.check_staleness_options``), and a retention block some option of which covers the
rollback detection delay (``retention.check_cover``). ``models/consistency.py`` runs it among every
check of a user's instance; ``teacher_training.teacher_instance`` runs it on the teacher's own job,
which has no uncertainty overrides, teacher, candidate students or confidence, so nothing else applies.
Each raises ValueError naming the field.
"""

from __future__ import annotations

from planopt.models.cost.asynchronous import check_staleness_options
from planopt.models.cost.hardware import price_usd_per_gpu_hour
from planopt.models.cost.retention import check_cover
from planopt.models.cost.rollout import check_rollout_options
from planopt.models.schema.instance import Instance


def check_physics(inst: Instance) -> None:
    """Refuse, naming the field, what the instance's shape allows and its physics cannot honour."""
    if inst.hardware.rollout_gpus:
        check_rollout_options(inst, price_usd_per_gpu_hour)
    if any(s > 0 for s in inst.training.staleness_steps_options):
        check_staleness_options(inst)
    if inst.retention is not None:
        check_cover(inst)
