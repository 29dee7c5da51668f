"""CLI commands for the frontier feature (registered on `planopt.cli.app`).

``planopt frontier FILE --x cost_usd --y quality``: the exact Pareto frontier.
``planopt frontier FILE --x cost_usd --y probability``: the exact frontier of an
expected metric against the probability of meeting every limit (``frontier.chance_frontier``).
``planopt sweep FILE --budget-usd LO:HI:N``: one limit over many values.
``planopt sweep FILE --confidence LIST_OR_RANGE [--budget-usd LIST_OR_RANGE]``: a
grid of independent chance-constrained solves, run on Dask (``planopt.studies.distributed``):
a LocalCluster of this machine's cores, the cluster at ``--scheduler``, or ``--serial``.
Exit codes as elsewhere: 0 done, 2 invalid input, 3 no feasible plan at all
(frontier only; a sweep reports each value's status in its rows).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from planopt.report.labels import gpus_text, human, method_text
from planopt.verbosity import quiet
from planopt.cli.files import PLOT_SUFFIXES, TABLE_SUFFIXES, OutputFiles, table_writer
from planopt.cli.guard import guarded
from planopt.cli.options import BUDGET, DEADLINE, EXIT, FORGETTING, JSON, QUALITY, ObjectiveName
from planopt.cli.output import emit_json
from planopt.cli.progress import progress_bar

commands = typer.Typer()

OUT = typer.Option(None, "--out", help="also write the table to a .csv or .parquet file")
PLOT = typer.Option(None, "--plot", help="also draw a chart to a .png, .svg or .pdf file")


def _outputs(out: Optional[Path], plot: Optional[Path]) -> OutputFiles:
    """The --out table and --plot chart, both checked before any solve, written together or not at all."""
    files = OutputFiles()
    files.check("--out", out, TABLE_SUFFIXES)
    files.check("--plot", plot, PLOT_SUFFIXES)
    return files


def _load_job(file: Path, command: str):
    from planopt.errors import InputError, read_json
    from planopt.instance import load_instance
    if read_json(file).get("kind") == "portfolio":
        raise InputError(f"{file}: `planopt {command}` takes a single-job instance, not a portfolio")
    return load_instance(file)


def _fmt(metric: str, value: float) -> str:
    from planopt.report.text import hours, usd
    if metric == "cost_usd":
        return usd(value)
    if metric == "wall_hours":
        return hours(value)
    return f"{value:.3f}"


def _plan_cells(plan, student: str | None = None) -> tuple:
    """A plan's table cells (``PLAN_HEADER``); a staged plan's stages joined by arrows; with ``student``
    (a choice among ``candidate_students``) the method cell names it."""
    who = f"{student}: " if student else ""
    if len(plan.stages) > 1:
        def each(cell) -> str:
            return " → ".join(cell(s.recipe, s.hardware) for s in plan.stages)
        return (who + each(lambda r, h: method_text(r.method, r.staleness_steps)), each(lambda r, h: gpus_text(h)), each(lambda r, h: str(r.steps)),
                each(lambda r, h: "-".join(map(str, r.samples_per_prompt)) or "-"), each(lambda r, h: r.teacher_precision_text or "-"),
                each(lambda r, h: "-" if r.external_data_share is None else f"{r.external_data_share:g}"),
                each(lambda r, h: "-" if r.max_epochs is None else str(r.max_epochs)), f"{plan.checkpoint_interval_minutes:g}")
    return (who + method_text(plan.method, plan.staleness_steps), gpus_text(plan.hardware), plan.steps,
            "-".join(map(str, plan.samples_per_prompt)) or "-", plan.recipe.teacher_precision_text or "-",
            plan.external_data_share if plan.external_data_share is not None else "-",
            plan.max_epochs if plan.max_epochs is not None else "-", f"{plan.checkpoint_interval_minutes:g}")


PLAN_HEADER = ("method", "GPUs", "steps", "samples", "teacher", "mix", "epochs", "ckpt min")


FRONTIER_SCHEDULER = typer.Option(None, "--scheduler", help="refused: frontier points are found one after another, "
                                  "not as independent solves (use `sweep --confidence` on a cluster)")


@commands.command()
@guarded
def frontier(file: Path = typer.Argument(..., help="instance JSON"),
             x: str = typer.Option("cost_usd", "--x", help="cost_usd | wall_hours | quality | forgetting_points"),
             y: str = typer.Option("quality", "--y", help="cost_usd | wall_hours | quality | forgetting_points | probability"),
             scenarios: Optional[int] = typer.Option(None, "--scenarios", help="with probability: scenarios of the sample (default 200)"),
             seed: Optional[int] = typer.Option(None, "--seed", help="with probability: seed of the scenario draw (default 0)"),
             scheduler: Optional[str] = FRONTIER_SCHEDULER,
             budget_usd: Optional[float] = BUDGET, deadline_hours: Optional[float] = DEADLINE,
             max_forgetting: Optional[float] = FORGETTING, min_quality: Optional[float] = QUALITY,
             confidence: Optional[float] = typer.Option(None, "--confidence", help="refused: use --y probability (every confidence at once)"),
             json_out: bool = JSON, out: Optional[Path] = OUT, plot: Optional[Path] = PLOT):
    """Exact Pareto frontier of two metrics: every non-dominated plan, by ε-constraint on the MIP.
    With `--y probability`: expected x against the probability of meeting every limit (chance-constrained).
    The limit flags override the instance's limits, as in `planopt solve`."""
    from planopt.errors import InputError
    from planopt.studies.frontier import PROBABILITY
    limits = {"budget": budget_usd, "deadline": deadline_hours, "forgetting": max_forgetting, "quality": min_quality}
    if confidence is not None:
        raise InputError("--confidence: a frontier under uncertainty is `--x cost_usd --y probability` (expected cost "
                         "against the probability of meeting every limit, every confidence at once); for chosen "
                         "confidences use `planopt sweep FILE --confidence LIST`")
    if scheduler is not None:
        raise InputError("--scheduler: frontier points are found one after another (each ε-constraint comes from the "
                         "previous point), not as independent solves; use `planopt sweep FILE --confidence LIST "
                         "--scheduler ADDRESS` for a grid of independent chance-constrained solves")
    if PROBABILITY in (x, y):
        if seed is not None:
            from planopt.uncertainty.risk import check_seed
            check_seed(seed)
        raise typer.Exit(_probability_frontier(file, x, y, scenarios, seed, json_out, out, plot, limits))
    for flag, value in (("--scenarios", scenarios), ("--seed", seed)):
        if value is not None:
            raise InputError(f"{flag}: applies to a frontier against the probability of meeting the limits (--y probability)")
    raise typer.Exit(_metric_frontier(file, x, y, json_out, out, plot, limits))


