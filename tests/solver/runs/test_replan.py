"""``planopt replan``: the rest of a run as an instance, the exact choice among its remaining plans, and its
command, API and service."""

import dataclasses
import json

import pytest
from typer.testing import CliRunner

import planopt
from planopt.api import evaluate_given_plan
from planopt.cli.app import app
from planopt.instance import load_instance
from planopt.models.cost.evaluator import Evaluator
from planopt.models.cost.stage_outcomes import stage_outcome
from planopt.runs import replan as rp
from planopt.runs.readers import read_run
from planopt.runs.state import read_mapping, run_state

from tests.support.common import INSTANCES
from tests.support.replan_oracle import best_on, enumerated_rest, priced_move, random_run

RUN = INSTANCES / "runs" / "qwen3-8b-math-slow"
SCENARIOS = 200
runner = CliRunner()


def shipped(**limits):
    raw = json.loads((RUN / "instance.json").read_text())
    raw["constraints"].update(limits)
    inst = load_instance(raw)
    plan, _ = evaluate_given_plan(inst, json.loads((RUN / "plan.json").read_text()), "plan.json")
    state = run_state(read_run(RUN / "wandb.csv"), read_mapping(RUN / "mapping.json"), inst, plan, Evaluator(inst))
    return inst, plan, state


@pytest.fixture(scope="module")
def slow():
    inst, plan, state = shipped()
    fit = rp.fit_run(inst, plan, state)
    so_far, measured = rp.forgetting_so_far(fit.fitted, plan, state)
    return inst, plan, state, fit, rp.rest_instance(fit.fitted, plan, state, so_far, measured)


def test_the_rest_starts_from_the_score_reached_as_a_later_stage_does(slow):
    """Every remaining recipe's quality on the rest's instance is ``stage_outcome`` from the score reached on the
    fitted instance, and its forgetting too (OPD: at the run's teacher precision, where the restatement is exact)."""
    _, plan, _, fit, rest = slow
    ev = Evaluator(rest.stay)
    recipes = ev.space()[0]
    methods = {r.method for r in recipes}
    assert methods == {"sft", "rl", "opd"}
    for r in recipes:
        p = dataclasses.replace(plan, stages=(dataclasses.replace(plan.stages[0], recipe=r),))
        m = ev.evaluate(p)
        quality, forgetting = stage_outcome(fit.fitted, r, rest.start_score)
        assert m.quality == pytest.approx(quality, rel=1e-12)
        if r.method != "opd" or r.teacher_precision == plan.stages[0].recipe.teacher_precision:
            assert m.forgetting_points == pytest.approx(forgetting, rel=1e-9, abs=1e-12)


def test_the_rest_has_what_is_left_of_the_limits_and_of_the_steps(slow):
    inst, plan, state, fit, rest = slow
    c, lim = rest.stay.constraints, inst.constraints
    assert c.budget_usd == pytest.approx(lim.budget_usd - state.spend_usd)
    assert c.deadline_hours == pytest.approx(lim.deadline_hours - state.elapsed_hours)
    assert c.max_forgetting_points == pytest.approx(lim.max_forgetting_points - rest.forgetting_so_far)
    assert rest.forgetting_measured and rest.forgetting_so_far > 0
    # the score reached: the fitted model's at step 80, nearer the generator's truth than the last, noisy evaluation
    from planopt.models.uncertainty import model as unc
    from planopt.runs.track import prefix_recipe
    from benchmarks import make_synthetic_run as gen
    prefix = prefix_recipe(plan.stages[0].recipe, 80)
    assert rest.start_score == pytest.approx(stage_outcome(fit.fitted, prefix, inst.task.baseline_score)[0])
    true = stage_outcome(unc.apply(inst, gen.true_values(inst, gen.SLOW)), prefix, inst.task.baseline_score)[0]
    assert abs(rest.start_score - true) < abs(state.task_score.values[-1] - true)
    # OPD ran 80 of its 400 steps: its options 50, 100, 200, 400 continue for 20, 120, 320; RL's are untouched
    assert rest.stay.training.methods["opd"].steps_options == [20, 120, 320]
    assert rest.stay.training.methods["rl"].steps_options == inst.training.methods["rl"].steps_options
    assert rest.stay.operations.fixed_usd == 0.0
    hw = plan.stages[0].hardware
    assert [(g.name, g.counts) for g in rest.stay.hardware.gpus] == [(hw.gpu, [hw.count])]
    # one rest per other priced (GPU, count), each on that hardware alone (L40S has no price in this instance)
    moved = [(g.name, n) for _, m in rest.moves for g in m.hardware.gpus for n in g.counts]
    priced = {(g.name, n) for g in inst.hardware.gpus for n in g.counts if g.name != "L40S"}
    assert len(moved) == len(rest.moves) and set(moved) == priced - {(hw.gpu, hw.count)}
    assert [(m.gpu, m.count) for m, _ in rest.moves] == moved
    # each move: the same plan costs move.usd more and has move.hours less of the deadline
    for move, m in rest.moves:
        assert move.hours > 0 and m.operations.fixed_usd == pytest.approx(move.usd)
        assert m.constraints.deadline_hours == pytest.approx(c.deadline_hours - move.hours)
    assert rest.continuing.stages[0].recipe.steps == plan.stages[0].recipe.steps - state.steps_done


