r"""Replay a portfolio schedule as discrete events, apart from the MIP.

A schedule is what ``planopt solve portfolio.json --json`` prints: each job's
``plan``, its ``release_bucket`` and ``deadline_bucket``, and its
``schedule`` rows ``{bucket, provider, gpu, tier, gpus, hours}``; plus the
``procurement`` rows (reserved contracts). The replay reads only that output,
the portfolio's on-demand and spot availability, and the single-job evaluator
(for the work each plan needs); it never looks at the MIP.

Events. In bucket :math:`b` (hours :math:`[bH, (b+1)H)`) a job runs its rows
one after another from the start of the bucket: row :math:`i` holds
``gpus`` GPUs of its (provider, gpu, tier) pool from
:math:`t_i = bH + \sum_{i' < i} \mathrm{hours}_{i'}` to :math:`t_i + \mathrm{hours}_i`.
Sweeping the events in time order (releases before acquisitions at the same
instant), it checks

- **no pool over capacity**: at every instant the GPUs held in a pool are at
  most its capacity (reserved: the procurement's reserved GPUs in force in that
  bucket; on demand and spot: the portfolio's availability in that bucket);
- **each job's GPUs held together**: every row holds exactly the plan's GPU
  count of the plan's GPU type, and a job's rows in a bucket fit in the bucket
  (:math:`\sum \mathrm{hours} \le H`);
- **whole nodes**: every reservation is a multiple of the offer's node size;
- **work done by the deadline**: rows only in the job's window and after its
  lead time, and the GPU-hours run (``gpus × hours``) cover what the plan
  needs on each kind of tier: :math:`n(1+o)T(1-\sigma)` off spot and
  :math:`n(1+o^s)T\sigma` on spot (``gpu_hours_needed``), so the last event of
  a job ends by :math:`(d_j + 1) H`.

``replay_schedule`` returns the list of problems found (empty: the schedule runs).
"""

from __future__ import annotations

from typing import Any

from planopt.models.cost.evaluator import Evaluator
from planopt.models.formulation.portfolio import spot_overhead_share  # an evaluator formula (physics), not a MIP part
from planopt.models.schema.plan import Plan

TIER_ORDER = ("reserved", "on_demand", "spot")  # the order a job runs its rows within a bucket
RELATIVE_TOLERANCE = 1e-6  # on GPU-hours and GPU counts, against the solver's feasibility tolerance


def gpu_hours_needed(ev: Evaluator, plan: Plan, spot_share: float, preemptions_per_gpu_hour: float) -> tuple[float, float]:
    """(off-spot, spot) GPU-hours of a plan run with a share sigma of its compute hours on spot:
    ``n (1 + o) T (1 - sigma)`` and ``n (1 + o_s) T sigma``, T the compute hours of the evaluator."""
    T = sum(ev.compute_hours_by_component(plan.recipe, plan.hardware).values())
    o = ev.hardware(plan.hardware).overhead_share(plan.checkpoint_interval_minutes)
    o_s = spot_overhead_share(ev, plan.hardware, plan.checkpoint_interval_minutes, preemptions_per_gpu_hour)
    n = plan.gpu_count
    return n * (1 + o) * T * (1 - spot_share), n * (1 + o_s) * T * spot_share


def reserved_capacity(procurement: list[dict[str, Any]], bucket: int) -> dict[tuple, float]:
    """Reserved GPUs per pool (provider, region, gpu) in force in a bucket, from the procurement rows."""
    cap: dict[tuple, float] = {}
    for row in procurement:
        if row.get("tier") == "reserved" and row["start_bucket"] <= bucket <= row["end_bucket"]:
            key = (row.get("provider"), row.get("region"), row["gpu"])
            cap[key] = cap.get(key, 0) + row["gpus"]
    return cap


def replay_schedule(pdata, result: dict[str, Any], evaluators: list[Evaluator] | None = None) -> list[str]:
    """Problems found replaying ``result`` (a portfolio result's JSON dict) on ``pdata`` (empty: it runs)."""
    H = pdata.bucket_hours
    if result.get("bucket_hours") is not None and abs(result["bucket_hours"] - H) > 1e-9:
        return [f"bucket_hours: {result['bucket_hours']} != the portfolio's {H}"]
    evs = evaluators or [Evaluator(inst) for inst in pdata.instances]
    procurement = result.get("procurement", [])
    problems: list[str] = []
    events: list[tuple[float, int, int, tuple, int, str]] = []   # (time, +1 acquire / -1 release, gpus, pool, bucket, job)
    jobs = result.get("jobs", [])
    if len(jobs) != len(pdata.instances):
        return [f"jobs: {len(jobs)} in the schedule, {len(pdata.instances)} in the portfolio"]
    for j, job in enumerate(jobs):
        problems += _replay_job(pdata, j, job, evs[j], events)
    for row in procurement:  # a reservation is whole nodes of the offer
        node = pdata.node_gpus.get(pdata.pool_of(row), 1)
        if row.get("tier") == "reserved" and row["gpus"] % node:
            problems.append(f"procurement: {row['gpus']} reserved {row['gpu']} is not whole nodes of {node}")
    problems += _capacity_problems(pdata, procurement, events)
    return problems


