r"""A plan's stages as one run: which steps each stage runs, and the plan stopped at a step.

A run logs one step counter from its start. A plan of stages :math:`1..S` with :math:`n_k` steps each runs
stage :math:`k` over the run's steps :math:`(E_{k-1}, E_k]`, :math:`E_k = \sum_{j \le k} n_j`, :math:`E_0 = 0`
(the stage's own step :math:`s - E_{k-1}`); step :math:`E_k` itself, the stage's last, is the stage's. The plan
stopped at step :math:`s` is every stage before :math:`s`'s stage whole, then that stage's recipe stopped after
its own steps done (:func:`prefix_recipe`). A one-stage plan is the case :math:`S = 1`: its stage holds every step.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np

from planopt.models.schema.plan import Plan, Recipe, Stage


def prefix_recipe(recipe: Recipe, steps: int) -> Recipe:
    """The plan's recipe stopped after ``steps`` steps. A sampling schedule's phases split a recipe's steps evenly,
    so a prefix of a uniform schedule is exact; a tapered one is read at each of the prefix's phases' middle
    step (the plan's phase there), which a recipe of fewer steps can hold."""
    if steps == recipe.steps:
        return recipe
    k = recipe.samples_per_prompt
    if k and len(set(k)) > 1:
        phases = len(k)
        # slot j of the prefix covers its steps [j, j + 1) x steps / phases; its middle step lies in the plan's phase
        # (j + 0.5) x steps / phases / (recipe.steps / phases)
        k = tuple(k[min(phases - 1, int((j + 0.5) * steps / recipe.steps))] for j in range(phases))
    return dataclasses.replace(recipe, steps=int(steps), samples_per_prompt=tuple(k))


def stage_ends(plan: Plan) -> list[int]:
    r""":math:`E_1, \dots, E_S`: the run's step at which each stage ends."""
    return [int(v) for v in np.cumsum([s.recipe.steps for s in plan.stages])]


def total_steps(plan: Plan) -> int:
    """The run's steps over every stage."""
    return stage_ends(plan)[-1]


def stage_of(plan: Plan, step: int) -> int:
    """The index of the stage that runs the run's step ``step`` (step 0, before any, is the first stage's)."""
    ends = stage_ends(plan)
    return min(int(np.searchsorted(ends, step, side="left")), len(ends) - 1)


def stage_start(plan: Plan, index: int) -> int:
    r""":math:`E_{k-1}`: the run's steps before stage ``index``."""
    return ([0] + stage_ends(plan))[index]


def prefix(plan: Plan, step: int) -> list[tuple[Stage, Recipe]]:
    """The plan stopped at the run's step ``step`` (at least 1): each stage the run has been in, with its recipe as
    run so far (whole for the stages before ``step``'s, stopped at its own steps done for that one)."""
    k = stage_of(plan, step)
    out = [(s, s.recipe) for s in plan.stages[:k]]
    stage = plan.stages[k]
    return out + [(stage, prefix_recipe(stage.recipe, step - stage_start(plan, k)))]


def stage_means(plan: Plan, steps: np.ndarray, values: np.ndarray) -> list[Optional[float]]:
    """Per stage, the mean of the logged ``values`` at the ``steps`` it ran (None where it logged none)."""
    index = np.minimum(np.searchsorted(stage_ends(plan), steps, side="left"), len(plan.stages) - 1)
    return [float(values[index == k].mean()) if (index == k).any() else None for k in range(len(plan.stages))]


def steps_done_by_stage(plan: Plan, step: int) -> list[int]:
    """Per stage, the steps of it the run has done by its step ``step``."""
    return [max(0, min(step, end) - start) for start, end in zip([0] + stage_ends(plan), stage_ends(plan))]


def stage_seconds(plan: Plan, step: int, steps: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Each stage's seconds of training by the run's step ``step``, from its logged step times (``steps``,
    ``values``): its steps done × its mean step time (the run's mean where it logged none)."""
    means = [float(np.mean(values)) if m is None else m for m in stage_means(plan, steps, values)]
    return np.array(steps_done_by_stage(plan, step), dtype=float) * np.array(means)
