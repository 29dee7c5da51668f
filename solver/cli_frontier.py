"""CLI commands for the frontier feature (registered on `planopt.cli.app`).

``planopt frontier FILE --x cost_usd --y quality``: the exact Pareto frontier.
``planopt sweep FILE --budget-usd LO:HI:N``: one limit over many values.
Exit codes as elsewhere: 0 done, 2 invalid input, 3 no feasible plan at all
(frontier only; a sweep reports each value's status in its rows).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from .cli import EXIT, JSON, ObjectiveName, app, emit_json, guarded

OUT = typer.Option(None, "--out", help="also write the table to a .csv or .parquet file")
PLOT = typer.Option(None, "--plot", help="also draw a chart to a .png file")


def _check_out(path: Optional[Path]) -> None:
    from .errors import InputError
    if path is None:
        return
    if path.suffix.lower() not in (".csv", ".parquet"):
        raise InputError(f"--out: expected a .csv or .parquet file name, got {path}")
    if not path.parent.exists():
        raise InputError(f"--out: folder {path.parent} does not exist")


def _check_plot(path: Optional[Path]) -> None:
    """Refuse a bad --plot path before solving, with the same rule the plotter applies."""
    if path is not None:
        from .plots import check_png_path
        check_png_path(path)


def _load_job(file: Path, command: str):
    from .errors import InputError, read_json
    from .instance import load_instance
    if read_json(file).get("kind") == "portfolio":
        raise InputError(f"{file}: `planopt {command}` takes a single-job instance, not a portfolio")
    return load_instance(file)


def _write_table(df, path: Path) -> None:
    if path.suffix.lower() == ".csv":
        df.to_csv(path, index=False)
    else:
        df.to_parquet(path, index=False)


def _fmt(metric: str, value: float) -> str:
    from .report import hours, usd
    if metric == "cost_usd":
        return usd(value)
    if metric == "wall_hours":
        return hours(value)
    return f"{value:.3f}"


def _plan_cells(plan) -> tuple:
    return (plan.method, f"{plan.gpu_count}×{plan.gpu}", plan.steps,
            "-".join(map(str, plan.samples_per_prompt)) or "-", plan.teacher_precision or "-",
            plan.external_data_share if plan.external_data_share is not None else "-",
            f"{plan.checkpoint_interval_minutes:g}")


PLAN_HEADER = ("method", "GPUs", "steps", "samples", "teacher", "mix", "ckpt min")


@app.command()
@guarded
def frontier(file: Path = typer.Argument(..., help="instance JSON"),
             x: str = typer.Option("cost_usd", "--x", help="cost_usd | wall_hours | quality | forgetting_points"),
             y: str = typer.Option("quality", "--y", help="cost_usd | wall_hours | quality | forgetting_points"),
             json_out: bool = JSON, out: Optional[Path] = OUT, plot: Optional[Path] = PLOT):
    """Exact Pareto frontier of two metrics: every non-dominated plan, by ε-constraint on the MIP."""
    from .frontier import METRICS, pareto_frontier, points_frame
    from .report import table
    from .run import PlanModel
    _check_out(out)
    _check_plot(plot)
    inst = _load_job(file, "frontier")
    front = pareto_frontier(PlanModel(inst), x, y)
    if out is not None:
        _write_table(points_frame(front), out)
    if plot is not None:
        from .plots import plot_frontier
        plot_frontier(front, plot, title=f"{inst.name}: exact {x} vs {y} frontier ({len(front.points)} points)")
    if json_out:
        emit_json({"x": x, "y": y, "points": [p.to_dict() for p in front.points]})
    else:
        others = [m for m in METRICS if m not in (x, y)]
        rows = [(n, _fmt(x, getattr(p.metrics, x)), _fmt(y, getattr(p.metrics, y)),
                 *(_fmt(m, getattr(p.metrics, m)) for m in others), *_plan_cells(p.plan))
                for n, p in enumerate(front.points, 1)]
        typer.echo(f"{inst.name}: exact Pareto frontier of {x} ({'max' if x == 'quality' else 'min'}) vs "
                   f"{y} ({'max' if y == 'quality' else 'min'}): {len(front.points)} points, "
                   f"{front.solves} MIP solves, {front.seconds:.2f} s")
        if rows:
            typer.echo(table(rows, header=("#", x, y, *others, *PLAN_HEADER)))
        else:
            typer.echo("  no plan satisfies the instance's limits")
    raise typer.Exit(EXIT["optimal"] if front.points else EXIT["infeasible"])


@app.command()
@guarded
def sweep(file: Path = typer.Argument(..., help="instance JSON"),
          budget_usd: Optional[str] = typer.Option(None, "--budget-usd", help="LO:HI:N budgets, USD"),
          deadline_hours: Optional[str] = typer.Option(None, "--deadline-hours", help="LO:HI:N deadlines, hours"),
          max_forgetting: Optional[str] = typer.Option(None, "--max-forgetting", help="LO:HI:N forgetting tolerances, points"),
          min_quality: Optional[str] = typer.Option(None, "--min-quality", help="LO:HI:N minimum task scores"),
          objective: Optional[ObjectiveName] = typer.Option(None, "--objective", help="cost (default) | quality | time | forgetting"),
          time_limit: Optional[float] = typer.Option(None, "--time-limit", help="seconds per solve"),
          reuse: bool = typer.Option(True, "--reuse/--resolve-all",
                                     help="skip a solve when the previous optimum provably stays optimal (exact)"),
          json_out: bool = JSON, out: Optional[Path] = OUT, plot: Optional[Path] = PLOT):
    """Re-solve one persistent model over a range of one limit (only its right-hand side changes)."""
    from .errors import InputError
    from .report import table
    from .run import PlanModel
    from .sweep import parse_range, rows_frame, run_sweep
    given = [(name, flag, text) for name, flag, text in (
        ("budget_usd", "--budget-usd", budget_usd), ("deadline_hours", "--deadline-hours", deadline_hours),
        ("max_forgetting_points", "--max-forgetting", max_forgetting), ("min_quality", "--min-quality", min_quality))
        if text is not None]
    if len(given) != 1:
        raise InputError("sweep: give exactly one range among --budget-usd, --deadline-hours, --max-forgetting, "
                         f"--min-quality (got {len(given)})")
    limit, flag, text = given[0]
    values = parse_range(text, flag)
    if limit != "min_quality" and values[0] < 0:
        raise InputError(f"{flag}: expected non-negative values, got {text!r}")
    if time_limit is not None and time_limit <= 0:
        raise InputError(f"--time-limit: expected a positive number of seconds, got {time_limit}")
    _check_out(out)
    _check_plot(plot)
    inst = _load_job(file, "sweep").with_overrides(objective=objective.value if objective else None)
    pm = PlanModel(inst)
    if json_out:
        rows = run_sweep(pm, limit, values, time_limit=time_limit, reuse=reuse)
    else:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
        with Progress(TextColumn("sweep {task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=Console(stderr=True), transient=True) as bar:
            task = bar.add_task(limit, total=len(values))
            rows = run_sweep(pm, limit, values, time_limit=time_limit, reuse=reuse,
                             progress=lambda k: bar.update(task, completed=k))
    if out is not None:
        _write_table(rows_frame(rows), out)
    if plot is not None:
        from .plots import plot_sweep
        plot_sweep(rows, plot, title=f"{inst.name}: {inst.objective} objective, sweep of {limit}")
    if json_out:
        emit_json({"limit": limit, "objective": inst.objective, "rows": [r.to_dict() for r in rows]})
    else:
        solved = sum(not r.reused for r in rows)
        typer.echo(f"{inst.name}: {inst.objective} objective over {len(rows)} values of {limit} "
                   f"({solved} solves of one model, {len(rows) - solved} rows reused exactly)")
        table_rows = []
        for r in rows:
            m, p = r.result.metrics, r.result.plan
            value = _fmt("cost_usd" if limit == "budget_usd" else "wall_hours" if limit == "deadline_hours" else "quality", r.value)
            if p is None:
                table_rows.append((value, r.result.status, *["-"] * 4, *["-"] * len(PLAN_HEADER)))
            else:
                table_rows.append((value, r.result.status, _fmt("cost_usd", m.cost_usd), _fmt("wall_hours", m.wall_hours),
                                   f"{m.quality:.3f}", f"{m.forgetting_points:.3f}", *_plan_cells(p)))
        typer.echo(table(table_rows, header=(limit, "status", "cost", "hours", "quality", "forgetting", *PLAN_HEADER)))
    raise typer.Exit(0)
