"""The checks of a parsed instance that need the cost model's physics (run after parsing, as PyPSA runs
its ``consistency.check_*`` functions after reading data; the schema holds input shapes only).

``check_physics`` runs them in order: failure and rollback rates under which a job can run at all
(:func:`check_failure_rates`), separate rollout hardware that can be honoured
(``rollout.check_rollout_options``), asynchronous RL's staleness options
(``asynchronous.check_staleness_options``), and a retention block some option of which covers the
rollback detection delay (``retention.check_cover``). ``models/consistency.py`` runs it among every
check of a user's instance; ``teacher_training.teacher_instance`` runs it on the teacher's own job,
which has no uncertainty overrides, teacher, candidate students or confidence, so nothing else applies.
Each raises ValueError naming the field.
"""

from __future__ import annotations

from planopt.models.cost.asynchronous import check_staleness_options
from planopt.models.cost.hardware import price_usd_per_gpu_hour, tier_of
from planopt.models.cost.pretraining import check_block
from planopt.models.cost.retention import check_cover
from planopt.models.cost.rollout import check_rollout_options
from planopt.models.schema.instance import Instance


def check_physics(inst: Instance) -> None:
    """Refuse, naming the field, what the instance's shape allows and its physics cannot honour."""
    check_failure_rates(inst)
    check_reference_prices(inst)
    if inst.hardware.rollout_gpus:
        check_rollout_options(inst, price_usd_per_gpu_hour)
    if any(s > 0 for s in inst.training.staleness_steps_options):
        check_staleness_options(inst)
    if inst.training.asynchronous_opd and ("opd" not in inst.training.methods
                                           or not any(s > 0 for s in inst.training.staleness_steps_options)):
        raise ValueError("training.asynchronous_opd: asynchronous OPD needs 'opd' in training.methods and a staleness "
                         "above 0 in training.staleness_steps_options; expected false")
    if inst.retention is not None:
        check_cover(inst)
    check_block(inst)


def check_reference_prices(inst: Instance) -> None:
    """Under ``hardware.offers: reference`` every entry without a price of its own needs gpus.json's price at its
    tier. (Under ``catalog`` a count no offer holds is left out of the plan space and listed by ``validate``:
    ``hardware.unheld_counts``.)"""
    hw = inst.hardware
    if hw.offers != "reference":
        return
    for field in ("gpus", "rollout_gpus"):
        for n, option in enumerate(getattr(hw, field)):
            if option.price_usd_per_gpu_hour is None and price_usd_per_gpu_hour(inst, option) is None:
                raise ValueError(f"hardware.{field}.{n}.price_usd_per_gpu_hour: the catalog has no "
                                 f"{tier_of(inst, option).replace('_', '-')} price for {option.name}; give one, "
                                 "or another tier")


def check_failure_rates(inst: Instance) -> None:
    r"""Refuse failure (and rollback) rates under which even the smallest gang the instance offers fails, on
    average, before it has restarted: :math:`n_{min} (\lambda + \lambda_{rb})\, r \ge 1` with :math:`r` the restart
    time. The checkpoint overhead of ``physics.checkpoint_overhead_share`` is a first-order model of rare failures;
    past this point no plan makes progress, and the MIP's coefficients would only be numbers without a meaning."""
    rel = inst.reliability
    restart_hours = rel.restart_minutes / 60.0
    smallest = min((c for o in inst.hardware.gpus for c in o.counts), default=1)
    rollback = inst.retention.rollback_events_per_gpu_hour if inst.retention is not None else 0.0
    rate = rel.failures_per_gpu_hour + rollback
    if restart_hours > 0 and smallest * rate * restart_hours >= 1.0:
        field = ("retention.rollback_events_per_gpu_hour" if rollback > rel.failures_per_gpu_hour
                 else "reliability.failures_per_gpu_hour")
        every = 3600.0 / (smallest * rate)
        raise ValueError(f"{field}: {rate:g} events per GPU-hour is a failure every {every:.3g} s on the smallest gang "
                         f"({smallest} GPU{'s' if smallest > 1 else ''}), sooner than its {rel.restart_minutes:g}-minute "
                         f"restart, so no plan would make progress; published clusters see about 1e-5 to 1e-4 per "
                         f"GPU-hour (models/catalog/defaults.py)")
