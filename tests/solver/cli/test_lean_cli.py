"""A lean `planopt solve` (issue 10 item 5): the single-job path imports pyomo.core, not
pyomo.environ (whose solver and transformation plugins it never uses), nor pandas,
matplotlib, scipy, dask or rich; and what it returns is what a process that did load
pyomo.environ returns. Its wall time against the bare import is in benchmarks/bench_solve.py."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from tests.support.common import split_seeds

ROOT = Path(__file__).resolve().parents[3]
JOBS = sorted(p for p in (ROOT / "instances").glob("*.json") if json.loads(p.read_text()).get("kind", "job") == "job")
UNUSED = ("pyomo.environ", "pyomo.gdp", "pyomo.dae", "pandas", "matplotlib", "scipy", "dask", "rich")


def test_solve_loads_no_module_it_does_not_use():
    probe = ("import sys\nfrom planopt.cli import main\nsys.argv = ['planopt', 'solve', sys.argv[1], '--json']\n"
             "try:\n    main()\nexcept SystemExit:\n    pass\n"
             f"print(' '.join(m for m in {UNUSED!r} if m in sys.modules), file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", probe, str(ROOT / "instances" / "qwen3-8b-math.json")],
                         capture_output=True, text=True, check=True)
    assert json.loads(out.stdout)["status"] == "optimal"
    assert out.stderr.split() == []


@pytest.mark.parametrize("path", split_seeds(JOBS, 6), ids=lambda p: p.stem)
def test_lean_solve_returns_what_a_full_pyomo_import_returns(path):
    import pyomo.environ  # noqa: F401  (all of Pyomo's plugins registered, as in a user's own script)

    from planopt.api import solve_instance
    from planopt.instance import load_instance
    from planopt.uncertainty.risk import report_scenarios   # the CLI's: none for a teacher trained as a stage
    full = solve_instance(path, scenarios=report_scenarios(load_instance(path))).to_dict()
    lean = json.loads(subprocess.run([sys.executable, "-m", "planopt.cli", "solve", str(path), "--json"],
                                     capture_output=True, text=True).stdout)
    assert lean["status"] == full["status"]
    assert lean["plan"] == full["plan"]
    assert lean.get("binding", []) == json.loads(json.dumps(full.get("binding", [])))
    if full["metrics"] is not None:
        assert lean["metrics"]["cost_usd"] == pytest.approx(full["metrics"]["cost_usd"], rel=1e-12)
