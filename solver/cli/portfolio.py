"""CLI commands for the portfolio feature (registered on `planopt.cli.app`).

``planopt solve portfolio.json`` dispatches here (``solve_portfolio_command``);
``planopt generate portfolio`` writes a random portfolio.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Optional

import typer

from planopt.cli.files import JSON_SUFFIXES, PLOT_SUFFIXES, TABLE_SUFFIXES, OutputFiles, table_writer, write_text
from planopt.cli.guard import guarded
from planopt.cli.options import EXIT
from planopt.cli.output import emit_json
from planopt.cli.progress import progress_bar

generate_app = typer.Typer(no_args_is_help=True, help="Write random instances for benchmarks and demos.")


def gangs_label(gangs) -> str:
    """A job's GPUs in the order they run: stages (and a teacher's plan first) joined by arrows, a stage's rollout
    GPUs after a plus: ``teacher 8×H100 → 16×H100 + 32×L40S rollout``."""
    parts: list[str] = []
    for g in gangs:
        label = f"{g.count}×{g.pool}"
        if g.role in ("rollout", "teacher_rollout"):
            parts[-1] += f" + {label} rollout"
        else:
            parts.append(("teacher " if g.role == "teacher" else "") + label)
    return " → ".join(parts)


def stage_label(r) -> str:
    """A stage's recipe in a few words: its method, samples per prompt, teacher precision and data mix."""
    return r.method + (f" {'-'.join(map(str, r.samples_per_prompt))}" if r.samples_per_prompt else "") + \
        (f" {r.teacher_precision_text}" if r.teacher_precision else "") + \
        (f" mix {r.external_data_share:g}" if r.external_data_share is not None else "")

def portfolio_report(result) -> str:
    """The text ``planopt solve`` prints for a portfolio: status and gap, procurement, jobs and cost tables, risk and
    notes (or the message when there is no schedule)."""
    from planopt.report.text import table, usd
    head = f"planopt · portfolio {result.name} · {result.status}"
    if result.gap is not None and math.isfinite(result.gap):
        head += f" (gap {result.gap:.2%})"
    elif result.status == "time_limit":
        head += " (gap unknown: no lower bound was proven in time)"
    out = [head, ""]
    if not result.jobs:
        out.append(result.message or "no schedule")
        return "\n".join(out)
    out += ["Procurement (what to sign: reservations for their whole term; on-demand and spot GPUs held at once)",
            table(procurement_lines(result), header=("provider", "GPU", "tier", "term", "buckets", "GPUs", "$/GPU-h",
                                                     "commitment", "utilisation")), ""]
    rows = []
    for j in result.jobs:
        p = j.plan
        recipe = " → ".join(stage_label(s.recipe) for s in p.stages) + (f" ({p.student})" if not j.flat and p.student else "")
        gpus = gangs_label(j.gangs)
        tiers = {}
        for (b, k), v in j.gpu_hours.items():
            tiers[k] = tiers.get(k, 0.0) + v
        total = sum(tiers.values()) or 1.0
        mix = " ".join(f"{k.replace('_', '-')} {v / total:.0%}" for k, v in tiers.items())
        rows.append((j.name, recipe, " + ".join(f"{s.recipe.steps:,}" for s in p.stages), gpus, f"{p.checkpoint_interval_minutes:g}",
                     j.release_bucket, j.start_bucket, j.finish_bucket, j.deadline_bucket, f"{total:,.0f}", mix,
                     f"{j.metrics.quality:.1f}", usd(j.cost_usd)))
    out += ["Jobs (buckets are 0-based)", table(rows, header=("job", "recipe", "steps", "GPUs", "ckpt min", "release", "start",
                                                               "finish", "deadline", "GPU-h", "tiers", "quality", "cost")), ""]
    bd = result.cost_breakdown_usd
    out += ["Cost", table([("reserved commitment", usd(bd["reserved"])), ("on-demand GPU-hours", usd(bd["on_demand"])),
                           ("spot GPU-hours", usd(bd["spot"])), ("jobs' non-compute (data, storage, ops, ...)", usd(bd["noncompute"])),
                           ("total", usd(result.cost_usd))])]
    if result.violations:
        out += ["", "WARNING: the evaluator disagrees with the MIP: " + "; ".join(result.violations[:5])]
    if result.risk is not None:
        out += [""] + risk_lines(result.risk)
    if result.message:   # e.g. which solve stages were bypassed, or whose schedule this is
        out += ["", f"Note: {result.message}"]
    if result.spend is not None:
        from planopt.report.text import spend_text
        out += ["", "Budget and alert lines (cumulative planned spend from bucket 0, at the schedule's point estimate)"] + spend_text(result.spend)
    out += ["", f"model built in {result.build_seconds:.2f} s, solved in {result.solve_seconds:.2f} s"]
    return "\n".join(out)


