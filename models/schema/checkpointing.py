"""The instance's checkpointing block and its optional retention block (re-exported by ``instance.py``): the
checkpoint intervals to choose from and the checkpoints kept, and checkpoint retention as a choice
(``cost/retention.py`` has the formulas)."""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import Field

from planopt.models.catalog import defaults as d
from planopt.models.schema.base import NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt, Strict


class Checkpointing(Strict):
    """Checkpoint intervals to choose from and how many checkpoints are kept hot and archived."""

    interval_minutes_options: list[PositiveFloat] = Field([15, 30, 60, 120, 240], min_length=1)
    keep_last: PositiveInt = Field(2, description="recent checkpoints kept in hot storage during the run")
    milestones_kept: NonNegativeInt = Field(0, description="checkpoints archived to cold storage")
    milestone_retention_months: NonNegativeFloat = 0.0


class Retention(Strict):
    """Checkpoint retention as a choice (issue 12 item 7; ``retention.py`` has the formulas).

    Present, it makes how many recent checkpoints to keep and their storage tier
    decisions of the plan (``plan.retention``) and prices rollback events; absent
    (the default), ``checkpointing.keep_last`` checkpoints are kept hot and no
    rollback event is priced, as before."""

    keep_last_options: Optional[list[PositiveInt]] = Field(
        None, min_length=1, description="recent checkpoints a plan may keep (default: [checkpointing.keep_last])")
    tiers: list[Literal["hot", "cold"]] = Field(
        ["hot"], min_length=1, description="storage tiers the recent checkpoints may live in: hot (S3 Standard) or "
        "cold (Glacier Instant Retrieval: cheaper per GB-month, but billed a minimum duration and a fee per GB read back)")
    milestone_options: list[NonNegativeInt] = Field(
        [0], min_length=1, description="milestones a plan may keep during the run (the newest so many, cold): a "
        "rollback that spoils every recent checkpoint falls back to one")
    milestone_every_checkpoints: PositiveInt = Field(
        1, description="every how many checkpoints one is also kept as a milestone (a policy; 1: every one)")
    rollback_events_per_gpu_hour: NonNegativeFloat = Field(
        d.ROLLBACK_EVENTS_PER_GPU_HOUR, description="loss spikes or divergences that force a restart from an older "
        "checkpoint, per GPU-hour (default: PaLM 540B's ~20 spikes over 8.4M chip-hours)")
    rollback_detection_hours: NonNegativeFloat = Field(
        0.0, description="hours from a rollback event until it is noticed; every checkpoint written meanwhile is bad "
        "(no published default: 0 means noticed at once; PaLM restarted ~100 steps before the spike)")
    cold_retrieval_usd_per_gb: NonNegativeFloat = Field(d.COLD_RETRIEVAL_USD_PER_GB, description="reading a cold checkpoint back, USD per GB")
    cold_min_storage_hours: NonNegativeFloat = Field(d.COLD_MIN_STORAGE_HOURS, description="the least hours a cold object is billed")
