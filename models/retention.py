r"""Checkpoint retention as a choice: how many recent checkpoints, which tier, and the rollbacks they allow.

An instance with a ``retention`` block (``schema.Retention``) makes the plan
choose :math:`\rho = (k, \text{tier})`: keep the newest :math:`k` checkpoints,
in hot or cold storage. Without the block nothing here applies (``keep_last``
checkpoints kept hot, no rollback priced), so existing instances are unchanged.

**Rollback events.** A loss spike or divergence (rate :math:`\lambda_{rb}` per
GPU-hour, ``defaults.ROLLBACK_EVENTS_PER_GPU_HOUR``) is noticed
:math:`D` hours after it happens (``rollback_detection_hours``); every checkpoint
written meanwhile is bad. With writes every :math:`\tau` hours and the event at
phase :math:`u \in [0, \tau)` after the last good write, the bad checkpoints
number :math:`b = \lfloor (u + D)/\tau \rfloor \le \lceil D/\tau \rceil`, and the
run can go back to the good one only if it is still kept:

.. math::
   \text{covers}(k, \tau) \iff k \ge \lceil D/\tau \rceil + 1

A plan whose :math:`(k, \tau)` does not cover :math:`D` is infeasible (an event
would leave no good checkpoint: the run would restart from scratch, which this
model does not price). A covered event loses :math:`u + D` hours plus the
restart :math:`r`; with :math:`u` uniform, per compute hour (first order, as
the failure term of ``physics.checkpoint_overhead_share``):

.. math::
   o^{rb}_h(\tau) = n_h\, \lambda_{rb}\, (\tau/2 + D + r)

It adds to :math:`o_h(\tau)` (so it sits in the ``failure_rework`` hours) and
does not depend on :math:`\rho`: beyond covering, more checkpoints buy nothing.

**Storage per training hour** of checkpoint size :math:`C_h` (GB):

.. math::
   s_h(\tau, \rho) = C_h \Big[ p_{tier} \frac{\max(k\tau,\ m_{tier})}{730\,\tau}
                     + n_h (\lambda + \lambda_{rb})\, g_{tier} \Big]

A checkpoint is written every :math:`\tau` and lives :math:`k\tau` hours, but is
billed at least the tier's minimum :math:`m_{tier}` (Glacier IR: 2,160 h; hot: 0),
so hot storage is today's :math:`k C p_{hot} H/730`. Every restart (failure rate
:math:`\lambda = n_h\lambda_{GPU}`, and every rollback) reads one checkpoint back
at :math:`g_{tier}` per GB (cold: $0.03; hot: free). The storage cost line is
:math:`s_h(\tau,\rho)\, H_{train}` + the milestones and logs as before.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import defaults as d

TIERS = ("hot", "cold")


@dataclass(frozen=True, order=True)
class RetentionChoice:
    """One retention option: keep the newest ``keep_last`` checkpoints in ``tier``."""

    keep_last: int
    tier: str

    def to_dict(self) -> dict[str, Any]:
        return {"keep_last": self.keep_last, "tier": self.tier}

    @classmethod
    def from_dict(cls, data: Any, where: str = "plan.retention") -> "RetentionChoice":
        """Read ``{"keep_last": int >= 1, "tier": "hot" | "cold"}``; ValueError naming the field."""
        if not isinstance(data, dict):
            raise ValueError(f"{where}: expected an object {{keep_last, tier}} or null, got {data!r}")
        unknown = set(data) - {"keep_last", "tier"}
        if unknown:
            raise ValueError(f"{where}.{sorted(unknown)[0]}: unknown field")
        k = data.get("keep_last")
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise ValueError(f"{where}.keep_last: expected a positive integer, got {k!r}")
        tier = data.get("tier")
        if tier not in TIERS:
            raise ValueError(f"{where}.tier: expected 'hot' or 'cold', got {tier!r}")
        return cls(k, tier)


def retention_options(inst) -> list[RetentionChoice]:
    """The instance's retention options, keep_last then tier order; [] without a ``retention`` block."""
    rt = inst.retention
    if rt is None:
        return []
    ks = sorted(set(rt.keep_last_options or [inst.checkpointing.keep_last]))
    tiers = [t for t in TIERS if t in rt.tiers]
    return [RetentionChoice(k, t) for k in ks for t in tiers]


def covers(inst, keep_last: int, interval_minutes: float) -> bool:
    r""":math:`k \ge \lceil D/\tau \rceil + 1`: a rollback event always leaves a good checkpoint kept.
    (:math:`D/\tau` within 1e-9 of an integer counts as that integer, so float rounding never decides.)"""
    ratio = inst.retention.rollback_detection_hours / (interval_minutes / 60.0)
    return keep_last >= math.ceil(ratio - 1e-9) + 1


def rollback_share(inst, count, interval_minutes, restart_hours):
    r""":math:`o^{rb}_h(\tau) = n_h \lambda_{rb} (\tau/2 + D + r)` (0 without a ``retention`` block); works on arrays."""
    rt = inst.retention
    if rt is None:
        return 0.0 * count
    return count * rt.rollback_events_per_gpu_hour * (interval_minutes / 120.0 + rt.rollback_detection_hours + restart_hours)


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
    return checkpoint_gb * (price * np.maximum(choice.keep_last * tau, minimum) / (d.HOURS_PER_MONTH * tau)
                            + restarts_per_hour * read)


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
    if covers(inst, choice.keep_last, interval_minutes):
        return None
    need = math.ceil(inst.retention.rollback_detection_hours / (interval_minutes / 60.0) - 1e-9) + 1
    return (f"retention: keep_last {choice.keep_last} at {interval_minutes:g} min does not cover the "
            f"{inst.retention.rollback_detection_hours:g} h rollback detection delay (needs {need})")
