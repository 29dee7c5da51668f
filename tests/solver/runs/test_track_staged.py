"""``planopt track`` and ``replan`` on a staged run (SFT then RL): the run's steps counted over the plan's stages,
the bands and the fit chained through them, the rest of a run in its last stage held to the enumeration of every
remaining plan, and a replan before the last stage refused in one line."""

import dataclasses
import json

import numpy as np
import pytest
from typer.testing import CliRunner

from planopt.api import evaluate_given_plan
from planopt.cli import app
from planopt.instance import load_instance
from planopt.models.cost.evaluator import Evaluator
from planopt.models.uncertainty import model as unc
from planopt.models.uncertainty.model import draw
from planopt.models.uncertainty.scenarios import ScenarioEvaluator
from planopt.runs import stages
from planopt.runs.readers import read_csv_text
from planopt.models.cost.stage_outcomes import stage_outcome
from planopt.runs import replan as rp
from planopt.runs.replan import replan
from planopt.runs.state import run_state
from planopt.runs.track import _at_step, bands_frame, pilot_rows, track
from planopt.uncertainty.fit import predict

from benchmarks import make_synthetic_run as gen
from planopt.errors import InputError
from tests.support.common import INSTANCES
from tests.support.replan_oracle import best_on, enumerated_rest, priced_move, random_staged_run
from tests.support.common import split_seeds

INSTANCE = INSTANCES / "qwen3-32b-sft-then-rl.json"
# the instance's optimum as `solve --json` prints it: 1,500 SFT steps on 8 B200, then 2,000 RL steps on 32 B200
PLAN = {"student": "Qwen3-32B", "checkpoint_interval_minutes": 30.0, "retention": None, "stages": [
    {"method": "sft", "steps": 1500, "samples_per_prompt": [], "teacher_precision": None, "external_data_share": 0.8,
     "max_epochs": 4, "adapter": "lora", "lora_rank": 16, "cpu_offload": False, "gpu": "B200", "gpu_count": 8,
     "rollout": None, "staleness_steps": 0},
    {"method": "rl", "steps": 2000, "samples_per_prompt": [16, 16, 4], "teacher_precision": None,
     "external_data_share": None, "max_epochs": None, "adapter": "lora", "lora_rank": 16, "cpu_offload": False,
     "gpu": "B200", "gpu_count": 32, "rollout": None, "staleness_steps": 0}]}
SCENARIOS = 200
SHARE = 0.6          # step 2,100 of 3,500: 600 steps into the RL stage


@pytest.fixture(scope="module")
def staged():
    inst = load_instance(INSTANCE)
    plan, _ = evaluate_given_plan(inst, PLAN, "plan")
    return inst, plan


def history(inst, plan, factors, share=SHARE, seed=3, drop=()):
    frame = gen.synthetic_history(inst, plan, factors, share=share, seed=seed).drop(columns=list(drop))
    return frame.to_csv(index=False)


def state_of(inst, plan, text, mapping=None):
    mapping = {k: v for k, v in gen.MAPPING.items() if mapping is None or k in mapping}
    return run_state(read_csv_text(text, "run.csv"), mapping, inst, plan, Evaluator(inst))


def test_a_stage_runs_the_runs_steps_after_the_stages_before_it(staged):
    _, plan = staged
    assert stages.stage_ends(plan) == [1500, 3500] and stages.total_steps(plan) == 3500
    assert [stages.stage_of(plan, s) for s in (0, 1, 1500, 1501, 3500)] == [0, 0, 0, 1, 1]
    assert stages.steps_done_by_stage(plan, 1500) == [1500, 0]
    assert stages.steps_done_by_stage(plan, 2100) == [1500, 600]
    done = stages.prefix(plan, 2100)
    assert [r for _, r in done][0] == plan.stages[0].recipe and done[1][1].steps == 600
    assert stages.prefix(plan, 3500) == [(s, s.recipe) for s in plan.stages]
    # a stage's mean step time is of its own steps only
    means = stages.stage_means(plan, np.array([1, 1500, 1501, 2000]), np.array([1.0, 3.0, 10.0, 20.0]))
    assert means == [2.0, 15.0]


