"""build -> solve -> extract: one job's MIP, ending in one :class:`SolveResult`.

The steps are separate so that sweeps and frontiers reuse a built model:
``PlanModel.build`` makes the Pyomo model from the evaluator's coefficients,
``PlanModel.solve`` runs HiGHS (persistent, so a changed limit only updates a
right-hand side), and ``PlanModel.extract`` reads the plan and has the
evaluator compute its metrics.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Optional

import pyomo.core as pyo  # not pyomo.environ: its plugins cost every CLI call ~0.3 s unused (BENCHMARKS.md §1)
from pyomo.contrib.solver.common.results import SolutionStatus, TerminationCondition
from pyomo.contrib.solver.solvers.highs import Highs

from planopt.job.highs_arrays import ArrayHighs
from planopt.models.cost.evaluator import OBJECTIVE_METRIC, Evaluator, Metrics, exceeds
from planopt.models.formulation import (LIMITS, OBJECTIVES, activate_objective, build, chosen, chosen_plan, collect_space,
                                        set_limits, start_values)
from planopt.models.formulation.big_m import big_m_breaches
from planopt.models.formulation.limits import SEARCH_WIDTH_SLACKS, set_row_width
from planopt.models.formulation.linear import lazy_terms, linear
from planopt.models.schema.plan import Plan
from planopt.models.schema.instance import Instance
from planopt.models.schema.plan import plan_json

from planopt.messages import shorten
from planopt.errors import InputError
from planopt.verbosity import note, solver_log_streams

# HiGHS settings: the gap is closed to 1e-9 so "optimal" means optimal to the
# tests' 1e-6; feasibility tolerances match the evaluator's limit tolerance.
# Presolve is off: HiGHS 1.16's presolve was seen to return a plan 5e-4 worse
# than optimal, reported as optimal, when a limit sat just off another plan's
# value (where ε-constraints and sweeps put limits); these models are small
# enough that presolve buys nothing measurable (BENCHMARKS.md).
RELATIVE_GAP = 1e-9
FEASIBILITY_TOLERANCE = 1e-9
# Plans whose first objective lies within this relative distance of the best
# count as tied and are told apart by cost (the oracle uses the same rule).
TIE_BREAK_RELATIVE = 1e-7
# Among those, costs within this relative distance are equal: float64 sums of the same plan's terms in another
# order (numpy's arrays against the evaluator's loop) differ by ~1e-16 per term over ~10^3 terms; the oracles
# then take the first plan in their one enumeration order, so that float noise never picks the plan.
COST_TIE_RELATIVE = 1e-12
# A solver never writes to stdout (it would corrupt `--json`): its log, including
# HiGHS's warnings about huge bounds, is off, or under `-v` sent to stderr
# (Pyomo captures the solver's stdout and tees it to the streams given).
DEFAULT_SOLVER = "highs"
# of the JSON output of solve and evaluate (schema: result_schema.py); bumped when a key changes meaning or goes away
RESULT_VERSION = "2.1"  # 2.0: the plan is {student, stages: [...], checkpoint_interval_minutes, retention} (issue 12); 2.1: a stage's rollout may be {gpu, gpu_count}
# The MIP solvers planopt solves a job with, each tested against the brute-force oracle (tests/solver/job/
# test_solver_choice.py), and what to install when one is missing. HiGHS runs from arrays (highs_arrays.py,
# with a MIP start), SCIP through PySCIPOpt (pyomo.contrib.solver), CBC and GLPK as programs
# (shell_solvers.py). No other name is offered: Pyomo registers more (ipopt is no MIP solver; Gurobi,
# Knitro and GAMS need licences no test here has), and planopt claims only what it has seen run.
SOLVERS = {"highs": "installed with planopt",
           "scip": "pip install pyscipopt",
           "cbc": "the cbc program; Debian/Ubuntu: apt-get install coinor-cbc",
           "glpk": "the glpsol program; Debian/Ubuntu: apt-get install glpk-utils"}
SOLVER_NAMES = "highs (default), scip, cbc or glpk"
# `solve` searches with limit rows wider than the evaluator's rule (formulation/
# limits.py, SEARCH_WIDTH_SLACKS), so a returned plan may break a limit by the
# rule (costs.exceeds): it is then cut off and the model re-solved. Only plans
# within 1e-6 relative past a budget or deadline can need a cut (the recipe
# fixing applies the rule to quality and forgetting exactly); this bounds them.
MAX_TOLERANCE_CUTS = 50


class HighsWithStart(Highs):
    """Pyomo's persistent HiGHS, handing HiGHS a MIP start just before each run: the reference the array hand-over
    (``highs_arrays.ArrayHighs``, the default) is held to by the tests and BENCHMARKS.md §1.

    ``start`` (a callable returning ``[(var, value), ...]`` or None) is asked
    after Pyomo has pushed its updates, because an update (a changed limit)
    makes HiGHS drop a start set before it. Columns it leaves out are 0. HiGHS
    checks the start and discards it when it is infeasible; it only ever gives
    an incumbent, so the proven optimum is unchanged.
    """

    start = None

    def _solve(self):
        values = self.start() if self.start is not None else None
        if values:
            import numpy as np
            from highspy import HighsSolution
            try:  # Pyomo's column map is private: without it, solve without a start
                column = self._pyomo_var_to_solver_var_map
                full = np.zeros(len(column))
                for var, value in values:
                    full[column[id(var)]] = value
            except (AttributeError, KeyError):
                full = None
            if full is not None:
                solution = HighsSolution()
                solution.col_value = full.tolist()
                solution.value_valid = True
                # HiGHS prints a warning to stdout when it rejects a start (`--json` must stay one object):
                # quiet while it is handed over; the run's own options, set next, say what it may print
                self._solver_model.setOptionValue("output_flag", False)
                self._solver_model.setSolution(solution)
        return super()._solve()


# the project's HiGHS settings (above), by HiGHS's option names; feasibility jump (HiGHS >= 1.11) at HiGHS's default,
# on, set on every run so that a run with ``KNOWN_FEASIBLE_OPTIONS`` leaves nothing behind on a persistent solver
HIGHS_OPTIONS = {"mip_rel_gap": RELATIVE_GAP, "mip_abs_gap": 0.0, "mip_feasibility_tolerance": FEASIBILITY_TOLERANCE,
                 "primal_feasibility_tolerance": FEASIBILITY_TOLERANCE, "random_seed": 0, "threads": 1, "presolve": "off",
                 "mip_heuristic_run_feasibility_jump": True}
# For a MIP whose feasible point is known before it starts (the fewest scenarios broken: every scenario broken is
# a plan's count), HiGHS's feasibility-jump heuristic only looks for what is already there, and it does not check
# the clock: on the staged qwen3-32b-sft-then-rl explanation at 200 scenarios (3.3M nonzeros) it took 2.8 of the
# 3.3 s before HiGHS's first time check, and the proof of the least count 7.9 s instead of 10.0 s, the same count
# (2026-12-02, HiGHS 1.16, BENCHMARKS.md §14).
KNOWN_FEASIBLE_OPTIONS = {"mip_heuristic_run_feasibility_jump": False}


def run_highs(solver, model: pyo.ConcreteModel, time_limit: float | None, tuning: dict | None = None,
              stoppable: bool = False):
    """One HiGHS solve with the project's settings (above) and ``tuning`` over them (HiGHS option names: e.g.
    ``KNOWN_FEASIBLE_OPTIONS``), through the array hand-over (``highs_arrays.py``) or Pyomo's persistent interface
    (``HighsWithStart``, the reference the hand-over is tested against); solutions are loaded by the caller.
    ``stoppable``: the hand-over's run is made in a process killed at the time limit (``highs_child.py``)."""
    log = solver_log_streams()
    settings = {**HIGHS_OPTIONS, **(tuning or {})}
    if isinstance(solver, ArrayHighs):
        return solver.solve(model, time_limit, settings, log, stoppable=stoppable)
    options = {k: v for k, v in settings.items() if k not in ("mip_rel_gap", "mip_abs_gap")}
    return solver.solve(
        model, load_solutions=False, raise_exception_on_nonoptimal_result=False,
        time_limit=_explicit(time_limit), rel_gap=RELATIVE_GAP, abs_gap=0.0, tee=log,
        solver_options={**options, "output_flag": bool(log), "log_to_console": bool(log)})


