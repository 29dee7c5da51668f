"""``track``: the verdicts on runs generated from known parameters, the measured state against the plan, the
update going through fit's own Bayes update, and the API and service answers."""

import json

import pytest

import planopt
from planopt.api import evaluate_given_plan
from planopt.instance import load_instance
from planopt.models.cost.evaluator import Evaluator
from planopt.models.schema.plan import Recipe
from planopt.models.uncertainty import model as unc
from planopt.runs.readers import read_csv_text, read_run
from planopt.runs.state import read_mapping, run_state
from planopt.runs.track import AT_RISK_SHARE, OFF_TRACK_SHARE, pilot_rows, prefix_recipe, track
from planopt.uncertainty.fit import predict

from benchmarks import make_synthetic_run as gen
from tests.support.common import INSTANCES

RUN = INSTANCES / "runs" / "qwen3-8b-math-slow"
SCENARIOS = 300


def shipped_instance(**limits):
    raw = json.loads((RUN / "instance.json").read_text())
    raw["constraints"].update(limits)
    inst = load_instance(raw)
    plan, _ = evaluate_given_plan(inst, json.loads((RUN / "plan.json").read_text()), "plan.json")
    return inst, plan


@pytest.fixture(scope="module")
def slow():
    inst, plan = shipped_instance()
    state = run_state(read_run(RUN / "wandb.csv"), read_mapping(RUN / "mapping.json"), inst, plan, Evaluator(inst))
    return inst, plan, state, track(inst, plan, state, SCENARIOS)


def generated(inst, plan, factors, share, seed):
    text = gen.synthetic_history(inst, plan, factors, share=share, seed=seed).to_csv(index=False)
    return run_state(read_csv_text(text, "generated.csv"), gen.MAPPING, inst, plan, Evaluator(inst))


def test_the_shipped_slow_run_is_not_on_track_and_its_truth_misses_the_quality_floor(slow):
    inst, plan, _, result = slow
    truth = Evaluator(unc.apply(inst, gen.true_values(inst, gen.SLOW))).evaluate(plan)
    assert truth.quality < inst.constraints.min_quality          # the plan fails at the generator's parameters
    assert result.verdict != "on track" and result.verdict_limit == "min_quality"
    assert result.after.share() < result.before.share()          # the run made the plan less likely to hold
    assert result.headline == f"{result.verdict}: min_quality"


def test_a_run_at_the_priors_point_values_is_on_track():
    """A cost-optimal plan sits on its quality floor (the shipped plan meets 70 by 0.54 points), so at the point
    values the verdict would turn on the noise; with floors the point plan clears (66 points, 5 of forgetting)
    the truth meets every limit with room, and the run must say so."""
    inst, plan = shipped_instance(min_quality=66, max_forgetting_points=5)
    truth = Evaluator(unc.apply(inst, gen.true_values(inst, gen.POINT))).evaluate(plan)
    assert truth.feasible
    for seed in (1, 2):
        result = track(inst, plan, generated(inst, plan, gen.POINT, 0.1, seed), SCENARIOS, seed)
        assert result.verdict == "on track", (seed, result.after.share())
        assert result.after.share() >= AT_RISK_SHARE and result.verdict_limit is None


def test_the_measured_step_time_is_the_generators_and_the_update_is_fits(slow):
    inst, plan, state, result = slow
    step = next(c for c in result.checks if c.name == "step_seconds")
    # the truth is 1.5x the point values' step time, measured over 80 steps with 3 % noise
    row = pilot_rows(inst, plan, state)[0]
    assert row.kind == "step_seconds" and row.value == state.measured_step_seconds
    assert state.measured_step_seconds / predict(Evaluator(inst), row) == pytest.approx(gen.SLOW["step_time"], rel=0.03)
    assert step.position == "above P90"
    fitted = {p.name: p for p in result.fit.parameters}
    mfu = fitted["efficiency.mfu_factor"]
    assert mfu.point_after == pytest.approx(inst.efficiency.mfu_factor / gen.SLOW["step_time"], rel=0.1)
    # the fitted instance is what the updated share is drawn on: its point values are the posterior medians
    assert result.fit.fitted.efficiency.mfu_factor == mfu.point_after


def test_the_money_lines_follow_the_measured_burn(slow):
    inst, _, state, result = slow
    budget, alert = result.lines
    assert (budget.name, budget.usd, alert.usd) == ("budget", 60000.0, 0.8 * 60000.0)   # alert_share's default
    # the burn is the spend per elapsed hour plus the operations' per-wall-hour rate
    assert result.burn_usd_per_hour == pytest.approx(state.spend_usd / state.elapsed_hours + inst.operations.usd_per_wall_hour)
    for line in result.lines:
        assert result.committed_usd + result.burn_usd_per_hour * line.crossing_hours == pytest.approx(line.usd)
    assert result.projected_end_hours == pytest.approx(state.elapsed_hours * 5)          # 80 of 400 steps


def test_the_verdict_thresholds_are_ordered():
    assert 0 < OFF_TRACK_SHARE < AT_RISK_SHARE < 1


