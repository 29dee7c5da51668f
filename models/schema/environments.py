"""The ``environments`` block: what on-policy samples cost and wait for outside the GPUs (issue 27, lever 1).

Today's three fields stay as they were: ``cpu_seconds_per_sample`` (the CPU time one sample's environment
takes), ``sandbox_usd_per_cpu_hour`` (sandboxes billed per CPU-second used) and ``latency_seconds_per_step``
(a serial wait per step). Without ``pools`` nothing else changes: environments run with as many sandboxes as
there are samples, so they take no time of their own, and their money is the CPU-hours used.

With ``pools`` the environments run on one pool of workers the plan chooses (the MIP's choice, as a GPU count
is): ``cpu_sandbox`` pools of ``workers`` sandboxes held for the whole run at ``usd_per_worker_hour`` each (E2B,
AWS Fargate and Modal bill a sandbox per second while it runs, whatever its CPU use), plus ``usd_per_hour``
(a load balancer in front of them); ``gpu_host`` pools of ``workers_per_node`` workers on every node of the
plan's GPUs, whose CPUs are billed with the GPUs. A step's environments then take time
(``cost/environments.py``), and ``overlap`` says whether they run while the engine generates (an agent loop:
``agent_loop``) or after it (``none``). The traffic between the trainer and the environments is priced per
sample: ``traffic_gb_per_sample`` at ``traffic_usd_per_gb`` and ``api_calls_per_sample`` at
``usd_per_api_call``. Every number of this block is the job's own (its environment, its provider's prices):
no field has a default but none (0) or today's value; the sourced prices quoted in the README's
"Environments" section are in ``catalog/environments.py``.
"""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import Field, ValidationInfo, field_validator

from planopt.models.schema.base import NonNegativeFloat, PositiveInt, Strict

POOL_KINDS = ("cpu_sandbox", "gpu_host")
OVERLAPS = ("none", "agent_loop")


class EnvironmentPool(Strict):
    """One pool of environment workers a plan may run its environments on."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.:/-]{1,64}$", description="the pool's label: a plan's stage names it "
                      "in environment_pool")
    kind: Literal[POOL_KINDS] = Field(description="cpu_sandbox: sandboxes of their own, held for the run; gpu_host: "  # type: ignore[valid-type]
                                      "workers on the CPUs of the plan's GPU nodes")
    workers: Optional[PositiveInt] = Field(None, validate_default=True, description="cpu_sandbox: sandboxes held for "
                                           "the run, each running one sample's environment at a time")
    workers_per_node: Optional[PositiveInt] = Field(None, validate_default=True, description="gpu_host: workers on "
                                                    "each node of the stage's GPUs (training and rollout nodes)")
    usd_per_worker_hour: Optional[NonNegativeFloat] = Field(None, validate_default=True, description="cpu_sandbox: what "
                                                            "one sandbox costs per hour it is held (required: your "
                                                            "provider's price)")
    usd_per_hour: NonNegativeFloat = Field(0.0, description="cpu_sandbox: fixed money per hour the pool is held, "
                                           "e.g. the load balancer in front of it (default none)")

    @field_validator("workers", "usd_per_worker_hour")
    @classmethod
    def _a_sandbox_field(cls, value, info: ValidationInfo):
        kind = info.data.get("kind")
        if kind == "cpu_sandbox" and value is None:
            raise ValueError("a cpu_sandbox pool needs it" + (" (no default: it is your provider's price)"
                                                              if info.field_name == "usd_per_worker_hour" else ""))
        if kind == "gpu_host" and value is not None:
            raise ValueError("a gpu_host pool runs on the CPUs of the plan's GPU nodes, billed with the GPUs, its "
                             "workers following its nodes (workers_per_node); leave it out")
        return value

    @field_validator("workers_per_node")
    @classmethod
    def _a_host_field(cls, value, info: ValidationInfo):
        kind = info.data.get("kind")
        if kind == "gpu_host" and value is None:
            raise ValueError("a gpu_host pool needs its workers per GPU node")
        if kind == "cpu_sandbox" and value is not None:
            raise ValueError("only a gpu_host pool has workers per node; give workers")
        return value

    @field_validator("usd_per_hour")
    @classmethod
    def _a_fixed_price(cls, value, info: ValidationInfo):
        if value and info.data.get("kind") == "gpu_host":
            raise ValueError("a gpu_host pool runs on the CPUs of the plan's GPU nodes, billed with the GPUs; leave it out")
        return value


class Environments(Strict):
    """On-policy environments: their CPU time and price per sample, the serial wait per step, and optionally the
    pools of workers they may run on, how they overlap generation, and the traffic they cause."""

    cpu_seconds_per_sample: NonNegativeFloat = Field(0.0, description="CPU sandbox time per on-policy sample")
    sandbox_usd_per_cpu_hour: NonNegativeFloat = Field(0.0, description="sandboxes billed per CPU-hour used (without "
                                                       "pools; a pool bills its workers while held)")
    latency_seconds_per_step: NonNegativeFloat = Field(0.0, description="serial wait on environments per step; GPUs idle and billed")
    pools: list[EnvironmentPool] = Field(default_factory=list, description="the pools of workers a plan chooses "
                                         "from (none: sandboxes without limit, billed per CPU-hour used)")
    overlap: Literal[OVERLAPS] = Field("none", description="agent_loop: environments run while the engine generates "  # type: ignore[valid-type]
                                       "(a step's rollout lasts the longer of the two); none: after it (their sum)")
    traffic_gb_per_sample: NonNegativeFloat = Field(0.0, description="data between the trainer and the environment "
                                                    "per sample, GB")
    traffic_usd_per_gb: NonNegativeFloat = Field(0.0, description="what that traffic costs per GB (load-balancer "
                                                 "processing, transfer between zones)")
    api_calls_per_sample: NonNegativeFloat = Field(0.0, description="paid calls an environment makes per sample "
                                                   "(tools, search, a judge)")
    usd_per_api_call: NonNegativeFloat = Field(0.0, description="the price of one such call")

    @field_validator("pools")
    @classmethod
    def _pools_consistent(cls, pools, info: ValidationInfo):
        names = [p.name for p in pools]
        for n, name in enumerate(names):
            if name in names[:n]:
                raise ValueError(f"entry {n} is named {name!r}, as entry {names.index(name)} is; expected one entry "
                                 "per pool (a plan names its pool by name)")
        if pools and info.data.get("sandbox_usd_per_cpu_hour"):
            raise ValueError("with pools, sandboxes are billed by their pool (usd_per_worker_hour while held); "
                             "expected environments.sandbox_usd_per_cpu_hour 0 or left out")
        return pools

    @field_validator("overlap")
    @classmethod
    def _something_to_overlap(cls, overlap, info: ValidationInfo):
        if overlap != "none" and not info.data.get("pools", True):
            raise ValueError("without pools the environments take no time of their own (as many sandboxes as "
                             "samples), so nothing overlaps; give pools or leave overlap out")
        return overlap

    def pool(self, name: str) -> EnvironmentPool:
        """The pool named ``name`` (KeyError for another)."""
        for p in self.pools:
            if p.name == name:
                return p
        raise KeyError(name)
