r"""What a plan does, in its own units, and which of its cost is fixed (issue 27, lever 8).

**Key quantities** (:func:`stage_quantities`), each read off the amounts the evaluator prices, so that a
quantity and the money it carries cannot disagree:

- ``tokens_sampled``: the training rollouts' decode tokens (the ``decode_tokens`` components of
  ``recipes.py``: samples :math:`\times` ``task.response_tokens``); the validation decodes are
  ``evaluation_tokens_decoded``;
- ``teacher_tokens_scored``: OPD's teacher forward tokens, samples :math:`\times` (prompt + response tokens),
  or with ``teacher.prefix_caching`` each group's prompt once (``recipes.teacher_tokens_by_phase``), the amount
  the teacher FLOPs are counted on;
- ``reward_calls``: RL's verifier calls, one per sample (``reward.verifier_usd_per_sample`` is priced per
  sample; a reward model scores the same samples);
- ``labels_bought``: SFT examples bought (``sft_data.usd_per_labeled_example``);
- ``checkpoints_written``: the expected writes, compute hours :math:`T` over the interval :math:`\tau`, the count
  the write hours :math:`T w/\tau` are priced on (``evaluator.py``);
- ``checkpoints_kept``: the checkpoints held while training, the count the storage line prices (``keep_last``,
  or the retention option's ``keep_last`` plus its milestones), and ``checkpoints_archived``: the milestones kept
  after the run (``checkpointing.milestones_kept``);
- ``evaluations_run``: validation runs (``recipes.evaluation_runs``);
- ``gpu_hours``: GPUs :math:`\times` training hours (the metric of the same name).

A staged plan's quantities are its stages' sums (each stage writes, keeps and evaluates its own). A teacher
trained as a stage (``teacher_training.py``) is priced as a lump and its own quantities are not counted here.

**Fixed vs elastic cost** (:func:`stage_fixed_usd`, :func:`plan_fixed_usd`). The rule: a cost line's part is
*fixed* when its formula does not contain the plan's length (steps, samples, examples) or its GPU or wall
hours; everything else is *elastic*. Per line:

- ``compute``, ``evaluation``: GPU money per hour :math:`\times` hours, elastic;
- ``data``: the reward design (``reward.design_usd``) and the teacher (a lump, or a trained teacher's plan) are
  paid once whatever the length, fixed; verifier calls and bought labels scale with the samples, elastic;
- ``storage``: the archived milestones, :math:`m\,C\,p_{cold}\,M`, do not depend on the run's length, fixed;
  the recent checkpoints (priced per training hour) and the logs (per sample), elastic;
- ``network``: egress of the final weights and the archived milestones is one transfer, fixed; of the
  trajectory logs (per sample), elastic;
- ``environments``, ``log_ingest``: per sample, elastic;
- ``operations``: ``operations.fixed_usd``, fixed; ``usd_per_wall_hour`` :math:`\times` wall, elastic;
- ``forgetting_repair``: forgetting grows with training, elastic.
"""

from __future__ import annotations

from planopt.models.cost.components import DECODE, EVAL, family_of
from planopt.models.cost.recipes import RecipeProfile, evaluation_runs, teacher_tokens_by_phase
from planopt.models.schema.instance import Instance

QUANTITY_KEYS = ("tokens_sampled", "teacher_tokens_scored", "reward_calls", "labels_bought", "checkpoints_written",
                 "checkpoints_kept", "checkpoints_archived", "evaluations_run", "evaluation_tokens_decoded", "gpu_hours")


def stage_quantities(inst: Instance, rp: RecipeProfile, retention, compute_hours: float, interval_minutes: float,
                     gpu_hours: float) -> dict[str, float]:
    """The key quantities of one stage (the module docstring): ``rp`` its recipe's profile, ``retention`` the plan's
    retention option (None without a block), ``compute_hours`` its hours of work before failures and writes."""
    r = rp.recipe
    kept = inst.checkpointing.keep_last if retention is None else retention.keep_last + retention.milestones
    return {
        "tokens_sampled": sum(v for k, v in rp.amounts.items() if family_of(k) == DECODE),
        "teacher_tokens_scored": sum(teacher_tokens_by_phase(inst, r)) if r.method == "opd" else 0.0,
        "reward_calls": rp.samples if r.method == "rl" else 0.0,
        "labels_bought": float(rp.extra.get("labels_bought", 0.0)),
        "checkpoints_written": compute_hours * 60.0 / interval_minutes,
        "checkpoints_kept": float(kept),
        "checkpoints_archived": float(inst.checkpointing.milestones_kept),
        "evaluations_run": float(evaluation_runs(inst, r)),
        "evaluation_tokens_decoded": sum(v for k, v in rp.amounts.items() if family_of(k) == EVAL),
        "gpu_hours": gpu_hours,
    }


def sum_quantities(stages: list[dict[str, float]]) -> dict[str, float]:
    """A staged plan's quantities: each its stages' sum."""
    return {k: sum(s[k] for s in stages) for k in QUANTITY_KEYS}


def stage_fixed_usd(inst: Instance, rp: RecipeProfile) -> dict[str, float]:
    """The fixed part of each cost line a stage contributes (the module docstring's rule; the others are 0)."""
    ck, st = inst.checkpointing, inst.storage
    return {"data": rp.fixed_data_usd,
            "storage": ck.milestones_kept * rp.checkpoint_gb * st.cold_usd_per_gb_month * ck.milestone_retention_months,
            "network": rp.fixed_network_usd}


def plan_fixed_usd(inst: Instance, stages: list[dict[str, float]], cost_keys: tuple[str, ...]) -> dict[str, float]:
    """The fixed part of each of the plan's cost lines (``cost_keys``, in order): the stages' sums, and the
    operations' ``fixed_usd`` once for the plan."""
    out = dict.fromkeys(cost_keys, 0.0)
    for s in stages:
        for k, v in s.items():
            out[k] += v
    out["operations"] = inst.operations.fixed_usd
    return out


def cost_split_usd(costs: dict[str, float], fixed: dict[str, float]) -> dict:
    """The JSON's ``cost_split_usd``: the fixed and elastic totals, and the fixed part of each line."""
    total_fixed = sum(fixed.values())
    return {"fixed": total_fixed, "elastic": sum(costs.values()) - total_fixed, "fixed_by_line": dict(fixed)}
