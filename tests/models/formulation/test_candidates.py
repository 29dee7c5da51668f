"""A choice of student (``candidate_students``), held to the candidate oracle and to each student's evaluator:

1. the candidate MIP's optimum equals the candidate oracle's on random candidate instances
   (``candidate_instances``; ``-m slow`` sweeps more seeds): status, objective and cost, the student when
   no other student ties with it, a feasible plan, the MIP's own metric values equal to the evaluator's;
2. one built ``CandidatePlanModel`` re-solved under changed limits and objectives equals the oracle at each
   (the per-student recipe fixing by limits is exact and undone when a limit is loosened);
3. a twin candidate (the instance's own architecture and scores under another name) changes nothing, and
   ``for_student`` of the own name is the instance;
4. a candidate that fits nowhere is never chosen and changes nothing; when no student fits, infeasible;
5. the CLI: solve, evaluate, enumerate, the text report, frontiers (exact, each point priced on its own
   student), risk on the chosen student, validate, CSV outputs, overrides, SCIP, refused confidences;
6. bad candidate lists: exit 2, one line naming the field;
and what the report derives from re-solves (binding limits, least relaxations) and the model-size cap.

A product bug found by these tests is marked ``xfail(strict=True)`` with its reproduction until it is fixed.
"""

from __future__ import annotations

import copy
import functools
import json
import random

import pytest
from typer.testing import CliRunner

from planopt.oracles.by_plan import all_plans, best_plan, space_size
from planopt.cli import app
from planopt.models.cost.evaluator import Evaluator, exceeds
from planopt.models.formulation import LIMITS
from planopt.models.schema.instance import Instance
from planopt.instance import load_instance, parse_instance
from planopt.models.schema.plan import read_plan
from planopt.oracles.by_plan import all_plans, best_plan, lexicographic_best
from planopt.job.model import PlanModel, solve

from tests.support.candidate_instances import candidate_instance_dict, candidate_job_dict
from tests.support.oracle_checks import (assert_least_relaxations_equal_the_oracle, assert_same_metrics, close, limit_steps, quantile,
                                         with_limits)
from tests.support.oracle_checks import assert_candidate_contract, unique_student
from tests.support.random_instances import random_limits
from tests.support.common import split_seeds

SUMMARY = ("cost_usd", "wall_hours", "quality", "forgetting_points", "gpu_hours", "memory_per_gpu_gb")
FAST_SEEDS = list(range(22))          # ~0.5 s each; -m slow sweeps the next 138
SLOW_SEEDS = list(range(22, 160))

runner = CliRunner()


@functools.lru_cache(maxsize=None)
def candidate_instance(seed: int) -> Instance:
    return parse_instance(candidate_instance_dict(seed))


@functools.lru_cache(maxsize=None)
def candidate_plans(seed: int) -> list:
    return all_plans(candidate_instance(seed))


@functools.lru_cache(maxsize=None)
def candidate_oracle(seed: int):
    return best_plan(candidate_instance(seed))





def _oracle_at(plans, limits: dict, objective: str):
    """The candidate oracle under ``limits`` over plans listed once (the evaluator's rule for a limit and the
    oracle's lexicographic choice)."""
    feasible = [p for p in plans if p.metrics.fits_memory and not any(
        limits.get(name) is not None and exceeds(getattr(p.metrics, expr), limits[name], sense)
        for name, (expr, sense) in LIMITS.items())]
    return (lexicographic_best(feasible, objective), feasible) if feasible else (None, [])


# --- 1. the oracle contract ------------------------------------------------------------------

def _contract(seed: int):
    inst = candidate_instance(seed)
    pm = PlanModel(inst)
    assert len(pm.space.slots[0].students) > 1
    mip = pm.solve()
    oracle = candidate_oracle(seed)
    assert_candidate_contract(inst, mip, candidate_plans(seed), oracle)
    return mip, oracle


@pytest.mark.parametrize("seed", split_seeds(FAST_SEEDS, 8))
def test_candidate_mip_equals_the_oracle(seed):
    _contract(seed)


@pytest.mark.slow
@pytest.mark.parametrize("seed", SLOW_SEEDS)
def test_candidate_mip_equals_the_oracle_slow(seed):
    _contract(seed)


@pytest.mark.slow  # long (20-60 s on 2 cores); .ci/run runs it with -m slow
def test_the_fast_seeds_are_not_vacuous():
    """Some seeds are infeasible; optimal ones choose the instance's own student and others; some list 3 students."""
    statuses, own, other, three, unique = set(), 0, 0, 0, 0
    for seed in FAST_SEEDS:
        inst = candidate_instance(seed)
        oracle = candidate_oracle(seed)
        statuses.add(oracle.status)
        three += len(inst.student_names()) == 3
        if oracle.status == "optimal":
            own += oracle.student == inst.student_name
            other += oracle.student != inst.student_name
            unique += unique_student(candidate_plans(seed), inst.objective, oracle)
    assert statuses == {"optimal", "infeasible"}
    assert own >= 1 and other >= 3 and three >= 5, (own, other, three)
    assert unique >= own + other - 2, (unique, own + other)   # the student is asserted on nearly every optimal seed


