"""Environments as a decision (issue 27, lever 1; ``models/cost/environments.py``).

- Each term against its formula: the pool's work per step S·c/W (W a cpu_sandbox pool's workers, or a gpu_host
  pool's workers per node times the choice's training and rollout nodes), summed with generation or overlapping
  it (an agent loop: max(G, E) per phase; asynchronous RL with an agent loop: max(G + L, E + L, T)); the pool's
  money (W p_w + p_fix) per training hour, none for a gpu_host pool; traffic and API calls per sample; the hours
  breakdown still sums to the wall time.
- Without pools every figure is today's (the old formula, and the shipped instances' optima unchanged).
- SFT runs on no pool, an on-policy recipe on one.
- The MIP equals both oracles on random jobs with pools, for every objective, with limits drawn from the plans
  and at the optimum's own values; the pool chosen differs between seeds.
- The scenario evaluator equals the evaluator per scenario with the CPU-seconds per sample drawn from a range.
- JSON in and out; bad pools refused in one line naming the field (exit 2); a portfolio job with one pool is
  planned as alone, several pools are refused in one line.
"""

from __future__ import annotations

import copy
import json

import pytest
from typer.testing import CliRunner

from planopt.cli import app
from planopt.instance import parse_instance
from planopt.job.model import solve
from planopt.models.cost import physics as ph
from planopt.models.cost.evaluator import Evaluator
from planopt.models.schema.plan import HardwareChoice, Plan, Recipe, plan_json, read_plan
from planopt.models.uncertainty import model as U
from planopt.oracles.arrays import best_plan_arrays
from planopt.oracles.by_plan import best_plan

from tests.support.common import INSTANCES, split_seeds
from tests.support.environment_instances import random_environment_instance_dict
from tests.support.oracle_checks import assert_mip_equals_both_oracles, assert_scenarios_equal_the_evaluator, close

TINY = INSTANCES / "tiny.json"
POOLS = [{"name": "sandboxes-64", "kind": "cpu_sandbox", "workers": 64, "usd_per_worker_hour": 0.05},
         {"name": "sandboxes-512", "kind": "cpu_sandbox", "workers": 512, "usd_per_worker_hour": 0.05,
          "usd_per_hour": 0.0225},
         {"name": "hosts", "kind": "gpu_host", "workers_per_node": 16}]


def cli(*args):
    res = CliRunner().invoke(app, [str(a) for a in args])
    return res.exit_code, res.stdout, res.stderr


def tiny_dict(overlap: str = "none", objective: str = "cost", **environments) -> dict:
    data = json.loads(TINY.read_text())
    data["objective"] = objective
    data["environments"] = {"cpu_seconds_per_sample": 20.0, "latency_seconds_per_step": 5.0, "pools": copy.deepcopy(POOLS),
                            "overlap": overlap, "traffic_gb_per_sample": 0.01, "traffic_usd_per_gb": 0.018,
                            "api_calls_per_sample": 2.0, "usd_per_api_call": 0.001, **environments}
    data["constraints"] = {}
    return data


def tiny(overlap: str = "none", objective: str = "cost", **environments):
    return parse_instance(tiny_dict(overlap, objective, **environments))


RL = Recipe("rl", 300, (8, 4, 4))


def on(pool: str | None, gpu: str = "H100-SXM", count: int = 8, **kw) -> HardwareChoice:
    return HardwareChoice(gpu, count, environment_pool=pool, **kw)


# --- the terms ---------------------------------------------------------------------------------

