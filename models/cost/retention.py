r"""Checkpoint retention as a choice: how many recent checkpoints, which tier, and the rollbacks they allow.

An instance with a ``retention`` block (``schema.Retention``) makes the plan
choose :math:`\rho = (k, \text{tier}, m)`: keep the newest :math:`k` checkpoints,
in hot or cold storage, and the newest :math:`m` milestones (every
:math:`s`-th checkpoint, ``milestone_every_checkpoints``, kept cold). Without the block nothing here applies (``keep_last``
checkpoints kept hot, no rollback priced), so existing instances are unchanged.

**Rollback events.** A loss spike or divergence (rate :math:`\lambda_{rb}` per
GPU-hour, ``defaults.ROLLBACK_EVENTS_PER_GPU_HOUR``) is noticed
:math:`D` hours after it happens (``rollback_detection_hours``); every checkpoint
written meanwhile is bad. With writes every :math:`\tau` hours and the event at
phase :math:`u \in [0, \tau)` after the last good write, the bad checkpoints
number :math:`b = \lfloor (u + D)/\tau \rfloor \le \lceil D/\tau \rceil`, and the
run can go back to the good one only if it is still kept:

.. math::
   b < k \iff u < k\tau - D, \qquad P_{deep} = \min(1, \max(0, 1 - k + D/\tau))

When every recent checkpoint is spoiled (share :math:`P_{deep}`), the run falls back
to the newest milestone written before the event, :math:`j \in \{0..s-1\}`
intervals older (uniform); it is still kept when the milestones written since,
:math:`\lfloor (j + b)/s \rfloor`, number fewer than :math:`m`. So

.. math::
   \text{covers}(k, m, \tau) \iff k \ge \lceil D/\tau \rceil + 1 \ \lor\
   m \ge \lfloor (s - 1 + \lceil D/\tau \rceil)/s \rfloor + 1

A plan that does not cover :math:`D` is infeasible (an event could leave no good
checkpoint: the run would restart from scratch, which this model does not price).
A covered event loses :math:`u + D` hours (:math:`u + D + j\tau` after a fall-back)
plus the restart :math:`r`; with :math:`u, j` uniform, per compute hour (first
order, as the failure term of ``physics.checkpoint_overhead_share``):

.. math::
   o^{rb}_h(\tau) + \delta_h(\tau,\rho) = n_h\, \lambda_{rb}\, (\tau/2 + D + r)
       + n_h\, \lambda_{rb}\, P_{deep}\, (s - 1)\tau/2

Both add to :math:`o_h(\tau)` (so they sit in the ``failure_rework`` hours); only
:math:`\delta` depends on :math:`\rho`.

**Storage per training hour** of checkpoint size :math:`C_h` (GB):

.. math::
   s_h(\tau, \rho) = C_h \Big[ p_{tier} \frac{\max(k\tau,\ m_{tier})}{730\,\tau}
                     + n_h (\lambda + \lambda_{rb})\, g_{tier} \Big]

A checkpoint is written every :math:`\tau` and lives :math:`k\tau` hours, but is
billed at least the tier's minimum :math:`m_{tier}` (Glacier IR: 2,160 h; hot: 0),
so hot storage is today's :math:`k C p_{hot} H/730`. Every restart (failure rate
:math:`\lambda = n_h\lambda_{GPU}`, and every rollback) reads one checkpoint back
at :math:`g_{tier}` per GB (cold: $0.03; hot: free). With :math:`m > 0`, the
milestones add :math:`C [p_{cold} \max(m s\tau, m_{cold})/(730 s\tau) + n_h \lambda_{rb}
P_{deep}\, g_{cold}]` (one written every :math:`s\tau`, kept :math:`m s\tau`; a fall-back
reads one). The storage cost line is :math:`s_h(\tau,\rho)\, H_{train}` + the
archived milestones (``checkpointing.milestones_kept``, after the run) and logs as before.
"""

from __future__ import annotations

import math

import numpy as np

from planopt.models.catalog import defaults as d
from planopt.models.schema.plan import RETENTION_TIERS, RetentionChoice  # noqa: F401  (the plan's option; re-exported)

TIERS = RETENTION_TIERS


def retention_options(inst) -> list[RetentionChoice]:
    """The instance's retention options, in keep_last, milestones, tier order; [] without a ``retention`` block."""
    rt = inst.retention
    if rt is None:
        return []
    ks = sorted(set(rt.keep_last_options or [inst.checkpointing.keep_last]))
    ms = sorted(set(rt.milestone_options))
    tiers = [t for t in TIERS if t in rt.tiers]
    return [RetentionChoice(k, t, m) for k in ks for m in ms for t in tiers]


def most_bad(inst, interval_minutes: float) -> int:
    r""":math:`\lceil D/\tau \rceil`, the most checkpoints an event can spoil (:math:`D/\tau` within 1e-9 of an
    integer counts as that integer, so float rounding never decides)."""
    return math.ceil(inst.retention.rollback_detection_hours / (interval_minutes / 60.0) - 1e-9)


def milestones_needed(inst, interval_minutes: float) -> int:
    r""":math:`\lfloor (s - 1 + \lceil D/\tau \rceil)/s \rfloor + 1`: milestones that always hold a good one."""
    s = inst.retention.milestone_every_checkpoints
    return (s - 1 + most_bad(inst, interval_minutes)) // s + 1


def covers(inst, keep_last: int, interval_minutes: float, milestones: int = 0) -> bool:
    r"""A rollback event always leaves a good checkpoint kept: among the recent ones
    (:math:`k \ge \lceil D/\tau \rceil + 1`) or among the milestones (:math:`m \ge` ``milestones_needed``)."""
    return keep_last >= most_bad(inst, interval_minutes) + 1 or milestones >= milestones_needed(inst, interval_minutes)


