r"""HiGHS fed from arrays: the plan model's rows read once, handed to HiGHS whole (issue 29 item 1).

The Pyomo model stays the formulation (every row is a Pyomo constraint, every test reads it); what this
module replaces is Pyomo's persistent interface, which walks each row's expression tree term by term
(``collect_vars_and_named_exprs``, then ``generate_standard_repn``) and adds rows one call at a time: at
:math:`10^8` plans that was 3.6–6 s of a 0.5 s HiGHS run (BENCHMARKS.md §1).

- **Reading a row.** The formulation writes its rows as flat ``LinearExpression`` objects (``linear.py``):
  their coefficient and variable lists are read as they are, one list extension per expression, and the
  column of each variable is one dict lookup. Sums, negations, monomials, products and quotients by a
  constant and named expressions are walked; anything else (a nonlinear term) is refused in one line.
- **Once per row.** A row is read the first time it is active and kept, with the constraint itself (so that its
  id is never reused while kept). A row whose expression holds a mutable parameter (the limits' right-hand
  sides, the scenarios' allowed count) is read again at each solve; so is an objective whose expression
  was replaced (``set_value``).
- **Fixed variables are columns** with both bounds at the fixed value, so fixing and freeing a slack
  (``diagnose.py``) or a recipe (``limits.recipe_within_limits``) changes bounds, not rows.
- **Persistent.** When the active rows are those of the last solve, only the bounds and the objective
  change (``changeRowsBounds``, ``changeColsBounds``, ``changeColsCost``); otherwise (a tie-break row, a
  tolerance cut) the whole matrix is handed over again from the kept rows (``passModel``, one call).

The results have the shape of ``pyomo.contrib.solver``'s (the attributes ``PlanModel`` reads). Tested
against Pyomo's own interface on every kind of plan model (``tests/solver/job/test_highs_arrays.py``).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np
import pyomo.core as pyo  # not pyomo.environ: its plugins cost every CLI call ~0.3 s unused (BENCHMARKS.md §1)
from pyomo.contrib.solver.common.results import SolutionStatus, TerminationCondition
from pyomo.core.expr.numeric_expr import (DivisionExpression, LinearExpression, MonomialTermExpression,
                                          NegationExpression, ProductExpression, SumExpression)
from pyomo.core.expr.numvalue import native_numeric_types

from planopt.job.highs_child import answer_of, run_stoppable
from planopt.models.formulation.linear import ArrayLinearExpression

# HiGHS's matrix and objective codes (highspy's MatrixFormat.kRowwise, ObjSense, HighsVarType)
ROWWISE, MINIMIZE, MAXIMIZE, CONTINUOUS, INTEGER = 2, 1, -1, 0, 1
# HiGHS's model status (``HighsModelStatus`` by name) -> the termination Pyomo's results carry
TERMINATION = {"kOptimal": TerminationCondition.convergenceCriteriaSatisfied,
               "kInfeasible": TerminationCondition.provenInfeasible,
               "kUnboundedOrInfeasible": TerminationCondition.infeasibleOrUnbounded,
               "kUnbounded": TerminationCondition.infeasibleOrUnbounded,
               "kTimeLimit": TerminationCondition.maxTimeLimit, "kInterrupt": TerminationCondition.interrupted}


class NotLinear(ValueError):
    """A row or objective the array hand-over cannot read as linear."""


@dataclass
class Row:
    """One linear form read from the model: ``constant + coefs @ columns``; ``dynamic`` when it holds a
    mutable parameter (read again at each solve)."""

    columns: np.ndarray
    coefs: np.ndarray
    constant: float
    dynamic: bool
    lower: float = 0.0  # the row's bounds less its constant (set by ``ArrayHighs._row``)
    upper: float = 0.0


@dataclass
class Problem:
    """The model as it stands: its active rows (by id, in order) and their bounds, the columns' bounds, the
    objective's costs, sense and constant."""

    ids: list[int]
    rows: list[Row]
    row_lower: np.ndarray
    row_upper: np.ndarray
    col_lower: np.ndarray
    col_upper: np.ndarray
    cost: np.ndarray
    sense: int
    offset: float