def make_solver(name: str = DEFAULT_SOLVER, label: str = "solver"):
    """The solver named ``name`` (one of ``SOLVERS``): HiGHS (persistent, with the MIP start), SCIP through
    Pyomo's interface to PySCIPOpt, CBC or GLPK run as programs (``shell_solvers.ShellSolver``). InputError
    naming ``label`` (the argument or flag) when the name is not one of them, or the solver is not installed."""
    if name == DEFAULT_SOLVER:
        return ArrayHighs()
    if not isinstance(name, str) or name not in SOLVERS:
        raise InputError(f"{label}: unknown solver {shorten(repr(name))}; expected {SOLVER_NAMES}")
    if name in ("cbc", "glpk"):
        from planopt.job.shell_solvers import ShellSolver
        solver = ShellSolver(name)
    else:
        import pyomo.environ  # noqa: F401  (registers Pyomo's solver interfaces; the HiGHS path does without them)
        from pyomo.contrib.solver.common.factory import SolverFactory
        solver = SolverFactory("scip_persistent")
    if not solver.available():
        raise InputError(f"{label}: {name} is not installed ({SOLVERS[name]}); or use the default, {DEFAULT_SOLVER}")
    return solver


def run_solver(solver, model: pyo.ConcreteModel, time_limit: float | None, tuning: dict | None = None,
               stoppable: bool = False):
    """One solve: HiGHS with the project's settings and ``tuning`` (HiGHS's options: other solvers have no use for
    them), another solver with the same gap and time limit. ``stoppable``: see :func:`run_highs` (only the array
    hand-over's runs can be stopped; :func:`stoppable` says whether ``solver``'s can)."""
    if isinstance(solver, (ArrayHighs, Highs)):
        return run_highs(solver, model, time_limit, tuning, stoppable)
    from planopt.job.shell_solvers import ShellSolver
    if isinstance(solver, ShellSolver):
        return solver.solve(model, time_limit, RELATIVE_GAP, solver_log_streams())
    return solver.solve(model, load_solutions=False, raise_exception_on_nonoptimal_result=False,
                        time_limit=_explicit(time_limit), rel_gap=RELATIVE_GAP, abs_gap=0.0, tee=solver_log_streams())


