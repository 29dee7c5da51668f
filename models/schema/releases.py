"""The ``releases`` block: one plan run again at every release of a recurring post-training (issue 27, lever 2).

A team that post-trains every month runs the chosen plan once per release. ``count`` releases (default 1:
today's single run), or a ``horizon_months`` / ``interval_months`` pair (``count`` = the whole intervals in the
horizon, a release at the start of each). ``sft_labels_rebuilt_share`` is the share of the SFT labels bought
again at each later release when requirements change: an instance input, since no published rate of label
churn exists (default 1: every later release rebuys the labels, the conservative reading). What recurs and what
is paid once is ``models/cost/releases.py``'s rule.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Optional

from pydantic import Field, model_validator

from planopt.models.schema.base import MAX_COUNT, PositiveFloat, PositiveInt, Strict


class Releases(Strict):
    """How many times the plan runs (releases) and what a later release buys again."""

    count: Optional[PositiveInt] = Field(None, description="releases the plan runs for (default 1; or give "
                                         "horizon_months and interval_months)")
    horizon_months: Optional[PositiveFloat] = Field(None, description="months the releases span")
    interval_months: Optional[PositiveFloat] = Field(None, description="months between releases")
    sft_labels_rebuilt_share: float = Field(1.0, ge=0.0, le=1.0, description="share of the SFT labels bought again "
                                            "at each later release (an instance input: no published rate exists)")

    @model_validator(mode="after")
    def _count_or_pair(self) -> "Releases":
        pair = (self.horizon_months, self.interval_months)
        if self.count is not None and any(v is not None for v in pair):
            raise ValueError("count: give count, or horizon_months and interval_months, not both")
        if (pair[0] is None) != (pair[1] is None):
            missing = "interval_months" if pair[1] is None else "horizon_months"
            raise ValueError(f"{missing}: expected a number of months with the other of the pair")
        if pair[0] is not None and pair[1] > pair[0]:
            raise ValueError(f"interval_months: {pair[1]:g} is longer than horizon_months "
                             f"{pair[0]:g}; expected at most the horizon")
        if pair[0] is not None and self.releases > MAX_COUNT:
            raise ValueError(f"interval_months: {self.releases} releases in the horizon; expected at most {MAX_COUNT}")
        return self

    @property
    def releases(self) -> int:
        """The number of runs: ``count``, or the whole intervals in the horizon (at least one), or 1."""
        if self.horizon_months is not None:
            # exact decimal arithmetic: 0.3 / 0.1 months is 3 intervals, not 2.999...
            return max(1, int(Fraction(str(self.horizon_months)) // Fraction(str(self.interval_months))))
        return self.count or 1
