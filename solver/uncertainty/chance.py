"""Chance-constrained solves: build -> solve -> extract -> check out of sample.

``planopt solve FILE --confidence C`` returns the plan with the best expected
objective (or least CVaR of cost) among those that meet every limit in at
least a share C of ``scenarios`` sampled scenarios (``formulation/chance.py``).
The chosen plan is then measured on a fresh, larger scenario set (another
seed), and the result reports both shares and their difference, so the user
sees how far the sample can be trusted.
"""

from __future__ import annotations

import math
import time
from typing import Any

import pyomo.environ as pyo
from pyomo.contrib.solver.common.results import SolutionStatus
from pyomo.contrib.solver.solvers.highs import Highs

from planopt.models.cost.evaluator import Evaluator
from planopt.models.formulation.chance import OBJECTIVE_METRIC, allowed_violations, build_chance
from planopt.models.schema.plan import Plan
from planopt.models.uncertainty.scenarios import limits_of
from planopt.models.schema.instance import Instance
from planopt.models.uncertainty.model import DEFAULT_SEED, draw

from planopt.errors import InputError
from planopt.uncertainty.risk import check_scenarios, plan_risk, refuse_trained_teacher
from planopt.job.model import TIE_BREAK_RELATIVE, SolveResult, _status, run_highs

DEFAULT_SCENARIOS = 200
OUT_OF_SAMPLE_SCENARIOS = 10_000
# The guard's tolerance: the target is an out-of-sample share within 2 points
# of the confidence asked; a shortfall beyond it raises the in-sample share.
OUT_OF_SAMPLE_TOLERANCE = 0.02
GUARD_ROUNDS = 3
# The out-of-sample set is drawn with seed + this offset, so it never repeats the in-sample draws.
OUT_OF_SAMPLE_SEED_OFFSET = 1_000_003


def check_confidence(value: float, flag: str = "--confidence") -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 < value < 1.0:
        raise InputError(f"{flag}: expected a share strictly between 0 and 1 (e.g. 0.9), got {value!r}")
    return float(value)


def check_cvar(value: float | None, objective: str) -> float | None:
    if value is None:
        return None
    if objective != "cost":
        raise InputError(f"--cvar: CVaR is an objective of cost; drop it or use --objective cost (got --objective {objective})")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 < value < 1.0:
        raise InputError(f"--cvar: expected a level strictly between 0 and 1 (e.g. 0.9), got {value!r}")
    return float(value)


def refuse_retention(inst: Instance) -> None:
    """The chance model prices checkpoints as ``checkpointing.keep_last`` hot: refuse a ``retention`` block."""
    if inst.retention is not None:
        raise InputError("retention: retention choices are not yet combined with chance constraints "
                         "(--confidence); remove the retention block")


