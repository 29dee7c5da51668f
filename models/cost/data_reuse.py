r"""What repeating data costs a plan in quality, in words: the report's note and the
explanation of an instance with too few prompts.

A plan drawing :math:`D` prompts (RL, OPD) or seeing :math:`X` new-domain examples
(SFT) from :math:`U` distinct ones gets the learning signal of
:math:`D'(U, D) = U + U R^* (1 - e^{-(D/U - 1)/R^*})` fresh ones
(``learning.effective_draws``); the note gives :math:`D/U` (epochs) and
:math:`D'/D` (what a repeated draw was worth on average).

Too few prompts: quality rises with :math:`U` at a fixed recipe (each draw's worth
:math:`e^{-\max(0, n/U - 1)/R^*}` does), so the least ``task.prompts_available`` at
which some RL/OPD recipe reaches ``min_quality`` is found by bisection over
:math:`U`, between the instance's value and the most prompts any recipe draws
(beyond which nothing repeats).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Optional

from planopt.models.cost import learning as lc
from planopt.models.schema.plan import Plan, Recipe
from planopt.models.cost.recipes import enumerate_recipes, profile
from planopt.models.schema.instance import Instance


def plan_note(inst: Instance, plan: Plan) -> Optional[str]:
    """One line on the plan's data reuse, or None when the plan repeats nothing: epochs, what the
    repeats were worth, and the quality the same recipe would reach on distinct data only."""
    rp = profile(inst, plan.recipe)
    extra = rp.extra
    if plan.method == "sft":
        seen, distinct, worth = extra["external_examples"], extra["distinct_examples"], extra["effective_examples"]
        if seen <= distinct:
            return None
        bought = extra["labels_bought"]
        source = f"{distinct - bought:,.0f} owned" + (f" + {bought:,.0f} bought" if bought else "")
        fresh = profile(inst, replace(plan.recipe, max_epochs=1)).quality
        return (f"{seen:,.0f} new-domain examples seen over {source} distinct ones ({seen / distinct:.1f} epochs, "
                f"at most {plan.max_epochs}); they count as {worth:,.0f} fresh ones ({worth / seen:.0%}); "
                f"buying the rest for one epoch would reach quality {fresh:.2f} instead of {rp.quality:.2f}")
    drawn, worth = extra["prompts_drawn"], extra["effective_prompts"]
    unique = inst.task.prompts_available
    if drawn <= unique:
        return None
    task = inst.task.model_copy(update={"prompts_available": int(math.ceil(drawn))})
    fresh = profile(inst.model_copy(update={"task": task}), plan.recipe).quality
    if round(fresh, 2) == round(rp.quality, 2):  # the repeats cost nothing the report shows: no note
        return None
    return (f"{drawn:,.0f} prompts drawn from task.prompts_available = {unique:,} ({drawn / unique:.1f} epochs); "
            f"they count as {worth:,.0f} fresh ones ({worth / drawn:.0%}); with {int(math.ceil(drawn)):,} distinct "
            f"prompts the plan would reach quality {fresh:.2f} instead of {rp.quality:.2f}")


def _on_policy(inst: Instance) -> list[Recipe]:
    return [r for r in enumerate_recipes(inst) if r.method != "sft"]


def best_on_policy_quality(inst: Instance, prompts_available: int) -> float:
    """The best RL/OPD quality of any recipe with ``prompts_available`` distinct prompts."""
    task = inst.task.model_copy(update={"prompts_available": prompts_available})
    trial = inst.model_copy(update={"task": task})
    out = -float("inf")
    for r in _on_policy(inst):
        pri = inst.priors.of(r.method)
        q = float(lc.on_policy_quality(trial, r, pri.signal_scale_samples, pri.ceiling_share_of_headroom,
                                       inst.priors.prompt_repeat_scale_epochs))
        out = max(out, q)
    return out


def shortage_note(inst: Instance) -> Optional[str]:
    """When ``min_quality`` is out of every RL/OPD recipe's reach only because prompts repeat,
    say so and give the fewest distinct prompts that would let one reach it; else None."""
    floor = inst.constraints.min_quality
    recipes = _on_policy(inst)
    if floor is None or not recipes:
        return None
    have = inst.task.prompts_available
    most = max(r.steps * inst.training.methods[r.method].prompts_per_step for r in recipes)
    reached = best_on_policy_quality(inst, have)
    if reached >= floor or most <= have or best_on_policy_quality(inst, most) < floor:
        return None
    low, high = have, most  # quality misses the floor at low, reaches it at high
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if best_on_policy_quality(inst, mid) < floor else (low, mid)
    return (f"too few prompts: with task.prompts_available = {have:,} the best RL/OPD recipe reaches quality "
            f"{reached:.2f} < min_quality {floor:g}, because repeated prompts count for less than fresh ones; "
            f"{high:,} distinct prompts would let one reach it")