def test_the_fitted_ranges_are_restated_with_their_points(slow):
    """The update's posterior range of OPD's forgetting share scales with its point (the draws of the rest are
    about the restated point, not the run's)."""
    _, _, _, fit, rest = slow
    key = "priors.opd.forgetting_share_of_baseline"
    before, after = fit.fitted.uncertainty[key], rest.stay.uncertainty[key]
    ratio = rest.stay.priors.opd.forgetting_share_of_baseline / fit.fitted.priors.opd.forgetting_share_of_baseline
    assert ratio < 1   # the run is past its baseline: less of the teacher's headroom is left to move through
    assert (after.low, after.high) == pytest.approx((before.low * ratio, before.high * ratio))


@pytest.mark.parametrize("seed", [1, 2, 3, 6, 8, 14, 22, 26, 32, 38])
def test_the_replan_equals_the_enumeration_of_every_remaining_plan(seed):
    made = random_run(seed)
    if made is None:
        pytest.skip("the random job has no plan")
    inst, plan, state = made
    result = rp.replan(inst, plan, state, scenarios=SCENARIOS)
    best = enumerated_rest(result.rest, result.objective)
    if best is None:
        assert result.chosen is None and result.status == "infeasible"
        return
    chosen = result.chosen
    assert chosen is not None
    metric = {"cost": "cost_usd", "time": "wall_hours", "quality": "quality", "forgetting": "forgetting_points"}[result.objective]
    assert getattr(chosen, metric) == pytest.approx(best["value"], rel=1e-6, abs=1e-9)
    assert chosen.cost_usd == pytest.approx(best["cost_usd"], rel=1e-6, abs=1e-9)
    assert (chosen.choice == "stop") == (best["choice"] == "stop")
    # a move is priced per target, and each target's solve equals the enumeration of its plans at the oracle's
    # own pricing of that target's move (none of these seeds chooses a move: each move is checked on its own)
    solved = {(o.move.gpu, o.move.count): o for o in result.options if o.move is not None}
    for move, moved in result.rest.moves:
        priced = priced_move(result.rest, moved)
        assert moved.operations.fixed_usd == pytest.approx(priced.operations.fixed_usd, rel=1e-12)
        best_move = best_on(priced, result.objective)
        option = solved.get((move.gpu, move.count))
        assert (option is None) == (best_move is None)
        if option is not None:
            assert getattr(option, metric) == pytest.approx(best_move[0], rel=1e-6, abs=1e-9)
            assert option.cost_usd == pytest.approx(best_move[1], rel=1e-6, abs=1e-9)


def test_a_run_without_a_general_score_takes_the_fitted_forgetting_so_far(tmp_path):
    inst, plan, _ = shipped()
    mapping = {k: v for k, v in read_mapping(RUN / "mapping.json").items() if k != "general_score"}
    import pandas as pd
    frame = pd.read_csv(RUN / "wandb.csv").drop(columns=[read_mapping(RUN / "mapping.json")["general_score"]])
    (tmp_path / "run.csv").write_text(frame.to_csv(index=False))
    state = run_state(read_run(tmp_path / "run.csv"), mapping, inst, plan, Evaluator(inst))
    assert state.general_score is None
    fit = rp.fit_run(inst, plan, state)
    so_far, measured = rp.forgetting_so_far(fit.fitted, plan, state)
    # the fitted model's forgetting of OPD's first 80 steps: its stage from the baseline, stopped there
    from planopt.runs.track import prefix_recipe
    expected = stage_outcome(fit.fitted, prefix_recipe(plan.stages[0].recipe, 80), inst.task.baseline_score)[1]
    assert not measured and so_far == pytest.approx(expected) and so_far > 0


