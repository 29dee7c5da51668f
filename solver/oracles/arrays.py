r"""The vectorised enumeration oracle: every plan's metrics as numpy arrays.

Same plans, same formulas, same rules as the plan-by-plan oracle
(``oracle.py``), computed a block of recipes at a time over the evaluator's
own profiles (``Evaluator.recipe_arrays``, ``Evaluator.hardware_arrays``). For
recipe :math:`r`, hardware :math:`h` and interval :math:`\tau`, as ``costs.py``:

.. math::
   T_{r,h} &= \sum_c \mathrm{amount}_{r,c}\, u_c(h) / 3600, \qquad
   H_{train} = T_{r,h} (1 + o_h(\tau)), \qquad \mathrm{wall} = \mathrm{lead}_r + H_{train}

and the cost is ``costs.cost_breakdown_usd`` itself, called on arrays
(``[recipe, hardware, interval]`` by broadcasting). A plan is feasible when its
recipe's memory class fits on the hardware and no limit is broken by
``costs.exceeds`` (the evaluator's tolerance rule, applied element-wise). The
best plan is the lexicographic rule of ``oracle.lexicographic_best``: the best
first objective, then the cheapest among plans within ``run.TIE_BREAK_RELATIVE``
of it (costs equal up to ``COST_TIE_RELATIVE``), then the first in the order of ``itertools.product(recipes, hardware,
intervals)`` (with a ``retention`` block, ``(recipes, hardware, intervals, retention
options)``: the arrays gain a last axis, ``retention.py``'s options).

Memory: ``plan_arrays`` holds every plan at once and refuses (``InputError``,
one line naming the options that multiply the space) above
:data:`MAX_ARRAY_BYTES`; ``best_plan_arrays`` streams blocks of about
:data:`BLOCK_PLANS` plans, so its arrays stay near :data:`BLOCK_PLANS` × 8
bytes × a dozen temporaries (about 50 MiB) whatever the space, and refuses
spaces over :data:`MAX_PLANS` (minutes of work) or recipe profiles over
:data:`MAX_ARRAY_BYTES` (:data:`RECIPE_BYTES` per recipe).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np

from planopt.models.cost.asynchronous import combined_hours
from planopt.models.cost.evaluator import (LIMIT_METRIC, Evaluator, HardwareArrays, RecipeArrays, cost_breakdown_usd, exceeds,
                                          limit_slack)
from planopt.models.schema.plan import Plan
from planopt.models.cost.retention import RetentionChoice, covers, deep_rollback_share, storage_usd_per_train_hour
from planopt.models.schema.instance import Instance

from planopt.errors import InputError
from planopt.job.model import COST_TIE_RELATIVE, TIE_BREAK_RELATIVE, SolveResult

MAX_ARRAY_BYTES = 512 * 2**20          # one call's arrays: plan_arrays' whole space, or the recipe table
ARRAYS_PER_PLAN = 6                    # plan_arrays keeps cost, wall, train hours, quality/forgetting views, feasible
RECIPE_BYTES = 2048                    # a recipe's profile (Python objects) and its row of the table, about
BLOCK_PLANS = 2**19                    # plans per block in best_plan_arrays
MAX_PLANS = 2_000_000_000              # best_plan_arrays: beyond this, minutes of work
# Candidates for the tie set are kept per block within this relative window of the
# block's best (wider than TIE_BREAK_RELATIVE, so no plan of the global tie set is lost).
CANDIDATE_WINDOW = 1e-6


@dataclass
class Profiles:
    """The evaluator's profiles of a whole space, as arrays."""

    recipes: RecipeArrays
    hardware: HardwareArrays
    intervals: list[float]
    retention: list[RetentionChoice] = field(default_factory=list)  # [] without a ``retention`` block
    checkpoint_gb: np.ndarray | None = None                          # [hardware] one checkpoint of the choice

    @property
    def shape(self) -> tuple[int, int, int]:
        """(recipes, hardware choices, intervals)."""
        return len(self.recipes.recipes), len(self.hardware.hardware), len(self.intervals)

    @property
    def size(self) -> int:
        """The number of plans of the space: recipes × hardware × intervals × retention options."""
        r, h, i = self.shape
        return r * h * i * max(1, len(self.retention))