def risk_lines(risk: dict) -> list[str]:
    """The schedule's risk under capacity scenarios (``portfolio_risk``) as report lines."""
    from planopt.report.text import table, usd
    pc, ex = risk["percentiles"]["cost_usd"], risk["expected"]
    chance = []
    if risk.get("chance"):
        c, o = risk["chance"], risk["chance"]["out_of_sample"]
        chance = [f"held at confidence {c['confidence']:.0%}: runs undisrupted (on-demand obtainable, no spot preempted) in "
                  f"{c['in_sample_share_undisrupted']:.1%} of the sample (needed {c['scenarios_needed']} of {risk['scenarios']}); "
                  f"out of sample ({o['scenarios']:,} fresh scenarios): {o['share_undisrupted']:.1%} undisrupted, "
                  f"{o['share_meeting_all_deadlines']:.1%} meet every deadline with recourse"]
    return chance + [f"Risk over {risk['scenarios']:,} capacity scenarios (seed {risk['seed']}; spot preemption, on-demand shortfall)",
            f"recourse: {risk['recourse']}",
            table([("every job meets its deadline", f"{risk['share_meeting_all_deadlines']:.1%}"),
                   ("expected cost", usd(ex["cost_usd"])), ("of which recovery on demand", usd(ex["recourse_usd"])),
                   ("cost P10 / P50 / P90", f"{usd(pc['p10'])} / {usd(pc['p50'])} / {usd(pc['p90'])}")]),
            table([(j["name"], f"{j['share_meeting_deadline']:.1%}", f"{j['expected_late_gpu_hours']:,.1f}") for j in risk["jobs"]],
                  header=("job", "meets deadline", "late GPU-h (mean)"))]


def procurement_lines(result) -> list[tuple]:
    """The procurement rows, consecutive buckets of the same pool and count merged into one line."""
    from planopt.report.text import usd
    merged: list[dict] = []
    for row in result.procurement_rows():
        last = merged[-1] if merged else None
        if (last is not None and row["tier"] != "reserved" and last["tier"] == row["tier"] and last["gpu"] == row["gpu"]
                and last["provider"] == row["provider"] and last.get("region") == row.get("region") and last["gpus"] == row["gpus"] and last["end_bucket"] + 1 == row["start_bucket"]
                and last["usd_per_gpu_hour"] == row["usd_per_gpu_hour"]):
            last["end_bucket"] = row["start_bucket"]
            continue
        merged.append(dict(row))
    return [(r["provider"] + (f" {r['region']}" if r.get("region") else ""), r["gpu"], r["tier"].replace("_", "-"), r["term"] or "-",
             f"{r['start_bucket']}" if r["start_bucket"] == r["end_bucket"] else f"{r['start_bucket']}-{r['end_bucket']}",
             r["gpus"], "-" if r["usd_per_gpu_hour"] is None else f"${r['usd_per_gpu_hour']:,.3f}",
             "-" if r["commitment_usd"] is None else f"{usd(r['commitment_usd'])} ({r['committed_hours']:,.0f} h)",
             "-" if r["utilisation"] is None else f"{r['utilisation']:.0%}") for r in merged]


def solve_portfolio_command(file: Path, json_out: bool, time_limit: Optional[float], plot: Optional[Path],
                            objective=None, budget_usd: Optional[float] = None, deadline_hours: Optional[float] = None,
                            max_forgetting: Optional[float] = None, min_quality: Optional[float] = None,
                            out: Optional[Path] = None, scenarios: Optional[int] = None, seed: int = 0,
                            confidence: Optional[float] = None, cvar: Optional[float] = None,
                            scheduler: Optional[str] = None, workers: Optional[int] = None, serial: bool = False,
                            focus_start=None) -> int:
    """Solve a portfolio instance, print it, return the exit code. The options are checked and
    solved as the service's portfolio endpoints do (``portfolio_options``): ``--budget-usd`` caps
    the total spend and ``--objective cost`` is the portfolio's objective; every other limit and
    ``--cvar`` are refused. ``--out`` (CSV or Parquet) gets one row per job; it and ``--plot`` are
    checked before the solve and written together or not at all (``files.OutputFiles``). ``--scheduler``,
    ``--workers`` and ``--serial`` say where the jobs are priced (``pricing.check_pricing``; default
    ``auto``: a local Dask cluster from ``pricing.DASK_MIN_JOBS`` jobs on idle cores); ``--confidence`` refuses the first two.
    ``focus_start`` (a date: ``--format focus``) makes ``--out`` the schedule's FOCUS rows from that day instead."""
    import dataclasses
    from planopt.errors import InputError
    from planopt.portfolio.options import check_portfolio_options, solve_with_options
    from planopt.portfolio.pricing import check_pricing
    from planopt.cli.clock import started_at
    pricing = check_pricing(scheduler, workers, serial)
    if confidence is not None and pricing.mode == "dask":
        raise InputError(f"{'--scheduler' if scheduler is not None else '--workers'}: the schedule held at --confidence "
                         "prices its scenarios' jobs here; drop it or --confidence")
    options = check_portfolio_options(file, started_at=started_at(), objective=objective, budget_usd=budget_usd, deadline_hours=deadline_hours,
                                      max_forgetting_points=max_forgetting, min_quality=min_quality, cvar=cvar,
                                      scenarios=scenarios, seed=seed, confidence=confidence, time_limit=time_limit)
    options = dataclasses.replace(options, pricing=pricing)
    files = OutputFiles()
    files.check("--out", out, TABLE_SUFFIXES)  # a bad path fails before the solve, not after it
    files.check("--plot", plot, PLOT_SUFFIXES)
    with files:
        with progress_bar("solving the portfolio"):  # one MIP (and its replay): the bar shows its time, not steps
            result = solve_with_options(options)
        if out is not None and focus_start is not None:
            from planopt.report.focus import focus_frame, portfolio_focus_rows
            rows = portfolio_focus_rows(options.data, result, focus_start) if result.jobs else []
            files.write(out, table_writer(focus_frame(rows)))
        elif out is not None:
            files.write(out, table_writer(result.jobs_frame()))
        if plot is not None and result.jobs:
            from planopt.report.portfolio_plot import plot_schedule
            files.write(plot, lambda path: plot_schedule(result, path))
    if json_out:
        from planopt.report.json_results import portfolio_json
        emit_json(portfolio_json(result))
    else:
        typer.echo(portfolio_report(result))
        if plot is not None and result.jobs:
            typer.echo(f"schedule chart written to {plot}")
    return EXIT[result.status]


