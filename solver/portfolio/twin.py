r"""A portfolio with layered jobs under a time limit: its *plain twin* gives the MIP a schedule and a bound.

The Lagrangian bound, column generation and schedule search price a job as one gang of one (recipe, hardware,
interval), so they cannot plan a job of several gangs (stages, a trained teacher, separate rollout GPUs) or a
retention choice, and such a portfolio goes to the MIP. Alone, on a large portfolio, the MIP ends far from the
optimum (BENCHMARKS.md §20: 50 generated jobs, one of them offered stages, a 70 % gap after 60 s, against 0.2 %
with every job plain). So before it, within ``LAYERED_TWIN_SHARE`` of the time left, its *plain twin* is solved
with the whole warm start, bound and search: the portfolio's plain jobs, and each layered job restricted to its
plans of one gang (``plain_restriction``: one stage, no trained teacher, colocated rollouts) where that leaves it
plain; a layered job without such a restriction is left out. Where that twin has no schedule (a restricted job none
of whose plans of one gang is scheduled in the window), the twin of the plain jobs alone runs in its place.

**The bound** (``twin_bound``) is the twin's bound over its plain jobs alone. A schedule here with its layered jobs
taken out is a schedule of the plain jobs (the same reservations; every capacity, the budget and each job's window
hold with less drawn from them), and what is taken out is money and lateness, each at least 0 (the GPU-hours the
layered jobs buy and their non-compute money, the evaluator's cost less its GPU money), so
:math:`\mathrm{objective} \ge \mathrm{objective}_{plain} \ge \mathrm{bound}_{plain}`. With no restricted job that is
the twin's own bound; with one, it is the Lagrangian ascent over the plain jobs' plans alone, from the twin's
multipliers, for ``LAGRANGE_SHARE`` of the time left (``lagrange.bound_of_jobs``): a restricted job's plans are only
some of the job's here, so the twin's own bound is no bound here.

**The schedule.** Each plain job's block is the same in the twin and here (built from the same job and the same
pools), so its plan (every integer variable of its block) is this model's values as the twin chose them. A
restricted job's plan is one of the job's plans here, written as this block's one-hot groups
(``formulation.plan_choices``; its later stages' slots all 0), and its gang's buckets and tiers are this job's
training gang of the same slot (its other gangs, a teacher's or a rollout's, hold nothing). With every job's
buckets and tiers held as the twin chose them, a small sub-MIP decides the rest (the reservations, the hours; and a
job left out of the twin), else with only the plans held (``complete_twin``). Its schedule is one of this model, so it becomes the fallback
(``gang_values``, ``search_objective``): the MIP returns it unless it finds better (a staged plan of a restricted job
among them).

Before the restriction (2026-12-07, §20), the twin held the plain jobs alone, and the sub-MIP had to find every
layered job's plan and buckets: on 50 generated jobs with 5 staged, in its 10 s it ended 6 % to 43 % above the
all-plain schedule, from run to run. A restricted twin tried then, whose plans were mapped by variable name only,
gave the sub-MIP no plan for the restricted jobs (their blocks here have other variables) and found nothing.
"""

from __future__ import annotations

import math

import pyomo.environ as pyo

from planopt.models.formulation import chosen_plan, plan_choices
from planopt.models.schema.instance import Instance
from planopt.models.schema.portfolio import PortfolioData

from planopt.job.budget import COMPLETE_SHARE, LAGRANGE_SECONDS, LAGRANGE_SHARE, LAYERED_TWIN_SHARE, MIN_SOLVE_SECONDS
from planopt.portfolio.phases import searching
from planopt.portfolio.lagrange import bound_of_jobs
from planopt.portfolio.pricing import Pricing
from planopt.portfolio.search import complete_plans


def plain_restriction(inst: Instance) -> Instance | None:
    """A layered job's instance cut to the plans that hold one gang, a plain job: its one-stage sequences (of a
    staged job), without OPD (with a teacher trained as a stage: its plans hold the teacher's gang first), its
    rollouts colocated (``hardware.rollout_gpus`` emptied: a plan chooses colocated or split, so colocated plans are
    the job's). None where nothing is cut, no sequence is left, or with a retention block (no plain job has one).
    Its space is a part of the job's, so a schedule of a twin that holds it is a schedule here (``twin_values``); its
    bound is none here (``bound_of_jobs`` leaves it out). What still is not plain (asynchronous RL whose staleness
    needs split rollouts, say) makes the twin's model not plain, and the twin of the plain jobs runs instead."""
    if inst.retention is not None:
        return None
    sequences = inst.training.sequences()
    kept = [q for q in sequences if len(q) == 1
            and not ("opd" in q and inst.teacher is not None and inst.teacher.training is not None)]
    rollout = bool(inst.hardware.rollout_gpus)
    if not kept or (len(kept) == len(sequences) and not rollout):
        return None
    training = {"stage_sequences": [list(q) for q in kept]}
    if rollout:   # colocated: no staleness (asynchronous RL and OPD overlap on separate GPUs only)
        training["staleness_steps_options"] = [0] if inst.training.staleness_steps_options is not None else None
    update = {"training": inst.training.model_copy(update=training)}
    if rollout:
        update["hardware"] = inst.hardware.model_copy(update={"rollout_gpus": []})
    return inst.model_copy(update=update)


