"""A plan's retention choice: how many recent checkpoints to keep, in which storage tier, and how many
milestones (the ``plan.retention`` object). The instance's options and their formulas are
``models/cost/retention.py``'s."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

TIERS = ("hot", "cold")


@dataclass(frozen=True, order=True)
class RetentionChoice:
    """One retention option: keep the newest ``keep_last`` checkpoints in ``tier``, and the newest
    ``milestones`` milestones (cold)."""

    keep_last: int
    tier: str
    milestones: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"keep_last": self.keep_last, "tier": self.tier, "milestones": self.milestones}

    @classmethod
    def from_dict(cls, data: Any, where: str = "plan.retention") -> "RetentionChoice":
        """Read ``{"keep_last": int >= 1, "tier": "hot" | "cold", "milestones": int >= 0 (default 0)}``;
        ValueError naming the field."""
        if not isinstance(data, dict):
            raise ValueError(f"{where}: expected an object {{keep_last, tier, milestones}} or null, got {data!r}")
        unknown = set(data) - {"keep_last", "tier", "milestones"}
        if unknown:
            raise ValueError(f"{where}.{sorted(unknown)[0]}: unknown field")
        k = data.get("keep_last")
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise ValueError(f"{where}.keep_last: expected a positive integer, got {k!r}")
        tier = data.get("tier")
        if tier not in TIERS:
            raise ValueError(f"{where}.tier: expected 'hot' or 'cold', got {tier!r}")
        m = data.get("milestones", 0)
        if not isinstance(m, int) or isinstance(m, bool) or m < 0:
            raise ValueError(f"{where}.milestones: expected a non-negative integer, got {m!r}")
        return cls(k, tier, m)