def check_cover(inst) -> None:
    """Refuse, naming ``retention.keep_last_options``, a retention block none of whose options covers the
    rollback detection delay at any checkpoint interval (the longest interval is the easiest to cover)."""
    longest = max(inst.checkpointing.interval_minutes_options)
    if not any(covers(inst, o.keep_last, longest, o.milestones) for o in retention_options(inst)):
        raise ValueError(f"retention.keep_last_options: no option covers the {inst.retention.rollback_detection_hours:g} h "
                         f"rollback detection delay at any checkpoint interval (the longest, {longest:g} min, "
                         f"needs keep_last >= {most_bad(inst, longest) + 1} or milestone_options up to "
                         f"{milestones_needed(inst, longest)})")


def deep_share(inst, keep_last: int, interval_minutes):
    r""":math:`P_{deep} = \min(1, \max(0, 1 - k + D/\tau))`: the share of events that spoil every recent checkpoint
    (:math:`u \ge k\tau - D`); works on arrays."""
    ratio = inst.retention.rollback_detection_hours / (np.asarray(interval_minutes, dtype=float) / 60.0)
    share = np.clip(1.0 - keep_last + ratio, 0.0, 1.0)
    return np.where(keep_last >= most_bad_array(inst, interval_minutes) + 1, 0.0, share)


def most_bad_array(inst, interval_minutes):
    """``most_bad`` on arrays."""
    return np.ceil(inst.retention.rollback_detection_hours / (np.asarray(interval_minutes, dtype=float) / 60.0) - 1e-9)


def rollback_share(inst, count, interval_minutes, restart_hours):
    r""":math:`o^{rb}_h(\tau) = n_h \lambda_{rb} (\tau/2 + D + r)` (0 without a ``retention`` block), the part of the
    rollback re-work every option pays; works on arrays."""
    rt = inst.retention
    if rt is None:
        return 0.0 * count
    return count * rt.rollback_events_per_gpu_hour * (interval_minutes / 120.0 + rt.rollback_detection_hours + restart_hours)


def deep_rollback_share(inst, choice: RetentionChoice, count, interval_minutes):
    r""":math:`\delta_h(\tau, \rho) = n_h \lambda_{rb} P_{deep}\, (s - 1)\tau/2`: the re-work an event adds when it
    falls back to a milestone (on average :math:`(s-1)/2` intervals older than the last good checkpoint);
    works on arrays."""
    rt = inst.retention
    s = rt.milestone_every_checkpoints
    return (count * rt.rollback_events_per_gpu_hour * deep_share(inst, choice.keep_last, interval_minutes)
            * (s - 1) * interval_minutes / 120.0)


def storage_usd_per_train_hour(inst, choice: RetentionChoice, checkpoint_gb, count, interval_minutes,
                               failures_per_gpu_hour=None):
    r""":math:`s_h(\tau, \rho)`: the recent checkpoints' storage and read-backs per training hour; works on arrays
    (``failures_per_gpu_hour``: a scenario's rate, default the instance's)."""
    rt, st, rel = inst.retention, inst.storage, inst.reliability
    failures = rel.failures_per_gpu_hour if failures_per_gpu_hour is None else failures_per_gpu_hour
    tau = interval_minutes / 60.0
    if choice.tier == "hot":
        price, minimum, read = st.hot_usd_per_gb_month, 0.0, 0.0
    else:
        price, minimum, read = st.cold_usd_per_gb_month, rt.cold_min_storage_hours, rt.cold_retrieval_usd_per_gb
    restarts_per_hour = count * (failures + rt.rollback_events_per_gpu_hour)
    recent = price * np.maximum(choice.keep_last * tau, minimum) / (d.HOURS_PER_MONTH * tau) + restarts_per_hour * read
    if choice.milestones == 0:
        return checkpoint_gb * recent
    # milestones: one every s checkpoints, cold, each kept m s tau hours (billed at least the cold minimum);
    # a deep rollback reads one back
    span = rt.milestone_every_checkpoints * tau
    milestones = (st.cold_usd_per_gb_month * np.maximum(choice.milestones * span, rt.cold_min_storage_hours)
                  / (d.HOURS_PER_MONTH * span)
                  + count * rt.rollback_events_per_gpu_hour * deep_share(inst, choice.keep_last, interval_minutes)
                  * rt.cold_retrieval_usd_per_gb)
    return checkpoint_gb * (recent + milestones)


def check_choice(inst, choice: RetentionChoice | None) -> None:
    """Raise ValueError naming ``plan.retention`` when ``choice`` is not one of the instance's options."""
    options = retention_options(inst)
    if choice is None and options:
        raise ValueError("plan.retention: expected one of " + ", ".join(str(o.to_dict()) for o in options) + ", got null")
    if choice is not None and choice not in options:
        raise ValueError(f"plan.retention: {choice.to_dict()} is not an option of the instance "
                         + ("(it has no retention block; expected null)" if not options else
                            "(" + ", ".join(str(o.to_dict()) for o in options) + ")"))


def coverage_violation(inst, choice: RetentionChoice, interval_minutes: float) -> str | None:
    """The evaluator's violation line when ``choice`` does not cover the detection delay, else None."""
    if covers(inst, choice.keep_last, interval_minutes, choice.milestones):
        return None
    return (f"retention: keep_last {choice.keep_last} and {choice.milestones} milestones at {interval_minutes:g} min "
            f"do not cover the {inst.retention.rollback_detection_hours:g} h rollback detection delay (needs keep_last "
            f">= {most_bad(inst, interval_minutes) + 1} or milestones >= {milestones_needed(inst, interval_minutes)})")
