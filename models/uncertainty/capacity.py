r"""Capacity scenarios of a portfolio: the spot and on-demand GPUs actually delivered.

A portfolio's schedule holds GPUs of three pools per GPU type and bucket. The
reserved pool is a contract and is certain; the other two are not:

- **Spot preemption.** Each spot GPU is preempted at the portfolio's rate
  :math:`p_g` (``spot_preemptions_per_gpu_hour``, per GPU-hour) as a Poisson
  process, so a gang of :math:`n` spot GPUs is first hit after
  :math:`T \sim \mathrm{Exp}(n p_g)` hours of running. A scenario draws one
  uniform :math:`U_{s,j,b} \in (0, 1]` per job and bucket, and
  :math:`T = -\ln U / (n p_g)` (inverse CDF; :math:`p_g = 0`: never). The
  uniforms, not the times, are the scenario, so that the same scenario prices
  any plan of the job (common random numbers).
- **On-demand shortfall.** In each bucket and GPU type, independently, the
  on-demand pool falls short with probability :math:`q_{g,b}`
  (``on_demand_shortfall_probability_per_bucket``); short, only
  :math:`\lfloor A^{od}_{g,b} (1 - \phi_g) \rfloor` of its
  :math:`A^{od}_{g,b}` GPUs are obtainable, :math:`\phi_g` the
  ``on_demand_shortfall_share``. No published stock-out frequency was found
  (providers document "insufficient capacity" errors, not how often they
  happen), so both are instance fields with no default: a GPU type with
  on-demand GPUs and no shortfall fields is refused (``check_capacity_fields``).

What happens to a schedule in a scenario (the recourse) is
``solver/portfolio/risk.py``'s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from planopt.models.schema.portfolio import PortfolioData

# Cells (scenarios x (jobs + GPU types) x buckets) one draw may hold: 2e7 float64 are 160 MB,
# the most a risk estimate on this shared machine should allocate; a share's standard error is
# already 0.5 points at 10,000 scenarios.
MAX_SCENARIO_CELLS = 20_000_000


class CapacityFieldError(ValueError):
    """A field the capacity scenarios need is missing; the message names it (dotted path)."""


@dataclass(frozen=True)
class CapacityScenarios:
    """Seeded capacity scenarios of a portfolio: preemption uniforms per (job, bucket), on-demand GPUs obtainable per
    (GPU type, bucket)."""

    seed: int
    preemption_uniform: np.ndarray   # (S, J, B), in (0, 1]
    on_demand_gpus: np.ndarray       # (S, G, B): on-demand GPUs obtainable, G in PortfolioData.gpus order

    @property
    def scenarios(self) -> int:
        """The number of scenarios S."""
        return self.preemption_uniform.shape[0]


def check_capacity_fields(pdata: PortfolioData) -> None:
    """Every GPU type with on-demand GPUs gives its shortfall (there is no default to fall back on)."""
    for i, g in enumerate(pdata.portfolio.gpus):
        if any(pdata.od_avail[g.key]) and g.on_demand_shortfall_probability_per_bucket is None:
            raise CapacityFieldError(
                f"gpus.{i}.on_demand_shortfall_probability_per_bucket: capacity scenarios need the chance that the on-demand "
                f"{g.key} pool falls short in a bucket and on_demand_shortfall_share (no published figure to default to)")


def max_scenarios(pdata: PortfolioData) -> int:
    """The most scenarios whose arrays, (jobs + GPU types) × buckets each, hold at most ``MAX_SCENARIO_CELLS`` cells in all;
    at least 1."""
    return max(1, MAX_SCENARIO_CELLS // ((len(pdata.instances) + len(pdata.gpus)) * len(pdata.buckets)))


def first_preemption_hours(uniform: np.ndarray, gpus: int, preemptions_per_gpu_hour: float) -> np.ndarray:
    """Hours a gang of ``gpus`` spot GPUs runs before its first preemption: ``-ln U / (n p)`` (inf when p = 0)."""
    rate = gpus * preemptions_per_gpu_hour
    if rate <= 0:
        return np.full(np.shape(uniform), math.inf)
    return -np.log(uniform) / rate


def draw_capacity(pdata: PortfolioData, n: int, seed: int) -> CapacityScenarios:
    """``n`` seeded scenarios: preemption uniforms per (job, bucket), on-demand GPUs per (GPU type, bucket)."""
    check_capacity_fields(pdata)
    rng = np.random.default_rng(seed)
    J, G, B = len(pdata.instances), len(pdata.gpus), len(pdata.buckets)
    uniform = 1.0 - rng.random((n, J, B))    # (0, 1]: ln is finite
    short_draw = rng.random((n, G, B))
    od = np.empty((n, G, B))
    for k, name in enumerate(pdata.gpus):
        gpu = pdata.gpu[name]
        avail = np.asarray(pdata.od_avail[name], dtype=float)
        if gpu.on_demand_shortfall_probability_per_bucket is None:   # no on-demand GPUs at all (checked above)
            od[:, k, :] = avail
            continue
        q = np.asarray(gpu.per_bucket("on_demand_shortfall_probability_per_bucket", B))
        # rounded down to whole GPUs; the 1e-9 keeps 8 x (1 - 0.25) at 6, not 5.999...
        short = np.floor(avail * (1.0 - gpu.on_demand_shortfall_share) + 1e-9)
        od[:, k, :] = np.where(short_draw[:, k, :] < q, short, avail)
    return CapacityScenarios(seed, uniform, od)
