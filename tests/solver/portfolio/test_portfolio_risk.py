"""A portfolio schedule's risk under capacity scenarios (spot preemption, on-demand shortfall):
the vectorised replay (``portfolio_risk``) against the scenario-by-scenario brute force
(``portfolio_oracle.replay_one_scenario``), closed forms on hand-made schedules, and the CLI."""

from __future__ import annotations

import copy
import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

from planopt.cli import app
from planopt.errors import InputError
from planopt.models.uncertainty.capacity import draw_capacity, first_preemption_hours
from planopt.portfolio.solve import load_portfolio, solve_portfolio
from planopt.report.portfolio_schema import PortfolioResultSchema
from planopt.portfolio.risk import draw, portfolio_risk, schedule_risk

from tests.support.common import INSTANCES
from tests.support.portfolio_oracle import assert_risk_equals_brute_force, replay_one_scenario, tiny_portfolio, with_shortfall
from tests.support.common import split_seeds

runner = CliRunner()
SMALL = INSTANCES / "portfolio-small.json"


@pytest.mark.parametrize("seed", split_seeds(range(10), 5))
def test_the_replay_equals_the_brute_force_scenario_by_scenario(seed):
    assert_risk_equals_brute_force(with_shortfall(tiny_portfolio(seed), seed), 60, seed)


@pytest.mark.parametrize("seed", range(6))
def test_without_preemption_or_shortfall_every_scenario_is_the_schedule_itself(seed):
    source = copy.deepcopy(tiny_portfolio(seed))
    for g in source["gpus"]:
        g["on_demand_shortfall_probability_per_bucket"], g["on_demand_shortfall_share"] = 0.0, 0.5
        g["spot_preemptions_per_gpu_hour"] = 0.0
    res = solve_portfolio(source, rel_gap=1e-9)
    if not res.jobs:
        pytest.skip("infeasible tiny portfolio")
    risk = portfolio_risk(load_portfolio(source), res.to_dict(), 20, seed)
    assert risk.share_meeting_all() == 1.0
    assert np.allclose(risk.cost_usd, res.cost_usd, rtol=1e-9)
    assert np.all(risk.recourse_usd == 0.0)


def hand_portfolio(od_gpus, spot_gpus, preempt=0.1, short_p=0.0, short_share=0.5, reserved_node=None) -> dict:
    job = tiny_portfolio(0)["jobs"][0]
    g = {"name": "L40S", "reserved_usd_per_gpu_hour": 1.0, "on_demand_usd_per_gpu_hour": [2.0, 3.0, 4.0],
         "on_demand_available_gpus": od_gpus, "spot_usd_per_gpu_hour": 0.5, "spot_available_gpus": spot_gpus,
         "spot_preemptions_per_gpu_hour": preempt, "on_demand_shortfall_probability_per_bucket": short_p,
         "on_demand_shortfall_share": short_share}
    if reserved_node:
        g["node_gpus"] = reserved_node
    job = copy.deepcopy(job)
    job["instance"]["hardware"]["gpus"] = [{"name": "L40S", "counts": [2]}]
    return {"kind": "portfolio", "name": "hand", "horizon": {"buckets": 3, "bucket_hours": 10.0}, "gpus": [g],
            "jobs": [dict(job, release_bucket=0, deadline_bucket=2), dict(copy.deepcopy(job), release_bucket=0, deadline_bucket=2)]}


def hand_result(rows_by_job, reserved_gpus=0, commitment=0.0) -> dict:
    jobs = [{"name": f"j{j}", "release_bucket": 0, "deadline_bucket": 2, "metrics": {"noncompute_usd": 10.0},
             "plan": {}, "schedule": [{"bucket": b, "provider": "unspecified", "gpu": "L40S", "tier": k, "gpus": 2, "hours": h,
                                       "gpu_hours": 2 * h} for b, k, h in rows]} for j, rows in enumerate(rows_by_job)]
    proc = [{"tier": "reserved", "provider": "unspecified", "gpu": "L40S", "gpus": reserved_gpus, "start_bucket": 0,
             "end_bucket": 2, "commitment_usd": commitment}] if reserved_gpus else []
    return {"jobs": jobs, "procurement": proc}