def space_description(inst: Instance, n_r: int, n_h: int, n_i: int) -> str:
    """The options that multiply into the space, for refusals."""
    t = inst.training
    steps = {m: len(set(o.steps_options)) for m, o in t.methods.items()}
    parts = [f"{n_r:,} recipes (training.methods.*.steps_options {steps}"]
    if any(m != "sft" for m in t.methods):
        parts[0] += f", samples_per_prompt_options {len(set(t.samples_per_prompt_options))} over {t.phases} phases"
    if "opd" in t.methods:
        parts[0] += f", teacher.precision_options {len(set(inst.teacher.precision_options))}" + (
            f" in each of {t.phases} phases (teacher.precision_by_phase)" if inst.teacher.precision_by_phase else "")
    if "sft" in t.methods:
        parts[0] += (f", sft_data.external_data_share_options {len(set(inst.sft_data.external_data_share_options))}"
                     f", sft_data.max_epochs_options {len(set(inst.sft_data.max_epochs_options))}")
    parts[0] += ")"
    parts.append(f"{n_h:,} hardware options (hardware.gpus[].counts)")
    parts.append(f"{n_i:,} checkpointing.interval_minutes_options")
    return " × ".join(parts) + f" = {n_r * n_h * n_i:,} plans"


def _mib(n_bytes: float) -> str:
    return f"{n_bytes / 2**20:,.0f} MiB"


def profiles(ev: Evaluator, max_bytes: int = MAX_ARRAY_BYTES) -> Profiles:
    """Recipe and hardware profiles of the whole space (refused when the recipe table alone is over ``max_bytes``)."""
    recipes, hardware, intervals = ev.space()
    need = len(recipes) * RECIPE_BYTES
    if need > max_bytes:
        raise InputError(f"enumerate: {space_description(ev.inst, len(recipes), len(hardware), len(intervals))}; "
                         f"its recipe profiles need about {_mib(need)}, over the cap of {_mib(max_bytes)}")
    ra = ev.recipe_arrays(recipes, cache=False)  # the best plan's profile is made again; the rest are let go
    ha = ev.hardware_arrays(hardware, ra.components, ra.classes, intervals)
    gb = np.array([ev.hardware(hw).checkpoint_gb for hw in hardware], dtype=float)
    return Profiles(ra, ha, list(intervals), ev.retention_options(), gb)


