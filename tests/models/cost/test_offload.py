"""CPU offload as a plan decision (issue 9, item 6): ``training.cpu_offload: "if_needed"``.

- The space: an offloading twin of a (GPU, count, adapter) choice exists exactly
  where some memory class fits only with offload, and on the twin a class fits
  only if it does not fit without it.
- Priced the same way: an offloaded plan has the same metrics under
  ``"if_needed"`` as under ``true``; a choice that does not offload pays no
  host-link time.
- The MIP equals both oracles on random memory-tight instances, and offload is
  chosen on some of them (not always, not never).
- Plans: ``cpu_offload`` in the plan JSON, read back by ``evaluate``; a plan that
  offloads where the instance says it need not is one line naming the field.
"""

from __future__ import annotations

import json
import random
from dataclasses import replace

import pytest
from typer.testing import CliRunner

from planopt.cli import app
from planopt.models.cost.evaluator import Evaluator
from planopt.models.cost.hardware import HardwareProfile, hardware_options, memory_classes
from planopt.models.schema.plan import HardwareChoice, Plan
from planopt.models.cost.recipes import OFFLOAD_STATE, OFFLOAD_STREAM, family_of
from planopt.models.schema.instance import Instance
from planopt.instance import parse_instance
from planopt.oracles.by_plan import all_plans
from planopt.job.model import solve

from tests.support.adapter_instances import TIGHT_GPUS, TIGHT_STUDENTS, adapter_instance_dict
from tests.support.common import INSTANCES
from tests.support.oracle_checks import assert_mip_equals_both_oracles, assert_scenarios_equal_the_evaluator
from tests.support.common import split_seeds

SEEDS = range(20)
SLOW_SEEDS = range(20, 60)


def offload_instance_dict(seed: int) -> dict:
    """An adapter job (``adapter_instances``) with ``cpu_offload: "if_needed"``; in 70 % of them memory-tight
    hardware (small-HBM GPUs or a few H100s, an 8B-class student) and in some of those full weights only."""
    rng = random.Random(160_000 + seed)

    def edit(job: dict) -> None:
        job["training"]["cpu_offload"] = "if_needed"
        if rng.random() < 0.7:
            job["student"] = {"preset": rng.choice(TIGHT_STUDENTS)}
            job["hardware"] = {"gpus": [{"name": g, "counts": sorted(rng.sample([1, 2, 4, 8], rng.randint(1, 3)))}
                                        for g in rng.sample(TIGHT_GPUS + ("H100-SXM",), rng.randint(1, 2))],
                               "offers": "reference"}  # small-HBM types at every count: one reference price each
            if rng.random() < 0.6:
                job["training"]["adapter_options"] = ["full"]

    return adapter_instance_dict(seed, edit)


def offload_instance(seed: int) -> Instance:
    return parse_instance(offload_instance_dict(seed))


def sft_32b_on(gpus: list[dict], mode) -> Instance:
    """Full-weight SFT of Qwen3-32B on the given GPUs, no limits: a job whose state fits few GPUs."""
    data = json.loads((INSTANCES / "qwen3-8b-math.json").read_text())
    data["student"] = {"preset": "Qwen3-32B"}
    data["training"]["methods"] = {"sft": data["training"]["methods"]["sft"]}
    data["training"]["cpu_offload"] = mode
    data["hardware"]["gpus"] = gpus
    data["constraints"] = {}
    return parse_instance(data)


# --- the space -----------------------------------------------------------------------

@pytest.mark.parametrize("seed", SEEDS)
def test_a_twin_is_offered_exactly_where_a_class_fits_only_with_offload(seed):
    inst = offload_instance(seed)
    options = hardware_options(inst)
    classes = memory_classes(inst)
    for h in options:
        if h.cpu_offload:
            continue
        twin = replace(h, cpu_offload=True)
        needs = [c for c in classes if not HardwareProfile(inst, h).fits(c) and HardwareProfile(inst, twin).fits(c)]
        assert (twin in options) == bool(needs), (h, needs)
    for twin in (h for h in options if h.cpu_offload):
        base = HardwareProfile(inst, replace(twin, cpu_offload=False))
        for c in classes:
            if base.fits(c):
                assert not HardwareProfile(inst, twin).fits(c), (twin, c)