# --- 2. one model re-solved under changed limits and objectives -------------------------------


RESOLVE_SEEDS = [1, 7, 12, 18]


@pytest.mark.parametrize("seed", RESOLVE_SEEDS)
def test_one_model_resolved_under_changed_limits_equals_the_oracle(seed):
    job = candidate_job_dict(seed)
    job["objective"] = random.Random(seed).choice(["cost", "quality"])
    inst = parse_instance(job)
    plans = all_plans(inst)
    fitting = [p.metrics for p in plans if p.metrics.fits_memory]
    assert fitting
    pm = PlanModel(inst)
    assert len(pm.space.slots[0].students) > 1
    fixed_vars = pm.model.limit_fixed_vars
    steps = limit_steps(fitting)
    # a quality floor between two students' best qualities rules out every recipe of the weaker one
    top = sorted({p.student: max(q.metrics.quality for q in plans if q.student == p.student and q.metrics.fits_memory)
                  for p in plans if p.metrics.fits_memory}.items(), key=lambda kv: kv[1])
    if len(top) >= 2 and top[-1][1] > top[-2][1] + 1e-6:
        steps[4:4] = [{"min_quality": 0.5 * (top[-1][1] + top[-2][1])}, {"min_quality": None}]
    limits: dict = {}
    fixed_somewhere = False
    for change in steps:
        limits.update(change)
        pm.set_limits(**change)
        fixed_somewhere |= any(v.ub == 0 for v in fixed_vars)
        mip = pm.solve()
        best, feasible = _oracle_at(plans, limits, inst.objective)
        assert mip.status == ("optimal" if best else "infeasible"), (limits, mip.status, best)
        if best is None:
            continue
        assert close(mip.metrics.objective(inst.objective), best.metrics.objective(inst.objective)), (limits, mip.student, mip.plan, best.student, best.plan)
        assert close(mip.metrics.cost_usd, best.metrics.cost_usd), (limits, mip.student, mip.plan, best.student, best.plan)
        # ``plans`` were scored without limits; unique_student only reads feasible, so mark them by hand
        if all(not (p.student != best.student and close(p.metrics.objective(inst.objective), best.metrics.objective(inst.objective))
                    and close(p.metrics.cost_usd, best.metrics.cost_usd)) for p in feasible):
            assert mip.student == best.student, (limits, mip.student, best.student)
        for name, (expr, sense) in LIMITS.items():
            if limits.get(name) is not None:
                assert not exceeds(getattr(mip.metrics, expr), limits[name], sense), (name, limits, mip.plan)
        for key, value in mip.mip_values.items():
            assert close(value, getattr(mip.metrics, key)), (limits, key)
    # the oracle at the last limits is the product's own oracle too
    final = best_plan(with_limits(inst, limits))
    assert final.status == mip.status and (final.status != "optimal" or close(final.metrics.cost_usd, mip.metrics.cost_usd))
    # with no limit left every recipe of every student is free again
    assert all(v.ub == 1 for v in fixed_vars), [v.name for v in fixed_vars if v.ub != 1]
    assert fixed_somewhere


@pytest.mark.parametrize("seed", [1, 3, 7, 13, 18])
def test_one_model_resolved_under_each_objective_equals_the_oracle(seed):
    inst = candidate_instance(seed)
    plans = candidate_plans(seed)
    pm = PlanModel(inst)
    for objective in ("quality", "time", "forgetting", "cost", "quality"):
        pm.set_objective(objective)
        assert_candidate_contract(inst, pm.solve(), plans, objective=objective)


# --- 3. a twin of the instance's own student ---------------------------------------------------

@pytest.mark.parametrize("seed", [0, 4, 7, 18])
def test_a_twin_candidate_gives_the_plain_instances_optimum(seed):
    data = candidate_instance_dict(seed)
    data.pop("candidate_students")
    plain = parse_instance(data)
    twin_data = copy.deepcopy(data)
    twin_data["candidate_students"] = [{"name": "twin", "architecture": copy.deepcopy(data["student"]),
                                        "baseline_score": data["task"]["baseline_score"],
                                        "general_score_baseline": data["task"]["general_score_baseline"]}]
    twin = parse_instance(twin_data)
    assert len(PlanModel(twin).space.slots[0].students) > 1
    assert space_size(twin) == 2 * len(all_plans(plain))
    a, b = solve(plain), solve(twin)
    oracle = best_plan(plain)
    assert a.status == b.status == oracle.status, (a.status, b.status, oracle.status)
    if a.status == "optimal":
        assert b.student in (plain.student_name, "twin")
        for objective in (plain.objective, "cost"):
            assert close(a.metrics.objective(objective), b.metrics.objective(objective)), (a.plan, b.plan)
            assert close(b.metrics.objective(objective), oracle.metrics.objective(objective))
    # for_student of the own name and of the twin is the instance: same metrics for every plan
    own = twin.for_student(plain.student_name)
    assert own.candidate_students is None
    ev, ev_own, ev_twin = Evaluator(plain), Evaluator(own), Evaluator(twin.for_student("twin"))
    for sp in all_plans(plain)[::7]:
        assert_same_metrics(ev_own.evaluate(sp.plan), sp.metrics)
        assert_same_metrics(ev_twin.evaluate(sp.plan), ev.evaluate(sp.plan))


