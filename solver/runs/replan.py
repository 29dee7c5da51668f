r"""``planopt replan``: the best plan for the rest of a run in flight (issue 26 item 3).

**The rest of the run is an instance** (:func:`rest_instance`), built from the instance fitted to what the run
measured (``track``'s update, through ``fit.fit``):

- the remaining limits: ``budget_usd`` less the spend so far (sunk: against the budget, not in the objective)
  and, with ``releases``, less the other releases' money (:func:`other_releases_usd`: the run is the first release,
  the others run the plan as planned; re-plan a later release with ``solve`` when it starts), the rest being this
  run alone,
  ``deadline_hours`` less the elapsed hours, ``max_forgetting_points`` less the forgetting so far (measured, else
  the fitted model's at the steps done); ``min_quality`` as it is (the rest ends at the run's final score);
- the start: ``task.baseline_score`` is the score the run has reached (:func:`score_reached`: the fitted model's
  score at the steps done, which pools every logged task score; the last one alone carries the whole measurement
  error, 2.24 points at ``fit``'s default, and would decide stopping on noise). A remaining
  stage starts from it as a later stage of a staged plan does (``stage_outcomes.stage_outcome``), which is what
  the one-stage profile of an instance with that baseline computes once two priors are restated in its terms:
  a method's ceiling :math:`C_m = q_0 + c(C - q_0)` stays where it was, so the headroom share becomes
  :math:`c' = (C_m - q)/(C - q)` (0 when the run is past it), and an on-policy method's forgetting per point
  moved, :math:`G\phi/|C_m - q_0|`, stays, so :math:`\phi' = \phi\,|C_m - q|/|C_m - q_0|` (at most 1; OPD's
  :math:`C_m` is the teacher's at the run's precision, else the first offered: exact where one is offered);
- the remaining decisions: every method, its steps options; the run's own method's options are shifted by the
  steps done (a plan of 400 steps at step 80 continues for 320, one of 800 for 720; options not past the steps done
  are gone): continuing the current stage for a different length is a stage of its method from the score
  reached, with its own sampling schedule; another method is a next stage from there;
- what is sunk: the instance's one-off ``operations.fixed_usd``, for an RL run ``reward.design_usd``, for an OPD
  run the teacher (it exists now); SFT data bought for an SFT run is priced again (not tracked by the run's log);
- prompts already drawn are **not counted** for data reuse: the reuse model (``data_reuse.py``) prices the draws
  of one stage from a fresh pool and has no hook for draws before it (the rest's fresh-prompt worth is therefore
  optimistic by the prompts drawn, which the result reports).

**Nothing left to run.** When the run has done every step its method offers and the instance offers no other
method (or no allowed sequence of the methods left), stopping is the whole rest (``Rest.plans_left`` false; ``stay``
then carries only the limits): the answer is stopping now, or infeasible.

**A staged run** (``runs/stages.py``), in its stage :math:`i` of method :math:`m`: the start is the fitted model's
score of the plan stopped at the last step (the stages before whole, chained, then the current one stopped there),
the forgetting so far is the whole run's, and the reward and the teacher are sunk once any stage so far has used
them. The rest runs the instance's stage sequences that ran the plan's methods up to :math:`i`, each from :math:`i`
(:math:`m` continued, its steps shifted by its own steps done, on the run's GPUs through
``training.methods.m.gpus``) or from :math:`i + 1` (the later stages now); its later stages train on any GPU, as a
staged plan's stages do (a staged plan prices no move between its stages). That is one staged instance, solved by
the one plan model; each move re-solves the sequences that continue :math:`m`, with :math:`m` on the target's GPUs
and the move priced in. The continuing plan is the current stage's remaining steps, then the later stages as
planned. ``tests/solver/runs/test_track_staged.py`` holds the choice to the enumeration of every remaining plan.

**Moving hardware** to a target (GPU, count) costs a checkpoint write on the current hardware, a read of it on the
target (at the same storage bandwidth per node: the evaluator's ``checkpoint_write_hours`` of the target's nodes)
and a restart there (``reliability.restart_minutes``): hours :math:`w_{move} = w_{cur} + w_{tgt} + R`, money
:math:`(n p + c_{wall})\,w_{cur} + (n' p' + c_{wall})(w_{tgt} + R)`, the write at the current GPUs' price, the read
and restart at the target's, both with the operations' USD per wall hour (:func:`move_cost`). Per target the move is
one constant for every other choice, so the exact MIP over the remaining decisions is one solve of the one plan model
per hardware, each exact: the current (GPU, count) alone, and each other with its move as ``operations.fixed_usd``
and off the deadline (the chance-constrained layer prices constants and deadlines in every scenario alike, so
``--confidence`` holds it too). The least of these and **stop now** (no further steps: zero further cost and hours,
valid when the score reached meets ``min_quality`` and the forgetting so far ``max_forgetting_points``) is the
replan, by the instance's objective (with ``--confidence`` the expected value the chance model minimises), ties by
cost, then stop, stay, move (moves in the instance's hardware order).
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass
from typing import Any, Optional

from planopt.models.cost.evaluator import OBJECTIVE_METRIC, Evaluator, exceeds
from planopt.models.cost.learning import on_policy_ceiling, sft_ceiling
from planopt.models.schema.instance import Instance
from planopt.models.schema.plan import HardwareChoice, Plan, Recipe
from planopt.models.uncertainty.model import DEFAULT_SEED

from planopt.errors import InputError
from planopt.job.model import COST_TIE_RELATIVE, TIE_BREAK_RELATIVE, SolveResult
from planopt.runs import stages
from planopt.runs.state import RunState
from planopt.runs.track import fit_run
from planopt.uncertainty import fit as fitting
from planopt.uncertainty.risk import check_scenarios, check_seed, plan_risk

ON_POLICY = ("rl", "opd")
# Scenarios the shares of the answer are drawn on (``track.DEFAULT_TRACK_SCENARIOS``'s reasoning).
DEFAULT_REPLAN_SCENARIOS = 1_000
CHOICES = ("stop", "stay", "move")   # the tie order (module docstring)


@dataclass
class Move:
    """What leaving the run's hardware costs (module docstring)."""

    hours: float
    usd: float
    write_hours: float                   # on the current hardware
    read_hours: float                    # on the target
    restart_hours: float                 # on the target
    gpu: str                             # the target
    count: int

    def to_dict(self) -> dict:
        """The move as ``replan --json`` prints it."""
        return dataclasses.asdict(self)