@pytest.mark.parametrize("pool, workers", [("sandboxes-64", 64), ("sandboxes-512", 512), ("hosts", 16)])
def test_the_pool_takes_samples_times_cpu_seconds_over_its_workers(pool, workers):
    inst = tiny()
    ev = Evaluator(inst)
    by = ev.compute_hours_by_component(RL, on(pool))
    prompts = inst.training.methods["rl"].prompts_per_step
    samples = sum(RL.steps / 3 * prompts * k for k in RL.samples_per_prompt)
    env = sum(v for k, v in by.items() if k.startswith("env_cpu_seconds"))
    assert env == pytest.approx(samples * 20.0 / workers / 3600.0, rel=1e-12)   # sum over steps of S_p c / W
    m = ev.metrics(RL, on(pool), 60.0)
    assert m.environments[0]["workers"] == workers and m.environments[0]["environment_hours"] == pytest.approx(env)
    # no overlap: the environments' hours add to the step (the environment_wait line holds them with the latency)
    assert m.hours_breakdown["environment_wait"] == pytest.approx(env + RL.steps * 5.0 / 3600.0, rel=1e-12)
    assert sum(m.hours_breakdown.values()) == pytest.approx(m.wall_hours, rel=1e-12)


def test_a_gpu_host_pool_counts_the_training_and_the_rollout_nodes():
    data = tiny_dict()
    data["hardware"]["rollout_gpus"] = [{"name": "H100-SXM", "counts": [8]}]
    inst = parse_instance(data)
    hp = Evaluator(inst).hardware(on("hosts", rollout_gpu="H100-SXM", rollout_count=8))
    assert hp.nodes == ph.nodes(hp.gpu, 8) + ph.nodes(hp.rollout_gpu, 8) == 2
    assert hp.seconds_per_unit("env_cpu_seconds") == pytest.approx(1.0 / (16 * 2))
    assert Evaluator(inst).hardware(on("hosts", count=2)).seconds_per_unit("env_cpu_seconds") == pytest.approx(1.0 / 16)


def test_an_agent_loop_overlaps_generation_and_the_pool_phase_by_phase():
    serial, loop = Evaluator(tiny()), Evaluator(tiny("agent_loop"))
    for pool in ("sandboxes-64", "sandboxes-512", "hosts"):
        a, b = serial.compute_hours_by_component(RL, on(pool)), loop.compute_hours_by_component(RL, on(pool))
        assert sum(a.values()) == pytest.approx(sum(b.values()), rel=1e-12)   # the same work, split by phase
        gen, env, rest = {}, {}, 0.0
        for key, hours in b.items():
            fam, phase = key.split("|")[0], key.rsplit("|", 1)[-1]
            if fam in ("decode_tokens", "rollout_tail_steps", "prefill_flops"):
                gen[phase] = gen.get(phase, 0.0) + hours
            elif fam == "env_cpu_seconds":
                env[phase] = env.get(phase, 0.0) + hours
            else:
                assert not phase.startswith("@"), key   # training, the latency, validation: serial
                rest += hours
        assert set(gen) == set(env) == {"@e0", "@e1", "@e2"}
        compute = rest + sum(max(gen[p], env[p]) for p in gen)
        m, m0 = loop.metrics(RL, on(pool), 60.0), serial.metrics(RL, on(pool), 60.0)
        o = loop.hardware(on(pool)).overhead_share(60.0)
        assert m.wall_hours == pytest.approx(compute * (1 + o), rel=1e-12)
        assert m.wall_hours < m0.wall_hours
        assert m.hours_breakdown["environment_overlap"] == pytest.approx(compute - sum(b.values()), rel=1e-12)
        assert sum(m.hours_breakdown.values()) == pytest.approx(m.wall_hours, rel=1e-12)