def test_for_student_of_the_own_name_is_the_instance():
    inst = candidate_instance(18)
    own = inst.for_student(inst.student_name)
    assert own.student == inst.student and own.task == inst.task and own.candidate_students is None
    plain = parse_instance({k: v for k, v in json.loads(_instance_json(18)).items() if k != "candidate_students"})
    for sp in all_plans(plain)[::11]:
        assert_same_metrics(Evaluator(own).evaluate(sp.plan), sp.metrics)
    with pytest.raises(ValueError, match="plan.student"):
        inst.for_student("no-such-model")


# --- 4. candidates that fit nowhere -----------------------------------------------------------

SMALL_GPUS = [{"name": "L40S", "counts": [1, 2, 4]}, {"name": "A100-80GB", "counts": [1, 2]}]
HUGE = {"name": "Llama-3.1-405B", "architecture": {"preset": "Llama-3.1-405B"}, "baseline_score": 60.0,
        "general_score_baseline": 90.0}


def _small_gpu_job(seed: int) -> dict:
    job = candidate_job_dict(seed)
    job["hardware"]["gpus"] = copy.deepcopy(SMALL_GPUS)
    return job


@pytest.mark.parametrize("seed", [0, 1, 7, 12])
def test_a_candidate_that_fits_nowhere_is_never_chosen(seed):
    base = _small_gpu_job(seed)
    plans = [p for p in all_plans(parse_instance(base)) if p.metrics.fits_memory]
    assert plans, "the small students fit on the small GPUs"
    rng = random.Random(seed)
    base["constraints"] = random_limits(rng, {k: [getattr(p.metrics, k) for p in plans]
                                              for k in ("cost_usd", "wall_hours", "forgetting_points", "quality")})
    with_huge = copy.deepcopy(base)
    with_huge["candidate_students"].append(HUGE)
    inst = parse_instance(with_huge)
    listing = all_plans(inst)
    assert not any(p.metrics.fits_memory for p in listing if p.student == HUGE["name"])
    for objective in ("cost", "quality"):
        inst_o = inst.model_copy(update={"objective": objective})
        mip = solve(inst_o)
        assert_candidate_contract(inst_o, mip, listing)
        assert mip.student != HUGE["name"]
        without = solve(parse_instance(dict(base, objective=objective)))
        assert mip.status == without.status
        if mip.status == "optimal":
            assert close(mip.metrics.objective(objective), without.metrics.objective(objective))
            assert close(mip.metrics.cost_usd, without.metrics.cost_usd)


def _nowhere_dict() -> dict:
    job = candidate_job_dict(1)
    job["hardware"]["gpus"] = [{"name": "L4", "counts": [1, 2]}]
    job["student"] = {"preset": "Llama-3.1-405B"}
    job["candidate_students"] = [{"name": "Qwen3-235B-A22B", "architecture": {"preset": "Qwen3-235B-A22B"},
                                  "baseline_score": 50.0, "general_score_baseline": 80.0}]
    job["constraints"] = {}
    return job


def test_when_no_candidate_fits_anywhere_the_solve_is_infeasible_with_a_message(tmp_path):
    inst = parse_instance(_nowhere_dict())
    assert not any(p.metrics.fits_memory for p in all_plans(inst))
    mip = solve(inst)
    assert mip.status == "infeasible" and mip.plan is None and mip.student is None
    assert mip.message
    assert best_plan(inst).status == "infeasible"
    path = tmp_path / "nowhere.json"
    path.write_text(json.dumps(_nowhere_dict()))
    code, out, err = run("solve", path, "--json")
    assert code == 3, (out, err)
    assert json.loads(out)["status"] == "infeasible"
    code, out, err = run("solve", path)
    assert code == 3, (out, err)
    assert "Traceback" not in out + err and "infeasible" in out and mip.message in out + err
    code, out, err = run("enumerate", path, "--json")
    assert code == 3, (out, err)
    assert json.loads(out)["status"] == "infeasible"


# --- 5. the CLI --------------------------------------------------------------------------------

# 3 students (Llama-3.1-8B its own, Qwen3-8B, Qwen3-0.6B), 1,200 plans, a budget, a forgetting tolerance and a
# quality floor; the optimum trains a candidate, not the instance's own student
CLI_SEED = 18
KEYS = {"cost": "cost_usd", "quality": "quality", "time": "wall_hours", "forgetting": "forgetting_points"}


def run(*args):
    res = runner.invoke(app, [str(a) for a in args])
    return res.exit_code, res.stdout, res.stderr