def test_stop_now_is_chosen_when_the_score_reached_meets_the_floor():
    inst, plan, state = shipped(min_quality=50)   # the run's score (58.9) is over it: nothing more is needed
    result = rp.replan(inst, plan, state, scenarios=SCENARIOS)
    assert result.chosen.choice == "stop" and result.chosen.cost_usd == 0.0
    assert result.headline.startswith("stop now")
    assert result.whole_run(result.chosen)["cost_usd"] == pytest.approx(state.spend_usd)


def test_a_floor_out_of_reach_is_infeasible_and_exits_3():
    out = runner.invoke(app, ["replan", str(RUN / "instance.json"), str(RUN / "plan.json"), str(RUN / "wandb.csv"),
                              "--mapping", str(RUN / "mapping.json"), "--json"])
    assert out.exit_code == 3, out.output
    answer = json.loads(out.output)
    assert answer["status"] == "infeasible" and answer["replan"] is None
    # continuing the original plan misses the 70-point floor in most updated scenarios
    assert answer["continuing"]["quality"] < 70 and answer["share_meeting_all_limits"]["continuing"] < 0.5


def test_a_deadline_the_run_s_hardware_cannot_make_is_met_by_a_move_that_pays_for_itself():
    inst, plan, state = shipped(min_quality=65)
    free = rp.replan(inst, plan, state, scenarios=SCENARIOS)
    stay = next(o for o in free.options if o.choice == "stay")
    move = min((o for o in free.options if o.choice == "move"), key=lambda o: o.wall_hours)
    assert free.chosen is stay and move.wall_hours < stay.wall_hours   # cheaper to stay, faster to move
    tight = state.elapsed_hours + (move.wall_hours + stay.wall_hours) / 2
    inst, plan, state = shipped(min_quality=65, deadline_hours=tight)
    result = rp.replan(inst, plan, state, scenarios=SCENARIOS)
    assert result.chosen.choice == "move"
    hw = result.chosen.plan.stages[0].hardware
    assert (hw.gpu, hw.count) != (plan.stages[0].hardware.gpu, plan.stages[0].hardware.count)
    # its cost holds the move: the same plan on the rest without the move's money costs move.usd less
    on = result.chosen.inst
    assert (result.chosen.move.gpu, result.chosen.move.count) == (hw.gpu, hw.count)
    bare = on.model_copy(update={"operations": on.operations.model_copy(update={"fixed_usd": 0.0})})
    assert result.chosen.cost_usd - Evaluator(bare).evaluate(result.chosen.plan).cost_usd == pytest.approx(result.chosen.move.usd)
    assert result.whole_run(result.chosen)["wall_hours"] + result.chosen.move.hours <= tight * (1 + 1e-9)


def test_a_move_reads_and_restarts_at_the_target_s_rate(slow):
    """Hand-checked: the run (32 × MI300X, 4 nodes of 8, full weights: 14 bytes a parameter) writes its checkpoint
    at 4 nodes' bandwidth and its rate; a move to 8 × H100-SXM (1 node: a quarter of the bandwidth) reads it in 4
    times the write's time and restarts, both at 8 H100s' rate."""
    inst, plan, _, fit, rest = slow
    hw = plan.stages[0].hardware
    assert (hw.gpu, hw.count, hw.lora_rank) == ("MI300X", 32, None)
    move = next(m for m, _ in rest.moves if (m.gpu, m.count) == ("H100-SXM", 8))
    f = fit.fitted
    bw_gb_per_s = f.reliability.checkpoint_write_gb_per_s_per_node
    write_h = 14 * f.student.params_b * 1e9 / (4 * bw_gb_per_s * 1e9) / 3600
    assert move.write_hours == pytest.approx(write_h) and move.read_hours == pytest.approx(4 * write_h)
    assert move.restart_hours == pytest.approx(f.reliability.restart_minutes / 60)
    ev = Evaluator(f)
    rate_here = ev.hardware(hw).usd_per_hour_of_gpus
    rate_there = ev.hardware(dataclasses.replace(hw, gpu="H100-SXM", count=8)).usd_per_hour_of_gpus
    assert rate_there != rate_here
    wall = f.operations.usd_per_wall_hour
    assert move.hours == pytest.approx(5 * write_h + move.restart_hours)
    assert move.usd == pytest.approx((rate_here + wall) * write_h + (rate_there + wall) * (4 * write_h + move.restart_hours))
    # not the old price: the whole move at the run's rate
    assert move.usd != pytest.approx((rate_here + wall) * move.hours)


