"""planopt: exact post-training plans (SFT, RL, on-policy distillation) by mixed-integer programming.

The import package ``planopt`` is the ``solver/`` folder (orchestration); the
model lives in ``planopt.models``. Typical use::

    import planopt
    result = planopt.solve("instances/qwen3-8b-math.json", budget_usd=50_000)
    result.plan, result.metrics.cost_usd, planopt.breakdown_frame(result)
"""

from planopt.models.costs import Metrics
from planopt.models.plan import Plan
from planopt.models.schema import Instance

from .api import breakdown_frame, evaluate_plan, solve_instance
from .errors import InputError
from .frontier import frontier_frame as frontier
from .instance import load_instance
from .portfolio import PortfolioResult, load_portfolio, solve_portfolio
from .risk import Risk
from .run import PlanModel, SolveResult
from .sweep import sweep_frame as sweep

solve = solve_instance
evaluate = evaluate_plan


def risk(source, plan, scenarios: int = 10_000, seed: int = 0) -> Risk:
    """A plan's metrics over ``scenarios`` of the uncertainty model (``Risk.to_dict()``, ``Risk.frame()``)."""
    from .risk import plan_risk
    inst = load_instance(source)
    return plan_risk(inst, plan if isinstance(plan, Plan) else Plan.from_dict(plan), scenarios, seed)

__all__ = ["solve", "evaluate", "load_instance", "breakdown_frame", "Instance", "Plan", "Metrics",
           "SolveResult", "PlanModel", "InputError", "frontier", "sweep",
           "solve_portfolio", "load_portfolio", "PortfolioResult", "risk", "Risk"]
