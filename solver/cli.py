"""The ``planopt`` command line (typer).

Exit codes: 0 optimal (or valid), 1 internal error, 2 invalid input,
3 infeasible, 4 time limit (the incumbent and its gap are printed).
"""

from __future__ import annotations

import functools
import json
import math
import os
import sys
from enum import Enum
from pathlib import Path
from typing import Any, Optional

import typer

from . import cli_risk

app = typer.Typer(add_completion=True, no_args_is_help=True,
                  help="Exact planner for LLM post-training: SFT, RL or on-policy distillation, on which GPUs, for least cost.")


def _print_version(value: bool) -> None:
    if value:
        from planopt import __version__
        typer.echo(f"planopt {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True,
                                       help="print planopt's version and exit")) -> None:
    """Exact planner for LLM post-training: SFT, RL or on-policy distillation, on which GPUs, for least cost."""

EXIT = {"optimal": 0, "infeasible": 3, "time_limit": 4, "error": 1}


class ObjectiveName(str, Enum):
    cost = "cost"
    quality = "quality"
    time = "time"
    forgetting = "forgetting"


def guarded(fn):
    """Turn input errors into one line and exit 2, anything unexpected into exit 1.

    Under ``--json`` (a ``json_out`` argument) stdout also gets one JSON object,
    ``{"status": "error", "error": ...}``, so it always holds exactly one."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        from .errors import InputError
        json_out = bool(kwargs.get("json_out"))
        try:
            return fn(*args, **kwargs)
        except (typer.Exit, typer.Abort, SystemExit):
            raise
        except InputError as exc:
            fail(f"error: {exc}", str(exc), json_out, 2)
        except Exception as exc:  # noqa: BLE001 - the CLI's last line of defence
            if os.environ.get("PLANOPT_DEBUG"):
                raise
            why = f"{type(exc).__name__}: {exc}"
            fail(f"internal error: {why} (set PLANOPT_DEBUG=1 for a traceback)", f"internal error: {why}", json_out, 1)
    return wrapper


def fail(line: str, error: str, json_out: bool, code: int):
    """Print ``line`` on stderr (and the JSON error object on stdout under --json); exit with ``code``."""
    typer.echo(line, err=True)
    if json_out:
        emit_json({"status": "error", "error": error})
    raise typer.Exit(code)


def emit_json(obj: Any) -> None:
    """One strict JSON object: non-finite numbers become null (JSON has no Infinity or NaN)."""
    typer.echo(json.dumps(_finite(obj), indent=2, default=_json_default, allow_nan=False))


def _finite(o: Any) -> Any:
    if hasattr(o, "to_dict"):
        o = o.to_dict()
    if isinstance(o, float):
        return o if math.isfinite(o) else None
    if isinstance(o, dict):
        return {k: _finite(v) for k, v in o.items()}
    if isinstance(o, (list, tuple, set)):
        return [_finite(v) for v in o]
    return o


def _json_default(o: Any):
    if hasattr(o, "to_dict"):
        return o.to_dict()
    if isinstance(o, (set, tuple)):
        return list(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def _with_overrides(path: Path, objective, budget, deadline, forgetting, quality):
    from .instance import check_limit, load_instance
    for flag, name, value in (("--budget-usd", "budget_usd", budget), ("--deadline-hours", "deadline_hours", deadline),
                              ("--max-forgetting", "max_forgetting_points", forgetting), ("--min-quality", "min_quality", quality)):
        if value is not None:
            check_limit(name, value, flag)
    inst = load_instance(path)
    return inst.with_overrides(objective=objective.value if objective else None, budget_usd=budget,
                               deadline_hours=deadline, max_forgetting_points=forgetting, min_quality=quality)


def _print_result(inst, result, json_out: bool) -> None:
    """Print a SolveResult as JSON or as the report, and exit with its status code."""
    from .report import solve_report
    if json_out:
        emit_json(result.to_dict())
    else:
        typer.echo(solve_report(inst, result))
        if result.risk:
            from .risk_report import risk_section
            typer.echo("\n" + risk_section(result.risk))
    raise typer.Exit(EXIT[result.status])


OBJECTIVE = typer.Option(None, "--objective", help="cost (default) | quality | time | forgetting")
BUDGET = typer.Option(None, "--budget-usd", help="total budget, USD")
DEADLINE = typer.Option(None, "--deadline-hours", help="wall-clock deadline, hours")
FORGETTING = typer.Option(None, "--max-forgetting", help="forgetting tolerance, points of the general score")
QUALITY = typer.Option(None, "--min-quality", help="minimum task score")
JSON = typer.Option(False, "--json", help="print one JSON object instead of tables")


@app.command()
@guarded
def solve(file: Path = typer.Argument(..., help="instance JSON"),
          json_out: bool = JSON, objective: Optional[ObjectiveName] = OBJECTIVE,
          budget_usd: Optional[float] = BUDGET, deadline_hours: Optional[float] = DEADLINE,
          max_forgetting: Optional[float] = FORGETTING, min_quality: Optional[float] = QUALITY,
          time_limit: Optional[float] = typer.Option(None, "--time-limit", help="seconds (0.01 to about a year); returns the incumbent and its gap"),
          sensitivity: bool = typer.Option(True, "--sensitivity/--no-sensitivity", help="re-solve to find binding limits"),
          scenarios: Optional[int] = cli_risk.SCENARIOS, confidence: Optional[float] = cli_risk.CONFIDENCE,
          seed: int = cli_risk.SEED, cvar: Optional[float] = cli_risk.CVAR,
          plot: Optional[Path] = typer.Option(None, "--plot", help="portfolio: a Gantt chart of the schedule; one job with --scenarios or --confidence: the risk distributions")):
    """Find the optimal plan of a job (or a portfolio of jobs) and explain it."""
    from .api import solve_instance
    from .errors import InputError, read_json
    from .instance import check_time_limit
    check_time_limit(time_limit)
    if read_json(file).get("kind") == "portfolio":
        for flag, value in (("--scenarios", scenarios), ("--confidence", confidence), ("--cvar", cvar), ("--seed", seed or None)):
            if value is not None:
                raise InputError(f"{flag}: plans one job under uncertainty; a portfolio does not take it yet")
        from .cli_portfolio import solve_portfolio_command
        raise typer.Exit(solve_portfolio_command(file, json_out=json_out, time_limit=time_limit, plot=plot))
    inst = _with_overrides(file, objective, budget_usd, deadline_hours, max_forgetting, min_quality)
    if cli_risk.uses_scenarios(inst, scenarios, confidence):
        inst, result = cli_risk.solve_with_scenarios(inst, scenarios, confidence, seed, cvar, time_limit, sensitivity, plot)
        _print_result(inst, result, json_out)
    for flag, value in (("--plot", plot), ("--cvar", cvar)):
        if value is not None:
            raise InputError(f"{flag}: needs --scenarios or --confidence on one job (a portfolio's --plot draws its schedule)")
    # every plan's estimate comes with its uncertainty: risk over the default scenario count
    from .risk import REPORT_SCENARIOS
    _print_result(inst, solve_instance(inst, time_limit=time_limit, sensitivity=sensitivity,
                                       scenarios=REPORT_SCENARIOS, seed=seed), json_out)


@app.command()
@guarded
def evaluate(file: Path = typer.Argument(..., help="instance JSON"),
             plan_file: Path = typer.Argument(..., help="plan JSON: the `plan` object of `solve --json`, or that whole output"),
             json_out: bool = JSON, scenarios: Optional[int] = cli_risk.SCENARIOS, seed: int = cli_risk.SEED,
             plot: Optional[Path] = typer.Option(None, "--plot", help="with --scenarios: the risk distributions (PNG, SVG or PDF)")):
    """Compute every metric of a given plan with the evaluator."""
    from planopt.models.costs import evaluate as evaluate_plan
    from planopt.models.plan import Plan
    from .errors import InputError, read_json
    from .instance import load_instance
    from .report import breakdown, hours, metric_rows, plan_rows, table, usd
    inst = load_instance(file)
    raw = read_json(plan_file)
    raw = raw.get("plan", raw) if isinstance(raw.get("plan"), dict) else raw
    try:
        plan = Plan.from_dict(raw)
        metrics = evaluate_plan(inst, plan)
    except ValueError as exc:
        raise InputError(f"{plan_file}: {exc}") from None
    risk = cli_risk.evaluate_risk(inst, plan, scenarios, seed, plot)
    fits = metrics.fits_memory  # a plan that does not fit does no work: no costs or hours to report
    if json_out:
        emit_json({"plan": plan.to_dict(), "fits_memory": fits, "metrics": metrics.summary() if fits else None,
                   "feasible": metrics.feasible, "violations": metrics.violations,
                   "cost_breakdown_usd": metrics.cost_breakdown_usd if fits else None,
                   "hours_breakdown": metrics.hours_breakdown if fits else None, "flops": metrics.flops,
                   **({"risk": risk.to_dict()} if risk is not None else {})})
    elif not fits:
        typer.echo("\n".join(["Plan", table(plan_rows(plan)), "",
                              "Does not fit in memory, so it cannot run: " + "; ".join(metrics.violations)]))
    else:
        typer.echo("\n".join(["Plan", table(plan_rows(plan)), "", "Results", table(metric_rows(inst, metrics)), "",
                              "Feasible: " + ("yes" if metrics.feasible else "no — " + "; ".join(metrics.violations)), "",
                              "Cost breakdown", breakdown(metrics.cost_breakdown_usd, usd, "total"), "",
                              "Time breakdown", breakdown(metrics.hours_breakdown, hours, "wall time")]))
        if risk is not None:
            from .risk_report import risk_section
            typer.echo("\n" + risk_section(risk.to_dict()))


@app.command()
@guarded
def enumerate(file: Path = typer.Argument(..., help="instance JSON"), json_out: bool = JSON,
              all_plans: bool = typer.Option(False, "--all", help="list every plan with its metrics"),
              objective: Optional[ObjectiveName] = OBJECTIVE, budget_usd: Optional[float] = BUDGET,
              deadline_hours: Optional[float] = DEADLINE, max_forgetting: Optional[float] = FORGETTING,
              min_quality: Optional[float] = QUALITY):
    """Brute-force oracle: the best plan by exhaustive enumeration over the evaluator."""
    from . import oracle
    from .errors import InputError, read_json
    if read_json(file).get("kind") == "portfolio":
        raise InputError(f"{file}: kind: enumerate plans single jobs (kind 'job'), got a portfolio; "
                         f"`planopt solve {file}` plans a portfolio")
    inst = _with_overrides(file, objective, budget_usd, deadline_hours, max_forgetting, min_quality)
    if all_plans:
        plans = oracle.all_plans(inst)
        if json_out:
            emit_json({"plans": [{"plan": p.plan.to_dict(), "fits_memory": p.metrics.fits_memory,
                                  "metrics": p.metrics.summary() if p.metrics.fits_memory else None,
                                  "feasible": p.feasible, "violations": p.metrics.violations} for p in plans]})
        else:
            from .report import table

            def numbers(m):
                if not m.fits_memory:  # no work is done by a plan that cannot run
                    return ("-", "-", f"{m.quality:.2f}", f"{m.forgetting_points:.2f}", "no: does not fit in memory")
                return (f"{m.cost_usd:,.2f}", f"{m.wall_hours:,.2f}", f"{m.quality:.2f}", f"{m.forgetting_points:.2f}",
                        "yes" if m.feasible else "no")
            rows = [(p.plan.method, f"{p.plan.gpu_count}×{p.plan.gpu}", p.plan.steps, "-".join(map(str, p.plan.samples_per_prompt)) or "-",
                     p.plan.teacher_precision or "-", p.plan.external_data_share if p.plan.external_data_share is not None else "-",
                     f"{p.plan.checkpoint_interval_minutes:g}", *numbers(p.metrics)) for p in plans]
            typer.echo(table(rows, header=("method", "GPUs", "steps", "samples", "teacher", "mix", "ckpt min", "cost $", "hours", "quality", "forget", "feasible")))
        return
    _print_result(inst, oracle.best_plan(inst), json_out)


@app.command()
@guarded
def validate(file: Path = typer.Argument(..., help="instance JSON")):
    """Check an instance (job or portfolio) against the schema and build its model without solving."""
    from .errors import read_json
    if read_json(file).get("kind") == "portfolio":
        from .portfolio import PortfolioModel
        pm = PortfolioModel(file)
        d = pm.data
        typer.echo(f"{file}: valid portfolio · {len(d.instances)} jobs × {len(d.gpus)} GPU types × "
                   f"{len(d.buckets)} buckets · model built in {pm.build_seconds:.2f} s")
        return
    from .instance import load_instance
    from .run import PlanModel
    inst = load_instance(file)
    pm = PlanModel(inst)
    typer.echo(f"{file}: valid · {plan_space_line(pm)} · model built in {pm.build_seconds:.2f} s")


def plan_space_line(pm) -> str:
    """The plan space as arithmetic that adds up: the instance's options, then what the model keeps of them."""
    recipes, hardware, intervals = (len(options) for options in pm.evaluator.space())
    d = pm.data
    kept = (len(d.recipes), len(d.hardware), len(d.intervals))
    line = (f"{recipes:,} recipes × {hardware:,} hardware options × {intervals:,} checkpoint intervals"
            f" = {recipes * hardware * intervals:,} plans")
    if kept != (recipes, hardware, intervals):
        why = [f"{reason}: {n:,}" for reason, n in getattr(d, "dropped", {}).items() if n]  # the model's own account
        line += (f"; the model keeps {kept[0]:,} × {kept[1]:,} × {kept[2]:,} = {kept[0] * kept[1] * kept[2]:,}"
                 + (f" ({'; '.join(why)})" if why else ""))
    return line


