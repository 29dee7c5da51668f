"""The CLI's ``--json`` and the service's answer are the same object, on every shipped instance.

Both are built by one builder per result kind (``planopt.report.json_results``); this holds them
equal from outside: ``planopt solve|evaluate|validate FILE --json`` in process against a real
``planopt serve`` over HTTP, for every ``instances/*.json`` (single jobs and portfolios), and the
frontier, the frontier against probability and the sweep on small instances. Timings (every
``*_seconds`` key, and a frontier's ``seconds``) are removed before comparing: two runs of the
same request share everything else.

The first test needs no server: it holds the service's work functions (what a worker runs) to the
CLI on the instance they once disagreed on (a teacher trained as a stage: ``evaluate``'s ``risk``).
"""

import json

import pytest
from typer.testing import CliRunner

from planopt.cli import app
from tests.support.common import INSTANCES
from tests.support.service_server import Server, without_timings

NAMES = sorted(p.stem for p in INSTANCES.glob("*.json"))
PORTFOLIOS = [n for n in NAMES if json.loads((INSTANCES / f"{n}.json").read_text()).get("kind") == "portfolio"]
JOBS = [n for n in NAMES if n not in PORTFOLIOS]
VOLATILE = ("seconds",)  # besides every *_seconds key (without_timings)


def stable(obj):
    """``obj`` without its timings."""
    obj = without_timings(obj)
    if isinstance(obj, dict):
        return {k: stable(v) for k, v in obj.items() if k not in VOLATILE}
    if isinstance(obj, list):
        return [stable(v) for v in obj]
    return obj


def cli_json(*args: str):
    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code in (0, 3), (args, result.exit_code, result.stderr)
    return json.loads(result.stdout)


def test_the_trained_teacher_evaluate_is_the_same_object_from_the_cli_and_the_service_work(tmp_path):
    """The one disagreement found (issue 23 item 7): the service sent ``"risk": null`` where the CLI left the key
    out (no risk was reported for a teacher trained as a stage). One builder now, and scenarios price the
    teacher's plan: both report the same risk, the teacher's share of scenarios among its limits."""
    from planopt.service import payloads
    from planopt.service.paths import shipped
    name = "qwen3-8b-math-train-the-teacher"
    plan = cli_json("solve", str(INSTANCES / f"{name}.json"))["plan"]
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    cli = cli_json("evaluate", str(INSTANCES / f"{name}.json"), str(tmp_path / "plan.json"))
    assert "teacher.score" in cli["risk"]["limits"] and cli["plan"] == plan
    assert payloads.evaluate_payload(shipped(name), {"plan": plan}) == cli


def test_validate_json_is_one_object_and_a_plan_that_is_no_object_is_one_line(tmp_path):
    """``validate --json`` (new: the service's /api/validate object) and ``evaluate`` of a plan file holding a list
    or a plan missing its stages' fields: one line naming the file, exit 2 (a list was an internal error, exit 1)."""
    job = cli_json("validate", str(INSTANCES / "tiny.json"))
    assert job["valid"] and job["kind"] == "job" and "plans" in job["plan_space"] and 0 < job["model_mib"] <= job["model_mib_cap"]
    portfolio = cli_json("validate", str(INSTANCES / "portfolio-small.json"))
    assert portfolio["kind"] == "portfolio" and portfolio["jobs"] == 5 and portfolio["plans"] > 0
    for text in ("[1, 2]", '{"stages": [{"method": "sft"}], "checkpoint_interval_minutes": 30}'):
        (tmp_path / "plan.json").write_text(text)
        result = CliRunner().invoke(app, ["evaluate", str(INSTANCES / "tiny.json"), str(tmp_path / "plan.json")])
        lines = result.stderr.strip().splitlines()
        assert result.exit_code == 2 and len(lines) == 1 and lines[0].startswith(f"error: {tmp_path / 'plan.json'}"), result.output


# the rest against a real server: run by .ci/run with `pytest -m slow`
@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("equality")).start()
    yield s
    s.stop()


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_solve_validate_and_evaluate_are_the_clis_objects_on_every_shipped_instance(server, name, tmp_path):
    path = str(INSTANCES / f"{name}.json")
    cli = cli_json("solve", path)
    api = server.call("POST", "/api/solve", {"instance": name})
    assert stable(api) == stable(cli), name
    if name in PORTFOLIOS:
        assert stable(server.call("POST", "/api/portfolio/solve", {"portfolio": name})) == stable(cli), name
    assert stable(server.call("POST", "/api/validate", {"instance": name})) == stable(cli_json("validate", path)), name
    if name in JOBS and cli["plan"] is not None:
        (tmp_path / "plan.json").write_text(json.dumps(cli["plan"]))
        evaluated = cli_json("evaluate", path, str(tmp_path / "plan.json"))
        assert server.call("POST", "/api/evaluate", {"instance": name, "plan": cli["plan"]}) == evaluated, name
        # the whole solve result is a plan too (its `plan` is read)
        (tmp_path / "result.json").write_text(json.dumps(cli))
        assert cli_json("evaluate", path, str(tmp_path / "result.json")) == evaluated
        assert server.call("POST", "/api/evaluate", {"instance": name, "plan": cli}) == evaluated


@pytest.mark.slow
@pytest.mark.parametrize("name, x, y", [("tiny", "cost_usd", "quality"), ("tiny", "wall_hours", "cost_usd"),
                                        ("qwen3-8b-math", "cost_usd", "quality")])
def test_frontiers_are_the_clis_objects(server, name, x, y):
    cli = cli_json("frontier", str(INSTANCES / f"{name}.json"), "--x", x, "--y", y)
    api = server.call("POST", "/api/frontier", {"instance": name, "x": x, "y": y})
    assert cli["points"] and stable(api) == stable(cli)


@pytest.mark.slow
def test_the_probability_frontier_is_the_clis_object(server):
    cli = cli_json("frontier", str(INSTANCES / "tiny.json"), "--x", "cost_usd", "--y", "probability", "--scenarios", "40")
    api = server.call("POST", "/api/frontier", {"instance": "tiny", "x": "cost_usd", "y": "probability", "scenarios": 40})
    assert cli["points"] and stable(api) == stable(cli)


@pytest.mark.slow
@pytest.mark.parametrize("name, flag, limit, spec", [("tiny", "--budget-usd", "budget_usd", "600:1000:3"),
                                                     ("qwen3-8b-math", "--min-quality", "min_quality", "60:70:3")])
def test_sweeps_are_the_clis_objects(server, name, flag, limit, spec):
    cli = cli_json("sweep", str(INSTANCES / f"{name}.json"), flag, spec)
    api = server.call("POST", "/api/sweep", {"instance": name, "limit": limit, "range": spec})
    assert len(cli["rows"]) == 3 and stable(api) == stable(cli)