def test_offload_is_offered_only_where_a_host_link_is_known():
    inst = sft_32b_on([{"name": "H100-SXM", "counts": [2]}, {"name": "TPU-v5p", "counts": [2]}], "if_needed")
    options = hardware_options(inst)
    assert HardwareChoice("H100-SXM", 2, None, cpu_offload=True) in options
    assert HardwareChoice("TPU-v5p", 2, None) in options and HardwareChoice("TPU-v5p", 2, None, cpu_offload=True) not in options


def test_an_options_own_host_link_is_priced_and_makes_offload_possible():
    # hardware.gpus[].host_link_gb_per_s (issue 24 item 7): overrides the catalog's figure, and gives one to a
    # GPU without it (a TPU here), which is then offered an offloading twin
    inst = sft_32b_on([{"name": "TPU-v5p", "counts": [2], "host_link_gb_per_s": 16.0}], "if_needed")
    assert HardwareChoice("TPU-v5p", 2, None, cpu_offload=True) in hardware_options(inst)
    units = {}
    for link in (None, 32.0):
        gpu = {"name": "H100-SXM", "counts": [2], **({} if link is None else {"host_link_gb_per_s": link})}
        prof = HardwareProfile(sft_32b_on([gpu], True), HardwareChoice("H100-SXM", 2, None, cpu_offload=True))
        units[link] = prof.seconds_per_unit(OFFLOAD_STREAM)
    assert units[32.0] == pytest.approx(2 * units[None], rel=1e-12)  # the catalog's H100 link is 64 GB/s


def test_a_choice_that_does_not_offload_pays_no_host_link_time():
    inst = sft_32b_on([{"name": "H100-SXM", "counts": [2, 16]}], "if_needed")
    ev = Evaluator(inst)
    for h in hardware_options(inst):
        prof = HardwareProfile(inst, h)
        for fam in (OFFLOAD_STREAM, OFFLOAD_STATE):
            unit = prof.seconds_per_unit(fam)
            assert (unit > 0) == h.cpu_offload, (h, fam, unit)
    recipes = ev.space()[0]
    assert all(any(family_of(c) == OFFLOAD_STREAM for c in ev.recipe(r).amounts) for r in recipes)


# --- priced the same way -------------------------------------------------------------------

def test_the_offloaded_optimum_is_priced_as_under_cpu_offload_true():
    gpus = [{"name": "H100-SXM", "counts": [2]}]
    decided = solve(sft_32b_on(gpus, "if_needed"))
    assert decided.status == "optimal" and decided.plan.cpu_offload
    assert solve(sft_32b_on(gpus, False)).status == "infeasible"     # 32B full weights do not fit 2 H100 otherwise
    forced = sft_32b_on(gpus, True)
    m_forced = Evaluator(forced).evaluate(decided.plan)
    m = decided.metrics
    assert m.cost_usd == pytest.approx(m_forced.cost_usd, rel=1e-12)
    assert m.wall_hours == pytest.approx(m_forced.wall_hours, rel=1e-12)
    assert m.hours_breakdown == pytest.approx(m_forced.hours_breakdown, rel=1e-12)


def test_offload_is_not_taken_where_the_job_fits_without_it():
    gpus = [{"name": "H100-SXM", "counts": [2, 16]}]
    decided = solve(sft_32b_on(gpus, "if_needed"))
    assert decided.status == "optimal"
    plans = [p for p in all_plans(sft_32b_on(gpus, "if_needed")) if p.metrics.fits_memory]
    assert all(not p.plan.cpu_offload for p in plans if p.plan.gpu_count == 16)
    assert any(p.plan.cpu_offload for p in plans if p.plan.gpu_count == 2)


# --- the MIP against the oracles ---------------------------------------------------------------

