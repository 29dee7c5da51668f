"""The README's "Environments" section (issue 27, lever 1): its command runs, the optimum it states is the MIP's
and the vectorised oracle's, each alternative pool's figures and today's model's are what the solver finds, and
the shipped instance's prices are the sourced ones of ``models/catalog/environments.py``."""

from __future__ import annotations

import copy
import json
import re

import pytest
from typer.testing import CliRunner

from planopt.cli import app
from planopt.instance import load_instance, parse_instance
from planopt.job.model import solve
from planopt.models.catalog import environments as cat
from planopt.oracles.arrays import best_plan_arrays

from tests.support.common import INSTANCES, ROOT

README = (ROOT / "README.md").read_text()
FILE = INSTANCES / "qwen3-32b-agentic-rl-environments.json"
LINE = next(line for line in README.splitlines()
            if line.startswith("**The optimum of `instances/qwen3-32b-agentic-rl-environments.json`**"))


def number(text: str) -> float:
    return float(text.replace(",", "").replace("$", ""))


def with_pools(names=None, **environments) -> dict:
    data = json.loads(FILE.read_text())
    if names is not None:
        data["environments"]["pools"] = [p for p in data["environments"]["pools"] if p["name"] in names]
    data["environments"].update(environments)
    return data


@pytest.fixture(scope="module")
def optimum():
    return solve(load_instance(FILE))


def test_the_section_shows_the_command_and_it_runs():
    section = README[README.index("## Environments"):README.index("## Instances")]
    assert ".venv/bin/planopt solve instances/qwen3-32b-agentic-rl-environments.json" in section
    result = CliRunner().invoke(app, ["solve", str(FILE), "--json", "--no-sensitivity"])
    assert result.exit_code == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["plan"]["stages"][0]["environment_pool"] == "fargate-2048" and out["environments"][0]["workers"] == 2048


def test_the_stated_optimum_is_the_mips_and_the_oracles(optimum):
    stated = re.search(r"RL on (\d+) × ([\w-]+), ([\d,]+) steps, ([\d →]+) samples per prompt, rank-(\d+) LoRA, its "
                       r"environments on the ([\d,]+) sandboxes: \$([\d,]+) in ([\d.]+) h, quality ([\d.]+), of which "
                       r"environments \$([\d,]+) \(the pool \$([\d,]+), traffic \$([\d,]+)\) for ([\d.]+) h", LINE)
    assert stated, LINE
    inst = load_instance(FILE)
    fast = best_plan_arrays(inst)
    for res in (optimum, fast):
        plan = res.plan
        assert (plan.method, plan.gpu_count, plan.gpu, plan.steps) == ("rl", int(stated[1]), stated[2], number(stated[3]))
        assert " → ".join(map(str, plan.samples_per_prompt)) == stated[4] and plan.lora_rank == int(stated[5])
        pool = inst.environments.pool(plan.hardware.environment_pool)
        assert pool.kind == "cpu_sandbox" and pool.workers == number(stated[6])
        assert round(res.metrics.cost_usd) == number(stated[7])
    m = optimum.metrics
    assert f"{m.wall_hours:.1f}" == stated[8] and f"{m.quality:.2f}" == stated[9]
    row = m.environments[0]
    assert round(m.cost_breakdown_usd["environments"]) == number(stated[10])
    assert (round(row["pool_usd"]), round(row["traffic_usd"])) == (number(stated[11]), number(stated[12]))
    assert f"{row['environment_hours']:.1f}" == stated[13]
    # "the pool paces the steps: generation is hidden behind it"
    assert -m.hours_breakdown["environment_overlap"] == pytest.approx(m.hours_breakdown["generation"], rel=1e-9)


