"""The uncertainty model and the scenario evaluator.

The scenario evaluator is the point evaluator run on each scenario's instance
(``uncertainty.apply``), computed for all scenarios at once; it rests on every
work family's time scaling exactly as the inverse of its rate factor
(``recipes.RATE_FACTOR``), which is checked here family by family.
"""

import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

from planopt.cli import app
from planopt.instance import load_instance
from planopt.models.catalog import spreads
from planopt.models.uncertainty import model as U
from planopt.models.cost.evaluator import Evaluator
from planopt.models.cost.recipes import RATE_FACTOR, family_of
from planopt.models.schema.instance import Instance
from planopt.instance import parse_instance
from planopt.oracles.by_plan import all_plans
from planopt.uncertainty.risk import plan_risk
from planopt.job.model import solve

from tests.support.common import INSTANCES
from tests.support.random_instances import random_instance_dict
from tests.support.oracle_checks import assert_scenarios_equal_the_evaluator

SHIPPED = ["tiny", "qwen3-8b-math", "qwen3-32b-agentic-rl", "llama-70b-domain-injection"]


def run_cli(*args):
    res = CliRunner().invoke(app, [str(a) for a in args])
    return res.exit_code, res.stdout, res.stderr


def with_efficiency(inst: Instance, **factors) -> Instance:
    return inst.model_copy(update={"efficiency": inst.efficiency.model_copy(update=factors)})


def test_every_family_scales_exactly_as_the_inverse_of_its_rate_factor():
    seen = set()
    for seed in range(30):
        inst = parse_instance(random_instance_dict(seed))
        factors = {"mfu_factor": inst.efficiency.mfu_factor * 2.0, "decode_factor": inst.efficiency.decode_factor * 4.0}
        ev, ev_fast = Evaluator(inst), Evaluator(with_efficiency(inst, **factors))
        recipes, hardware, _ = ev.space()
        for r in recipes[::3]:
            for h in hardware:
                if not ev.hardware(h).fits(r.memory_class):
                    continue
                slow, fast = ev.compute_hours_by_component(r, h), ev_fast.compute_hours_by_component(r, h)
                for key, hours in slow.items():
                    expected = {"mfu_factor": 2.0, "decode_factor": 4.0, None: 1.0}[RATE_FACTOR[family_of(key)]]
                    assert fast[key] == pytest.approx(hours / expected, rel=1e-12), key
                    seen.add(family_of(key))
    # the random instances exercise every family but MoE all-to-all (their students are dense), CPU offload (they
    # fit without it) and environment work on a pool (they list no pools: tests/models/cost/test_environments.py
    # checks that it scales with the CPU-seconds per sample drawn, and with neither factor)
    assert {f for f in RATE_FACTOR if "alltoall" not in f and "offload" not in f and f != "env_cpu_seconds"} <= seen, \
        set(RATE_FACTOR) - seen


def test_every_family_has_a_rate_factor():
    from planopt.models.cost.recipes import HOURS_CATEGORY
    assert set(HOURS_CATEGORY) == set(RATE_FACTOR)


@pytest.mark.parametrize("seed", range(25))
def test_scenario_evaluator_equals_the_evaluator_on_each_scenarios_instance(seed):
    inst = parse_instance(random_instance_dict(seed))
    scenarios = U.draw(inst, 6, seed)
    plans = [p.plan for p in all_plans(inst) if p.metrics.fits_memory][::37][:4]
    assert_scenarios_equal_the_evaluator(inst, scenarios, plans)


@pytest.mark.parametrize("name", SHIPPED)
def test_the_point_scenario_changes_nothing(name):
    inst = load_instance(INSTANCES / f"{name}.json")
    result = solve(inst)
    again = Evaluator(U.apply(inst, U.point_scenario(inst))).evaluate(result.plan)
    assert again.cost_usd == result.metrics.cost_usd and again.quality == result.metrics.quality


def test_draws_are_reproducible_and_groups_move_together():
    inst = load_instance(INSTANCES / "qwen3-8b-math.json")
    a, b, c = U.draw(inst, 500, 7), U.draw(inst, 500, 7), U.draw(inst, 500, 8)
    assert all(np.array_equal(a.values[k], b.values[k]) for k in a.values)
    assert not np.array_equal(a.values["priors.rl.signal_scale_samples"], c.values["priors.rl.signal_scale_samples"])
    # MFU and decode speed share one draw: their log-ratio to the point is the same in every scenario
    mfu, dec = a.values["efficiency.mfu_factor"], a.values["efficiency.decode_factor"]
    assert np.allclose(np.log(mfu / inst.efficiency.mfu_factor), np.log(dec / inst.efficiency.decode_factor))
    # different groups are independent draws
    assert abs(np.corrcoef(np.log(mfu), np.log(a.values["reliability.failures_per_gpu_hour"]))[0, 1]) < 0.2


