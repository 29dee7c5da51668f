"""The service's portfolio endpoints take the CLI's portfolio options: capacity risk, confidence, budget.

``/api/portfolio/solve``, ``/api/solve`` given a portfolio and ``/api/jobs`` answer
``scenarios``, ``seed``, ``confidence`` and ``budget_usd`` with the JSON
``planopt solve portfolio.json --json`` prints for the same flags (timings aside),
and a wrong value with the CLI's one line, its flag spelt as the request's field
(both check through ``planopt.portfolio.options``), as a 4xx.
"""

import json

import pytest
from typer.testing import CliRunner

from planopt.cli import app
from planopt.portfolio.options import CLI_NAMES
from tests.support.common import INSTANCES
from tests.support.service_server import Server, without_timings

PORTFOLIO = INSTANCES / "portfolio-small.json"
# Few scenarios and a time limit keep the chance-constrained solve of portfolio-small to seconds.
CHANCE = {"confidence": 0.8, "scenarios": 20, "seed": 1, "time_limit": 60}


def cli_json(*args: str):
    result = CliRunner().invoke(app, ["solve", str(PORTFOLIO), *args, "--json"])
    assert result.exit_code in (0, 3), (args, result.exit_code, result.stderr)
    return json.loads(result.stdout)


def cli_error(*args: str) -> str:
    """The CLI's one line for these flags, with each flag spelt as the service's field."""
    result = CliRunner().invoke(app, ["solve", str(PORTFOLIO), *args])
    assert result.exit_code == 2, (args, result.exit_code, result.stdout)
    line = result.stderr.strip().removeprefix("error: ")
    for field, flag in sorted(CLI_NAMES.items(), key=lambda kv: -len(kv[1])):
        line = line.replace(flag, field)
    return line


def flags(body: dict) -> list[str]:
    """The CLI's flags for a request's options."""
    out = []
    for field, value in body.items():
        out += [CLI_NAMES[field], str(value)]
    return out


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("portfolio")).start()
    yield s
    s.stop()


@pytest.mark.slow  # long (13-17 s on 2 cores); .ci/run runs it with -m slow
def test_portfolio_scenarios_are_the_cli_risk_on_both_endpoints(server):
    options = {"scenarios": 200, "seed": 3}
    api = server.call("POST", "/api/portfolio/solve", {"portfolio": "portfolio-small", **options})
    via_solve = server.call("POST", "/api/solve", {"instance": "portfolio-small", **options})
    cli = cli_json(*flags(options))
    assert api["status"] == "optimal" and api["risk"]["scenarios"] == 200 and api["risk"]["seed"] == 3
    assert without_timings(api) == without_timings(cli) == without_timings(via_solve)
    # the risk block is the library's replay of the printed schedule over the same draw
    from planopt.portfolio.solve import load_portfolio
    from planopt.portfolio.risk import portfolio_risk
    assert api["risk"] == portfolio_risk(load_portfolio(PORTFOLIO), api, 200, 3).to_dict()
    # and another seed is another draw: the seed is passed, not dropped
    other = server.call("POST", "/api/portfolio/solve", {"portfolio": "portfolio-small", "scenarios": 200, "seed": 4})
    assert other["risk"]["seed"] == 4 and other["jobs"] == api["jobs"]


@pytest.mark.slow  # 9 s on 2 cores (the default run's heaviest); .ci/run runs it with -m slow
def test_portfolio_confidence_is_the_cli_schedule_held_at_a_confidence(server):
    api = server.call("POST", "/api/portfolio/solve", {"portfolio": "portfolio-small", **CHANCE})
    cli = cli_json(*flags(CHANCE))
    chance = api["risk"]["chance"]
    assert chance["confidence"] == 0.8 and chance["scenarios_needed"] == 16 and api["risk"]["scenarios"] == 20
    assert chance["in_sample_share_undisrupted"] >= 0.8
    assert without_timings(api) == without_timings(cli)


@pytest.mark.slow  # 9 s on 2 cores (the default run's heaviest); .ci/run runs it with -m slow
def test_portfolio_budget_is_the_cli_budget(server):
    plain = server.call("POST", "/api/portfolio/solve", {"portfolio": "portfolio-small"})
    budget = round(plain["cost_usd"] * 0.9, 2)   # under the least cost: the CLI's over-budget answer
    api = server.call("POST", "/api/solve", {"instance": "portfolio-small", "budget_usd": budget})
    cli = cli_json("--budget-usd", str(budget))
    assert api["status"] != "optimal" and without_timings(api) == without_timings(cli)