@pytest.mark.parametrize("overlap", ["none", "agent_loop"])
def test_asynchronous_rl_takes_the_longest_side_of_generation_the_pool_and_training(overlap):
    data = tiny_dict(overlap)
    data["hardware"]["rollout_gpus"] = [{"name": "H100-SXM", "counts": [8]}]
    data["training"]["staleness_steps_options"] = [0, 1]
    ev = Evaluator(parse_instance(data))
    stale = Recipe("rl", 300, (8, 4, 4), staleness_steps=1)
    hw = on("sandboxes-64", rollout_gpu="H100-SXM", rollout_count=8)
    by = ev.compute_hours_by_component(stale, hw)
    sides: dict[str, dict[str, float]] = {}
    serial = 0.0
    for key, hours in by.items():
        fam, phase = key.split("|")[0], key.rsplit("|", 1)[-1]
        side = {"decode_tokens": "G", "rollout_tail_steps": "G", "prefill_flops": "G", "env_wait_seconds": "L",
                "env_cpu_seconds": "E", "student_logprob_flops": "T", "train_flops": "T"}.get(fam)
        if side is None:
            serial += hours
        else:
            sides.setdefault(phase, {}).setdefault(side, 0.0)
            sides[phase][side] += hours
    assert {p[:2] for p in sides} == ({"@q"} if overlap == "agent_loop" else {"@p"})
    if overlap == "agent_loop":   # max(max(G, E) + L, T)
        longest = sum(max(s["G"] + s["L"], s["E"] + s["L"], s["T"]) for s in sides.values())
    else:                         # max(G + E + L, T)
        longest = sum(max(s["G"] + s["E"] + s["L"], s["T"]) for s in sides.values())
    m = ev.metrics(stale, hw, 60.0)
    assert m.wall_hours == pytest.approx((serial + longest) * (1 + ev.hardware(hw).overhead_share(60.0)), rel=1e-12)


def test_the_pool_is_paid_per_training_hour_and_traffic_per_sample():
    inst = tiny()
    ev = Evaluator(inst)
    rp = ev.recipe(RL)
    per_sample = 0.01 * 0.018 + 2.0 * 0.001
    assert rp.environments_usd == pytest.approx(rp.samples * per_sample, rel=1e-12)   # no per-CPU-hour money with pools
    for pool, per_hour in (("sandboxes-64", 64 * 0.05), ("sandboxes-512", 512 * 0.05 + 0.0225), ("hosts", 0.0)):
        m = ev.metrics(RL, on(pool), 60.0)
        train = m.wall_hours - m.hours_breakdown["data_lead_time"]
        assert m.cost_breakdown_usd["environments"] == pytest.approx(rp.environments_usd + per_hour * train, rel=1e-12)
        row = m.environments[0]
        assert row["pool_usd"] == pytest.approx(per_hour * train, rel=1e-12)
        assert row["traffic_usd"] + row["pool_usd"] == pytest.approx(m.cost_breakdown_usd["environments"], rel=1e-12)
        # the GPUs' money is not the pool's (a portfolio prices GPU-hours by tier)
        assert m.cost_breakdown_usd["compute"] + m.cost_breakdown_usd["evaluation"] == pytest.approx(
            ev.hardware(on(pool)).usd_per_hour_of_gpus * train, rel=1e-12)


def test_without_pools_the_environments_cost_what_they_did():
    data = json.loads((INSTANCES / "qwen3-32b-agentic-rl.json").read_text())
    inst = parse_instance(data)
    ev = Evaluator(inst)
    env = inst.environments
    for r in ev.space()[0][::97]:
        rp = ev.recipe(r)
        expected = rp.samples * env.cpu_seconds_per_sample / 3600.0 * env.sandbox_usd_per_cpu_hour if r.method != "sft" else 0.0
        assert rp.environments_usd == expected
        assert not any(k.startswith("env_cpu_seconds") for k in rp.amounts)
    assert all(h.environment_pool is None for h in ev.space()[1])


def test_sft_runs_on_no_pool_and_an_on_policy_recipe_on_one():
    ev = Evaluator(tiny())
    sft = Recipe("sft", 500, (), None, 1.0)
    assert ev.metrics(sft, on(None), 60.0).fits_memory and not ev.metrics(sft, on("hosts"), 60.0).fits_memory
    assert ev.metrics(RL, on("hosts"), 60.0).fits_memory and not ev.metrics(RL, on(None), 60.0).fits_memory
    assert {h.environment_pool for h in ev.space()[1]} == {None, "sandboxes-64", "sandboxes-512", "hosts"}


# --- the MIP against both oracles --------------------------------------------------------------

def _contract(seed: int, objective: str | None = None):
    inst = parse_instance(random_environment_instance_dict(seed, objective))
    mip = assert_mip_equals_both_oracles(inst)
    assert mip.big_m_breaches == []
    return inst, mip