@dataclass
class Rest:
    """The rest of a run as instances: ``stay`` (the current GPU and count), ``moves`` (each other GPU and count
    with time left for its move: the move and the instance on that hardware alone, the move priced in), the start
    and what is sunk."""

    stay: Instance
    moves: list[tuple[Move, Instance]]
    start_score: float
    forgetting_so_far: float
    forgetting_measured: bool
    prompts_drawn: int
    continuing: Optional[Plan]           # the original plan's remaining steps, on ``stay``
    run_hardware: Optional[HardwareChoice] = None   # the run's: where a move's checkpoint is written
    plans_left: bool = True              # False: no method has steps left; stopping is the whole rest (``stay``: limits)


def move_cost(fitted: Instance, plan: Plan, gpu: str, count: int, index: int = 0) -> Optional[Move]:
    """The move to ``count`` × ``gpu`` of the module docstring, from the evaluator's own checkpoint and restart
    figures: the write on the run's hardware, the read of the run's checkpoint and the restart on the target's.
    None when no price holds the target (``hardware.unheld_counts``: out of the plan space). ``index``: the run's
    stage."""
    stage = plan.stages[index]
    ev = Evaluator(fitted).for_student(plan.student)
    here = ev.hardware(stage.hardware)
    target = ev.hardware(dataclasses.replace(stage.hardware, gpu=gpu, count=count, rollout_gpu=None, rollout_count=0))
    if target.price_usd_per_gpu_hour is None:
        return None
    w, read, r = here.checkpoint_write_hours, target.checkpoint_write_hours, target.restart_hours
    wall = fitted.operations.usd_per_wall_hour
    usd = (here.usd_per_hour_of_gpus + wall) * w + (target.usd_per_hour_of_gpus + wall) * (read + r)
    return Move(w + read + r, usd, w, read, r, gpu, count)


def _restate(data: dict, key: str, value: float, fn) -> None:
    """``fn`` applied to a prior's point (``data["priors"]``) and to its ``uncertainty`` entry, a point or a range
    (its bounds: ``fn`` is increasing and affine, so the range of the restated share is the restated range)."""
    method, field = key.split(".")
    data["priors"][method][field] = fn(value)
    unc = (data.get("uncertainty") or {}).get(f"priors.{key}")
    if isinstance(unc, dict):
        for bound in ("low", "high"):
            if unc.get(bound) is not None:
                unc[bound] = fn(unc[bound])
    elif isinstance(unc, (int, float)):
        data["uncertainty"][f"priors.{key}"] = fn(unc)