def test_draws_reproduce_the_stated_percentiles():
    inst = load_instance(INSTANCES / "qwen3-8b-math.json")
    values = U.draw(inst, 200_000, 1).values["reliability.failures_per_gpu_hour"]
    low, high = spreads.ABSOLUTE_FAILURES_PER_GPU_HOUR
    assert np.percentile(values, 10) == pytest.approx(low, rel=0.02)
    assert np.percentile(values, 90) == pytest.approx(high, rel=0.02)


def test_instance_overrides_a_point_or_a_range(tmp_path):
    data = json.loads((INSTANCES / "tiny.json").read_text())
    data["uncertainty"] = {"efficiency.mfu_factor": 1.0, "reliability.restart_minutes": {"low": 2, "high": 8, "confidence": 0.5}}
    inst = parse_instance(data)
    params = {p.name: p for p in U.parameters(inst)}
    assert params["efficiency.mfu_factor"].sigma == 0.0
    assert np.all(U.draw(inst, 100, 0).values["efficiency.mfu_factor"] == 1.0)
    restart = U.draw(inst, 100_000, 0).values["reliability.restart_minutes"]
    assert np.percentile(restart, 25) == pytest.approx(2.0, rel=0.03) and np.percentile(restart, 75) == pytest.approx(8.0, rel=0.03)


def test_a_value_the_user_set_is_a_point_unless_given_a_range():
    data = json.loads((INSTANCES / "tiny.json").read_text())
    data["reliability"] = {"failures_per_gpu_hour": 5e-5}
    params = {p.name: p for p in U.parameters(parse_instance(data))}
    assert params["reliability.failures_per_gpu_hour"].sigma == 0.0
    assert params["reliability.restart_minutes"].sigma > 0.0


@pytest.mark.parametrize("entry,expected", [
    ({"priors.typo.signal_scale_samples": 1.0}, "uncertainty.priors.typo.signal_scale_samples: unknown parameter"),
    ({"efficiency.mfu_factor": {"low": 2, "high": 1}}, "low must not exceed high"),
    ({"efficiency.mfu_factor": {"low": 1, "high": 2, "confidence": 1.5}}, "confidence"),
])
def test_bad_uncertainty_entries_exit_2_naming_the_field(tmp_path, entry, expected):
    data = json.loads((INSTANCES / "tiny.json").read_text())
    data["uncertainty"] = entry
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    code, _, err = run_cli("validate", path)
    assert code == 2 and expected in err and err.count("\n") == 1, err


def test_plan_risk_over_10000_scenarios_follows_the_json_contract(tmp_path):
    code, out, _ = run_cli("solve", INSTANCES / "tiny.json", "--json")
    plan = tmp_path / "plan.json"
    plan.write_text(out)
    code, out, err = run_cli("evaluate", INSTANCES / "tiny.json", plan, "--scenarios", "10000", "--json")
    assert code == 0, err
    risk = json.loads(out)["risk"]
    assert risk["scenarios"] == 10_000
    assert set(risk["limits"]) == {"deadline_hours", "max_forgetting_points", "min_quality"}
    assert 0.0 <= risk["share_meeting_all_limits"] <= min(risk["limits"].values())
    for metric in ("cost_usd", "wall_hours", "quality", "forgetting_points"):
        p = risk["percentiles"][metric]
        assert p["p10"] <= p["p50"] <= p["p90"]


def test_share_meeting_limits_is_the_count_of_scenarios_meeting_them():
    inst = load_instance(INSTANCES / "tiny.json")
    plan = solve(inst).plan
    risk = plan_risk(inst, plan, 300, 3)
    scenarios = U.draw(inst, 300, 3)
    met = 0
    for s in range(300):
        met += Evaluator(U.apply(inst, scenarios.at(s))).evaluate(plan).feasible
    assert risk.share() == met / 300


def test_a_plan_that_does_not_fit_meets_no_limit():
    inst = load_instance(INSTANCES / "tiny.json")
    misfit = next(p.plan for p in all_plans(inst) if not p.metrics.fits_memory)
    assert plan_risk(inst, misfit, 50).share() == 0.0


def test_solve_scenarios_plot_writes_a_picture(tmp_path):
    path = tmp_path / "risk.svg"
    code, out, err = run_cli("solve", INSTANCES / "tiny.json", "--scenarios", "500", "--plot", path)
    assert code == 0, err
    assert path.read_text().startswith("<?xml") and "Risk over 500 scenarios" in out