@pytest.mark.parametrize("seed", split_seeds(range(24), 8))
def test_mip_equals_both_oracles_with_environment_pools(seed):
    _contract(seed)


@pytest.mark.parametrize("objective", ["cost", "time", "quality", "forgetting"])
def test_mip_equals_both_oracles_for_every_objective_with_limits_at_the_optimum(objective):
    """Limits placed on the cost optimum's own values (a relative 1e-6 on its side) and the other objectives: the
    optimum sits on them, where a wrong coefficient would move it."""
    for seed in (3, 11, 19):
        data = random_environment_instance_dict(seed, "cost")
        data["constraints"] = {}
        best = best_plan(parse_instance(data))
        if best.status != "optimal":
            continue
        m = best.metrics
        data["constraints"] = {"budget_usd": m.cost_usd * (1 + 1e-6), "deadline_hours": m.wall_hours * (1 + 1e-6)}
        if objective in ("cost", "time"):
            data["constraints"]["min_quality"] = m.quality * (1 - 1e-6)
        data["objective"] = objective
        assert_mip_equals_both_oracles(parse_instance(data))


@pytest.mark.slow
def test_mip_equals_both_oracles_with_environment_pools_more_seeds():
    for seed in range(24, 64):
        _contract(seed)


def test_the_pool_chosen_depends_on_the_job():
    """The lever moves the optimum: the fastest plan holds the largest sandbox pool, the cheapest another one, and
    on random jobs the optima run on pools of both kinds."""
    data = tiny_dict()
    data["environments"]["pools"][1]["usd_per_worker_hour"] = 0.2   # the large pool at four times the small one's price
    cheap = solve(parse_instance(data)).plan
    data["objective"] = "time"
    fast = solve(parse_instance(data)).plan
    assert fast.hardware.environment_pool == "sandboxes-512" and cheap.hardware.environment_pool == "sandboxes-64"
    assert cheap.gpu_count < fast.gpu_count   # the small pool paces the steps: fewer GPUs keep up with it
    kinds = set()
    for seed in range(0, 24, 2):
        inst = parse_instance(random_environment_instance_dict(seed, "cost"))
        best = best_plan_arrays(inst)
        if best.status == "optimal" and best.plan.hardware.environment_pool is not None:
            kinds.add(inst.environments.pool(best.plan.hardware.environment_pool).kind)
    assert kinds == {"cpu_sandbox", "gpu_host"}, kinds


# --- scenarios ---------------------------------------------------------------------------------

def test_scenarios_draw_the_cpu_seconds_per_sample_and_equal_the_evaluator():
    for overlap in ("none", "agent_loop"):
        data = tiny_dict(overlap)
        data["uncertainty"] = {"environments.cpu_seconds_per_sample": {"low": 10.0, "high": 60.0}}
        inst = parse_instance(data)
        params = {p.name: p for p in U.parameters(inst)}
        assert params["environments.cpu_seconds_per_sample"].low == 10.0
        scenarios = U.draw(inst, 5, seed=3)
        assert len(set(scenarios.values["environments.cpu_seconds_per_sample"].round(6))) == 5
        plans = [Plan.of(RL, on(pool), 60.0) for pool in ("sandboxes-64", "hosts")]
        assert_scenarios_equal_the_evaluator(inst, scenarios, plans)


@pytest.mark.parametrize("seed", [2, 7])
def test_the_chance_model_equals_the_oracle_over_scenarios_that_draw_the_cpu_seconds(seed):
    """The scenarios layer prices each scenario's pool hours at its drawn CPU-seconds per sample (a rate key of its
    own), and the chance-constrained MIP's choice equals the oracle's over the same scenarios."""
    from planopt.oracles.by_plan import best_under_scenarios
    from planopt.uncertainty.chance import solve_chance
    data = random_environment_instance_dict(seed, "cost")
    c = data["environments"]["cpu_seconds_per_sample"]
    data["uncertainty"] = {"environments.cpu_seconds_per_sample": {"low": c / 3, "high": c * 3}}
    inst = parse_instance(data)
    mip = solve_chance(inst, 0.75, 10, seed, None, out_of_sample=20, guard=False)
    oracle = best_under_scenarios(inst, U.draw(inst, 10, seed), 0.75, None)
    assert (mip.status == "optimal") == (oracle is not None), mip.message
    if oracle is not None:
        assert close(mip.risk["expected"]["cost_usd"], oracle.expected["cost_usd"]), (mip.plan, oracle.plan)


