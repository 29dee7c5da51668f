r"""The plan's planned spend over time: each line of the cost breakdown laid on the plan's own timeline, the one
timeline the FOCUS export (``planopt solve --out F --format focus``, ``solver/report/focus.py``) and the budget
and alert lines of the report both read, so that the two cannot disagree.

Hour 0 is the plan's start. Stages run one after another (``Evaluator.plan_metrics``): stage :math:`s` starts at
:math:`t_s = \sum_{k<s} \mathrm{wall}_k`, waits its data lead time :math:`L_s` and trains for
:math:`H_s = \mathrm{wall}_s - L_s` hours (failures, restarts and checkpoint writes included). Each cost line of
a stage (its ``Evaluator.metrics``, the numbers the plan's breakdown sums) is charged so:

- **compute** and **evaluation** (the GPUs, billed while they are held): evenly over the training window
  :math:`[t_s + L_s, t_s + \mathrm{wall}_s)`;
- **data** (labels bought, the reward's design and verifier, a missing teacher's cost): one purchase at the
  stage's start :math:`t_s`, when it is ordered (the labelling vendor then delivers over the lead time);
- **storage**: the recent checkpoints kept hot over the training window; the milestones archived to cold
  storage (``checkpointing.milestones_kept`` of ``checkpoint_gb`` at ``storage.cold_usd_per_gb_month``) evenly
  over ``checkpointing.milestone_retention_months`` from the end of training, and the trajectory logs
  (``rp.log_storage_usd``) evenly over ``storage.log_retention_months`` from the end of training; a retention of
  0 months is one charge at the end of training (a month is ``defaults.HOURS_PER_MONTH``, the cloud billing month);
- **environments** (sandboxes), **network** (egress) and **log ingest**: evenly over the training window, as the
  samples, the logs and the traffic they price are made;

and the plan's own lines: **operations** (``operations.fixed_usd`` plus ``usd_per_wall_hour`` × wall) evenly over
the whole wall time :math:`[0, \mathrm{wall})`, and **forgetting repair** as one charge at the plan's end, when the
forgetting it repairs is known. The charges sum to the plan's cost exactly (each stage line is the evaluator's own
number, split by shares that add to one).

A *line* (the budget, or ``constraints.alert_share`` × the budget) is *reached* at the first hour at which the
cumulative spend is at least the line less ``limit_slack`` (the rule every limit is judged by, ``tolerance.py``),
so a plan that costs exactly its budget reaches it at its end; day 1 is the plan's first UTC day (hours [0, 24)).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

from planopt.models.catalog import defaults as d
from planopt.models.cost.evaluator import STAGE_COST_KEYS, Evaluator
from planopt.models.cost.tolerance import limit_slack
from planopt.models.schema.instance import Instance
from planopt.models.schema.plan import Plan

HOURS_PER_DAY = 24.0  # one UTC day, the FOCUS charge period the export uses
# the lines spread over a stage's training window (the GPUs' and what the samples and logs they make cost)
TRAINING_WINDOW_KEYS = ("compute", "evaluation", "environments", "network", "log_ingest")


@dataclass(frozen=True)
class Charge:
    """One planned charge: ``usd`` of cost line ``component``, spread evenly over ``[start_hour, end_hour)`` (one
    charge at ``start_hour`` when the two are equal); ``stage`` is 1-based, None for the plan's own lines; ``part``
    tells apart the pieces of one line (``hot``, ``milestones``, ``logs`` of storage), else ''."""

    component: str
    stage: Optional[int]
    start_hour: float
    end_hour: float
    usd: float
    part: str = ""

    @property
    def one_time(self) -> bool:
        """Whether the charge falls at one instant (``start_hour``) rather than over a window."""
        return self.end_hour <= self.start_hour

    def usd_until(self, hour: float) -> float:
        """The share of the charge spent before ``hour`` (a one-time charge: all of it once ``hour`` passes it)."""
        if self.one_time:
            return self.usd if hour > self.start_hour else 0.0
        share = (hour - self.start_hour) / (self.end_hour - self.start_hour)
        return self.usd * min(1.0, max(0.0, share))


def _storage_charges(inst: Instance, stage: int, usd: float, train_start: float, train_end: float,
                     checkpoint_gb: float, log_usd: float) -> list[Charge]:
    """The storage line of one stage in its three pieces (the module's docstring); the hot piece is the rest, so
    the three add up to the evaluator's number."""
    ck, st = inst.checkpointing, inst.storage
    milestones = ck.milestones_kept * checkpoint_gb * st.cold_usd_per_gb_month * ck.milestone_retention_months
    out = [Charge("storage", stage, train_start, train_end, usd - milestones - log_usd, "hot")]
    for part, part_usd, months in (("milestones", milestones, ck.milestone_retention_months),
                                   ("logs", log_usd, st.log_retention_months)):
        if part_usd:
            out.append(Charge("storage", stage, train_end, train_end + months * d.HOURS_PER_MONTH, part_usd, part))
    return out


def plan_charges(inst: Instance, plan: Plan) -> list[Charge]:
    """Every planned charge of ``plan`` on ``inst`` (rules in the module's docstring); zero charges are left out.
    With ``releases`` these are the first release's charges (one run's timeline; ``releases.py``)."""
    if inst.releases is not None:
        inst = inst.model_copy(update={"releases": None})
    whole = Evaluator(inst)                 # the instance's, which knows every candidate student
    ev = whole.for_student(plan.student)    # the plan's student's, for its stages
    tau = plan.checkpoint_interval_minutes
    charges: list[Charge] = []
    start = 0.0
    for n, stage in enumerate(plan.stages, start=1):
        m = ev.metrics(stage.recipe, stage.hardware, tau, plan.retention)
        rp = ev.recipe(stage.recipe)
        lead = m.hours_breakdown["data_lead_time"]
        train_start, train_end = start + lead, start + m.wall_hours
        costs = m.cost_breakdown_usd
        for key in STAGE_COST_KEYS:
            if key in TRAINING_WINDOW_KEYS:
                charges.append(Charge(key, n, train_start, train_end, costs[key]))
            elif key == "data":
                charges.append(Charge(key, n, start, start, costs[key]))
            elif key == "storage":
                charges += _storage_charges(ev.inst, n, costs[key], train_start, train_end, rp.checkpoint_gb,
                                            rp.log_storage_usd)
        start = train_end
    total = whole.plan_metrics(plan).cost_breakdown_usd
    charges.append(Charge("operations", None, 0.0, start, total["operations"]))
    charges.append(Charge("forgetting_repair", None, start, start, total["forgetting_repair"]))
    return [c for c in charges if c.usd != 0.0]


def shifted(charges: list[Charge], hours: float) -> list[Charge]:
    """The same charges ``hours`` later (a portfolio job that starts at its bucket)."""
    from dataclasses import replace
    return [replace(c, start_hour=c.start_hour + hours, end_hour=c.end_hour + hours) for c in charges]


def daily(charges: list[Charge]) -> list[tuple[int, Charge, float]]:
    """Each charge split over UTC days: ``(day, charge, usd)`` with day 0 the plan's first day, hours [0, 24) (a
    one-time charge falls on the day that holds its hour). The pieces of a charge add up to it."""
    out = []
    for c in charges:
        if c.one_time:
            out.append((int(c.start_hour // HOURS_PER_DAY), c, c.usd))
            continue
        first, last = int(c.start_hour // HOURS_PER_DAY), int(math.ceil(c.end_hour / HOURS_PER_DAY)) - 1
        spent = 0.0
        for day in range(first, last + 1):
            piece = c.usd_until((day + 1) * HOURS_PER_DAY) - spent if day < last else c.usd - spent
            spent += piece
            if piece:
                out.append((day, c, piece))
    return out


def reached_at(charges: list[Charge], line_usd: float) -> Optional[tuple[float, int]]:
    """When the cumulative spend of ``charges`` first reaches ``line_usd`` (less ``limit_slack``): the hour since
    the start and the day (1-based), or None when it never does. The cumulative spend is linear between the
    charges' starts and ends and jumps at a one-time charge; a line reached by a jump falls on the day that holds
    the jump's hour, one reached on a slope on the day whose end (or any instant before it) reaches it."""
    target = line_usd - limit_slack(line_usd)
    points = sorted({h for c in charges for h in (c.start_hour, c.end_hour)})
    before_h, before_usd = None, 0.0
    for hour in points:
        at_usd = sum(c.usd_until(hour) for c in charges)           # spent strictly before ``hour``
        if at_usd >= target and before_h is not None:              # on the slope up to ``hour``
            t = before_h + (target - before_usd) / (at_usd - before_usd) * (hour - before_h)
            return t, max(1, math.ceil(t / HOURS_PER_DAY))
        jump = sum(c.usd for c in charges if c.one_time and c.start_hour == hour)
        if at_usd + jump >= target:                                  # by the one-time charges at ``hour``
            return hour, int(hour // HOURS_PER_DAY) + 1
        before_h, before_usd = hour, at_usd + jump
    return None


def spend_lines(charges: list[Charge], budget_usd: Optional[float], alert_share: float) -> dict:
    """The report's budget and alert lines: for each of ``alert`` (``alert_share`` × the budget) and ``budget``
    its ``usd``, and ``reached`` (``{"hour", "day"}``) or null when the plan's cumulative spend never reaches it;
    with no budget, ``lines`` is empty. ``total_usd`` and ``last_hour`` close the timeline."""
    lines = {}
    if budget_usd is not None:
        for name, usd in (("alert", alert_share * budget_usd), ("budget", budget_usd)):
            reached = reached_at(charges, usd)
            lines[name] = {"usd": usd, "reached": None if reached is None else {"hour": reached[0], "day": reached[1]}}
    return {"alert_share": alert_share, "budget_usd": budget_usd, "total_usd": sum(c.usd for c in charges),
            "last_hour": max((c.end_hour for c in charges), default=0.0), "lines": lines}