MAX_GENERATED_BUCKETS = 520
MAX_GENERATED_JOBS = 10_000   # ~1.5 minutes of drawing (generate_portfolio)


@generate_app.command("portfolio")
@guarded
def generate_portfolio(jobs: int = typer.Option(5, "--jobs", min=1, help="number of jobs"),
                       gpu_types: int = typer.Option(3, "--gpu-types", min=1, help="number of GPU types"),
                       buckets: int = typer.Option(8, "--buckets", min=1, help="number of time buckets"),
                       bucket_hours: float = typer.Option(168.0, "--bucket-hours", min=1.0, help="hours per bucket"),
                       seed: int = typer.Option(0, "--seed", help="random seed"),
                       offers: int = typer.Option(1, "--offers", min=1, help="providers offering each GPU type the price "
                                                  "catalog sells (at most; the catalog's prices): the MIP chooses the provider"),
                       out: Optional[Path] = typer.Option(None, "--out", help="output JSON file (default: stdout)")):
    """Write a realistic random portfolio (catalog models and GPUs) for benchmarks and demos."""
    from planopt.errors import InputError
    from planopt.portfolio.generate import random_portfolio
    if buckets < 2:
        raise InputError("--buckets: expected at least 2")
    # Refused before any job is drawn (a generator asked for 100,000 jobs ran for minutes in silence): drawing
    # takes ~9 ms a job (1,000 jobs × 14 types × 520 buckets: 8.7 s), so MAX_GENERATED_JOBS is a minute or two.
    # Whether the portfolio can be planned is the solve's question (loading.check_portfolio_size: by memory).
    if jobs > MAX_GENERATED_JOBS:
        raise InputError(f"--jobs: at most {MAX_GENERATED_JOBS:,} (got {jobs:,}): drawing takes ~9 ms a job")
    if buckets > MAX_GENERATED_BUCKETS:
        raise InputError(f"--buckets: at most {MAX_GENERATED_BUCKETS} (ten years of weekly buckets), got {buckets:,}")
    from planopt.models.schema.portfolio import MAX_HORIZON_HOURS
    if not math.isfinite(bucket_hours) or buckets * bucket_hours > MAX_HORIZON_HOURS:  # inf was pydantic's four lines
        raise InputError(f"--bucket-hours: expected a finite number of hours from 1 with --buckets × --bucket-hours "
                         f"at most {MAX_HORIZON_HOURS:,.0f} (ten years), got {bucket_hours!r} × {buckets:,} buckets")
    files = OutputFiles()
    files.check("--out", out, JSON_SUFFIXES)  # before generating: a bad path is one line, at once
    with files:
        try:
            data = random_portfolio(jobs, gpu_types, buckets, seed=seed, bucket_hours=bucket_hours, offers=offers)
        except ValueError as exc:  # a pydantic ValidationError too: its first error, one line naming the field
            from pydantic import ValidationError
            from planopt.errors import describe_validation_errors
            lines = describe_validation_errors(exc, "generated portfolio") if isinstance(exc, ValidationError) else [str(exc)]
            raise InputError(lines[0]) from None
        text = json.dumps(data, indent=1)
        files.write(out, lambda path: write_text(path, text + "\n"))
    if out is None:
        typer.echo(text)
    else:
        typer.echo(f"wrote {out}: {jobs} jobs, {gpu_types} GPU types"
                   + (f" ({len(data['gpus'])} offers)" if offers > 1 else "") + f", {buckets} buckets")