class ArrayHighs:
    """A persistent HiGHS of one Pyomo model, handed over from arrays (module docstring).

    ``start`` (a callable returning ``[(var, value), ...]`` or None) is asked just before each run, as
    ``model.HighsWithStart`` did: HiGHS checks the start and discards it when infeasible, so it only ever gives an
    incumbent and the proven optimum is unchanged."""

    start: Optional[Callable[[], Optional[list]]] = None
    # A sparse start for the next run only: (columns, values), which HiGHS completes by a sub-MIP (the portfolio's
    # partial plans); the columns are :meth:`column_of`'s.
    pending: Optional[tuple] = None
    # Ctrl-C cancels a run (highspy's ``HandleKeyboardInterrupt``: the run in a thread of its own, as Pyomo's
    # persistent interface makes it); off for single jobs, whose runs are short.
    interruptible = False

    def __init__(self) -> None:
        self._model = None
        self._h = None
        self._col: dict[int, int] = {}         # id(var) -> column
        self._vars: list = []                 # column -> var
        self._rows: dict[int, tuple] = {}     # id(con) -> (con, expr, Row)
        self._objective: tuple | None = None  # (objective, expr, Row)
        self._passed: list[int] | None = None  # the active rows handed over last, in order
        self._row_bounds = None
        self._reread = False
        self._mip = False
        self._loaded: np.ndarray | None = None  # the column values last loaded (``load``)
        self._values_of: dict[int, tuple] = {}  # id(expr) -> (expr, its inner expression, Row) (``value``)

    def available(self) -> bool:
        """Whether highspy is installed (it is a dependency of planopt)."""
        try:
            import highspy  # noqa: F401
        except ImportError:
            return False
        return True

    # --- reading the model -------------------------------------------------------------------------
    def column_of(self, var) -> int:
        """The HiGHS column of ``var`` (a new one at the end if no row has held it yet)."""
        return self._column(var)

    def _column(self, var) -> int:
        n = self._col.get(id(var))
        if n is None:
            n = self._col[id(var)] = len(self._vars)
            self._vars.append(var)
        return n

    def _linear(self, expr) -> Row:
        """``expr`` as one :class:`Row` (duplicate columns summed)."""
        variables: list = []
        coefs: list = []
        state = {"constant": 0.0, "dynamic": False}
        _collect(expr, 1.0, variables, coefs, state)
        col = self._col
        missing = [v for v in variables if id(v) not in col]
        for v in missing:
            self._column(v)
        listed = [col[id(v)] for v in variables]
        columns = np.array(listed, dtype=np.int64)
        values = np.asarray(coefs, dtype=float)
        if len(set(listed)) < len(listed):  # a set, not np.unique: most rows are short (a portfolio's 47,000)
            columns, inverse = np.unique(columns, return_inverse=True)
            values = np.bincount(inverse, weights=values, minlength=len(columns))
        nonzero = values != 0.0  # HiGHS drops zeros itself, with a warning; a dynamic row keeps its columns
        if not state["dynamic"] and not nonzero.all():  # (a parameter's coefficient may be 0 now, not later)
            columns, values = columns[nonzero], values[nonzero]
        return Row(columns, values, float(state["constant"]), bool(state["dynamic"]))

    def _row(self, con) -> Row:
        """The kept row of ``con``, or it read now (a new row, a dynamic one, or one whose expression was replaced)."""
        kept = self._rows.get(id(con))
        expr = con.expr
        if kept is not None and kept[1] is expr and not kept[2].dynamic:
            return kept[2]
        import highspy
        row = self._linear(con.body)
        lower, upper = con.lower, con.upper
        row.dynamic = row.dynamic or not (_constant(lower) and _constant(upper))
        row.lower = -highspy.kHighsInf if lower is None else pyo.value(lower) - row.constant
        row.upper = highspy.kHighsInf if upper is None else pyo.value(upper) - row.constant
        if kept is not None and not kept[2].dynamic:
            self._reread = True  # a replaced expression: its coefficients are new, hand the matrix over again
        self._rows[id(con)] = (con, expr, row)
        return row

    def _objective_row(self, model) -> tuple[Row, int]:
        active = list(model.component_data_objects(pyo.Objective, active=True))
        if len(active) != 1:
            raise ValueError(f"the model has {len(active)} active objectives; HiGHS solves exactly one")
        obj = active[0]
        kept = self._objective
        if kept is None or kept[0] is not obj or kept[1] is not obj.expr or kept[2].dynamic:
            self._objective = (obj, obj.expr, self._linear(obj.expr))
        return self._objective[2], (MAXIMIZE if obj.sense == pyo.maximize else MINIMIZE)

    def _columns_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        import highspy
        inf = highspy.kHighsInf
        lower = np.empty(len(self._vars))
        upper = np.empty(len(self._vars))
        for n, v in enumerate(self._vars):
            if v.fixed:
                lower[n] = upper[n] = v.value
            else:
                lb, ub = v.lb, v.ub
                lower[n] = -inf if lb is None else lb
                upper[n] = inf if ub is None else ub
        return lower, upper

    # --- handing over --------------------------------------------------------------------------------
    def _read(self, model) -> "Problem":
        """``model`` as it stands, from the kept rows (read now where new, dynamic or replaced)."""
        if model is not self._model:
            start = self.start
            self.__init__()
            self.start, self._model = start, model
        cons = list(model.component_data_objects(pyo.Constraint, active=True))
        rows = [self._row(c) for c in cons]
        objective, sense = self._objective_row(model)
        row_lower = np.fromiter((r.lower for r in rows), dtype=float, count=len(rows))
        row_upper = np.fromiter((r.upper for r in rows), dtype=float, count=len(rows))
        col_lower, col_upper = self._columns_bounds()
        cost = np.zeros(len(self._vars))
        cost[objective.columns] = objective.coefs
        return Problem([id(c) for c in cons], rows, row_lower, row_upper, col_lower, col_upper, cost, sense,
                       objective.constant)

    def _integrality(self) -> np.ndarray:
        integrality = np.array([INTEGER if v.is_integer() else CONTINUOUS for v in self._vars], dtype=np.int32)
        self._mip = bool((integrality != CONTINUOUS).any())
        return integrality

    def _hand_over(self, model) -> None:
        """Hand ``model`` as it stands to HiGHS: its changed bounds and objective when the active rows are those of
        the last run, else the whole matrix from the kept rows."""
        import highspy
        self._reread = False
        p = self._read(model)
        n_c, h = len(self._vars), self._h
        if h is not None and not self._reread and p.ids == self._passed and h.getNumCol() == n_c:
            changed = np.flatnonzero((p.row_lower != self._row_bounds[0]) | (p.row_upper != self._row_bounds[1]))
            if len(changed):
                h.changeRowsBounds(len(changed), changed.astype(np.int32), p.row_lower[changed], p.row_upper[changed])
            every = np.arange(n_c, dtype=np.int32)
            h.changeColsBounds(n_c, every, p.col_lower, p.col_upper)
            h.changeColsCost(n_c, every, p.cost)
            h.changeObjectiveSense(highspy.ObjSense.kMaximize if p.sense == MAXIMIZE else highspy.ObjSense.kMinimize)
            h.changeObjectiveOffset(p.offset)
            for n, r in enumerate(p.rows):
                if r.dynamic:  # a mutable parameter may have moved a coefficient too
                    for c, v in zip(r.columns.tolist(), r.coefs.tolist()):
                        h.changeCoeff(n, c, v)
            self._row_bounds = (p.row_lower, p.row_upper)
            return
        if h is None:
            from pyomo.common.tee import capture_output
            with capture_output(capture_fd=True):  # HiGHS prints its banner to stdout on construction
                h = self._h = highspy.Highs()
            h.setOptionValue("output_flag", False)
        status = h.passModel(*self._pass_arguments(p).values())
        if status == highspy.HighsStatus.kError:
            raise RuntimeError("HiGHS refused the model handed over (passModel)")
        self._passed, self._row_bounds = p.ids, (p.row_lower, p.row_upper)

    def _pass_arguments(self, p: "Problem") -> dict:
        """``passModel``'s arguments, in its order, for problem ``p`` (the whole matrix, row-wise)."""
        start = np.zeros(len(p.rows) + 1, dtype=np.int64)
        np.cumsum([len(r.columns) for r in p.rows], out=start[1:])
        index = np.concatenate([r.columns for r in p.rows]).astype(np.int32) if p.rows else np.zeros(0, dtype=np.int32)
        value = np.concatenate([r.coefs for r in p.rows]) if p.rows else np.zeros(0)
        return {"num_col": len(self._vars), "num_row": len(p.rows), "num_nz": int(start[-1]), "a_format": ROWWISE,
                "sense": p.sense, "offset": p.offset, "col_cost": p.cost, "col_lower": p.col_lower,
                "col_upper": p.col_upper, "row_lower": p.row_lower, "row_upper": p.row_upper,
                "a_start": start[:-1].astype(np.int32), "a_index": index, "a_value": value,
                "integrality": self._integrality()}

    # --- solving -------------------------------------------------------------------------------------------
    def solve(self, model, time_limit: Optional[float], options: dict, log: list,
              stoppable: bool = False) -> "ArrayResults":
        """One HiGHS run of ``model`` as it stands, with ``options`` (HiGHS option names) and ``time_limit``; its log
        to the streams ``log`` (none: no log; HiGHS never writes to stdout). ``time_limit`` counts from this call:
        the hand-over and the start are inside it, HiGHS gets what they leave (at least a millisecond).
        ``stoppable`` (with a time limit): the run is made in a child process killed at the limit
        (``highs_child.py``), for a run HiGHS may not stop in time itself."""
        began = time.perf_counter()
        if stoppable and time_limit is not None:
            return self._solve_in_child(model, began + float(time_limit), options, log)
        import highspy
        if self._h is not None:  # HiGHS warns on stdout about what it is handed: quiet until the run
            self._h.setOptionValue("output_flag", False)
        self._hand_over(model)
        h = self._h
        for name, value in options.items():
            h.setOptionValue(name, value)
        full = self._start_values()
        if full is not None:
            solution = highspy.HighsSolution()
            solution.col_value = full.tolist()
            solution.value_valid = True
            h.setOptionValue("output_flag", False)  # HiGHS prints a warning when it rejects a start
            h.setSolution(solution)
        if self.pending is not None:
            index, values = self.pending
            self.pending = None
            if len(index):  # an empty start makes HiGHS print a warning on stdout
                h.setSolution(len(index), np.asarray(index, dtype=np.int32), np.asarray(values, dtype=float))
        if h.HandleKeyboardInterrupt != self.interruptible:
            h.HandleKeyboardInterrupt = self.interruptible
        left = None if time_limit is None else max(1e-3, float(time_limit) - (time.perf_counter() - began))
        h.setOptionValue("time_limit", highspy.kHighsInf if left is None else left)
        h.setOptionValue("output_flag", bool(log))
        if log:
            from pyomo.common.tee import TeeStream, capture_output
            h.setOptionValue("log_to_console", True)
            with capture_output(output=TeeStream(*log), capture_fd=True):
                h.run()
        else:
            h.run()
        return ArrayResults(self, answer_of(h))

    def _start_values(self) -> Optional[np.ndarray]:
        """The start's column values (the columns it does not name at 0), or None without a start."""
        values = self.start() if self.start is not None else None
        col = self._col
        pairs = [(col[id(v)], x) for v, x in values or [] if id(v) in col]
        if not pairs:
            return None
        full = np.zeros(len(self._vars))
        idx, vals = zip(*pairs)
        full[list(idx)] = vals
        return full

    def _solve_in_child(self, model, deadline: float, options: dict, log: list) -> "ArrayResults":
        """The run of :meth:`solve` in a child process, by ``deadline`` (``time.perf_counter()``); the process's
        own HiGHS keeps the model it had (handed over again in full next time a replaced row was read here)."""
        self._reread = False
        p = self._read(model)
        if self._reread:
            self._passed = None
        partial, self.pending = self.pending, None   # a partial start (HiGHS completes it), as ``solve`` hands it
        if partial is not None and not len(partial[0]):
            partial = None
        problem = {**self._pass_arguments(p), "start": self._start_values(),
                   "partial": None if partial is None else (np.asarray(partial[0], dtype=np.int32),
                                                            np.asarray(partial[1], dtype=float))}
        return ArrayResults(self, run_stoppable(problem, options, deadline, log))

    def load(self, values) -> None:
        """Put column values in the model's variables (fixed ones keep theirs)."""
        for v, x in zip(self._vars, values):
            if not v.fixed:
                v.set_value(x, skip_validation=True)
        self._loaded = np.array([v.value if v.value is not None else 0.0 for v in self._vars], dtype=float)

    def value(self, expr) -> float:
        """The value of linear ``expr`` at the loaded solution, from its row (read once per expression, as the
        rows are): Pyomo's ``value`` walks a named expression's whole tree at each call, which cost a staged
        frontier a fifth of its time (BENCHMARKS.md §13)."""
        loaded = self._loaded
        kept = self._values_of.get(id(expr))
        inner = expr.expr if expr.is_named_expression_type() else expr
        if kept is None or kept[1] is not inner or kept[2].dynamic:
            kept = self._values_of[id(expr)] = (expr, inner, self._linear(expr))
        row = kept[2]
        if loaded is None or (len(row.columns) and row.columns.max() >= len(loaded)):
            return pyo.value(expr)  # a column no run has seen: Pyomo's own walk
        return float(row.constant + row.coefs @ loaded[row.columns])