@pytest.mark.slow
def test_at_a_confidence_the_replan_holds_in_that_share_of_updated_scenarios():
    inst, plan, state = shipped(min_quality=65)
    result = rp.replan(inst, plan, state, confidence=0.8, scenarios=60)
    assert result.chosen is not None and result.chosen.choice in ("stay", "move")
    assert result.shares["chosen"] >= 0.8 - 0.1   # the chance model holds 80 % of its 60; measured on the same draw
    point = rp.replan(inst, plan, state, scenarios=60)
    assert result.shares["chosen"] > point.shares["chosen"]


@pytest.mark.parametrize("args, needle", [
    (["--confidence", "1.5"], "--confidence"),
    (["--confidence", "0"], "--confidence"),
    (["--cvar", "0.9"], "--cvar"),
    (["--out", "x.csv"], "--out"),
    (["--scenarios", "0"], "--scenarios"),
])
def test_bad_flags_are_one_line_and_exit_2(args, needle):
    out = runner.invoke(app, ["replan", str(RUN / "instance.json"), str(RUN / "plan.json"), str(RUN / "wandb.csv"),
                              "--mapping", str(RUN / "mapping.json"), *args])
    assert out.exit_code == 2, out.output
    assert needle in out.output and len(out.output.strip().splitlines()) == 1 and "Traceback" not in out.output


@pytest.mark.parametrize("change, needle", [
    ({"gpu_count": 7}, "gpu_count"),          # no such option in the instance: a plan of another instance
    ({"steps": 50}, "past the plan's 50 steps"),  # the run has done 80 steps of a 50-step plan
])
def test_a_plan_of_another_instance_and_a_run_longer_than_its_plan_are_refused(tmp_path, change, needle):
    raw = json.loads((RUN / "plan.json").read_text())
    raw["plan"]["stages"][0].update(change)
    bad = tmp_path / "plan.json"
    bad.write_text(json.dumps(raw))
    out = runner.invoke(app, ["replan", str(RUN / "instance.json"), str(bad), str(RUN / "wandb.csv"),
                              "--mapping", str(RUN / "mapping.json")])
    assert out.exit_code == 2 and needle in out.output and len(out.output.strip().splitlines()) == 1, out.output


def test_a_score_outside_the_task_s_range_is_refused(tmp_path):
    csv = tmp_path / "run.csv"
    csv.write_text("_step,_runtime,train/step_time_s,eval/math500\n1,10,10,101\n")
    out = runner.invoke(app, ["replan", str(RUN / "instance.json"), str(RUN / "plan.json"), str(csv),
                              "--mapping", str(RUN / "mapping.json")])
    assert out.exit_code == 2 and "eval/math500" in out.output and len(out.output.strip().splitlines()) == 1


def test_the_api_returns_a_replan_result():
    result = planopt.replan(RUN / "instance.json", RUN / "plan.json", RUN / "wandb.csv", RUN / "mapping.json",
                            scenarios=SCENARIOS)
    assert isinstance(result, planopt.ReplanResult) and result.status == "infeasible"
    assert result.to_dict()["continuing"]["plan"]["stages"][0]["steps"] == 320


@pytest.mark.slow
def test_the_service_payload_answers_what_the_api_returns():
    """(``tests/solver/service/test_service_api.py`` holds ``POST /api/replan`` to the CLI in the default run.)"""
    from planopt.service.payloads import replan_payload
    result = planopt.replan(RUN / "instance.json", RUN / "plan.json", RUN / "wandb.csv", RUN / "mapping.json",
                            scenarios=SCENARIOS)
    body = json.loads((RUN / "instance.json").read_text())
    answer = replan_payload(body, {"plan": json.loads((RUN / "plan.json").read_text()),
                                   "run_csv": (RUN / "wandb.csv").read_text(),
                                   "mapping": read_mapping(RUN / "mapping.json"), "scenarios": SCENARIOS})
    expected = json.loads(json.dumps(result.to_dict()))
    assert answer["state"].pop("source") == "run_csv"   # the service names the CSV text it was given
    expected["state"].pop("source")
    assert answer == expected