BAD = [  # the options, and the field the error names
    ({"scenarios": -3}, "scenarios"),
    ({"scenarios": 0}, "scenarios"),
    ({"confidence": 1.5}, "confidence"),
    ({"confidence": 0.5, "scenarios": 2000}, "scenarios"),
    ({"scenarios": 10, "seed": -1}, "seed"),
    ({"seed": 2}, "seed"),
    ({"budget_usd": -1.0}, "budget_usd"),
    ({"time_limit": 0.0}, "time_limit"),
]


@pytest.mark.parametrize("options, field", BAD, ids=[",".join(f"{k}={v}" for k, v in o.items()) for o, _ in BAD])
def test_bad_portfolio_options_get_the_cli_line_as_a_400_on_every_portfolio_path(server, options, field):
    expected = cli_error(*flags(options))
    assert expected.startswith(f"{field}: "), expected
    for path, body in (("/api/portfolio/solve", {"portfolio": "portfolio-small", **options}),
                       ("/api/solve", {"instance": "portfolio-small", **options}),
                       ("/api/jobs", {"kind": "portfolio", "body": {"portfolio": "portfolio-small", **options}}),
                       ("/api/jobs", {"kind": "solve", "body": {"instance": "portfolio-small", **options}})):
        status, out = server.request("POST", path, body)
        assert (status, out) == (400, {"status": "error", "error": expected}), (path, body)


@pytest.mark.parametrize("options", [{"cvar": 0.5}, {"objective": "quality"}, {"min_quality": 3.0},
                                     {"deadline_hours": 10.0}, {"max_forgetting_points": 1.0}],
                         ids=lambda o: next(iter(o)))
def test_options_a_portfolio_does_not_take_are_refused_as_the_cli_refuses_them(server, options):
    expected = cli_error(*flags(options))
    status, out = server.request("POST", "/api/solve", {"instance": "portfolio-small", **options})
    assert (status, out) == (400, {"status": "error", "error": expected})
    # the portfolio endpoint does not declare them at all: an unknown field
    status, out = server.request("POST", "/api/portfolio/solve", {"portfolio": "portfolio-small", **options})
    assert status == 422 and out["error"].startswith(f"{next(iter(options))}: unknown field"), out


def test_a_missing_capacity_field_is_named_before_the_solve(server):
    portfolio = json.loads(PORTFOLIO.read_text())
    del portfolio["gpus"][0]["on_demand_shortfall_probability_per_bucket"], portfolio["gpus"][0]["on_demand_shortfall_share"]
    assert server.call("POST", "/api/validate", {"instance": portfolio})["valid"]   # a valid portfolio, without capacity risk
    for options in ({"scenarios": 10}, {"confidence": 0.5}):
        status, out = server.request("POST", "/api/portfolio/solve", {"portfolio": portfolio, **options})
        assert status == 400 and out["error"].startswith("gpus.0.on_demand_shortfall_probability_per_bucket: "), out


def test_the_openapi_document_declares_the_portfolio_options(server):
    _, doc = server.request("GET", "/openapi.json", token=None)
    fields = doc["components"]["schemas"]["PortfolioRequest"]["properties"]
    assert {"scenarios", "seed", "confidence", "budget_usd", "time_limit"} <= set(fields)
    assert "cvar" not in fields
    assert all(fields[f].get("description") for f in ("scenarios", "seed", "confidence", "budget_usd"))


@pytest.mark.slow
def test_a_portfolio_job_with_scenarios_is_the_cli_risk(server):
    options = {"scenarios": 100, "seed": 5}
    status, out = server.request("POST", "/api/jobs", {"kind": "portfolio", "body": {"portfolio": "portfolio-small", **options}})
    assert status == 202, out
    job = server.wait_job(out["id"])
    assert job["status"] == "done", job
    assert without_timings(job["result"]) == without_timings(cli_json(*flags(options)))


@pytest.mark.parametrize("path, body", [
    ("/api/solve", {"instance": "tiny", "scenarios": 10}),
    ("/api/evaluate", {"instance": "tiny", "plan": {}, "scenarios": 10}),
    ("/api/frontier", {"instance": "tiny", "x": "cost_usd", "y": "probability", "scenarios": 10}),
    ("/api/portfolio/solve", {"portfolio": "portfolio-small", "scenarios": 10}),
], ids=lambda v: v if isinstance(v, str) else None)
def test_a_negative_seed_is_a_400_naming_the_field_on_every_endpoint_that_draws(server, path, body):
    status, out = server.request("POST", path, {**body, "seed": -1})   # numpy's ValueError was a 500
    assert (status, out) == (400, {"status": "error", "error": "seed: expected a whole number from 0, got -1"})
