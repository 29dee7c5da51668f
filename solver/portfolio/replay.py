r"""Replay a portfolio schedule as discrete events, apart from the MIP.

A schedule is what ``planopt solve portfolio.json --json`` prints: each job's
``plan``, its ``release_bucket`` and ``deadline_bucket``, its ``gangs`` (each
stage's training and rollout GPUs, its teacher's: ``models/cost/gangs.py``)
with their spot shares, and its ``schedule`` rows ``{bucket, provider, gpu,
tier, gpus, hours, stage, role}``; plus the ``procurement`` rows (reserved
contracts). The replay reads only that output, the portfolio's on-demand and
spot availability, and the single-job evaluator (for the gangs each plan holds
and the work each needs); it never looks at the MIP.

Events. In bucket :math:`b` (hours :math:`[bH, (b+1)H)`) a gang runs its rows
one after another from the start of the bucket: row :math:`i` holds
``gpus`` GPUs of its (provider, gpu, tier) pool from
:math:`t_i = bH + \sum_{i' < i} \mathrm{hours}_{i'}` to :math:`t_i + \mathrm{hours}_i`;
a rollout gang's row on a tier runs at the times of its training gang's row on
that tier (they are one synchronous job). Sweeping the events in time order
(releases before acquisitions at the same instant), it checks

- **no pool over capacity**: at every instant the GPUs held in a pool are at
  most its capacity (reserved: the procurement's reserved GPUs in force in that
  bucket; on demand and spot: the portfolio's availability in that bucket);
- **each gang's GPUs held together**: every row holds exactly the gang's GPU
  count of its GPU type, and a gang's rows in a bucket fit in the bucket
  (:math:`\sum \mathrm{hours} \le H`); a rollout gang runs the same hours as its
  training gang on each tier of each bucket;
- **gangs in order**: a job's teacher, then its stages, each after the last
  bucket of the one before;
- **whole nodes**: every reservation is a multiple of the offer's node size;
- **work done by the deadline**: rows only in the job's window and after each
  gang's lead time, and the GPU-hours run (``gpus × hours``) cover what each
  gang needs on each kind of tier: :math:`n(1+o)T(1-\sigma)` off spot and
  :math:`n(1+o^s)T\sigma` on spot (``GangNeed.gpu_hours``), so the last event of
  a job ends by :math:`(d_j + 1) H`.

``replay_schedule`` returns the list of problems found (empty: the schedule runs).
"""

from __future__ import annotations

from typing import Any

from planopt.models.cost.evaluator import Evaluator
from planopt.models.cost.gangs import GangNeed, plan_gangs
from planopt.models.schema.plan import Plan

TIER_ORDER = ("reserved", "on_demand", "spot")  # the order a gang runs its rows within a bucket
RELATIVE_TOLERANCE = 1e-6  # on GPU-hours and GPU counts, against the solver's feasibility tolerance


def gang_key(row: dict[str, Any]) -> tuple:
    """(stage 0-based or None, role) of a schedule row or a ``gangs`` entry; a row of a result before version 1.4
    (no stage, no role) is its one stage's training GPUs."""
    stage = row.get("stage", 1)
    return (None if stage is None else stage - 1, row.get("role", "training"))


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
    """Problems of job ``j``'s own schedule (window, lead times, gangs and their order, bucket length, GPU-hours done
    by its deadline); its acquire and release events appended to ``events``."""
    problems: list[str] = []
    name, plan = job["name"], Plan.from_dict(job["plan"])
    window = pdata.portfolio.jobs[j]
    needs = plan_gangs(ev, plan, pdata.preempt)
    shares = {gang_key(g): g.get("spot_share", 0.0) or 0.0 for g in job.get("gangs", [])}
    if "gangs" not in job:   # a result before version 1.4: one gang, its spot share the job's
        shares[(0, "training")] = job["metrics"].get("spot_share", 0.0) or 0.0
    rows: dict[tuple, list[dict]] = {}
    for row in job["schedule"]:
        rows.setdefault(gang_key(row), []).append(row)
    known = {(n.stage, n.role) for n in needs}
    problems += [f"{name}: rows for stage {k[0]} {k[1]} GPUs, which its plan does not hold" for k in rows if k not in known]
    starts: dict[tuple, dict] = {}   # a training gang's row start times by (bucket, tier), for its rollout partner
    last = None
    for a, need in enumerate(needs):
        key = (need.stage, need.role)
        mine = rows.get(key, [])
        partner = None if need.partner is None else (needs[need.partner].stage, needs[need.partner].role)
        problems += _replay_gang(pdata, name, window, need, mine, shares.get(key, 0.0), events,
                                 starts.setdefault(key, {}), None if partner is None else starts.get(partner, {}))
        if need.partner is None and mine:
            first = min(r["bucket"] for r in mine)
            if last is not None and first <= last:
                problems.append(f"{name}: stage {need.stage} {need.role} GPUs run in bucket {first}, before the gang "
                                f"before them has finished (bucket {last})")
            last = max(r["bucket"] for r in mine)
    return problems