def test_the_plan_stopped_at_its_last_step_is_the_plan_in_every_scenario(staged):
    """The chain of the bands and the fit's later-stage rows is the scenario evaluator's own for the whole plan."""
    inst, plan = staged
    sev = ScenarioEvaluator(Evaluator(inst), draw(inst, SCENARIOS, 0)).for_student(plan.student)
    whole = sev.plan_metrics(plan)
    at = _at_step(sev, plan, stages.total_steps(plan))
    np.testing.assert_allclose(at["task_score"], whole.quality, rtol=1e-12)
    np.testing.assert_allclose(at["forgetting"], whole.forgetting_points, rtol=1e-12)
    # at the stage boundary the band is the first stage's own outcome
    first = sev.outcomes(plan.stages[0].recipe)
    np.testing.assert_allclose(_at_step(sev, plan, 1500)["task_score"], first[0], rtol=1e-12)
    bands = bands_frame(sev, plan)
    assert {1500, 3500} <= set(bands["step"])


def test_a_run_in_its_second_stage_is_read_against_that_stage(staged):
    inst, plan = staged
    state = state_of(inst, plan, history(inst, plan, gen.POINT))
    assert (state.last_step, state.stage, state.stages, state.stage_start) == (2100, 1, 2, 1500)
    assert (state.method, state.gpu, state.gpu_count, state.plan_steps) == ("rl", "B200", 32, 3500)
    rl_times = state.step_seconds.values[state.step_seconds.steps > 1500]
    assert state.measured_step_seconds == pytest.approx(float(rl_times.mean()))
    rows = pilot_rows(inst, plan, state)
    steps = [r for r in rows if r.kind == "step_seconds"]
    assert [(r.method, r.recipe.steps, r.hardware.count) for r in steps] == [("sft", 1500, 8), ("rl", 600, 32)]
    later = [r for r in rows if r.kind != "step_seconds" and r.method == "rl"]
    assert later and all(r.before == (plan.stages[0].recipe,) for r in later)
    assert later[0].describe().endswith(", after sft 1500 steps")          # the row report names the stage before
    assert all(not r.before for r in rows if r.method == "sft")


def test_the_spend_not_logged_is_each_stages_gpus_for_its_share_of_the_hours(staged):
    """Without a spend series, each stage's GPUs at their price for its share of the logged hours; the generator's
    logged spend (each step's GPUs × price × its stretched seconds) agrees within the stages' differing overheads."""
    inst, plan = staged
    text = history(inst, plan, gen.POINT)
    logged = state_of(inst, plan, text)
    estimated = state_of(inst, plan, history(inst, plan, gen.POINT, drop=[gen.MAPPING["spend_usd"]]),
                         mapping=[k for k in gen.MAPPING if k != "spend_usd"])
    assert not estimated.spend_measured and logged.spend_measured
    assert estimated.spend_usd == pytest.approx(logged.spend_usd, rel=0.02)
    # both stages run B200 at one price per GPU-hour: the SFT stage's share of the hours is priced at 8 GPUs, not 32
    per_gpu_hour = Evaluator(inst).hardware(plan.stages[1].hardware).usd_per_hour_of_gpus / 32
    s = estimated.step_seconds
    seconds = stages.stage_seconds(plan, estimated.last_step, s.steps, s.values)
    sft_share = seconds[0] / seconds.sum()
    assert 0 < sft_share < 1
    assert estimated.spend_usd == pytest.approx(per_gpu_hour * estimated.elapsed_hours * (8 * sft_share + 32 * (1 - sft_share)))


