r"""A portfolio with layered jobs under a time limit: its *plain twin* gives the MIP a schedule and a bound.

The Lagrangian bound, column generation and schedule search price a job as one gang of one (recipe, hardware,
interval), so they cannot plan a job of several gangs (stages, a trained teacher, separate rollout GPUs) or a
retention choice, and such a portfolio goes to the MIP. Alone, on a large portfolio, the MIP ends far from the
optimum (BENCHMARKS.md §20: 50 generated jobs, one of them offered stages, a 70 % gap after 60 s, against 0.2 %
with every job plain). So before it, within ``LAYERED_TWIN_SHARE`` of the time left, its *plain twin*, the
portfolio's plain jobs alone, is solved with the whole warm start, bound and search. Its
bound is a bound here (``twin_bound``): a schedule here with its layered jobs taken out is a schedule of the twin
(the same reservations; every capacity, the budget and each job's window hold with less drawn from them), and what
is taken out is money and lateness, each at least 0 (the GPU-hours the layered jobs buy and their non-compute money,
the evaluator's cost less its GPU money), so
:math:`\mathrm{objective} \ge \mathrm{objective}_{twin} \ge \mathrm{bound}_{twin}`.

Each plain job's block is the same in a twin and here (built from the same job and the same pools), so its plan
(every integer variable of its block) and its buckets and tiers (``holds``) are this model's values as the
twin chose them (``twin_values``). A sub-MIP then decides the rest: with the plain jobs' plans and holds fixed
(the layered jobs' plans and schedules and the reservations are all it decides), else with only their plans fixed
(``complete_twin``). Its schedule is one of this model, so it becomes the
fallback (``gang_values``, ``search_objective``): the MIP returns it unless it finds better.

Tried and left out: a second twin in which each staged layered job keeps only its one-stage sequences (a plain job
then), to leave the layered jobs room where their one-stage plans run. On the 50-job portfolio with 5 staged jobs
it found $489,429 in its 12 s, but neither completion here found a schedule from it in its 5 s, and the schedule
returned was worse than from this twin alone ($1,028,573 against $784,393); its bound is no bound here either.
"""

from __future__ import annotations

import math

import pyomo.environ as pyo

from planopt.models.schema.portfolio import PortfolioData

from planopt.job.budget import COMPLETE_SHARE, LAYERED_TWIN_SHARE, MIN_SOLVE_SECONDS
from planopt.portfolio.phases import searching
from planopt.portfolio.pricing import Pricing
from planopt.portfolio.search import complete_plans


class PlainTwin:
    """``start_from_plain_jobs`` and its steps (module docstring), on a ``PortfolioModel``."""

    def start_from_plain_jobs(self, run) -> None:
        """The plain twin solved, its bound kept, and its schedule completed here (module docstring)."""
        plain = [j for j, ok in enumerate(self.form.plain_jobs) if ok]
        left = run.budget.left()
        if not plain or left * LAYERED_TWIN_SHARE <= MIN_SOLVE_SECONDS:
            return
        with searching(run.result, run.budget, "plain twin"):
            twin = self.solve_twin(run, plain, left * LAYERED_TWIN_SHARE)
            if twin is None:
                return
            model, res = twin
            if res.bound_usd is not None and math.isfinite(res.bound_usd):
                self.twin_bound = res.bound_usd
            if not res.jobs:
                return
            plans, holds = self.twin_values(model, plain)
            if plans is not None:   # else not the same blocks after all: no start rather than a wrong one
                self.complete_twin(run, plans, holds)

    def solve_twin(self, run, members: list[int], seconds: float):
        """(twin model, its result) of the portfolio of ``members``, solved for ``seconds`` less its build; None
        where its model is not built or not plain."""
        d, started = self.data, run.budget.left()
        twin_data = PortfolioData(d.portfolio.model_copy(update={"jobs": [d.portfolio.jobs[j] for j in members]}),
                                  [d.instances[j] for j in members])
        twin = type(self)(twin_data, self.tight_linking, self.symmetry_breaking)
        if twin.model is None or not twin.form.plain:
            return None
        res = twin.solve(time_limit=max(MIN_SOLVE_SECONDS, seconds - (started - run.budget.left())),
                         rel_gap=run.rel_gap, threads=run.threads, explain=False,
                         pricing=None if self.pricer_client is None else Pricing("dask", client=self.pricer_client))
        return twin, res

    def twin_values(self, twin, members: list[int]) -> tuple[list | None, list]:
        """The twin's integer values as this model's: (every integer variable of each of its jobs' blocks, each of
        its jobs' holds), or (None, []) where a block's variable has no namesake here."""
        m, plans, holds = self.model, [], []
        for k, j in enumerate(members):
            own, theirs = m.job[j], twin.model.job[k]
            for v in theirs.component_data_objects(pyo.Var, descend_into=True):
                if v.is_integer() and v.value is not None:
                    plans.append((own.find_component(v.getname(fully_qualified=True, relative_to=theirs)),
                                  float(round(v.value))))
        if any(v is None for v, _ in plans):
            return None, []
        for key in twin.model.U:
            j = members[key[0]]
            mine = (j,) + tuple(key[1:])
            if mine in m.U and twin.model.holds[key].value is not None:
                holds.append((m.holds[mine], float(round(twin.model.holds[key].value))))
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