def _job_with_limits(file: Path, limits: dict):
    """The single-job instance with the limit flags applied (checked as `planopt solve` checks them)."""
    from planopt.cli.options import with_overrides
    _load_job(file, "frontier")  # refuses a portfolio with its own message
    return with_overrides(file, None, limits["budget"], limits["deadline"], limits["forgetting"], limits["quality"])


def _metric_frontier(file: Path, x: str, y: str, json_out: bool, out, plot, limits: dict) -> int:
    from planopt.studies.frontier import METRICS, pareto_frontier, points_frame
    from planopt.report.text import table
    from planopt.job.model import PlanModel
    files = _outputs(out, plot)
    inst = _job_with_limits(file, limits)
    with files:
        with progress_bar(f"frontier of {human(x)} and {human(y)}", unit="points") as bar:
            front = pareto_frontier(PlanModel(inst), x, y, progress=bar.update)
        if out is not None:
            files.write(out, table_writer(points_frame(front)))
        if plot is not None:
            from planopt.report.plots import plot_frontier
            files.write(plot, lambda path: plot_frontier(front, path, name=inst.name))
    from planopt.report.json_results import frontier_caps, frontier_json, frontier_risks
    # the point best in y comes first: does the option grid stop the frontier there?
    capped, risks = frontier_caps(inst, front), frontier_risks(inst, front)
    if json_out:
        emit_json(frontier_json(inst, x, y, front, risks, capped))
    else:
        others = [m for m in METRICS if m not in (x, y)]
        rows = [(n, _fmt(x, getattr(p.metrics, x)), _fmt(y, getattr(p.metrics, y)),
                 *(_fmt(m, getattr(p.metrics, m)) for m in others), *_risk_cells(r, y),
                 *_plan_cells(p.plan, p.student if inst.candidate_students else None))
                for n, (p, r) in enumerate(zip(front.points, risks), 1)]
        typer.echo(f"{inst.name}: exact Pareto frontier of {human(x)} ({'max' if x == 'quality' else 'min'}) vs "
                   f"{human(y)} ({'max' if y == 'quality' else 'min'}): {len(front.points)} points, "
                   f"{front.solves} MIP solves, {front.seconds:.2f} s")
        if rows:
            typer.echo(table(rows, header=("#", *map(human, (x, y, *others)), *risk_header(y), *PLAN_HEADER)))
            typer.echo(RISK_NOTE)
        else:
            typer.echo("  no plan satisfies the instance's limits")
        if capped:
            typer.echo(f"\nThe frontier's best {y} point uses the largest value of {'; '.join(capped)}: the option grid, "
                       "not cost, ends the frontier there. Add larger options to see further.")
    return EXIT["optimal"] if front.points else EXIT["infeasible"]


