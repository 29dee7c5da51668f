r"""The risk of a portfolio schedule under capacity scenarios (``--scenarios N --seed S``).

The schedule is what ``planopt solve portfolio.json --json`` prints (jobs' plans
and ``schedule`` rows, the reserved ``procurement``), as for
``portfolio_replay``; the scenarios are ``models/uncertainty/capacity.py``'s
(spot preemptions, on-demand shortfall). Each scenario replays the schedule
bucket by bucket with one fixed recourse rule:

1. **Reserved rows** run as scheduled (a reservation is a contract).
2. **On-demand rows**: the jobs holding on-demand GPUs of a type in the bucket
   take the obtainable GPUs in job order, each its whole GPU count or nothing
   (gang); a job left out runs none of that row, and its GPU-hours
   ``gpus x hours`` go to its *backlog*, unpaid.
3. **Spot rows**: a gang of :math:`n` spot GPUs scheduled for :math:`h` hours
   runs :math:`\min(h, T)` hours, :math:`T` its first preemption; the
   provider takes the GPUs back for the rest of the bucket, so
   :math:`n (h - T)^+` GPU-hours go to the backlog. Spot is paid for the hours
   run. (The plan's spot overhead :math:`o^s` keeps charging each preemption's
   rework, as in the deterministic model; the backlog is re-run as it is,
   without re-scaling that overhead: conservative by at most
   :math:`(o^s - o)/(1 + o^s)` of it.)
4. **Recovery**: then, jobs in order of deadline bucket (ties: job order),
   within their window and up to their deadline, run backlog in the hours of
   the bucket they have left, :math:`H` minus the hours of their rows that
   ran: first on reserved GPUs of their plan's type -- those they already hold
   in the bucket, else a whole gang of reserved GPUs no job holds there (paid
   anyway: no extra cost) -- then the same way on on-demand GPUs still
   obtainable, at the bucket's on-demand price. A job holding GPUs of a pool in
   a bucket holds them for the whole bucket, as in the MIP (``capacity``).
5. A job **misses** its deadline when backlog is left after its deadline
   bucket (more than ``LATE_TOLERANCE`` of its scheduled GPU-hours).

A job of several gangs (stages, a teacher's plan, separate rollout GPUs: ``models/cost/gangs.py``) is
replayed gang by gang, each as above on its own pool with the job's window: a stage's training and
rollout GPUs on spot are preempted together (one gang of rate :math:`n p_g + n_r p_{g_r}`), and each
gang's lost work runs later in the window on its own pool (a later stage is not held back by an
earlier one's recovery). The job's late GPU-hours are its gangs'.

A scenario's cost is the reserved commitments and the jobs' non-compute cost
(as scheduled) plus the on-demand and spot GPU-hours run, recovery included.
A missed job's work left over is not priced (the plan has no bucket for it);
it is reported as late GPU-hours. With no preemption and no shortfall every
job meets its deadline and the cost is the schedule's ``cost_usd``.

The replay is vectorised over scenarios (numpy arrays of length S);
``tests/support/portfolio_oracle.py`` replays scenario by scenario in plain Python.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from planopt.models.schema.portfolio import PortfolioData
from planopt.models.uncertainty.capacity import CapacityFieldError, CapacityScenarios, draw_capacity, first_preemption_hours, max_scenarios

from planopt.errors import InputError
from planopt.portfolio.replay import gang_key, reserved_capacity

PERCENTILES = (10, 50, 90)
LATE_TOLERANCE = 1e-6   # relative to the job's scheduled GPU-hours: solver tolerance, not lateness
RECOURSE = ("preempted spot and unobtainable on-demand work runs later in the job's window: on spare reserved GPUs, "
            "then obtainable on-demand GPUs at their price; left after the deadline bucket: the job misses")


@dataclass
class ScheduleRisk:
    """A schedule replayed over capacity scenarios: cost, recourse money, late GPU-hours and deadlines met per scenario."""

    names: list[str]
    seed: int
    cost_usd: np.ndarray          # (S,)
    recourse_usd: np.ndarray      # (S,) on-demand bought for recovery
    late_gpu_hours: np.ndarray    # (S, J) backlog left after the deadline bucket
    meets: np.ndarray             # (S, J) bool

    @property
    def scenarios(self) -> int:
        """Number of scenarios replayed."""
        return len(self.cost_usd)

    def share_meeting_all(self) -> float:
        """Share of scenarios in which every job meets its deadline."""
        return float(self.meets.all(axis=1).mean())

    def to_dict(self) -> dict[str, Any]:
        """The ``risk`` block of a portfolio result: finite numbers only."""
        return {"scenarios": self.scenarios, "seed": self.seed, "recourse": RECOURSE,
                "share_meeting_all_deadlines": self.share_meeting_all(),
                "jobs": [{"name": n, "share_meeting_deadline": float(self.meets[:, j].mean()),
                          "expected_late_gpu_hours": float(self.late_gpu_hours[:, j].mean())} for j, n in enumerate(self.names)],
                "percentiles": {"cost_usd": {f"p{q}": float(np.percentile(self.cost_usd, q)) for q in PERCENTILES}},
                "expected": {"cost_usd": float(self.cost_usd.mean()), "recourse_usd": float(self.recourse_usd.mean())}}


def check_risk_scenarios(pdata: PortfolioData, n: Any, flag: str = "--scenarios") -> int:
    """``n`` if it is a whole number of scenarios this portfolio can replay, else InputError naming ``flag``."""
    most = max_scenarios(pdata)
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= most:
        raise InputError(f"{flag}: expected a whole number of capacity scenarios from 1 to {most:,} for this portfolio "
                         f"(scenarios x (jobs + GPU types) x buckets at most 2e7), got {n!r}")
    return n


def draw(pdata: PortfolioData, n: int, seed: int) -> CapacityScenarios:
    """The capacity scenarios, with a missing field as an InputError naming it."""
    check_risk_scenarios(pdata, n)
    try:
        return draw_capacity(pdata, n, seed)
    except CapacityFieldError as exc:
        raise InputError(str(exc)) from None


@dataclass
class _Unit:
    """One gang of one job, as the replay sees it: its pool, count, rows and preemption rate per GPU on spot."""
    job: int
    pool: str
    count: int
    rows: dict                  # bucket -> tier -> hours
    rate: float                 # spot preemptions per hour of the whole gang (with a bundle's partner, on spot together)
    scheduled: float            # its scheduled GPU-hours


def _units(pdata: PortfolioData, jobs: list[dict[str, Any]]) -> list[_Unit]:
    """Every gang of every job (rows grouped by stage and role; a result before version 1.4: one gang a job)."""
    out = []
    for j, job in enumerate(jobs):
        by_gang: dict[tuple, list[dict]] = {}
        for row in job["schedule"]:
            by_gang.setdefault(gang_key(row), []).append(row)
        # a bundle (a stage's training and rollout GPUs) on spot: one gang, preempted at both sets' rate
        stage_rate: dict = {}
        for (stage, role), rows in by_gang.items():
            if role in ("training", "rollout", "teacher", "teacher_rollout"):
                lead = (stage, "training" if role in ("training", "rollout") else "teacher")
                stage_rate[lead] = stage_rate.get(lead, 0.0) + rows[0]["gpus"] * pdata.preempt[pdata.pool_of(rows[0])]
        for (stage, role), rows in by_gang.items():
            tiers: dict[int, dict[str, float]] = {}
            for row in rows:
                t = tiers.setdefault(row["bucket"], {})
                t[row["tier"]] = t.get(row["tier"], 0.0) + row["hours"]
            lead = (stage, "training" if role in ("training", "rollout") else "teacher")
            out.append(_Unit(j, pdata.pool_of(rows[0]), int(rows[0]["gpus"]), tiers, stage_rate[lead],
                             sum(r["gpu_hours"] for r in rows)))
    return out


def schedule_risk(pdata: PortfolioData, result: dict[str, Any], scen: CapacityScenarios) -> ScheduleRisk:
    """The schedule ``result`` (a portfolio result's JSON dict) replayed in every scenario of ``scen``."""
    B, S = len(pdata.buckets), scen.scenarios
    jobs = result["jobs"]
    J = len(jobs)
    units = _units(pdata, jobs)
    procurement = result.get("procurement", [])
    fixed = sum(r["commitment_usd"] or 0.0 for r in procurement if r["tier"] == "reserved") \
        + sum(job["metrics"]["noncompute_usd"] for job in jobs)
    state = {"cost": np.full(S, float(fixed)), "recourse": np.zeros(S), "backlog": np.zeros((S, len(units)))}
    late = np.zeros((S, J))
    meets = np.ones((S, J), dtype=bool)
    release = [job["release_bucket"] for job in jobs]
    deadline = [job["deadline_bucket"] for job in jobs]
    order = sorted(range(len(units)), key=lambda u: (deadline[units[u].job], units[u].job, u))
    for b in range(B):
        _replay_bucket(pdata, scen, b, units, order, release, deadline, procurement, state)
        for j in range(J):   # 5: past the deadline bucket
            if b == deadline[j]:
                mine = [u for u, unit in enumerate(units) if unit.job == j]
                late[:, j] = state["backlog"][:, mine].sum(axis=1) if mine else 0.0
                scheduled = sum(units[u].scheduled for u in mine)
                meets[:, j] = late[:, j] <= LATE_TOLERANCE * max(1.0, scheduled)
    return ScheduleRisk(list(pdata.names), scen.seed, state["cost"], state["recourse"], late, meets)


def _replay_bucket(pdata: PortfolioData, scen: CapacityScenarios, b: int, units: list[_Unit], order: list[int],
                   release: list[int], deadline: list[int], procurement: list[dict], state: dict) -> None:
    """Bucket ``b`` of every scenario: steps 1-4 of the module docstring, gang by gang (``units``)."""
    H = pdata.bucket_hours
    gidx = {g: k for k, g in enumerate(pdata.gpus)}
    cost, backlog = state["cost"], state["backlog"]
    res_spare = {g: 0.0 for g in pdata.gpus}
    for (provider, region, gpu_name), v in reserved_capacity(procurement, b).items():
        res_spare[pdata.pool_of({"provider": provider, "region": region, "gpu": gpu_name})] += float(v)
    for unit in units:
        if "reserved" in unit.rows.get(b, {}):
            res_spare[unit.pool] -= unit.count
    od_left = {g: scen.on_demand_gpus[:, gidx[g], b].copy() for g in pdata.gpus}
    free = np.full((scen.scenarios, len(units)), H)
    holds_od = np.zeros((scen.scenarios, len(units)), dtype=bool)
    for u, unit in enumerate(units):   # 1-3: the scheduled rows
        tiers, g, n = unit.rows.get(b, {}), unit.pool, unit.count
        free[:, u] -= tiers.get("reserved", 0.0)
        if "on_demand" in tiers:
            h = tiers["on_demand"]
            got = od_left[g] >= n
            od_left[g] -= np.where(got, n, 0)
            holds_od[:, u] = got
            cost += np.where(got, n * h * pdata.od_price[g][b], 0.0)
            backlog[:, u] += np.where(got, 0.0, n * h)
            free[:, u] -= np.where(got, h, 0.0)
        if "spot" in tiers:
            h = tiers["spot"]
            ran = np.minimum(h, first_preemption_hours(scen.preemption_uniform[:, unit.job, b], 1, unit.rate))
            cost += n * ran * pdata.spot_price[g][b]
            backlog[:, u] += n * (h - ran)
            free[:, u] -= ran
    for u in order:   # 4: recovery, earliest deadline first
        unit = units[u]
        j, g, nj = unit.job, unit.pool, unit.count
        if not release[j] <= b <= deadline[j] or nj == 0:
            continue
        room = np.maximum(free[:, u], 0.0) * nj
        if "reserved" in unit.rows.get(b, {}):
            run = np.minimum(backlog[:, u], room)
        else:
            can = (backlog[:, u] > 0) & (room > 0) & (res_spare[g] >= nj)
            run = np.where(can, np.minimum(backlog[:, u], room), 0.0)
            res_spare[g] = res_spare[g] - np.where(run > 0, nj, 0)
        backlog[:, u] -= run
        room -= run
        can = holds_od[:, u] | (od_left[g] >= nj)
        run = np.where(can & (backlog[:, u] > 0), np.minimum(backlog[:, u], room), 0.0)
        od_left[g] = od_left[g] - np.where((run > 0) & ~holds_od[:, u], nj, 0)
        backlog[:, u] -= run
        cost += run * pdata.od_price[g][b]
        state["recourse"] += run * pdata.od_price[g][b]


def portfolio_risk(pdata: PortfolioData, result: dict[str, Any], scenarios: int, seed: int = 0) -> ScheduleRisk:
    """``scenarios`` seeded capacity scenarios drawn for ``pdata`` and the schedule ``result`` replayed in each."""
    return schedule_risk(pdata, result, draw(pdata, scenarios, seed))