def assert_one_line(err: str, *words: str) -> None:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    for word in words:
        assert word in lines[0], (word, lines[0])


@pytest.fixture(scope="module")
def cli(tmp_path_factory):
    data = json.loads(_instance_json(CLI_SEED))
    path = tmp_path_factory.mktemp("candidates") / "candidates.json"
    path.write_text(json.dumps(data))
    inst = parse_instance(data)
    oracle = best_plan(inst)
    assert oracle.status == "optimal" and oracle.student != inst.student_name
    assert unique_student(all_plans(inst), inst.objective, oracle)
    code, out, err = run("solve", path, "--json", "--no-sensitivity")
    assert code == 0, (out, err)
    return path, data, inst, oracle, json.loads(out)


def test_solve_json_names_the_student_and_its_evaluators_metrics(cli):
    _, _, inst, oracle, result = cli
    assert result["status"] == "optimal"
    plan = result["plan"]
    assert set(plan) == {"student", "stages", "checkpoint_interval_minutes", "retention"}
    assert plan["student"] == oracle.student
    m = Evaluator(inst.for_student(plan["student"])).evaluate(read_plan(plan))
    for key, value in result["metrics"].items():
        assert value == pytest.approx(getattr(m, key), rel=1e-9), key
    for key, value in result["cost_breakdown_usd"].items():
        assert value == pytest.approx(m.cost_breakdown_usd[key], rel=1e-9, abs=1e-9), key
    assert close(result["metrics"][KEYS[inst.objective]], getattr(oracle.metrics, KEYS[inst.objective]))


def test_evaluate_of_the_solved_plan_gives_the_same_metrics(cli, tmp_path):
    path, _, _, _, result = cli
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps(result["plan"]))
    whole = tmp_path / "whole.json"
    whole.write_text(json.dumps(result))
    for given in (plan_file, whole):
        code, out, err = run("evaluate", path, given, "--json")
        assert code == 0, (out, err)
        ev = json.loads(out)
        assert ev["plan"] == result["plan"]
        assert ev["feasible"] is True and ev["violations"] == []
        for key, value in result["metrics"].items():
            assert ev["metrics"][key] == pytest.approx(value, rel=1e-9), key


@pytest.mark.parametrize("student", [None, "Qwen3-99B", "student"])
def test_evaluate_of_a_plan_without_or_with_an_unknown_student_exits_2(cli, tmp_path, student):
    path, _, _, _, result = cli
    plan = dict(result["plan"])
    if student is None:
        plan.pop("student")
    else:
        plan["student"] = student
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps(plan))
    code, out, err = run("evaluate", path, plan_file)
    assert code == 2, (out, err)
    assert_one_line(err, "plan.student")
    code, out, err = run("evaluate", path, plan_file, "--json")
    assert code == 2, (out, err)
    assert "plan.student" in out + err and "Traceback" not in out + err


def test_enumerate_gives_the_same_optimum_and_student_as_solve(cli):
    path, _, inst, _, solved = cli
    code, out, err = run("enumerate", path, "--json")
    assert code == 0, (out, err)
    enum = json.loads(out)
    assert enum["status"] == "optimal"
    assert enum["plan"]["student"] == solved["plan"]["student"]
    key = KEYS[inst.objective]
    assert close(enum["metrics"][key], solved["metrics"][key])
    assert close(enum["metrics"]["cost_usd"], solved["metrics"]["cost_usd"])


def test_enumerate_all_lists_every_students_plans(cli):
    path, _, inst, _, solved = cli
    code, out, err = run("enumerate", path, "--all", "--json")
    assert code == 0, (out, err)
    listing = json.loads(out)["plans"]
    assert len(listing) == space_size(inst)
    counts = {name: sum(p["plan"]["student"] == name for p in listing) for name in inst.student_names()}
    for name, n in counts.items():
        assert n == len(all_plans(inst.for_student(name))), (name, counts)
    feasible = [p for p in listing if p["feasible"]]
    best = min(feasible, key=lambda p: p["metrics"][KEYS[inst.objective]])
    assert close(best["metrics"][KEYS[inst.objective]], solved["metrics"][KEYS[inst.objective]])
    # each listed plan's metrics are its student's evaluator's
    evs = {name: Evaluator(inst.for_student(name)) for name in inst.student_names()}
    for p in listing[::37]:
        m = evs[p["plan"]["student"]].evaluate(read_plan(p["plan"]))
        assert p["fits_memory"] == m.fits_memory and p["feasible"] == m.feasible, p["plan"]
        if p["metrics"] is None:    # a plan that does not fit in memory is listed without metrics
            assert not m.fits_memory
            continue
        for key in ("cost_usd", "wall_hours", "quality", "forgetting_points"):
            assert p["metrics"][key] == pytest.approx(getattr(m, key), rel=1e-9), (key, p["plan"])


def test_the_text_report_has_a_student_row(cli):
    path, _, _, _, solved = cli
    code, out, err = run("solve", path, "--no-sensitivity")
    assert code == 0, (out, err)
    rows = [ln for ln in out.splitlines() if ln.strip().startswith("student")]
    assert len(rows) == 1, out
    assert solved["plan"]["student"] in rows[0]


