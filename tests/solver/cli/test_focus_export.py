"""`planopt solve FILE --out spend.csv --format focus` (issue 25 item 5): the plan's planned charges as FOCUS rows
that keep the FOCUS 1.0 rules (``tests/support/focus_spec.py``), add up to the plan's cost to the cent, carry the
instance's labels as tags, and reach the alert line on the day the report says; every misuse of ``--format`` and
``--start-date`` is one line, exit 2, and no file."""

import datetime as dt
import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from planopt.cli import app
from planopt.models.cost.tolerance import limit_slack

from tests.support.common import INSTANCES
from tests.support.focus_spec import violations
from tests.support.portfolio_oracle import tiny_portfolio

runner = CliRunner()


def job(tmp_path, name="llama-70b-domain-injection.json", pricing=None, **constraints):
    data = json.loads((INSTANCES / name).read_text())
    if pricing:
        data["hardware"]["pricing"] = pricing
    data["labels"] = {"project": "legal-llm", "team": "post-training"}
    data["constraints"] = {**data.get("constraints", {}), **constraints}
    path = tmp_path / "job.json"
    path.write_text(json.dumps(data))
    return path


def rows_of(path):
    frame = pd.read_csv(path) if path.suffix == ".csv" else pd.read_parquet(path)
    return frame.astype(object).where(frame.notna(), None).to_dict("records")


def first_day_reaching(rows, line_usd, start):
    """The first day (1-based from ``start``) by whose end the rows' cumulative BilledCost reaches ``line_usd``."""
    by_day: dict[str, float] = {}
    for r in rows:
        by_day[r["ChargePeriodStart"]] = by_day.get(r["ChargePeriodStart"], 0.0) + r["BilledCost"]
    cumulative = 0.0
    for day in sorted(by_day):
        cumulative += by_day[day]
        if cumulative >= line_usd - limit_slack(line_usd):
            return (dt.date.fromisoformat(day[:10]) - start).days + 1
    return None


def test_focus_rows_keep_the_rules_add_up_and_cross_the_alert_line_on_the_reported_day(tmp_path):
    # a five-day plan (118.6 h; $120,000 of data bought on day 1) whose alert line (72% of the budget) falls on day 3
    out = tmp_path / "spend.csv"
    result = runner.invoke(app, ["solve", str(job(tmp_path, budget_usd=190_000.0, alert_share=0.72)), "--no-sensitivity",
                                 "--json", "--out", str(out), "--format", "focus", "--start-date", "2026-12-30"])
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    rows = rows_of(out)
    assert violations(rows) == []
    cost = answer["metrics"]["cost_usd"]
    assert abs(sum(r["BilledCost"] for r in rows) - cost) < 0.005          # to the cent
    assert {json.loads(r["Tags"])["project"] for r in rows} == {"legal-llm"}
    assert {json.loads(r["Tags"])["job"] for r in rows} == {json.loads((INSTANCES / "llama-70b-domain-injection.json").read_text())["name"]}
    # one row per charge and day, from the start date, across the month's end into January's billing period
    days = sorted({r["ChargePeriodStart"] for r in rows})
    assert days[0] == "2026-12-30T00:00:00Z" and any(d.startswith("2027-01") for d in days)
    assert all(r["BillingPeriodStart"] == "2027-01-01T00:00:00Z" for r in rows if r["ChargePeriodStart"].startswith("2027-01"))
    # the alert line is reached on the day the cumulative rows first reach it
    alert = answer["spend"]["lines"]["alert"]
    assert alert["usd"] == pytest.approx(136_800.0) and alert["reached"] is not None
    first = first_day_reaching(rows, 136_800.0, dt.date(2026, 12, 30))
    assert 1 < first == alert["reached"]["day"]
    assert (first - 1) * 24 < alert["reached"]["hour"] <= first * 24
    assert answer["spend"]["lines"]["budget"]["reached"] is None          # the plan costs less than its budget


def test_parquet_rows_of_spot_gpus_and_the_text_report(tmp_path):
    out = tmp_path / "spend.parquet"
    result = runner.invoke(app, ["solve", str(job(tmp_path, "tiny.json", pricing="spot", budget_usd=800.0)),
                                 "--no-sensitivity", "--out", str(out), "--format", "focus", "--start-date", "2026-03-01"])
    assert result.exit_code == 0, result.output
    rows = rows_of(out)
    assert rows and violations(rows) == []
    # spot GPUs are FOCUS's dynamic pricing; every other line is standard
    assert {r["PricingCategory"] for r in rows if r["ServiceCategory"] == "Compute"} == {"Dynamic"}
    assert {r["PricingCategory"] for r in rows if r["ServiceCategory"] != "Compute"} == {"Standard"}
    assert "alert line $640 (80% of the budget): reached on day 1" in result.stdout
    assert "budget $800: never reached" in result.stdout


