r"""A teacher that does not exist yet, trained as a stage the plan chooses (issue 12, item 1).

With ``teacher.training`` (``schema.TeacherTraining``) the missing teacher is not a lump
(``training_usd`` / ``training_hours``) but a one-stage job of its own: an :class:`Instance`
whose student is ``teacher.architecture``, whose baseline is ``teacher.training.baseline_score``,
with no teacher, the methods of ``teacher.training.methods`` (SFT and/or RL), the GPUs of
``teacher.training.gpus`` (default ``hardware.gpus``), and every other block (hardware, prices,
reliability, storage, efficiency, priors, checkpointing, retention) the student's. Its plans are
priced by the same :class:`~planopt.models.cost.evaluator.Evaluator`; there is no second cost model.

**Usable.** A teacher plan :math:`\theta` is usable when it has no violation on the teacher's job
(it fits in memory; with retention, its options cover the detection delay) and reaches the score
the OPD stage distils, ``not exceeds(q_\theta, teacher.score, ">=")`` (the product's tolerance rule).

**What enters the student's plan.** Only :math:`(c_\theta, w_\theta)`: the teacher job's cost and
its wall hours. The OPD stage distils a teacher of exactly ``teacher.score`` whatever
:math:`\theta` reached (as with the lump), and the teacher's forgetting does not matter to the
student. :math:`c_\theta` is the teacher job's evaluated cost with its operations and forgetting
repair set to zero (the teacher's job is built with ``operations`` zero and
``forgetting_repair_usd_per_point`` 0): the student's plan charges :math:`p_{ops}` per wall hour
over its whole wall time, which holds :math:`w_\theta` as lead time, and ``operations.fixed_usd``
once, so neither is counted twice. In the recipe profile (``recipes.py``):

.. math:: \mathrm{data}(r) \mathrel{+}= c_\theta, \qquad \mathrm{lead}(r) = w_\theta

**Pareto pruning (exact).** Every metric of a student plan is either independent of
:math:`\theta` (quality, forgetting, memory, GPU hours) or non-decreasing in :math:`c_\theta` and
in :math:`w_\theta` (cost :math:`= \ldots + c_\theta + p_{ops} w_\theta`, wall
:math:`= w_\theta + H_{train}`). Every limit (budget, deadline, forgetting, quality) is a maximum
of a non-decreasing metric or a minimum of an independent one, and every objective (cost, time,
quality, forgetting, each with cost as the tie-break) is minimised over such metrics. So if
:math:`\theta'` has :math:`c_{\theta'} \le c_\theta` and :math:`w_{\theta'} \le w_\theta`,
replacing :math:`\theta` by :math:`\theta'` in any plan keeps it feasible and no worse on any
objective: some optimum uses a teacher plan of the (cost, wall) Pareto set, and offering only that
set loses no optimum. Ties (equal cost and wall) are interchangeable in every metric; the first in
(cost, wall, enumeration order) is kept, so the set is deterministic.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from pydantic import ValidationError

from planopt.models.cost.consistency import check_physics
from planopt.models.cost.tolerance import exceeds
from planopt.models.schema.plan import Plan
from planopt.models.schema.instance import Instance


@dataclass(frozen=True)
class TeacherOption:
    """A usable teacher plan and what enters the student's plan: its cost and wall hours."""

    plan: Plan
    cost_usd: float
    wall_hours: float
    quality: float


@dataclass
class TeacherSpace:
    """The teacher's job, its usable plans (enumeration order) and their (cost, wall) Pareto set."""

    inst: Instance
    usable: dict[Plan, TeacherOption]
    pareto: list[TeacherOption]
    best_quality: float | None       # the best quality of a plan without violations (None: none fits)


def _describe(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err["loc"])
    return (f"{loc}: " if loc else "") + err["msg"].removeprefix("Value error, ")