def test_each_alternative_pool_and_overlap_costs_what_the_readme_says():
    assert "With 512 sandboxes no plan meets the 336-hour deadline" in LINE
    assert solve(parse_instance(with_pools(["fargate-512"]))).status == "infeasible"
    big = re.search(r"8,192 sandboxes hide the environments entirely \(([\d.]+) h\) but cost \$([\d,]+), so more workers "
                    r"pay for themselves up to 2,048", LINE)
    r = solve(parse_instance(with_pools(["fargate-8192"])))
    assert f"{r.metrics.wall_hours:.1f}" == big[1] and round(r.metrics.cost_usd) == number(big[2])
    hosts = re.search(r"the plan moves to (\d+) × ([\w-]+) for their (\d+) nodes' ([\d,]+) workers: \$([\d,]+) in ([\d.]+) h",
                      LINE)
    r = solve(parse_instance(with_pools(["gpu-nodes"])))
    assert (r.plan.gpu_count, r.plan.gpu) == (int(hosts[1]), hosts[2])
    assert r.metrics.environments[0]["workers"] == number(hosts[4]) == 64 * int(hosts[3])
    assert round(r.metrics.cost_usd) == number(hosts[5]) and f"{r.metrics.wall_hours:.1f}" == hosts[6]
    serial = re.search(r"Without the agent loop \(environments after generation\), the 2,048 sandboxes cost \$([\d,]+) in "
                       r"([\d.]+) h", LINE)
    r = solve(parse_instance(with_pools(overlap="none")))
    assert r.plan.hardware.environment_pool == "fargate-2048"
    assert round(r.metrics.cost_usd) == number(serial[1]) and f"{r.metrics.wall_hours:.1f}" == serial[2]


def test_todays_model_picks_the_same_gpus_and_prices_no_environment_time(optimum):
    today = re.search(r"picks the same GPUs at \$([\d,]+) in ([\d.]+) h", LINE)
    r = solve(load_instance(INSTANCES / "qwen3-32b-agentic-rl.json"))
    assert (r.plan.gpu, r.plan.gpu_count) == (optimum.plan.gpu, optimum.plan.gpu_count)
    assert round(r.metrics.cost_usd) == number(today[1]) and f"{r.metrics.wall_hours:.1f}" == today[2]
    assert r.metrics.cost_usd < optimum.metrics.cost_usd and r.metrics.wall_hours < optimum.metrics.wall_hours


def test_the_range_of_the_cpu_seconds_spreads_the_wall_time(optimum):
    import planopt
    stated = re.search(r"a range of (\d+)–(\d+) s .*?wall time then spans (\d+)–(\d+) h \(P10–P90\)", LINE)
    inst = load_instance(FILE)
    given = inst.uncertainty["environments.cpu_seconds_per_sample"]
    assert (given.low, given.high) == (number(stated[1]), number(stated[2]))
    wall = planopt.risk(inst, optimum.plan, scenarios=1000).to_dict()["percentiles"]["wall_hours"]
    assert (round(wall["p10"]), round(wall["p90"])) == (int(stated[3]), int(stated[4]))


def test_the_instances_prices_are_the_sourced_ones():
    data = json.loads(FILE.read_text())
    env = data["environments"]
    sandboxes = [p for p in env["pools"] if p["kind"] == "cpu_sandbox"]
    assert {p["usd_per_worker_hour"] for p in sandboxes} == {round(cat.sandbox_usd_per_hour(1, 2), 5)} == {0.04937}
    assert {p["usd_per_hour"] for p in sandboxes} == {cat.ALB_USD_PER_HOUR}
    assert env["traffic_usd_per_gb"] == pytest.approx(cat.traffic_usd_per_gb_behind_an_alb_across_zones()) == 0.028
    hosts = next(p for p in env["pools"] if p["kind"] == "gpu_host")
    assert hosts["workers_per_node"] * 3 == cat.P6_B200_48XLARGE_VCPUS
    for figure in ("$0.04048 per vCPU-hour", "$0.004445 per GB-hour", "$0.0504 per vCPU-hour", "$0.0162 per GiB-hour",
                   "$0.0225 an hour", "$0.008 per GB processed", "$0.01 per GB each way"):
        assert figure in README, figure
    assert (cat.FARGATE_USD_PER_VCPU_HOUR, cat.FARGATE_USD_PER_GB_HOUR, cat.E2B_USD_PER_VCPU_HOUR,
            cat.E2B_USD_PER_GIB_HOUR, cat.ALB_USD_PER_GB_PROCESSED, cat.AWS_CROSS_AZ_USD_PER_GB_EACH_WAY) == \
        (0.04048, 0.004445, 0.0504, 0.0162, 0.008, 0.01)
    # the shipped job is the agentic one with pools: everything else as qwen3-32b-agentic-rl.json
    base = json.loads((INSTANCES / "qwen3-32b-agentic-rl.json").read_text())
    rest = {k: v for k, v in data.items() if k not in ("name", "environments", "uncertainty")}
    assert rest == {k: v for k, v in base.items() if k not in ("name", "environments")}
    assert copy.deepcopy(base["environments"]["cpu_seconds_per_sample"]) == env["cpu_seconds_per_sample"]