class ChanceModel:
    """A chance-constrained model of one instance over one scenario sample."""

    def __init__(self, inst: Instance, confidence: float, scenarios: int = DEFAULT_SCENARIOS, seed: int = DEFAULT_SEED,
                 cvar: float | None = None):
        refuse_chance(inst)
        refuse_trained_teacher(inst)
        self.inst, self.confidence = inst, check_confidence(confidence)
        self.n, self.seed = check_scenarios(scenarios), seed
        self.cvar = check_cvar(cvar, inst.objective)
        refuse_retention(inst)
        from planopt.job.plan_space import check_model_size
        check_model_size(inst)  # the deterministic model's cap; a sample only adds to it
        self.evaluator = Evaluator(inst)
        self.scenarios = draw(inst, self.n, seed)
        self.limits = limits_of(inst)
        self.allowed = allowed_violations(self.confidence, self.n)
        start = time.perf_counter()
        self.model, self.data = build_chance(self.evaluator, self.scenarios, self.limits, self.allowed, self.cvar)
        self.build_seconds = time.perf_counter() - start
        self.solver = Highs()

    # --- solve ------------------------------------------------------------------
    def _objective(self, name: str):
        m = self.model
        if name == "cvar":
            return m.cvar_cost, pyo.minimize
        sense = pyo.maximize if name == "quality" else pyo.minimize
        return getattr(m, f"expected_{name}"), sense

    def _solve_for(self, name: str, time_limit: float | None):
        m = self.model
        if hasattr(m, "chance_objective"):
            m.del_component(m.chance_objective)
        expr, sense = self._objective(name)
        m.chance_objective = pyo.Objective(expr=expr, sense=sense)
        return run_highs(self.solver, m, time_limit)

    def solve(self, time_limit: float | None = None, out_of_sample: int = OUT_OF_SAMPLE_SCENARIOS,
              guard: bool = True) -> SolveResult:
        """Solve at the confidence asked; with ``guard``, when the plan meets the limits
        out of sample in less than confidence - OUT_OF_SAMPLE_TOLERANCE of the fresh
        scenarios, raise the in-sample share by the shortfall and solve again (at most
        GUARD_ROUNDS times), so that the confidence holds beyond the sample."""
        target, result = self.confidence, None
        for round_ in range(GUARD_ROUNDS + 1):
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

    def _set_allowed(self, allowed: int) -> None:
        self.model.allowed_violations.set_value(allowed)

    def _solve_at(self, target: float, time_limit: float | None, out_of_sample: int, explain: bool = True) -> SolveResult:
        obj = self.inst.objective
        if self.model is None:
            why = "no training recipe" if not self.data.base.recipes else "no (GPU, count) option that holds any recipe in memory"
            return SolveResult("infeasible", obj, build_seconds=self.build_seconds, message=f"the instance has {why}",
                               risk={"confidence": self.confidence, "scenarios": self.n, "reachable_confidence": 0.0,
                                     "least_violations_per_limit": {}})
        start = time.perf_counter()
        self._set_allowed(allowed_violations(target, self.n))
        res = self._solve_for("cvar" if self.cvar is not None else obj, time_limit)
        status = _status(res)
        if status == "optimal" and obj != "cost" and self.cvar is None:
            res, status = self._tie_break(res, time_limit)
        result = SolveResult(status, obj, build_seconds=self.build_seconds)
        if res.solution_status in (SolutionStatus.optimal, SolutionStatus.feasible) and status != "infeasible":
            res.solution_loader.load_vars()
            self.extract(result, out_of_sample)
            inc, bound = res.incumbent_objective, res.objective_bound
            result.gap = 0.0 if status == "optimal" else (abs(inc - bound) / max(1e-9, abs(inc)) if inc is not None and bound is not None else None)
        elif status == "infeasible" and explain:
            result.message, result.risk = self.explain_infeasible(time_limit)
        result.solve_seconds = time.perf_counter() - start
        return result

    def _tie_break(self, res, time_limit):
        """Least expected cost among plans within the tie tolerance of the best expected objective."""
        m, obj = self.model, self.inst.objective
        expr, sense = self._objective(obj)
        best = res.incumbent_objective
        slack = TIE_BREAK_RELATIVE * max(1.0, abs(best))
        m.tie_break = pyo.Constraint(expr=expr >= best - slack if sense == pyo.maximize else expr <= best + slack)
        try:
            res2 = self._solve_for("cost", time_limit)
        finally:
            m.del_component(m.tie_break)
        status2 = _status(res2)
        if status2 in ("optimal", "time_limit"):
            return res2, status2
        return self._solve_for(obj, time_limit), "optimal"

    # --- extract ----------------------------------------------------------------
    def extract(self, result: SolveResult, out_of_sample: int) -> None:
        m, data = self.model, self.data.base
        r = next(i for i in m.R if pyo.value(m.recipe_chosen[i]) > 0.5)
        h = next(i for i in m.H if pyo.value(m.hardware_chosen[i]) > 0.5)
        t = next(i for i in m.I if pyo.value(m.interval_chosen[i]) > 0.5)
        plan = Plan.of(data.recipes[r], data.hardware[h], data.intervals[t], student=self.inst.student.preset)
        result.plan = plan
        result.metrics = self.evaluator.metrics(plan.recipe, plan.hardware, plan.checkpoint_interval_minutes)
        result.mip_values = {f"expected_{k}": pyo.value(getattr(m, f"expected_{k}")) for k in OBJECTIVE_METRIC}
        result.mip_values["violations"] = pyo.value(m.violations)
        if self.cvar is not None:
            result.mip_values["cvar_cost_usd"] = pyo.value(m.cvar_cost)
        result.risk = self.risk_of(plan, out_of_sample)

    def risk_of(self, plan: Plan, out_of_sample: int) -> dict[str, Any]:
        """In-sample and out-of-sample shares of the plan, with the out-of-sample percentiles."""
        inside = plan_risk(self.inst, plan, self.n, self.seed, self.evaluator)
        outside = plan_risk(self.inst, plan, check_scenarios(out_of_sample, "--out-of-sample"),
                            self.seed + OUT_OF_SAMPLE_SEED_OFFSET, self.evaluator)
        out = {"confidence": self.confidence, "scenarios": self.n, "seed": self.seed,
               "in_sample_share": inside.share(), "out_of_sample_share": outside.share(),
               "out_of_sample_scenarios": out_of_sample, "difference": outside.share() - inside.share(),
               "objective_measure": f"cvar_{self.cvar:g}" if self.cvar is not None else "expected",
               "expected": {k: float(inside.samples.metric(k).mean()) for k in ("cost_usd", "wall_hours", "quality", "forgetting_points")},
               "out_of_sample_limits": outside.to_dict()["limits"], "percentiles": outside.percentiles()}
        if self.cvar is not None:
            out["cvar_cost_usd"] = cvar(inside.samples.cost_usd, self.cvar)
        return out

    # --- infeasible -------------------------------------------------------------
    def _least_violations(self, limits: dict[str, float], time_limit: float | None) -> int | None:
        """Fewest scenarios any plan breaks ``limits`` in (a model of its own)."""
        model, _ = build_chance(self.evaluator, self.scenarios, limits, None)
        model.least_violations = pyo.Objective(expr=model.violations, sense=pyo.minimize)
        res = run_highs(Highs(), model, time_limit)
        if _status(res) != "optimal":
            return None
        return round(res.incumbent_objective)

    def explain_infeasible(self, time_limit: float | None) -> tuple[str, dict[str, Any]]:
        best = self._least_violations(self.limits, time_limit)
        per_limit = {name: self._least_violations({name: value}, time_limit) for name, value in self.limits.items()}
        n = self.n
        reachable = None if best is None else (n - best) / n
        parts = [f"{name} alone fails in {v} of {n} scenarios even for the plan best at it" if v
                 else f"{name} alone can be met in every scenario" for name, v in per_limit.items() if v is not None]
        msg = (f"no plan meets every limit in {self.confidence:.0%} of {n} scenarios"
               + (f"; the most any plan reaches is {reachable:.1%} (try --confidence {math.floor(reachable * 1000) / 1000:.3f} or lower)"
                  if reachable else "; no plan meets every limit in any scenario" if reachable == 0 else "")
               + (f"; {'; '.join(parts)}" if parts else ""))
        return msg, {"confidence": self.confidence, "scenarios": n, "reachable_confidence": reachable,
                     "least_violations_per_limit": per_limit}


