"""A brute-force oracle for tiny portfolios, written apart from the MIP, and the tiny portfolios.

Every discrete choice is enumerated: each job's plan (every plan of its plan space, any layer:
stages, candidate students, retention, rollout GPUs, a trained teacher; ``planopt.oracles.by_plan``,
scored by the single-job evaluator) and, for a fixed plan, each of its gangs' sets of (bucket, tier)
slots in which it holds its whole GPU count (gang scheduling; ``models/cost/gangs.py`` lists a plan's
gangs). A stage's training and rollout GPUs are one *element* holding both pools in each slot; a
job's elements (its teacher's, then its stages) run in order, each in buckets after the last of the one
before. For a fixed plan and slot sets the rest is a small LP per element in *fractions of its
compute hours* per slot -- a different parameterisation from the MIP's GPU-hours -- handed straight to
HiGHS (highspy, no Pyomo): least cost, all the work done, at most ``H`` wall hours in each bucket. Jobs
only interact through the GPUs they hold at once, so the slot sets of all jobs are combined by
counting: the on-demand and spot GPUs held in a bucket within the availability, and the reservation
the least that covers the reserved GPUs held in any bucket (paid for the whole horizon).

With ``reserved_start_buckets`` a GPU type's reservation is a set of contracts, one per
start bucket: the oracle enumerates every vector of whole nodes per start
(``least_contract_cost``) and keeps the cheapest whose nodes in force in each bucket
cover the reserved GPUs held there, each contract paid from its start.
"""

from __future__ import annotations

import copy
import itertools
import math
import random

import highspy
import numpy as np

from planopt.models.cost.evaluator import Evaluator
from planopt.models.cost.gangs import plan_gangs
from planopt.instance import parse_instance
from planopt.oracles.by_plan import every_plan

GPUS = {"H100-SXM": 1.87, "A100-80GB": 1.79, "L40S": 1.86}  # $/GPU-hour, the scale of the random prices


def job_plans(ev: Evaluator):
    """(plan, metrics) of every plan that meets the job's own limits."""
    out = []
    for plan, own in every_plan(ev.inst):
        m = own.plan_metrics(plan)
        if m.feasible:
            out.append((plan, m))
    return out


def elements(ev: Evaluator, plan, preempt) -> list[list]:
    """The plan's gangs grouped into elements (a gang and its rollout partner), in the order they run."""
    needs = plan_gangs(ev, plan, preempt)
    out: list[list] = []
    for n, need in enumerate(needs):
        if need.partner is None:
            out.append([need])
        else:
            next(e for e in out if e[0] is needs[need.partner]).append(need)
    return out


