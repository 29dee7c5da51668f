"""The plan model of one job, built as a pipeline of ``define_*`` steps over its plan space.

``space.collect_space`` takes the coefficients from the evaluator as arrays (every student's at
once, ``students.py``; pruned exactly, ``data.prune``); ``build`` then adds, in this order:

1. the plan's choices and what they cost: a space of one slot is the plan itself (``define_slot``:
   the choices, the disaggregated work, checkpointing, accounting, retention, on the model); a
   space of two or three slots is the stages layer (``stages.define_stages``: one such block
   per slot, the sequence, the chained scores, the same student throughout);
2. the user's limits (``limits.py``), with each layer's floors (``stages.define_pair_limits``);
3. the objectives (``objectives.py``);
4. the one-hot groups every plan is read from (``declare_choices``): the extractor, the
   tolerance cuts and the MIP start of ``planopt.job.model.PlanModel`` read them, whatever the layers.

Each step's module documents its constraints with their formulas. A step that does not apply
returns early, as PyPSA's ``define_*`` steps do.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyomo.core as pyo  # not pyomo.environ: its plugins cost every CLI call ~0.3 s unused (BENCHMARKS.md §1)

from planopt.models.formulation.accounting import define_accounting
from planopt.models.formulation.checkpointing import define_checkpointing
from planopt.models.formulation.choices import define_choices
from planopt.models.formulation.data import FormulationData
from planopt.models.formulation.limits import LIMITS, define_limits, recipe_within_limits, set_limits
from planopt.models.formulation.objectives import OBJECTIVES, activate_objective, define_expected_objectives, define_objectives
from planopt.models.formulation.retention import define_retention
from planopt.models.formulation.scenarios import ScenarioSpace, define_scenarios
from planopt.models.schema.instance import Constraints
from planopt.models.formulation.space import PlanSpace, collect_space
from planopt.models.formulation.staged_start import staged_start
from planopt.models.formulation.stages import define_pair_limits, define_stages
from planopt.models.formulation.start import mip_start
from planopt.models.formulation.work import define_work

__all__ = ["build", "define_plan", "chosen", "chosen_plan", "collect_space", "PlanSpace", "FormulationData", "LIMITS", "OBJECTIVES", "set_limits",
           "activate_objective", "recipe_within_limits"]


def build(space: PlanSpace, scenarios: ScenarioLayer | None = None) -> pyo.ConcreteModel | None:
    """The plan model of ``space`` (the module docstring), or None when it has nothing to choose from. With
    ``scenarios`` the limits hold in a share of sampled scenarios (``scenarios.py``) instead of at the point values."""
    inst = space.evaluator.inst
    if not space.recipes or not space.hardware:
        return None  # the caller reports why
    m = pyo.ConcreteModel(name=inst.name)
    define_plan(m, space, inst.constraints, scenarios)
    define_objectives(m)
    if scenarios is not None:
        define_expected_objectives(m)
    activate_objective(m, inst.objective if scenarios is None or scenarios.cvar_level is None else "cvar")
    return m


def define_plan(m, space: PlanSpace, constraints: Constraints, scenarios: ScenarioLayer | None = None) -> None:
    """Steps 1, 2 and 4 of the module docstring on the block ``m`` (a model, or a portfolio's job block): the plan's
    choices and what they cost, the limits ``constraints`` (at the point values, or with ``scenarios`` in a share
    of them) and the one-hot groups. No objective: a model adds its own (``build``)."""
    if space.staged:
        define_stages(m, space)
    else:
        define_slot(m, space.slots[0])
    define_limits(m, constraints if scenarios is None else Constraints(), None if space.staged else space.slots[0])
    if scenarios is None:
        define_pair_limits(m, space)
    else:
        define_scenarios(m, space, scenarios.coefficients, scenarios.limits, scenarios.allowed, scenarios.cvar_level)
    declare_choices(m, space)


@dataclass
class ScenarioLayer:
    """What the scenarios layer adds to a plan model: its coefficients, the limits each scenario is held to,
    how many scenarios may break them (None: free) and the CVaR level (None: expected values)."""

    coefficients: ScenarioSpace
    limits: dict[str, float]
    allowed: int | None
    cvar_level: float | None = None


def define_slot(m: pyo.ConcreteModel, data: FormulationData) -> None:
    """The plan of a one-slot space: one recipe, one hardware choice, one interval (and retention option)."""
    define_choices(m, data)
    # per-pair rows with pools of environment workers (work.py): hardware copies that differ by their pool alone
    define_work(m, data, one_row_per_hardware=not data.evaluator.inst.environments.pools)
    define_checkpointing(m, data)
    define_accounting(m, data)
    define_retention(m, data)  # after the cost it adds to, before the limits and objectives that read it


def declare_choices(m: pyo.ConcreteModel, space: PlanSpace) -> None:
    """``m.choice_groups``: each one-hot group of binaries a plan is read from, by name (``interval``,
    ``retention``, ``sequence``, ``stage<s>.recipe``, ``stage<s>.hardware``), each in the order of its options."""
    groups: dict[str, list] = {}
    slots = [m] if not space.staged else [m.stage[s] for s in m.S]
    for s, b in enumerate(slots):
        if hasattr(b, "recipe_chosen"):
            groups[f"stage{s}.recipe"] = list(b.recipe_chosen.values())
            groups[f"stage{s}.hardware"] = list(b.hardware_chosen.values())
    groups["interval"] = list(m.interval_chosen.values())
    if hasattr(m, "sequence_chosen"):
        groups["sequence"] = list(m.sequence_chosen.values())
    if hasattr(m, "retention_chosen"):
        groups["retention"] = list(m.retention_chosen.values())
    m.choice_groups = groups


def chosen(m) -> dict[str, int]:
    """The option each one-hot group of the loaded solution of ``m`` chose (``declare_choices``); a slot the plan's
    sequence leaves empty chooses none."""
    return {name: i for name, group in m.choice_groups.items()
            for i in [next((n for n, v in enumerate(group) if pyo.value(v) > 0.5), None)] if i is not None}


def chosen_plan(m, space: PlanSpace, choice: dict[str, int] | None = None):
    """(the plan of the loaded solution of ``m`` over ``space``, its (recipe, hardware) positions per stage), read
    from its one-hot groups (``chosen``, or ``choice`` when given)."""
    choice = chosen(m) if choice is None else choice
    stages = []
    while f"stage{len(stages)}.recipe" in choice:
        s = len(stages)
        stages.append((choice[f"stage{s}.recipe"], choice[f"stage{s}.hardware"]))
    return space.plan_of(stages, choice["interval"], choice.get("retention")), stages


def plan_choices(m, space: PlanSpace, plan) -> list[tuple[object, float]] | None:
    """The inverse of ``chosen_plan``: every binary of every one-hot group of ``m`` (``declare_choices``) at its
    value in ``plan`` (1 on the option the plan takes, 0 elsewhere; a slot the plan's sequence leaves empty all 0),
    or None where the plan is not in ``space`` (a recipe, hardware choice, interval, sequence or student it lacks).
    A recipe or hardware choice is matched with its student (candidate students list equal recipes once each)."""
    d0 = space.slots[0]
    student = None if not d0.students else plan.student
    picks: dict[str, int | None] = {}
    for s, slot in enumerate(space.slots):
        stage = plan.stages[s] if s < len(plan.stages) else None
        for name, options, of_student in (("recipe", slot.recipes, slot.recipe_student),
                                          ("hardware", slot.hardware, slot.hardware_student)):
            if stage is None:
                picks[f"stage{s}.{name}"] = None
                continue
            want = stage.recipe if name == "recipe" else stage.hardware
            found = [i for i, o in enumerate(options) if o == want and slot.student_name(of_student(i)) == student]
            if not found:
                return None
            picks[f"stage{s}.{name}"] = found[0]
    if len(plan.stages) > len(space.slots) or plan.checkpoint_interval_minutes not in space.intervals:
        return None
    picks["interval"] = space.intervals.index(plan.checkpoint_interval_minutes)
    if "sequence" in m.choice_groups:
        if plan.methods not in space.sequences:
            return None
        picks["sequence"] = space.sequences.index(plan.methods)
    if "retention" in m.choice_groups:
        options = space.evaluator.retention_options()
        if plan.retention not in options:
            return None
        picks["retention"] = options.index(plan.retention)
    elif plan.retention is not None:
        return None
    if any(i is not None and name not in m.choice_groups for name, i in picks.items()):
        return None   # a slot no recipe of which fits anywhere has no group
    values: list[tuple[object, float]] = []
    for name, group in m.choice_groups.items():
        if name not in picks:
            return None
        values += [(v, 1.0 if i == picks[name] else 0.0) for i, v in enumerate(group)]
    return values


def start_values(m: pyo.ConcreteModel, space: PlanSpace) -> list | None:
    """A MIP start for the model's active objective and limits: the one-slot floors' (``start.py``, its retention
    option too) or the stages' pairs' (``staged_start.py``; None with a retention block, whose option it does not set)."""
    if space.staged and space.evaluator.inst.retention is not None:
        return None
    return staged_start(m, space) if space.staged else mip_start(m, space.slots[0])
