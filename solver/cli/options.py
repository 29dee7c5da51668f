"""Options shared by several commands: the objective, the limit overrides, ``--json``,
exit codes, and how a single-job result is printed."""

from __future__ import annotations

from enum import Enum
from pathlib import Path

import typer

from planopt.cli.output import emit_json

EXIT = {"optimal": 0, "infeasible": 3, "time_limit": 4, "error": 1}


class ObjectiveName(str, Enum):
    """The objectives ``--objective`` accepts."""

    cost = "cost"
    quality = "quality"
    time = "time"
    forgetting = "forgetting"


OBJECTIVE = typer.Option(None, "--objective", help="cost (default) | quality | time | forgetting")
BUDGET = typer.Option(None, "--budget-usd", help="total budget, USD")
DEADLINE = typer.Option(None, "--deadline-hours", help="wall-clock deadline, hours")
FORGETTING = typer.Option(None, "--max-forgetting", help="forgetting tolerance, points of the general score")
QUALITY = typer.Option(None, "--min-quality", help="minimum task score")
JSON = typer.Option(False, "--json", help="print one JSON object instead of tables")


def with_overrides(path: Path, objective, budget, deadline, forgetting, quality):
    """The instance at ``path`` with the command line's objective and limits applied (each checked first)."""
    from planopt.instance import check_limit, load_instance
    for flag, name, value in (("--budget-usd", "budget_usd", budget), ("--deadline-hours", "deadline_hours", deadline),
                              ("--max-forgetting", "max_forgetting_points", forgetting), ("--min-quality", "min_quality", quality)):
        if value is not None:
            check_limit(name, value, flag)
    inst = load_instance(path)
    return inst.with_overrides(objective=objective.value if objective else None, budget_usd=budget,
                               deadline_hours=deadline, max_forgetting_points=forgetting, min_quality=quality)


def print_result(inst, result, json_out: bool) -> None:
    """Print a SolveResult as JSON or as the report, and exit with its status code."""
    from planopt.report.text import solve_report
    if json_out:
        from planopt.report.json_results import solve_json
        emit_json(solve_json(result))
    else:
        typer.echo(solve_report(inst, result))
        if result.risk:
            from planopt.report.risk import risk_section
            typer.echo("\n" + risk_section(result.risk))
    raise typer.Exit(EXIT[result.status])
