"""Linear expressions from coefficient lists, built once (no per-term operator overloading)."""

from __future__ import annotations

from pyomo.core.expr.numeric_expr import LinearExpression


def linear(coefs, variables, constant: float = 0.0) -> LinearExpression:
    """:math:`\\text{constant} + \\sum_j \\text{coefs}_j \\cdot \\text{variables}_j` (``coefs`` a list or numpy array)."""
    coefs = coefs.tolist() if hasattr(coefs, "tolist") else list(coefs)
    return LinearExpression(constant=float(constant), linear_coefs=coefs, linear_vars=list(variables))


def flattened(expr) -> LinearExpression:
    """``expr`` (a linear expression built from sums of other expressions) as one flat linear expression:
    Pyomo re-walks a nested sum on every objective switch and every update of a persistent solver, a flat
    one it reads at once (the staged and candidate models sum their blocks' expressions)."""
    from pyomo.repn import generate_standard_repn
    repn = generate_standard_repn(expr, compute_values=True, quadratic=False)
    if not repn.is_linear():
        raise ValueError("flattened: the expression is not linear")
    return linear(list(repn.linear_coefs), list(repn.linear_vars), float(repn.constant or 0.0))
