"""The README's promises: its stated optimum and its two commands stay true."""

import re

from planopt.instance import load_instance
from planopt.oracle import best_plan
from planopt.run import solve
from conftest import INSTANCES, ROOT

README = (ROOT / "README.md").read_text()


def test_readme_states_the_tiny_optimum_that_solver_and_oracle_find():
    line = next(l for l in README.splitlines() if l.startswith("**The optimum of `instances/tiny.json`**"))
    stated = re.search(r"(?P<method>SFT|RL|OPD) on (?P<count>\d+) × (?P<gpu>[\w-]+), (?P<steps>[\d,]+) steps.*?: \$(?P<cost>[\d,.]+)", line)
    assert stated, line
    inst = load_instance(INSTANCES / "tiny.json")
    mip, oracle = solve(inst), best_plan(inst)
    for res in (mip, oracle):
        assert res.plan.method == stated["method"].lower()
        assert res.plan.gpu_count == int(stated["count"]) and res.plan.gpu == stated["gpu"]
        assert res.plan.steps == int(stated["steps"].replace(",", ""))
        assert round(res.metrics.cost_usd, 2) == float(stated["cost"].replace(",", ""))


def test_readme_test_command_is_what_ci_runs():
    ci = (ROOT / ".ci" / "run").read_text()
    assert ".venv/bin/pytest -q" in README and ".venv/bin/pytest -q" in ci
    install = 'pip install -e ".[test]"'
    assert install in README and install.replace('"', '') in ci.replace('"', '')