class ArrayResults:
    """One run's answer in the shape of ``pyomo.contrib.solver``'s results (the attributes ``PlanModel`` reads),
    from ``highs_child.answer_of`` (a run in process or in a child)."""

    def __init__(self, solver: ArrayHighs, answer: dict) -> None:
        self.termination_condition = TERMINATION.get(answer["status"], TerminationCondition.unknown)
        has = answer["has_solution"]
        if not has:
            self.solution_status = SolutionStatus.noSolution
        elif self.termination_condition == TerminationCondition.convergenceCriteriaSatisfied:
            self.solution_status = SolutionStatus.optimal
        else:
            self.solution_status = SolutionStatus.feasible
        self.incumbent_objective = _finite(answer["objective"]) if has else None
        self.objective_bound = _finite(answer["dual_bound"]) if solver._mip else self.incumbent_objective
        self._values = answer["values"] if has else None
        self._solver = solver
        self.solution_loader = self

    def load_vars(self) -> None:
        """Put the solution's values in the model's variables."""
        if self._values is None:
            raise RuntimeError("the run has no solution to load")
        self._solver.load(self._values)


def _finite(x) -> Optional[float]:
    x = float(x)
    return x if math.isfinite(x) and abs(x) < 1e300 else None


def _constant(bound) -> bool:
    return bound is None or type(bound) in native_numeric_types or bound.is_constant()


