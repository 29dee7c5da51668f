r"""A plan's gangs: the sets of GPUs it holds together, and the GPU-hours each needs (a portfolio's view of a plan).

In a portfolio a job's plan draws its GPUs from shared pools (reserved, on demand, spot), and a
**gang** is a set of GPUs the plan holds together, whole or not at all:

- each stage's **training** GPUs, ``count`` GPUs of the stage's type;
- a stage on a split choice (separate rollout GPUs, ``rollout.py``) also holds its **rollout** GPUs. The
  two are one synchronous job: they run in the same buckets, on the same tier, for the same hours
  (a *bundle*; ``partner`` names the training gang);
- an OPD stage whose teacher is trained as a stage (``teacher_training.py``) follows the teacher's own
  plan, which holds gangs of its own (``teacher``, ``teacher_rollout``) before any stage of the student.

Gangs run in ``order``: the teacher's, then the stages one after another (a later stage starts from
the score the one before reached). For a gang of a stage on hardware :math:`h` at interval
:math:`\tau` with compute hours :math:`T` (``Evaluator.compute_hours``) and a share :math:`\sigma` of
them run on spot, the GPU-hours of the pools are

.. math::
   G^{ns} = n (1 + o)\, T (1 - \sigma), \qquad G^{s} = n (1 + o^s)\, T \sigma

(:math:`n` the gang's count: the training or the rollout GPUs), with :math:`o` the plan's own
overhead share (checkpoints, failures, rollbacks and, with a retention option, the milestone
re-work: as ``Evaluator.metrics``) and :math:`o^s` the same with the spot preemptions of every GPU
the bundle holds added to its failures (:func:`spot_overhead_share`):

.. math::
   o^s = \frac{w}{\tau} + (\lambda + n p_g + n_r p_{g_r}) (\tau/2 + \rho)\ \text{(exact: Daly)} + o^{rb} + \delta

Money. At the instance's own prices the plan's GPUs cost :math:`\pi^{gpu} (1 + o) T` per stage
(``usd_per_hour_of_gpus``; for a bundle the two gangs' shares, :math:`n p_g` and :math:`n_r p_{g_r}`),
and a portfolio prices those GPU-hours by its pools instead: the job's **non-compute** money is the
evaluator's cost less that GPU money, plus, for the hours spot adds, the money that runs by the
training hour (hot checkpoint storage or the retention option's, operations, and the stage's pool of
environment workers):
:math:`\eta\, (o^s - o)\, T \sigma` per gang (``usd_per_train_hour_other``).

A trained teacher's plan :math:`\theta` enters the student's cost as its whole cost :math:`c_\theta`
and its wall hours as the OPD recipe's lead time; in a portfolio its GPUs are gangs of their own, so
the OPD stage's own lead time is the recipe's less :math:`w_\theta`, and the teacher's GPU money at
its prices is taken out of the non-compute money like the student's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional

from planopt.models.cost import physics as ph
from planopt.models.cost.hardware import price_usd_per_gpu_hour
from planopt.models.cost.retention import deep_rollback_share, rollback_share, storage_usd_per_train_hour
from planopt.models.schema.plan import HardwareChoice, Plan

ROLES = ("training", "rollout", "teacher", "teacher_rollout")


@dataclass(frozen=True)
class GangNeed:
    """One gang of a plan and what it needs of the pools (the module docstring)."""

    stage: Optional[int]        # the student's stage, 0-based; None: the teacher's plan
    role: str                   # one of ROLES
    gpu: str                    # the GPU type (the instance's key; in a portfolio, the pool)
    count: int                  # GPUs held together
    compute_hours: float        # T, the stage's compute hours (no failures)
    overhead: float             # o: the plan's overhead share on this stage
    spot_overhead: float        # o^s: with the spot preemptions of the bundle's GPUs
    usd_per_gpu_hour: float     # this gang's GPUs' price per GPU-hour at the instance's prices
    usd_per_train_hour_other: float  # eta: money by the training hour that is not GPUs (storage, operations)
    lead_hours: float           # from the job's release, before the gang may run
    partner: Optional[int] = None    # a rollout gang: the index of its training gang (same buckets, tier, hours)

    def gpu_hours(self, spot_share: float) -> tuple[float, float]:
        """(off-spot, spot) GPU-hours run with a share ``spot_share`` of the compute hours on spot."""
        return (self.count * (1.0 + self.overhead) * self.compute_hours * (1.0 - spot_share),
                self.count * (1.0 + self.spot_overhead) * self.compute_hours * spot_share)

    def train_hours(self, spot_share: float) -> float:
        """Wall hours of training (failures and checkpoints included) at that spot share."""
        return self.compute_hours * ((1.0 + self.overhead) * (1.0 - spot_share) + (1.0 + self.spot_overhead) * spot_share)

    def gpu_usd_at_instance_prices(self) -> float:
        """What the evaluator charges for this gang's GPUs (off spot, at the instance's prices)."""
        return self.count * self.usd_per_gpu_hour * (1.0 + self.overhead) * self.compute_hours

    def spot_extra_usd(self, spot_share: float) -> float:
        """The money by the training hour of the hours spot adds: eta (o^s - o) T sigma (0 for a rollout gang,
        whose hours are its training gang's)."""
        if self.role in ("rollout", "teacher_rollout"):
            return 0.0
        return self.usd_per_train_hour_other * (self.spot_overhead - self.overhead) * self.compute_hours * spot_share


def spot_overhead_share(ev, hw: HardwareChoice, interval_minutes: float, preemptions: Mapping[str, float]) -> float:
    r""":math:`o^s`: the overhead share of ``hw`` at ``interval_minutes`` with the spot preemptions per GPU-hour of its
    types (``preemptions``, by GPU type; absent: none) added to its failures, every GPU of a split choice
    included, plus the rollback share every plan of a retention block pays (as ``Evaluator.metrics``)."""
    hp = ev.hardware(hw)
    rate = hp.failures_per_hour + hw.count * preemptions.get(hw.gpu, 0.0)
    if hw.split:
        rate += hw.rollout_count * preemptions.get(hw.rollout_gpu, 0.0)
    return (ph.checkpoint_overhead_share(hp.checkpoint_write_hours, rate, interval_minutes / 60.0, hp.restart_hours)
            + rollback_share(ev.inst, hw.count, interval_minutes, hp.restart_hours))


def usd_per_train_hour_other(ev, hw: HardwareChoice, interval_minutes: float, retention, operations_usd_per_hour: float) -> float:
    r""":math:`\eta`: money by the training hour that is not GPUs: hot checkpoints (``keep_last``, or the retention
    option's :math:`s_h(\tau, \rho)`), operations (the student's, ``operations_usd_per_hour``) and the choice's pool
    of environment workers (``HardwareProfile.environments_usd_per_hour``, 0 without one)."""
    inst, hp = ev.inst, ev.hardware(hw)
    if retention is None:
        storage = inst.checkpointing.keep_last * hp.checkpoint_gb * inst.storage.hot_usd_per_gb_month / ph.d.HOURS_PER_MONTH
    else:
        storage = float(storage_usd_per_train_hour(inst, retention, hp.checkpoint_gb, hw.count, interval_minutes))
    return storage + operations_usd_per_hour + hp.environments_usd_per_hour


def stage_gangs(ev, hw: HardwareChoice, recipe, interval_minutes: float, retention, preemptions: Mapping[str, float],
                stage: Optional[int], lead_hours: float, first_index: int, operations_usd_per_hour: float,
                roles: tuple[str, str] = ("training", "rollout")) -> list[GangNeed]:
    """The gangs of one stage (its training GPUs and, on a split choice, its rollout GPUs)."""
    inst, hp = ev.inst, ev.hardware(hw)
    tau = interval_minutes
    o = hp.overhead_share(tau) + rollback_share(inst, hw.count, tau, hp.restart_hours)
    deep = 0.0 if retention is None else float(deep_rollback_share(inst, retention, hw.count, tau))
    o, o_s = o + deep, spot_overhead_share(ev, hw, tau, preemptions) + deep
    T = ev.compute_hours(recipe, hw)
    eta = usd_per_train_hour_other(ev, hw, tau, retention, operations_usd_per_hour)
    out = [GangNeed(stage, roles[0], hw.gpu, hw.count, T, o, o_s, hp.price_usd_per_gpu_hour, eta, lead_hours)]
    if hw.split:
        price = price_usd_per_gpu_hour(inst, hp.rollout_option, hw.rollout_count)
        out.append(GangNeed(stage, roles[1], hw.rollout_gpu, hw.rollout_count, T, o, o_s, price, eta, lead_hours,
                            partner=first_index))
    return out


def teacher_gangs(inst, recipe, preemptions: Mapping[str, float], evaluator: type, first_index: int) -> list[GangNeed]:
    """The gangs of the teacher plan an OPD recipe distils from (none unless ``teacher.training``); the teacher's job
    pays the student's operations per hour (its own are zero, ``teacher_training.py``)."""
    if recipe.teacher_training is None:
        return []
    from planopt.models.cost.teacher_training import teacher_space
    theta = recipe.teacher_training
    tev = evaluator(teacher_space(inst, evaluator).inst)
    stage = theta.stages[0]
    lead = tev.recipe(stage.recipe).lead_hours
    return stage_gangs(tev, stage.hardware, stage.recipe, theta.checkpoint_interval_minutes, theta.retention, preemptions,
                       None, lead, first_index, inst.operations.usd_per_wall_hour, roles=("teacher", "teacher_rollout"))


def plan_gangs(ev, plan: Plan, preemptions: Mapping[str, float]) -> list[GangNeed]:
    """Every gang of ``plan`` in the order they run (the module docstring); ``ev`` the instance's evaluator,
    ``preemptions`` the spot preemptions per GPU-hour by GPU type."""
    own = ev.for_student(plan.student)
    inst, tau = own.inst, plan.checkpoint_interval_minutes
    ops = inst.operations.usd_per_wall_hour
    out: list[GangNeed] = []
    for stage in plan.stages:
        out += teacher_gangs(inst, stage.recipe, preemptions, type(own), len(out))
    for s, stage in enumerate(plan.stages):
        lead = own.recipe(stage.recipe).lead_hours
        if stage.recipe.teacher_training is not None:   # the teacher's wall is its gangs' now, not a lead time
            from planopt.models.cost.teacher_training import teacher_option
            lead -= teacher_option(inst, stage.recipe.teacher_training, stage.recipe.method, type(own)).wall_hours
        out += stage_gangs(own, stage.hardware, stage.recipe, tau, plan.retention, preemptions, s, max(0.0, lead),
                           len(out), ops)
    return out