def test_a_preempted_spot_run_is_recovered_on_demand_in_closed_form():
    """Job 0 runs 6 h on 2 spot GPUs in bucket 0 (no on-demand there); preempted after T hours, its
    2 (6 - T)^+ GPU-hours run on demand in bucket 1 at $3; job 1 does nothing."""
    pdata = load_portfolio(hand_portfolio([0, 4, 4], [2, 0, 0], preempt=0.1))
    res = hand_result([[(0, "spot", 6.0)], []])
    scen = draw(pdata, 500, 3)
    risk = schedule_risk(pdata, res, scen)
    T = first_preemption_hours(scen.preemption_uniform[:, 0, 0], 2, 0.1)
    lost = 2 * np.maximum(0.0, 6.0 - T)
    assert np.allclose(risk.recourse_usd, 3.0 * lost)
    assert np.allclose(risk.cost_usd, 20.0 + 2 * np.minimum(6.0, T) * 0.5 + 3.0 * lost)
    assert risk.share_meeting_all() == 1.0
    assert 0 < (lost > 0).mean() < 1   # some scenarios are preempted, some are not
    # the draw's preemption share is the exponential law's, 1 - exp(-n p h), within 4 standard errors
    want = 1 - math.exp(-2 * 0.1 * 6.0)
    assert abs((lost > 0).mean() - want) < 4 * math.sqrt(want * (1 - want) / 500)


def test_lost_work_past_the_deadline_misses_and_is_reported_late():
    """Spot in the last bucket: what is preempted has no bucket left (on demand has no GPUs either)."""
    pdata = load_portfolio(hand_portfolio([0, 0, 0], [0, 0, 2], preempt=0.1))
    scen = draw(pdata, 300, 1)
    risk = schedule_risk(pdata, hand_result([[(2, "spot", 8.0)], []]), scen)
    T = first_preemption_hours(scen.preemption_uniform[:, 0, 2], 2, 0.1)
    assert np.allclose(risk.late_gpu_hours[:, 0], 2 * np.maximum(0.0, 8.0 - T))
    assert list(risk.meets[:, 0]) == list(T >= 8.0)
    assert risk.to_dict()["jobs"][0]["share_meeting_deadline"] == pytest.approx(float((T >= 8.0).mean()))


def test_an_on_demand_shortfall_serves_whole_gangs_in_job_order_and_spare_reservations_recover_for_free():
    """4 on-demand GPUs, short by half in every bucket (2 left): job 0's gang of 2 gets them in bucket 0,
    job 1's does not; job 1 recovers on the 2 reserved GPUs no job holds, at no extra cost."""
    pdata = load_portfolio(hand_portfolio([4, 4, 4], [0, 0, 0], short_p=1.0, short_share=0.5))
    res = hand_result([[(0, "on_demand", 5.0)], [(0, "on_demand", 5.0)]], reserved_gpus=2, commitment=60.0)
    risk = schedule_risk(pdata, res, draw(pdata, 10, 0))
    assert risk.share_meeting_all() == 1.0
    assert np.allclose(risk.cost_usd, 60.0 + 20.0 + 2 * 5.0 * 2.0)   # job 1's work ran on the reservation
    # without the reservation, job 1 recovers on demand in bucket 1 (2 GPUs obtainable there), at $3
    res = hand_result([[(0, "on_demand", 5.0)], [(0, "on_demand", 5.0)]])
    risk = schedule_risk(pdata, res, draw(pdata, 10, 0))
    assert np.allclose(risk.cost_usd, 20.0 + 2 * 5.0 * 2.0 + 2 * 5.0 * 3.0)
    # with no on-demand GPUs obtainable at all, both jobs miss with all their work late
    pdata = load_portfolio(hand_portfolio([4, 4, 4], [0, 0, 0], short_p=1.0, short_share=1.0))
    risk = schedule_risk(pdata, res, draw(pdata, 10, 0))
    assert risk.share_meeting_all() == 0.0 and np.allclose(risk.late_gpu_hours, 10.0)
    assert np.allclose(risk.cost_usd, 20.0)


