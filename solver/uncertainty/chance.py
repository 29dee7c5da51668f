"""Chance-constrained solves: build -> solve -> extract -> check out of sample.

``planopt solve FILE --confidence C`` returns the plan with the best expected
objective (or least CVaR of cost) among those that meet every limit in at
least a share C of ``scenarios`` sampled scenarios: the one plan model with its
scenarios layer (``planopt.job.model.PlanModel``, ``formulation/scenarios.py``), for
every kind of plan.
The chosen plan is then measured on a fresh, larger scenario set (another
seed), and the result reports both shares and their difference, so the user
sees how far the sample can be trusted.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import pyomo.core as pyo

from planopt.models.cost.evaluator import LIMIT_METRIC, Evaluator
from planopt.models.formulation.scenarios import allowed_violations
from planopt.models.schema.plan import Plan
from planopt.models.uncertainty.scenarios import ScenarioEvaluator, cvar, limits_of, meets
from planopt.models.schema.instance import Instance
from planopt.models.uncertainty.model import DEFAULT_SEED, draw

from planopt.errors import InputError
from planopt.uncertainty.risk import check_scenarios, plan_risk
from planopt.job.highs_child import CHILD_START_SECONDS
from planopt.job.model import PlanModel, SolveResult, solve, stoppable

DEFAULT_SCENARIOS = 200
OUT_OF_SAMPLE_SCENARIOS = 10_000
# The guard's tolerance: the target is an out-of-sample share within 2 points
# of the confidence asked; a shortfall beyond it raises the in-sample share.
OUT_OF_SAMPLE_TOLERANCE = 0.02
GUARD_ROUNDS = 3
# Seconds a chance-constrained model's first run takes before HiGHS can stop at its limit, per second of building
# the model. Through Pyomo's persistent interface its loading came first, 0.9-1.2 (a first run limited to 0.01 s
# took 0.36, 4.75 and 6.49 s after builds of 0.39, 3.96 and 5.82 s; plan_space.py). Through the array hand-over
# (job/highs_arrays.py, inside the run's limit) it is HiGHS's own set-up and its root LP's, neither of which checks
# the clock: `benchmarks/chance_setup.py` limits a first run to 0.25 s past its first time check, so that it stops
# at its second (2026-12-02 20:30 UTC, idle: qwen3-8b-math, the split-rollout job with staleness and
# qwen3-32b-sft-then-rl at 50 and 200 scenarios; BENCHMARKS.md §14). The chance MIP's took up to 2.72 times its
# build, so 2.9; the explanation's (the fewest scenarios broken, with feasibility jump off: job/model.py
# KNOWN_FEASIBLE_OPTIONS) up to 8.79 times, so 9.5. No run starts with less time left than this. Under a time
# limit the explanation's runs through the array hand-over are made in a child process killed at the limit
# (job/highs_child.py: HiGHS's analytic centre checks no clock), so theirs is the child's start instead.
LOAD_PER_BUILD_SECOND = 2.9
EXPLANATION_LOAD_PER_BUILD_SECOND = 9.5
# The out-of-sample set is drawn with seed + this offset, so it never repeats the in-sample draws.
OUT_OF_SAMPLE_SEED_OFFSET = 1_000_003
# A stopped run's dual bound on a count is rounded up after taking off this much: HiGHS's bound carries its
# feasibility tolerance (job/model.py FEASIBILITY_TOLERANCE, 1e-6 scale), so 36.0000001 still bounds the count by 36.
COUNT_BOUND_TOLERANCE = 1e-6


@dataclass(frozen=True)
class Violations:
    """The fewest scenarios any plan breaks some limits in: ``least`` when proven; else what a run stopped at its
    limit bounds it by, at least ``lower`` (its dual bound, rounded up) and at most ``upper`` (the count of the best
    plan it found), each None where the run gave none."""

    least: int | None
    lower: int | None = None
    upper: int | None = None


def check_confidence(value: float, flag: str = "--confidence") -> float:
    """``value`` as a float if it is a share strictly between 0 and 1; InputError naming ``flag`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 < value < 1.0:
        raise InputError(f"{flag}: expected a share strictly between 0 and 1 (e.g. 0.9), got {value!r}")
    return float(value)


def check_cvar(value: float | None, objective: str) -> float | None:
    """The CVaR level as a float (None: no CVaR); InputError unless the objective is cost and the level lies strictly
    between 0 and 1."""
    if value is None:
        return None
    if objective != "cost":
        raise InputError(f"--cvar: CVaR is an objective of cost; drop it or use --objective cost (got --objective {objective})")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 < value < 1.0:
        raise InputError(f"--cvar: expected a level strictly between 0 and 1 (e.g. 0.9), got {value!r}")
    return float(value)


class ChanceModel:
    """A chance-constrained solve of one instance over one scenario sample: the plan model with its scenarios
    layer, solved at the confidence asked and guarded out of sample."""

    def __init__(self, inst: Instance, confidence: float, scenarios: int = DEFAULT_SCENARIOS, seed: int = DEFAULT_SEED,
                 cvar: float | None = None):
        self.inst, self.confidence = inst, check_confidence(confidence)
        self.n, self.seed = check_scenarios(scenarios), seed
        self.cvar = check_cvar(cvar, inst.objective)
        self.evaluator = Evaluator(inst)
        self.scenarios = draw(inst, self.n, seed)
        self.limits = limits_of(inst)
        self.plan_model = PlanModel(inst, self.evaluator, scenarios=self.scenarios,
                                    allowed=allowed_violations(self.confidence, self.n), cvar_level=self.cvar)
        self.build_seconds = self.plan_model.build_seconds

    def solve(self, time_limit: float | None = None, out_of_sample: int = OUT_OF_SAMPLE_SCENARIOS,
              guard: bool = True) -> SolveResult:
        """Solve at the confidence asked; with ``guard``, when the plan meets the limits
        out of sample in less than confidence - OUT_OF_SAMPLE_TOLERANCE of the fresh
        scenarios, raise the in-sample share by the shortfall and solve again (at most
        GUARD_ROUNDS times), so that the confidence holds beyond the sample."""
        target, result = self.confidence, None
        for round_ in range(GUARD_ROUNDS + 1):
            if result is not None and self.budget is not None and self.budget.expired():
                result.risk["guard"] = f"the time limit ran out before guard round {round_}; kept the plan of {target:.1%}"
                break
            attempt = self._solve_at(target, time_limit, out_of_sample, explain=result is None)
            if attempt.plan is None and result is not None:
                result.risk["guard"] = f"no plan meets the limits in {target:.1%} of the sample; kept the plan of {result.risk['in_sample_target']:.1%}"
                break
            result = attempt
            if result.plan is None:
                break
            result.risk["in_sample_target"], result.risk["guard_rounds"] = target, round_
            short = self.confidence - result.risk["out_of_sample_share"]
            if not guard or short <= OUT_OF_SAMPLE_TOLERANCE:
                break
            if target >= 1.0 or round_ == GUARD_ROUNDS:
                result.risk["guard"] = (f"meets the limits in {result.risk['out_of_sample_share']:.1%} of fresh scenarios, "
                                        f"{short:.1%} short of {self.confidence:.1%}: use more --scenarios")
                break
            target = min(1.0, max(target + short, target + 1.0 / self.n))
        return result

    budget = None   # a TimeBudget bounding every solver run (``solve_chance``); None: each gets ``time_limit``
    _load_left = 0.0   # seconds the first run spends loading the model into HiGHS (under a budget)
    _setup = 0.0       # seconds an explanation's run takes before it can stop (explanation_setup_seconds)
    _stoppable = False  # the explanation's runs are killed at the budget's end (``highs_child.py``)

    def _limit(self, time_limit: float | None) -> float | None:
        """The time limit of the next solver run: what the budget has left, else ``time_limit``."""
        if self.budget is None:
            return time_limit
        from planopt.job.diagnose import seconds_left
        load, self._load_left = self._load_left, 0.0   # the first run loads the model before HiGHS's clock starts
        return max(0.01, seconds_left(self.budget) - load)

    def _solve_at(self, target: float, time_limit: float | None, out_of_sample: int, explain: bool = True) -> SolveResult:
        time_limit = self._limit(time_limit)
        pm = self.plan_model
        if pm.model is None:
            result = pm.solve(time_limit)
            result.risk = {"confidence": self.confidence, "scenarios": self.n, "reachable_confidence": 0.0,
                           "least_violations_per_limit": {}, "objective_measure": self.objective_measure}
            return result
        start = time.perf_counter()
        allowed = allowed_violations(target, self.n)
        pm.set_allowed(allowed)
        if len(pm.model.scenarios_every_option_breaks) > allowed:  # proven at once: no solver run needed
            result = SolveResult("infeasible", self.inst.objective, build_seconds=self.build_seconds)
        else:
            result = pm.solve(time_limit)
        if result.plan is not None:
            result.risk = self.risk_of(result.plan, out_of_sample)
        elif result.status == "infeasible" and explain and self.budget is not None and self.budget.expired():
            result.message = (f"no plan meets every limit in {self.confidence:.0%} of {self.n} scenarios; the time limit "
                              "ran out before the most any plan reaches was found")  # its MIPs would each run past it
            result.risk = {"confidence": self.confidence, "scenarios": self.n, "reachable_confidence": None,
                           "least_violations_per_limit": {}, "objective_measure": self.objective_measure}
        elif result.status == "infeasible" and explain:
            result.message, result.risk = self.explain_infeasible(time_limit)
        result.solve_seconds = time.perf_counter() - start
        return result

    @property
    def objective_measure(self) -> str:
        """What the objective measures over the scenarios: ``expected`` (the mean) or ``cvar_LEVEL`` (of cost)."""
        return f"cvar_{self.cvar:g}" if self.cvar is not None else "expected"

    def risk_of(self, plan: Plan, out_of_sample: int) -> dict[str, Any]:
        """In-sample and out-of-sample shares of the plan, with the out-of-sample percentiles."""
        inside = plan_risk(self.inst, plan, self.n, self.seed, self.evaluator)
        outside = plan_risk(self.inst, plan, check_scenarios(out_of_sample, "--out-of-sample"),
                            self.seed + OUT_OF_SAMPLE_SEED_OFFSET, self.evaluator)
        out = {"confidence": self.confidence, "scenarios": self.n, "seed": self.seed,
               "in_sample_share": inside.share(), "out_of_sample_share": outside.share(),
               "out_of_sample_scenarios": out_of_sample, "difference": outside.share() - inside.share(),
               "objective_measure": self.objective_measure,
               "expected": {k: float(inside.samples.metric(k).mean()) for k in ("cost_usd", "wall_hours", "quality", "forgetting_points")},
               "out_of_sample_limits": outside.to_dict()["limits"], "percentiles": outside.percentiles()}
        if self.cvar is not None:
            out["cvar_cost_usd"] = cvar(inside.samples.cost_usd, self.cvar)
        return out

    # --- infeasible -------------------------------------------------------------
    _candidates: list | None = None   # the scenario metrics of the plans best at each objective without limits

    def _met_everywhere(self, limits: dict[str, float], time_limit: float | None) -> bool:
        """Whether a candidate plan meets ``limits`` (and a trained teacher's score) in every scenario of the sample:
        then their fewest violations is 0, proven by that plan, and no solver run is needed. The candidates are the
        plans best at each objective with no limit (point solves, found once): on the shipped environments instance
        the run that found a plan forgetting within its limit in all 200 scenarios took 111 s, the point solve best
        at forgetting about 2 s (BENCHMARKS.md §22). The point solves use HiGHS whatever ``--solver`` is: they only
        propose plans, and each answer they give is the priced plan's, never a solver's bound."""
        if self._candidates is None:
            free = self.inst.constraints.model_copy(update={**dict.fromkeys(LIMIT_METRIC), "confidence": None})
            plans: list[Plan] = []
            for objective in ("cost", "time", "quality", "forgetting"):
                # under a time limit, a point solve only where its build (at most the chance model's) and a run fit
                if self.budget is not None and self.budget.limited and \
                        self.budget.left() < self.build_seconds + self._setup:
                    break
                found = solve(self.inst.model_copy(update={"constraints": free, "objective": objective}),
                              self._limit(time_limit)).plan
                if found is not None and found not in plans:
                    plans.append(found)
            sev = ScenarioEvaluator(self.evaluator, self.scenarios)   # priced once, read by every question
            self._candidates = [sev.plan_metrics(plan) for plan in plans]
        return any(all(v.all() for v in meets(sm, limits).values()) for sm in self._candidates)

    def _least_violations(self, limits: dict[str, float], time_limit: float | None) -> Violations:
        """Fewest scenarios any plan breaks ``limits`` in (:class:`Violations`): 0 where a candidate plan meets them in
        every scenario (:meth:`_met_everywhere`), else the model with the other limits' rows off, the union's cover
        rows replaced by the asked limits' own and the count free (``formulation/scenarios.define_chance_rows``),
        restored after."""
        if self._met_everywhere(limits, time_limit):
            return Violations(0)
        m = self.plan_model.model
        subset = set(limits) != set(m.limits_in_scenarios)
        off = [rows for name, rows in m.limits_in_scenarios.items() if name not in limits] + ([m.limits_in_scenario] if subset else [])
        on = [rows for name, rows in m.limit_covers.items() if name in limits] if subset else []
        before = pyo.value(m.allowed_violations)
        fixed = [m.scenario_violated[s] for s in m.scenarios_every_option_breaks] if subset else []
        for rows in off:
            rows.deactivate()
        for rows in on:
            rows.activate()
        for var in fixed:
            var.unfix()
        m.allowed_violations.set_value(self.n)
        try:
            best = self.plan_model.optimise(m.violations, pyo.minimize, time_limit, known_feasible=True,
                                            stoppable=self._stoppable)
            if self.plan_model.optimised_status == "optimal":
                found = Violations(None if best is None else round(best))
            else:  # a count found within a time limit is not the least: only bounds on it
                bound = self.plan_model.optimised_bound
                found = Violations(None, None if bound is None else max(0, math.ceil(bound - COUNT_BOUND_TOLERANCE)),
                                   None if best is None else round(best))
        finally:
            for rows in off:
                rows.activate()
            for rows in on:
                rows.deactivate()
            for var in fixed:
                var.fix(1)
            m.allowed_violations.set_value(before)
            self.plan_model.set_objective(self.plan_model.objective if self.cvar is None else "cvar")
        return found

    def _no_time_for_a_run(self) -> bool:
        """Whether the budget has less left than an explanation's run needs before it can stop at its limit
        (``EXPLANATION_LOAD_PER_BUILD_SECOND``)."""
        return self.budget is not None and self.budget.limited and self.budget.left() < self._setup

    def explain_infeasible(self, time_limit: float | None) -> tuple[str, dict[str, Any]]:
        """Why no plan meets the limits at the confidence: the message, and the most any plan reaches with each
        limit's least violations (each left out when the time left could not hold its run)."""
        union = Violations(None) if self._no_time_for_a_run() else self._least_violations(self.limits, self._limit(time_limit))
        per_limit = {}
        for name, value in self.limits.items():
            if self._no_time_for_a_run():  # the limits its time did not reach are left out
                break
            per_limit[name] = self._least_violations({name: value}, self._limit(time_limit)).least
        n, best = self.n, union.least
        reachable = None if best is None else (n - best) / n
        # a stopped run's bounds: a plan it found reaches (n - upper) / n; none reaches more than (n - lower) / n
        bounds = None if best is not None or union.upper is None else [(n - union.upper) / n,
                                                                       (n - (union.lower or 0)) / n]
        parts = [f"{name} alone fails in {v} of {n} scenarios even for the plan best at it" if v
                 else f"{name} alone can be met in every scenario" for name, v in per_limit.items() if v is not None]
        msg = (f"no plan meets every limit in {self.confidence:.0%} of {n} scenarios"
               + (f"; the most any plan reaches is {reachable:.1%} (try --confidence {math.floor(reachable * 1000) / 1000:.3f} or lower)"
                  if reachable else "; no plan meets every limit in any scenario" if reachable == 0 else
                  "; the time limit ran out before the most any plan reaches was proven"
                  + ("" if not bounds else f": it is at most {bounds[1]:.1%}" if bounds[0] <= 0 else
                     f": it lies between {bounds[0]:.1%} (a plan found) and {bounds[1]:.1%}")
                  if self.budget is not None and self.budget.limited else "")
               + (f"; {'; '.join(parts)}" if parts else ""))
        return msg, {"confidence": self.confidence, "scenarios": n, "reachable_confidence": reachable,
                     "reachable_confidence_bounds": bounds, "least_violations_per_limit": per_limit,
                     "objective_measure": self.objective_measure}


def explanation_setup_seconds(solver, build_seconds: float) -> float:
    """Seconds an explanation's run needs before it can stop at its limit: a stoppable run's child start
    (``highs_child.CHILD_START_SECONDS``: it is killed at the limit whatever HiGHS does), else HiGHS's set-up and
    root LP, which check no clock (``EXPLANATION_LOAD_PER_BUILD_SECOND`` x the build)."""
    return CHILD_START_SECONDS if stoppable(solver) else EXPLANATION_LOAD_PER_BUILD_SECOND * build_seconds


def solve_chance(inst: Instance, confidence: float, scenarios: int = DEFAULT_SCENARIOS, seed: int = DEFAULT_SEED,
                 cvar_level: float | None = None, time_limit: float | None = None,
                 out_of_sample: int = OUT_OF_SAMPLE_SCENARIOS, guard: bool = True, budget=None) -> SolveResult:
    """The chance-constrained plan of ``inst`` at ``confidence`` over ``scenarios`` seeded scenarios
    (:meth:`ChanceModel.solve`: with ``guard``, re-solved until it holds on ``out_of_sample`` fresh ones).
    ``budget`` (a ``TimeBudget``) bounds the whole of it, the draw and the build included: every solver run
    gets the time left, and no guard round starts past it."""
    model = ChanceModel(inst, confidence, scenarios, seed, cvar_level)
    if budget is not None and budget.limited:
        from planopt.job.highs_arrays import ArrayHighs
        load = LOAD_PER_BUILD_SECOND * model.build_seconds
        # Pyomo's loading is outside the solver's clock: the first run's limit is shortened by it; the array
        # hand-over and HiGHS's set-up are inside it
        model.budget, model._load_left = budget, 0.0 if isinstance(model.plan_model.solver, ArrayHighs) else load
        model._stoppable = stoppable(model.plan_model.solver)
        model._setup = explanation_setup_seconds(model.plan_model.solver, model.build_seconds)
        # with less time left than the set-up the first run would end past the limit
        if budget.left() < load:
            from planopt.job.diagnose import out_of_time
            return out_of_time(inst, model.build_seconds, budget, "loading the instance, drawing the scenarios and "
                               "building the model", note=f"handing it to the solver and the solver's set-up would take about "
                               f"{load:.1f} s more" if load else "")
    return model.solve(time_limit, out_of_sample, guard)