def test_track_follows_a_staged_run_and_fits_the_second_stage_from_the_first(staged):
    inst, plan = staged
    slow = track(inst, plan, state_of(inst, plan, history(inst, plan, gen.SLOW)), SCENARIOS)
    point = track(inst, plan, state_of(inst, plan, history(inst, plan, gen.POINT)), SCENARIOS)
    fitted = {p.name: p for p in slow.fit.parameters}
    # the truth's steps are 1.5x slower: the step-time factor's posterior moves to it
    mfu = fitted["efficiency.mfu_factor"]
    assert mfu.point_after == pytest.approx(inst.efficiency.mfu_factor / gen.SLOW["step_time"], rel=0.1)
    step = next(c for c in slow.checks if c.name == "step_seconds")
    assert step.position == "above P90"
    # slower learning in the RL stage: its scale moves up (a curve reached at more samples), and the run at the
    # prior's points leaves it nearer its prior point than the slow run does
    rl = "priors.rl.signal_scale_samples"
    assert fitted[rl].point_after > {p.name: p for p in point.fit.parameters}[rl].point_after
    # the fitted model predicts the run's last task score within its noise, through the chained stages
    row = [r for r in pilot_rows(inst, plan, slow.state) if r.kind == "task_score"][-1]
    assert row.before and abs(predict(Evaluator(slow.fit.fitted), row) - row.value) < 3 * row.stddev
    assert slow.after.share() <= point.after.share()
    # the run's end: the RL stage's remaining 1,400 steps at its measured pace, nothing after it
    s = slow.state
    seconds = stages.stage_seconds(plan, s.last_step, s.step_seconds.steps, s.step_seconds.values)
    per_step = s.elapsed_hours * seconds[1] / seconds.sum() / 600
    assert slow.projected_end_hours == pytest.approx(s.elapsed_hours + 1400 * per_step)


def test_a_run_in_its_first_stage_projects_the_later_stage_at_the_updated_points(staged):
    inst, plan = staged
    result = track(inst, plan, state_of(inst, plan, history(inst, plan, gen.POINT, share=0.2)), SCENARIOS)
    s = result.state
    assert (s.stage, s.last_step) == (0, 700)
    rl = Evaluator(result.fit.fitted).metrics(plan.stages[1].recipe, plan.stages[1].hardware, 30.0).wall_hours
    assert result.projected_end_hours == pytest.approx(s.elapsed_hours * 1500 / 700 + rl)
    assert all(r.method == "sft" for r in result.fit.rows)


def test_a_staged_runs_wrong_gpu_count_is_refused_naming_its_stage(staged):
    inst, plan = staged
    frame = gen.synthetic_history(inst, plan, gen.POINT, share=SHARE, seed=3)
    frame[gen.MAPPING["gpu_count"]] = 8                          # the RL stage logged the SFT stage's GPUs
    state = state_of(inst, plan, frame.to_csv(index=False))
    with pytest.raises(InputError, match=r"gpu_count: .* 32 × B200 in stage 2 \(rl\)"):
        track(inst, plan, state, SCENARIOS)


@pytest.mark.slow  # 14 s on 2 cores (the default run's heaviest); .ci/run runs it with -m slow
def test_the_cli_tracks_and_replans_a_staged_run_in_either_stage(staged, tmp_path):
    inst, plan = staged
    (tmp_path / "plan.json").write_text(json.dumps({"plan": PLAN}))
    (tmp_path / "mapping.json").write_text(json.dumps(gen.MAPPING))

    def args(share):
        (tmp_path / "run.csv").write_text(history(inst, plan, gen.SLOW, share=share))
        return [str(INSTANCE), str(tmp_path / "plan.json"), str(tmp_path / "run.csv"), "--mapping",
                str(tmp_path / "mapping.json"), "--scenarios", "100"]
    out = CliRunner().invoke(app, ["track", *args(SHARE), "--json"])
    assert out.exit_code == 0, out.stderr
    answer = json.loads(out.stdout)
    assert (answer["state"]["stage"], answer["state"]["stages"], answer["state"]["method"]) == (2, 2, "rl")
    assert max(answer["series"][1]["predicted"]["step"]) == 3500
    for share, stage in ((SHARE, 2), (0.2, 1)):                           # step 2,100 (RL), step 700 (SFT)
        again = CliRunner().invoke(app, ["replan", *args(share), "--json"])
        assert again.exit_code in (0, 3), again.stderr
        answer = json.loads(again.stdout)
        assert answer["state"]["stage"] == stage and answer["continuing"] is not None
    text = CliRunner().invoke(app, ["replan", *args(0.2)])
    assert "(stage 1 of 2, sft, from step 0)" in text.stdout