def teacher_instance(inst: Instance) -> Instance:
    """The teacher's own one-stage job (see the module docstring); ValueError naming the field."""
    t = inst.teacher
    tt = t.training
    data = inst.model_dump()
    data.update(name=f"{inst.name} (teacher)", student=t.architecture.model_dump(), teacher=None, candidate_students=None,
                constraints={}, objective="cost", uncertainty={}, forgetting_repair_usd_per_point=0.0, releases=None,
                continued_pretraining=None,
                operations={"fixed_usd": 0.0, "usd_per_wall_hour": 0.0})
    data["task"]["baseline_score"] = tt.baseline_score
    training = data["training"]
    training["methods"] = {m: o.model_dump() for m, o in tt.methods.items()}
    training["stage_sequences"] = None
    if "rl" not in tt.methods:  # asynchronous RL is an RL option only
        training["staleness_steps_options"] = [0]
    if tt.gpus is not None:
        data["hardware"]["gpus"] = [g.model_dump() for g in tt.gpus]
    try:
        teach = Instance.model_validate(data)
    except ValidationError as exc:
        raise ValueError(f"teacher.training: the teacher's own job is not valid: {_describe(exc)}") from None
    try:
        check_physics(teach)  # the consistency checks a job without a teacher or uncertainty can fail
    except ValueError as exc:
        raise ValueError(f"teacher.training: the teacher's own job is not valid: {exc}") from None
    return teach


def _build(inst: Instance, evaluator: type) -> TeacherSpace:
    teach = teacher_instance(inst)
    ev = evaluator(teach)
    recipes, hardware, intervals = ev.space()
    retention = ev.retention_options() or [None]
    target = inst.teacher.score
    usable: dict[Plan, TeacherOption] = {}
    best = None
    for r, h, i, k in itertools.product(recipes, hardware, intervals, retention):
        m = ev.metrics(r, h, i, k)
        if m.violations:
            continue
        best = m.quality if best is None else max(best, m.quality)
        if not exceeds(m.quality, target, ">="):
            plan = Plan.of(r, h, i, k)
            usable[plan] = TeacherOption(plan, m.cost_usd, m.wall_hours, m.quality)
    return TeacherSpace(teach, usable, pareto_set(list(usable.values())), best)


def pareto_set(options: list[TeacherOption]) -> list[TeacherOption]:
    """The (cost, wall) Pareto set of ``options``: sorted by (cost, wall, position), a plan is kept
    exactly when its wall is below every kept one's (a later plan costs at least as much, so it is
    dominated or tied unless it is faster)."""
    order = sorted(range(len(options)), key=lambda n: (options[n].cost_usd, options[n].wall_hours, n))
    kept: list[TeacherOption] = []
    for n in order:
        if not kept or options[n].wall_hours < kept[-1].wall_hours:
            kept.append(options[n])
    return kept


# Spaces by instance object (the instance is held, so its id is not reused while cached), and by the
# content the teacher's job is built from: a copy with other limits or another objective (a sweep's rows,
# ``Instance.with_overrides``) shares its teacher space, which does not depend on them.
_SPACES: dict[int, tuple[Instance, TeacherSpace]] = {}
_BY_CONTENT: dict[str, TeacherSpace] = {}
_CACHE_SIZE = 32
_NOT_READ = {"name", "constraints", "objective", "uncertainty"}   # teacher_instance replaces them


def teacher_space(inst: Instance, evaluator: type) -> TeacherSpace:
    """The teacher space of ``inst`` (which has ``teacher.training``), computed once per instance content, its
    plans priced by ``evaluator`` (the ``Evaluator`` class, handed down: it prices recipes with this module's
    answers, so this module may not import it)."""
    hit = _SPACES.get(id(inst))
    if hit is not None and hit[0] is inst:
        return hit[1]
    key = inst.model_dump_json(exclude=_NOT_READ)
    space = _BY_CONTENT.get(key)
    if space is None:
        space = _BY_CONTENT[key] = _build(inst, evaluator)
    for cache in (_SPACES, _BY_CONTENT):
        while len(cache) > _CACHE_SIZE:
            cache.pop(next(iter(cache)))
    _SPACES[id(inst)] = (inst, space)
    return space