def _replay_job(pdata, j: int, job: dict[str, Any], ev: Evaluator, events: list) -> list[str]:
    """Problems of job ``j``'s own schedule (window, lead time, gang, bucket length, GPU-hours done by its deadline);
    its acquire and release events appended to ``events``."""
    H = pdata.bucket_hours
    problems: list[str] = []
    name, plan = job["name"], Plan.from_dict(job["plan"])
    window = pdata.portfolio.jobs[j]
    lead = ev.recipe(plan.recipe).lead_hours
    by_bucket: dict[int, list[dict]] = {}
    for row in job["schedule"]:
        by_bucket.setdefault(row["bucket"], []).append(row)
    done = {"spot": 0.0, "other": 0.0}
    for b, rows in sorted(by_bucket.items()):
        if not window.release_bucket <= b <= window.deadline_bucket:
            problems.append(f"{name}: runs in bucket {b}, outside its window {window.release_bucket}..{window.deadline_bucket}")
        if b * H < window.release_bucket * H + lead * (1 - 1e-12):
            problems.append(f"{name}: runs in bucket {b} before its lead time of {lead:.1f} h has passed")
        t = b * H
        for row in sorted(rows, key=lambda r: TIER_ORDER.index(r["tier"])):
            if pdata.pool_of(row) != plan.gpu or row["gpus"] != plan.gpu_count:
                problems.append(f"{name}: bucket {b} holds {row['gpus']} × {pdata.pool_of(row)}, its plan needs "
                                f"{plan.gpu_count} × {plan.gpu} together")
            pool = (row.get("provider"), row.get("region"), row["gpu"], row["tier"])
            # an end past the bucket by a solver tolerance is clipped (and flagged below when it is more)
            events.append((t, 1, row["gpus"], pool, b, name))
            events.append((min(t + row["hours"], (b + 1) * H), -1, row["gpus"], pool, b, name))
            t += row["hours"]
            done["spot" if row["tier"] == "spot" else "other"] += row["gpus"] * row["hours"]
        if t > (b + 1) * H * (1 + RELATIVE_TOLERANCE) + RELATIVE_TOLERANCE:
            problems.append(f"{name}: {t - b * H:.6g} h of work in bucket {b}, longer than the bucket's {H:g} h")
    sigma = job["metrics"].get("spot_share", 0.0) or 0.0
    need_other, need_spot = gpu_hours_needed(ev, plan, sigma, pdata.preempt.get(plan.gpu, 0.0))
    for kind, need in (("other", need_other), ("spot", need_spot)):
        if done[kind] < need * (1 - RELATIVE_TOLERANCE) - RELATIVE_TOLERANCE:
            problems.append(f"{name}: {done[kind]:.6g} {'spot' if kind == 'spot' else 'reserved and on-demand'} "
                            f"GPU-hours run by its deadline, its plan needs {need:.6g}")
    return problems


def _capacity_problems(pdata, procurement: list[dict], events: list) -> list[str]:
    """Times a pool holds more GPUs than it has, walking every acquire and release in time order."""
    problems: list[str] = []
    held: dict[tuple, int] = {}
    for time_, sign, gpus, pool, b, name in sorted(events, key=lambda e: (e[0], e[1])):
        held[pool] = held.get(pool, 0) + sign * gpus
        if sign < 0:
            continue
        provider, region, gpu, tier = pool
        if not 0 <= b < len(pdata.buckets):
            continue  # outside the horizon: flagged above as outside the job's window
        key = pdata.pool_of({"provider": provider, "region": region, "gpu": gpu})
        if tier == "reserved":
            cap = reserved_capacity(procurement, b).get((provider, region, gpu), 0)
        elif tier == "on_demand":
            cap = pdata.od_avail[key][b]
        else:
            cap = pdata.spot_avail[key][b]
        if held[pool] > cap + RELATIVE_TOLERANCE:
            problems.append(f"capacity: {held[pool]} {tier} {gpu} GPUs held at hour {time_:g} (bucket {b}, when {name} starts), "
                            f"{cap:g} available")
    return problems