# A run without a time limit, told to a persistent Pyomo solver: its interfaces set a limit only when one is given,
# so a run given none kept the last run's (a SCIP solve after one limited to 1 ms stopped at once, with no plan).
# SCIP's own "no limit" (its `limits/time` default, 1e20 s); HiGHS takes it as a limit never reached.
NO_TIME_LIMIT_SECONDS = 1e20


def _explicit(time_limit: float | None) -> float:
    """``time_limit``, or ``NO_TIME_LIMIT_SECONDS`` for none."""
    return NO_TIME_LIMIT_SECONDS if time_limit is None else time_limit


def stoppable(solver) -> bool:
    """Whether ``solver``'s runs can be stopped at their time limit whatever HiGHS does (the array hand-over's)."""
    return isinstance(solver, ArrayHighs)


def drop_constant_rows(model: pyo.ConcreteModel) -> None:
    """Deactivate rows without variables (``0 == 0`` where an option has no work of a kind): HiGHS skips
    them, Pyomo's SCIP interface cannot pass them on. A constant row that does not hold makes the model
    infeasible; it is kept, so the solver says so."""
    from pyomo.core.expr.visitor import identify_variables
    for con in model.component_data_objects(pyo.Constraint, active=True):
        if next(identify_variables(con.body), None) is None:
            value = pyo.value(con.body)
            lower, upper = pyo.value(con.lower), pyo.value(con.upper)
            if (lower is None or value >= lower) and (upper is None or value <= upper):
                con.deactivate()