def _probability_frontier(file: Path, x: str, y: str, scenarios, seed, json_out: bool, out, plot, limits: dict) -> int:
    """Expected ``x`` (or ``y``) against the in-sample probability of meeting every limit."""
    from planopt.uncertainty.chance import DEFAULT_SCENARIOS
    from planopt.errors import InputError
    from planopt.studies.frontier import PROBABILITY, chance_frontier, chance_points_frame, check_metric
    from planopt.report.plots import plot_chance_frontier
    from planopt.uncertainty.risk import check_scenarios
    if x == y:
        raise InputError(f"--x and --y must differ (both are {x})")
    metric, flag = (y, "--y") if x == PROBABILITY else (x, "--x")
    check_metric(metric, flag)
    n = check_scenarios(scenarios, "--scenarios") if scenarios is not None else DEFAULT_SCENARIOS
    files = _outputs(out, plot)
    inst = _job_with_limits(file, limits)
    with files:
        with progress_bar(f"frontier of expected {human(metric)} and probability", unit="points") as bar:
            front = chance_frontier(inst, metric, n, seed or 0, progress=bar.update)
        if out is not None:
            files.write(out, table_writer(chance_points_frame(front)))
        if plot is not None:
            files.write(plot, lambda path: plot_chance_frontier(front, path, name=inst.name))
    if json_out:
        from planopt.report.json_results import chance_frontier_json
        emit_json(chance_frontier_json(x, y, front))
    else:
        _print_probability_frontier(inst, front)
    return EXIT["optimal"] if front.points else EXIT["infeasible"]


def _print_probability_frontier(inst, front) -> None:
    from planopt.studies.frontier import METRICS
    from planopt.report.text import table
    others = [m for m in METRICS if m != front.metric]
    typer.echo(f"{inst.name}: exact frontier of expected {human(front.metric)} vs the probability of meeting every limit "
               f"over {front.scenarios} scenarios (seed {front.seed}): {len(front.points)} points, "
               f"{front.solves} MIP solves, {front.seconds:.2f} s; out of sample: {front.out_of_sample:,} fresh scenarios")
    if not front.points:
        typer.echo("  no plan meets the instance's limits in any scenario")
        return
    rows = [(n, f"{p.in_sample_share:.1%}", f"{p.out_of_sample_share:.1%}", _fmt(front.metric, p.expected[front.metric]),
             *(_fmt(m, p.expected[m]) for m in others), *_plan_cells(p.plan)) for n, p in enumerate(front.points, 1)]
    typer.echo(table(rows, header=("#", "probability", "out-of-sample", f"expected {human(front.metric)}",
                                   *(f"expected {human(m)}" for m in others), *PLAN_HEADER)))


LIMIT_FLAGS = (("budget_usd", "--budget-usd"), ("deadline_hours", "--deadline-hours"),
               ("max_forgetting_points", "--max-forgetting"), ("min_quality", "--min-quality"))
SCHEDULER = typer.Option(None, "--scheduler", help="address of a running Dask scheduler (tcp://host:port) to run the solves on")
SERIAL = typer.Option(False, "--serial", help="solve one point after another in this process, without Dask")


