r"""Environments as a decision: the pool of workers an on-policy stage runs its environments on, the time they
take per step, and what they cost (issue 27, lever 1; the inputs in ``schema/environments.py``).

**The choice.** With ``environments.pools`` every hardware choice of an on-policy recipe names one pool
(``HardwareChoice.environment_pool``), as it names a trainer or a context-parallel degree: one more option of
the hardware choice, so recipe × hardware stays a product of one-hots and the MIP's disaggregation prices it
exactly (``formulation/work.py``). SFT runs no environments, so it fits only choices without a pool, and an
on-policy recipe only choices with one (``refusal``). Without pools nothing changes: no choice names a pool,
environments take no time of their own and cost the CPU-hours they use (today's model).

**Time: a queue served by W workers.** In a step of phase :math:`p` the :math:`S_p = P k_p` samples each need
:math:`c` CPU-seconds of environment work (``cpu_seconds_per_sample``), and each of the pool's :math:`W` workers
runs one sample's environment at a time, so with the pool kept busy the environments take

.. math:: E_p = S_p\, c / W \quad \text{seconds per step}, \qquad
          W = \begin{cases} w & \text{cpu\_sandbox} \\ w_{node}\,(\lceil n/g \rceil + \lceil n_r/g_r \rceil) & \text{gpu\_host} \end{cases}

(:math:`n, n_r` the training and rollout GPUs, :math:`g, g_r` their GPUs per node). The component
``env_cpu_seconds`` carries the amount :math:`S_p c` and takes :math:`1/W` s per unit on the choice
(``seconds_per_cpu_second``), so it is linear in the disaggregated work like every other component. How a step
combines it with generation :math:`G_p` (decode, the tail, prefill) and the serial latency :math:`L`
(``latency_seconds_per_step``):

- ``overlap: none`` (the environments run once a response is generated, as a verifier or sandbox reward step
  does): the rollout lasts :math:`G_p + E_p + L`;
- ``overlap: agent_loop`` (an agent loop keeps many trajectories in flight: NeMo RL's ``AsyncRolloutImpl``
  runs a prompt's generations concurrently with ``asyncio.gather``, verl's agent loop balances requests across
  its servers, so while one trajectory waits on its environment the engine generates for others): the rollout
  lasts :math:`\max(G_p, E_p) + L`, the slower of the two resources setting the pace.

Asynchronous RL (``asynchronous.py``) overlaps that rollout with training :math:`T_p`:
:math:`\max(G_p + E_p + L, T_p)`, or with ``agent_loop`` :math:`\max(\max(G_p, E_p) + L, T_p) =
\max(G_p + L,\ E_p + L,\ T_p)`. Each maximum is an exact epigraph in the MIP (``work.define_overlap``).

**Money.** A ``cpu_sandbox`` pool is held for the stage's training hours :math:`H_{train}` (E2B and AWS Fargate
bill a sandbox per second while it runs, on what it was allocated, not what it uses: ``catalog/environments.py``),
so it costs :math:`(w\, p_w + p_{fix})` per training hour (:math:`p_{fix}` a load balancer's hourly price), money
per hour of the hardware choice like its GPUs' (the MIP's :math:`\pi_h`). A ``gpu_host`` pool costs nothing of
its own (its CPUs are billed with the GPUs). Traffic is priced per sample, whatever the pool:
:math:`g\, p_{gb} + a\, p_{call}` (``traffic_usd_per_sample``), and without pools sandboxes cost the CPU-hours
used, :math:`S c\, p_{cpu} / 3600` (``recipes.py``).
"""

from __future__ import annotations

from typing import Optional

from planopt.models.schema.environments import EnvironmentPool, Environments


def pools_of(inst, methods) -> list[Optional[str]]:
    """The pool each hardware choice may name: None alone without pools; with pools, each pool's name (for the
    on-policy recipes), and None too when ``methods`` include SFT (which runs no environments)."""
    pools = inst.environments.pools
    if not pools:
        return [None]
    return ([None] if "sft" in methods else []) + [p.name for p in pools]