def test_the_rest_of_a_staged_run_in_its_last_stage_starts_from_the_chained_score(staged):
    """The rest of a run in its RL stage: that stage continued (its steps shifted by the 600 done), from the score the
    fitted model reaches through SFT and 600 RL steps; every remaining recipe is ``stage_outcome`` from there on the
    fitted instance, as a later stage of a staged plan is."""
    inst, plan = staged
    state = state_of(inst, plan, history(inst, plan, gen.SLOW))
    fit = rp.fit_run(inst, plan, state)
    so_far, measured = rp.forgetting_so_far(fit.fitted, plan, state)
    rest = rp.rest_instance(fit.fitted, plan, state, so_far, measured)
    sft, rl_prefix = plan.stages[0].recipe, stages.prefix(plan, 2100)[1][1]
    after_sft = stage_outcome(fit.fitted, sft, inst.task.baseline_score)
    assert rest.start_score == pytest.approx(stage_outcome(fit.fitted, rl_prefix, after_sft[0])[0], rel=1e-12)
    # the rest is RL continued on the run's 32 × B200 (SFT is done; the instance allows nothing after RL)
    assert set(rest.stay.training.methods) == {"rl"} and rest.stay.training.stage_sequences == [["rl"]]
    offered = inst.training.methods["rl"].steps_options
    assert rest.stay.training.methods["rl"].steps_options == sorted(s - 600 for s in offered if s > 600)
    assert [(g.name, g.counts) for g in rest.stay.training.methods["rl"].gpus] == [("B200", [32])]
    assert "priors.sft.signal_scale_samples" not in rest.stay.uncertainty      # the fitted SFT ranges are dropped
    assert "priors.rl.signal_scale_samples" in rest.stay.uncertainty
    ev = Evaluator(rest.stay)
    for r in ev.space()[0]:
        p = dataclasses.replace(plan, stages=(dataclasses.replace(plan.stages[1], recipe=r),))
        assert ev.evaluate(p).quality == pytest.approx(stage_outcome(fit.fitted, r, rest.start_score)[0], rel=1e-12)
    assert rest.continuing.stages == (dataclasses.replace(plan.stages[1], recipe=dataclasses.replace(
        plan.stages[1].recipe, steps=1400)),)
    c = rest.stay.constraints
    assert c.budget_usd == pytest.approx(inst.constraints.budget_usd - state.spend_usd)
    assert c.max_forgetting_points == pytest.approx(inst.constraints.max_forgetting_points - so_far)
    assert rest.stay.reward.design_usd == 0.0 and rest.prompts_drawn == 600 * inst.training.methods["rl"].prompts_per_step
    # a move is priced from the RL stage's GPUs (32 × B200), not the SFT stage's
    move, _ = rest.moves[0]
    here = Evaluator(fit.fitted).hardware(plan.stages[1].hardware)
    assert move.write_hours == pytest.approx(here.checkpoint_write_hours)