class PlainTwin:
    """``start_from_plain_jobs`` and its steps (module docstring), on a ``PortfolioModel``."""

    def start_from_plain_jobs(self, run) -> None:
        """The plain twin solved, its bound kept, and its schedule completed here (module docstring): the twin of
        the plain jobs and the plain restrictions of the layered ones where some job has one, else of the plain
        jobs alone."""
        plain = [j for j, ok in enumerate(self.form.plain_jobs) if ok]
        restricted = {j: r for j, ok in enumerate(self.form.plain_jobs) if not ok
                      for r in [plain_restriction(self.data.instances[j])] if r is not None}
        left = run.budget.left()
        if not (plain or restricted) or left * LAYERED_TWIN_SHARE <= MIN_SOLVE_SECONDS:
            return
        with searching(run.result, run.budget, "plain twin"):
            members = sorted(plain + list(restricted))
            twin = self.solve_twin(run, members, left * LAYERED_TWIN_SHARE, restricted)
            if restricted and (twin is None or not twin[1].jobs):
                # a restriction not plain after all, or no schedule with them (a job none of whose plans of one gang
                # is scheduled in the window: instances/portfolio-layered.json's staged job): the plain jobs alone
                restricted, members = {}, plain
                twin = self.solve_twin(run, plain, run.budget.left() * LAYERED_TWIN_SHARE) if plain else None
            if twin is None:
                return
            model, res = twin
            bound = res.bound_usd if not restricted else bound_of_jobs(
                model, [k for k, j in enumerate(members) if j not in restricted],
                min(LAGRANGE_SECONDS, run.budget.share(LAGRANGE_SHARE)))
            if bound is not None and math.isfinite(bound):
                self.twin_bound = bound
            if not res.jobs:
                return
            plans, holds = self.twin_values(model, members, restricted)
            if plans is not None:   # else not the same blocks after all: no start rather than a wrong one
                self.complete_twin(run, plans, holds)
                self.twin_restricted = sorted(restricted) if self.search_objective is not None else []

    def solve_twin(self, run, members: list[int], seconds: float, restricted: dict | None = None):
        """(twin model, its result) of the portfolio of ``members`` (a member in ``restricted`` with that instance),
        solved for ``seconds`` less its build; None where its model is not built or not plain."""
        d, started = self.data, run.budget.left()
        instances = [(restricted or {}).get(j, d.instances[j]) for j in members]
        twin_data = PortfolioData(d.portfolio.model_copy(update={"jobs": [d.portfolio.jobs[j] for j in members]}), instances)
        try:
            twin = type(self)(twin_data, self.tight_linking, self.symmetry_breaking)
        except ValueError:   # a restriction the cost model refuses (a layer it left without meaning): no twin
            return None
        if twin.model is None or not twin.form.plain:
            return None
        res = twin.solve(time_limit=max(MIN_SOLVE_SECONDS, seconds - (started - run.budget.left())),
                         rel_gap=run.rel_gap, threads=run.threads, explain=False,
                         pricing=None if self.pricer_client is None else Pricing("dask", client=self.pricer_client))
        return twin, res

    def twin_values(self, twin, members: list[int], restricted: dict | None = None) -> tuple[list | None, list]:
        """The twin's integer values as this model's: (every integer variable of each plain job's block, each
        restricted job's plan as this block's one-hot groups (``formulation.plan_choices``), each job's holds, a
        restricted job's other gangs holding nothing), or (None, []) where a plain block's variable has no namesake
        here or a restricted job's plan is not in its space here."""
        m, plans, holds = self.model, [], []
        gang_of: dict[tuple, int] = {}   # (twin job, twin gang) -> this job's gang
        for k, j in enumerate(members):
            own, theirs = m.job[j], twin.model.job[k]
            if j in (restricted or {}):
                plan, _ = chosen_plan(theirs, twin.form.spaces[k])
                values = plan_choices(own, self.form.spaces[j], plan)
                if values is None:
                    return None, []
                plans += values
                mine = {(g.stage, g.role): a for a, g in enumerate(self.form.gangs[j])}
                gang_of.update({(k, a): mine.get((g.stage, g.role)) for a, g in enumerate(twin.form.gangs[k])})
                continue
            for v in theirs.component_data_objects(pyo.Var, descend_into=True):
                if v.is_integer() and v.value is not None:
                    plans.append((own.find_component(v.getname(fully_qualified=True, relative_to=theirs)),
                                  float(round(v.value))))
        if any(v is None for v, _ in plans):
            return None, []
        held = set()
        for key in twin.model.U:
            j = members[key[0]]
            a = gang_of.get((key[0], key[1]), key[1]) if j in (restricted or {}) else key[1]
            mine = (j, a) + tuple(key[2:])
            if a is not None and mine in m.U and twin.model.holds[key].value is not None:
                holds.append((m.holds[mine], float(round(twin.model.holds[key].value))))
                held.add(mine)
        holds += [(m.holds[key], 0.0) for key in m.U if key[0] in (restricted or {}) and key not in held]
        return plans, holds

    def complete_twin(self, run, plans: list, holds: list) -> None:
        """The schedule from the twin's plans: with the plain jobs' buckets and tiers held too (a small sub-MIP, for
        twice ``COMPLETE_SHARE`` of the time left), else with only their plans held (the plain jobs may move to
        make room); it becomes the fallback. The second is not tried from the first's schedule: handed it as a
        start, HiGHS returned worse schedules than the start in its few seconds (on the 50-job case, $913,224 and
        $1,053,238 from starts of $493,471 and $816,627), and each one loaded means the best must be loaded again."""
        budget, threads = run.budget, run.threads
        held = complete_plans(self, plans + holds, None, budget.sub_solve_seconds(2 * COMPLETE_SHARE), threads)
        if held is None:
            held = complete_plans(self, plans, None, budget.sub_solve_seconds(COMPLETE_SHARE), threads)
        self.keep_schedule(held)
        self.load_best(threads, budget)
