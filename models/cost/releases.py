r"""Repeated releases (issue 27, lever 2): the plan's cost over every release, priced once.

A team that post-trains every month runs the chosen plan at each release (``releases``: ``count`` releases,
or a ``horizon_months`` / ``interval_months`` pair, ``models/schema/releases.py``). What is paid once and what
recurs follows the fixed/elastic split of ``quantities.py``, with one exception, the SFT labels:

- the *fixed* part of each line (the reward design, the teacher's acquisition or training, the archived
  milestones, the one-off egress, ``operations.fixed_usd``) is paid once, at the first release;
- the *elastic* part (GPU time, evaluation, sampling, verifier calls, sandboxes, logs, the recent checkpoints'
  storage, operations per wall hour, forgetting repair) is paid at every release: each release is one run;
- of the SFT labels bought (``labels_usd``, elastic in one run) a later release buys the share
  :math:`s` = ``releases.sft_labels_rebuilt_share`` again (requirements change; the rest is reused). No published
  rate of label churn exists: :math:`s` is the instance's input (default 1, every label bought again), a point
  value in the uncertainty model unless ``uncertainty`` gives ``releases.sft_labels_rebuilt_share`` a range.

With :math:`N` releases, per cost line :math:`l` with fixed part :math:`f_l` and one-run value :math:`v_l`:

.. math::
   \mathrm{total}_l = f_l + N\,(v_l - f_l) - (N - 1)(1 - s)\,\mathrm{labels}_l

(:math:`\mathrm{labels}_l` is non-zero on ``data`` only). The plan's ``cost_usd`` is the sum: the total over
the releases, and the budget bounds it. It is linear in the one-run money, so the MIP's coefficients are the
same map of the one-run ones (``formulation/data.collect``): hourly money :math:`\times N`, recipe money
:math:`N c_r - (N-1)(f_r + (1-s)\,\mathrm{labels}_r)`, the constant :math:`K` once. The wall hours, quality and
forgetting are one release's (the deadline holds per release; the first is the longest, as it buys every
label); the fixed breakdown (``Metrics.fixed_cost_breakdown_usd``) is what the first release pays once.

Decided here, where the issue is silent: operations per wall hour recur in full, the data lead time included
(a later release that buys fewer labels waits less: counting it whole overstates SFT's later releases by at
most :math:`p_{ops}\,(1-s)\,\mathrm{lead}`); the budget and alert lines, the FOCUS rows (``spend.py``) are the first
release's timeline; ``track`` follows one release with the other releases' money committed, ``replan`` plans the
rest of one run with the other releases' money kept in its budget (``runs/replan.other_releases_usd``), and
portfolios refuse a job of several releases in one line. The scenarios layer (``formulation/scenarios.py``) applies the same map in each scenario,
with the scenario's :math:`s`.
"""

from __future__ import annotations

from planopt.models.schema.instance import Instance


def release_count(inst: Instance) -> int:
    """How many times the plan runs: ``releases``' count (1 without the block)."""
    return 1 if inst.releases is None else inst.releases.releases


def labels_reused_share(inst: Instance) -> float:
    """The share of one run's SFT labels a later release does not buy again, :math:`1 - s`."""
    return 0.0 if inst.releases is None else 1.0 - inst.releases.sft_labels_rebuilt_share


def total_line(inst: Instance, one_run, fixed, labels=0.0, rebuilt_share=None):
    """A cost line over every release (module docstring) from its one-run value, its fixed part and (``data``)
    the SFT labels' money in it; works element-wise on numpy arrays. ``rebuilt_share``: :math:`s` in each
    scenario (the scenario evaluator's draws; None: the instance's)."""
    n = release_count(inst)
    if n == 1:
        return one_run
    reused = labels_reused_share(inst) if rebuilt_share is None else 1.0 - rebuilt_share
    return fixed + n * (one_run - fixed) - (n - 1) * reused * labels


def release_summary(inst: Instance, cost_usd: float, fixed_usd: float, labels_usd: float) -> dict:
    """The reports' ``releases``: the count, what the first and each later release cost, and the total
    (``cost_usd``, the plan's, already the total); ``labels_usd`` is one run's SFT label money."""
    n = release_count(inst)
    reused = labels_reused_share(inst) * labels_usd
    # total = first + (N - 1) later, first = fixed + elastic_one, later = elastic_one - reused
    elastic_one = (cost_usd - fixed_usd + (n - 1) * reused) / n
    later = elastic_one - reused
    return {"count": n, "sft_labels_rebuilt_share": 1.0 - labels_reused_share(inst),
            "first_release_usd": fixed_usd + elastic_one, "later_release_usd": later if n > 1 else None,
            "total_usd": cost_usd}