def refusal(inst, pool: Optional[str], method: str) -> Optional[str]:
    """Why a recipe of ``method`` cannot run on a choice naming ``pool`` (None when it can)."""
    if not inst.environments.pools:
        return None
    if method == "sft":
        return None if pool is None else "SFT runs no environments: a pool of environment workers would sit idle"
    return None if pool is not None else "an on-policy recipe runs its environments on one of environments.pools"


def only_pool(env: Environments, method: str, fail) -> Optional[str]:
    """The pool a measurement of ``method`` ran on where the instance leaves no choice (a pilot row names no pool, as
    it names no trainer): None for SFT or without pools, else the one pool; ``fail(column, message)`` is raised
    when there are several."""
    names = [p.name for p in env.pools] if method != "sft" else []
    if len(names) > 1:
        raise fail("gpu", "the instance lists several environments.pools, and a pilot row does not say which pool its "
                          "environments ran on; fit the instance with the one pool the pilot used")
    return names[0] if names else None


def workers(pool: EnvironmentPool, nodes: int) -> int:
    r""":math:`W`: the pool's workers, :math:`w` for a cpu_sandbox pool, :math:`w_{node}` times ``nodes`` (the
    choice's training and rollout nodes) for a gpu_host pool."""
    return pool.workers if pool.kind == "cpu_sandbox" else pool.workers_per_node * nodes


def seconds_per_cpu_second(pool: EnvironmentPool, nodes: int) -> float:
    r""":math:`1/W`: wall seconds of the pool per CPU-second of environment work (its workers kept busy)."""
    return 1.0 / workers(pool, nodes)


def usd_per_hour(pool: Optional[EnvironmentPool], nodes: int) -> float:
    r""":math:`w\, p_w + p_{fix}` for a cpu_sandbox pool per hour it is held; 0 for a gpu_host pool or none."""
    if pool is None or pool.kind != "cpu_sandbox":
        return 0.0
    return workers(pool, nodes) * pool.usd_per_worker_hour + pool.usd_per_hour


def traffic_usd_per_sample(env: Environments) -> float:
    r""":math:`g\, p_{gb} + a\, p_{call}`: the traffic between the trainer and the environment per sample."""
    return env.traffic_gb_per_sample * env.traffic_usd_per_gb + env.api_calls_per_sample * env.usd_per_api_call


def sandbox_usd(env: Environments, samples: float) -> float:
    r"""Sandboxes billed per CPU-hour used, without pools: :math:`S c\, p_{cpu} / 3600` (0 with pools, which bill
    their workers while held)."""
    if env.pools:
        return 0.0
    return samples * env.cpu_seconds_per_sample / 3600.0 * env.sandbox_usd_per_cpu_hour


def describe(pool: EnvironmentPool, nodes: int) -> str:
    """One line for the report: the pool, its workers and its price."""
    w = workers(pool, nodes)
    if pool.kind == "gpu_host":
        return (f"{w:,} workers on the GPU nodes' CPUs ({pool.workers_per_node} per node × {nodes} nodes, billed with "
                f"the GPUs) [{pool.name}]")
    fixed = f" + ${pool.usd_per_hour:,.4g}/h" if pool.usd_per_hour else ""
    return f"{w:,} CPU sandboxes at ${pool.usd_per_worker_hour:,.4g}/sandbox-hour{fixed} [{pool.name}]"


def environments_detail(inst, rp, hp, train_hours: float, hours_by_component: dict) -> list[dict]:
    """What the report and the JSON show of a stage's environments (one row; none for a stage that runs none):
    the pool, its kind and workers, the overlap, the environments' hours of work on the pool
    (:math:`\\sum_p E_p` over the steps) and their money: the pool held for the training hours, the traffic, and
    the sandboxes billed per CPU-hour (without pools)."""
    pool = hp.environment_pool
    if pool is None:
        return []
    from planopt.models.cost.components import ENV_CPU, family_of
    traffic = rp.environments_usd - rp.extra.get("sandbox_usd", 0.0)
    return [{"pool": pool.name, "kind": pool.kind, "workers": workers(pool, hp.nodes), "overlap": inst.environments.overlap,
             "environment_hours": sum(v for k, v in hours_by_component.items() if family_of(k) == ENV_CPU),
             "pool_usd": hp.environments_usd_per_hour * train_hours, "traffic_usd": traffic,
             "sandbox_usd": rp.extra.get("sandbox_usd", 0.0)}]