@pytest.mark.parametrize("args, says", [
    (["--format", "focus"], "--format: says what --out holds"),
    (["--out", "{out}", "--format", "xml"], "--format: expected one of plan, focus, got 'xml'"),
    (["--out", "{out}", "--start-date", "2026-03-01"], "--start-date: dates the FOCUS rows; needs --out FILE --format focus"),
    (["--out", "{out}", "--format", "focus", "--start-date", "2026-3-1"], "--start-date: expected a date YYYY-MM-DD"),
    (["--out", "{out}", "--format", "focus", "--start-date", "2026-02-30"], "--start-date: expected a date YYYY-MM-DD"),
])
def test_format_and_start_date_are_honoured_or_refused_in_one_line(tmp_path, args, says):
    out = tmp_path / "spend.csv"
    result = runner.invoke(app, ["solve", str(INSTANCES / "tiny.json"), *[a.format(out=out) for a in args]])
    assert result.exit_code == 2 and says in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_a_portfolio_writes_each_job_from_its_start_bucket_and_its_reservation_as_a_commitment(tmp_path):
    portfolio = tiny_portfolio(1)   # two jobs in bucket 1: one on on-demand GPUs, one on 2 reserved L40S
    portfolio.update(labels={"project": "q3-models"}, budget_usd=4000.0, alert_share=0.5)
    path, out = tmp_path / "portfolio.json", tmp_path / "spend.csv"
    path.write_text(json.dumps(portfolio))
    result = runner.invoke(app, ["solve", str(path), "--serial", "--json", "--out", str(out), "--format", "focus",
                                 "--start-date", "2026-06-01"])
    assert result.exit_code == 0, result.output
    answer, rows = json.loads(result.stdout), rows_of(out)
    assert violations(rows) == []
    assert abs(sum(r["BilledCost"] for r in rows) - answer["cost_usd"]) < 0.005          # to the cent
    committed = [r for r in rows if r["PricingCategory"] == "Committed"]
    reserved = answer["cost_breakdown_usd"]["reserved"]
    assert committed and abs(sum(r["BilledCost"] for r in committed) - reserved) < 0.005
    assert all(r["ChargeCategory"] == "Purchase" and r["CommitmentDiscountType"] == "Reservation" for r in committed)
    hours = answer["bucket_hours"]
    for job in answer["jobs"]:
        gpu = [r for r in rows if r["ServiceName"] == "GPU compute" and r["ResourceId"].startswith(job["name"] + "/")]
        first_day = dt.date(2026, 6, 1) + dt.timedelta(days=int(job["start_bucket"] * hours // 24))
        assert all(r["ChargePeriodStart"] >= first_day.isoformat() for r in gpu)
        tags = {r["Tags"] for r in rows if r["ResourceId"].startswith(job["name"] + "/")}
        assert tags == {json.dumps({"job": job["name"], "project": "q3-models"}, sort_keys=True)}
    # the portfolio's alert line (half its budget) falls on the day its cumulative rows reach it
    alert = answer["spend"]["lines"]["alert"]
    assert alert["usd"] == pytest.approx(2000.0)
    assert alert["reached"]["day"] == first_day_reaching(rows, 2000.0, dt.date(2026, 6, 1))


def test_labels_and_alert_share_are_checked(tmp_path):
    for field, value, says in (("labels", {"team": 7}, "labels.team: Input should be a valid string"),
                               ("constraints", {"alert_share": 0.0}, "constraints.alert_share: Input should be greater than 0")):
        data = json.loads((INSTANCES / "tiny.json").read_text())
        data[field] = value
        path = tmp_path / "bad.json"
        path.write_text(json.dumps(data))
        result = runner.invoke(app, ["validate", str(path)])
        assert result.exit_code == 2 and says in result.output, result.output


def test_the_readme_states_what_its_focus_example_writes(tmp_path, monkeypatch):
    """The numbers README.md's "Planned spend for finance" gives for its first command are its output's."""
    import re
    import shlex
    from tests.support.common import ROOT
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Planned spend for finance"):readme.index("## Instances")]
    command = re.search(r"\.venv/bin/planopt (solve instances/llama\S+ .*--format focus.*)", section)[1]
    (tmp_path / "instances").symlink_to(INSTANCES)
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, [*shlex.split(command), "--json", "--no-sensitivity"])
    assert result.exit_code == 0, result.output
    answer, rows = json.loads(result.stdout), rows_of(tmp_path / "spend.csv")
    stated = re.search(r"writes (?P<rows>[\d,]+) rows .* plan's \$(?P<total>[\d,]+) to the cent", section)
    assert (f"{len(rows):,}", f"{answer['metrics']['cost_usd']:,.0f}") == (stated["rows"], stated["total"])
    alert = re.search(r"alert line of \$(?P<usd>[\d,]+) .* reached on day (?P<day>\d+), hour (?P<hour>[\d.]+)", section)
    reached = answer["spend"]["lines"]["alert"]
    assert (f"{reached['usd']:,.0f}", reached["reached"]["day"], f"{reached['reached']['hour']:.1f}") == (
        alert["usd"], int(alert["day"]), alert["hour"])
    data = sum(r["BilledCost"] for r in rows if r["ServiceName"] == "Training data" and r["ChargePeriodStart"].startswith("2026-01-05"))
    assert f"${data:,.0f} of data is bought on day 1" in section