def _restated_priors(data: dict, inst: Instance, stage, q: float) -> None:
    """The headroom and forgetting shares restated for a start at ``q`` (module docstring), in ``data``; ``stage``:
    the run's."""
    task = inst.task
    q0, top = task.baseline_score, task.score_ceiling
    precision = (stage.recipe.teacher_precisions or (None,))[-1]  # the run's last phase's (its ceiling's)
    for m in inst.training.methods:
        prior = inst.priors.of(m)
        if m == "opd":
            options = inst.teacher.precision_options if inst.teacher is not None else []
            p = precision if stage.method == "opd" and precision else (options[0] if options else None)
            if p is None:
                continue
            r = Recipe("opd", 1, (1,) * inst.training.phases, teacher_precision=p)
            ceiling = float(on_policy_ceiling(inst, r, prior.ceiling_share_of_headroom))
        else:
            ceiling = float(sft_ceiling(task, prior.ceiling_share_of_headroom))
            # C_m = q0 + c (C - q0) kept: c' = (C_m - q) / (C - q), increasing and affine in c
            _restate(data, f"{m}.ceiling_share_of_headroom", prior.ceiling_share_of_headroom,
                     lambda c: min(1.0, max(0.0, q0 + c * (top - q0) - q) / (top - q)) if top > q else 0.0)
        if m in ON_POLICY and abs(ceiling - q0) > 0:
            ratio = abs(ceiling - q) / abs(ceiling - q0)
            _restate(data, f"{m}.forgetting_share_of_baseline", prior.forgetting_share_of_baseline,
                     lambda f: min(1.0, f * ratio))


def other_releases_usd(fitted: Instance, plan: Plan) -> float:
    """With ``releases`` (``cost/releases.py``), the money the budget keeps for the other releases: the run is the
    first (it pays every fixed line and buys every label), each other one runs ``plan`` as planned at the fitted
    point values, at the plan's cost of a later release (0 without the block)."""
    summary = Evaluator(fitted).evaluate(plan).releases
    if not summary or summary["count"] == 1:
        return 0.0
    return (summary["count"] - 1) * summary["later_release_usd"]


def _continuing(plan: Plan, state: RunState) -> Optional[Plan]:
    """The original plan's remaining steps: its current stage's (when any are left), then the stages after it as
    planned; None when nothing is left."""
    stage = plan.stages[state.stage]
    left = stage.recipe.steps - state.stage_steps_done
    rest = [dataclasses.replace(stage, recipe=dataclasses.replace(stage.recipe, steps=left))] if left > 0 else []
    rest += list(plan.stages[state.stage + 1:])
    return dataclasses.replace(plan, stages=tuple(rest)) if rest else None


