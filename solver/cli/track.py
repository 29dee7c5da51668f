"""``planopt track INSTANCE PLAN.json RUN [--mapping F] [--json] [--plot F.png] [--scenarios N] [--seed S]``:
where a run stands against its plan at its last logged step (``solver/runs/track.py``: what is compared, the
verdict's thresholds). RUN is a TensorBoard log folder, a W&B history CSV or a pilot CSV (``runs/readers.py``);
the mapping names which logged series is which (``runs/state.py``). Exit 0 with the verdict (whatever it is),
2 on bad input."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from planopt.cli import risk_options
from planopt.cli.files import PLOT_SUFFIXES, OutputFiles
from planopt.cli.guard import guarded
from planopt.cli.options import JSON
from planopt.cli.output import emit_json

commands = typer.Typer()


@commands.command()
@guarded
def track(file: Path = typer.Argument(..., help="instance JSON"),
          plan_file: Path = typer.Argument(..., help="plan JSON: the `plan` object of `solve --json`, or that whole output"),
          run: Path = typer.Argument(..., help="the run's log: a TensorBoard log folder, a W&B history CSV (_step, _runtime, series) or a pilot CSV"),
          mapping: Optional[Path] = typer.Option(None, "--mapping", help="JSON naming the log's series: step, step_seconds, task_score, general_score, gpu_count, spend_usd"),
          json_out: bool = JSON,
          plot: Optional[Path] = typer.Option(None, "--plot", help="each measured series over the plan's predicted band (PNG, SVG or PDF)"),
          scenarios: Optional[int] = typer.Option(None, "--scenarios", help="scenarios of the bands and the shares (default 1,000)"),
          seed: int = risk_options.SEED):
    """Where a run stands against its plan: spend, step time, scores and the updated chance of meeting every limit."""
    from planopt.runs.track import track_given
    from planopt.errors import read_json
    from planopt.instance import load_instance
    from planopt.runs.readers import read_run
    from planopt.runs.state import read_mapping
    from planopt.uncertainty.risk import check_scenarios, check_seed
    check_seed(seed)
    if scenarios is not None:
        check_scenarios(scenarios)
    files = OutputFiles()
    files.check("--plot", plot, PLOT_SUFFIXES)
    inst = load_instance(file)
    names = read_mapping(mapping)
    raw_plan = read_json(plan_file)
    log = read_run(run, inst)
    with files:
        result = track_given(inst, raw_plan, str(plan_file), log, names, scenarios, seed)
        if plot is not None:
            from planopt.report.track import plot_track
            files.write(plot, lambda path: plot_track(result, path, inst.name))
    if json_out:
        emit_json(result.to_dict())
    else:
        from planopt.report.track import track_report
        typer.echo(track_report(result))