def test_a_run_at_its_methods_last_step_is_replanned_with_the_other_methods():
    """The shipped run at its plan's end, 400 of OPD's longest 400 steps: OPD has nothing left, so the rest offers
    the other methods only, and the update's fitted OPD ranges must leave the rest's uncertainty with it (they made
    the rest an invalid instance, refused as ``uncertainty.priors.opd...: unknown parameter``)."""
    from planopt.runs.readers import read_csv_text
    from benchmarks import make_synthetic_run as gen
    inst, plan, _ = shipped()
    text = gen.synthetic_history(inst, plan, gen.SLOW, share=1.0).to_csv(index=False)
    state = run_state(read_csv_text(text, "full.csv"), gen.MAPPING, inst, plan, Evaluator(inst))
    assert state.last_step == plan.stages[0].recipe.steps == max(inst.training.methods["opd"].steps_options)
    result = rp.replan(inst, plan, state, scenarios=SCENARIOS)
    assert set(result.rest.stay.training.methods) == {"sft", "rl"}
    assert not any(".opd." in key for key in result.rest.stay.uncertainty)
    assert result.rest.continuing is None
    best = enumerated_rest(result.rest, result.objective)
    assert (result.chosen is None) == (best is None)
    if best is not None:
        assert result.chosen.cost_usd == pytest.approx(best["cost_usd"], rel=1e-6)


@pytest.mark.parametrize("floor", [None, 99.0])
def test_a_finished_run_with_no_method_left_is_answered_by_stopping(tmp_path, floor):
    """A run at its plan's end whose instance offers only its method, at its longest length: nothing is left to
    run, so the answer is stopping now where the score reached meets the limits, else infeasible (exit 3), not a
    refusal of the input (it was exit 2, "nothing left to plan but stopping")."""
    from benchmarks import make_synthetic_run as gen
    raw = json.loads((RUN / "instance.json").read_text())
    raw["training"]["methods"] = {"opd": raw["training"]["methods"]["opd"]}
    raw["constraints"]["min_quality"] = floor
    inst = load_instance(raw)
    plan, _ = evaluate_given_plan(inst, json.loads((RUN / "plan.json").read_text()), "plan.json")
    history = gen.synthetic_history(inst, plan, gen.POINT, share=1.0)
    state = run_state(read_run_text(history), gen.MAPPING, inst, plan, Evaluator(inst))
    assert state.last_step == max(inst.training.methods["opd"].steps_options)
    result = rp.replan(inst, plan, state, scenarios=SCENARIOS)
    assert not result.rest.plans_left and result.rest.moves == [] and result.rest.continuing is None
    assert [o.choice for o in result.options] == ([] if floor else ["stop"])
    if floor:
        assert result.chosen is None and result.status == "infeasible"
    else:
        assert result.chosen.choice == "stop" and result.chosen.quality == result.rest.start_score
    (tmp_path / "i.json").write_text(json.dumps(raw))
    (tmp_path / "run.csv").write_text(history.to_csv(index=False))
    (tmp_path / "m.json").write_text(json.dumps(gen.MAPPING))
    out = runner.invoke(app, ["replan", str(tmp_path / "i.json"), str(RUN / "plan.json"), str(tmp_path / "run.csv"),
                              "--mapping", str(tmp_path / "m.json"), "--scenarios", "50", "--json"])
    assert out.exit_code == (3 if floor else 0), out.stderr
    answer = json.loads(out.stdout)
    assert answer["plans_left"] is False
    assert answer["replan"] is None if floor else answer["replan"]["choice"] == "stop"


def read_run_text(history):
    from planopt.runs.readers import read_csv_text
    return read_csv_text(history.to_csv(index=False), "finished.csv")


def test_a_run_of_one_release_of_several_keeps_the_other_releases_in_the_budget():
    """With ``releases`` the rest is this run alone (no releases block) and its budget keeps the other releases'
    money (the plan's total over N less its total of one, on the fitted instance): a budget that only the single
    run fits leaves the rest less to spend, and the chosen rest with the spend and the other releases stays within
    the budget."""
    raw = json.loads((RUN / "instance.json").read_text())
    raw["releases"] = {"count": 3, "sft_labels_rebuilt_share": 1.0}
    many = load_instance(raw)
    _, plan, state = shipped()
    result = rp.replan(many, plan, state, scenarios=SCENARIOS)
    fitted = result.fit.fitted
    others = Evaluator(fitted).evaluate(plan).cost_usd - Evaluator(fitted.model_copy(update={"releases": None})).evaluate(plan).cost_usd
    assert others > 0 and result.rest.stay.releases is None
    assert result.rest.stay.constraints.budget_usd == pytest.approx(many.constraints.budget_usd - state.spend_usd - others)
    once = rp.replan(shipped()[0], plan, state, scenarios=SCENARIOS)
    assert once.rest.stay.constraints.budget_usd - result.rest.stay.constraints.budget_usd == pytest.approx(others)
    if result.chosen is not None:
        assert state.spend_usd + result.chosen.cost_usd + others <= many.constraints.budget_usd * (1 + 1e-9)