@pytest.mark.slow  # 6 s on 2 cores (the default run's heaviest); .ci/run runs it with -m slow
def test_the_rest_of_a_staged_run_in_its_first_stage_continues_it_or_starts_the_next(staged):
    """At step 700, in the SFT stage: the rest runs the instance's sequences from there (SFT continued on the run's
    8 × B200 then RL on any GPU, SFT alone, or RL now); continuing the plan is SFT's 800 steps left, then its RL."""
    inst, plan = staged
    state = state_of(inst, plan, history(inst, plan, gen.SLOW, share=0.2))
    assert (state.stage, state.last_step) == (0, 700)
    fit = rp.fit_run(inst, plan, state)
    rest = rp.rest_instance(fit.fitted, plan, state, *rp.forgetting_so_far(fit.fitted, plan, state))
    t = rest.stay.training
    assert sorted(map(tuple, t.stage_sequences)) == [("rl",), ("sft",), ("sft", "rl")]
    assert [(g.name, g.counts) for g in t.methods["sft"].gpus] == [("B200", [8])] and t.methods["rl"].gpus is None
    assert t.methods["sft"].steps_options == sorted(s - 700 for s in inst.training.methods["sft"].steps_options if s > 700)
    assert t.methods["rl"].steps_options == inst.training.methods["rl"].steps_options
    assert rest.stay.hardware.gpus == inst.hardware.gpus                 # the later stage trains on any GPU
    assert rest.continuing.stages[0].recipe.steps == 800 and rest.continuing.stages[1] == plan.stages[1]
    assert Evaluator(rest.stay).evaluate(rest.continuing).fits_memory
    sft = stages.prefix(plan, 700)[0][1]
    assert rest.start_score == pytest.approx(stage_outcome(fit.fitted, sft, inst.task.baseline_score)[0], rel=1e-12)
    # the README's figures: continuing misses the floor of 54; the replan keeps SFT's 800 steps at another mix
    result = rp.replan(inst, plan, state, scenarios=100, fitted=fit)
    assert round(result.continuing.quality, 2) == 52.72 < inst.constraints.min_quality
    assert (round(result.chosen.cost_usd), round(result.chosen.quality, 2)) == (105_919, 54.33)
    assert result.changes() == ["external data share: 0.8 -> 1.0", "max epochs: 4 -> 2",
                                "stage 2 samples per prompt: (16, 16, 4) -> (16, 16, 16)"]
    # each move re-runs SFT on its target, then RL anywhere, the move priced in
    for move, moved in rest.moves:
        assert [list(q) for q in moved.training.stage_sequences] == [["sft"], ["sft", "rl"]]
        assert [(g.name, g.counts) for g in moved.training.methods["sft"].gpus] == [(move.gpu, [move.count])]
        assert moved.operations.fixed_usd == pytest.approx(move.usd)


# seeds whose optimum has two or three stages; the run stops in any of them (the first, a middle or the last)
# (the last three take 4-6 s each on 2 cores: the default run leaves them to -m slow, .ci/run)
STAGED_SEEDS = [0, 2, 3, 6, 8, 9, 22, 29, 32, 37, 10, 16, 36]


@pytest.mark.slow  # 8 s on 2 cores (the default run's heaviest); .ci/run runs it with -m slow
def test_the_staged_seeds_stop_runs_in_every_stage_position():
    positions = set()
    for seed in STAGED_SEEDS:
        _, plan, state = random_staged_run(seed)
        positions.add("first" if state.stage == 0 else "last" if state.stage == len(plan.stages) - 1 else "middle")
    assert positions == {"first", "middle", "last"}


@pytest.mark.parametrize("seed", split_seeds(STAGED_SEEDS, 10))
def test_the_replan_of_a_staged_run_equals_the_enumeration_of_every_remaining_plan(seed):
    made = random_staged_run(seed)
    assert made is not None, "the seed's optimum has one stage: pick another seed"
    inst, plan, state = made
    result = rp.replan(inst, plan, state, scenarios=100)
    best = enumerated_rest(result.rest, result.objective)
    if best is None:
        assert result.chosen is None and result.status == "infeasible"
        return
    metric = {"cost": "cost_usd", "time": "wall_hours", "quality": "quality", "forgetting": "forgetting_points"}[result.objective]
    assert getattr(result.chosen, metric) == pytest.approx(best["value"], rel=1e-6, abs=1e-9)
    assert result.chosen.cost_usd == pytest.approx(best["cost_usd"], rel=1e-6, abs=1e-9)
    assert (result.chosen.choice == "stop") == (best["choice"] == "stop")
    solved = {(o.move.gpu, o.move.count): o for o in result.options if o.move is not None}
    for move, moved in result.rest.moves:
        best_move = best_on(priced_move(result.rest, moved, (move.gpu, move.count)), result.objective)
        option = solved.get((move.gpu, move.count))
        assert (option is None) == (best_move is None)
        if option is not None:
            assert option.cost_usd == pytest.approx(best_move[1], rel=1e-6, abs=1e-9)


def test_a_truth_that_misses_is_seen_in_the_second_stage(staged):
    """At the slow truth the plan misses its quality floor; a run followed into its RL stage says so."""
    inst, plan = staged
    truth = Evaluator(unc.apply(inst, gen.true_values(inst, gen.SLOW))).evaluate(plan)
    result = track(inst, plan, state_of(inst, plan, history(inst, plan, gen.SLOW)), SCENARIOS)
    assert not truth.feasible
    assert result.verdict != "on track"