def _retention_axis(inst: Instance, p: Profiles) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""[hardware, interval, option] the options' checkpoint money per training hour (``retention.py``'s
    :math:`s_h(\tau,\rho)`) and their milestone re-work share :math:`\delta_h(\tau,\rho)`, and [interval,
    option] whether the option covers the detection delay."""
    ha, tau = p.hardware, np.array(p.intervals, dtype=float)
    per_hour = np.stack([storage_usd_per_train_hour(inst, k, p.checkpoint_gb[:, None], ha.count[:, None], tau[None, :])
                         for k in p.retention], axis=-1)
    deep = np.stack([np.broadcast_to(deep_rollback_share(inst, k, ha.count[:, None], tau[None, :]), per_hour.shape[:2])
                     for k in p.retention], axis=-1)
    ok = np.array([[covers(inst, k.keep_last, i, k.milestones) for k in p.retention] for i in p.intervals], dtype=bool)
    return per_hour, deep, ok


def _block(inst: Instance, p: Profiles, rows: slice) -> dict[str, np.ndarray]:
    """Metrics of recipes ``rows`` on every hardware and interval: arrays [recipe, hardware, interval]
    ([recipe, hardware, interval, retention option] with a ``retention`` block)."""
    ra, ha = p.recipes, p.hardware
    fits = ha.fits[ra.recipe_class[rows]]                                        # [r, h]
    compute = combined_hours(ra.amounts[rows], ha.seconds_per_unit, ra.components) / 3600.0   # [r, h] (asynchronous.py)
    compute = np.where(fits, compute, 0.0)
    train = compute[:, :, None] * (1.0 + ha.overhead[None, :, :])                # [r, h, i]
    lead = ra.lead_hours[rows, None, None]
    wall = lead + train
    forgetting = ra.forgetting_points[rows, None, None]
    rp = SimpleNamespace(data_usd=ra.data_usd[rows, None, None], environments_usd=ra.environments_usd[rows, None, None],
                         log_storage_usd=ra.log_storage_usd[rows, None, None], checkpoint_gb=ra.checkpoint_gb[rows, None, None],
                         network_usd=ra.network_usd[rows, None, None], log_ingest_usd=ra.log_ingest_usd[rows, None, None],
                         fixed_data_usd=ra.fixed_data_usd[rows, None, None],
                         fixed_network_usd=ra.fixed_network_usd[rows, None, None], labels_usd=ra.labels_usd[rows, None, None])
    gpus_usd = (ha.count * ha.price_usd_per_gpu_hour)[None, :, None]
    pools_usd = ha.environments_usd_per_hour[None, :, None]   # the pool of environment workers (environments.py)
    quality = ra.quality[rows, None, None]
    fit = fits[:, :, None]
    per_hour = None
    if p.retention:  # one more axis: the retention option, whose milestone re-work stretches the hours
        per_hour, deep, cover = _retention_axis(inst, p)
        rp = SimpleNamespace(**{k: v[..., None] for k, v in vars(rp).items()})
        train = compute[:, :, None, None] * (1.0 + (ha.overhead[None, :, :, None] + deep[None]))  # [r, h, i, k]
        wall = lead[..., None] + train
        forgetting, quality = forgetting[..., None], quality[..., None]
        gpus_usd, fit = gpus_usd[..., None], fit[..., None] & cover[None, None]
        pools_usd = pools_usd[..., None]
        per_hour = per_hour[None]
    lines = cost_breakdown_usd(inst, rp, gpus_usd, train, wall, forgetting, 0.0, per_hour,
                               environments_usd_per_hour=pools_usd if pools_usd.any() else 0.0)
    cost = sum(lines.values())
    shape = np.broadcast_shapes(train.shape, fit.shape)
    out = {"cost_usd": np.broadcast_to(cost, shape), "wall_hours": np.broadcast_to(wall, shape),
           "train_hours": np.broadcast_to(train, shape), "quality": np.broadcast_to(quality, shape),
           "forgetting_points": np.broadcast_to(forgetting, shape)}
    feasible = np.broadcast_to(fit, shape).copy()
    edge = np.zeros(shape, dtype=bool)
    for name, limit in inst.constraints.model_dump().items():
        if name in LIMIT_METRIC and limit is not None:
            metric, sense = LIMIT_METRIC[name]
            feasible &= ~exceeds(out[metric], limit, sense)
            edge |= np.abs(out[metric] - _threshold(limit, sense)) <= EDGE_RELATIVE * max(1.0, abs(limit))
    out["feasible"] = _judged_on_the_edge(inst, p, rows, feasible, edge & np.broadcast_to(fit, shape))
    return out


# A plan whose metric lies this close (relative) to a limit's threshold (``costs.exceeds``) is judged by the
# evaluator itself, not by the arrays: numpy sums the same terms in another order (about 1e-15 relative apart),
# so only the evaluator's own value may decide a plan that sits on a limit (issue 28 item 10: one rule, in one place).
EDGE_RELATIVE = 1e-12


def _threshold(limit: float, sense: str) -> float:
    """The value past which ``costs.exceeds`` says a limit is broken."""
    return limit + limit_slack(limit) if sense == "<=" else limit - limit_slack(limit)


def _judged_on_the_edge(inst: Instance, p: Profiles, rows: slice, feasible: np.ndarray, edge: np.ndarray) -> np.ndarray:
    """``feasible`` with each plan on a limit's edge re-judged by the evaluator (its violations)."""
    if not edge.any():
        return feasible
    ev = Evaluator(inst)
    retention = p.retention or [None]
    for index in zip(*np.nonzero(edge)):
        r, h, i = int(index[0]) + rows.start, int(index[1]), int(index[2])
        k = retention[int(index[3])] if len(index) > 3 else None
        metrics = ev.metrics(p.recipes.recipes[r], p.hardware.hardware[h], p.intervals[i], k)
        feasible[index] = not metrics.violations
    return feasible


def objective_values(metrics: dict[str, np.ndarray], objective: str) -> np.ndarray:
    """What each objective minimises (``Metrics.objective``: quality negated)."""
    return {"cost": metrics["cost_usd"], "time": metrics["wall_hours"], "quality": -metrics["quality"],
            "forgetting": metrics["forgetting_points"]}[objective]


def plan_arrays(inst: Instance, max_bytes: int = MAX_ARRAY_BYTES) -> tuple[Profiles, dict[str, np.ndarray]]:
    """Every plan's metrics and feasibility, arrays [recipe, hardware, interval]; refused over ``max_bytes``."""
    ev = Evaluator(inst)
    recipes, hardware, intervals = ev.space()
    need = len(recipes) * len(hardware) * len(intervals) * max(1, len(ev.retention_options())) * 8 * ARRAYS_PER_PLAN
    if need > max_bytes:
        raise InputError(f"plan_arrays: {space_description(inst, len(recipes), len(hardware), len(intervals))} "
                         f"need {_mib(need)} of arrays, over the cap of {_mib(max_bytes)}; best_plan_arrays streams them")
    p = profiles(ev, max_bytes)
    return p, _block(inst, p, slice(0, len(recipes)))