def rest_instance(fitted: Instance, plan: Plan, state: RunState, forgetting_so_far: float,
                  forgetting_measured: bool) -> Rest:
    """The rest of the run ``state`` of ``plan`` as instances (module docstring), from the fitted instance."""
    stage, done = plan.stages[state.stage], state.stage_steps_done
    q = score_reached(fitted, plan, state)
    data = fitted.model_dump(mode="json")
    _restated_priors(data, fitted, stage, q)
    data["task"]["baseline_score"] = q
    c, lim = data["constraints"], fitted.constraints
    if lim.budget_usd is not None:
        c["budget_usd"] = max(0.0, lim.budget_usd - state.spend_usd - other_releases_usd(fitted, plan))
    data["releases"] = None                          # the rest is this run's (other_releases_usd)
    if lim.deadline_hours is not None:
        c["deadline_hours"] = max(0.0, lim.deadline_hours - state.elapsed_hours)
    if lim.max_forgetting_points is not None:
        c["max_forgetting_points"] = max(0.0, lim.max_forgetting_points - forgetting_so_far)
    data["operations"]["fixed_usd"] = 0.0            # sunk at the run's start
    ran = plan.methods[:state.stage + 1]
    if "rl" in ran and data.get("reward"):
        data["reward"]["design_usd"] = 0.0           # the run's reward is built
    if "opd" in ran and data.get("teacher"):
        data["teacher"].update(exists=True, training=None)  # the run's teacher is obtained
    if len(plan.stages) > 1:
        return _staged_rest(fitted, plan, state, data, q, forgetting_so_far, forgetting_measured)
    offered = copy.deepcopy(data["training"])    # what ``stay`` keeps when nothing is left to run (its limits count)
    methods = data["training"]["methods"]
    shifted = sorted({s - done for s in methods[stage.method]["steps_options"] if s > done})
    if shifted:
        methods[stage.method]["steps_options"] = shifted
    else:
        del methods[stage.method]
    sequences = data["training"].get("stage_sequences")
    if sequences is not None:  # the sequences of the methods left (a method with no steps left runs in none)
        data["training"]["stage_sequences"] = [seq for seq in sequences if set(seq) <= set(methods)] or None
        if data["training"]["stage_sequences"] is None:
            methods.clear()
    plans_left = bool(methods)
    if not plans_left:  # every step the methods offer is done: the rest is stopping now
        data["training"] = offered
    _uncertainty_of_the_rest(data)
    gpu, count = stage.hardware.gpu, stage.hardware.count
    gpus = data["hardware"]["gpus"]
    own = [dict(g, counts=[count]) for g in gpus if g["name"] == gpu]
    stay = _validated(_with_gpus(data, own), "the rest on the run's hardware")
    moves = []
    for g, n, move, constraints in _move_targets(fitted, plan, state, data) if plans_left else []:
        moved = {**_with_gpus(data, [dict(g, counts=[n])]),
                 "operations": {**data["operations"], "fixed_usd": move.usd}, "constraints": constraints}
        moves.append((move, _validated(moved, f"the rest on {n} × {g['name']}")))
    prompts = done * fitted.training.methods[stage.method].prompts_per_step
    continuing = _continuing(plan, state) if plans_left and stage.method in stay.training.methods else None
    return Rest(stay, moves, q, forgetting_so_far, forgetting_measured, prompts, continuing, stage.hardware, plans_left)


def _move_targets(fitted: Instance, plan: Plan, state: RunState, data: dict):
    """Each other (GPU entry, count) a move to is priced and leaves time before the rest's deadline: (entry, count,
    the :class:`Move`, the rest's constraints with the move's hours off the deadline)."""
    stage, c, lim = plan.stages[state.stage], data["constraints"], fitted.constraints
    for g in data["hardware"]["gpus"]:
        for n in g["counts"]:
            if g["name"] == stage.hardware.gpu and n == stage.hardware.count:
                continue
            move = move_cost(fitted, plan, g["name"], n, state.stage)
            if move is None or (lim.deadline_hours is not None and c["deadline_hours"] <= move.hours):
                continue
            deadline = {} if lim.deadline_hours is None else {"deadline_hours": c["deadline_hours"] - move.hours}
            yield g, n, move, {**c, **deadline}


def _staged_rest(fitted: Instance, plan: Plan, state: RunState, data: dict, q: float, forgetting_so_far: float,
                 forgetting_measured: bool) -> Rest:
    """The rest of a staged run in its stage :math:`i` of method :math:`m` (module docstring): the sequences of the
    instance that ran the plan's methods up to :math:`i` give the rest's, each from :math:`i` (:math:`m` continued,
    its steps shifted by its own steps done, on the run's GPUs: ``training.methods.m.gpus``) or from :math:`i + 1`
    (the later stages now); later stages train on any GPU, as a staged plan's stages do. A move re-runs the
    continuing sequences with :math:`m` on the target's GPUs and the move priced in."""
    stage, i, done = plan.stages[state.stage], state.stage, state.stage_steps_done
    training = data["training"]
    m, ran = stage.method, tuple(plan.methods[:i + 1])
    matching = [tuple(seq) for seq in training["stage_sequences"] or [] if tuple(seq[:i + 1]) == ran]
    shifted = sorted({x - done for x in training["methods"][m]["steps_options"] if x > done})
    continued = sorted({seq[i:] for seq in matching}) if shifted else []
    later = sorted({seq[i + 1:] for seq in matching if len(seq) > i + 1})
    plans_left = bool(continued or later)
    if plans_left:
        used = {x for seq in continued + later for x in seq}
        training["methods"] = {k: v for k, v in training["methods"].items() if k in used}
        if continued:
            training["methods"][m].update(steps_options=shifted, gpus=_on(stage.hardware.gpu, stage.hardware.count))
        training["stage_sequences"] = [list(seq) for seq in continued + later]
    _uncertainty_of_the_rest(data)
    stay = _validated(data, "the rest of the run")
    moves = []
    for g, n, move, constraints in _move_targets(fitted, plan, state, data) if continued else []:
        moved = copy.deepcopy(data)
        moved["training"]["methods"][m]["gpus"] = _on(g["name"], n)
        moved["training"]["stage_sequences"] = [list(seq) for seq in continued]
        moved["training"]["methods"] = {k: v for k, v in moved["training"]["methods"].items()
                                        if any(k in seq for seq in continued)}
        moved.update(operations={**data["operations"], "fixed_usd": move.usd}, constraints=constraints)
        _uncertainty_of_the_rest(moved)
        moves.append((move, _validated(moved, f"the rest with {m} moved to {n} × {g['name']}")))
    prompts = done * fitted.training.methods[m].prompts_per_step
    return Rest(stay, moves, q, forgetting_so_far, forgetting_measured, prompts,
                _continuing(plan, state) if plans_left else None, stage.hardware, plans_left)


