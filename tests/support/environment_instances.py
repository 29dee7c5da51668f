"""Random small on-policy jobs whose environments run on a pool of workers the plan chooses (issue 27, lever 1):
cpu_sandbox and gpu_host pools, with and without an agent loop, sometimes asynchronous RL on separate rollout GPUs,
traffic and API calls priced per sample. Used by ``tests/models/cost/test_environments.py`` and, as one more
layer, by ``layered_instances.py``."""

from __future__ import annotations

import random

from planopt.instance import parse_instance
from planopt.oracles.by_plan import all_plans

from tests.support.random_instances import random_job_dict, with_drawn_limits

MAX_ENVIRONMENT_PLANS = 20_000


def environments_block(rng: random.Random, max_pools: int = 3) -> dict:
    """An ``environments`` block with one to ``max_pools`` pools (names unique), an overlap, traffic and API calls."""
    pools = []
    for n in range(rng.randint(1, max_pools)):
        if rng.random() < 0.65:
            pool = {"name": f"sandboxes-{n}", "kind": "cpu_sandbox", "workers": rng.choice([2, 8, 32, 128, 512]),
                    "usd_per_worker_hour": rng.choice([0.0494, 0.0585, 0.4])}
            if rng.random() < 0.4:
                pool["usd_per_hour"] = 0.0225
        else:
            pool = {"name": f"hosts-{n}", "kind": "gpu_host", "workers_per_node": rng.choice([1, 4, 16, 64])}
        pools.append(pool)
    block = {"cpu_seconds_per_sample": rng.choice([0.5, 4.0, 30.0, 90.0]), "pools": pools,
             "overlap": rng.choice(["none", "agent_loop"]),
             "latency_seconds_per_step": rng.choice([0.0, 0.0, 5.0, 30.0])}
    if rng.random() < 0.5:
        block.update(traffic_gb_per_sample=rng.choice([0.001, 0.05]), traffic_usd_per_gb=0.018)
    if rng.random() < 0.3:
        block.update(api_calls_per_sample=rng.choice([1.0, 5.0]), usd_per_api_call=0.001)
    return block


def random_environment_instance_dict(seed: int, objective: str | None = None) -> dict:
    """A random small job with on-policy methods and environment pools (a quarter of them asynchronous RL on
    separate rollout GPUs), limits drawn from its own plans, its objective drawn unless given."""
    rng = random.Random(50_000 + seed)
    while True:
        inst = random_job_dict(rng, f"environments-{seed}")
        methods = inst["training"]["methods"]
        if "rl" not in methods and "opd" not in methods:
            continue
        inst["environments"] = environments_block(rng)
        if "rl" in methods and rng.random() < 0.25:
            inst["hardware"]["rollout_gpus"] = [{"name": rng.choice(["H100-SXM", "B200"]), "counts": [8]}]
            inst["training"]["staleness_steps_options"] = [0, 1]
        inst["objective"] = objective or rng.choice(["cost", "cost", "time", "quality", "forgetting"])
        try:
            parsed = parse_instance(inst)
        except ValueError:
            continue
        plans = all_plans(parsed, limit=10**9)
        if len(plans) <= MAX_ENVIRONMENT_PLANS:
            return with_drawn_limits(inst, plans, rng)
