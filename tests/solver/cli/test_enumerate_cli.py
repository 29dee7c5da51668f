"""`planopt enumerate`: the array oracle by default, the plan-by-plan reference on request,
the same answer from both (issue 10: the CLI's oracle is the fast one)."""

import json

import pytest
from typer.testing import CliRunner

from planopt.cli import app
from tests.support.common import INSTANCES
from tests.support.random_instances import random_instance_dict

runner = CliRunner()


def _enumerate(path, *flags):
    res = runner.invoke(app, ["enumerate", str(path), "--json", *flags])
    assert res.exit_code in (0, 3), res.output
    return json.loads(res.stdout)


@pytest.mark.parametrize("source", ["tiny.json", "qwen3-8b-math.json", *[f"random:{s}" for s in range(6)]])
def test_the_array_oracle_and_the_plan_by_plan_oracle_agree(source, tmp_path):
    if source.startswith("random:"):
        path = tmp_path / "job.json"
        path.write_text(json.dumps(random_instance_dict(int(source.split(":")[1]))))
    else:
        path = INSTANCES / source
    fast, slow = _enumerate(path), _enumerate(path, "--by-plan")
    assert fast["status"] == slow["status"]
    if fast["status"] == "optimal":
        assert fast["plan"] == slow["plan"]
        for key in ("cost_usd", "wall_hours", "quality", "forgetting_points"):
            assert fast["metrics"][key] == pytest.approx(slow["metrics"][key], rel=1e-9)


def test_by_plan_with_all_is_refused_in_one_line():
    res = runner.invoke(app, ["enumerate", str(INSTANCES / "tiny.json"), "--all", "--by-plan"])
    assert res.exit_code == 2
    assert res.output.strip().count("\n") == 0 and "--by-plan" in res.output
