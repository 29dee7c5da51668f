"""planopt: exact post-training plans (SFT, RL, on-policy distillation) by mixed-integer programming.

The import package ``planopt`` is the ``solver/`` folder (orchestration); the
model lives in ``planopt.models``. Typical use::

    import planopt
    result = planopt.solve("instances/qwen3-8b-math.json", budget_usd=50_000)
    result.plan, result.metrics.cost_usd, planopt.breakdown_frame(result)

Names are imported on first use, so that a command line that needs no solver
(``planopt --help``, ``planopt schema``) does not pay for Pyomo and pandas.
"""

from __future__ import annotations

import importlib

# public name -> (module, attribute)
_EXPORTS = {
    "Metrics": ("planopt.models.cost.evaluator", "Metrics"),
    "Plan": ("planopt.models.schema.plan", "Plan"),
    "Instance": ("planopt.models.schema.instance", "Instance"),
    "solve": ("planopt.api", "solve_instance"),
    "evaluate": ("planopt.api", "evaluate_plan"),
    "breakdown_frame": ("planopt.api", "breakdown_frame"),
    "InputError": ("planopt.errors", "InputError"),
    "frontier": ("planopt.studies.frontier", "frontier_frame"),
    "load_instance": ("planopt.instance", "load_instance"),
    "PortfolioResult": ("planopt.portfolio.solve", "PortfolioResult"),
    "load_portfolio": ("planopt.portfolio.solve", "load_portfolio"),
    "solve_portfolio": ("planopt.portfolio.solve", "solve_portfolio"),
    "replay_schedule": ("planopt.portfolio.replay", "replay_schedule"),
    "Risk": ("planopt.uncertainty.risk", "Risk"),
    "risk": ("planopt.uncertainty.risk", "risk_of"),
    "track": ("planopt.api", "track_run"),
    "TrackResult": ("planopt.runs.track", "TrackResult"),
    "replan": ("planopt.api", "replan_run"),
    "ReplanResult": ("planopt.runs.replan", "ReplanResult"),
    "RunState": ("planopt.runs.state", "RunState"),
    "PlanModel": ("planopt.job.model", "PlanModel"),
    "SolveResult": ("planopt.job.model", "SolveResult"),
    "sweep": ("planopt.studies.sweep", "sweep_frame"),
    "confidence_sweep": ("planopt.studies.sweep", "chance_grid_frame"),
    "probability_frontier": ("planopt.studies.frontier", "probability_frontier_frame"),
}

__all__ = ["__version__", *_EXPORTS]


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("planopt")
    except PackageNotFoundError:  # run from a source tree that was not installed
        return "unknown"


def __getattr__(name: str):
    if name == "__version__":  # importlib.metadata costs 30 ms: only when asked
        globals()[name] = _version()
        return globals()[name]
    if name not in _EXPORTS:
        raise AttributeError(f"module 'planopt' has no attribute {name!r}")
    module, attribute = _EXPORTS[name]
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__():
    return sorted(__all__)
