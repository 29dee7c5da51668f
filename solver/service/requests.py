"""Request bodies of the API: the CLI's arguments and options, as pydantic models.

An instance is given inline (the ``Instance`` JSON of ``planopt schema``, or a
portfolio) or by the name of a shipped instance (``"tiny"``). The options carry
the CLI's flag names in snake case; their ranges are checked by the library's
own checks, so a wrong value gets the CLI's message naming the field.
"""

from __future__ import annotations

from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field

InstanceRef = Union[str, dict[str, Any]]
INSTANCE_HELP = ("the instance: an Instance object (components/schemas/Instance, or `planopt schema`), "
                 "a Portfolio object where a portfolio is allowed, or the name of a shipped instance such as \"tiny\"")
Objective = Literal["cost", "quality", "time", "forgetting"]
Metric = Literal["cost_usd", "wall_hours", "quality", "forgetting_points", "probability"]
Limit = Literal["budget_usd", "deadline_hours", "max_forgetting_points", "min_quality"]


class Strict(BaseModel):
    """The base of the request bodies: unknown fields refused, no numeric strings."""

    # unknown fields are refused (a typo must not be silently ignored), and "5" is not a number
    model_config = ConfigDict(extra="forbid", strict=True)


class Limits(Strict):
    """The limit overrides a request may carry, as the CLI's limit flags."""

    budget_usd: Optional[float] = Field(None, description="total budget, USD")
    deadline_hours: Optional[float] = Field(None, description="wall-clock deadline, hours")
    max_forgetting_points: Optional[float] = Field(None, description="forgetting tolerance, points of the general score")
    min_quality: Optional[float] = Field(None, description="minimum task score, points")


class ValidateRequest(Strict):
    """``planopt validate FILE --json``: the instance to check."""

    instance: InstanceRef = Field(..., description=INSTANCE_HELP)


class SolveRequest(Limits):
    """``planopt solve FILE --json`` and its overrides."""
    instance: InstanceRef = Field(..., description=INSTANCE_HELP)
    objective: Optional[Objective] = None
    time_limit: Optional[float] = Field(None, description="seconds; the incumbent and its gap are returned")
    confidence: Optional[float] = Field(None, description="share of scenarios meeting every limit (0-1): a chance-constrained plan "
                                        "(a portfolio: share of capacity scenarios its schedule runs undisrupted in)")
    scenarios: Optional[int] = Field(None, description="scenarios of the uncertainty model (risk, or the sample of confidence); "
                                     "a portfolio: capacity scenarios, as in /api/portfolio/solve")
    seed: int = Field(0, description="seed of the scenario draw")
    cvar: Optional[float] = Field(None, description="with confidence: minimise CVaR of cost at this level (one job only)")
    sensitivity: bool = Field(True, description="re-solve to find the binding limits")


class EvaluateRequest(Strict):
    """``planopt evaluate FILE PLAN.json --json``."""
    instance: InstanceRef = Field(..., description=INSTANCE_HELP)
    plan: dict[str, Any] = Field(..., description="the `plan` object of a solve (or that whole result)")
    scenarios: Optional[int] = Field(None, description="scenarios of the plan's risk (default 1,000)")
    seed: int = 0


class RunInput(Strict):
    """What ``track`` and ``replan`` read: the instance, its plan and the run's log. The log comes as CSV text: a
    W&B history export or a pilot CSV. A TensorBoard log folder cannot be posted (its event files are binary records
    on disk): export its scalars as a W&B-style CSV (``_step``, ``_runtime``, one column per series), or run the CLI."""
    instance: InstanceRef = Field(..., description=INSTANCE_HELP)
    plan: dict[str, Any] = Field(..., description="the `plan` object of a solve (or that whole result)")
    run_csv: str = Field(..., description="the run's log as CSV text: a W&B history export (_step, _runtime, series) or a pilot CSV")
    mapping: dict[str, str] = Field(default_factory=dict, description="which logged series is which: step, step_seconds, "
                                    "task_score, general_score, gpu_count, spend_usd")


class TrackRequest(RunInput):
    """``planopt track FILE PLAN.json RUN --json``."""
    scenarios: Optional[int] = Field(None, description="scenarios of the bands and the shares (default 1,000)")
    seed: int = 0


class ReplanRequest(RunInput, Limits):
    """``planopt replan FILE PLAN.json RUN --json``: the run's log as ``RunInput``'s; the limits and objective are
    the whole run's, as the CLI's flags."""
    confidence: Optional[float] = Field(None, description="the rest holds every limit in this share of the updated scenarios (0-1)")
    scenarios: Optional[int] = Field(None, description="scenarios of the shares (default 1,000)")
    seed: int = 0
    time_limit: Optional[float] = Field(None, description="seconds for each of the rest's two solves")
    objective: Optional[Objective] = None


class FrontierRequest(Limits):
    """``planopt frontier FILE --x X --y Y --json``."""
    instance: InstanceRef = Field(..., description=INSTANCE_HELP)
    x: Metric = "cost_usd"
    y: Metric = "quality"
    scenarios: Optional[int] = Field(None, description="with probability: scenarios of the sample (default 200)")
    seed: Optional[int] = None


class SweepRequest(Strict):
    """``planopt sweep FILE --LIMIT LO:HI:N --json``: give ``values`` or ``range``."""
    instance: InstanceRef = Field(..., description=INSTANCE_HELP)
    limit: Limit
    values: Optional[list[float]] = Field(None, description="the limit's values")
    range: Optional[str] = Field(None, description="the CLI's LO:HI:N")
    objective: Optional[Objective] = None
    time_limit: Optional[float] = Field(None, description="seconds per solve")
    reuse: bool = Field(True, description="skip a solve when the previous optimum provably stays optimal")


class PortfolioRequest(Strict):
    """``planopt solve portfolio.json --json``: the portfolio inline (jobs inline or by path under --allow-dir),
    by shipped name, or ``path`` to a file under --allow-dir."""
    portfolio: Optional[InstanceRef] = Field(None, description="a Portfolio object (components/schemas/Portfolio) or a shipped name")
    path: Optional[str] = Field(None, description="a portfolio file, relative to the service's --allow-dir")
    time_limit: Optional[float] = Field(None, description="seconds for the whole solve; the incumbent and its gap are returned")
    budget_usd: Optional[float] = Field(None, description="caps the total spend, USD (over it: the least cost that would do)")
    scenarios: Optional[int] = Field(None, description="capacity scenarios (spot preemption, on-demand shortfall): the schedule's "
                                     "risk over them, or with confidence the sample of the chance constraint (default 200, "
                                     "at most 1,000)")
    confidence: Optional[float] = Field(None, description="share of the scenarios the schedule must run undisrupted in (0-1): "
                                        "a schedule held at a confidence")
    seed: int = Field(0, description="seed of the capacity scenarios' draw (other than 0: needs scenarios or confidence)")


class CalibrateRequest(Strict):
    """``planopt calibrate`` on one case: inline (instances/calibration/FORMAT.md) or a shipped case's name."""
    case: InstanceRef


class JobRequest(Strict):
    """A job: ``kind`` and the body the matching endpoint takes."""
    kind: Literal["solve", "frontier", "sweep", "portfolio"]
    body: dict[str, Any]


JOB_BODIES = {"solve": SolveRequest, "frontier": FrontierRequest, "sweep": SweepRequest, "portfolio": PortfolioRequest}
