r"""Every metric of a staged plan, from the one-stage evaluator and the chained learning curves.

Stages run one after another, each on its own hardware, all with the plan's
checkpoint interval :math:`\tau` (and, with a ``retention`` block, one retention option,
``retention.py``). With :math:`M_s` the evaluator's metrics of
stage :math:`s` run alone (``costs.Evaluator.metrics``):

.. math::
   \mathrm{wall} &= \sum_s \big(\mathrm{lead}_s + H_{train,s}\big)
       \qquad\text{(each stage's lead time, e.g. labels or a teacher, sits before it)} \\
   \mathrm{cost} &= \sum_s \big(\text{compute, evaluation, data, storage, environments, network, log ingest}\big)_s
       + \mathrm{fixed} + p_{ops}\,\mathrm{wall} + p_{repair} \sum_s F_s \\
   q &= q_S, \qquad q_s = \mathrm{end}_s(q_{s-1}),\ q_0 = \text{baseline}, \qquad
   F_s = \mathrm{forgetting}_s(q_{s-1})

(``stage_outcomes.stage_outcome``). A one-stage plan gets exactly the
evaluator's metrics of its plan; ``tests/test_staged.py`` checks it.
"""

from __future__ import annotations

from planopt.models.cost.evaluator import COST_KEYS, HOURS_KEYS, Evaluator, Metrics
from planopt.models.schema.plan import Plan
from planopt.models.cost.retention import check_choice, coverage_violation
from planopt.models.cost.stage_outcomes import stage_outcome
from planopt.models.schema.staged_plan import StagedPlan

# The cost lines a stage contributes on its own; operations and forgetting repair are the plan's.
STAGE_COST_KEYS = tuple(k for k in COST_KEYS if k not in ("operations", "forgetting_repair"))


def chained_outcomes(ev: Evaluator, plan: StagedPlan) -> tuple[list[float], list[float]]:
    """Per stage, the score it ends at and the forgetting it causes, each stage starting where the last ended."""
    q = ev.inst.task.baseline_score
    ends, forgetting = [], []
    for stage in plan.stages:
        q, f = stage_outcome(ev.inst, stage.recipe, q)
        ends.append(q)
        forgetting.append(f)
    return ends, forgetting


def check_staged_plan(ev: Evaluator, plan: StagedPlan) -> None:
    """Raise ValueError naming the field when the plan is not one of the instance's options."""
    allowed = ev.inst.training.sequences()
    if plan.methods not in allowed:
        raise ValueError(f"plan.stages: the methods {list(plan.methods)} are not an allowed stage sequence "
                         f"(training.stage_sequences: {[list(s) for s in allowed]})")
    intervals = ev.inst.checkpointing.interval_minutes_options
    if plan.checkpoint_interval_minutes not in intervals:
        raise ValueError(f"plan.checkpoint_interval_minutes: expected one of {intervals}")
    check_choice(ev.inst, plan.retention)  # the plan's, shared by every stage (named plan.retention)
    for n, stage in enumerate(plan.stages):
        try:
            ev.check_plan(Plan.of(stage.recipe, stage.hardware, plan.checkpoint_interval_minutes, plan.retention))
        except ValueError as exc:
            raise ValueError(str(exc).replace("plan.", f"plan.stages.{n}.", 1)) from None


def staged_metrics(ev: Evaluator, plan: StagedPlan) -> Metrics:
    """Every metric of ``plan`` (not checked against the options: see :func:`evaluate_staged`)."""
    inst = ev.inst
    alone = [ev.metrics(s.recipe, s.hardware, plan.checkpoint_interval_minutes, plan.retention) for s in plan.stages]
    ends, forgetting = chained_outcomes(ev, plan)
    wall = sum(m.wall_hours for m in alone)
    total_forgetting = sum(forgetting)
    costs = {k: sum(m.cost_breakdown_usd[k] for m in alone) for k in STAGE_COST_KEYS}
    costs["operations"] = inst.operations.fixed_usd + inst.operations.usd_per_wall_hour * wall
    costs["forgetting_repair"] = inst.forgetting_repair_usd_per_point * total_forgetting
    costs = {k: costs[k] for k in COST_KEYS}
    hours = {k: sum(m.hours_breakdown[k] for m in alone) for k in HOURS_KEYS}
    flops: dict[str, float] = {}
    for m in alone:
        for k, v in m.flops.items():
            flops[k] = flops.get(k, 0.0) + v
    out = Metrics(cost_usd=sum(costs.values()), wall_hours=wall, quality=ends[-1], forgetting_points=total_forgetting,
                  gpu_hours=sum(m.gpu_hours for m in alone), memory_per_gpu_gb=max(m.memory_per_gpu_gb for m in alone),
                  cost_breakdown_usd=costs, hours_breakdown=hours, flops=flops,
                  fits_memory=all(m.fits_memory for m in alone))
    label = (lambda n: f"stage {n + 1}: ") if len(alone) > 1 else (lambda n: "")
    memory = [label(n) + v.removeprefix("memory: ") for n, m in enumerate(alone) for v in m.violations
              if v.startswith("memory:")]
    out.violations = ev.violations(out, "; ".join(memory) if memory else None)
    if plan.retention is not None and (late := coverage_violation(inst, plan.retention, plan.checkpoint_interval_minutes)):
        out.violations.append(late)
    return out


def evaluate_staged(ev: Evaluator, plan: StagedPlan) -> Metrics:
    """Every metric of ``plan`` on ``ev``'s instance (ValueError for a plan outside the options)."""
    check_staged_plan(ev, plan)
    return staged_metrics(ev, plan)