def cvar(values, level: float) -> float:
    """CVaR at ``level`` of a sample, as the model defines it (Rockafellar-Uryasev over equal-weight scenarios)."""
    import numpy as np
    v = np.sort(np.asarray(values, dtype=float))
    n = len(v)
    tail = (1.0 - level) * n
    k = n - int(np.floor(tail + 1e-12))    # scenarios [k, n) are wholly in the tail, k-1 partly
    whole = v[k:].sum() if k < n else 0.0
    part = (tail - (n - k)) * v[k - 1] if k > 0 else 0.0
    return float((whole + part) / tail)


def refuse_chance(inst: Instance, what: str = "constraints.confidence") -> None:
    """Chance-constrained plans are one-stage plans of the instance's own student: refuse the rest (one line)."""
    from planopt.errors import InputError
    if inst.training.staged:
        raise InputError(f"{what}: chance-constrained plans are one-stage plans for now; an instance with "
                         "training.stage_sequences takes no confidence (its plan's risk is still reported)")
    if inst.candidate_students:
        raise InputError(f"{what}: chance-constrained plans train the instance's own student for now; an instance "
                         "with candidate_students takes no confidence (its plan's risk is still reported)")
    if any(s > 0 for s in inst.training.staleness_steps_options):
        # a scenario's hours are linear rows per rate family; asynchronous RL's overlap is a maximum (asynchronous.py)
        raise InputError(f"{what}: chance-constrained plans are synchronous for now; an instance with "
                         "training.staleness_steps_options above 0 takes no confidence (its plan's risk is still reported)")


def solve_chance(inst: Instance, confidence: float, scenarios: int = DEFAULT_SCENARIOS, seed: int = DEFAULT_SEED,
                 cvar_level: float | None = None, time_limit: float | None = None,
                 out_of_sample: int = OUT_OF_SAMPLE_SCENARIOS, guard: bool = True) -> SolveResult:
    refuse_chance(inst)
    return ChanceModel(inst, confidence, scenarios, seed, cvar_level).solve(time_limit, out_of_sample, guard)
