"""Linear expressions from coefficient lists, built once (no per-term operator overloading).

:class:`ArrayLinearExpression` is Pyomo's ``LinearExpression`` holding its coefficients and variables as the two
lists it was given. Pyomo 6's own class makes one ``MonomialTermExpression`` object per term at construction (6
million of them, 8.3 s of a 10.8 s build, in the chance-constrained model of ``qwen3-32b-sft-then-rl.json``);
this one makes them only when something walks the expression's ``args`` (Pyomo's ``value``, its writers, other
solvers' interfaces), and the array hand-over to HiGHS (``planopt.job.highs_arrays``) reads the lists and never
does. It is a ``LinearExpression`` to every ``isinstance`` test and to Pyomo's standard repn (``_register``), but
the LP/NL writers and other solvers' interfaces dispatch on the exact class and do not know it: ``linear`` makes
one only inside ``lazy_terms(True)``, which ``PlanModel`` opens around the build of a model solved by the array
hand-over; every other model (another solver, portfolios, rows added later) gets Pyomo's own class.
"""

from __future__ import annotations

import contextlib
import contextvars

from pyomo.core.expr.numeric_expr import LinearExpression, MonomialTermExpression

_LAZY = contextvars.ContextVar("planopt_lazy_terms", default=False)


@contextlib.contextmanager
def lazy_terms(enabled: bool):
    """Inside it, ``linear`` makes :class:`ArrayLinearExpression` objects when ``enabled`` (module docstring)."""
    token = _LAZY.set(bool(enabled))
    try:
        yield
    finally:
        _LAZY.reset(token)


class ArrayLinearExpression(LinearExpression):
    """:math:`c_0 + \\sum_j c_j x_j` kept as ``(constant, coefs, variables)``; ``args`` made on first use."""

    __slots__ = ("_const", "_coef_list", "_var_list", "_made")

    def __init__(self, args=None, constant=None, linear_coefs=None, linear_vars=None):
        if args is not None:  # Pyomo's own way of making a node from args (operators, cloning): as the base class
            self._const = self._coef_list = self._var_list = None
            LinearExpression.__init__(self, args)
            return
        self._const = 0.0 if constant is None else constant
        self._coef_list = [] if linear_coefs is None else linear_coefs
        self._var_list = [] if linear_vars is None else linear_vars
        if len(self._coef_list) != len(self._var_list):
            raise ValueError("ArrayLinearExpression: as many coefficients as variables")
        self._made = None
        self._nargs = len(self._var_list) + (1 if self._const else 0)

    @property
    def _args_(self):
        if self._made is None:
            made = [self._const] if self._const else []
            made.extend(map(MonomialTermExpression, zip(self._coef_list, self._var_list)))
            self._made = made
        return self._made

    @_args_.setter
    def _args_(self, value):
        self._made = value

    @property
    def lists(self):
        """``(constant, coefs, variables)`` as given, or None for a node Pyomo made from args."""
        return None if self._coef_list is None else (self._const, self._coef_list, self._var_list)

    @property
    def constant(self):
        """The constant term, from the given lists when there are any."""
        return self._const if self._coef_list is not None else LinearExpression.constant.fget(self)

    @property
    def linear_coefs(self):
        """The coefficients, as given when there are lists (no per-term objects made)."""
        return self._coef_list if self._coef_list is not None else LinearExpression.linear_coefs.fget(self)

    @property
    def linear_vars(self):
        """The variables, as given when there are lists (no per-term objects made)."""
        return self._var_list if self._coef_list is not None else LinearExpression.linear_vars.fget(self)


def _register() -> None:
    """Walkers that dispatch on the exact class (standard repn, the LP/NL writers' linear repn) treat
    :class:`ArrayLinearExpression` as ``LinearExpression``."""
    from pyomo.repn import standard_repn
    for table in ("_repn_collectors", "_linear_repn_collectors"):
        collectors = getattr(standard_repn, table, None)
        if collectors is not None and LinearExpression in collectors:
            collectors[ArrayLinearExpression] = collectors[LinearExpression]


_register()


def linear(coefs, variables, constant: float = 0.0) -> LinearExpression:
    """:math:`\\text{constant} + \\sum_j \\text{coefs}_j \\cdot \\text{variables}_j` (``coefs`` a list or numpy array);
    an :class:`ArrayLinearExpression` inside ``lazy_terms(True)``."""
    coefs = coefs.tolist() if hasattr(coefs, "tolist") else list(coefs)
    kind = ArrayLinearExpression if _LAZY.get() else LinearExpression
    return kind(constant=float(constant), linear_coefs=coefs, linear_vars=list(variables))


def flattened(expr) -> LinearExpression:
    """``expr`` (a linear expression built from sums of other expressions) as one flat linear expression:
    Pyomo re-walks a nested sum on every objective switch and every update of a persistent solver, a flat
    one it reads at once (the staged and candidate models sum their blocks' expressions)."""
    from pyomo.repn import generate_standard_repn
    repn = generate_standard_repn(expr, compute_values=True, quadratic=False)
    if not repn.is_linear():
        raise ValueError("flattened: the expression is not linear")
    return linear(list(repn.linear_coefs), list(repn.linear_vars), float(repn.constant or 0.0))