@app.command()
@guarded
def schema(kind: str = typer.Option("job", "--kind", help="job (default) or portfolio")):
    """Print the JSON Schema of an instance (a job, or a portfolio of jobs)."""
    from .errors import InputError
    if kind == "job":
        from planopt.models.schema import Instance as model
    elif kind == "portfolio":
        from planopt.models.portfolio import Portfolio as model
    else:
        raise InputError(f"--kind: expected 'job' or 'portfolio', got {kind!r}")
    emit_json(model.model_json_schema())


# Commands that live in their own modules register themselves on `app`.
from . import cli_calibrate, cli_fit, cli_frontier, cli_portfolio, cli_uncertainty  # noqa: E402,F401


def main() -> None:
    if "--json" in sys.argv[1:]:
        _main_json()
    app()


def _main_json() -> None:
    """Run under --json: a bad flag or argument (a usage error, raised before any command runs)
    also prints one JSON error object, so stdout always holds exactly one."""
    try:
        code = app(standalone_mode=False)
    except typer.Abort:
        _usage_failure("aborted", 1)
    except typer.TyperException as exc:  # click's usage errors, as typer vendors them
        message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
        _usage_failure(message, getattr(exc, "exit_code", 2))
    sys.exit(code if isinstance(code, int) else 0)


def _usage_failure(message: str, code: int) -> None:
    typer.echo(f"error: {message}", err=True)
    emit_json({"status": "error", "error": message})
    sys.exit(code)


if __name__ == "__main__":
    main()
