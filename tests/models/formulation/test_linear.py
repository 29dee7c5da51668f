"""Linear expressions kept as lists (``formulation/linear.py``): Pyomo's own answers, no per-term objects until walked."""

from __future__ import annotations

import pickle

import pyomo.core as pyo
import pytest
from pyomo.core.expr.numeric_expr import LinearExpression
from pyomo.repn import generate_standard_repn

from planopt.models.formulation.linear import ArrayLinearExpression, lazy_terms, linear


def _model():
    m = pyo.ConcreteModel()
    m.x = pyo.Var(initialize=2.0)
    m.y = pyo.Var(initialize=3.0)
    m.p = pyo.Param(mutable=True, initialize=5.0)
    return m


def test_linear_is_pyomos_own_class_outside_lazy_terms_and_the_list_class_inside():
    m = _model()
    assert type(linear([1.0], [m.x])) is LinearExpression
    with lazy_terms(True):
        assert type(linear([1.0], [m.x])) is ArrayLinearExpression
        with lazy_terms(False):
            assert type(linear([1.0], [m.x])) is LinearExpression
    assert type(linear([1.0], [m.x])) is LinearExpression


def test_no_per_term_object_is_made_until_the_args_are_walked():
    m = _model()
    with lazy_terms(True):
        e = linear([1.5, 2.0], [m.x, m.y], 1.0)
    assert e._made is None and e.linear_coefs == [1.5, 2.0] and e.constant == 1.0 and e._made is None
    assert e.nargs() == 3 and e._made is None
    assert pyo.value(e) == pytest.approx(10.0) and e._made is not None


@pytest.mark.parametrize("build", [
    lambda m, e: e,
    lambda m, e: e + 3 * m.x + m.p,
    lambda m, e: 2 * e - m.y,
    lambda m, e: e + linear([4.0], [m.y]),
])
def test_every_pyomo_reading_of_it_equals_that_of_pyomos_class(build):
    m = _model()
    plain = build(m, linear([1.5, 2.0], [m.x, m.y], 1.0))
    with lazy_terms(True):
        lazy = build(m, linear([1.5, 2.0], [m.x, m.y], 1.0))
    assert pyo.value(lazy) == pytest.approx(pyo.value(plain))
    a, b = generate_standard_repn(lazy), generate_standard_repn(plain)
    assert dict(zip(map(id, a.linear_vars), a.linear_coefs)) == pytest.approx(dict(zip(map(id, b.linear_vars), b.linear_coefs)))
    assert a.constant == pytest.approx(b.constant)
    m.c = pyo.Constraint(expr=lazy <= 100)
    assert pyo.value(m.clone().c.body) == pytest.approx(pyo.value(plain))
    assert pyo.value(pickle.loads(pickle.dumps(m)).c.body) == pytest.approx(pyo.value(plain))