def _on(gpu: str, count: int) -> list[dict]:
    """``training.methods.<m>.gpus`` of one (GPU, count)."""
    return [{"name": gpu, "counts": [count]}]


def _uncertainty_of_the_rest(data: dict) -> None:
    """``data``'s ``uncertainty`` without the entries of parameters the rest no longer has (a method it does not
    offer: the fitted ranges of the run's own method once its steps are all done, or a staged run's earlier stages)."""
    if not data.get("uncertainty"):
        return
    from planopt.models.uncertainty.model import parameters
    names = {p.name for p in parameters(Instance.model_validate({**data, "uncertainty": {}}))}
    data["uncertainty"] = {k: v for k, v in data["uncertainty"].items() if k in names}


def _with_gpus(data: dict, gpus: list) -> dict:
    """``data`` on the GPU options ``gpus``, its context-parallel degrees those some count of them runs (a degree
    must divide a count; the run's own divides its count)."""
    training = dict(data["training"])
    cp = training.get("context_parallel")
    if isinstance(cp, list):
        counts = [n for g in gpus for n in g["counts"]]
        training["context_parallel"] = [d for d in cp if any(n % d == 0 for n in counts)] or [1]
    return {**data, "training": training, "hardware": {**data["hardware"], "gpus": gpus}}


def score_reached(fitted: Instance, plan: Plan, state: RunState) -> float:
    """The score the run has reached: the fitted model's score of the plan stopped at the steps done (every logged
    task score pooled by the update; one evaluation alone is as noisy as ``fit``'s task-score error), within [0,
    ``task.score_ceiling``]."""
    q = float(_outcome_so_far(fitted, plan, state)[0])
    return min(max(q, 0.0), fitted.task.score_ceiling)


def _outcome_so_far(fitted: Instance, plan: Plan, state: RunState) -> tuple[float, float]:
    """The fitted model's (score, forgetting) of the plan stopped at the run's last step: its stages so far chained
    (``runs/stages.py``; not one of the options: priced unchecked)."""
    from planopt.models.cost.stage_outcomes import chain_outcomes, stage_outcome
    recipes = [r for _, r in stages.prefix(plan, state.last_step)]
    return chain_outcomes(fitted, stage_outcome(fitted, recipes[0], fitted.task.baseline_score), recipes[1:])


def _validated(data: dict, what: str) -> Instance:
    try:
        return Instance.model_validate(data)
    except ValueError as exc:
        first = str(exc).splitlines()
        raise InputError(f"{what}: {first[1] if len(first) > 1 else first[0]} {first[2].strip() if len(first) > 2 else ''}".strip()) from None


@dataclass
class Option:
    """One candidate for the rest: stop now, the best plan on the run's hardware, or the best after a move."""

    choice: str                          # stop | stay | move
    plan: Optional[Plan]
    cost_usd: float
    wall_hours: float
    quality: float
    forgetting_points: float             # of the rest
    objective_value: float
    result: Optional[SolveResult] = None
    move: Optional[Move] = None          # a move's: what it pays to leave the run's hardware
    inst: Optional[Instance] = None      # the rest's instance the option was solved on (a move's: its target's)

    def summary(self) -> dict:
        """The option's choice and the rest's metrics."""
        return {"choice": self.choice, "cost_usd": self.cost_usd, "wall_hours": self.wall_hours,
                "quality": self.quality, "forgetting_points": self.forgetting_points}


def _objective_value(objective: str, metrics: dict, result: Optional[SolveResult]) -> float:
    if result is not None and "violations" in result.mip_values and f"expected_{objective}" in result.mip_values:
        return float(result.mip_values[f"expected_{objective}"])
    return float(metrics[OBJECTIVE_METRIC[objective]])


