"""CLI command for fitting to a pilot run (registered on `planopt.cli.app`).

``planopt fit FILE PILOT.csv --out FITTED.json [--json]``: updates the
parameters the pilot measured (``solver/uncertainty/fit.py``: the file format and the
method), prints the prior and posterior of each, and writes the instance with
the fitted point values and their narrower ranges in ``uncertainty``.
Exit 0 on success, 2 on bad input (one line naming the file, line and column).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import typer

from planopt.cli.guard import guarded
from planopt.cli.output import emit_json
from planopt.errors import InputError

commands = typer.Typer()


@commands.command()
@guarded
def fit(file: Path = typer.Argument(..., help="instance JSON"),
        pilot: Path = typer.Argument(..., help="pilot measurements (CSV: kind, method, gpu, gpu_count, steps, samples_per_prompt, teacher_precision, external_data_share, value, stddev, note; see the README)"),
        out: Path = typer.Option(..., "--out", help="where to write the fitted instance (JSON)"),
        json_out: bool = typer.Option(False, "--json", help="print one JSON object instead of tables")):
    """Fit the uncertain parameters to a pilot run and write the fitted instance."""
    from planopt.errors import read_json
    from planopt.uncertainty.fit import fit as fit_pilot, fitted_json, read_pilot, row_warnings
    from planopt.instance import load_instance
    check_out_path(out, file, pilot)
    raw = read_json(file)
    inst = load_instance(file)
    result = fit_pilot(inst, read_pilot(pilot, inst))
    data = fitted_json(raw, inst, result)
    _check_written(load_instance(data), result)
    write_atomically(out, json.dumps(data, indent=2) + "\n")
    row_fits = result.row_fits()
    warnings = row_warnings(row_fits)
    from planopt.verbosity import quiet
    if not quiet():
        for warning in warnings:  # one line per row the fit cannot explain
            typer.echo(f"warning: {warning}", err=True)
    if json_out:
        emit_json({"instance": str(file), "pilot": str(pilot), "out": str(out),
                   "parameters": [p.to_dict() for p in result.parameters], "rows": row_fits, "warnings": warnings})
    else:
        typer.echo(fit_report(file, pilot, out, result, inst, row_fits))


def check_out_path(out: Path, *inputs: Path) -> None:
    """Refuse an --out that cannot be written, before any work is done."""
    if out.suffix.lower() != ".json":
        raise InputError(f"--out: expected a .json file, got {str(out)!r}")
    if out.is_dir():
        raise InputError(f"--out: {out} is a directory, expected a file")
    parent = out.parent if str(out.parent) else Path(".")
    if not parent.is_dir():
        raise InputError(f"--out: folder {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise InputError(f"--out: folder {parent} is not writable")
    for given in inputs:
        if given.exists() and out.exists() and out.resolve() == given.resolve():
            raise InputError(f"--out: {out} is an input file; write the fitted instance elsewhere")


def write_atomically(path: Path, text: str) -> None:
    """Write to a temporary file in the same folder, then rename over ``path`` (with the umask's mode)."""
    from planopt.cli.files import publish
    parent = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=parent)
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        publish(Path(tmp), path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _check_written(loaded, result) -> None:
    """The written JSON must load to the fitted values (an internal error otherwise, exit 1)."""
    from planopt.models.uncertainty import model as unc
    points = {p.name: p.point for p in unc.parameters(loaded)}
    for name, value in result.values().items():
        if abs(points[name] - value) > 1e-12 * max(1.0, abs(value)):
            raise RuntimeError(f"the written instance holds {name} = {points[name]!r}, not the fitted {value!r}")


def _num(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 1e4 else f"{x:.4g}"


def fit_report(file: Path, pilot: Path, out: Path, result, inst, row_fits: list[dict] | None = None) -> str:
    """The text ``planopt fit`` prints: the parameters fitted (prior and posterior P10-P90, point before and after),
    the pilot rows predicted before and after (and how many σ the fitted prediction is off), and how to plan on
    the written instance."""
    from planopt.uncertainty.fit import OUTLIER_SIGMAS
    row_fits = result.row_fits() if row_fits is None else row_fits
    from planopt.report.text import table
    params = [(p.name, p.rows, f"{_num(p.prior.quantile(0.1))}–{_num(p.prior.quantile(0.9))}",
               f"{_num(p.posterior['p10'])}–{_num(p.posterior['p90'])}" if p.updated else "(held)",
               f"{_num(p.point_before)} → {_num(p.point_after)}") for p in result.parameters]
    rows = [(r["line"], r["kind"], r["run"], f"{_num(r['measured'])} ± {_num(r['stddev'])}",
             _num(r["predicted_before"]), _num(r["predicted_after"]),
             f"{r['sigmas_off']:+.1f}" + (" !" if abs(r["sigmas_off"]) > OUTLIER_SIGMAS else "")) for r in row_fits]
    lines = [f"Fitted {sum(p.updated for p in result.parameters)} parameters of {file} to {len(result.rows)} "
             f"pilot rows of {pilot}", "",
             "Parameters (P10–P90; point = posterior median)",
             table(params, header=("parameter", "rows", "prior P10–P90", "posterior P10–P90", "point before → after")), "",
             "Pilot rows (predicted by the evaluator before and after the fit)",
             table(rows, header=("line", "kind", "run", "measured", "before", "after", "σ off"))]
    lines += [f"  {p.name}: {p.note}" for p in result.parameters if p.note]
    chance = not (inst.training.staged or inst.candidate_students)  # chance-constrained plans are one-stage, one student
    lines += ["", f"Wrote {out}: plan on it with `planopt solve {out} " + ("--confidence 0.9`" if chance else "--scenarios 10000`")]
    return "\n".join(lines)