def test_without_pools_a_range_on_the_cpu_seconds_moves_the_sandboxes_money():
    data = json.loads((INSTANCES / "qwen3-32b-agentic-rl.json").read_text())
    assert "environments.cpu_seconds_per_sample" not in {p.name for p in U.parameters(parse_instance(data))}
    data["uncertainty"] = {"environments.cpu_seconds_per_sample": {"low": 45.0, "high": 180.0}}
    inst = parse_instance(data)
    plan = solve(inst).plan
    assert_scenarios_equal_the_evaluator(inst, U.draw(inst, 4, seed=1), [plan])


def test_the_parameter_is_a_point_without_a_range():
    p = {q.name: q for q in U.parameters(tiny())}["environments.cpu_seconds_per_sample"]
    assert (p.point, p.low, p.high) == (20.0, None, None) and "no default spread" in p.source


# --- JSON, refusals, portfolios ----------------------------------------------------------------

def test_a_plan_prints_its_pool_and_reads_back(tmp_path):
    inst = tiny()
    result = solve(inst)
    out = result.to_dict()
    stage = out["plan"]["stages"][0]
    assert stage["environment_pool"] == result.plan.hardware.environment_pool
    assert read_plan(json.loads(json.dumps(out["plan"]))) == result.plan.with_student(out["plan"]["student"])
    assert out["environments"][0]["pool"] == stage["environment_pool"]
    assert close(sum(out["environments"][0][k] for k in ("pool_usd", "traffic_usd", "sandbox_usd")),
                 out["cost_breakdown_usd"]["environments"])
    from planopt.report.result_schema import SolveResultSchema
    SolveResultSchema.model_validate(json.loads(json.dumps(out)))
    assert "environment_pool" not in plan_json(solve(parse_instance(json.loads(TINY.read_text()))).plan)["stages"][0]


@pytest.mark.parametrize("pool, message", [
    ("nowhere", "plan.environment_pool: 'nowhere' is not one of environments.pools"),
    (None, "plan.environment_pool: missing"),
])
def test_a_pool_the_instance_does_not_offer_is_refused(tmp_path, pool, message):
    data = tiny_dict()
    data["training"]["methods"].pop("sft")
    plan = plan_json(solve(parse_instance(data)).plan)
    plan["stages"][0]["environment_pool"] = pool
    (tmp_path / "inst.json").write_text(json.dumps(data))
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    code, _, err = cli("evaluate", tmp_path / "inst.json", tmp_path / "plan.json")
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("edit, field", [
    (lambda e: e["pools"][0].update(workers=-4), "environments.pools.0.workers"),
    (lambda e: e["pools"][0].update(workers=0), "environments.pools.0.workers"),
    (lambda e: e["pools"][2].update(workers_per_node=-1), "environments.pools.2.workers_per_node"),
    (lambda e: e["pools"][1].update(usd_per_worker_hour=-0.05), "environments.pools.1.usd_per_worker_hour"),
    (lambda e: e["pools"][1].update(usd_per_hour=-1), "environments.pools.1.usd_per_hour"),
    (lambda e: e["pools"][0].update(kind="tpu_host"), "environments.pools.0.kind"),
    (lambda e: e["pools"][0].pop("usd_per_worker_hour"), "environments.pools.0.usd_per_worker_hour"),
    (lambda e: e["pools"][2].update(usd_per_worker_hour=0.1), "environments.pools.2.usd_per_worker_hour"),
    (lambda e: e["pools"].append(dict(e["pools"][0])), "environments.pools: entry 3 is named 'sandboxes-64'"),
    (lambda e: e.update(traffic_usd_per_gb=-0.01), "environments.traffic_usd_per_gb"),
    (lambda e: e.update(overlap="sometimes"), "environments.overlap"),
    (lambda e: e.update(sandbox_usd_per_cpu_hour=0.05), "environments.pools: with pools, sandboxes are billed"),
    (lambda e: e.update(pools=[]), "environments.overlap"),
])
def test_bad_pools_are_refused_in_one_line_naming_the_field(tmp_path, edit, field):
    data = tiny_dict("agent_loop")
    edit(data["environments"])
    path = tmp_path / "inst.json"
    path.write_text(json.dumps(data))
    for command in ("validate", "solve"):
        code, _, err = cli(command, path)
        assert code == 2 and err.startswith("error:") and field in err and len(err.strip().splitlines()) == 1, err


