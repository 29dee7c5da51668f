"""What every schema model shares: the sane ranges of numbers, the field types, and the ``Strict`` base."""

from __future__ import annotations

from typing import Annotated, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

from planopt.models.catalog import defaults as d

# Sane ranges (issue 13 item 18). Every number of an instance is finite (``Strict``), at most
# MAX_MAGNITUDE, and a strictly positive one at least MIN_POSITIVE; counts that multiply into a step's work
# (steps, prompts per step, samples, GPUs, layers) are at most MAX_COUNT; scores at most MAX_SCORE points.
# All lie far beyond any real job (a trillion dollars, examples or prompts; a billionth of a dollar, hour or
# token; ten million steps or GPUs; 100 trillion parameters), so only typos and absurd values are refused:
# 1e308 overflows the cost model to inf, which HiGHS reads as "no bound", and 5e-324 divides to inf.
MAX_MAGNITUDE = 1e12
MIN_POSITIVE = 1e-9
MAX_COUNT = 10**7
MAX_SCORE = 1e6            # points, as the limits' range (solver/instance.py LIMIT_RANGES)
MAX_PARAMS_B = 1e5         # billions of parameters
PositiveFloat = Annotated[float, Field(ge=MIN_POSITIVE, le=MAX_MAGNITUDE)]
NonNegativeFloat = Annotated[float, Field(ge=0, le=MAX_MAGNITUDE)]
PositiveInt = Annotated[int, Field(ge=1, le=MAX_COUNT)]
NonNegativeInt = Annotated[int, Field(ge=0, le=MAX_COUNT)]
LargeCount = Annotated[int, Field(ge=0, le=int(MAX_MAGNITUDE))]   # examples and prompts owned
Score = Annotated[float, Field(ge=0, le=MAX_SCORE)]
ParamsB = Annotated[float, Field(ge=MIN_POSITIVE, le=MAX_PARAMS_B)]
Share = Annotated[float, Field(ge=MIN_POSITIVE, le=1)]         # an efficiency or HBM share in (0, 1]

Method = Literal["sft", "rl", "opd"]
Precision = Literal["bf16", "fp8", "int8", "int4"]
Objective = Literal["cost", "quality", "time", "forgetting"]
GeneralScoreFamily = Literal[tuple(d.GENERAL_SCORE_FAMILIES)]  # type: ignore[valid-type]
METHODS: tuple[str, ...] = ("sft", "rl", "opd")   # also the order stages run in (``Training.stage_sequences``)
MAX_STAGES = 3


class Strict(BaseModel):
    """Base of every schema model: unknown fields, coercion and non-finite numbers are refused.

    ``strict``: a number field takes a JSON number only (``true`` is not 1, ``"8"``
    is not 8; an integer field takes no ``8.0``), a string field a string only.
    ``allow_inf_nan=False``: ``Infinity`` and ``NaN`` (which Python's ``json``
    reads) are refused, so no limit or price reaches the solver as "no limit".
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


LabelText = Annotated[str, Field(min_length=1, max_length=256, pattern=r"^[^\x00-\x1f]*$")]


class Labels(Strict):
    """Who a job's spend belongs to: the FOCUS export's ``Tags`` (``planopt solve --format focus``)."""

    project: Optional[LabelText] = Field(None, description="the project the spend is charged to")
    team: Optional[LabelText] = Field(None, description="the team that runs the job")
    job: Optional[LabelText] = Field(None, description="the job's own label (default: the instance's name)")