def test_spreads_are_ordered_and_sourced():
    for name in dir(spreads):
        if name.startswith(("FACTOR_", "ABSOLUTE_")):
            value = getattr(spreads, name)
            for key, (low, high) in (value.items() if isinstance(value, dict) else [(None, value)]):
                if name == "ABSOLUTE_FP8_TEACHER_SCORE_PENALTY":   # additive, centred on its point 0 (model.py)
                    assert low < 0 < high and low == -high, (name, low, high)
                else:
                    assert 0 < low < high, (name, key)
    assert spreads.two_estimates(1.0, 4.0)[0] < 1.0 and spreads.two_estimates(1.0, 4.0)[1] > 4.0
    assert math.isclose(math.prod(spreads.two_estimates(1.0, 4.0)), 4.0)


def test_uncertainty_command_lists_every_parameter_an_instance_may_override(tmp_path):
    code, out, err = run_cli("uncertainty", INSTANCES / "qwen3-8b-math.json", "--json")
    assert code == 0, err
    params = json.loads(out)["parameters"]
    names = [p["name"] for p in params]
    assert "efficiency.mfu_factor" in names and "priors.opd.signal_scale_samples" in names
    for p in params:
        assert p["p10"] <= p["p50"] <= p["p90"], p
    data = json.loads((INSTANCES / "qwen3-8b-math.json").read_text())
    data["uncertainty"] = {name: 1.0 for name in names}  # every listed name is a valid override
    parse_instance(data)


def test_api_solve_with_confidence_is_chance_constrained_and_risk_has_a_frame():
    import planopt
    result = planopt.solve(INSTANCES / "tiny.json", confidence=0.8, scenarios=80)
    assert result.risk["confidence"] == 0.8 and result.risk["in_sample_share"] >= 0.8
    frame = planopt.risk(INSTANCES / "tiny.json", result.plan, scenarios=500).frame()
    assert len(frame) == 500 and frame["meets_all_limits"].mean() == pytest.approx(
        planopt.risk(INSTANCES / "tiny.json", result.plan, scenarios=500).share())
    with pytest.raises(planopt.InputError, match="budget: unknown override"):
        planopt.solve(INSTANCES / "tiny.json", budget=5)


def test_sft_only_instances_draw_the_sft_spread_and_others_the_rl_one():
    """SFT plans draw spreads.FACTOR_SFT_HOURS (fitted on SFT rows); an instance with RL or OPD draws its
    student's RL step-time range (the derivation and its check: tests/solver/uncertainty/test_out_of_fold.py)."""
    inst = load_instance(INSTANCES / "tiny.json")
    sft_only = inst.model_copy(update={"training": inst.training.model_copy(
        update={"methods": {"sft": inst.training.methods["sft"]}})})
    for case, expected in ((inst, spreads.FACTOR_STEP_TIME_DENSE), (sft_only, spreads.FACTOR_SFT_HOURS)):
        (mfu,) = [p for p in U.parameters(case) if p.name == "efficiency.mfu_factor"]
        assert (mfu.low, mfu.high) == pytest.approx((mfu.point * expected[0], mfu.point * expected[1]))
    assert U.step_time_spread_name(sft_only) == "FACTOR_SFT_HOURS"
    assert U.step_time_spread_name(inst) == "FACTOR_STEP_TIME_DENSE"


@pytest.mark.parametrize("seed", range(12))
def test_scenario_evaluator_equals_the_evaluator_where_data_repeats(seed):
    """Repeated prompts and SFT epochs over owned examples: the repeat scales R* are drawn too."""
    from tests.support.reuse_instances import reuse_job_dict
    inst = parse_instance(reuse_job_dict(seed))
    scenarios = U.draw(inst, 5, seed)
    names = set(scenarios.values)
    assert ("priors.prompt_repeat_scale_epochs" in names) == any(m != "sft" for m in inst.training.methods)
    assert ("priors.sft_repeat_scale_epochs" in names) == ("sft" in inst.training.methods)
    plans = [p.plan for p in all_plans(inst) if p.metrics.fits_memory][::29][:5]
    assert_scenarios_equal_the_evaluator(inst, scenarios, plans)


def test_repeat_scale_spread_is_centred_on_the_published_fit():
    from planopt.models.catalog import defaults as d
    from planopt.models.catalog import spreads as sp
    low, high = sp.FACTOR_REPEAT_SCALE
    assert low * d.REPEAT_SCALE_EPOCHS == pytest.approx(2.9157) and low * high == pytest.approx(1.0)
    inst = load_instance(INSTANCES / "qwen3-32b-agentic-rl.json")
    p = next(p for p in U.parameters(inst) if p.name == "priors.prompt_repeat_scale_epochs")
    assert p.quantile(0.1) == pytest.approx(2.9157) and p.quantile(0.5) == pytest.approx(d.REPEAT_SCALE_EPOCHS)
