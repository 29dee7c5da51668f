"""``planopt solve``, ``planopt evaluate`` and ``planopt enumerate``: one job (or a portfolio) planned,
a given plan evaluated, and the brute-force oracle."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from planopt.cli import risk_options
from planopt.cli.files import JSON_SUFFIXES, PLOT_SUFFIXES, TABLE_SUFFIXES, OutputFiles, table_writer, write_text
from planopt.cli.guard import guarded
from planopt.cli.options import EXIT, BUDGET, DEADLINE, FORGETTING, JSON, OBJECTIVE, QUALITY, ObjectiveName, print_result, with_overrides
from planopt.cli.output import emit_json

if TYPE_CHECKING:
    import pandas as pd

commands = typer.Typer()


@commands.command()
@guarded
def solve(file: Path = typer.Argument(..., help="instance JSON"),
          json_out: bool = JSON, objective: Optional[ObjectiveName] = OBJECTIVE,
          budget_usd: Optional[float] = BUDGET, deadline_hours: Optional[float] = DEADLINE,
          max_forgetting: Optional[float] = FORGETTING, min_quality: Optional[float] = QUALITY,
          time_limit: Optional[float] = typer.Option(None, "--time-limit", help="seconds (0.01 to about a year); returns the incumbent and its gap"),
          sensitivity: bool = typer.Option(True, "--sensitivity/--no-sensitivity", help="re-solve to find binding limits"),
          scenarios: Optional[int] = risk_options.SCENARIOS, confidence: Optional[float] = risk_options.CONFIDENCE,
          seed: int = risk_options.SEED, cvar: Optional[float] = risk_options.CVAR,
          plot: Optional[Path] = typer.Option(None, "--plot", help="portfolio: a Gantt chart of the schedule; one job with --scenarios or --confidence: the risk distributions"),
          out: Optional[Path] = typer.Option(None, "--out", help="also write the plan, its metrics and its cost and time breakdowns as one row (a portfolio: one row per job) to a .csv or .parquet file; with --format focus, its planned charges as FOCUS rows; one job: to a .json file, the object --json prints (what `planopt export` reads)"),
          solver: str = typer.Option("highs", "--solver", help="MIP solver of one job: highs (default), scip (pip install pyscipopt), cbc or glpk (their programs: apt-get install coinor-cbc or glpk-utils); one not installed is refused"),
          scheduler: Optional[str] = typer.Option(None, "--scheduler", help="portfolio: price the jobs (column generation, the Lagrangian bound) on the Dask cluster at this address (tcp://host:port)"),
          workers: Optional[int] = typer.Option(None, "--workers", help="portfolio: price the jobs on a local Dask cluster of this many worker processes"),
          serial: bool = typer.Option(False, "--serial", help="portfolio: price the jobs in this process (default: on a local Dask cluster of this machine's cores from 200 jobs when they are idle, else here)"),
          out_format: Optional[str] = typer.Option(None, "--format", help="what --out holds: plan (default: the plan as one row) or focus (the planned charges as FOCUS 1.0 rows, one per charge and UTC day, for FinOps tools)"),
          start_date: Optional[str] = typer.Option(None, "--start-date", help="with --format focus: the plan's first day, YYYY-MM-DD (default: today's date in UTC)")):
    """Find the optimal plan of a job (or a portfolio of jobs) and explain it."""
    from planopt.api import solve_instance
    from planopt.errors import InputError, read_json
    from planopt.instance import check_time_limit
    from planopt.job.model import DEFAULT_SOLVER, make_solver
    from planopt.uncertainty.risk import check_seed
    check_time_limit(time_limit)
    check_seed(seed)  # a negative one was numpy's ValueError, an internal error
    start = out_start_date(out, out_format, start_date)
    if read_json(file).get("kind") == "portfolio":
        if solver != DEFAULT_SOLVER:  # --cvar is refused with the portfolio's other options (portfolio_options)
            raise InputError("--solver: applies to one job; a portfolio does not take it yet")
        from planopt.cli.portfolio import solve_portfolio_command
        raise typer.Exit(solve_portfolio_command(file, json_out=json_out, time_limit=time_limit, plot=plot, objective=objective,
                                                 budget_usd=budget_usd, deadline_hours=deadline_hours,
                                                 max_forgetting=max_forgetting, min_quality=min_quality, out=out,
                                                 scenarios=scenarios, seed=seed, confidence=confidence, cvar=cvar,
                                                 scheduler=scheduler, workers=workers, serial=serial,
                                                 focus_start=start))
    for flag, value in (("--scheduler", scheduler), ("--workers", workers), ("--serial", serial or None)):
        if value is not None:
            raise InputError(f"{flag}: applies to a portfolio (its jobs priced on Dask); one job is one MIP, solved here")
    inst = with_overrides(file, objective, budget_usd, deadline_hours, max_forgetting, min_quality)
    if solver != DEFAULT_SOLVER:
        make_solver(solver, "--solver")  # unknown or not installed: one line, before any work
    files = OutputFiles()
    files.check("--out", out, TABLE_SUFFIXES + JSON_SUFFIXES)
    if risk_options.uses_scenarios(inst, scenarios, confidence):
        if solver != DEFAULT_SOLVER:
            raise InputError(f"--solver: plans under uncertainty (--scenarios, --confidence) run on {DEFAULT_SOLVER} only")
        files.check("--plot", plot, PLOT_SUFFIXES)
        with files:
            inst, result = risk_options.solve_with_scenarios(inst, scenarios, confidence, seed, cvar, time_limit,
                                                             sensitivity, plot, files)
            if out is not None:  # pandas only when asked for
                files.write(out, out_writer(inst, result, start, out))
        print_result(inst, result, json_out)
    for flag, value in (("--plot", plot), ("--cvar", cvar)):
        if value is not None:
            raise InputError(f"{flag}: needs --scenarios or --confidence on one job (a portfolio's --plot draws its schedule)")
    # every plan's estimate comes with its uncertainty: risk over the default scenario count
    from planopt.uncertainty.risk import report_scenarios
    with files:
        from planopt.cli.clock import started_at  # the limit bounds the whole command (issue 28 item 8)
        result = solve_instance(inst, time_limit=time_limit, sensitivity=sensitivity, scenarios=report_scenarios(inst),
                                seed=seed, solver=solver, started_at=started_at())
        if out is not None:  # pandas only when asked for
            files.write(out, out_writer(inst, result, start, out))
    print_result(inst, result, json_out)


FORMATS = ("plan", "focus")


def out_start_date(out: Optional[Path], out_format: Optional[str], start_date: Optional[str]):
    """The FOCUS rows' first day for ``--format focus`` (None: the plan row); each of ``--format`` and
    ``--start-date`` honoured or refused in one line."""
    from planopt.errors import InputError
    if out_format is not None and out_format not in FORMATS:
        raise InputError(f"--format: expected one of {', '.join(FORMATS)}, got {out_format!r}")
    if out_format is not None and out is None:
        raise InputError("--format: says what --out holds; give --out FILE (.csv or .parquet)")
    if out_format is not None and Path(out).suffix.lower() in JSON_SUFFIXES:
        raise InputError(f"--format: says what a .csv or .parquet --out holds; a .json --out holds the object --json "
                         f"prints, got --format {out_format} with {Path(out).name}")
    if out_format != "focus":
        if start_date is not None:
            raise InputError("--start-date: dates the FOCUS rows; needs --out FILE --format focus")
        return None
    import datetime as dt
    if start_date is None:
        return dt.datetime.now(dt.timezone.utc).date()
    try:
        if len(start_date) == 10:  # fromisoformat takes 20261202 too; the help names YYYY-MM-DD
            return dt.date.fromisoformat(start_date)
    except ValueError:
        pass
    raise InputError(f"--start-date: expected a date YYYY-MM-DD, got {start_date!r}")


def out_writer(inst, result, start, out: Path):
    """The writer of ``--out``: the object ``--json`` prints (a .json ``out``), the plan as one row, or (``start`` a
    date: ``--format focus``) its FOCUS rows."""
    if out.suffix.lower() in JSON_SUFFIXES:
        from planopt.cli.output import json_text
        from planopt.report.json_results import solve_json
        text = json_text(solve_json(result))
        return lambda path: write_text(path, text + "\n")
    if start is None:
        from planopt.api import solve_frame
        return table_writer(solve_frame(result))
    from planopt.report.focus import focus_frame, job_focus_rows
    rows = [] if result.plan is None else job_focus_rows(inst, result.plan, start)
    return table_writer(focus_frame(rows))


@commands.command()
@guarded
def evaluate(file: Path = typer.Argument(..., help="instance JSON"),
             plan_file: Path = typer.Argument(..., help="plan JSON: the `plan` object of `solve --json`, or that whole output"),
             json_out: bool = JSON, scenarios: Optional[int] = risk_options.SCENARIOS, seed: int = risk_options.SEED,
             plot: Optional[Path] = typer.Option(None, "--plot", help="with --scenarios: the risk distributions (PNG, SVG or PDF)")):
    """Compute every metric of a given plan with the evaluator (exit 3 when the plan breaks a limit or does not fit in memory)."""
    from planopt.api import evaluate_given_plan, instance_for_plan
    from planopt.errors import read_json
    from planopt.instance import load_instance
    from planopt.report.text import metric_rows, metrics_sections, plan_rows, table
    from planopt.uncertainty.risk import check_seed
    check_seed(seed)
    inst = load_instance(file)
    chooses_student = bool(inst.candidate_students)
    plan, metrics = evaluate_given_plan(inst, read_json(plan_file), str(plan_file))
    shown = instance_for_plan(inst, plan)  # the student's own job, for the tables
    files = OutputFiles()
    files.check("--plot", plot, PLOT_SUFFIXES)
    with files:
        risk = risk_options.evaluate_risk(inst, plan, scenarios, seed, plot, files)
    fits = metrics.fits_memory  # a plan that does not fit does no work: no costs or hours to report
    plan_table = table(([("student", plan.student)] if chooses_student else []) + plan_rows(plan, shown))
    if json_out:
        from planopt.report.json_results import evaluate_json
        emit_json(evaluate_json(inst, plan, metrics, risk))
    elif not fits:
        typer.echo("\n".join(["Plan", plan_table, "",
                              "Does not fit in memory, so it cannot run: " + "; ".join(metrics.violations)]))
    else:
        typer.echo("\n".join(["Plan", plan_table, "", "Results", table(metric_rows(shown, metrics)), "",
                              "Feasible: " + ("yes" if metrics.feasible else "no — " + "; ".join(metrics.violations)), "",
                              *metrics_sections(metrics)]))
        if risk is not None:
            from planopt.report.risk import risk_section
            typer.echo("\n" + risk_section(risk.to_dict()))
    raise typer.Exit(0 if metrics.feasible else EXIT["infeasible"])  # a plan that breaks a limit (or does not fit) is infeasible


@commands.command()
@guarded
def enumerate(file: Path = typer.Argument(..., help="instance JSON"), json_out: bool = JSON,
              all_plans: bool = typer.Option(False, "--all", help="list every plan with its metrics"),
              objective: Optional[ObjectiveName] = OBJECTIVE, budget_usd: Optional[float] = BUDGET,
              deadline_hours: Optional[float] = DEADLINE, max_forgetting: Optional[float] = FORGETTING,
              min_quality: Optional[float] = QUALITY,
              out: Optional[Path] = typer.Option(None, "--out", help="with --all: write every plan and its metrics to a .csv or .parquet file instead of listing them (one summary line; --json still lists them)"),
              by_plan: bool = typer.Option(False, "--by-plan", help="evaluate plan by plan (the slow reference oracle, up to 200,000 plans) instead of with numpy arrays")):
    """Brute-force oracle: the best plan by exhaustive enumeration over the evaluator.

    By default every plan is scored at once with numpy (up to 2e9 plans); --by-plan evaluates them one by
    one, the slow reference (up to 200,000 plans); --all lists every plan with its metrics.

    \f
    The array oracle is ``oracles/arrays.best_plan_arrays`` (block by block; each student's for a choice of
    student); ``--by-plan`` (and a staged instance) calls the evaluator once per plan (``by_plan.best_plan``),
    the obviously-correct reference the tests hold the array oracle to. (What follows the form feed is left
    out of ``--help``.)"""
    from planopt.oracles import by_plan as oracle
    from planopt.errors import InputError, read_json
    if read_json(file).get("kind") == "portfolio":
        raise InputError(f"{file}: kind: enumerate plans single jobs (kind 'job'), got a portfolio; "
                         f"`planopt solve {file}` plans a portfolio")
    if out is not None and not all_plans:
        raise InputError("--out: needs --all (the table of every plan)")
    if by_plan and all_plans:
        raise InputError("--by-plan: --all already lists the plans one by one; give one of the two")
    files = OutputFiles()
    files.check("--out", out, TABLE_SUFFIXES)
    inst = with_overrides(file, objective, budget_usd, deadline_hours, max_forgetting, min_quality)
    staged, candidates = inst.training.staged, bool(inst.candidate_students)
    if all_plans:
        with files:
            plans = oracle.all_plans(inst)
            if out is not None:
                files.write(out, table_writer(plans_frame(plans)))
        if json_out:
            from planopt.models.schema.plan import plan_json
            emit_json({"plans": [{"plan": plan_json(p.plan, getattr(p, "student", None) or inst.student.preset), "fits_memory": p.metrics.fits_memory,
                                  "metrics": p.metrics.summary() if p.metrics.fits_memory else None,
                                  "feasible": p.feasible, "violations": p.metrics.violations} for p in plans]})
        elif out is not None:  # the table is in the file: one line says what it holds
            fits = sum(p.metrics.fits_memory for p in plans)
            typer.echo(f"wrote {len(plans):,} plans to {out}: {fits:,} fit in memory, "
                       f"{sum(p.feasible for p in plans):,} meet every limit")
        else:
            from planopt.report.labels import gpus_text, method_text
            from planopt.report.text import table

            def numbers(m):
                if not m.fits_memory:  # no work is done by a plan that cannot run
                    return ("-", "-", f"{m.quality:.2f}", f"{m.forgetting_points:.2f}", "no: does not fit in memory")
                return (f"{m.cost_usd:,.2f}", f"{m.wall_hours:,.2f}", f"{m.quality:.2f}", f"{m.forgetting_points:.2f}",
                        "yes" if m.feasible else "no")
            if staged:
                rows = [(" → ".join(stage_summary(st) for st in p.plan.stages), f"{p.plan.checkpoint_interval_minutes:g}",
                         *numbers(p.metrics)) for p in plans]
                typer.echo(table(rows, header=("stages", "ckpt min", "cost $", "hours", "quality", "forget", "feasible")))
                return
            rows = [(method_text(p.plan.method, p.plan.staleness_steps), gpus_text(p.plan.hardware), p.plan.steps, "-".join(map(str, p.plan.samples_per_prompt)) or "-",
                     p.plan.recipe.teacher_precision_text or "-", p.plan.external_data_share if p.plan.external_data_share is not None else "-",
                     f"{p.plan.checkpoint_interval_minutes:g}", *numbers(p.metrics)) for p in plans]
            header = ("method", "GPUs", "steps", "samples", "teacher", "mix", "ckpt min", "cost $", "hours", "quality", "forget", "feasible")
            if candidates:
                rows, header = [(p.student, *row) for p, row in zip(plans, rows)], ("student", *header)
            typer.echo(table(rows, header=header))
        return
    if by_plan or staged:  # the array oracle lists one-stage plans; staged ones are listed plan by plan
        print_result(inst, oracle.best_plan(inst), json_out)
        return
    from planopt.oracles.arrays import best_plan_arrays
    print_result(inst, best_plan_arrays(inst), json_out)


def plans_frame(plans) -> "pd.DataFrame":
    """``enumerate --all`` as a table: one row per plan, its fields, whether it fits and is feasible, its metrics
    (empty for a plan that does not fit in memory: it does no work)."""
    import pandas as pd
    from planopt.api import integer_columns, plan_record
    rows = []
    for p in plans:
        row = {"student": p.student} if getattr(p, "student", None) else {}
        row.update(plan_record(p.plan))
        row.update({"fits_memory": p.metrics.fits_memory, "feasible": p.feasible,
                    "violations": "; ".join(p.metrics.violations)})
        row.update(p.metrics.summary() if p.metrics.fits_memory else {})
        rows.append(row)
    return integer_columns(pd.DataFrame(rows))


def stage_summary(stage) -> str:
    """One stage in a few words: ``RL 400 steps 8×H100``."""
    lora = f" LoRA-{stage.recipe.lora_rank}" if stage.recipe.lora_rank else ""
    from planopt.report.labels import gpus_text
    return f"{stage.method.upper()} {stage.recipe.steps} steps{lora} {gpus_text(stage.hardware)}"
