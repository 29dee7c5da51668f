"""A teacher that does not exist yet, trained as a stage (issue 12, item 1; ``models/cost/teacher_training.py``).

Random OPD jobs with ``teacher.exists: false`` and a ``teacher.training`` block: the MIP equals both
oracles; the folded lump is the teacher job's own evaluated cost and wall time; the Pareto pruning
loses no optimum (against folding every usable teacher plan); the plan's JSON round-trips through
``evaluate``; bad input is one line, exit 2; and over the seeds both a trained-teacher plan and a
plan without a teacher win somewhere.
"""

from __future__ import annotations

import json
import random

import pytest
from typer.testing import CliRunner

from planopt.cli import app
from planopt.models.cost.evaluator import Evaluator
from planopt.models.schema.instance import Instance
from planopt.instance import parse_instance
from planopt.models.schema.plan import plan_json, read_plan
from planopt.models.cost.teacher_training import pareto_set, teacher_instance, teacher_space
from planopt.oracles.by_plan import all_plans, best_plan
from planopt.report.result_schema import ResultSchema
from tests.support.oracle_checks import assert_mip_equals_both_oracles, close
from tests.support.random_instances import SMALL, _take, random_job_dict, with_drawn_limits
from tests.support.teacher_instances import with_trained_teacher
from tests.support.common import split_seeds

SEEDS = range(15)
SLOW_SEEDS = range(15, 60)
TEACHER_PRESETS = ["Qwen3-1.7B", "Qwen3-4B", "Qwen3-8B"]
runner = CliRunner()


def teacher_job_dict(seed: int) -> dict:
    """A random OPD job (other methods may compete) whose teacher is trained as a stage, its
    ``teacher.score`` a random quantile of what the teacher's own plans reach, limits drawn."""
    rng = random.Random(seed)
    while True:
        d = random_job_dict(rng, f"teacher-{seed}")
        methods = d["training"]["methods"]
        if "opd" not in methods:
            methods["opd"] = {"steps_options": _take(rng, SMALL.steps, SMALL.steps_taken),
                              "prompts_per_step": rng.choice([16, 32, 64])}
            d["teacher"] = {"architecture": {}, "score": 0.0, "precision_options": ["bf16"]}
        own = rng.sample(["sft", "rl"], rng.randint(1, 2))
        if "sft" in own and "sft_data" not in d:
            d["sft_data"] = {"examples_available": rng.choice([0, 10000]), "usd_per_labeled_example": 0.5,
                             "labeled_examples_per_day": 20000, "example_tokens": 800, "external_data_share_options": [1.0]}
        baseline = rng.uniform(10, 60)
        training = {"baseline_score": baseline,
                    "methods": {m: {"steps_options": _take(rng, SMALL.steps, (1, 3)), "prompts_per_step": rng.choice([16, 64])}
                                for m in own}}
        if rng.random() < 0.3:
            training["gpus"] = [{"name": rng.choice(["H100-SXM", "A100-80GB", "L40S"]), "counts": _take(rng, [1, 2, 4, 8], (1, 2))}]
        d["teacher"].update(architecture={"preset": rng.choice(TEACHER_PRESETS)}, exists=False, training_usd=0.0,
                            training_hours=0.0, score=baseline, training=training)
        try:
            inst = parse_instance(d)
        except ValueError:  # nothing of the teacher's job fits: draw again
            continue
        reached = sorted(o.quality for o in teacher_space(inst, Evaluator).usable.values())
        d["teacher"]["score"] = reached[int(rng.random() * len(reached))]
        inst = parse_instance(d)
        return with_drawn_limits(d, all_plans(inst), rng)


def teacher_job(seed: int) -> Instance:
    return parse_instance(teacher_job_dict(seed))


def trained_teacher_wins(result) -> bool | None:
    """True when the optimum distils a trained teacher, False when it does without one, None when infeasible."""
    if result.plan is None:
        return None
    return result.plan.method == "opd" and result.plan.teacher_training is not None