def _portfolio(tmp_path, pools) -> str:
    job = tiny_dict()
    job["training"]["methods"].pop("sft")
    job["environments"]["pools"] = copy.deepcopy(pools)
    job["hardware"]["gpus"] = [{"name": "H100-SXM", "counts": [8, 16]}]
    job["constraints"] = {"deadline_hours": 100}
    portfolio = {"kind": "portfolio", "name": "environments", "horizon": {"buckets": 10, "bucket_hours": 24},
                 "gpus": [{"name": "H100-SXM", "on_demand_usd_per_gpu_hour": 2.99, "on_demand_available_gpus": 64}],
                 "jobs": [{"name": "agentic", "release_bucket": 0, "deadline_bucket": 9, "instance": job}]}
    path = tmp_path / "portfolio.json"
    path.write_text(json.dumps(portfolio))
    (tmp_path / "job.json").write_text(json.dumps({**job, "hardware": {"gpus": [
        {"name": "H100-SXM", "counts": [8, 16], "price_usd_per_gpu_hour": 2.99}]}}))
    return str(path)


def test_a_portfolio_job_with_one_pool_is_planned_as_alone(tmp_path):
    import planopt
    for pool in POOLS[1:]:
        path = _portfolio(tmp_path, [pool])
        alone = solve(parse_instance(json.loads((tmp_path / "job.json").read_text())))
        result = planopt.solve_portfolio(path).to_dict()
        job = result["jobs"][0]
        assert job["plan"]["environment_pool"] == alone.plan.hardware.environment_pool == pool["name"]
        assert (job["plan"]["method"], job["plan"]["steps"], job["plan"]["gpu_count"]) == \
            (alone.plan.method, alone.plan.steps, alone.plan.gpu_count)
        assert job["metrics"]["cost_usd"] == pytest.approx(alone.metrics.cost_usd, rel=1e-6)


def test_a_portfolio_job_with_a_choice_of_pools_and_sft_is_planned_as_alone(tmp_path):
    """Every pool a job offers, and SFT beside them (whose plans hold no pool): the one-job portfolio on the job's own
    price returns the job's own optimum (the pool is a layer of the job's block; its money per training hour is its
    gang's, ``gangs.usd_per_train_hour_other``)."""
    import planopt
    path = _portfolio(tmp_path, POOLS)
    tiny_raw = json.loads(TINY.read_text())
    portfolio, job = json.loads(open(path).read()), json.loads((tmp_path / "job.json").read_text())
    for inst in (portfolio["jobs"][0]["instance"], job):
        inst["training"]["methods"]["sft"] = tiny_raw["training"]["methods"]["sft"]
        inst["sft_data"] = tiny_raw["sft_data"]
    with open(path, "w") as f:
        json.dump(portfolio, f)
    alone = solve(parse_instance(job))
    planned = planopt.solve_portfolio(path).to_dict()["jobs"][0]
    assert planned["plan"].get("environment_pool") == alone.plan.hardware.environment_pool
    assert planned["metrics"]["cost_usd"] == pytest.approx(alone.metrics.cost_usd, rel=1e-6)