def check_teacher_training(inst: Instance, evaluator: type) -> None:
    """Refuse, naming the field, a ``teacher.training`` block the product cannot honour (``evaluator``: as
    :func:`teacher_space`)."""
    t = inst.teacher
    tt = t.training
    if t.exists:
        raise ValueError("teacher.training: only for a teacher that does not exist yet; set teacher.exists to false "
                         "or remove teacher.training")
    if t.training_usd or t.training_hours:
        raise ValueError("teacher.training_usd / teacher.training_hours: the lump is replaced by teacher.training "
                         "(the teacher's job is priced by the evaluator); remove them or teacher.training")
    if "opd" in tt.methods:
        raise ValueError("teacher.training.methods.opd: not allowed (there is no teacher of the teacher); use 'sft' and/or 'rl'")
    if "sft" in tt.methods and inst.sft_data is None:
        raise ValueError("teacher.training.methods.sft: needs sft_data (the teacher's SFT uses the task's examples)")
    if tt.baseline_score > t.score:
        raise ValueError(f"teacher.training.baseline_score: {tt.baseline_score:g} is above teacher.score {t.score:g} "
                         f"(the score the training must reach)")
    space = teacher_space(inst, evaluator)
    if not space.usable:
        gpus = "teacher.training.gpus" if tt.gpus is not None else "hardware.gpus"
        if space.best_quality is None:
            raise ValueError(f"teacher.training: no plan of the teacher's job fits in memory on {gpus}; "
                             f"add larger or more GPUs there")
        raise ValueError(f"teacher.training: no teacher plan reaches teacher.score {t.score:g} (the best reaches "
                         f"{space.best_quality:.2f}); allow longer training in teacher.training.methods.*.steps_options, "
                         f"another method, or lower teacher.score")


def teacher_option(inst: Instance, plan: Plan | None, method: str, evaluator: type) -> TeacherOption | None:
    """The teacher option a recipe of ``method`` names; ValueError naming ``plan.teacher_training`` when it is
    not one of the instance's usable teacher plans (or is given where none is trained). ``evaluator``: as
    :func:`teacher_space`."""
    trained = method == "opd" and inst.teacher is not None and inst.teacher.training is not None
    if not trained:
        if plan is not None:
            why = "the instance's teacher is not trained as a stage (teacher.training is null)" if method == "opd" \
                else f"only an OPD plan has a teacher, not {method}"
            raise ValueError(f"plan.teacher_training: expected null: {why}")
        return None
    if plan is None:
        raise ValueError("plan.teacher_training: missing: the teacher does not exist yet and teacher.training "
                         "trains it; give the teacher's plan")
    space = teacher_space(inst, evaluator)
    option = space.usable.get(plan)
    if option is not None:
        return option
    ev = evaluator(space.inst)
    try:
        m = ev.evaluate(plan)
    except ValueError as exc:  # name the teacher's own fields of the instance, where they differ from the student's
        why = str(exc).removeprefix("plan.").replace("training.methods", "teacher.training.methods")
        if inst.teacher.training.gpus is not None:
            why = why.replace("hardware.gpus", "teacher.training.gpus")
        raise ValueError("plan.teacher_training." + why) from None
    why = "; ".join(m.violations) if m.violations else \
        f"it reaches {m.quality:.2f}, below teacher.score {inst.teacher.score:g}"
    raise ValueError(f"plan.teacher_training: not a usable teacher plan of the instance: {why}")


def teacher_plans(inst: Instance, evaluator: type) -> tuple:
    """The teacher plans an OPD recipe is offered with: each plan of the (cost, wall) Pareto set of a teacher
    trained as a stage (an exact pruning, the module docstring), or (None,): the teacher exists, or is a lump."""
    if inst.teacher is None or inst.teacher.training is None or inst.teacher.exists:
        return (None,)
    return tuple(o.plan for o in teacher_space(inst, evaluator).pareto)


def teacher_lump(inst: Instance, r, evaluator: type) -> tuple[float, float]:
    r"""(money, lead hours) of obtaining the teacher of recipe ``r``: for OPD with a missing teacher,
    ``training_usd`` / ``training_hours`` (a lump), or with ``teacher.training`` the teacher plan's own cost
    :math:`c_\theta` and wall hours :math:`w_\theta`; (0, 0) otherwise. ValueError naming ``plan.teacher_training``
    when the recipe's teacher plan is not a usable one (or is given where none is trained)."""
    option = teacher_option(inst, r.teacher_training, r.method, evaluator)
    if option is not None:
        return option.cost_usd, option.wall_hours
    if r.method == "opd" and not inst.teacher.exists:
        return inst.teacher.training_usd, inst.teacher.training_hours
    return 0.0, 0.0
