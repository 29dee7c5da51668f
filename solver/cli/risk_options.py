"""The uncertainty options of ``planopt solve`` and ``planopt evaluate``.

- ``--scenarios N``: the plan's risk over N scenarios (percentiles, share of
  scenarios meeting each limit); with ``--confidence`` it is the size of the
  sample the chance-constrained model is built on (default 200).
- ``--confidence C`` (or ``constraints.confidence`` in the instance): the best
  plan that meets every limit in at least a share C of the scenarios.
- ``--cvar LEVEL``: minimise the CVaR of cost at LEVEL instead of its mean
  (with ``--confidence``).
- ``--seed S``: the scenario draw (default 0); ``--plot F``: the distributions
  with the limits drawn on them (PNG, SVG or PDF by extension).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from planopt.errors import InputError

SCENARIOS = typer.Option(None, "--scenarios", help="scenarios of the uncertainty model: a plan's risk, or the sample of --confidence (default 200)")
CONFIDENCE = typer.Option(None, "--confidence", help="share of scenarios in which every limit must hold (0-1): a chance-constrained plan")
SEED = typer.Option(0, "--seed", help="seed of the scenario draw")
CVAR = typer.Option(None, "--cvar", help="with --confidence: minimise CVaR of cost at this level (0-1) instead of expected cost")


def check_plot_path(plot: Path) -> None:
    """Refuse a ``--plot`` path that cannot be written, before any solve (``report.plots.check_plot_path``)."""
    from planopt.report.plots import check_plot_path as check
    check(plot)


def uses_scenarios(inst, scenarios: Optional[int], confidence: Optional[float]) -> bool:
    """Whether the command runs on scenarios: ``--scenarios`` or ``--confidence`` given, or a confidence in the
    instance."""
    return scenarios is not None or confidence is not None or inst.constraints.confidence is not None


def solve_with_scenarios(inst, scenarios: Optional[int], confidence: Optional[float], seed: int, cvar: Optional[float],
                         time_limit: Optional[float], sensitivity: bool, plot: Optional[Path], files=None):
    """A chance-constrained solve, or a point solve whose plan's risk is measured; the --plot goes through
    ``files`` (a checked ``OutputFiles``) when given."""
    from planopt.api import solve_instance
    from planopt.uncertainty.chance import DEFAULT_SCENARIOS, check_confidence
    from planopt.uncertainty.risk import check_scenarios, plan_risk
    if plot is not None and files is None:
        check_plot_path(plot)
    if confidence is not None:
        inst = inst.with_overrides(confidence=check_confidence(confidence))
    if scenarios is not None:
        check_scenarios(scenarios)
    from planopt.cli.clock import started_at  # the limit bounds the whole command
    result = solve_instance(inst, time_limit=time_limit, sensitivity=sensitivity, scenarios=scenarios, seed=seed, cvar=cvar,
                            started_at=started_at())
    if plot is not None and result.plan is not None:
        from planopt.report.risk import plot_risk
        risk = plan_risk(inst, result.plan, scenarios or DEFAULT_SCENARIOS, seed)
        if files is None:
            plot_risk(risk, plot, inst.name)
        else:
            files.write(plot, lambda path: plot_risk(risk, path, inst.name))
    return inst, result


def evaluate_risk(inst, plan, scenarios: Optional[int], seed: int, plot: Optional[Path], files=None):
    """The plan's risk over ``scenarios`` (None: REPORT_SCENARIOS, and --plot then needs --scenarios);
    the --plot goes through ``files`` (a checked ``OutputFiles``) when given."""
    if scenarios is None:
        if plot is not None:
            raise InputError("--plot: needs --scenarios (the picture is the risk distributions)")
        from planopt.uncertainty.risk import report_scenarios
        scenarios = report_scenarios(inst)
    from planopt.uncertainty.risk import plan_risk
    if plot is not None and files is None:
        check_plot_path(plot)
    risk = plan_risk(inst, plan, scenarios, seed)
    if plot is not None:
        from planopt.report.risk import plot_risk
        if files is None:
            plot_risk(risk, plot, inst.name)
        else:
            files.write(plot, lambda path: plot_risk(risk, path, inst.name))
    return risk