def stop_option(rest: Rest, objective: str) -> Optional[Option]:
    """Stop now, where the score reached and the forgetting so far meet the limits (None otherwise)."""
    lim = rest.stay.constraints
    if lim.min_quality is not None and exceeds(rest.start_score, lim.min_quality, ">="):
        return None
    if lim.max_forgetting_points is not None and exceeds(0.0, lim.max_forgetting_points, "<="):
        return None
    metrics = {"cost_usd": 0.0, "wall_hours": 0.0, "quality": rest.start_score, "forgetting_points": 0.0}
    return Option("stop", None, 0.0, 0.0, rest.start_score, 0.0, _objective_value(objective, metrics, None))


def solved_option(choice: str, result: SolveResult, objective: str, inst: Optional[Instance] = None,
                  move: Optional[Move] = None) -> Optional[Option]:
    """A solve's plan on ``inst`` as an option (None without a plan)."""
    if result.plan is None or result.metrics is None or result.status not in ("optimal", "time_limit"):
        return None
    m = result.metrics
    metrics = {"cost_usd": m.cost_usd, "wall_hours": m.wall_hours, "quality": m.quality, "forgetting_points": m.forgetting_points}
    return Option(choice, result.plan, m.cost_usd, m.wall_hours, m.quality, m.forgetting_points,
                  _objective_value(objective, metrics, result), result, move, inst)


def best_option(options: list[Option], objective: str) -> Optional[Option]:
    """The best of ``options`` by ``objective`` (quality: the largest), within ``TIE_BREAK_RELATIVE`` tied and told
    apart by cost, then by :data:`CHOICES`' order (``PlanModel``'s tie rule)."""
    if not options:
        return None
    sign = -1.0 if objective == "quality" else 1.0
    best = min(sign * o.objective_value for o in options)
    tied = [o for o in options if sign * o.objective_value <= best + TIE_BREAK_RELATIVE * max(1.0, abs(best))]
    cheapest = min(o.cost_usd for o in tied)
    tied = [o for o in tied if o.cost_usd <= cheapest + COST_TIE_RELATIVE * max(1.0, abs(cheapest))]
    return min(tied, key=lambda o: CHOICES.index(o.choice))


def forgetting_so_far(fitted: Instance, plan: Plan, state: RunState) -> tuple[float, bool]:
    """The forgetting by the steps done: the general score's baseline less its last logged value, else the fitted
    model's forgetting of the plan stopped there; never below 0."""
    if state.general_score is not None:
        return max(0.0, fitted.task.general_score_baseline - float(state.general_score.values[-1])), True
    return max(0.0, float(_outcome_so_far(fitted, plan, state)[1])), False


def _stage_fields(old, new) -> list[tuple[str, Any, Any]]:
    """(name, old, new) of what a stage of the rest chooses (``ReplanResult.changes``)."""
    o, n = old.recipe, new.recipe
    return [("method", old.method, new.method), ("more steps", o.steps, n.steps),
            ("GPUs", f"{old.hardware.count} × {old.hardware.gpu}", f"{new.hardware.count} × {new.hardware.gpu}"),
            ("samples per prompt", o.samples_per_prompt, n.samples_per_prompt),
            ("teacher precision", o.teacher_precision_text, n.teacher_precision_text),
            ("external data share", o.external_data_share, n.external_data_share),
            ("max epochs", o.max_epochs, n.max_epochs), ("LoRA rank", o.lora_rank, n.lora_rank)]