def _collect(expr, scale: float, variables: list, coefs: list, state: dict) -> None:
    """Add ``scale * expr`` to the linear form (``variables``, ``coefs``, ``state['constant']``); marks the form
    dynamic when a mutable parameter is read (its value is taken now)."""
    kind = type(expr)
    if kind in native_numeric_types:
        state["constant"] += scale * expr
        return
    if kind is LinearExpression or kind is ArrayLinearExpression:
        _collect_flat(expr, scale, variables, coefs, state)
        return
    if kind is SumExpression:
        for arg in expr.args:
            _collect(arg, scale, variables, coefs, state)
        return
    if kind is NegationExpression:
        _collect(expr.args[0], -scale, variables, coefs, state)
        return
    if kind is MonomialTermExpression:
        coef, var = expr.args
        _collect(var, scale * _value(coef, state), variables, coefs, state)
        return
    if expr.is_variable_type():
        variables.append(expr)
        coefs.append(scale)
        return
    if expr.is_named_expression_type():
        _collect(expr.expr, scale, variables, coefs, state)
        return
    if not expr.is_potentially_variable():  # a parameter or an expression of them
        state["constant"] += scale * _value(expr, state)
        return
    if kind is ProductExpression:
        a, b = expr.args
        if _is_fixed_number(a):
            _collect(b, scale * _value(a, state), variables, coefs, state)
            return
        if _is_fixed_number(b):
            _collect(a, scale * _value(b, state), variables, coefs, state)
            return
    if kind is DivisionExpression and _is_fixed_number(expr.args[1]):
        _collect(expr.args[0], scale / _value(expr.args[1], state), variables, coefs, state)
        return
    raise NotLinear(f"the array hand-over reads linear rows only; got {kind.__name__}: {str(expr)[:80]}")