@pytest.mark.parametrize("seed", split_seeds(SEEDS, 6))
def test_mip_equals_both_oracles(seed):
    inst = teacher_job(seed)
    mip = assert_mip_equals_both_oracles(inst)
    if mip.plan is not None and mip.plan.method == "opd":
        assert mip.plan.teacher_training is not None
        assert mip.plan.teacher_training in {o.plan for o in teacher_space(inst, Evaluator).pareto}


@pytest.mark.slow
@pytest.mark.parametrize("seed", SLOW_SEEDS)
def test_mip_equals_both_oracles_more_seeds(seed):
    test_mip_equals_both_oracles(seed)


def test_both_a_trained_teacher_and_no_teacher_win_somewhere():
    """A guard on the generator: the contract above covers instances where distilling a trained teacher is
    optimal and instances where RL/SFT without a teacher is."""
    wins = {trained_teacher_wins(best_plan(teacher_job(seed))) for seed in SEEDS}
    assert True in wins and False in wins, wins


@pytest.mark.parametrize("seed", SEEDS[:6])
def test_the_folded_lump_is_the_teacher_jobs_own_cost_and_wall(seed):
    inst = teacher_job(seed)
    own = Evaluator(teacher_instance(inst))
    ev = Evaluator(inst)
    opd = [r for r in ev.space()[0] if r.method == "opd"]
    assert opd and all(r.teacher_training is not None for r in opd)
    for r in opd:
        m = own.evaluate(r.teacher_training)
        assert m.feasible and m.quality >= inst.teacher.score - 1e-9
        rp = ev.recipe(r)
        assert rp.data_usd == m.cost_usd and rp.lead_hours == m.wall_hours  # OPD has no other data money or lead
        assert m.cost_breakdown_usd["operations"] == 0.0 == m.cost_breakdown_usd["forgetting_repair"]


@pytest.mark.parametrize("seed", SEEDS[:8])
def test_the_pareto_pruning_loses_no_optimum(seed, monkeypatch):
    inst = teacher_job(seed)
    space = teacher_space(inst, Evaluator)
    pruned = best_plan(inst)
    import planopt.models.cost.evaluator as evaluator_module
    monkeypatch.setattr(evaluator_module, "teacher_plans", lambda i, e: tuple(teacher_space(i, e).usable))
    every = best_plan(inst)
    assert pruned.status == every.status
    if every.status == "optimal":
        assert close(pruned.metrics.objective(inst.objective), every.metrics.objective(inst.objective))
        assert close(pruned.metrics.cost_usd, every.metrics.cost_usd)
    kept = {(o.cost_usd, o.wall_hours) for o in space.pareto}
    for o in space.usable.values():   # every usable plan is weakly dominated by a kept one
        assert any(c <= o.cost_usd and w <= o.wall_hours for c, w in kept)


def test_pareto_set_keeps_the_first_of_ties_and_drops_the_dominated():
    from planopt.models.cost.teacher_training import TeacherOption
    opts = [TeacherOption(f"p{n}", c, w, 0.0) for n, (c, w) in enumerate([(5, 5), (3, 9), (5, 5), (4, 9), (9, 1), (6, 5)])]
    assert [o.plan for o in pareto_set(opts)] == ["p1", "p0", "p4"]


def _cli_files(tmp_path, inst_dict: dict):
    path = tmp_path / "job.json"
    path.write_text(json.dumps(inst_dict))
    return path


def _seed_where_trained_teacher_wins() -> int:
    return next(s for s in SEEDS if trained_teacher_wins(best_plan(teacher_job(s))))


