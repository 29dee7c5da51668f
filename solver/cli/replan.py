"""``planopt replan INSTANCE PLAN.json RUN [--mapping F] [--confidence C] [--json] ...``: the best plan for the
rest of a run in flight (``solver/runs/replan.py``: the rest as an instance, the move, stop now). The objective
and limit flags set the whole run's limits (what the run has spent, taken and forgotten is taken off them).
Exit 0 with a replan, 3 when neither a rest nor stopping meets every limit, 2 on bad input."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from planopt.cli import risk_options
from planopt.cli.guard import guarded
from planopt.cli.options import BUDGET, DEADLINE, EXIT, FORGETTING, JSON, OBJECTIVE, QUALITY, ObjectiveName, with_overrides
from planopt.cli.output import emit_json

commands = typer.Typer()


@commands.command()
@guarded
def replan(file: Path = typer.Argument(..., help="instance JSON"),
           plan_file: Path = typer.Argument(..., help="plan JSON: the `plan` object of `solve --json`, or that whole output"),
           run: Path = typer.Argument(..., help="the run's log: a TensorBoard log folder, a W&B history CSV or a pilot CSV"),
           mapping: Optional[Path] = typer.Option(None, "--mapping", help="JSON naming the log's series (as for track)"),
           json_out: bool = JSON, objective: Optional[ObjectiveName] = OBJECTIVE,
           budget_usd: Optional[float] = BUDGET, deadline_hours: Optional[float] = DEADLINE,
           max_forgetting: Optional[float] = FORGETTING, min_quality: Optional[float] = QUALITY,
           confidence: Optional[float] = risk_options.CONFIDENCE,
           scenarios: Optional[int] = typer.Option(None, "--scenarios", help="scenarios of the shares (default 1,000); with --confidence the chance model holds at most 200 of them"),
           seed: int = risk_options.SEED,
           time_limit: Optional[float] = typer.Option(None, "--time-limit", help="seconds for each of the rest's two solves"),
           sensitivity: bool = typer.Option(False, "--sensitivity/--no-sensitivity", help="re-solve to find the rest's binding limits"),
           solver: str = typer.Option("highs", "--solver", help="MIP solver: highs (default), scip, cbc or glpk"),
           cvar: Optional[float] = risk_options.CVAR,
           plot: Optional[Path] = typer.Option(None, "--plot", help="not offered by replan (track --plot draws the run)"),
           out: Optional[Path] = typer.Option(None, "--out", help="not offered by replan yet (--json holds the answer)")):
    """The best plan for the rest of a run: continue, change length or hardware, start another method, or stop."""
    from planopt.errors import InputError, read_json
    from planopt.instance import check_time_limit
    from planopt.job.model import DEFAULT_SOLVER, make_solver
    from planopt.runs.readers import read_run
    from planopt.runs.replan import replan_given
    from planopt.runs.state import read_mapping
    from planopt.uncertainty.chance import check_confidence
    from planopt.uncertainty.risk import check_scenarios, check_seed
    for flag, value in (("--cvar", cvar), ("--plot", plot), ("--out", out)):
        if value is not None:
            raise InputError(f"{flag}: not offered by replan yet; its answer is the table or --json")
    check_seed(seed)
    check_time_limit(time_limit)
    if scenarios is not None:
        check_scenarios(scenarios)
    if confidence is not None:
        check_confidence(confidence)
    if solver != DEFAULT_SOLVER:
        make_solver(solver, "--solver")
        if confidence is not None:
            raise InputError(f"--solver: plans under uncertainty (--confidence) run on {DEFAULT_SOLVER} only")
    inst = with_overrides(file, objective, budget_usd, deadline_hours, max_forgetting, min_quality)
    names = read_mapping(mapping)
    raw_plan = read_json(plan_file)
    log = read_run(run, inst)
    result = replan_given(inst, raw_plan, str(plan_file), log, names, confidence, scenarios, seed, time_limit, solver)
    if json_out:
        emit_json(result.to_dict())
    else:
        from planopt.report.replan import replan_report
        typer.echo(replan_report(result))
    raise typer.Exit(EXIT[result.status])
