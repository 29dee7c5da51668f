"""``planopt validate`` and ``planopt schema``: check an instance without solving it, print the JSON Schema."""

from __future__ import annotations

from pathlib import Path

import typer

from planopt.cli.guard import guarded
from planopt.cli.output import emit_json

commands = typer.Typer()


@commands.command()
@guarded
def validate(file: Path = typer.Argument(..., help="instance JSON"),
             json_out: bool = typer.Option(False, "--json", help="print one JSON object instead of the line: ok, errors, and what was checked")):
    """Check an instance (job or portfolio) against the schema and build its model without solving.

    Lists every error the schema finds at once, one line each naming its field (an unknown field with the
    closest allowed name); the checks across sections run once the sections themselves are valid."""
    from planopt.errors import InputError, InputErrors
    from planopt.report.plan_space import validate_instance
    try:
        checked = validate_instance(file, str(file))
    except InputError as exc:
        from planopt.cli.interrupt import hold_if_stopping
        from planopt.messages import shorten_words
        from planopt.report.json_results import invalid_json
        hold_if_stopping()
        lines = [shorten_words(line) for line in (exc.lines if isinstance(exc, InputErrors) else [str(exc)])]
        for line in lines:
            typer.echo(f"error: {line}", err=True)   # one line per error, each naming its field
        if json_out:
            emit_json(invalid_json(lines))   # the one object on stdout: ok false, with every error
        raise typer.Exit(2)
    if json_out:
        from planopt.report.json_results import validate_json
        emit_json(validate_json(checked))
        return
    pm = checked.model
    if checked.kind == "portfolio":
        d = pm.data
        typer.echo(f"{file}: valid portfolio · {len(d.instances)} jobs × {len(d.gpus)} GPU types × "
                   f"{len(d.buckets)} buckets · {checked.plans:,} plans over the jobs · model built in {pm.build_seconds:.2f} s")
        return
    from planopt.job.plan_space import MAX_MODEL_MIB
    typer.echo(f"{file}: valid · {checked.plan_space} · model built in {pm.build_seconds:.2f} s, "
               f"about {checked.model_mib:,.0f} MiB of the {MAX_MODEL_MIB:,} MiB cap")


# the plan space's line moved to the report room (the CLI's line and the JSON's plan_space); kept importable here
from planopt.report.plan_space import plan_space_line, plan_space_line_of  # noqa: E402,F401


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
