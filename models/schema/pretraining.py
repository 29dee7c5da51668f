"""The ``continued_pretraining`` block: more pre-training of the base before its post-training (issue 27, lever 7).

A plan's first stage may first continue pre-training its student on ``T`` domain tokens, one of
``tokens_options`` (0: none). The tokens cost their training FLOPs (6·N·T, priced on the stage's GPUs like any
trained token) and their data (``usd_per_billion_tokens``, the instance's own: no source prices a domain corpus),
and raise the score the stage starts from (``models/cost/pretraining.py``). Absent: no plan pre-trains.
"""

from __future__ import annotations

import math

from pydantic import Field, field_validator

from planopt.models.catalog import defaults as d
from planopt.models.schema.base import MAX_MAGNITUDE, NonNegativeFloat, PositiveFloat, Strict


class ContinuedPretraining(Strict):
    """The token counts a plan may continue pre-training its student on, their data price, and the relation's
    parameters (sourced defaults)."""

    tokens_options: list[float] = Field(min_length=1, description="tokens of domain data a plan may continue "
                                        "pre-training the student on before its first stage (0: none)")
    usd_per_billion_tokens: NonNegativeFloat = Field(description="what a billion tokens of the domain corpus cost "
                                                     "(the instance's own: no default)")
    headroom_share: float = Field(d.CPT_HEADROOM_SHARE, gt=0, le=1, description="the share of the headroom to "
                                  "task.score_ceiling that saturated continued pre-training closes (Llemma, MATH)")
    tokens_per_parameter_scale: PositiveFloat = Field(d.CPT_TOKENS_PER_PARAMETER_SCALE, description="k: the "
                                                      "gain saturates as 1 - exp(-T / (k N)), N the student's parameters")

    @field_validator("tokens_options")
    @classmethod
    def _tokens(cls, values: list[float]) -> list[float]:
        for n, v in enumerate(values):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not 0 <= v <= MAX_MAGNITUDE:
                raise ValueError(f"{n}: expected a number of tokens from 0 to {MAX_MAGNITUDE:g}, got {v!r}")
        if len(set(values)) != len(values):
            raise ValueError(f"{values}: lists a token count twice")
        return [float(v) for v in values]

    def options(self) -> list[float]:
        """The token counts, sorted."""
        return sorted(self.tokens_options)