@commands.command()
@guarded
def sweep(file: Path = typer.Argument(..., help="instance JSON"),
          budget_usd: Optional[str] = typer.Option(None, "--budget-usd", help="LO:HI:N budgets, USD (with --confidence also a list a,b,c)"),
          deadline_hours: Optional[str] = typer.Option(None, "--deadline-hours", help="LO:HI:N deadlines, hours"),
          max_forgetting: Optional[str] = typer.Option(None, "--max-forgetting", help="LO:HI:N forgetting tolerances, points"),
          min_quality: Optional[str] = typer.Option(None, "--min-quality", help="LO:HI:N minimum task scores"),
          objective: Optional[ObjectiveName] = typer.Option(None, "--objective", help="cost (default) | quality | time | forgetting"),
          time_limit: Optional[float] = typer.Option(None, "--time-limit", help="seconds per solve"),
          reuse: Optional[bool] = typer.Option(None, "--reuse/--resolve-all",
                                               help="skip a solve when the previous optimum provably stays optimal (exact; default --reuse)"),
          confidence: Optional[str] = typer.Option(None, "--confidence", help="LO:HI:N or a list a,b,c of shares in (0, 1): "
                                                   "a grid of chance-constrained solves (confidence x the swept limit, if any)"),
          scenarios: Optional[int] = typer.Option(None, "--scenarios", help="with --confidence: scenarios per solve (default 200)"),
          seed: Optional[int] = typer.Option(None, "--seed", help="with --confidence: seed of the scenario draw (default 0)"),
          scheduler: Optional[str] = SCHEDULER, serial: bool = SERIAL,
          json_out: bool = JSON, out: Optional[Path] = OUT, plot: Optional[Path] = PLOT):
    """Re-solve one persistent model over a range of one limit (only its right-hand side changes);
    with --confidence, a grid of chance-constrained solves run on Dask."""
    from planopt.errors import InputError
    given = [(name, flag, text) for (name, flag), text in zip(
        LIMIT_FLAGS, (budget_usd, deadline_hours, max_forgetting, min_quality)) if text is not None]
    from planopt.instance import check_time_limit
    check_time_limit(time_limit)
    if confidence is not None:
        if seed is not None:
            from planopt.uncertainty.risk import check_seed
            check_seed(seed)
        _chance_grid(file, given, confidence, objective, time_limit, reuse, scenarios, seed, scheduler, serial,
                     json_out, out, plot)
        raise typer.Exit(0)
    for flag, value in (("--scenarios", scenarios), ("--seed", seed), ("--scheduler", scheduler)):
        if value is not None:
            raise InputError(f"{flag}: needs --confidence (without it the sweep re-solves one persistent model in this process)")
    _limit_sweep(file, given, objective, time_limit, True if reuse is None else reuse, json_out, out, plot)
    raise typer.Exit(0)


def _check_limit_values(limit: str, flag: str, text: str, values: list[float]) -> None:
    from planopt.errors import InputError
    if limit != "min_quality" and min(values) < 0:
        raise InputError(f"{flag}: expected non-negative values, got {text!r}")


def _limit_sweep(file: Path, given, objective, time_limit, reuse: bool, json_out: bool, out, plot) -> None:
    """The single-limit sweep of one persistent model."""
    from planopt.errors import InputError
    from planopt.report.text import table
    from planopt.job.model import PlanModel
    from planopt.studies.sweep import parse_range, rows_frame, run_sweep
    if len(given) != 1:
        raise InputError("sweep: give exactly one range among --budget-usd, --deadline-hours, --max-forgetting, "
                         f"--min-quality (got {len(given)})")
    limit, flag, text = given[0]
    values = parse_range(text, flag)
    _check_limit_values(limit, flag, text, values)
    files = _outputs(out, plot)
    inst = _load_job(file, "sweep").with_overrides(objective=objective.value if objective else None)
    with files:
        pm = PlanModel(inst)
        with progress_bar(f"sweep of the {human(limit)}", total=len(values)) as bar:
            rows = run_sweep(pm, limit, values, time_limit=time_limit, reuse=reuse, progress=bar.update)
        if out is not None:
            files.write(out, table_writer(rows_frame(rows)))
        if plot is not None:
            from planopt.report.plots import plot_sweep
            files.write(plot, lambda path: plot_sweep(rows, path, name=inst.name))
    from planopt.report.json_results import sweep_json, sweep_risks
    risks = sweep_risks(inst, limit, rows)
    if json_out:
        emit_json(sweep_json(inst, limit, rows, risks))
        return
    solved = sum(not r.reused for r in rows)
    typer.echo(f"{inst.name}: {inst.objective} objective over {len(rows)} values of the {human(limit)} "
               f"({solved} solves of one model, {len(rows) - solved} rows reused exactly)")
    table_rows = []
    for r, k in zip(rows, risks):
        m, p = r.result.metrics, r.result.plan
        value = _fmt_limit(limit, r.value)
        if p is None:
            table_rows.append((value, r.result.status, *["-"] * 6, *["-"] * len(PLAN_HEADER)))
        else:
            table_rows.append((value, r.result.status, _fmt("cost_usd", m.cost_usd), _fmt("wall_hours", m.wall_hours),
                               f"{m.quality:.3f}", f"{m.forgetting_points:.3f}", *_risk_cells(k, "cost_usd"),
                                *_plan_cells(p, r.result.student if inst.candidate_students else None)))
    typer.echo(table(table_rows, header=(human(limit), "status", "cost", "wall time", "quality", "forgetting",
                                         *risk_header("cost_usd"), *PLAN_HEADER)))
    typer.echo(RISK_NOTE)


