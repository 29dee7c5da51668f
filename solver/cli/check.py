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
    from planopt.report.plan_space import plan_space_line
    inst = load_instance(file)
    space = check_model_size(inst)  # an instance solve would refuse is refused here, with the same line
    pm = PlanModel(inst)
    typer.echo(f"{file}: valid · {plan_space_line(pm)} · model built in {pm.build_seconds:.2f} s, "
               f"about {space.model_mib:,.0f} MiB of the {MAX_MODEL_MIB:,} MiB cap")


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