@dataclass
class SolveResult:
    """What a solve returns: status, the plan and its metrics, the MIP's values, gap, timings, and the binding limits,
    relaxations and risk the reports add."""

    status: str                      # optimal | infeasible | time_limit | error
    objective: str
    plan: Optional[Plan] = None
    metrics: Optional[Metrics] = None
    mip_values: dict[str, float] = field(default_factory=dict)
    gap: Optional[float] = None
    build_seconds: float = 0.0
    solve_seconds: float = 0.0
    message: str = ""
    big_m_breaches: list[str] = field(default_factory=list)
    binding: list[dict[str, Any]] = field(default_factory=list)
    relaxations: list[dict[str, Any]] = field(default_factory=list)
    risk: Optional[dict[str, Any]] = None  # scenarios of the uncertainty model (``planopt.uncertainty.risk``, ``planopt.uncertainty.chance``)
    student: Optional[str] = None    # the student the plan trains (``plan.student`` of the JSON)
    spend: Optional[dict[str, Any]] = None  # the budget and alert lines (``models/cost/spend.py``, ``spend_lines``)

    @property
    def has_plan(self) -> bool:
        """Whether the solve found a plan."""
        return self.plan is not None

    def to_dict(self) -> dict[str, Any]:
        """The result as the ``--json`` object of ``planopt solve`` (binding rows, relaxations and risk only where
        there are any)."""
        out: dict[str, Any] = {"version": RESULT_VERSION, "status": self.status, "objective": self.objective, "gap": self.gap,
                               "plan": plan_json(self.plan, self.student) if self.plan else None,
                               "metrics": self.metrics.summary() if self.metrics else None,
                               "cost_breakdown_usd": self.metrics.cost_breakdown_usd if self.metrics else None,
                               "hours_breakdown": self.metrics.hours_breakdown if self.metrics else None,
                               "offers": self.metrics.offers if self.metrics else None,
                               "quantities": self.metrics.quantities if self.metrics else None,
                               "cost_split_usd": self.metrics.cost_split() if self.metrics else None,
                               "build_seconds": self.build_seconds, "solve_seconds": self.solve_seconds}
        if self.binding:
            out["binding"] = self.binding
        if self.status == "infeasible":
            out["relaxations"] = self.relaxations
            out["message"] = self.message
        elif self.message and self.plan is None:  # a time limit with no plan yet: what took the time
            out["message"] = self.message
        if self.risk is not None:
            out["risk"] = self.risk
        if self.spend is not None:
            out["spend"] = self.spend
        if self.metrics is not None and self.metrics.environments:  # a plan on a pool of environment workers
            out["environments"] = self.metrics.environments
        if self.metrics is not None and self.metrics.pretraining:  # a plan that continues pre-training its student
            out["pretraining"] = self.metrics.pretraining
        return out


# the objective whose metric each is (the inverse of costs.OBJECTIVE_METRIC)
OBJECTIVE_OF = {metric: name for name, metric in OBJECTIVE_METRIC.items()}


