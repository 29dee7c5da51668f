"""The ``planopt`` command line, one module per command group.

- ``app``: the typer app; collects the groups below (they never import it back)
- ``init``: a job from a few flags · ``solve``: solve, evaluate, enumerate · ``check``: validate, schema
- ``frontier``: frontier, sweep · ``calibrate`` · ``fit`` · ``uncertainty`` · ``portfolio``: generate, portfolio solves
- ``options``: flags shared by commands · ``risk_options``: the uncertainty flags
- ``guard``: errors to one line and an exit code · ``output``: strict JSON on stdout
"""

from planopt.cli.app import app, main
from planopt.cli.output import emit_json

__all__ = ["app", "emit_json", "main"]
