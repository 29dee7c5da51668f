"""``planopt solve portfolio.json --confidence C [--scenarios N] [--seed S]``: the least-cost
schedule that runs undisrupted in at least a share C of N capacity scenarios.

The MIP is the portfolio MIP with the scenario rows of
``models/formulation/portfolio_chance.py`` (SAA, one binary per scenario). It
is solved straight, without the warm start and search of ``PortfolioModel.solve``
(their schedules and floors are the deterministic model's). The result carries
the schedule's ``risk`` over the same N scenarios (``portfolio_risk``, with its
recourse) and a ``chance`` block: the confidence asked, the scenarios needed and
the share the schedule runs undisrupted in, in sample (recomputed from the printed
schedule, not read from the MIP) and on a fresh draw of
``min(OUT_OF_SAMPLE_SCENARIOS, max_scenarios)`` scenarios (seed + ``OUT_OF_SAMPLE_SEED_OFFSET``),
with the share meeting every deadline under the recourse there too. A guard raises the
in-sample share when the fresh share falls short (``solve_portfolio_at_confidence``).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from planopt.models.formulation.portfolio_chance import add_capacity_chance, needed_scenarios, spot_room
from planopt.models.schema.portfolio import PortfolioData
from planopt.models.uncertainty.capacity import CapacityScenarios, max_scenarios

from planopt.uncertainty.chance import DEFAULT_SCENARIOS, GUARD_ROUNDS, OUT_OF_SAMPLE_SCENARIOS, OUT_OF_SAMPLE_SEED_OFFSET, OUT_OF_SAMPLE_TOLERANCE, check_confidence
from planopt.errors import InputError
from planopt.instance import check_time_limit
from planopt.portfolio.solve import (MIN_SOLVE_SECONDS, PortfolioModel, PortfolioResult, check_portfolio_size,
                                     load_portfolio, stop_before_the_build)
from planopt.portfolio.risk import check_risk_scenarios, draw, schedule_risk

RELATIVE_TOLERANCE = 1e-6   # on GPU counts and GPU-hours, against the solver's feasibility tolerance
# The most scenarios the SAA MIP takes: each is a binary with its rows, and 200 already take 30-60 s on
# 5-10 jobs (BENCHMARKS.md §3); a larger sample belongs to the out-of-sample check, not to the MIP.
MAX_SAA_SCENARIOS = 1_000


def check_saa_scenarios(n: int, flag: str = "--scenarios", confidence_flag: str = "--confidence") -> int:
    """A sample size the SAA MIP takes (at most ``MAX_SAA_SCENARIOS``), else InputError naming ``flag``."""
    if n > MAX_SAA_SCENARIOS:
        raise InputError(f"{flag}: with {confidence_flag} at most {MAX_SAA_SCENARIOS:,} (each is a binary of the portfolio MIP), "
                         f"got {n:,}; the schedule is checked on {OUT_OF_SAMPLE_SCENARIOS:,} fresh scenarios anyway")
    return n


def undisrupted(pdata: PortfolioData, result: dict[str, Any], scen: CapacityScenarios) -> np.ndarray:
    """Per scenario: the printed schedule runs as planned (every on-demand gang it holds is
    obtainable, no spot run outlasts its first preemption), from the schedule rows alone."""
    ok = np.ones(scen.scenarios, dtype=bool)
    held: dict[tuple[int, str], int] = {}
    gidx = {g: k for k, g in enumerate(pdata.gpus)}
    for j, job in enumerate(result["jobs"]):
        weighted: dict[int, float] = {}   # bucket -> sum of p_g x GPU-hours of the job's spot rows (a gang, or a bundle)
        for row in job["schedule"]:
            b, g = row["bucket"], pdata.pool_of(row)
            if row["tier"] == "on_demand":
                held[b, g] = held.get((b, g), 0) + row["gpus"]
            elif row["tier"] == "spot":
                weighted[b] = weighted.get(b, 0.0) + pdata.preempt[g] * row["gpus"] * row["hours"]
        for b, w in weighted.items():
            if w > 0:
                ok &= w <= spot_room(scen, j, b) * (1 + RELATIVE_TOLERANCE) + RELATIVE_TOLERANCE
    for (b, g), n in held.items():
        ok &= n <= scen.on_demand_gpus[:, gidx[g], b] + RELATIVE_TOLERANCE
    return ok


def solve_portfolio_at_confidence(source: str | Path | dict[str, Any] | PortfolioData, confidence: float,
                                  scenarios: int | None = None, seed: int = 0, time_limit: float | None = None,
                                  rel_gap: float = 1e-4, budget_usd: float | None = None,
                                  out_of_sample: int = OUT_OF_SAMPLE_SCENARIOS, guard: bool = True,
                                  started_at: float | None = None) -> PortfolioResult:
    """The least-cost schedule undisrupted in at least ``ceil(confidence x scenarios)`` of the
    seeded capacity scenarios (default ``DEFAULT_SCENARIOS``), with its risk and chance blocks.

    With ``guard`` (as the single-job ``--confidence``): when the schedule runs undisrupted in
    fewer than ``confidence - OUT_OF_SAMPLE_TOLERANCE`` of the fresh scenarios, the in-sample
    share asked is raised by the shortfall (at least one scenario) and the MIP solved again, at
    most ``GUARD_ROUNDS`` times, within the one ``time_limit``; ``chance.in_sample_target`` is the
    share the returned schedule was solved at, ``chance.guard`` says why the guard stopped short."""
    started = time.perf_counter() if started_at is None else started_at   # the time limit counts from here
    check_time_limit(time_limit)
    confidence = check_confidence(confidence)
    data = load_portfolio(source)
    check_portfolio_size(data)
    n = check_saa_scenarios(check_risk_scenarios(data, DEFAULT_SCENARIOS if scenarios is None else scenarios))
    scen = draw(data, n, seed)
    fresh_n = min(out_of_sample, max_scenarios(data))
    fresh = draw(data, fresh_n, seed + OUT_OF_SAMPLE_SEED_OFFSET)
    target, result = confidence, None
    for round_ in range(GUARD_ROUNDS + 1):
        left = None if time_limit is None else time_limit - (time.perf_counter() - started)
        if result is not None and left is not None and left < MIN_SOLVE_SECONDS:
            result.risk["chance"]["guard"] = f"the time limit ran out before a solve at {target:.1%} of the sample"
            break
        # the first solve counts from the call's start (loading and drawing included), as solve_portfolio does
        attempt = (_solve_at(data, scen, fresh, target, confidence, rel_gap, budget_usd, time_limit, started) if result is None
                   else _solve_at(data, scen, fresh, target, confidence, rel_gap, budget_usd, left, None))
        if not attempt.jobs and result is not None:
            result.risk["chance"]["guard"] = (f"no schedule runs undisrupted in {target:.1%} of the sample; "
                                              f"kept the schedule of {result.risk['chance']['in_sample_target']:.1%}")
            break
        result = attempt
        if not result.jobs:
            break
        chance = result.risk["chance"]
        chance["in_sample_target"], chance["guard_rounds"] = target, round_
        short = confidence - chance["out_of_sample"]["share_undisrupted"]
        if not guard or short <= OUT_OF_SAMPLE_TOLERANCE:
            break
        if target >= 1.0 or round_ == GUARD_ROUNDS:
            chance["guard"] = (f"undisrupted in {chance['out_of_sample']['share_undisrupted']:.1%} of fresh scenarios, "
                               f"{short:.1%} short of {confidence:.1%}: use more --scenarios")
            break
        target = min(1.0, max(target + short, target + 1.0 / n))
    return result


def _solve_at(data: PortfolioData, scen: CapacityScenarios, fresh: CapacityScenarios, target: float, confidence: float,
              rel_gap: float, budget_usd: float | None, time_limit: float | None, started: float | None) -> PortfolioResult:
    """One SAA solve needing ``ceil(target x S)`` undisrupted scenarios, with its risk and chance blocks."""
    if started is not None:   # the first solve: a limit too short for the build stops before it (``solve.py``)
        stopped = stop_before_the_build(data, time_limit, started)
        if stopped is not None:
            return stopped
    pm = PortfolioModel(data, budget_usd=budget_usd)
    if pm.model is not None:
        add_capacity_chance(pm.model, pm.form, scen, target)
    result = pm.solve(time_limit=time_limit, rel_gap=rel_gap, warm_start=False, explain=False, cost_floors=False,
                      started_at=started)
    n = scen.scenarios
    need = needed_scenarios(target, n)
    if not result.jobs:
        if pm.model is not None and result.status == "infeasible":
            result.message = (f"no schedule runs undisrupted (every on-demand gang obtainable, no spot run preempted) in "
                              f"{need} of the {n} capacity scenarios ({target:.0%}); a lower --confidence, more "
                              f"reservable GPUs or later deadlines would let one")
        return result
    out = result.to_dict()
    risk = schedule_risk(pm.data, out, scen).to_dict()
    risk["chance"] = {"confidence": confidence, "in_sample_target": target, "scenarios_needed": need, "guard_rounds": 0,
                      "guard": None,
                      "in_sample_share_undisrupted": float(undisrupted(pm.data, out, scen).mean()),
                      "out_of_sample": {"scenarios": fresh.scenarios, "seed": fresh.seed,
                                        "share_undisrupted": float(undisrupted(pm.data, out, fresh).mean()),
                                        "share_meeting_all_deadlines": schedule_risk(pm.data, out, fresh).share_meeting_all()}}
    result.risk = risk
    return result
