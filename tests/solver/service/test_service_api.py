"""The HTTP API against a real `planopt serve`: the same JSON as the CLI's `--json`, the same one-line errors.

Every endpoint's answer is compared with what the CLI prints for the same
request (timings aside), so the service cannot drift into a second cost model.
"""

import json

import pytest
from typer.testing import CliRunner

from planopt.cli import app
from tests.support.common import INSTANCES, ROOT
from tests.support.service_server import Server, without_timings



def cli_json(*args: str):
    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code in (0, 3), (args, result.exit_code, result.stderr)
    return json.loads(result.stdout)


def cli_error(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 2, (args, result.exit_code, result.stdout)
    return result.stderr.strip().removeprefix("error: ")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("api")).start()
    yield s
    s.stop()


def tiny():
    return json.loads((INSTANCES / "tiny.json").read_text())


EXPECTED_PATHS = {"/api/health", "/api/validate", "/api/solve", "/api/evaluate", "/api/track", "/api/replan", "/api/frontier", "/api/sweep",
                  "/api/portfolio/solve", "/api/catalog", "/api/catalog/specs", "/api/calibrate", "/api/instances", "/api/instances/{name}",
                  "/api/jobs", "/api/jobs/{job_id}", "/api/jobs/{job_id}/request"}


def test_the_openapi_document_lists_every_endpoint_and_the_instance_schemas(server):
    status, doc = server.request("GET", "/openapi.json", token=None)
    assert status == 200
    assert set(doc["paths"]) == EXPECTED_PATHS
    assert {"Instance", "Portfolio"} <= set(doc["components"]["schemas"])
    assert doc["paths"]["/api/jobs/{job_id}"].keys() >= {"get", "delete"}
    # every endpoint but health declares the bearer token
    for path, operations in doc["paths"].items():
        for operation in operations.values():
            assert ("security" in operation) == (path != "/api/health"), path


def test_solve_is_the_cli_solve_json(server):
    api = server.call("POST", "/api/solve", {"instance": "tiny", "budget_usd": 900})
    cli = cli_json("solve", str(INSTANCES / "tiny.json"), "--budget-usd", "900")
    assert api["status"] == "optimal" and api["binding"]
    assert without_timings(api) == without_timings(cli)
    work = float(server.last_headers["server-timing"].removeprefix("work;dur="))  # the library's ms, for clients
    assert 0 < work


def test_an_inline_instance_solves_like_its_shipped_name(server):
    by_name = server.call("POST", "/api/solve", {"instance": "tiny", "sensitivity": False})
    inline = server.call("POST", "/api/solve", {"instance": tiny(), "sensitivity": False})
    assert without_timings(by_name) == without_timings(inline)


def test_solve_with_confidence_is_the_cli_chance_constrained_solve(server):
    api = server.call("POST", "/api/solve", {"instance": "tiny", "confidence": 0.7, "scenarios": 50})
    cli = cli_json("solve", str(INSTANCES / "tiny.json"), "--confidence", "0.7", "--scenarios", "50")
    assert api["risk"]["confidence"] == 0.7
    assert without_timings(api) == without_timings(cli)


def test_track_is_the_cli_track_json_and_names_a_bad_mapping(server):
    run = INSTANCES / "runs" / "qwen3-8b-math-slow"
    mapping = json.loads((run / "mapping.json").read_text())
    body = {"instance": json.loads((run / "instance.json").read_text()), "plan": json.loads((run / "plan.json").read_text()),
            "run_csv": (run / "wandb.csv").read_text(), "mapping": mapping, "scenarios": 100}
    api = server.call("POST", "/api/track", body)
    cli = cli_json("track", str(run / "instance.json"), str(run / "plan.json"), str(run / "wandb.csv"),
                   "--mapping", str(run / "mapping.json"), "--scenarios", "100")
    api["state"].pop("source"), cli["state"].pop("source")
    assert api == cli
    status, answer = server.request("POST", "/api/track", {**body, "mapping": {**mapping, "task_score": "eval/math"}})
    assert status == 400 and "did you mean 'eval/math500'" in json.dumps(answer)


def test_replan_is_the_cli_replan_json(server):
    run = INSTANCES / "runs" / "qwen3-8b-math-slow"
    body = {"instance": json.loads((run / "instance.json").read_text()), "plan": json.loads((run / "plan.json").read_text()),
            "run_csv": (run / "wandb.csv").read_text(), "mapping": json.loads((run / "mapping.json").read_text()),
            "scenarios": 100, "min_quality": 65}
    api = server.call("POST", "/api/replan", body)
    cli = cli_json("replan", str(run / "instance.json"), str(run / "plan.json"), str(run / "wandb.csv"),
                   "--mapping", str(run / "mapping.json"), "--scenarios", "100", "--min-quality", "65")
    api["state"].pop("source"), cli["state"].pop("source")
    assert api["status"] == "optimal" and api == cli
    status, answer = server.request("POST", "/api/replan", {**body, "confidence": 1.5})
    assert status == 400 and "confidence" in json.dumps(answer)


def test_evaluate_is_the_cli_evaluate_json(server, tmp_path):
    plan = server.call("POST", "/api/solve", {"instance": "tiny", "sensitivity": False})["plan"]
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    api = server.call("POST", "/api/evaluate", {"instance": "tiny", "plan": plan})
    cli = cli_json("evaluate", str(INSTANCES / "tiny.json"), str(tmp_path / "plan.json"))
    assert api == cli