def _collect_flat(expr: LinearExpression, scale: float, variables: list, coefs: list, state: dict) -> None:
    """:func:`_collect` of a flat linear expression: its lists read whole (an :class:`ArrayLinearExpression`'s as it
    was given, never as per-term objects)."""
    lists = expr.lists if type(expr) is ArrayLinearExpression else None
    if lists is not None:
        const, lin_coefs, lin_vars = lists
    else:
        const, lin_coefs, lin_vars = expr.constant, expr.linear_coefs, expr.linear_vars
    try:
        values = np.asarray(lin_coefs, dtype=float)
    except (TypeError, ValueError):  # a coefficient that is a Pyomo parameter or expression: its value now
        state["dynamic"] = True
        values = np.array([pyo.value(c) for c in lin_coefs], dtype=float)
    variables.extend(lin_vars)
    coefs.extend((values * scale).tolist() if scale != 1.0 else values.tolist())
    if type(const) not in native_numeric_types:
        state["dynamic"] = state["dynamic"] or not const.is_constant()
        const = pyo.value(const)
    state["constant"] += scale * const


def _is_fixed_number(x) -> bool:
    return type(x) in native_numeric_types or not x.is_potentially_variable()


def _value(x, state: dict) -> float:
    if type(x) in native_numeric_types:
        return x
    if not x.is_constant():
        state["dynamic"] = True
    return pyo.value(x)