def _pareto(plans):
    """The exact cost-quality frontier of the feasible ``plans``: (cost, quality, student), by rising cost."""
    front, best_q = [], None
    for cost, neg_q, student in sorted((p.metrics.cost_usd, -p.metrics.quality, p.student) for p in plans if p.feasible):
        if best_q is None or -neg_q > best_q + 1e-9:
            front.append((cost, -neg_q, student))
            best_q = -neg_q
    return front


# seed 7's frontier runs over all three of its students, seed 1's over two, seed 18's (the CLI seed) over one
@pytest.mark.parametrize("seed", [7, 1, CLI_SEED])
def test_frontier_points_name_their_student_and_equal_the_oracles_frontier(seed, tmp_path):
    data = candidate_instance_dict(seed)
    inst = parse_instance(data)
    path = tmp_path / "candidates.json"
    path.write_text(json.dumps(data))
    code, out, err = run("frontier", path, "--x", "cost_usd", "--y", "quality", "--json")
    assert code == 0, (out, err)
    points = sorted(json.loads(out)["points"], key=lambda p: p["cost_usd"])
    assert points
    for point in points:
        name = point["plan"]["student"]
        assert name in inst.student_names()
        m = Evaluator(inst.for_student(name)).evaluate(read_plan(point["plan"]))
        for key in ("cost_usd", "wall_hours", "quality", "forgetting_points"):
            assert point[key] == pytest.approx(getattr(m, key), rel=1e-9), (key, point["plan"])
        assert m.feasible, m.violations
    plans = all_plans(inst)
    front = _pareto(plans)
    assert len(points) == len(front), ([(p["cost_usd"], p["quality"], p["plan"]["student"]) for p in points], front)
    for point, (cost, quality, student) in zip(points, front):
        assert close(point["cost_usd"], cost) and close(point["quality"], quality), (point["plan"], cost, quality, student)
        ties = {p.student for p in plans if p.feasible and close(p.metrics.cost_usd, cost) and close(p.metrics.quality, quality)}
        assert point["plan"]["student"] in ties
    if seed == 7:
        assert len({p["plan"]["student"] for p in points}) == 3
        # each point's risk is priced on its own student's instance
        from planopt.uncertainty.risk import REPORT_SCENARIOS, plan_risk
        for point in points:
            want = plan_risk(inst.for_student(point["plan"]["student"]), read_plan(point["plan"]), REPORT_SCENARIOS)
            got = point["risk"]["percentiles"]
            for metric, ps in want.percentiles().items():
                for p, value in ps.items():
                    assert got[metric][p] == pytest.approx(value, rel=1e-9), (metric, p, point["plan"]["student"])


def test_the_risk_is_priced_on_the_chosen_students_instance(cli, tmp_path):
    from planopt.uncertainty.risk import plan_risk
    path, _, inst, _, _ = cli
    code, out, err = run("solve", path, "--json", "--no-sensitivity", "--scenarios", 300, "--seed", 5)
    assert code == 0, (out, err)
    result = json.loads(out)
    name = result["plan"]["student"]
    assert name != inst.student_name
    want = plan_risk(inst.for_student(name), read_plan(result["plan"]), 300, seed=5).to_dict()
    assert result["risk"]["share_meeting_all_limits"] == pytest.approx(want["share_meeting_all_limits"])
    for metric, ps in want["percentiles"].items():
        for p, value in ps.items():
            assert result["risk"]["percentiles"][metric][p] == pytest.approx(value, rel=1e-9), (metric, p)
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps(result["plan"]))
    code, out, err = run("evaluate", path, plan_file, "--json", "--scenarios", 300, "--seed", 5)
    assert code == 0, (out, err)
    evaluated = json.loads(out)["risk"]["percentiles"]
    for metric, ps in result["risk"]["percentiles"].items():
        assert evaluated[metric] == pytest.approx(ps, rel=1e-9), metric


def test_an_own_student_that_fits_nowhere_leaves_the_candidates(tmp_path):
    """The instance's own student (block 0, whose evaluator the model keeps) fits on no option: the candidates still
    solve, report, enumerate and validate."""
    data = json.loads(_instance_json(CLI_SEED))
    own = data["student"]["preset"]
    data["candidate_students"].append({"name": own, "architecture": {"preset": own},
                                       "baseline_score": data["task"]["baseline_score"],
                                       "general_score_baseline": data["task"]["general_score_baseline"]})
    data["student"] = {"preset": HUGE["name"]}
    inst = parse_instance(data)
    plans = all_plans(inst)
    assert not any(p.metrics.fits_memory for p in plans if p.student == HUGE["name"])
    oracle = best_plan(inst)
    assert_candidate_contract(inst, solve(inst), plans, oracle)
    path = tmp_path / "own-huge.json"
    path.write_text(json.dumps(data))
    code, out, err = run("solve", path, "--json")
    assert code == 0, (out, err)
    result = json.loads(out)
    assert result["plan"]["student"] == oracle.student != HUGE["name"]
    assert close(result["metrics"]["cost_usd"], oracle.metrics.cost_usd)
    code, out, err = run("solve", path)
    assert code == 0 and "Traceback" not in out + err, (out, err)
    code, out, err = run("enumerate", path, "--json")
    assert code == 0 and json.loads(out)["plan"]["student"] == oracle.student, (out, err)
    code, out, err = run("validate", path)
    assert code == 0, (out, err)