def _replay_gang(pdata, name: str, window, need: GangNeed, rows: list[dict], sigma: float, events: list,
                 starts: dict, partner_starts: dict | None) -> list[str]:
    """One gang's rows: held together, in its window after its lead time, within each bucket (a rollout gang at its
    training gang's times, ``partner_starts``), and the work it needs done; events appended."""
    H, problems = pdata.bucket_hours, []
    by_bucket: dict[int, list[dict]] = {}
    for row in rows:
        by_bucket.setdefault(row["bucket"], []).append(row)
    done = {"spot": 0.0, "other": 0.0}
    for b, in_b in sorted(by_bucket.items()):
        if not window.release_bucket <= b <= window.deadline_bucket:
            problems.append(f"{name}: runs in bucket {b}, outside its window {window.release_bucket}..{window.deadline_bucket}")
        if b * H < window.release_bucket * H + need.lead_hours * (1 - 1e-12):
            problems.append(f"{name}: runs in bucket {b} before its lead time of {need.lead_hours:.1f} h has passed")
        t = b * H
        for row in sorted(in_b, key=lambda r: TIER_ORDER.index(r["tier"])):
            if pdata.pool_of(row) != need.gpu or row["gpus"] != need.count:
                problems.append(f"{name}: bucket {b} holds {row['gpus']} × {pdata.pool_of(row)}, its stage {need.stage} "
                                f"{need.role} GPUs are {need.count} × {need.gpu} together")
            start = t
            if partner_starts is not None:
                if (b, row["tier"]) not in partner_starts or abs(partner_starts[b, row["tier"]][1] - row["hours"]) > \
                        RELATIVE_TOLERANCE * max(1.0, row["hours"]):
                    problems.append(f"{name}: stage {need.stage} {need.role} GPUs run {row['hours']:.6g} h on {row['tier']} "
                                    f"in bucket {b}, not with their training GPUs")
                start = partner_starts.get((b, row["tier"]), (t, 0.0))[0]
            starts[b, row["tier"]] = (start, row["hours"])
            pool = (row.get("provider"), row.get("region"), row["gpu"], row["tier"])
            # an end past the bucket by a solver tolerance is clipped (and flagged below when it is more)
            events.append((start, 1, row["gpus"], pool, b, name))
            events.append((min(start + row["hours"], (b + 1) * H), -1, row["gpus"], pool, b, name))
            t += row["hours"]
            done["spot" if row["tier"] == "spot" else "other"] += row["gpus"] * row["hours"]
        if t > (b + 1) * H * (1 + RELATIVE_TOLERANCE) + RELATIVE_TOLERANCE:
            problems.append(f"{name}: {t - b * H:.6g} h of work in bucket {b}, longer than the bucket's {H:g} h")
    need_other, need_spot = need.gpu_hours(sigma)
    for kind, want in (("other", need_other), ("spot", need_spot)):
        if done[kind] < want * (1 - RELATIVE_TOLERANCE) - RELATIVE_TOLERANCE:
            problems.append(f"{name}: {done[kind]:.6g} {'spot' if kind == 'spot' else 'reserved and on-demand'} "
                            f"GPU-hours of stage {need.stage} {need.role} GPUs run by its deadline, its plan needs {want:.6g}")
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
