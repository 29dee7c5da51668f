"""Post-solve check of the data-derived big-M values (as PyPSA's ``check_big_m_exceeded``).

The bounds of ``work.py`` (M = 1 after normalisation) and
``checkpointing.py`` (the longest compute time per hardware) are exact by
construction; this check recomputes the chosen plan's values with the
evaluator and reports any that reach beyond its M, which would mean a
coefficient drifted from the data.
"""

from __future__ import annotations

from planopt.models.cost.asynchronous import combine
from planopt.models.formulation.data import FormulationData


def big_m_breaches(data: FormulationData, r: int, h: int, tolerance: float = 1e-9) -> list[str]:
    """The bounds the chosen plan (recipe ``r`` on hardware ``h``, positions in ``data``) reaches beyond."""
    ev = data.evaluator_of(data.recipe_student(r))
    recipe, hardware = data.recipes[r], data.hardware[h]
    out = []
    profile = ev.recipe(recipe)
    col = {c: n for n, c in enumerate(data.components)}
    for c, amount in profile.amounts.items():
        limit = data.amount_max[col[c]] if c in col else 0.0
        if amount > limit * (1 + tolerance):
            out.append(f"work_on_chosen_hardware[{c}]: amount {amount:g} > M {limit:g}")
    # the plan's compute hours, its overlapped phases at their longest side (asynchronous RL, an agent loop)
    hours = float(combine(ev.compute_hours_by_component(recipe, hardware)))
    limit = data.compute_hours_max[h]
    if hours > limit * (1 + tolerance) + tolerance:
        out.append(f"compute_hours_on_chosen_interval[{hardware}]: {hours:g} h > M {limit:g} h")
    return out