def test_a_chance_constrained_solve_of_a_candidate_instance_names_its_student(cli):
    path = cli[0]
    code, out, err = run("solve", path, "--confidence", "0.6", "--scenarios", "40", "--json")
    assert code in (0, 3), (out, err)
    result = json.loads(out)
    assert result["plan"] is None or result["plan"]["student"] in load_instance(path).student_names()
    if result["plan"] is not None:
        assert result["risk"]["in_sample_share"] >= result["risk"]["in_sample_target"] - 1e-9


# --- 6. bad candidate lists ---------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _instance_json(seed: int) -> str:
    return json.dumps(candidate_instance_dict(seed))


def _bad(change, seed=CLI_SEED):
    data = json.loads(_instance_json(seed))
    change(data)
    return data


def _drop(key):
    return lambda d: d["candidate_students"][0].pop(key)


BAD = {
    "no baseline_score": (_drop("baseline_score"), "candidate_students.0.baseline_score"),
    "no general_score_baseline": (_drop("general_score_baseline"), "candidate_students.0.general_score_baseline"),
    "no architecture": (_drop("architecture"), "candidate_students.0.architecture"),
    "unknown preset": (lambda d: d["candidate_students"][0].update(architecture={"preset": "Qwen9-1T"}),
                       "candidate_students.0.architecture"),
    "duplicate names": (lambda d: d["candidate_students"][1].update(name=d["candidate_students"][0]["name"]),
                        "candidate_students.0.name"),   # the first of the two, saying it names two students
    "named like the own student": (lambda d: d["candidate_students"][0].update(name=d["student"]["preset"]),
                                   "candidate_students.0.name"),
    "baseline above the ceiling": (lambda d: (d["task"].update(score_ceiling=90.0),
                                              d["candidate_students"][0].update(baseline_score=95.0)),
                                   "candidate_students.0.baseline_score"),
    "empty list": (lambda d: d.update(candidate_students=[]), "candidate_students"),
    "not a list": (lambda d: d.update(candidate_students={"name": "x"}), "candidate_students"),
    "empty name": (lambda d: d["candidate_students"][0].update(name=""), "candidate_students.0.name"),
}


@pytest.mark.parametrize("case", list(BAD))
@pytest.mark.parametrize("command", ["solve", "validate"])
def test_bad_candidate_lists_exit_2_with_one_line_naming_the_field(tmp_path, case, command):
    change, field, *seed = BAD[case]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(_bad(change, *seed)))
    code, out, err = run(command, path)
    assert code == 2, (out, err)
    assert_one_line(err, field)


def test_a_bad_candidate_list_under_json_prints_one_error_object(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(_bad(_drop("baseline_score"))))
    code, out, err = run("solve", path, "--json")
    assert code == 2
    assert "Traceback" not in out + err
    obj = json.loads(out)
    assert obj["status"] == "error" and "candidate_students.0.baseline_score" in json.dumps(obj)


def test_one_stage_sequences_with_candidates_are_not_staged_and_are_respected():
    """Only staged recipes are refused with candidates: sequences of one stage each restrict the methods."""
    data = json.loads(_instance_json(1))
    assert set(data["training"]["methods"]) == {"sft", "rl", "opd"}
    data["training"]["stage_sequences"] = [["rl"]]
    for objective in ("cost", "quality", "time"):
        inst = parse_instance(dict(data, objective=objective))
        mip, oracle = solve(inst), best_plan(inst)
        assert_candidate_contract(inst, mip, all_plans(inst), oracle)
        assert mip.plan.method == "rl"


def test_validate_a_candidate_instance(cli):
    """`planopt validate` prints each student's plan space (it once exited 1: check.py read pm.data.intervals)."""
    path, _, inst, _, _ = cli
    code, out, err = run("validate", path)
    assert code == 0, (out, err)
    assert "valid" in out and f"{len(inst.student_names())} students" in out
    for name in inst.student_names():
        assert f"{name}: " in out
        assert f"= {len(all_plans(inst.for_student(name))):,} plans" in out


@pytest.mark.slow
def test_the_shipped_candidate_instance_equals_the_oracle():
    from planopt.instance import load_instance
    from tests.support.common import INSTANCES
    inst = load_instance(INSTANCES / "math-8b-or-32b.json")
    assert inst.candidate_students
    assert_candidate_contract(inst, solve(inst), all_plans(inst), best_plan(inst))


