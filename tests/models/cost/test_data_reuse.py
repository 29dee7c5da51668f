"""Data reuse: repeated RL/OPD prompts and SFT epochs over owned examples.

- The effective-data formula (Muennighoff et al. 2023) and its properties.
- ``task.prompts_available`` moves quality: it falls as prompts shrink at a fixed plan,
  and the agentic instance's plan or quality changes with one prompt.
- SFT epochs are a plan field (``max_epochs``): a plan without it evaluates as
  before (one epoch), the evaluator never picks buy or reuse on its own, and the
  MIP equals both oracles on random instances where reuse matters.
- Explanations: the report's note and the too-few-prompts explanation.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from planopt.instance import load_instance
from planopt.models.cost import learning as lc
from planopt.models.cost.evaluator import Evaluator
from planopt.models.cost.data_reuse import best_on_policy_quality, plan_note, shortage_note
from planopt.models.schema.plan import Plan, Recipe
from planopt.models.schema.instance import Instance
from planopt.instance import parse_instance
from planopt.job.model import solve

from tests.support.common import INSTANCES
from tests.support.oracle_checks import assert_mip_equals_both_oracles
from tests.support.reuse_instances import reuse_instance_dict, reuse_job_dict

AGENTIC = INSTANCES / "qwen3-32b-agentic-rl.json"
R_STAR = 15.387756




def with_prompts(inst: Instance, n: int) -> Instance:
    return inst.model_copy(update={"task": inst.task.model_copy(update={"prompts_available": n})})


# --- the formula -------------------------------------------------------------------

def test_effective_draws_is_the_published_formula():
    u, d = 1000.0, 5000.0
    expected = u + u * R_STAR * (1 - math.exp(-(d / u - 1) / R_STAR))
    assert float(lc.effective_draws(u, d, R_STAR)) == pytest.approx(expected, rel=1e-15)
    assert float(lc.effective_draws(u, 800.0, R_STAR)) == 800.0        # no repeat: every draw fresh
    assert float(lc.effective_draws(u, 1e9, R_STAR)) == pytest.approx(u * (1 + R_STAR), rel=1e-9)  # saturates


def test_effective_draws_rises_with_distinct_items_and_with_draws():
    u = np.array([1.0, 10.0, 100.0, 1000.0, 1e4])
    worth = lc.effective_draws(u, 2e4, R_STAR)
    assert np.all(np.diff(worth) > 0)
    draws = np.array([10.0, 1e3, 1e4, 1e5])
    assert np.all(np.diff(lc.effective_draws(100.0, draws, R_STAR)) > 0)


def test_a_repeat_is_worth_one_over_e_after_r_star_repetitions():
    u, eps = 100.0, 1e-3
    n = u * (1 + R_STAR)
    marginal = (lc.effective_draws(u, n + eps, R_STAR) - lc.effective_draws(u, n - eps, R_STAR)) / (2 * eps)
    assert float(marginal) == pytest.approx(math.exp(-1), rel=1e-6)


@pytest.mark.parametrize("seen,owned,epochs,distinct", [
    (500, 1000, 4, 500),      # fewer than owned: each seen once
    (3000, 1000, 4, 1000),    # reuse owned for 3 epochs, buy none
    (8000, 1000, 4, 2000),    # 4 epochs over 2,000: 1,000 bought
    (8000, 1000, 1, 8000),    # one epoch: buy every example beyond those owned
])
def test_sft_distinct_examples_reuse_owned_before_buying(seen, owned, epochs, distinct):
    assert lc.sft_distinct_examples(seen, owned, epochs) == distinct


# --- prompts_available moves quality ---------------------------------------------------

@pytest.mark.parametrize("name", ["qwen3-32b-agentic-rl", "qwen3-8b-math", "tiny"])
def test_quality_falls_as_prompts_shrink_at_a_fixed_plan(name):
    inst = load_instance(INSTANCES / f"{name}.json")
    plan = solve(inst).plan
    if plan is None or plan.method == "sft":
        pytest.skip("the optimum repeats no prompts")
    counts = [1, 10, 100, 1000, 10_000, 100_000, 1_000_000]
    qualities = [Evaluator(with_prompts(inst, n)).evaluate(plan).quality for n in counts]
    drawn = plan.steps * inst.training.methods[plan.method].prompts_per_step
    assert all(a <= b for a, b in zip(qualities, qualities[1:])), qualities
    assert qualities[0] < qualities[-1]                       # repeats cost quality
    fresh = [q for n, q in zip(counts, qualities) if n >= drawn]
    assert len(set(fresh)) == 1                               # nothing repeats beyond the draws


@pytest.mark.parametrize("seed", range(20))
def test_quality_falls_as_prompts_shrink_on_random_recipes(seed):
    inst = parse_instance(reuse_job_dict(seed))
    recipes = [r for r in Evaluator(inst).space()[0] if r.method != "sft"]
    if not recipes:
        pytest.skip("no RL/OPD recipe")
    for r in recipes[::7]:
        q = [Evaluator(with_prompts(inst, n)).recipe(r).quality for n in (1, 30, 300, 3000, 30_000, 300_000)]
        assert all(a <= b + 1e-12 for a, b in zip(q, q[1:])), (r, q)


def test_one_prompt_changes_the_agentic_plan_or_its_quality():
    inst = load_instance(AGENTIC)
    before = solve(inst)
    after = solve(with_prompts(inst, 1))
    assert before.status == "optimal"
    if after.status == "optimal":
        assert after.plan != before.plan or after.metrics.quality < before.metrics.quality - 1e-6
    q_one = Evaluator(with_prompts(inst, 1)).evaluate(before.plan).quality
    assert q_one < before.metrics.quality - 0.5       # one prompt drawn 500,000 times is not 500,000 prompts


# --- SFT epochs: an explicit plan field -------------------------------------------------

def _sft_instance(**sft_data) -> Instance:
    data = json.loads(AGENTIC.read_text())
    data["sft_data"].update(sft_data)
    data["constraints"] = {}
    return parse_instance(data)


def test_a_plan_without_max_epochs_evaluates_as_one_epoch_as_before():
    inst = _sft_instance(max_epochs_options=[1, 4])
    plan = {"method": "sft", "gpu": "H100-SXM", "gpu_count": 32, "steps": 1500, "samples_per_prompt": [],
            "teacher_precision": None, "checkpoint_interval_minutes": 60, "external_data_share": 1.0}
    old = Evaluator(inst).evaluate(Plan.from_dict(plan))
    one = Evaluator(inst).evaluate(Plan.from_dict({**plan, "max_epochs": 1}))
    assert old.cost_usd == one.cost_usd and old.quality == one.quality
    # one epoch buys every example beyond those owned, as before epochs were a choice
    examples = 1500 * inst.training.methods["sft"].prompts_per_step
    assert old.cost_breakdown_usd["data"] == pytest.approx((examples - 5000) * 12.0)
    assert old.quality == pytest.approx(float(lc.sft_quality(inst.task, examples, inst.priors.sft.signal_scale_samples,
                                                             inst.priors.sft.ceiling_share_of_headroom)), rel=1e-12)


def test_reuse_trades_quality_for_labels_and_the_plan_says_which():
    inst = _sft_instance(max_epochs_options=[1, 4, 16])
    ev = Evaluator(inst)
    profiles = [ev.recipe(Recipe("sft", 1500, (), None, 1.0, e)) for e in (1, 4, 16)]
    bought = [p.extra["labels_bought"] for p in profiles]
    quality = [p.quality for p in profiles]
    assert bought[0] > bought[1] > bought[2] >= 0             # more epochs, fewer labels
    assert quality[0] > quality[1] > quality[2]               # and less quality: no free lunch
    assert len({p.lead_hours for p in profiles}) == 3
    # the evaluator does not pick: each choice is a distinct plan, all enumerated
    recipes = [r for r in ev.space()[0] if r.method == "sft" and r.steps == 1500 and r.external_data_share == 1.0
               and r.lora_rank is None]
    assert sorted(r.max_epochs for r in recipes) == [1, 4, 16]


@pytest.mark.parametrize("objective,expected", [("cost", 16), ("quality", 1)])
def test_the_objective_decides_between_buying_and_reusing(objective, expected):
    data = json.loads(AGENTIC.read_text())
    data["training"]["methods"] = {"sft": {"steps_options": [1500], "prompts_per_step": 64}}
    data["sft_data"].update(max_epochs_options=[1, 4, 16], external_data_share_options=[1.0])
    data["constraints"] = {}
    data["objective"] = objective
    res = solve(parse_instance(data))
    assert res.status == "optimal" and res.plan.max_epochs == expected


def test_solve_json_prints_max_epochs_and_evaluate_reads_it(tmp_path):
    from typer.testing import CliRunner
    from planopt.cli import app
    data = json.loads(AGENTIC.read_text())
    data["training"]["methods"] = {"sft": {"steps_options": [1500], "prompts_per_step": 64}}
    data["sft_data"].update(max_epochs_options=[1, 4], external_data_share_options=[1.0])
    data["constraints"] = {}
    path = tmp_path / "sft.json"
    path.write_text(json.dumps(data))
    runner = CliRunner()
    res = runner.invoke(app, ["solve", str(path), "--json"])
    assert res.exit_code == 0, res.output
    plan = json.loads(res.stdout)["plan"]
    assert plan["stages"][0]["max_epochs"] == 4
    plan_path = tmp_path / "plan.json"
    plan_path.write_text(json.dumps(plan))
    res = runner.invoke(app, ["evaluate", str(path), str(plan_path), "--json"])
    assert res.exit_code == 0, res.output
    plan_path.write_text(json.dumps({**plan, "stages": [{**plan["stages"][0], "max_epochs": 3}]}))
    res = runner.invoke(app, ["evaluate", str(path), str(plan_path)])
    assert res.exit_code == 2
    assert "plan.max_epochs" in res.output and "Traceback" not in res.output


@pytest.mark.parametrize("bad,field", [({"max_epochs": 0}, "plan.max_epochs"), ({"max_epochs": 2.5}, "plan.max_epochs"),
                                       ({"max_epochs": True}, "plan.max_epochs")])
def test_bad_max_epochs_names_the_field(bad, field):
    base = {"method": "sft", "gpu": "H100-SXM", "gpu_count": 8, "steps": 10, "checkpoint_interval_minutes": 60}
    with pytest.raises(ValueError, match=field):
        Plan.from_dict({**base, **bad})


def test_an_rl_plan_with_max_epochs_is_refused():
    inst = load_instance(AGENTIC)
    plan = solve(inst).plan
    with pytest.raises(ValueError, match="plan.max_epochs: must be null for rl"):
        Evaluator(inst).evaluate(Plan.from_dict({**plan.flat_dict(), "max_epochs": 2}))


def test_bad_max_epochs_options_exit_2(tmp_path):
    from typer.testing import CliRunner
    from planopt.cli import app
    data = json.loads(AGENTIC.read_text())
    data["sft_data"]["max_epochs_options"] = [0, 2]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    res = CliRunner().invoke(app, ["solve", str(path)])
    assert res.exit_code == 2
    assert "max_epochs_options" in res.output and "Traceback" not in res.output


# --- MIP = oracles where reuse matters ---------------------------------------------------

SEEDS = range(40)


@pytest.mark.parametrize("seed", SEEDS)
def test_mip_equals_both_oracles_where_reuse_matters(seed):
    assert_mip_equals_both_oracles(parse_instance(reuse_instance_dict(seed)))


def test_the_random_reuse_instances_do_repeat_data():
    """The contract above is only worth something if its instances repeat prompts and examples."""
    repeats_prompts = repeats_examples = reuses_owned = 0
    for seed in SEEDS:
        inst = parse_instance(reuse_job_dict(seed))
        ev = Evaluator(inst)
        for r in ev.space()[0]:
            extra = ev.recipe(r).extra
            if r.method == "sft":
                repeats_examples += extra["external_examples"] > extra["distinct_examples"]
                reuses_owned += r.max_epochs > 1 and extra["labels_bought"] < ev.recipe(Recipe(
                    "sft", r.steps, (), None, r.external_data_share, 1)).extra["labels_bought"]
            else:
                repeats_prompts += extra["prompts_drawn"] > inst.task.prompts_available
    assert repeats_prompts > 50 and repeats_examples > 20 and reuses_owned > 20


# --- explanations ---------------------------------------------------------------------

def test_the_report_notes_repeated_prompts():
    inst = load_instance(AGENTIC)
    plan = solve(inst).plan
    drawn = plan.steps * inst.training.methods[plan.method].prompts_per_step
    note = plan_note(inst, plan)
    if drawn <= inst.task.prompts_available:
        assert note is None
    else:
        assert f"{drawn:,}" in note and "epochs" in note


def test_too_few_prompts_is_explained_with_the_prompts_that_would_do():
    inst = load_instance(AGENTIC)
    plan = solve(inst).plan
    drawn = plan.steps * inst.training.methods[plan.method].prompts_per_step
    few = with_prompts(inst, 2000)
    floor = inst.constraints.min_quality
    assert best_on_policy_quality(few, 2000) < floor <= best_on_policy_quality(few, drawn)
    res = solve(few)
    note = shortage_note(few)
    assert note is not None and "too few prompts" in note and "task.prompts_available = 2,000" in note
    need = int(note.rsplit("; ", 1)[1].split(" ")[0].replace(",", ""))
    assert best_on_policy_quality(few, need) >= floor > best_on_policy_quality(few, need - 1)
    # solve's infeasibility message carries it (through the API that the CLI uses)
    import planopt
    res = planopt.solve(few)
    assert res.status == "infeasible" or res.metrics.quality >= floor
    if res.status == "infeasible":
        assert "too few prompts" in res.message


def test_the_report_notes_sft_epochs_over_owned_examples():
    inst = _sft_instance(max_epochs_options=[1, 16])
    ev = Evaluator(inst)
    plan = Plan.of(Recipe("sft", 1500, (), None, 1.0, 16), ev.space()[1][0], 60)
    note = plan_note(inst, plan)
    seen = 1500 * inst.training.methods["sft"].prompts_per_step
    assert f"{seen:,}" in note and "5,000 owned" in note and "at most 16" in note
    one_epoch = ev.recipe(Recipe("sft", 1500, (), None, 1.0, 1)).quality
    assert f"{one_epoch:.2f}" in note
    assert plan_note(inst, Plan.of(Recipe("sft", 1500, (), None, 1.0, 1), ev.space()[1][0], 60)) is None


def test_the_solve_report_has_a_data_reuse_section():
    from typer.testing import CliRunner
    from planopt.cli import app
    res = CliRunner().invoke(app, ["solve", str(AGENTIC)])
    assert res.exit_code == 0, res.output
    inst = load_instance(AGENTIC)
    plan = solve(inst).plan
    drawn = plan.steps * inst.training.methods[plan.method].prompts_per_step
    assert ("Data reuse" in res.output) == (drawn > inst.task.prompts_available)