def test_the_draw_is_seeded_and_rounds_the_shortfall_down_to_whole_gpus():
    pdata = load_portfolio(hand_portfolio([7, 7, 7], [2, 2, 2], short_p=[0.0, 1.0, 0.5], short_share=0.5))
    a, b, c = draw_capacity(pdata, 400, 5), draw_capacity(pdata, 400, 5), draw_capacity(pdata, 400, 6)
    assert np.array_equal(a.preemption_uniform, b.preemption_uniform) and np.array_equal(a.on_demand_gpus, b.on_demand_gpus)
    assert not np.array_equal(a.preemption_uniform, c.preemption_uniform)
    assert np.all(a.on_demand_gpus[:, 0, 0] == 7) and np.all(a.on_demand_gpus[:, 0, 1] == 3)
    assert set(np.unique(a.on_demand_gpus[:, 0, 2])) == {3.0, 7.0}
    assert np.all(a.preemption_uniform > 0) and np.all(a.preemption_uniform <= 1)


def test_missing_or_half_given_shortfall_fields_are_refused_naming_the_field():
    p = hand_portfolio([4, 4, 4], [0, 0, 0])
    del p["gpus"][0]["on_demand_shortfall_probability_per_bucket"], p["gpus"][0]["on_demand_shortfall_share"]
    with pytest.raises(InputError, match=r"gpus\.0\.on_demand_shortfall_probability_per_bucket"):
        draw(load_portfolio(p), 10, 0)
    p["gpus"][0]["on_demand_shortfall_share"] = 0.5
    with pytest.raises(InputError, match=r"gpus\.0\.on_demand_shortfall_probability_per_bucket: expected with"):
        load_portfolio(p)
    p["gpus"][0]["on_demand_shortfall_probability_per_bucket"] = [0.1, 0.2]
    with pytest.raises(InputError, match=r"on_demand_shortfall_probability_per_bucket.*3 values"):
        load_portfolio(p)
    p["gpus"][0]["on_demand_shortfall_probability_per_bucket"] = 1.5
    with pytest.raises(InputError, match="on_demand_shortfall_probability_per_bucket"):
        load_portfolio(p)