def best_plan_arrays(inst: Instance, max_plans: int = MAX_PLANS, max_bytes: int = MAX_ARRAY_BYTES,
                     block_plans: int = BLOCK_PLANS) -> SolveResult:
    """The oracle's best plan (``by_plan.best_plan``) of a one-stage space, enumerated block by block with numpy;
    with ``candidate_students`` each student's space so (up to the limit per student), the students' bests
    compared by the lexicographic rule (a student's best is the cheapest of its own ties; the rule's slack is
    1e-7 relative, so two students' bests closer than that are told apart by cost, as plan by plan). A staged
    space is refused in one line: its plans are chains, not a product of arrays."""
    if inst.training.staged:
        raise InputError("enumerate: the vectorised oracle enumerates one-stage plans; a staged instance is "
                         "enumerated plan by plan (--by-plan)")
    if inst.candidate_students:
        from planopt.oracles.by_plan import ScoredPlan, best_of
        start = time.perf_counter()
        bests = []
        for name in inst.student_names():
            res = best_plan_arrays(inst.for_student(name), max_plans, max_bytes, block_plans)
            if res.status == "optimal":
                bests.append(ScoredPlan(res.plan.with_student(name), res.metrics))
            elif res.status != "infeasible":
                return res
        return best_of(inst, bests, start)
    start = time.perf_counter()
    ev = Evaluator(inst)
    recipes, hardware, intervals = ev.space()
    n_k = max(1, len(ev.retention_options()))
    size = len(recipes) * len(hardware) * len(intervals) * n_k
    if size > max_plans:
        raise InputError(f"enumerate: {space_description(inst, len(recipes), len(hardware), len(intervals))}, "
                         f"over the vectorised oracle's limit of {max_plans:,}; use `planopt solve`")
    objective = inst.objective
    if size == 0:
        return SolveResult("infeasible", objective, solve_seconds=time.perf_counter() - start,
                           message="no enumerated plan satisfies every limit")
    p = profiles(ev, max_bytes)
    n_r, n_h, n_i = p.shape
    per_recipe = n_h * n_i * n_k
    step = max(1, block_plans // per_recipe)
    cand_flat, cand_obj, cand_cost = [], [], []
    for r0 in range(0, n_r, step):
        rows = slice(r0, min(n_r, r0 + step))
        mt = _block(inst, p, rows)
        ok = mt["feasible"]
        if not ok.any():
            continue
        obj = objective_values(mt, objective)
        best = obj[ok].min()
        window = best + CANDIDATE_WINDOW * max(1.0, abs(best))
        sel = np.flatnonzero(ok & (obj <= window))
        cand_flat.append(sel + r0 * per_recipe)
        cand_obj.append(obj.reshape(-1)[sel])
        cand_cost.append(np.asarray(mt["cost_usd"]).reshape(-1)[sel])
    seconds = time.perf_counter() - start
    if not cand_flat:
        return SolveResult("infeasible", objective, solve_seconds=seconds, message="no enumerated plan satisfies every limit")
    flat, obj, cost = (np.concatenate(a) for a in (cand_flat, cand_obj, cand_cost))
    best = obj.min()
    tie = obj <= best + TIE_BREAK_RELATIVE * max(1.0, abs(best))
    flat, obj, cost = flat[tie], obj[tie], cost[tie]
    cheapest = cost.min()
    pick = flat[cost <= cheapest + COST_TIE_RELATIVE * max(1.0, abs(cheapest))].min()   # then the enumeration order
    r, rest = divmod(int(pick), per_recipe)
    h, rest = divmod(rest, n_i * n_k)
    i, k = divmod(rest, n_k)
    recipe, hw, interval, keep = recipes[r], hardware[h], intervals[i], (p.retention or [None])[k]
    seconds = time.perf_counter() - start
    return SolveResult("optimal", objective, plan=Plan.of(recipe, hw, interval, keep, student=ev.inst.student.preset),
                       metrics=ev.metrics(recipe, hw, interval, keep),
                       gap=0.0, solve_seconds=seconds, student=ev.inst.student.preset)