def test_solve_out_csv_names_the_student(cli, tmp_path):
    import pandas as pd
    path, _, _, _, solved = cli
    out_file = tmp_path / "plan.csv"
    code, out, err = run("solve", path, "--no-sensitivity", "--out", out_file)
    assert code == 0, (out, err)
    row = pd.read_csv(out_file).iloc[0]
    assert row["student"] == solved["plan"]["student"]


def test_sweep_out_csv_names_the_student(cli, tmp_path):
    import pandas as pd
    path, _, _, _, solved = cli
    out_file = tmp_path / "sweep.csv"
    code, out, err = run("sweep", path, "--budget-usd", "3500:4000:2", "--out", out_file)
    assert code == 0, (out, err)
    rows = pd.read_csv(out_file)
    assert list(rows["student"]) == [solved["plan"]["student"]] * 2


def test_frontier_and_enumerate_out_csv_name_the_student(cli, tmp_path):
    import pandas as pd
    path, _, inst, _, _ = cli
    f, e = tmp_path / "f.csv", tmp_path / "e.csv"
    assert run("frontier", path, "--x", "cost_usd", "--y", "quality", "--out", f)[0] == 0
    assert set(pd.read_csv(f)["student"]) <= set(inst.student_names())
    assert run("enumerate", path, "--all", "--out", e)[0] == 0
    rows = pd.read_csv(e)
    assert len(rows) == space_size(inst)
    assert set(rows["student"]) == set(inst.student_names())


# --- what the report derives from re-solves: binding limits and relaxations --------------------

@pytest.mark.parametrize("seed", [0, 4, 12, 18])
def test_binding_limits_and_their_relaxations_equal_the_oracle(seed):
    """`solve`'s Limits rows on a candidate model: a limit binds exactly when the oracle without it does better,
    and the objective after the stated relaxation is the oracle's at the relaxed limit."""
    from planopt.job.diagnose import sensitivity
    inst = candidate_instance(seed)
    plans = candidate_plans(seed)
    fitting = [p.metrics for p in plans if p.metrics.fits_memory]
    # limits that bind: a deadline at the median of every student's plans and, for the least cost, a quality
    # floor halfway from the cheapest plan's quality to the best one within that deadline
    deadline = quantile([m.wall_hours for m in fitting], 0.5)
    within = [m for m in fitting if m.wall_hours <= deadline]
    cheapest = min(within, key=lambda m: m.cost_usd)
    floor = 0.5 * (cheapest.quality + max(m.quality for m in within))
    inst = with_limits(inst.model_copy(update={"objective": "quality" if seed == 4 else "cost"}),
                       {"budget_usd": None, "max_forgetting_points": None,
                        "min_quality": None if seed == 4 else floor, "deadline_hours": deadline})
    pm = PlanModel(inst)
    result = pm.solve()
    assert result.status == "optimal"
    objective = inst.objective
    base = result.metrics.objective(objective)
    limits = {k: v for k, v in inst.constraints.model_dump().items() if k in LIMITS and v is not None}
    rows = sensitivity(pm, result)
    assert {r["constraint"] for r in rows} == set(limits)
    for row in rows:
        name = row["constraint"]
        free, _ = _oracle_at(plans, {k: v for k, v in limits.items() if k != name}, objective)
        assert row["binding"] == (free.metrics.objective(objective) < base - 1e-9 * max(1.0, abs(base))), row
        if "relaxed_to" in row:
            relaxed, _ = _oracle_at(plans, dict(limits, **{name: row["relaxed_to"]}), objective)
            want = relaxed.metrics.objective(objective)    # minimised: quality negated; the row is in natural units
            assert close(row["objective_after"], -want if objective == "quality" else want), (row, want)
    assert any(row["binding"] for row in rows), rows
    # the model is left as it was: the same optimum again
    again = pm.solve()
    assert close(again.metrics.objective(objective), base) and again.student == result.student


@pytest.mark.parametrize("seed", [0, 2, 12, 18])
def test_the_least_relaxations_of_an_infeasible_candidate_instance_equal_the_oracles(seed):
    """``explain_infeasible`` on a candidate model, with a deadline of half the fastest plan's of any student:
    each limit relaxed alone needs exactly what the oracle says, over every student's plans."""
    inst = candidate_instance(seed)
    fitting = [p.metrics for p in candidate_plans(seed) if p.metrics.fits_memory]
    inst = with_limits(inst, {"deadline_hours": 0.5 * min(m.wall_hours for m in fitting)})
    assert best_plan(inst).status == "infeasible"
    assert "deadline_hours" in assert_least_relaxations_equal_the_oracle(inst, fitting)


# --- overrides, another solver, and the other chance-constrained commands ------------------------