class PlanModel:
    """The one plan model of a job, built from its layers, re-solvable under changed limits and objectives.

    Every kind of plan is this model: one stage or several (``training.stage_sequences``), the
    instance's student or a choice of ``candidate_students``, with or without a ``retention``
    block, asynchronous rollout or a trained teacher (``planopt.models.formulation``). A plan is
    read from the one-hot groups its layers declare (``m.choice_groups``): one extractor, one
    tolerance cut and one tie rule for all of them.

    With ``scenarios`` (drawn ``uncertainty.model.Scenarios``) it is the chance-constrained model of the
    same plans (``formulation/scenarios.py``): each limit held in every scenario but at most ``allowed``
    (None: the count is free), the objectives the expected metrics, or CVaR of cost at ``cvar_level``."""

    optimised_status: str | None = None   # the last ``optimise`` run's status
    optimised_bound: float | None = None  # and its proven bound on the optimum (None: none)

    def __init__(self, inst: Instance, evaluator: Evaluator | None = None, solver: str = DEFAULT_SOLVER,
                 scenarios=None, allowed: int | None = None, cvar_level: float | None = None,
                 limits: dict[str, float] | None = None):
        from planopt.job.plan_space import check_model_size
        check_model_size(inst)  # refuse a model over the memory cap before listing a single recipe
        self.inst = inst
        self.evaluator = evaluator or Evaluator(inst)
        self.solver = make_solver(solver)  # before the build: an unknown solver is an input error, found at once
        start = time.perf_counter()
        self.space = collect_space(self.evaluator, prune=scenarios is None)
        self.scenarios = scenarios
        layer = None if scenarios is None else self._scenario_layer(allowed, cvar_level, limits)
        with lazy_terms(isinstance(self.solver, ArrayHighs)):  # per-term objects only for solvers that walk them
            self.model = build(self.space, layer)
        self.build_seconds = time.perf_counter() - start
        note(f"model built in {self.build_seconds:.3f} s")
        if self.model is not None and isinstance(self.solver, (ArrayHighs, HighsWithStart)):
            if scenarios is None:  # start_values gives none where it cannot (a staged space with retention)
                self.solver.start = lambda: start_values(self.model, self.space)
        elif self.model is not None:
            drop_constant_rows(self.model)  # HiGHS skips them itself
        # the limits the MIP bounds (constraints.confidence is a chance-constrained solve's, see chance.py)
        self.limits = {k: v for k, v in inst.constraints.model_dump().items() if k in LIMITS}
        self.objective = inst.objective

    def _scenario_layer(self, allowed: int | None, cvar_level: float | None, limits: dict[str, float] | None):
        from planopt.models.formulation import ScenarioLayer
        from planopt.models.formulation.scenarios import collect_scenarios
        from planopt.models.uncertainty.scenarios import limits_of
        try:
            coefficients = collect_scenarios(self.space, self.scenarios)
        except ValueError as exc:  # a space the layer does not price: one line naming the field
            raise InputError(str(exc)) from None
        return ScenarioLayer(coefficients, limits_of(self.inst) if limits is None else limits, allowed, cvar_level)

    def metric(self, name: str):
        """The model's expression of a metric (``cost_usd``, ``wall_hours``, ``quality``, ``forgetting_points``):
        the plan's, or with scenarios its expected value."""
        if self.scenarios is None:
            return getattr(self.model, name)
        return getattr(self.model, f"expected_{OBJECTIVE_OF[name]}")

    def set_allowed(self, allowed: int) -> None:
        """With scenarios: at most ``allowed`` of them may break a limit (a right-hand side)."""
        self.model.allowed_violations.set_value(allowed)

    def optimise(self, expr, sense, time_limit: float | None = None, known_feasible: bool = False,
                 stoppable: bool = False) -> Optional[float]:
        """The optimum of a free objective ``expr`` (``pyo.minimize`` / ``pyo.maximize``), loaded; None when no
        solution; at a time limit the best found (``optimised_status`` says which). The model's own objectives are
        left deactivated (``set_objective`` brings one back). ``known_feasible``: the caller knows a feasible point
        exists (``KNOWN_FEASIBLE_OPTIONS``). ``stoppable``: the run is killed at ``time_limit`` if HiGHS runs past it
        (``run_highs``)."""
        m = self.model
        for name in [*OBJECTIVES, "cvar"]:
            if hasattr(m, f"objective_{name}"):
                getattr(m, f"objective_{name}").deactivate()
        if hasattr(m, "free_objective"):
            m.del_component(m.free_objective)
        m.free_objective = pyo.Objective(expr=expr, sense=sense)
        try:
            res = self._run(time_limit, KNOWN_FEASIBLE_OPTIONS if known_feasible else None, stoppable)
        finally:
            m.del_component(m.free_objective)
        self.optimised_status = _status(res)  # "optimal" only when the value returned is proven least (or most)
        self.optimised_bound = res.objective_bound   # the run's proven bound on the optimum (None: none)
        if self.optimised_status not in ("optimal", "time_limit") or res.solution_status not in (SolutionStatus.optimal,
                                                                                                 SolutionStatus.feasible):
            return None
        res.solution_loader.load_vars()
        return res.incumbent_objective

    def set_limits(self, **values: Optional[float]) -> None:
        """Change limits (None removes one); the model is not rebuilt."""
        if self.scenarios is not None:
            raise ValueError("limits of a chance-constrained model are held per scenario: build another model")
        unknown = set(values) - set(LIMITS)
        if unknown:
            raise KeyError(f"unknown limit {sorted(unknown)[0]}")
        self.limits.update(values)
        if self.model is not None:
            set_limits(self.model, values)

    def set_objective(self, name: str) -> None:
        """Activate objective ``name`` (``cost``, ``quality``, ``time``, ``forgetting``; with scenarios also ``cvar``)."""
        self.objective = name
        if self.model is not None:
            activate_objective(self.model, name)

    def _run(self, time_limit: float | None, tuning: dict | None = None, stoppable: bool = False):
        start = time.perf_counter()
        try:
            return run_solver(self.solver, self.model, time_limit, tuning, stoppable)
        finally:
            note(f"solver run: {time.perf_counter() - start:.3f} s")

    def solve(self, time_limit: float | None = None) -> SolveResult:
        """Solve; every plan returned meets the limits by the evaluator's rule (see MAX_TOLERANCE_CUTS). With
        scenarios the chance rows hold the widened limits of that rule already: one solve and its tie-break."""
        if self.model is None or self.scenarios is not None:
            return self._solve_once(time_limit)
        end = None if time_limit is None else time.perf_counter() + time_limit  # the cuts' re-solves share the limit
        resting_width = set_row_width(self.model, SEARCH_WIDTH_SLACKS)
        try:
            for _ in range(MAX_TOLERANCE_CUTS):
                result = self._solve_once(_until(end))
                if result.metrics is None or not self.broken_limits(result.metrics):
                    return result
                self._cut_off_last_plan()
            result.status, result.message = "error", "the solver kept returning plans that break a limit by its tolerance"
            return result
        finally:
            if hasattr(self.model, "tolerance_cuts"):
                self.model.del_component(self.model.tolerance_cuts)
            set_row_width(self.model, resting_width)

    def broken_limits(self, metrics: Metrics) -> list[str]:
        """The model's current limits (``self.limits``, which sweeps change) that ``metrics`` break, by the evaluator's rule."""
        return [name for name, (expr, sense) in LIMITS.items()
                if self.limits.get(name) is not None and exceeds(getattr(metrics, expr), self.limits[name], sense)]

    def _cut_off_last_plan(self) -> None:
        """Forbid the plan just extracted: a no-good cut on the binaries it chose, one per one-hot group."""
        m = self.model
        if not hasattr(m, "tolerance_cuts"):
            m.tolerance_cuts = pyo.ConstraintList()
        chosen = self._chosen_vars
        m.tolerance_cuts.add(linear([1.0] * len(chosen), chosen) <= len(chosen) - 1)

    def _solve_once(self, time_limit: float | None) -> SolveResult:
        if self.model is None:
            if not self.space.recipes:
                return SolveResult("infeasible", self.objective, build_seconds=self.build_seconds,
                                   message="the instance has no training recipe")
            from planopt.job.hardware_fit import hardware_relaxations
            from planopt.models.cost.hardware import hardware_options, unheld_counts
            changes = hardware_relaxations(self.inst)
            # no option at all: no count of any entry can be bought (catalog offers); else none holds a recipe
            why = ("no (GPU, count) option of the instance can be bought: " + "; ".join(unheld_counts(self.inst))
                   if not hardware_options(self.inst) else
                   "the instance has no (GPU, count) option that holds any recipe in memory")
            return SolveResult("infeasible", self.objective, build_seconds=self.build_seconds, relaxations=changes,
                               message=why + "; " + ("each change below would make one fit" if changes else
                                                     "no single change of the GPUs, their counts, LoRA or CPU offload "
                                                     "makes one fit"))
        start = time.perf_counter()
        end = None if time_limit is None else start + time_limit
        res = self._run(time_limit)
        status = _status(res)
        if status == "optimal" and self.objective not in ("cost", "cvar"):
            res, status = self._tie_break_by_cost(res, _until(end))
        seconds = time.perf_counter() - start
        result = SolveResult(status, self.objective, build_seconds=self.build_seconds, solve_seconds=seconds)
        if res.solution_status in (SolutionStatus.optimal, SolutionStatus.feasible) and status != "infeasible":
            res.solution_loader.load_vars()
            self.extract(result)
            inc, bound = res.incumbent_objective, res.objective_bound
            if inc is not None and bound is not None:
                result.gap = abs(inc - bound) / max(1e-9, abs(inc)) if status != "optimal" else 0.0
            elif status == "optimal":
                result.gap = 0.0
        elif status == "infeasible":
            result.message = "no plan satisfies every limit"
        return result

    def _tie_break_by_cost(self, res, time_limit):
        """Second, lexicographic solve: the cheapest plan among those optimal for the first objective."""
        metric = OBJECTIVE_METRIC[self.objective]
        expr, sense = self.metric(metric), (">=" if self.objective == "quality" else "<=")
        best = res.incumbent_objective
        slack = TIE_BREAK_RELATIVE * max(1.0, abs(best))
        self.model.tie_break = pyo.Constraint(expr=expr >= best - slack if sense == ">=" else expr <= best + slack)
        primary = self.objective
        activate_objective(self.model, "cost")
        try:
            res2 = self._run(time_limit)
        finally:
            self.model.del_component(self.model.tie_break)
            activate_objective(self.model, primary)
        status2 = _status(res2)
        if status2 in ("optimal", "time_limit"):
            return res2, status2
        return self._run(time_limit), "optimal"  # the tie-break failed numerically: keep the first optimum

    def chosen(self) -> dict[str, int]:
        """The option each one-hot group of the loaded solution chose (``formulation.chosen``)."""
        return chosen(self.model)

    def chosen_plan(self) -> Plan:
        """The plan of the loaded solution (its one-hot groups, ``formulation.chosen_plan``)."""
        choice = self.chosen()
        plan, self._stages = chosen_plan(self.model, self.space, choice)
        self._chosen_vars = [self.model.choice_groups[name][i] for name, i in choice.items()]
        return plan

    def extract(self, result: SolveResult) -> None:
        """The loaded solution's plan, its metrics from the evaluator, and the MIP's own values of them; a
        solution that chooses no whole plan (numerical trouble) is an error result that says so."""
        m, space = self.model, self.space
        chosen = self.chosen()
        if "interval" not in chosen or "stage0.recipe" not in chosen or "stage0.hardware" not in chosen:
            result.status = "error"
            result.message = ("the solver returned a solution that chooses no whole plan (numerical trouble: the "
                              "instance's coefficients span too many orders of magnitude); check its rates and prices")
            return
        result.plan = self.chosen_plan()
        stages = self._stages
        result.student = result.plan.student if result.plan.student is not None else self.inst.student.preset
        result.metrics = self.evaluator.plan_metrics(result.plan)
        if self.scenarios is None:
            value = self.solver.value if isinstance(self.solver, ArrayHighs) else pyo.value
            result.mip_values = {k: value(getattr(m, k)) for k in ("cost_usd", "wall_hours", "quality", "forgetting_points")}
        else:
            result.mip_values = {f"expected_{k}": pyo.value(getattr(m, f"expected_{k}")) for k in OBJECTIVE_METRIC}
            result.mip_values["violations"] = pyo.value(m.violations)
            if hasattr(m, "cvar_cost"):
                result.mip_values["cvar_cost_usd"] = pyo.value(m.cvar_cost)
        result.big_m_breaches = [x for s, (r, h) in enumerate(stages) for x in big_m_breaches(space.slots[s], r, h)]


def _until(end: float | None) -> float | None:
    """The time limit of a run that must end by ``end`` (a ``time.perf_counter`` instant; None: none), at least 0.01 s."""
    return None if end is None else max(0.01, end - time.perf_counter())


def _status(res) -> str:
    tc = res.termination_condition
    if tc == TerminationCondition.convergenceCriteriaSatisfied:
        return "optimal"
    if tc in (TerminationCondition.provenInfeasible, TerminationCondition.infeasibleOrUnbounded):
        return "infeasible"
    if tc == TerminationCondition.maxTimeLimit:
        return "time_limit"
    return "error"


def solve(inst: Instance, time_limit: float | None = None, solver: str = DEFAULT_SOLVER) -> SolveResult:
    """Build and solve one job with ``solver`` (HiGHS by default); the plan's metrics come from the evaluator."""
    return PlanModel(inst, solver=solver).solve(time_limit)