@dataclass
class ReplanResult:
    """The rest of a run re-planned: the chosen option, the others, the original plan's remaining steps, the
    rest's instances, and the shares of updated scenarios in which each meets every limit."""

    state: RunState
    plan: Plan
    rest: Rest
    chosen: Optional[Option]
    options: list[Option]
    continuing: Optional[Option]
    shares: dict[str, Optional[float]]     # chosen | continuing -> share of updated scenarios meeting every limit
    confidence: Optional[float]
    objective: str
    scenarios: int
    seed: int
    fit: fitting.FitResult

    @property
    def status(self) -> str:
        """``optimal`` with a replan (stopping included), ``time_limit`` when the solve of the chosen rest ran out of
        time (its incumbent), else ``infeasible``."""
        if self.chosen is None:
            return "infeasible"
        return "time_limit" if self.chosen.result is not None and self.chosen.result.status == "time_limit" else "optimal"

    @property
    def headline(self) -> str:
        """The verdict line."""
        if self.chosen is None:
            return "infeasible: no rest of the run (nor stopping now) meets every limit"
        o = self.chosen
        if o.choice == "stop":
            return f"stop now: the score reached, {o.quality:.2f}, meets every limit; no further spend"
        stage = o.plan.stages[0]
        share, orig = self.shares.get("chosen"), self.shares.get("continuing")
        buys = f"; meets every limit in {share:.0%} of updated scenarios" if share is not None else ""
        if self.continuing is not None and o.plan == self.continuing.plan:
            steps = sum(s.recipe.steps for s in o.plan.stages)
            return f"continue the original plan for its {steps:,} remaining steps{buys}"
        if orig is not None:
            buys += f" (continuing the original plan: {orig:.0%})"
        what = "continue" if stage.method == self.plan.stages[self.state.stage].method else "switch to"
        where = "" if o.choice == "stay" else f", moving to {stage.hardware.count} × {stage.hardware.gpu}"
        then = "".join(f", then {s.method} for {s.recipe.steps:,} steps on {s.hardware.count} × {s.hardware.gpu}"
                       for s in o.plan.stages[1:])
        return f"{what} {stage.method} for {stage.recipe.steps:,} more steps{where}{then}{buys}"

    def changes(self) -> list[str]:
        """What the replan changes against the original plan's remaining steps, one phrase each."""
        if self.chosen is None or self.continuing is None or self.continuing.plan is None:
            return []
        if self.chosen.plan is None:
            return ["stops now instead of running the remaining steps"]
        old_plan, new_plan = self.continuing.plan, self.chosen.plan
        out = []
        if old_plan.methods != new_plan.methods:
            out.append(f"stages: {', '.join(old_plan.methods)} -> {', '.join(new_plan.methods)}")
        for k, (old, new) in enumerate(zip(old_plan.stages, new_plan.stages)):
            where = "" if k == 0 else f"stage {k + 1} "   # the rest's first stage is the run's own, unnamed
            for name, a, b in _stage_fields(old, new):
                if a != b:
                    out.append(f"{where}{name}: {a} -> {b}")
        if old_plan.checkpoint_interval_minutes != new_plan.checkpoint_interval_minutes:
            out.append(f"checkpoint interval (min): {old_plan.checkpoint_interval_minutes:g} -> "
                       f"{new_plan.checkpoint_interval_minutes:g}")
        return out

    def whole_run(self, option: Optional[Option]) -> Optional[dict]:
        """The whole run's figures with ``option`` as its rest: spend so far plus the rest's, and so on."""
        if option is None:
            return None
        return {"cost_usd": self.state.spend_usd + option.cost_usd,
                "wall_hours": self.state.elapsed_hours + option.wall_hours, "quality": option.quality,
                "forgetting_points": self.rest.forgetting_so_far + option.forgetting_points}

    def to_dict(self) -> dict:
        """The JSON object ``planopt replan --json`` prints."""
        from planopt.models.schema.plan import plan_json

        def entry(o: Optional[Option]) -> Optional[dict]:
            if o is None:
                return None
            return {**o.summary(), "plan": None if o.plan is None else plan_json(o.plan, o.plan.student),
                    "whole_run": self.whole_run(o)}
        return {"status": self.status, "headline": self.headline, "objective": self.objective,
                "confidence": self.confidence, "state": self.state.to_dict(),
                "start_score": self.rest.start_score, "last_measured_score": float(self.state.task_score.values[-1]),
                "forgetting_so_far": self.rest.forgetting_so_far,
                "forgetting_measured": self.rest.forgetting_measured, "plans_left": self.rest.plans_left,
                "prompts_drawn": self.rest.prompts_drawn, "prompts_drawn_counted": False,
                "remaining_limits": {k: v for k, v in self.rest.stay.constraints.model_dump().items()
                                     if k in ("budget_usd", "deadline_hours", "max_forgetting_points", "min_quality")},
                "move": None if self.chosen is None or self.chosen.move is None else self.chosen.move.to_dict(),
                "moves": [m.to_dict() for m, _ in self.rest.moves], "replan": entry(self.chosen), "changes": self.changes(), "continuing": entry(self.continuing),
                "options": [o.summary() for o in self.options],
                "share_meeting_all_limits": dict(self.shares), "scenarios": self.scenarios, "seed": self.seed,
                "fitted": [p.to_dict() for p in self.fit.parameters]}