def test_a_prefix_of_a_uniform_schedule_is_exact_and_a_taper_is_read_by_phase():
    r = Recipe("opd", 300, (16, 16, 16), "fp8")
    assert prefix_recipe(r, 100) == Recipe("opd", 100, (16, 16, 16), "fp8")
    taper = Recipe("rl", 300, (16, 8, 4))
    assert prefix_recipe(taper, 100).samples_per_prompt == (16, 16, 16)   # the first third ran at 16
    assert prefix_recipe(taper, 300) == taper


def test_the_api_returns_the_result_and_a_frame_of_series():
    result = planopt.track(RUN / "instance.json", RUN / "plan.json", RUN / "wandb.csv", RUN / "mapping.json",
                           scenarios=SCENARIOS)
    frame = result.frame()
    assert list(frame.columns) == ["series", "step", "value"]
    assert set(frame["series"]) == {"step_seconds", "task_score", "general_score"}
    assert len(frame[frame["series"] == "step_seconds"]) == 80
    assert isinstance(result, planopt.TrackResult) and isinstance(result.state, planopt.RunState)


def test_the_service_payload_is_the_cli_json(slow):
    """``POST /api/track``'s work (the run as CSV text) answers what ``track --json`` prints."""
    from planopt.service.payloads import track_payload
    from typer.testing import CliRunner
    from planopt.cli import app
    inst_raw = json.loads((RUN / "instance.json").read_text())
    answer = track_payload(inst_raw, {"plan": json.loads((RUN / "plan.json").read_text()),
                                      "run_csv": (RUN / "wandb.csv").read_text(), "mapping": gen.MAPPING,
                                      "scenarios": 100, "seed": 0})
    cli = CliRunner().invoke(app, ["track", str(RUN / "instance.json"), str(RUN / "plan.json"), str(RUN / "wandb.csv"),
                                   "--mapping", str(RUN / "mapping.json"), "--scenarios", "100", "--json"])
    assert cli.exit_code == 0, cli.stderr
    expected = json.loads(cli.stdout)
    answer["state"].pop("source"), expected["state"].pop("source")
    assert json.loads(json.dumps(answer)) == expected
    assert answer["scenarios"] == 100 and answer["headline"].startswith(slow[3].verdict)


def test_the_series_are_the_bands_and_the_state_and_a_series_not_logged_is_null(slow):
    """``series`` (``track --json``'s, which ``--plot`` draws and the page's Run view reads): each panel's band is
    ``bands``' rows for it, its measured points the state's (forgetting: the baseline less the general score); a run
    that logs no general score still gets the plan's forgetting band, with ``measured`` null (never NaN)."""
    inst, plan, state, result = slow
    series = {s["name"]: s for s in result.to_dict()["series"]}
    assert list(series) == ["step_seconds", "task_score", "forgetting"]
    for name, s in series.items():
        band = result.bands[result.bands["series"] == name]
        assert s["predicted"] == {"step": band["step"].tolist(), **{q: band[q].tolist() for q in ("p10", "p50", "p90")}}
    assert series["task_score"]["measured"] == {"step": state.task_score.steps.tolist(), "value": state.task_score.values.tolist()}
    general = state.general_score
    assert series["forgetting"]["measured"]["value"] == pytest.approx((inst.task.general_score_baseline - general.values).tolist())
    text = (RUN / "wandb.csv").read_text().replace(gen.MAPPING["general_score"], "eval/other")
    mapping = {k: v for k, v in gen.MAPPING.items() if k != "general_score"}
    without = track(inst, plan, run_state(read_csv_text(text, "no-general.csv"), mapping, inst, plan, Evaluator(inst)), 100)
    forgetting = without.to_dict()["series"][2]
    assert forgetting["name"] == "forgetting" and forgetting["measured"] is None and len(forgetting["predicted"]["step"]) > 1
    json.dumps(without.to_dict(), allow_nan=False)


def test_a_run_of_one_release_of_several_commits_the_other_releases_money(slow):
    """With ``releases`` the run is one release and the budget is over all of them: the committed money grows by
    exactly the other releases' cost (total over N less total of one, on the fitted instance), the burn is the
    run's own, and the shares are drawn over the releases (the budget met less often)."""
    inst, plan, state, once = slow
    raw = json.loads((RUN / "instance.json").read_text())
    raw["releases"] = {"count": 4, "sft_labels_rebuilt_share": 0.5}
    many = load_instance(raw)
    result = track(many, plan, state, SCENARIOS)
    fitted = result.fit.fitted
    single = fitted.model_copy(update={"releases": None})
    others = Evaluator(fitted).evaluate(plan).cost_usd - Evaluator(single).evaluate(plan).cost_usd
    assert others > 0
    assert result.committed_usd - once.committed_usd == pytest.approx(others, rel=1e-9)
    assert result.burn_usd_per_hour == pytest.approx(once.burn_usd_per_hour)
    assert result.projected_end_hours == pytest.approx(once.projected_end_hours)
    assert [c.measured for c in result.checks] == [c.measured for c in once.checks]
    before = {n: float(v.mean()) for n, v in result.before.meets_limit.items()}
    assert before["budget_usd"] < float(once.before.meets_limit["budget_usd"].mean())