def test_json_round_trip_through_evaluate(tmp_path):
    seed = _seed_where_trained_teacher_wins()
    d = teacher_job_dict(seed)
    job = _cli_files(tmp_path, d)
    res = runner.invoke(app, ["solve", str(job), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    ResultSchema.model_validate(out)
    stage = out["plan"]["stages"][0]
    assert stage["method"] == "opd" and stage["teacher_training"]["method"] in ("sft", "rl")
    plan = read_plan(out["plan"])
    assert plan_json(plan, out["plan"]["student"]) == out["plan"]
    (tmp_path / "plan.json").write_text(json.dumps(out))
    ev = runner.invoke(app, ["evaluate", str(job), str(tmp_path / "plan.json"), "--json"])
    assert ev.exit_code == 0, ev.output
    back = json.loads(ev.stdout)
    ResultSchema.model_validate(back)
    assert back["metrics"]["cost_usd"] == pytest.approx(out["metrics"]["cost_usd"], rel=1e-9)
    assert back["metrics"]["wall_hours"] == pytest.approx(out["metrics"]["wall_hours"], rel=1e-9)
    text = runner.invoke(app, ["solve", str(job)])
    assert text.exit_code == 0 and "teacher training" in text.output and stage["teacher_training"]["method"].upper() in text.output
    assert "Risk" in text.output   # scenarios price the teacher's own plan in each scenario
    assert out["risk"]["limits"]["teacher.score"] == pytest.approx(back["risk"]["limits"]["teacher.score"])
    assert 0.0 <= out["risk"]["limits"]["teacher.score"] <= 1.0
    # a teacher plan that is not a usable option of the instance is refused, naming the field
    bad = json.loads(json.dumps(out))
    bad["plan"]["stages"][0]["teacher_training"]["steps"] = 7
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    res = runner.invoke(app, ["evaluate", str(job), str(tmp_path / "bad.json")])
    assert res.exit_code == 2 and "plan.teacher_training.steps: 7 is not in teacher.training.methods." in res.output
    assert len(res.output.strip().splitlines()) == 1
    bad["plan"]["stages"][0].pop("teacher_training")
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    res = runner.invoke(app, ["evaluate", str(job), str(tmp_path / "bad.json")])
    assert res.exit_code == 2 and "plan.teacher_training: missing" in res.output


def test_a_teacher_plan_below_the_score_is_refused():
    inst = teacher_job(0)
    own = Evaluator(teacher_instance(inst))
    short = [sp.plan for sp in all_plans(teacher_instance(inst)) if sp.metrics.fits_memory
             and sp.metrics.quality < inst.teacher.score - 1e-6]
    if not short:
        pytest.skip("every teacher plan of seed 0 reaches the score")
    r = next(r for r in Evaluator(inst).space()[0] if r.method == "opd")
    from dataclasses import replace
    with pytest.raises(ValueError, match=r"plan.teacher_training: not a usable teacher plan.*below teacher.score"):
        Evaluator(inst).recipe(replace(r, teacher_training=short[0]))
    assert own.evaluate(short[0]).quality < inst.teacher.score


@pytest.mark.parametrize("change, expected", [
    (lambda d: d["teacher"].update(exists=True), "teacher.training: only for a teacher that does not exist yet"),
    (lambda d: d["teacher"]["training"].update(baseline_score=d["teacher"]["score"] + 1),
     "teacher.training.baseline_score"),
    (lambda d: d["teacher"].update(score=99.9), "teacher.training: no teacher plan reaches teacher.score 99.9 (the best reaches"),
    (lambda d: d["teacher"]["training"]["methods"].update(opd={"steps_options": [10], "prompts_per_step": 8}),
     "teacher.training.methods.opd: not allowed"),
    (lambda d: d["teacher"].update(training_usd=10.0), "teacher.training_usd / teacher.training_hours"),
])
def test_bad_input_is_one_line_exit_2(tmp_path, change, expected):
    d = teacher_job_dict(0)
    change(d)
    res = runner.invoke(app, ["solve", str(_cli_files(tmp_path, d))])
    assert res.exit_code == 2, res.output
    assert expected in res.output and len(res.output.strip().splitlines()) == 1


@pytest.mark.parametrize("args", [["solve", "--confidence", "0.6", "--scenarios", "40"], ["solve", "--scenarios", "100"],
                                  ["evaluate", "--scenarios", "100"], ["frontier", "--y", "probability", "--scenarios", "30"],
                                  ["sweep", "--confidence", "0.5,0.6", "--scenarios", "30", "--serial"]])
def test_scenarios_price_the_teachers_own_plan(tmp_path, args):
    """Every scenario feature runs on a trained teacher: the teacher's plan is drawn in each scenario, and the OPD
    stage counts only where it reaches teacher.score there (``teacher.score`` in the risk's limits)."""
    seed = _seed_where_trained_teacher_wins()
    d = teacher_job_dict(seed)
    job = _cli_files(tmp_path, d)
    out = json.loads(runner.invoke(app, ["solve", str(job), "--json"]).stdout)
    (tmp_path / "plan.json").write_text(json.dumps(out))
    cmd = [args[0], str(job)] + ([str(tmp_path / "plan.json")] if args[0] == "evaluate" else []) + args[1:] + ["--json"]
    res = runner.invoke(app, cmd)
    assert res.exit_code in (0, 3), res.output
    json.loads(res.stdout)   # one JSON object


@pytest.mark.slow  # long (20-60 s on 2 cores); .ci/run runs it with -m slow
def test_the_chance_model_with_a_trained_teacher_equals_the_oracle_over_the_same_scenarios():
    """A trained teacher's plan is priced in each scenario (its money and hours) and unusable where it falls
    short of teacher.score: the chance MIP equals the plan-by-plan oracle over the same scenarios."""
    from planopt.models.uncertainty.model import draw
    from planopt.oracles.by_plan import best_under_scenarios
    from planopt.uncertainty.chance import solve_chance
    checked = 0
    for seed in range(6):
        inst = teacher_job(seed)
        for confidence in (0.5, 0.8):
            mip = solve_chance(inst, confidence, 16, seed, out_of_sample=50, guard=False)
            oracle = best_under_scenarios(inst, draw(inst, 16, seed), confidence)
            assert (mip.status == "optimal") == (oracle is not None), (seed, mip.status, mip.message)
            if oracle is None:
                continue
            metric = {"cost": "cost_usd", "time": "wall_hours", "quality": "quality", "forgetting": "forgetting_points"}[inst.objective]
            assert mip.risk["expected"][metric] == pytest.approx(oracle.expected[metric], rel=1e-6, abs=1e-6)
            assert mip.risk["expected"]["cost_usd"] == pytest.approx(oracle.expected["cost_usd"], rel=1e-6, abs=1e-6)
            checked += mip.plan.stages[-1].recipe.teacher_training is not None
    assert checked > 0   # some optimum distils a trained teacher under scenarios


# --- a trained teacher in staged recipes and with a choice of student ---------------------------

def staged_teacher_instance(seed: int) -> Instance | None:
    from planopt.oracles.by_plan import all_plans
    from tests.support.staged_instances import shrunk_staged_job_dict
    d = shrunk_staged_job_dict(seed)
    rng = random.Random(seed)
    if "opd" not in d["training"]["methods"] or with_trained_teacher(d, rng) is None:
        return None
    return parse_instance(with_drawn_limits(d, all_plans(parse_instance(d)), rng))


def candidate_teacher_instance(seed: int) -> Instance | None:
    from planopt.oracles.by_plan import all_plans
    from tests.support.candidate_instances import candidate_job_dict
    d = candidate_job_dict(seed)
    rng = random.Random(seed)
    if "opd" not in d["training"]["methods"] or with_trained_teacher(d, rng) is None:
        return None
    return parse_instance(with_drawn_limits(d, all_plans(parse_instance(d)), rng))


STAGED_SEEDS, STAGED_SLOW_SEEDS = [0, 3, 5, 6, 9, 11], [s for s in range(12, 40)] + [1, 2, 4, 7, 8, 10]
CANDIDATE_SEEDS, CANDIDATE_SLOW_SEEDS = [0, 1, 4, 9, 12], list(range(14, 60))


def _staged_contract(seed: int):
    from tests.support.oracle_checks import assert_staged_contract
    inst = staged_teacher_instance(seed)
    if inst is None:
        return None
    mip, _ = assert_staged_contract(inst)
    if mip.plan is not None:   # the staged shape round-trips, teacher plan included
        from planopt.models.schema.plan import Plan
        again = Plan.from_dict(json.loads(json.dumps(mip.plan.to_dict())))
        assert again == mip.plan
        assert Evaluator(inst).evaluate(again).cost_usd == mip.metrics.cost_usd
    return mip


def _candidate_contract(seed: int):
    from planopt.oracles.by_plan import all_plans
    from planopt.job.model import PlanModel
    from tests.support.oracle_checks import assert_candidate_contract
    inst = candidate_teacher_instance(seed)
    if inst is None:
        return None
    mip = PlanModel(inst).solve()
    assert_candidate_contract(inst, mip, all_plans(inst))
    return mip


@pytest.mark.slow  # long (20-60 s on 2 cores); .ci/run runs it with -m slow
def test_staged_mip_with_a_trained_teacher_equals_the_staged_oracle():
    results = [_staged_contract(seed) for seed in STAGED_SEEDS]
    trained = [m is not None and m.plan is not None and any(s.recipe.teacher_training is not None for s in m.plan.stages)
               for m in results]
    assert any(trained) and not all(trained), trained


@pytest.mark.slow
@pytest.mark.parametrize("seed", STAGED_SLOW_SEEDS)
def test_staged_mip_with_a_trained_teacher_equals_the_staged_oracle_slow(seed):
    _staged_contract(seed)


@pytest.mark.slow  # long (20-60 s on 2 cores); .ci/run runs it with -m slow
def test_candidate_mip_with_a_trained_teacher_equals_the_candidate_oracle():
    results = [_candidate_contract(seed) for seed in CANDIDATE_SEEDS]
    trained = [m is not None and m.plan is not None and m.plan.teacher_training is not None for m in results]
    assert any(trained) and not all(trained), trained


@pytest.mark.slow
@pytest.mark.parametrize("seed", CANDIDATE_SLOW_SEEDS)
def test_candidate_mip_with_a_trained_teacher_equals_the_candidate_oracle_slow(seed):
    _candidate_contract(seed)


def test_the_shipped_instance_costs_what_its_teacher_plan_as_a_lump_costs():
    """The trained teacher folded into the plan is exactly the old lump at that teacher plan's cost and wall hours."""
    from tests.support.common import INSTANCES
    from planopt.job.model import solve
    d = json.loads((INSTANCES / "qwen3-8b-math-train-the-teacher.json").read_text())
    inst = parse_instance(d)
    res = solve(inst)
    option = teacher_space(inst, Evaluator).usable[res.plan.teacher_training]
    d["teacher"].pop("training")
    d["teacher"].update(training_usd=option.cost_usd, training_hours=option.wall_hours)
    lump = solve(parse_instance(d))
    assert lump.plan.recipe == replace_teacher(res.plan.recipe, None)
    assert lump.metrics.cost_usd == pytest.approx(res.metrics.cost_usd, rel=1e-12)
    assert lump.metrics.wall_hours == pytest.approx(res.metrics.wall_hours, rel=1e-12)


def replace_teacher(recipe, plan):
    from dataclasses import replace
    return replace(recipe, teacher_training=plan)


def test_point_frontiers_and_sweeps_carry_the_risk_of_every_row():
    """A frontier and a sweep of a trained-teacher instance run; each row's risk prices the teacher's plan too."""
    from tests.support.common import INSTANCES
    path = str(INSTANCES / "qwen3-8b-math-train-the-teacher.json")
    res = runner.invoke(app, ["frontier", path, "--json"])
    assert res.exit_code == 0, res.output
    points = json.loads(res.stdout)["points"]
    assert points and all("teacher.score" in p["risk"]["limits"] for p in points)
    assert points[0]["plan"]["stages"][0]["teacher_training"]["method"] == "sft"
    res = runner.invoke(app, ["sweep", path, "--budget-usd", "100000:200000:2", "--json"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)["rows"]
    assert [r["status"] for r in rows] == ["infeasible", "optimal"]
    assert rows[0]["risk"] is None and "teacher.score" in rows[1]["risk"]["limits"]


def test_fit_of_a_trained_teacher_instance_runs(tmp_path):
    """A pilot measures the student's runs, not the teacher's job: fitting a trained-teacher instance writes it fitted."""
    from tests.support.common import INSTANCES
    fitted = tmp_path / "fitted.json"
    res = runner.invoke(app, ["fit", str(INSTANCES / "qwen3-8b-math-train-the-teacher.json"),
                              str(INSTANCES / "pilot-qwen3-8b-math.csv"), "--out", str(fitted)])
    assert res.exit_code == 0, res.output
    assert json.loads(fitted.read_text())["teacher"]["training"] is not None