def _solve(inst: Instance, confidence, scenarios, seed, time_limit, solver, sensitivity) -> SolveResult:
    from planopt.uncertainty.solve import solve_instance
    overrides = {} if confidence is None else {"confidence": confidence}
    return solve_instance(inst, time_limit=time_limit, sensitivity=sensitivity, scenarios=scenarios, seed=seed,
                          solver=solver, **overrides)


def share_meeting(inst: Optional[Instance], option: Optional[Option], scenarios: int, seed: int) -> Optional[float]:
    """The share of ``inst``'s scenarios in which ``option`` meets every limit (stopping: 1, it is measured)."""
    if option is None:
        return None
    if option.plan is None:
        return 1.0
    return float(plan_risk(inst, option.plan, scenarios, seed).share())


def replan(inst: Instance, plan: Plan, state: RunState, confidence: Optional[float] = None,
           scenarios: int = DEFAULT_REPLAN_SCENARIOS, seed: int = DEFAULT_SEED, time_limit: Optional[float] = None,
           solver: str = "highs", sensitivity: bool = False, fitted: Optional[fitting.FitResult] = None) -> ReplanResult:
    """The best rest of the run ``state`` of ``plan`` on ``inst`` (its student's instance; module docstring)."""
    from planopt.runs.track import check_gpu_count
    from planopt.uncertainty.chance import check_confidence
    check_scenarios(scenarios)
    check_seed(seed)
    if confidence is not None:
        confidence = check_confidence(confidence)
    check_gpu_count(plan, state, "replan")
    result = fitted or fit_run(inst, plan, state)
    so_far, measured = forgetting_so_far(result.fitted, plan, state)
    rest = rest_instance(result.fitted, plan, state, so_far, measured)
    objective = rest.stay.objective
    if confidence is not None and objective == "cvar":
        raise InputError("objective: cvar is not offered by replan yet; use cost, quality, time or forgetting")
    chance_scenarios = None if confidence is None else min(scenarios, fitting_chance_scenarios())
    def solved(choice, inst_, move=None):
        return solved_option(choice, _solve(inst_, confidence, chance_scenarios, seed, time_limit, solver, sensitivity),
                             objective, inst_, move)
    options = [o for o in (stop_option(rest, objective), solved("stay", rest.stay) if rest.plans_left else None,
                           *(solved("move", moved, move) for move, moved in rest.moves)) if o is not None]
    chosen = best_option(options, objective)
    continuing = None
    if rest.continuing is not None:
        m = Evaluator(rest.stay).evaluate(rest.continuing)
        continuing = Option("stay", rest.continuing, m.cost_usd, m.wall_hours, m.quality, m.forgetting_points, 0.0)
    elif stop_option(rest, objective) is not None:
        continuing = stop_option(rest, objective)
    shares = {"chosen": share_meeting(chosen.inst or rest.stay, chosen, scenarios, seed) if chosen else None,
              "continuing": share_meeting(rest.stay, continuing, scenarios, seed)}
    held = confidence if confidence is not None else rest.stay.constraints.confidence
    return ReplanResult(state, plan, rest, chosen, options, continuing, shares, held, objective, scenarios, seed, result)


def fitting_chance_scenarios() -> int:
    """The scenarios a chance-constrained solve is held to (``chance.DEFAULT_SCENARIOS``)."""
    from planopt.uncertainty.chance import DEFAULT_SCENARIOS
    return DEFAULT_SCENARIOS


def replan_given(inst, raw_plan: Any, plan_label: str, log, mapping: dict | None = None,
                 confidence: Optional[float] = None, scenarios: int | None = None, seed: int = 0,
                 time_limit: Optional[float] = None, solver: str = "highs") -> ReplanResult:
    """``planopt replan`` and ``POST /api/replan``: the plan read and checked on ``inst`` (a plan of another
    instance is refused naming the field), the run's state read from ``log`` through ``mapping``, and its rest."""
    from planopt.instance import evaluate_given_plan, instance_for_plan
    from planopt.runs.state import check_mapping, run_state
    plan, _ = evaluate_given_plan(inst, raw_plan, plan_label)
    shown = instance_for_plan(inst, plan)
    state = run_state(log, check_mapping(mapping or {}, "mapping"), shown, plan, Evaluator(shown))
    return replan(shown, plan, state, confidence, DEFAULT_REPLAN_SCENARIOS if scenarios is None else scenarios, seed,
                  time_limit, solver)