def test_cli_scenarios_print_a_risk_block_that_holds_to_the_schema():
    res = runner.invoke(app, ["solve", str(SMALL), "--json", "--scenarios", "300", "--seed", "2"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    PortfolioResultSchema.model_validate(out)
    risk = out["risk"]
    assert risk["scenarios"] == 300 and risk["seed"] == 2 and len(risk["jobs"]) == len(out["jobs"])
    assert 0.0 <= risk["share_meeting_all_deadlines"] <= min(j["share_meeting_deadline"] for j in risk["jobs"])
    pc = risk["percentiles"]["cost_usd"]
    assert pc["p10"] <= pc["p50"] <= pc["p90"]
    again = json.loads(runner.invoke(app, ["solve", str(SMALL), "--json", "--scenarios", "300", "--seed", "2"]).stdout)
    assert again["risk"] == risk
    text = runner.invoke(app, ["solve", str(SMALL), "--scenarios", "50"])
    assert text.exit_code == 0 and "capacity scenarios" in text.stdout and "meets deadline" in text.stdout


def test_cli_refuses_what_a_portfolio_does_not_take(tmp_path):
    for args, needle in ((["--confidence", "0"], "--confidence"), (["--seed", "3"], "--seed: needs --scenarios"),
                         (["--scenarios", "0"], "--scenarios"), (["--scenarios", "100000000"], "--scenarios"),
                         (["--cvar", "0.9"], "--cvar")):
        res = runner.invoke(app, ["solve", str(SMALL), *args])
        assert res.exit_code == 2, (args, res.output)
        assert needle in res.output and "Traceback" not in res.output
    p = json.loads(SMALL.read_text())
    del p["gpus"][1]["on_demand_shortfall_probability_per_bucket"], p["gpus"][1]["on_demand_shortfall_share"]
    for job in p["jobs"]:
        if isinstance(job["instance"], str):
            job["instance"] = str((SMALL.parent / job["instance"]).resolve())
    f = tmp_path / "p.json"
    f.write_text(json.dumps(p))
    res = runner.invoke(app, ["solve", str(f), "--scenarios", "10"])
    assert res.exit_code == 2 and "gpus.1.on_demand_shortfall_probability_per_bucket" in res.output
    assert runner.invoke(app, ["solve", str(f)]).exit_code == 0   # without --scenarios the fields are not needed


# --- a schedule held at a stated confidence (SAA) -----------------------------
from planopt.portfolio.chance import solve_portfolio_at_confidence, undisrupted  # noqa: E402
from tests.support.portfolio_oracle import best_chance_cost, close  # noqa: E402

CHANCE_SCENARIOS = 5   # brute force: every set of ceil(C S) of them


@pytest.mark.parametrize("seed", split_seeds(range(10), 5))
def test_the_confidence_schedule_is_the_brute_force_optimum_and_holds_in_sample(seed):
    source = with_shortfall(tiny_portfolio(seed), seed + 100)
    pdata = load_portfolio(source)
    confidence, S = [(0.6, CHANCE_SCENARIOS), (0.8, CHANCE_SCENARIOS), (0.5, CHANCE_SCENARIOS + 1)][seed % 3]
    scen = draw(pdata, S, seed)
    oracle = best_chance_cost(pdata, scen, confidence)
    res = solve_portfolio_at_confidence(source, confidence, S, seed, rel_gap=1e-9, out_of_sample=200, guard=False)
    if oracle is None:
        assert res.status == "infeasible" and "undisrupted" in res.message, (res.status, res.cost_usd)
        return
    assert res.status == "optimal", res.message
    assert close(res.cost_usd, oracle), (res.cost_usd, oracle)
    assert res.violations == []
    out = res.to_dict()
    ok = undisrupted(pdata, out, scen)
    assert ok.sum() >= math.ceil(confidence * S - 1e-9)
    assert res.risk["chance"]["in_sample_share_undisrupted"] == pytest.approx(ok.mean())
    # undisrupted scenarios meet every deadline under the recourse (it never has anything to do there)
    risk = schedule_risk(pdata, out, scen)
    assert np.all(risk.meets[ok].all(axis=1))
    PortfolioResultSchema.model_validate(json.loads(json.dumps(out, allow_nan=False)))


def test_a_higher_confidence_never_costs_less_and_trades_spot_away():
    source = with_shortfall(tiny_portfolio(5), 5)   # a spot schedule, preempted in some scenarios
    free = solve_portfolio(source, rel_gap=1e-9)
    costs = [solve_portfolio_at_confidence(source, c, 40, 0, rel_gap=1e-9, out_of_sample=100, guard=False).cost_usd
             for c in (0.5, 0.8, 0.95)]
    assert free.cost_usd <= costs[0] * (1 + 1e-9) and costs[0] <= costs[1] * (1 + 1e-9) <= costs[2] * (1 + 1e-9)


def test_no_schedule_at_the_confidence_is_infeasible_with_a_reason_and_exit_3_on_the_cli(tmp_path):
    """On-demand is the only tier and it is never obtainable: every schedule is disrupted in every scenario."""
    p = hand_portfolio([4, 4, 4], [0, 0, 0], short_p=1.0, short_share=1.0)
    p["gpus"][0]["max_reserved_gpus"] = 0
    p["horizon"]["bucket_hours"] = 200.0
    assert solve_portfolio(p, rel_gap=1e-9).status == "optimal"
    res = solve_portfolio_at_confidence(p, 0.5, 10, 0, out_of_sample=50)
    assert res.status == "infeasible" and "5 of the 10 capacity scenarios" in res.message
    f = tmp_path / "p.json"
    f.write_text(json.dumps(p))
    out = runner.invoke(app, ["solve", str(f), "--confidence", "0.5", "--scenarios", "10", "--json"])
    data = json.loads(out.stdout)
    assert data["status"] == "infeasible" and data["risk"] is None
    PortfolioResultSchema.model_validate(data)


def test_cli_confidence_reports_in_and_out_of_sample_shares():
    res = runner.invoke(app, ["solve", str(SMALL), "--json", "--confidence", "0.9", "--scenarios", "40", "--seed", "1"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    PortfolioResultSchema.model_validate(out)
    chance = out["risk"]["chance"]
    assert chance["confidence"] == 0.9 and chance["scenarios_needed"] == math.ceil(chance["in_sample_target"] * 40 - 1e-9)
    assert chance["in_sample_target"] >= 0.9 and chance["in_sample_share_undisrupted"] >= chance["in_sample_target"] - 1e-9
    assert chance["out_of_sample"]["seed"] == 1 + 1_000_003
    assert chance["out_of_sample"]["share_meeting_all_deadlines"] >= chance["out_of_sample"]["share_undisrupted"]
    assert runner.invoke(app, ["solve", str(SMALL), "--confidence", "1.5"]).exit_code == 2
    big = runner.invoke(app, ["solve", str(SMALL), "--confidence", "0.9", "--scenarios", "5000"])
    assert big.exit_code == 2 and "--scenarios: with --confidence at most 1,000" in big.output


def test_the_guard_raises_the_in_sample_share_until_the_fresh_share_holds():
    """10 scenarios are few: the SAA schedule at C falls short on fresh scenarios; the guard solves
    again at a higher in-sample share (seed 5), or keeps the schedule and says why it could not (seed 0)."""
    for seed, confidence in ((5, 0.6), (0, 0.8)):
        source = with_shortfall(tiny_portfolio(seed), seed)
        plain = solve_portfolio_at_confidence(source, confidence, 10, 0, rel_gap=1e-9, out_of_sample=2000, guard=False)
        guarded = solve_portfolio_at_confidence(source, confidence, 10, 0, rel_gap=1e-9, out_of_sample=2000)
        c0, c = plain.risk["chance"], guarded.risk["chance"]
        assert c0["in_sample_target"] == confidence and c0["guard_rounds"] == 0 and c0["guard"] is None
        assert c0["out_of_sample"]["share_undisrupted"] < confidence - 0.02   # the sample alone falls short
        if seed == 5:
            assert c["guard_rounds"] >= 1 and c["in_sample_target"] > confidence and c["guard"] is None
            assert c["out_of_sample"]["share_undisrupted"] >= confidence - 0.02
            assert c["in_sample_share_undisrupted"] >= c["in_sample_target"] - 1e-9
            assert guarded.cost_usd >= plain.cost_usd * (1 - 1e-9)
        else:
            assert "no schedule runs undisrupted" in c["guard"] and guarded.cost_usd == pytest.approx(plain.cost_usd)


def test_a_confidence_solve_out_of_time_is_a_time_limit_not_an_error():
    res = runner.invoke(app, ["solve", str(SMALL), "--confidence", "0.9", "--time-limit", "0.01", "--json"])
    assert res.exit_code == 4, res.output
    out = json.loads(res.stdout)
    assert out["status"] == "time_limit" and out["risk"] is None
    PortfolioResultSchema.model_validate(out)


def test_recovery_goes_earliest_deadline_first_not_in_job_order():
    """Bucket 0 has no on-demand GPU (short by all), buckets 1 and 2 have 2: both jobs lose their 5 h
    on 2 GPUs in bucket 0; job 1 (deadline bucket 1) recovers in bucket 1 before job 0 (deadline 2),
    which recovers in bucket 2. In job order, job 1 would have missed."""
    pdata = load_portfolio(hand_portfolio([4, 2, 2], [0, 0, 0], short_p=[1.0, 0.0, 0.0], short_share=1.0))
    res = hand_result([[(0, "on_demand", 5.0)], [(0, "on_demand", 5.0)]])
    res["jobs"][1]["deadline_bucket"] = 1
    risk = schedule_risk(pdata, res, draw(pdata, 4, 0))
    assert risk.share_meeting_all() == 1.0
    assert np.allclose(risk.cost_usd, 20.0 + 10.0 * 3.0 + 10.0 * 4.0)
    for s in range(4):
        cost, late = replay_one_scenario(pdata, res, draw(pdata, 4, 0).preemption_uniform[s], draw(pdata, 4, 0).on_demand_gpus[s])
        assert cost == pytest.approx(risk.cost_usd[s]) and late == [0.0, 0.0]
