"""Why a portfolio has no schedule: the budget, a job that cannot finish even alone, or the shared GPUs.

:class:`Explanation` is the part of ``PortfolioModel`` that writes the message of an infeasible
solve (``explain_infeasible``), within what is left of the solve's :class:`TimeBudget`: the
least cost without the budget (a re-solve), or each job solved alone with its deadline and
later ones, for at most ``EXPLAIN_SECONDS`` each.
"""

from __future__ import annotations

import math

from planopt.models.schema.portfolio import Portfolio, PortfolioData

from planopt.job.budget import EXPLAIN_SECONDS, MIN_SOLVE_SECONDS, TimeBudget

EXPLAIN_JOBS = 5           # jobs for which an infeasible portfolio's explanation searches a deadline that would do


class Explanation:
    """The message of an infeasible portfolio solve, on a ``PortfolioModel``."""

    def explain_infeasible(self, budget: TimeBudget | None = None, least_usd: float | None = None) -> str:
        """Why there is no schedule: the budget (the least cost without it, re-solved with the warm
        start and search; ``least_usd``: a bound over the budget that already proves it), or the
        jobs that cannot meet their deadline even alone (each solved as a one-job portfolio), or
        the shared GPUs. Every re-solve stops at the deadline of ``budget`` (none: no limit)."""
        d = self.data
        left = (TimeBudget() if budget is None else budget).left

        out_of_time = "no schedule (the time limit left no time to find out why)"
        budget = d.portfolio.budget_usd
        if budget is not None:
            over = (f"no schedule within budget_usd ${budget:,.0f}" if least_usd is None else
                    f"no schedule within budget_usd ${budget:,.0f}: every schedule costs at least ${math.ceil(least_usd):,.0f} "
                    f"(the Lagrangian bound over the shared GPUs)")
            if left() is not None and left() < MIN_SOLVE_SECONDS:
                return over if least_usd is not None else out_of_time
            free = type(self)(PortfolioData(d.portfolio.model_copy(update={"budget_usd": None}), d.instances))
            res = free.solve(time_limit=left(), explain=False)
            sep = ": " if least_usd is None else "; "
            if res.cost_usd is not None and res.status == "optimal":
                return (f"{over}{sep}the least-cost schedule costs ${res.cost_usd:,.0f}; "
                        f"a budget of ${math.ceil(res.cost_usd):,.0f} would let every job meet its deadline")
            if res.cost_usd is not None:
                within = "" if res.gap is None else f"within {100 * res.gap:.2f} % of the least, "
                return (f"{over}{sep}the cheapest schedule found costs ${res.cost_usd:,.0f} "
                        f"({within}not proven least within the time limit); a budget of ${math.ceil(res.cost_usd):,.0f} would let "
                        f"every job meet its deadline")
            if least_usd is not None:
                return f"{over}; no schedule without the budget was found in the time left"
        def fits_alone(j: int, deadline: int) -> bool | None:
            """Job j alone with this deadline bucket has a schedule (None: out of time)."""
            if left() is not None and left() < MIN_SOLVE_SECONDS:
                return None
            job = d.portfolio.jobs[j].model_copy(update={"deadline_bucket": deadline})
            one = Portfolio.model_validate({**d.portfolio.model_dump(), "jobs": [job.model_dump()], "budget_usd": None})
            sub = type(self)(PortfolioData(one, [d.instances[j]]), symmetry_breaking=False)
            limit = EXPLAIN_SECONDS if left() is None else min(EXPLAIN_SECONDS, left())
            return sub.model is not None and sub.solve(time_limit=limit, warm_start=False, explain=False,
                                                       cost_floors=False).status != "infeasible"

        alone = []
        for j, job in enumerate(d.portfolio.jobs):
            ok = fits_alone(j, job.deadline_bucket)
            if ok is None:
                return out_of_time
            if not ok:
                alone.append(j)
        if alone:
            # for the first few, the earliest deadline bucket within the horizon that would do
            notes = []
            for j in alone[:EXPLAIN_JOBS]:
                later = next((b for b in range(d.portfolio.jobs[j].deadline_bucket + 1, len(d.buckets)) if fits_alone(j, b)), None)
                notes.append(f"{d.names[j]} (deadline_bucket {d.portfolio.jobs[j].deadline_bucket}: "
                             + (f"{later} would do)" if later is not None else
                                "no later bucket of the horizon would do: its quality target or GPU types)"))
            return (f"no schedule: {len(alone)} job(s) cannot finish by their deadline bucket even alone: "
                    f"{'; '.join(notes)}{' ...' if len(alone) > EXPLAIN_JOBS else ''}")
        return "no schedule: each job fits alone, but together they exceed the GPUs available; more on-demand, spot or reservable GPUs, or later deadlines, would let them"