def test_frontier_is_the_cli_frontier_json(server):
    api = server.call("POST", "/api/frontier", {"instance": "tiny", "x": "cost_usd", "y": "quality"})
    cli = cli_json("frontier", str(INSTANCES / "tiny.json"), "--x", "cost_usd", "--y", "quality")
    assert len(api["points"]) >= 2
    assert api == cli


def test_sweep_is_the_cli_sweep_json(server):
    api = server.call("POST", "/api/sweep", {"instance": "tiny", "limit": "budget_usd", "range": "600:1000:3"})
    cli = cli_json("sweep", str(INSTANCES / "tiny.json"), "--budget-usd", "600:1000:3")
    assert [r["budget_usd"] for r in api["rows"]] == [600, 800, 1000]
    assert api == cli


def test_portfolio_solve_is_the_cli_portfolio_json(server):
    api = server.call("POST", "/api/portfolio/solve", {"portfolio": "portfolio-small"})
    cli = cli_json("solve", str(INSTANCES / "portfolio-small.json"))
    assert api["status"] == "optimal" and api["jobs"]
    assert without_timings(api) == without_timings(cli)


def test_validate_catalog_and_shipped_instances(server):
    valid = server.call("POST", "/api/validate", {"instance": "tiny"})
    assert valid["valid"] and "plans" in valid["plan_space"]
    names = {i["name"]: i["kind"] for i in server.call("GET", "/api/instances")}
    assert names["tiny"] == "job" and names["portfolio-small"] == "portfolio"
    assert server.call("GET", "/api/instances/tiny") == tiny()
    from planopt.models.catalog import load_gpus
    gpus = {g["name"]: g for g in server.call("GET", "/api/catalog/specs")["gpus"]}
    assert set(gpus) == set(load_gpus())
    assert gpus["H100-SXM"]["price_on_demand_usd_per_gpu_hour"] == load_gpus()["H100-SXM"].price_on_demand_usd_per_gpu_hour


def test_catalog_is_the_cli_catalog_json_with_its_filters(server):
    assert server.call("GET", "/api/catalog") == cli_json("catalog")
    prices = server.call("GET", "/api/catalog?gpu=H100-SXM")["prices"]
    assert prices and {p["gpu"] for p in prices} == {"H100-SXM"}
    assert prices == cli_json("catalog", "--gpu", "H100-SXM")["prices"]
    status, out = server.request("GET", "/api/catalog?provider=nosuch")
    assert status == 400 and out["error"].startswith("provider: expected one of"), out


def test_calibrate_a_shipped_case_and_an_inline_one(server):
    from planopt.uncertainty.calibrate import calibrate_case
    from planopt.uncertainty.calibration_intervals import with_intervals
    path = ROOT / "instances" / "calibration" / "young-daly-3h.json"
    expected = [r.to_dict() for r in with_intervals(calibrate_case(path))]
    assert server.call("POST", "/api/calibrate", {"case": "young-daly-3h"}) == expected
    assert server.call("POST", "/api/calibrate", {"case": json.loads(path.read_text())}) == expected


def test_bad_instance_gets_the_cli_message_as_a_400(server, tmp_path):
    bad = tiny()
    bad["hardware"]["gpus"][0]["name"] = "H10O"
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    status, out = server.request("POST", "/api/solve", {"instance": bad})
    assert status == 400
    cli = cli_error("solve", str(tmp_path / "bad.json"))
    assert out == {"status": "error", "error": cli.replace(str(tmp_path / "bad.json"), "instance")}
    assert "unknown GPU 'H10O'" in out["error"]


@pytest.mark.parametrize("body, status, field", [
    ({"instance": "tiny", "budget_usd": -5}, 400, "budget_usd"),
    ({"instance": "tiny", "budget_usd": "5"}, 422, "budget_usd"),
    ({"instance": "tiny", "confidence": 1.5}, 400, "confidence"),
    ({"instance": "tiny", "scenarios": 0}, 400, "scenarios"),
    ({"instance": "tiny", "time_limit": 0}, 400, "time_limit"),
    ({"instance": "tiny", "objective": "speed"}, 422, "objective"),
    ({"instance": "tiny", "budget": 5}, 422, "budget"),
    ({"instance": "no-such-instance"}, 404, "instance"),
    ({"instance": "../README"}, 404, "instance"),
    ({"instance": {"name": "x"}}, 400, "instance: student"),
    ({}, 422, "instance"),
    ([1, 2], 422, "(request body)"),
])
def test_bad_requests_are_4xx_with_one_line_naming_the_field(server, body, status, field):
    got, out = server.request("POST", "/api/solve", body)
    assert got == status, out
    assert set(out) == {"status", "error"} and out["error"].startswith(field), out
    assert "\n" not in out["error"] and "Traceback" not in out["error"]


def test_non_json_and_non_finite_bodies_are_4xx(server):
    for raw in (b"{not json", b'{"instance": "tiny", "budget_usd": NaN}', b'{"instance": "tiny", "budget_usd": Infinity}'):
        status, out = server.request("POST", "/api/solve", raw=raw)
        assert 400 <= status < 500, (raw, status, out)
        assert "Traceback" not in json.dumps(out)


def test_evaluate_refuses_a_plan_of_another_instance_naming_the_field(server):
    plan = server.call("POST", "/api/solve", {"instance": "tiny", "sensitivity": False})["plan"]
    status, out = server.request("POST", "/api/evaluate", {"instance": "tiny", "plan": {**plan, "gpu_count": 3}})
    assert status == 400 and out["error"].startswith("plan: "), out


def test_a_portfolio_on_the_single_job_endpoints_is_refused(server):
    status, out = server.request("POST", "/api/frontier", {"instance": "portfolio-small"})
    assert status == 400 and "portfolio" in out["error"], out
