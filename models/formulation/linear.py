"""Linear expressions from coefficient lists, built once (no per-term operator overloading)."""

from __future__ import annotations

from pyomo.core.expr.numeric_expr import LinearExpression


def linear(coefs, variables, constant: float = 0.0) -> LinearExpression:
    """:math:`\\text{constant} + \\sum_j \\text{coefs}_j \\cdot \\text{variables}_j` (``coefs`` a list or numpy array)."""
    coefs = coefs.tolist() if hasattr(coefs, "tolist") else list(coefs)
    return LinearExpression(constant=float(constant), linear_coefs=coefs, linear_vars=list(variables))