def element_slots(pdata, j, element, od_avail=None):
    """(bucket, tier, compute hours per bucket hour, USD per compute hour, {pool: GPUs held}) where an element may run:
    every pool it holds has the tier there (reserved GPUs arrived and reservable, on-demand and spot GPUs for
    its whole count), after its lead time."""
    od_avail = od_avail or pdata.od_avail
    lead, first = element[0].lead_hours, element[0]
    H, job = pdata.bucket_hours, pdata.portfolio.jobs[j]
    slots = []
    for b in range(job.release_bucket, job.deadline_bucket + 1):
        if lead > (b - job.release_bucket) * H * (1 + 1e-12):
            continue
        for k in ("reserved", "on_demand", "spot"):
            ok = True
            for need in element:
                g, n = need.gpu, need.count
                cap, node = pdata.gpu[g].max_reserved_gpus, pdata.node_gpus[g]
                if k == "reserved":
                    ok &= (cap is None or cap // node * node >= n) and b >= pdata.reserved_from[g]
                elif k == "on_demand":
                    ok &= od_avail[g][b] >= n
                else:
                    ok &= pdata.spot_avail[g][b] >= n
            if not ok:
                continue
            o = first.spot_overhead if k == "spot" else first.overhead
            usd = 0.0 if k == "reserved" else sum(
                need.count * (1 + o) * (pdata.od_price if k == "on_demand" else pdata.spot_price)[need.gpu][b] for need in element)
            if k == "spot":
                usd += first.usd_per_train_hour_other * (first.spot_overhead - first.overhead)
            slots.append((b, k, 1.0 / (1 + o), usd, {need.gpu: need.count for need in element}))
    return slots


def slot_set_cost(slots, T, H, spot_cap=None, weight=0.0):
    """Least cost of running an element's ``T`` compute hours on the given slots (None if it does not fit);
    ``spot_cap``: bucket -> most preemption-weighted spot GPU-hours there (``weight`` per wall hour)."""
    if not slots:
        return None
    if T <= 0:
        return 0.0
    buckets = sorted({s[0] for s in slots})
    capped = [c for c, s in enumerate(slots) if s[1] == "spot" and spot_cap and s[0] in spot_cap]
    A = np.zeros((1 + len(buckets) + len(capped), len(slots)))
    A[0, :] = 1.0
    for c, (b, _, rate, _, _) in enumerate(slots):
        A[1 + buckets.index(b), c] = T / rate          # wall hours of the whole element in the slot
    for r, c in enumerate(capped):
        A[1 + len(buckets) + r, c] = weight * T / slots[c][2]
    lower = np.concatenate([[1.0], np.full(len(buckets) + len(capped), -np.inf)])
    upper = np.concatenate([[1.0], np.full(len(buckets), H), [spot_cap[slots[c][0]] for c in capped]])
    return _lp_min(np.array([s[3] * T for s in slots]), A, lower, upper)


def element_options(pdata, j, element, od_avail=None, spot_cap=None):
    """(held {(bucket, pool, tier): GPUs}, buckets, cost) of every slot set of an element that is not dominated by a
    subset (``spot_cap``: (job, bucket) -> most preemption-weighted spot GPU-hours there)."""
    slots = element_slots(pdata, j, element, od_avail)
    caps = {b: v for (jj, b), v in (spot_cap or {}).items() if jj == j}
    weight = sum(need.count * pdata.preempt[need.gpu] for need in element)
    T = element[0].compute_hours
    options = []
    for size in range(1, len(slots) + 1):
        for subset in itertools.combinations(slots, size):
            held_slots = frozenset((s[0], s[1]) for s in subset)
            cost = slot_set_cost(list(subset), T, pdata.bucket_hours, caps, weight)
            if cost is None or any(o <= held_slots and c <= cost + 1e-9 for o, _, c in options):
                continue
            options.append((held_slots, subset, cost))
    return [({(b, g, k): n for (b, k, _, _, pools) in subset for g, n in pools.items()},
             {b for b, _ in held_slots}, cost) for held_slots, subset, cost in options]


def job_options(pdata, j, ev, plan, od_avail=None, spot_cap=None):
    """(held {(bucket, pool, tier): GPUs}, cost) of every schedule of a plan's elements, in order."""
    per = [element_options(pdata, j, e, od_avail, spot_cap) for e in elements(ev, plan, pdata.preempt)]
    out = []
    for combo in itertools.product(*per):
        last, ok, held, cost = -1, True, {}, 0.0
        for h, buckets, c in combo:
            if buckets and min(buckets) <= last:
                ok = False
                break
            last = max(buckets) if buckets else last
            for key, n in h.items():
                held[key] = held.get(key, 0) + n
            cost += c
        if ok:
            out.append((held, cost))
    return out


def best_portfolio_cost(pdata, od_avail=None, spot_cap=None) -> float | None:
    """The least total cost over every plan and every set of held slots of every job (None: infeasible);
    ``od_avail`` replaces the on-demand GPUs per type and bucket, ``spot_cap`` caps the preemption-weighted spot
    GPU-hours (sum of p_g x GPU-hours) per (job, bucket)."""
    od_avail = od_avail or pdata.od_avail
    evs = [Evaluator(inst) for inst in pdata.instances]
    per_job = []
    for j, ev in enumerate(evs):
        choices = []
        for plan, metrics in job_plans(ev):
            needs = plan_gangs(ev, plan, pdata.preempt)
            noncompute = metrics.cost_usd - sum(n.gpu_usd_at_instance_prices() for n in needs)
            choices.extend((noncompute + cost, held) for held, cost in job_options(pdata, j, ev, plan, od_avail, spot_cap))
        per_job.append(choices)
    best = None
    budget = pdata.portfolio.budget_usd
    for combo in itertools.product(*per_job):
        total = sum(c for c, _ in combo)
        if best is not None and total >= best:
            continue
        held: dict = {}
        for _, slots in combo:
            for key, n in slots.items():
                held[key] = held.get(key, 0) + n
        ok = True
        reserve: dict = {}
        by_bucket: dict = {}   # later starts: GPU type -> bucket -> reserved GPUs held
        for (b, g, k), count in held.items():
            if k == "reserved" and pdata.gpu[g].reserved_start_buckets is not None:
                by_bucket.setdefault(g, {})[b] = count
            elif k == "reserved":
                reserve[g] = max(reserve.get(g, 0), count)
            elif count > (od_avail[g][b] if k == "on_demand" else pdata.spot_avail[g][b]):
                ok = False
        for g, count in reserve.items():
            count = -(-count // pdata.node_gpus[g]) * pdata.node_gpus[g]   # whole nodes
            cap = pdata.gpu[g].max_reserved_gpus
            ok = ok and (cap is None or count <= cap)
            total += pdata.reserved_price[g] * pdata.committed_hours[g] * count
        for g, need in by_bucket.items():
            cost = least_contract_cost(pdata, g, need)
            ok = ok and cost is not None
            total += cost or 0.0
        if not ok or (budget is not None and total > budget * (1 + 1e-9)):
            continue
        if best is None or total < best:
            best = total
    return best


def least_contract_cost(pdata, g, need: dict) -> float | None:
    """The cheapest contracts of type ``g`` (whole nodes signed in each of its start buckets, in force
    from start + lead to the horizon's end, paid for their term(s) from the start) whose GPUs in
    force in each bucket ``b`` cover ``need[b]``, by enumeration (None: no such contracts)."""
    spec = pdata.gpu[g]
    node, lead, cap = pdata.node_gpus[g], spec.reserved_lead_buckets, spec.max_reserved_gpus
    starts = sorted(spec.reserved_start_buckets)
    most = -(-max(need.values()) // node)   # no contract needs more nodes than the largest need
    best = None
    for nodes in itertools.product(range(most + 1), repeat=len(starts)):
        if cap is not None and node * sum(nodes) > cap:
            continue
        if any(node * sum(x for s, x in zip(starts, nodes) if s + lead <= b) < count for b, count in need.items()):
            continue
        hours = [pdata.bucket_hours * (len(pdata.buckets) - s) for s in starts]
        if spec.reserved_term:
            from planopt.models.catalog.prices import TERM_HOURS
            term = TERM_HOURS[f"reserved_{spec.reserved_term}"]
            hours = [term * math.ceil(h / term - 1e-9) for h in hours]
        cost = sum(pdata.reserved_price[g] * h * node * x for h, x in zip(hours, nodes))
        if best is None or cost < best:
            best = cost
    return best


def _lp_min(cost, A, lower, upper):
    """min cost·x s.t. lower <= A x <= upper, x >= 0, by HiGHS's LP solver (None if infeasible)."""
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)  # HiGHS has one global scheduler: every instance must ask for the same threads
    inf = highspy.kHighsInf
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = A.shape[1], A.shape[0]
    lp.col_cost_ = cost
    lp.col_lower_, lp.col_upper_ = np.zeros(A.shape[1]), np.full(A.shape[1], inf)
    lp.row_lower_ = np.where(np.isfinite(lower), lower, -inf)
    lp.row_upper_ = upper
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    starts, index, value = [0], [], []
    for row in A:
        nz = np.nonzero(row)[0]
        index.extend(nz.tolist())
        value.extend(row[nz].tolist())
        starts.append(len(index))
    lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = starts, index, value
    lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = A.shape[1], A.shape[0]
    h.passModel(lp)
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    return h.getInfo().objective_function_value



def tiny_job(rng: random.Random, name: str) -> dict:
    method = rng.choice(["sft", "rl", "opd"])
    job = {
        "name": name, "student": {"preset": rng.choice(["Qwen3-0.6B", "Qwen3-1.7B"])},
        "task": {"baseline_score": 30.0, "general_score_baseline": 70.0, "prompt_tokens": 200,
                 "response_tokens": rng.choice([500, 1500]), "max_response_tokens": 4096, "prompts_available": 20000},
        "training": {"methods": {method: {"steps_options": sorted(rng.sample([100, 300, 1000], 2)), "prompts_per_step": 64}},
                     "phases": 1, "samples_per_prompt_options": [4]},
        # a portfolio job's entries are GPU types the portfolio prices; read alone, at gpus.json's reference prices
        "hardware": {"gpus": [{"name": g, "counts": sorted(rng.sample([1, 2, 4], rng.randint(1, 2)))} for g in GPUS],
                     "offers": "reference"},
        "checkpointing": {"interval_minutes_options": sorted(rng.sample([15, 60, 240], 2))},
        "reliability": {"failures_per_gpu_hour": rng.choice([2e-5, 2e-3])},
        "operations": {"fixed_usd": 100, "usd_per_wall_hour": rng.choice([0, 20])},
    }
    if method == "sft":
        job["sft_data"] = {"examples_available": rng.choice([0, 100000]), "usd_per_labeled_example": 0.1,
                           "labeled_examples_per_day": rng.choice([20000, 2000000]), "example_tokens": 1000}
    if method == "opd":
        job["teacher"] = {"architecture": {"preset": "Qwen3-8B"}, "score": 60.0}
    return job



def tiny_portfolio(seed: int) -> dict:
    """2 jobs, 2 buckets, 1-2 GPU types, tiny option lists; buckets sized to the jobs' run times."""
    rng = random.Random(seed)
    gpus = rng.sample(sorted(GPUS), rng.randint(1, 2))
    jobs = [tiny_job(rng, f"j{k}") for k in range(2)]
    for job in jobs:  # restrict to the portfolio's types, then a target some plans miss
        job["hardware"]["gpus"] = [o for o in job["hardware"]["gpus"] if o["name"] in gpus]
        ev = Evaluator(parse_instance(job))
        qualities = sorted({ev.recipe(r).quality for r in ev.space()[0]})
        job["constraints"] = {"min_quality": qualities[rng.randrange(len(qualities))] - 1e-6}
    ev0 = Evaluator(parse_instance(jobs[0]))
    recipes, hardware, _ = ev0.space()
    hours = [ev0.metrics(r, hardware[0], 60.0).wall_hours for r in recipes]
    bucket_hours = max(0.5, round(sorted(hours)[len(hours) // 2] * rng.uniform(0.3, 1.5), 3))
    entries = []
    for g in gpus:
        e = {"name": g, "reserved_usd_per_gpu_hour": round(GPUS[g] * rng.uniform(0.4, 0.8), 3),
             "on_demand_usd_per_gpu_hour": [round(GPUS[g] * rng.uniform(0.9, 1.2), 3) for _ in range(2)],
             "on_demand_available_gpus": [rng.choice([0, 1, 2, 4, 4]) for _ in range(2)]}
        if rng.random() < 0.6:
            e.update({"spot_usd_per_gpu_hour": round(GPUS[g] * 0.4, 3), "spot_available_gpus": [rng.choice([0, 2, 4]) for _ in range(2)],
                      "spot_preemptions_per_gpu_hour": rng.choice([0.0, 0.01, 0.05])})
        entries.append(e)
    windows = rng.choice([((0, 1), (0, 1)), ((0, 0), (0, 1)), ((0, 1), (1, 1))])
    nodes = random.Random(seed + 1000)  # a stream of its own: the draws above stay as they were
    for e in entries:  # reservations in whole nodes of 1, 2 or 4 GPUs, arriving in bucket 0 or 1
        e["node_gpus"] = nodes.choice([1, 2, 4])
        e["reserved_lead_buckets"] = nodes.choice([0, 0, 1])
    return {"kind": "portfolio", "name": f"tiny-{seed}", "horizon": {"buckets": 2, "bucket_hours": bucket_hours},
            "gpus": entries, "jobs": [{"instance": j, "release_bucket": w[0], "deadline_bucket": w[1]} for j, w in zip(jobs, windows)]}



def later_portfolio(seed: int) -> dict:
    """A tiny portfolio whose reservations may also be signed later (``reserved_start_buckets``):
    buckets 0 and 1 with no lead time, bucket 0 with a lead of one bucket (the contract then
    arrives in bucket 1; signing in bucket 1 would arrive past the horizon)."""
    p = tiny_portfolio(seed)
    for e in p["gpus"]:
        e["reserved_start_buckets"] = [0, 1] if e["reserved_lead_buckets"] == 0 else [0]
    return p


def later3_portfolio(seed: int) -> dict:
    """``tiny_portfolio`` over 3 buckets (bucket 2 repeats bucket 1's prices and availability, each
    deadline one bucket later) with contracts signed in any bucket whose GPUs arrive in the horizon:
    a later contract's lead time then matters (signed in 1, arriving in 2)."""
    p = tiny_portfolio(seed)
    p["name"] = f"later3-{seed}"
    p["horizon"]["buckets"] = 3
    for e in p["gpus"]:
        for k, v in list(e.items()):
            if isinstance(v, list) and len(v) == 2:
                e[k] = v + [v[1]]
        e["reserved_start_buckets"] = [s for s in range(3) if s + e["reserved_lead_buckets"] < 3]
    for j in p["jobs"]:
        j["deadline_bucket"] += 1
    return p


def twin_portfolio(seed: int) -> dict:
    """A tiny portfolio whose second job repeats the first (same instance and window), so that
    the symmetry-breaking order of identical jobs is in force."""
    p = tiny_portfolio(seed)
    first = p["jobs"][0]
    twin = copy.deepcopy(first)
    twin["instance"]["name"] = first["instance"]["name"] + "-twin"
    p["jobs"] = [first, twin]
    return p



def close(a, b, rel=1e-6):
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-6)


def replay_one_scenario(pdata, result: dict, uniform, od_gpus) -> tuple[float, list[float]]:
    """A schedule replayed in one capacity scenario, scalar by scalar (the brute-force twin of
    ``portfolio_risk.schedule_risk``): (cost in USD, GPU-hours left after each job's deadline).
    ``uniform[j][b]``: the preemption uniform of job j in bucket b; ``od_gpus[g][b]``: on-demand
    GPUs obtainable, g the index of the GPU type. The recourse rule is the module's docstring's, gang by
    gang: each (stage, role) of a job on its own pool; a stage's training and rollout GPUs on spot are
    preempted together, at the rate of both."""
    H = pdata.bucket_hours
    jobs = result["jobs"]
    cost = sum(r["commitment_usd"] for r in result["procurement"] if r["tier"] == "reserved")
    cost += sum(job["metrics"]["noncompute_usd"] for job in jobs)
    units = []   # (job, rows of one gang)
    for j, job in enumerate(jobs):
        by: dict = {}
        for row in job["schedule"]:
            by.setdefault((row.get("stage", 1), row.get("role", "training")), []).append(row)
        for key in by:
            units.append((j, key, by[key]))

    def rate(j, key, g):   # the gang's preemption rate with its bundle partner (same stage, same side)
        side = "teacher" if key[1].startswith("teacher") else "student"
        total = 0.0
        for jj, other, rows in units:
            if jj == j and other[0] == key[0] and ("teacher" if other[1].startswith("teacher") else "student") == side:
                total += rows[0]["gpus"] * pdata.preempt[pdata.pool_of(rows[0])]
        return total

    backlog = [0.0] * len(units)
    late = [0.0] * len(jobs)
    for b in range(len(pdata.buckets)):
        reserved = {g: 0 for g in pdata.gpus}
        for r in result["procurement"]:
            if r["tier"] == "reserved" and r["start_bucket"] <= b <= r["end_bucket"]:
                reserved[pdata.pool_of(r)] += r["gpus"]
        od = {g: od_gpus[k][b] for k, g in enumerate(pdata.gpus)}
        used = [0.0] * len(units)          # hours of the bucket each gang has run
        holds = [set() for _ in units]     # tiers each gang holds in the bucket
        for u, (j, key, rows) in enumerate(units):
            for row in rows:
                if row["bucket"] == b and row["tier"] == "reserved":
                    reserved[pdata.pool_of(row)] -= row["gpus"]
                    holds[u].add("reserved")
                    used[u] += row["hours"]
        for u, (j, key, rows) in enumerate(units):
            for row in rows:
                if row["bucket"] != b or row["tier"] != "on_demand":
                    continue
                if od[pdata.pool_of(row)] >= row["gpus"]:
                    od[pdata.pool_of(row)] -= row["gpus"]
                    holds[u].add("on_demand")
                    used[u] += row["hours"]
                    cost += row["gpu_hours"] * pdata.od_price[pdata.pool_of(row)][b]
                else:
                    backlog[u] += row["gpus"] * row["hours"]
            for row in rows:
                if row["bucket"] != b or row["tier"] != "spot":
                    continue
                r_ = rate(j, key, pdata.pool_of(row))
                first = -math.log(uniform[j][b]) / r_ if r_ > 0 else math.inf
                ran = min(row["hours"], first)
                used[u] += ran
                cost += row["gpus"] * ran * pdata.spot_price[pdata.pool_of(row)][b]
                backlog[u] += row["gpus"] * (row["hours"] - ran)
        for u in sorted(range(len(units)), key=lambda u: (jobs[units[u][0]]["deadline_bucket"], units[u][0], u)):
            j, key, rows = units[u]
            job = jobs[j]
            if not (job["release_bucket"] <= b <= job["deadline_bucket"]) or backlog[u] <= 0:
                continue
            g, n = pdata.pool_of(rows[0]), rows[0]["gpus"]
            for tier in ("reserved", "on_demand"):
                room = max(0.0, H - used[u]) * n
                if backlog[u] <= 0 or room <= 0:
                    continue
                pool = reserved if tier == "reserved" else od
                if tier not in holds[u]:
                    if pool[g] < n:
                        continue
                    pool[g] -= n
                    holds[u].add(tier)
                run = min(backlog[u], room)
                backlog[u] -= run
                used[u] += run / n
                if tier == "on_demand":
                    cost += run * pdata.od_price[g][b]
        for j, job in enumerate(jobs):
            if b == job["deadline_bucket"]:
                late[j] = sum(backlog[u] for u, unit in enumerate(units) if unit[0] == j)
    return cost, late


def best_chance_cost(pdata, scen, confidence: float) -> float | None:
    """The least cost of a schedule undisrupted in at least ceil(C S) of the scenarios, by brute force:
    every set of that many scenarios, the portfolio with the on-demand GPUs obtainable in all of
    them and each job's spot GPU-hours per bucket within its least room before a preemption."""
    S = scen.scenarios
    need = math.ceil(confidence * S - 1e-9)
    best, seen = None, set()
    for covered in itertools.combinations(range(S), need):
        od = {g: [min([pdata.od_avail[g][b]] + [float(scen.on_demand_gpus[s, k, b]) for s in covered])
                  for b in pdata.buckets] for k, g in enumerate(pdata.gpus)}
        cap = {}
        for j in range(len(pdata.instances)):
            for b in pdata.buckets:
                if covered and any(pdata.preempt[g] > 0 for g in pdata.gpus):
                    cap[j, b] = min(-math.log(scen.preemption_uniform[s, j, b]) for s in covered)
        key = (tuple((g, tuple(v)) for g, v in sorted(od.items())), tuple(sorted(cap.items())))
        if key in seen:
            continue
        seen.add(key)
        cost = best_portfolio_cost(pdata, od, cap)
        if cost is not None and (best is None or cost < best):
            best = cost
    return best


def offers_portfolio(seed: int) -> dict:
    """``tiny_portfolio`` with each GPU type that two providers of the price catalog sell offered by
    both (``gpus`` listing the type twice): prices, availability, node size and interconnect drawn
    per offer, so which provider each job runs on and which one to reserve is the MIP's decision. The
    first offer of a type links nodes by InfiniBand, the second by InfiniBand or ethernet (an
    ethernet offer holds a job on one node: its larger counts are out there)."""
    from planopt.models.catalog.prices import offers, providers
    p = tiny_portfolio(seed)
    p["name"] = f"offers-{seed}"
    rng = random.Random(seed + 2000)  # a stream of its own: tiny_portfolio's draws stay as they were
    entries = []
    for e in p["gpus"]:
        sellers = [s for s in providers() if offers(s, e["name"])]
        if len(sellers) < 2:
            entries.append(e)
            continue
        for k, seller in enumerate(rng.sample(sellers, 2)):
            f = copy.deepcopy(e)
            f["provider"] = seller
            f["interconnect"] = "infiniband" if k == 0 else rng.choice(["infiniband", "ethernet"])
            f["node_gpus"] = rng.choice([1, 2, 4])
            f["reserved_usd_per_gpu_hour"] = round(e["reserved_usd_per_gpu_hour"] * rng.uniform(0.7, 1.3), 3)
            f["on_demand_usd_per_gpu_hour"] = [round(v * rng.uniform(0.7, 1.3), 3) for v in e["on_demand_usd_per_gpu_hour"]]
            f["on_demand_available_gpus"] = [rng.choice([0, 1, 2, 4, 4]) for _ in range(2)]
            if "spot_usd_per_gpu_hour" in e:
                f["spot_usd_per_gpu_hour"] = round(e["spot_usd_per_gpu_hour"] * rng.uniform(0.7, 1.3), 3)
            entries.append(f)
    p["gpus"] = entries
    return p



# --- the checks the portfolio tests share ---------------------------------------
def assert_optimum_is(res, oracle) -> bool:
    """A solve's result against the brute-force optimum ``oracle`` (None: no schedule exists);
    True when there is a schedule left to check."""
    if oracle is None:
        assert res.status == "infeasible", (res.status, res.cost_usd)
        return False
    assert res.status == "optimal", res.message
    assert close(res.cost_usd, oracle), (res.cost_usd, oracle)
    assert close(res.mip_cost_usd, res.cost_usd)          # the MIP's objective is the evaluated cost
    return True


def solved_at_the_brute_force(p: dict):
    """Solve ``p`` to a gap of 1e-9 and hold it to the brute force (``assert_optimum_is``) with no violation or
    big-M breach; (portfolio data, result), or None when no schedule exists (the solve said so)."""
    from planopt.portfolio.solve import load_portfolio, solve_portfolio
    pdata = load_portfolio(p)
    oracle = best_portfolio_cost(pdata)
    res = solve_portfolio(p, rel_gap=1e-9)
    if not assert_optimum_is(res, oracle):
        return None
    assert res.violations == [] and res.big_m_breaches == [], (res.violations, res.big_m_breaches)
    return pdata, res


def assert_time_limited_path_matches_brute_force(p: dict) -> None:
    """With a time limit the solve also runs column generation, the integer master, branching on a
    reservation and, when the Lagrangian bound proves the gap, skips the MIP proper: the schedule
    must still be the oracle's optimum and every bound at most it (a bound above the optimum would
    end the search on a worse schedule)."""
    from planopt.portfolio.solve import PortfolioModel, load_portfolio
    oracle = best_portfolio_cost(load_portfolio(p))
    pm = PortfolioModel(p)
    res = pm.solve(rel_gap=1e-9, time_limit=120.0)
    if not assert_optimum_is(res, oracle):
        return
    assert res.bound_usd is not None and res.bound_usd <= oracle * (1 + 1e-6) + 1e-6, (res.bound_usd, oracle)
    if pm.lagrange is not None and pm.lagrange.bound_usd > -float("inf"):
        assert pm.lagrange.bound_usd <= oracle * (1 + 1e-6) + 1e-6, (pm.lagrange.bound_usd, oracle)
    if pm.twin_bound is not None:   # the plain twin's, of a portfolio with layered jobs (``start_from_plain_jobs``)
        assert pm.twin_bound <= oracle * (1 + 1e-6) + 1e-6, (pm.twin_bound, oracle)
    assert res.violations == [] and res.big_m_breaches == []


def assert_risk_equals_brute_force(source: dict, scenarios: int, seed: int) -> None:
    """The least-cost schedule of ``source`` replayed in ``scenarios`` capacity scenarios (seed ``seed``): the
    vectorised replay equals ``replay_one_scenario``, scenario by scenario (skipped when no schedule exists)."""
    import pytest
    from planopt.portfolio.solve import load_portfolio, solve_portfolio
    from planopt.portfolio.risk import draw, schedule_risk
    res = solve_portfolio(source, rel_gap=1e-9)
    if not res.jobs:
        pytest.skip("infeasible tiny portfolio")
    pdata, out = load_portfolio(source), res.to_dict()
    scen = draw(pdata, scenarios, seed)
    risk = schedule_risk(pdata, out, scen)
    for s in range(scen.scenarios):
        cost, late = replay_one_scenario(pdata, out, scen.preemption_uniform[s], scen.on_demand_gpus[s])
        assert math.isclose(risk.cost_usd[s], cost, rel_tol=1e-9, abs_tol=1e-9)
        assert np.allclose(risk.late_gpu_hours[s], late, rtol=1e-9, atol=1e-9)
        assert list(risk.meets[s]) == [x <= 1e-6 * max(1.0, sum(r["gpu_hours"] for r in job["schedule"]))
                                        for x, job in zip(late, out["jobs"])]


def with_shortfall(p: dict, seed: int) -> dict:
    """The portfolio with a random on-demand shortfall on every GPU type, and spot preempted often."""
    rng = random.Random(seed)
    p = copy.deepcopy(p)
    for g in p["gpus"]:
        g["on_demand_shortfall_probability_per_bucket"] = [rng.choice([0.0, 0.3, 0.7]) for _ in range(p["horizon"]["buckets"])]
        g["on_demand_shortfall_share"] = rng.choice([0.25, 0.5, 1.0])
        if "spot_preemptions_per_gpu_hour" in g:
            g["spot_preemptions_per_gpu_hour"] = rng.choice([0.05, 0.5])
    return p


def one_job_portfolio(gpu_entry: dict, counts=(8,), buckets=2, bucket_hours=48.0) -> dict:
    """One tiny job (``tiny_job``) on one GPU entry of a portfolio of ``buckets`` buckets."""
    job = tiny_job(random.Random(3), "j")
    job["hardware"]["gpus"] = [{"name": gpu_entry["name"], "counts": list(counts)}]
    job.pop("constraints", None)
    return {"kind": "portfolio", "name": "catalog", "horizon": {"buckets": buckets, "bucket_hours": bucket_hours},
            "gpus": [gpu_entry], "jobs": [{"instance": job, "release_bucket": 0, "deadline_bucket": buckets - 1}]}