@pytest.mark.parametrize("seed", split_seeds(SEEDS, 10))
def test_mip_equals_both_oracles_with_offload_as_a_decision(seed):
    inst = offload_instance(seed)
    mip = assert_mip_equals_both_oracles(inst)
    if mip.status == "optimal":
        assert Evaluator(inst).evaluate(mip.plan).cost_usd == pytest.approx(mip.metrics.cost_usd, rel=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("seed", SLOW_SEEDS)
def test_mip_equals_both_oracles_with_offload_as_a_decision_more_seeds(seed):
    assert_mip_equals_both_oracles(offload_instance(seed))


def test_offload_is_a_real_decision_on_the_random_instances():
    """Guards the generator: the seeds above must include optima that offload and optima that do not."""
    chosen = [solve(offload_instance(seed)) for seed in SEEDS]
    optimal = [r for r in chosen if r.status == "optimal"]
    assert sum(r.plan.cpu_offload for r in optimal) >= 2
    assert sum(not r.plan.cpu_offload for r in optimal) >= 5


def test_scenarios_equal_the_evaluator_on_offloaded_plans():
    from planopt.models.uncertainty import model as U
    inst = sft_32b_on([{"name": "H100-SXM", "counts": [2]}], "if_needed")
    plan = solve(inst).plan
    assert plan.cpu_offload
    assert_scenarios_equal_the_evaluator(inst, U.draw(inst, 8, seed=3), [plan])


# --- plan JSON and bad input -----------------------------------------------------------------------

def test_the_plan_json_says_cpu_offload_and_evaluate_reads_it_back(tmp_path):
    inst_path = tmp_path / "inst.json"
    inst = sft_32b_on([{"name": "H100-SXM", "counts": [2]}], "if_needed")
    inst_path.write_text(inst.model_dump_json())
    res = CliRunner().invoke(app, ["solve", str(inst_path), "--json", "--no-sensitivity"])
    assert res.exit_code == 0, res.output
    plan = json.loads(res.output)["plan"]
    assert plan["stages"][0]["cpu_offload"] is True
    plan_path = tmp_path / "plan.json"
    plan_path.write_text(json.dumps(plan))
    res = CliRunner().invoke(app, ["evaluate", str(inst_path), str(plan_path), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["plan"]["stages"][0]["cpu_offload"] is True
    text = CliRunner().invoke(app, ["solve", str(inst_path), "--no-sensitivity"]).output
    assert "CPU offload" in text


@pytest.mark.parametrize("mode, offload, expected", [
    ("if_needed", True, "offloads only a job that fits no other way"),
    (False, True, "training.cpu_offload is false"),
])
def test_a_plan_whose_offload_the_instance_does_not_allow_is_one_line(tmp_path, mode, offload, expected):
    inst = sft_32b_on([{"name": "H100-SXM", "counts": [16]}], mode)
    inst_path = tmp_path / "inst.json"
    inst_path.write_text(inst.model_dump_json())
    plan = Plan.of(Evaluator(inst).space()[0][0], HardwareChoice("H100-SXM", 16, None, cpu_offload=offload), 60.0).to_dict()
    plan["checkpoint_interval_minutes"] = inst.checkpointing.interval_minutes_options[0]
    plan_path = tmp_path / "plan.json"
    plan_path.write_text(json.dumps(plan))
    res = CliRunner().invoke(app, ["evaluate", str(inst_path), str(plan_path)])
    assert res.exit_code == 2, res.output
    line = res.output.strip()
    assert "\n" not in line and "plan.cpu_offload" in line and expected in line, line


def test_an_unknown_offload_mode_is_one_line_naming_the_field(tmp_path):
    data = json.loads((INSTANCES / "qwen3-8b-math.json").read_text())
    data["training"]["cpu_offload"] = "sometimes"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    res = CliRunner().invoke(app, ["solve", str(path)])
    assert res.exit_code == 2, res.output
    assert "training.cpu_offload" in res.output and len(res.output.strip().splitlines()) == 1, res.output