def risk_header(metric: str) -> tuple[str, str]:
    """The two column headers of a risk table's risk cells: limits met, and ``metric``'s P10-P90."""
    return ("limits met", f"{human(metric)} P10-P90")


RISK_NOTE = ("  (figures are point estimates; 'limits met' and P10-P90 are over 1,000 scenarios of the "
             "uncertainty model, see `planopt solve --scenarios`)")


def _risk_cells(risk, metric: str) -> tuple[str, str]:
    if risk is None:
        return ("-", "-")
    p = risk.percentiles()[metric]
    return (f"{risk.share():.0%}", f"{_fmt(metric, p['p10'])}–{_fmt(metric, p['p90'])}")


def _fmt_limit(limit: str, value: float) -> str:
    return _fmt("cost_usd" if limit == "budget_usd" else "wall_hours" if limit == "deadline_hours" else "quality", value)


def _chance_grid(file: Path, given, confidence: str, objective, time_limit, reuse, scenarios, seed, scheduler,
                 serial: bool, json_out: bool, out, plot) -> None:
    """``sweep --confidence``: chance-constrained solves over confidence x (at most) one limit, on Dask."""
    from planopt.studies.distributed import check_scheduler
    from planopt.errors import InputError
    from planopt.uncertainty.risk import check_scenarios
    from planopt.studies.sweep import check_grid, parse_confidences, parse_values, run_grid
    if reuse is not None:
        raise InputError("--reuse/--resolve-all: applies to a sweep of one persistent model; with --confidence "
                         "every point is its own chance-constrained solve")
    if len(given) > 1:
        raise InputError(f"--confidence: sweeps at most one limit besides the confidence (got {len(given)} ranges)")
    if serial and scheduler is not None:
        raise InputError("--serial: cannot be combined with --scheduler (one runs here, the other on a cluster)")
    confidences = parse_confidences(confidence, "--confidence")
    limit, values = None, None
    if given:
        limit, flag, text = given[0]
        values = parse_values(text, flag)
        _check_limit_values(limit, flag, text, values)
    if scenarios is not None:
        check_scenarios(scenarios, "--scenarios")
    check_scheduler(scheduler)
    check_grid(confidences, limit, values)
    files = _outputs(out, plot)
    inst = _load_job(file, "sweep").with_overrides(objective=objective.value if objective else None)
    with files:
        points = run_grid(inst, confidences, limit, values, scenarios, seed or 0, time_limit, scheduler, serial,
                          progress=not quiet())
        _write_grid(files, inst, points, scenarios, out, plot)
    _report_grid(inst, points, limit, scenarios, seed or 0, json_out)


def _write_grid(files: OutputFiles, inst, points, scenarios, out, plot) -> None:
    from planopt.uncertainty.chance import DEFAULT_SCENARIOS
    from planopt.report.plots import plot_grid
    from planopt.studies.sweep import grid_frame
    n = scenarios or DEFAULT_SCENARIOS
    if out is not None:
        files.write(out, table_writer(grid_frame(points)))
    if plot is not None:
        title = f"{inst.name}: expected cost of a plan meeting every limit with each confidence ({n} scenarios)"
        files.write(plot, lambda path: plot_grid(points, path, title=title))


def _report_grid(inst, points, limit, scenarios, seed: int, json_out: bool) -> None:
    from planopt.uncertainty.chance import DEFAULT_SCENARIOS
    from planopt.report.text import table
    n = scenarios or DEFAULT_SCENARIOS
    if json_out:
        from planopt.report.json_results import grid_json
        emit_json(grid_json(inst, limit, n, seed, points))
        return
    typer.echo(f"{inst.name}: {len(points)} chance-constrained solves ({inst.objective} objective, {n} scenarios, "
               f"seed {seed})" + (f" over confidence x {human(limit)}" if limit else " over confidence"))
    typer.echo(table([_grid_row(p) for p in points],
                     header=("confidence", *((human(limit),) if limit else ()), "status", "expected cost",
                             "in-sample", "out-of-sample", *PLAN_HEADER)))


def _grid_row(p) -> tuple:
    share = (lambda v: "-" if v is None else f"{v:.1%}")
    head = (f"{p.confidence:g}", *((_fmt_limit(p.limit, p.value),) if p.limit else ()))
    plan = p.plan
    if plan is None:
        reach = p.reachable_confidence
        status = p.status + (f" (reachable {reach:.1%})" if reach is not None else "")
        return (*head, status, "-", "-", "-", *["-"] * len(PLAN_HEADER))
    return (*head, p.status, _fmt("cost_usd", p.expected("cost_usd")), share(p.in_sample_share),
            share(p.out_of_sample_share), *_plan_cells(plan))
