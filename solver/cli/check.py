"""``planopt validate`` and ``planopt schema``: check an instance without solving it, print the JSON Schema."""

from __future__ import annotations

from pathlib import Path

import typer

from planopt.cli.guard import guarded
from planopt.cli.output import emit_json

commands = typer.Typer()


@commands.command()
@guarded
def validate(file: Path = typer.Argument(..., help="instance JSON")):
    """Check an instance (job or portfolio) against the schema and build its model without solving."""
    from planopt.errors import InputError, read_json
    if read_json(file).get("kind") == "portfolio":
        from planopt.job.plan_space import check_model_size
        from planopt.portfolio.solve import PortfolioModel, load_portfolio
        data = load_portfolio(file)
        plans = 0
        for name, inst in zip(data.names, data.instances):  # each job's own model, before the portfolio's
            try:
                plans += check_model_size(inst).plans
            except InputError as exc:
                raise InputError(f"{file}: job {name!r}: {exc}") from None
        pm = PortfolioModel(data)
        d = pm.data
        typer.echo(f"{file}: valid portfolio · {len(d.instances)} jobs × {len(d.gpus)} GPU types × "
                   f"{len(d.buckets)} buckets · {plans:,} plans over the jobs · model built in {pm.build_seconds:.2f} s")
        return
    from planopt.instance import load_instance
    from planopt.job.plan_space import MAX_MODEL_MIB, check_model_size
    from planopt.job.model import PlanModel
    inst = load_instance(file)
    space = check_model_size(inst)  # an instance solve would refuse is refused here, with the same line
    pm = PlanModel(inst)
    typer.echo(f"{file}: valid · {plan_space_line(pm)} · model built in {pm.build_seconds:.2f} s, "
               f"about {space.model_mib:,.0f} MiB of the {MAX_MODEL_MIB:,} MiB cap")


def plan_space_line(pm) -> str:
    """The plan space as arithmetic that adds up: the instance's options, then what the model keeps of them."""
    d = pm.space
    if d.staged:
        from planopt.oracles.staged import staged_space_size
        sequences = ", ".join(" → ".join(q) for q in d.sequences)
        why = [f"{reason}: {n:,}" for reason, n in d.dropped.items() if n]
        return (f"{staged_space_size(pm.inst):,} staged plans over the sequences {sequences} (per sequence, each stage's "
                f"recipes × hardware options, × {len(d.intervals)} checkpoint intervals); the model keeps {d.plans:,}"
                + (f" ({'; '.join(why)})" if why else ""))
    if pm.inst.candidate_students:
        inst = pm.inst
        parts = [f"{name}: {plan_space_line_of(inst.for_student(name))}" for name in inst.student_names()]
        return f"{len(parts)} students · " + " · ".join(parts)
    return plan_space_line_of(pm.evaluator.inst, d.slots[0])


def plan_space_line_of(inst, data=None) -> str:
    """One student's plan space (and, with ``data``, what the model keeps of it)."""
    from planopt.models.cost.evaluator import Evaluator
    ev = Evaluator(inst)
    recipes, hardware, intervals = (len(options) for options in ev.space())
    n_k = len(ev.retention_options())  # a retention block's options multiply the plans (models/cost/retention.py)
    times_k, k = (f" × {n_k:,} retention options", n_k) if n_k else ("", 1)
    if data is None:
        return (f"{recipes:,} recipes × {hardware:,} hardware options × {intervals:,} intervals{times_k}"
                f" = {recipes * hardware * intervals * k:,} plans")
    d = data
    kept = (len(d.recipes), len(d.hardware), len(d.intervals))
    line = (f"{recipes:,} recipes × {hardware:,} hardware options × {intervals:,} checkpoint intervals{times_k}"
            f" = {recipes * hardware * intervals * k:,} plans")
    if kept != (recipes, hardware, intervals):
        why = [f"{reason}: {n:,}" for reason, n in getattr(d, "dropped", {}).items() if n]  # the model's own account
        line += (f"; the model keeps {kept[0]:,} × {kept[1]:,} × {kept[2]:,}{times_k} = {kept[0] * kept[1] * kept[2] * k:,}"
                 + (f" ({'; '.join(why)})" if why else ""))
    return line


@commands.command()
@guarded
def schema(kind: str = typer.Option("job", "--kind", help="job (default), portfolio, result (the output of solve/evaluate on a job), portfolio-result (the output of solving a portfolio) or calibration (a calibration case)")):
    """Print the JSON Schema of an instance (a job, or a portfolio of jobs) or of a calibration case."""
    from planopt.errors import InputError
    if kind == "calibration":
        from planopt.models.schema.calibration_case import calibration_json_schema
        emit_json(calibration_json_schema())
        return
    if kind == "result":
        from planopt.report.result_schema import result_json_schema
        emit_json(result_json_schema())
        return
    if kind == "portfolio-result":
        from planopt.report.portfolio_schema import portfolio_result_json_schema
        emit_json(portfolio_result_json_schema())
        return
    if kind == "job":
        from planopt.models.schema.instance import Instance as model
    elif kind == "portfolio":
        from planopt.models.schema.portfolio import Portfolio as model
    else:
        raise InputError(f"--kind: expected 'job', 'portfolio', 'result', 'portfolio-result' or 'calibration', got {kind!r}")
    emit_json(model.model_json_schema())
