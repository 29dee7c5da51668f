"""MIP solvers Pyomo runs as programs: CBC (``cbc``) and GLPK (``glpsol``), behind the results that
``PlanModel`` reads from Pyomo's newer solver interfaces.

Pyomo drives these two only through its older interface (``pyomo.opt.SolverFactory``): it writes the
model as an LP file, runs the program and reads its solution back. ``ShellSolver.solve`` does that
with the project's gap and time limit and answers a ``ShellResults``: the termination condition and
solution status of ``pyomo.contrib.solver`` (mapped from the older ones), the incumbent and bound, and a
``solution_loader`` whose ``load_vars`` puts the solution in the model. Nothing is loaded before it is
asked for, as with the newer interfaces (``load_solutions=False``).

CBC's preprocessing may call a feasible model infeasible ("Pre-processing says infeasible or unbounded":
coin-or/Cbc issues 737, 740, 747 and 749), and does so on this project's models when its time limit stops the
cut generators (``qwen3-32b-agentic-rl.json`` at a 1 ms limit under load: "Cut generators found to be
infeasible!" in 1 of 6 runs, measured 2026-12-07). So an infeasible verdict of CBC is checked by a second run
without preprocessing, in the time left; with none left the run counts as stopped at its limit, with no plan.

The solver's log goes to stderr under ``-v`` (the older interface writes it to stdout, which would break
``--json``), nowhere otherwise.
"""

from __future__ import annotations

import contextlib
import math
import shutil
import sys
import time
from dataclasses import dataclass
from typing import Optional

import pyomo.environ as pyo
from pyomo.contrib.solver.common.results import SolutionStatus, TerminationCondition


@dataclass(frozen=True)
class ShellSpec:
    """One solver run as a program: the program's name, its relative-gap option and how to install it."""

    program: str
    gap_option: str
    install: str


SHELL_SOLVERS = {
    "cbc": ShellSpec("cbc", "ratio", "Debian/Ubuntu: apt-get install coinor-cbc"),
    "glpk": ShellSpec("glpsol", "mipgap", "Debian/Ubuntu: apt-get install glpk-utils"),
}


def installed(name: str) -> bool:
    """Whether the program of shell solver ``name`` is on PATH (and Pyomo can run it)."""
    return shutil.which(SHELL_SOLVERS[name].program) is not None


# CBC's least time limit, seconds (what ``timelimit`` was floored at before; a re-check needs as much left).
MIN_CBC_RECHECK_S = 0.01


class ShellResults:
    """A shell solver's answer in the shape of ``pyomo.contrib.solver``'s results (the attributes PlanModel reads)."""

    def __init__(self, model: pyo.ConcreteModel, results) -> None:
        from pyomo.opt import SolverStatus, TerminationCondition as Legacy
        self._model, self._results = model, results
        legacy = results.solver.termination_condition
        has_solution = len(results.solution) > 0 and results.solver.status in (SolverStatus.ok, SolverStatus.warning,
                                                                                  SolverStatus.aborted)
        if legacy == Legacy.optimal:
            self.termination_condition = TerminationCondition.convergenceCriteriaSatisfied
        elif legacy in (Legacy.infeasible, Legacy.invalidProblem):
            self.termination_condition, has_solution = TerminationCondition.provenInfeasible, False
        elif legacy in (Legacy.infeasibleOrUnbounded, Legacy.unbounded):
            self.termination_condition, has_solution = TerminationCondition.infeasibleOrUnbounded, False
        elif legacy in (Legacy.maxTimeLimit, Legacy.maxIterations, Legacy.maxEvaluations):
            self.termination_condition = TerminationCondition.maxTimeLimit
        elif legacy == Legacy.intermediateNonInteger:  # CBC stopped at its limit before any integer solution: the
            # values it returns are a relaxation's, no plan (read as one, they were "numerical trouble")
            self.termination_condition, has_solution = TerminationCondition.maxTimeLimit, False
        else:
            self.termination_condition = TerminationCondition.unknown
        if not has_solution:
            self.solution_status = SolutionStatus.noSolution
        elif self.termination_condition == TerminationCondition.convergenceCriteriaSatisfied:
            self.solution_status = SolutionStatus.optimal
        else:
            self.solution_status = SolutionStatus.feasible
        self.incumbent_objective = self._incumbent() if has_solution else None
        self.objective_bound = self._bound()
        self.solution_loader = self

    def stopped_at_limit(self) -> "ShellResults":
        """This answer read as a run stopped at its time limit with no plan (a verdict that could not be checked)."""
        self.termination_condition, self.solution_status = TerminationCondition.maxTimeLimit, SolutionStatus.noSolution
        self.incumbent_objective = None
        return self

    def _objective(self):
        return next(self._model.component_data_objects(pyo.Objective, active=True))

    def _incumbent(self) -> Optional[float]:
        values = [v.get("Value") for v in self._results.solution(0).objective.values()]
        value = next((v for v in values if v is not None), None)
        return None if value is None or not math.isfinite(value) else float(value)

    def _bound(self) -> Optional[float]:
        problem = self._results.problem
        bound = problem.lower_bound if self._objective().sense == pyo.minimize else problem.upper_bound
        try:
            bound = float(bound)
        except (TypeError, ValueError):
            return None
        return bound if math.isfinite(bound) else None

    def load_vars(self) -> None:
        """Put the solution's values in the model's variables."""
        self._model.solutions.load_from(self._results)


class ShellSolver:
    """CBC or GLPK through Pyomo's older interface, solved as ``PlanModel`` solves (``run_solver``)."""

    def __init__(self, name: str) -> None:
        from pyomo.opt import SolverFactory
        self.name, self.spec = name, SHELL_SOLVERS[name]
        self._solver = SolverFactory(name)

    def available(self) -> bool:
        """Whether the program is installed and runs."""
        return installed(self.name) and bool(self._solver.available(exception_flag=False))

    def solve(self, model: pyo.ConcreteModel, time_limit: Optional[float], rel_gap: float, log: list) -> ShellResults:
        """One run: the relative gap, the time limit (GLPK's in whole seconds, at least one) and the log to ``log``;
        CBC's infeasible verdict checked without preprocessing (the module docstring)."""
        start = time.monotonic()
        out = self._run(model, time_limit, {self.spec.gap_option: rel_gap}, log)
        infeasible = (TerminationCondition.provenInfeasible, TerminationCondition.infeasibleOrUnbounded)
        if self.name != "cbc" or out.termination_condition not in infeasible:
            return out
        left = None if time_limit is None else time_limit - (time.monotonic() - start)
        if left is not None and left < MIN_CBC_RECHECK_S:
            return out.stopped_at_limit()
        return self._run(model, left, {self.spec.gap_option: rel_gap, "preprocess": "off"}, log)

    def _run(self, model: pyo.ConcreteModel, time_limit: Optional[float], options: dict, log: list) -> ShellResults:
        limit = None
        if time_limit is not None:
            limit = max(1, math.ceil(time_limit)) if self.name == "glpk" else max(MIN_CBC_RECHECK_S, time_limit)
        redirect = contextlib.redirect_stdout(sys.stderr) if log else contextlib.nullcontext()
        with redirect:
            results = self._solver.solve(model, load_solutions=False, tee=bool(log), timelimit=limit, options=options)
        return ShellResults(model, results)
