"""The replanning oracle: every remaining plan of a run enumerated (the rest on the run's hardware, the rest after
a move, and stopping now), scored by the evaluator, the best picked by the MIP's rule (``by_plan.lexicographic_best``:
the objective, then cost within the tie tolerances)."""

from __future__ import annotations

import random

from planopt.instance import parse_instance
from planopt.job.model import COST_TIE_RELATIVE, TIE_BREAK_RELATIVE, PlanModel
from planopt.models.cost.evaluator import Evaluator, exceeds
from planopt.oracles.by_plan import all_plans
from planopt.runs.readers import read_csv_text
from planopt.runs.state import run_state

from benchmarks import make_synthetic_run as gen
from tests.support.random_instances import random_instance_dict
from tests.support.staged_instances import staged_instance_dict

OBJECTIVE_METRIC = {"cost": "cost_usd", "time": "wall_hours", "quality": "quality", "forgetting": "forgetting_points"}


def enumerated_rest(rest, objective: str) -> dict | None:
    """The best remaining option by enumeration: ``{"choice", "value", "cost_usd", "plan"}`` (None: none meets the
    limits). Stopping is written out here from the limits, not taken from the code under test."""
    candidates = []
    lim = rest.stay.constraints
    quality_ok = lim.min_quality is None or not exceeds(rest.start_score, lim.min_quality, ">=")
    forgetting_ok = lim.max_forgetting_points is None or lim.max_forgetting_points >= 0
    if quality_ok and forgetting_ok:
        stop = {"cost_usd": 0.0, "wall_hours": 0.0, "quality": rest.start_score, "forgetting_points": 0.0}
        candidates.append(("stop", stop[OBJECTIVE_METRIC[objective]], 0.0, None))
    for choice, inst in (("stay", rest.stay), *(("move", priced_move(rest, moved, (move.gpu, move.count)))
                                                 for move, moved in rest.moves)):
        if inst is None or (choice == "stay" and not rest.plans_left):   # nothing left to run: stopping alone
            continue
        for sp in all_plans(inst):
            if sp.feasible:
                m = sp.metrics
                candidates.append((choice, getattr(m, OBJECTIVE_METRIC[objective]), m.cost_usd, sp.plan))
    if not candidates:
        return None
    sign = -1.0 if objective == "quality" else 1.0
    best = min(sign * c[1] for c in candidates)
    ties = [c for c in candidates if sign * c[1] <= best + TIE_BREAK_RELATIVE * max(1.0, abs(best))]
    cheapest = min(c[2] for c in ties)
    c = next(c for c in ties if c[2] <= cheapest + COST_TIE_RELATIVE * max(1.0, abs(cheapest)))
    return {"choice": c[0], "value": c[1], "cost_usd": c[2], "plan": c[3]}


def best_on(inst, objective: str) -> tuple[float, float] | None:
    """The best feasible plan of ``inst`` by enumeration: (its objective's value, its cost), or None."""
    found = [(getattr(sp.metrics, OBJECTIVE_METRIC[objective]), sp.metrics.cost_usd) for sp in all_plans(inst) if sp.feasible]
    if not found:
        return None
    sign = -1.0 if objective == "quality" else 1.0
    best = min(sign * v for v, _ in found)
    ties = [f for f in found if sign * f[0] <= best + TIE_BREAK_RELATIVE * max(1.0, abs(best))]
    return min(ties, key=lambda f: f[1])


def priced_move(rest, moved, target=None):
    """The rest on a move's target hardware with the move priced here, from the evaluator's figures (not the code
    under test's): the run's checkpoint written on the run's hardware, read and restarted on the target's, each at
    its hardware's GPUs' price plus the operations' USD per wall hour; None when no deadline is left for it.
    ``target`` (GPU, count): a staged rest's (its later stages keep every GPU); else the moved rest's one GPU."""
    from planopt.models.schema.plan import HardwareChoice
    here_hw = rest.run_hardware
    if target is None:
        g = moved.hardware.gpus[0]
        target = (g.name, g.counts[0])
    here = Evaluator(rest.stay).hardware(here_hw)
    there = Evaluator(moved).hardware(HardwareChoice(target[0], target[1], lora_rank=here_hw.lora_rank))
    wall = rest.stay.operations.usd_per_wall_hour
    write, read_restart = here.checkpoint_write_hours, there.checkpoint_write_hours + rest.stay.reliability.restart_minutes / 60
    usd = (here.usd_per_hour_of_gpus + wall) * write + (there.usd_per_hour_of_gpus + wall) * read_restart
    lim = rest.stay.constraints
    update = {"operations": moved.operations.model_copy(update={"fixed_usd": usd})}
    if lim.deadline_hours is not None:
        if lim.deadline_hours <= write + read_restart:
            return None
        update["constraints"] = moved.constraints.model_copy(update={"deadline_hours": lim.deadline_hours - write - read_restart})
    return moved.model_copy(update=update)


def random_run(seed: int):
    """A random small job (``random_instances``), its optimal plan, and a synthetic run of it made by the shipped
    run's generator at its slow truth, stopped at a random 20-60 % of the plan; None when the job has no plan. On
    even seeds the quality floor is moved above the score reached, to the median quality the rest's plans on the
    run's hardware reach past it, so that stopping is not enough and the MIP must choose."""
    rng = random.Random(seed)
    raw = random_instance_dict(seed)
    inst = parse_instance(raw)
    first = PlanModel(inst).solve()
    if first.plan is None:
        return None
    plan = first.plan
    text = gen.synthetic_history(inst, plan, gen.SLOW, share=rng.uniform(0.2, 0.6), seed=seed).to_csv(index=False)
    state = run_state(read_csv_text(text, f"random-{seed}.csv"), gen.MAPPING, inst, plan, Evaluator(inst))
    if seed % 2 == 0:
        from planopt.runs import replan as rp
        fit = rp.fit_run(inst, plan, state)
        rest = rp.rest_instance(fit.fitted, plan, state, *rp.forgetting_so_far(fit.fitted, plan, state))
        higher = sorted(q for q in (sp.metrics.quality for sp in all_plans(rest.stay)) if q > rest.start_score + 1e-6)
        if higher:
            raw["constraints"]["min_quality"] = higher[len(higher) // 2] * (1 - 1e-6)
            inst = parse_instance(raw)
    return inst, plan, state


def random_staged_run(seed: int, last_stage: bool = False):
    """A random staged job (``staged_instances``), its optimal plan when that has two stages or more, and a synthetic
    run of it at the generator's slow truth stopped at a random step (of its last stage with ``last_stage``); None
    otherwise."""
    from planopt.runs import stages
    rng = random.Random(seed)
    inst = parse_instance(staged_instance_dict(seed))
    first = PlanModel(inst).solve()
    if first.plan is None or len(first.plan.stages) < 2:
        return None
    plan = first.plan
    start, total = stages.stage_start(plan, len(plan.stages) - 1) if last_stage else 0, stages.total_steps(plan)
    share = rng.uniform((start + 1) / total, 1.0 - 1.0 / total)
    text = gen.synthetic_history(inst, plan, gen.SLOW, share=share, seed=seed).to_csv(index=False)
    state = run_state(read_csv_text(text, f"staged-{seed}.csv"), gen.MAPPING, inst, plan, Evaluator(inst))
    return inst, plan, state