@pytest.mark.parametrize("objective", ["quality", "time", "forgetting"])
def test_cli_overrides_give_the_same_optimum_and_student_as_enumerate(cli, objective):
    path, _, inst, _, _ = cli
    args = ("--objective", objective, "--min-quality", 30)
    code, out, err = run("solve", path, "--json", "--no-sensitivity", *args)
    assert code == 0, (out, err)
    solved = json.loads(out)
    code, out, err = run("enumerate", path, "--json", *args)
    assert code == 0, (out, err)
    enum = json.loads(out)
    key = KEYS[objective]
    assert close(solved["metrics"][key], enum["metrics"][key]) and close(solved["metrics"]["cost_usd"], enum["metrics"]["cost_usd"])
    changed = inst.with_overrides(objective=objective, min_quality=30.0)
    oracle = best_plan(changed)
    assert close(solved["metrics"][key], getattr(oracle.metrics, key))
    if unique_student(all_plans(changed), objective, oracle):
        assert solved["plan"]["student"] == enum["plan"]["student"] == oracle.student


@pytest.mark.parametrize("seed", [1, 7, 18])
def test_scip_gives_the_oracles_optimum_on_candidate_instances(seed):
    pytest.importorskip("pyscipopt")
    inst = candidate_instance(seed)
    mip = PlanModel(inst, solver="scip").solve()
    assert_candidate_contract(inst, mip, candidate_plans(seed), candidate_oracle(seed))


@pytest.mark.parametrize("args", [("frontier", "--x", "cost_usd", "--y", "probability"),
                                  ("sweep", "--confidence", "0.5,0.9", "--serial")])
def test_the_other_chance_constrained_commands_run_on_a_candidate_instance(cli, args):
    code, out, err = run(args[0], cli[0], *args[1:], "--scenarios", "30", "--json")
    assert code in (0, 3), (out, err)
    json.loads(out)   # one JSON object


def test_the_evaluate_text_report_has_a_student_row(cli, tmp_path):
    path, _, _, _, solved = cli
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps(solved["plan"]))
    code, out, err = run("evaluate", path, plan_file)
    assert code == 0, (out, err)
    rows = [ln for ln in out.splitlines() if ln.strip().startswith("student")]
    assert len(rows) == 1 and solved["plan"]["student"] in rows[0], out


# --- the model-size cap (README: a model over 512 MiB is refused, naming the option) -------------

def _many_counts(counts: int) -> dict:
    data = json.loads(_instance_json(CLI_SEED))
    data["hardware"]["gpus"][0]["counts"] = list(range(1, counts + 1))
    return data


def test_a_candidate_instance_over_the_model_cap_is_refused_before_building(monkeypatch, tmp_path):
    import planopt.job.model as job_model
    from planopt.errors import InputError

    def built(*args, **kwargs):
        raise AssertionError("the over-cap candidate model was built")
    monkeypatch.setattr(job_model, "build", built)
    data = _many_counts(6000)
    plain = {k: v for k, v in data.items() if k != "candidate_students"}
    with pytest.raises(InputError, match="hardware.gpus.0.counts"):
        PlanModel(parse_instance(plain))
    with pytest.raises(InputError, match="hardware.gpus.0.counts"):
        PlanModel(parse_instance(data))


def test_the_model_size_estimate_counts_every_students_block():
    from planopt.errors import InputError
    from planopt.job.plan_space import BASELINE_MIB, MAX_MODEL_MIB, check_model_size, plan_space
    inst = parse_instance(_many_counts(3500))
    each = [plan_space(inst.for_student(n)).model_mib - BASELINE_MIB for n in inst.student_names()]
    assert max(each) + BASELINE_MIB < MAX_MODEL_MIB < sum(each) + BASELINE_MIB
    assert plan_space(inst).model_mib >= sum(each) + BASELINE_MIB - 1
    with pytest.raises(InputError):
        check_model_size(inst)


@pytest.mark.slow  # long (20-60 s on 2 cores); .ci/run runs it with -m slow
def test_enumerate_of_a_candidate_instance_past_the_per_plan_limit_equals_solve(tmp_path):
    data = _many_counts(900)
    inst = parse_instance(data)
    assert 200_000 < space_size(inst) < 250_000
    path = tmp_path / "many.json"
    path.write_text(json.dumps(data))
    code, out, err = run("enumerate", path, "--json")
    assert code == 0, (out, err)
    enum = json.loads(out)
    code, out, err = run("solve", path, "--json", "--no-sensitivity")
    assert code == 0, (out, err)
    solved = json.loads(out)
    assert enum["plan"]["student"] == solved["plan"]["student"]
    assert close(enum["metrics"]["cost_usd"], solved["metrics"]["cost_usd"])


def test_the_command_fit_suggests_for_a_candidate_instance_runs(tmp_path):
    import re
    import shlex
    from tests.support.common import INSTANCES
    fitted = tmp_path / "fitted.json"
    code, out, err = run("fit", INSTANCES / "math-8b-or-32b.json", INSTANCES / "pilot-qwen3-8b-math.csv", "--out", fitted)
    assert code == 0, (out, err)
    assert json.loads(fitted.read_text())["candidate_students"]
    suggested = re.findall(r"`(planopt [^`]+)`", out)
    assert suggested, out
    for command in suggested:
        code, out, err = run(*shlex.split(command)[1:], "--no-sensitivity")
        assert code == 0, (command, out, err)
