"""Tiny portfolios whose first job switches the plan model's layers on at random (issue 23 item 3): stages, a
choice of student, retention, separate rollout GPUs, asynchronous RL, a trained teacher, environment pools and
continued pre-training (``layered_instances.layered_job_dict``), next to a plain tiny job sharing its GPU type; three buckets, so that
a job's gangs (its teacher's, then its stages) can run one after another. Small enough for the brute-force
oracle of ``portfolio_oracle`` to list every plan and every schedule."""

from __future__ import annotations

import copy
import json
import random

from planopt.instance import parse_instance
from planopt.models.cost.evaluator import Evaluator
from planopt.models.catalog import find_gpu
from planopt.oracles.by_plan import all_plans, space_size

from tests.support.layered_instances import layered_job_dict
from tests.support.portfolio_oracle import tiny_job

MAX_PLANS = 40    # the layered job's plans: the oracle lists every schedule of each
BUCKETS = 3


def _types(d: dict) -> list[str]:
    """Every GPU type the job lists: training, rollout and a trained teacher's own."""
    names = [g["name"] for g in d["hardware"]["gpus"]] + [g["name"] for g in d["hardware"].get("rollout_gpus", [])]
    teacher = (d.get("teacher") or {}).get("training") or {}
    names += [g["name"] for g in teacher.get("gpus") or []]
    return list(dict.fromkeys(names))


def _reference_price(d: dict, name: str) -> float:
    """gpus.json's on-demand reference price of a GPU type (what ``hardware.offers: reference`` prices it at)."""
    return find_gpu(name).price_on_demand_usd_per_gpu_hour


def layered_job(seed: int) -> tuple[dict, set[str]] | None:
    """``layered_job_dict(seed, 2)`` with some plan within its own limits, its option lists cut to at most
    ``MAX_PLANS`` plans (``_cut_to_size``), or None; where the precision layer leaves no such job, the seed's job
    without it (so the layer adds seeds' cases and takes none away: the seeds the tests name keep their layers)."""
    drawn = layered_job_dict(seed, max_stages=2)
    made = _narrowed(seed, drawn)
    if made is None and drawn is not None and "async_opd" in drawn[1]:
        drawn = layered_job_dict(seed, max_stages=2, async_opd=False)
        made = _narrowed(seed, drawn)
    if made is None and drawn is not None and "precision" in drawn[1]:
        made = _narrowed(seed, layered_job_dict(seed, max_stages=2, precision=False, async_opd=False))
    return made


def _narrowed(seed: int, made: tuple[dict, set[str]] | None) -> tuple[dict, set[str]] | None:
    """``layered_job``'s narrowing of one drawn job, or None."""
    if made is None:
        return None
    d, on = made
    rng = random.Random(650_000 + seed)
    if "stages" in on and rng.random() < 0.6:   # the plan must run its stages one after another
        d["training"]["stage_sequences"] = [q for q in d["training"]["stage_sequences"] if len(q) > 1]
    if "teacher" in on and "stages" not in on and rng.random() < 0.6:   # the plan must train its teacher first
        d["training"]["methods"] = {"opd": d["training"]["methods"]["opd"]}
        d["training"].pop("stage_sequences", None)
    d["objective"] = "cost"
    d["hardware"]["offers"] = "reference"
    d.pop("constraints", None)
    try:
        inst = parse_instance(d)
    except ValueError:
        return None   # a layer the narrowing left without meaning (asynchronous RL without RL)
    if "cpt" in on and space_size(inst) > MAX_PLANS:   # continued pre-training only where the oracle still lists it
        d, on = {k: v for k, v in d.items() if k != "continued_pretraining"}, on - {"cpt"}
        inst = parse_instance(d)
    if space_size(inst) > MAX_PLANS:   # narrow its option lists until the oracle can list every schedule
        inst = _cut_to_size(d)
        if inst is None:
            return None
    if not any(sp.feasible for sp in all_plans(inst)):
        return None
    return d, on


# The option lists ``_cut_to_size`` may cut (none of them switches a layer off: staleness, adapters, stage sequences,
# retention tiers and pools stay).
NARROWABLE = (("checkpointing", "interval_minutes_options"), ("training", "samples_per_prompt_options"),
              ("training", "methods", "sft", "steps_options"), ("training", "methods", "rl", "steps_options"),
              ("training", "methods", "opd", "steps_options"), ("retention", "keep_last_options"),
              ("teacher", "precision_options"), ("sft_data", "external_data_share_options"),
              ("teacher", "training", "methods", "rl", "steps_options"),
              ("teacher", "training", "methods", "sft", "steps_options"), ("candidate_students",))


def _cut_to_size(d: dict):
    """Cut the last entry of the longest of ``d``'s ``NARROWABLE`` lists (or of a GPU's counts) until its plan space
    has at most ``MAX_PLANS`` plans; the parsed instance, or None when no cut is left."""
    while True:
        lists = [_at(d, path) for path in NARROWABLE]
        lists += [g["counts"] for g in d["hardware"]["gpus"] + d["hardware"].get("rollout_gpus", [])]
        lists = [x for x in lists if isinstance(x, list) and len(x) > 1]
        if not lists:
            return None
        max(lists, key=len).pop()
        try:
            inst = parse_instance(d)
        except ValueError:
            return None
        if space_size(inst) <= MAX_PLANS:
            return inst


def _at(d: dict, path: tuple):
    for key in path:
        if not isinstance(d, dict) or key not in d:
            return None
        d = d[key]
    return d


def layered_portfolio(seed: int) -> tuple[dict, set[str]] | None:
    """(a portfolio of the layered job and a plain tiny job over ``BUCKETS`` buckets, the layers on), or None when
    the seed draws no usable layered job."""
    made = layered_job(seed)
    if made is None:
        return None
    d, on = made
    rng = random.Random(600_000 + seed)
    types = _types(d)
    ev = Evaluator(parse_instance(d))
    walls = sorted(sp.metrics.wall_hours for sp in all_plans(ev.inst) if sp.feasible)
    bucket_hours = max(0.5, round(walls[len(walls) // 2] * rng.uniform(0.6, 1.5), 3))
    rollout = {g["name"] for g in d["hardware"].get("rollout_gpus", [])} - {g["name"] for g in d["hardware"]["gpus"]}
    most = max([n for g in d["hardware"]["gpus"] + d["hardware"].get("rollout_gpus", []) for n in g["counts"]] + [8])
    entries = []
    for g in types:
        price = _reference_price(d, g) * (rng.uniform(0.2, 0.6) if g in rollout else 1.0)   # split rollouts then pay
        e = {"name": g, "reserved_usd_per_gpu_hour": round(price * rng.uniform(0.4, 0.8), 3),
             "on_demand_usd_per_gpu_hour": [round(price * rng.uniform(0.9, 1.2), 3) for _ in range(BUCKETS)],
             "on_demand_available_gpus": [rng.choice([0, most, 2 * most, 4 * most]) for _ in range(BUCKETS)],
             "node_gpus": rng.choice([1, 8]), "reserved_lead_buckets": rng.choice([0, 0, 1])}
        if rng.random() < 0.4:
            e.update({"spot_usd_per_gpu_hour": round(price * 0.4, 3),
                      "spot_available_gpus": [rng.choice([0, most, 2 * most]) for _ in range(BUCKETS)],
                      "spot_preemptions_per_gpu_hour": rng.choice([0.0, 0.005, 0.02])})
        entries.append(e)
    plain = tiny_job(random.Random(700_000 + seed), "plain")
    plain["hardware"]["gpus"] = [{"name": types[0], "counts": [1, 2]}]
    plain.pop("constraints", None)
    release = rng.choice([0, 1])
    portfolio = {"kind": "portfolio", "name": f"layered-{seed}", "horizon": {"buckets": BUCKETS, "bucket_hours": bucket_hours},
                 "gpus": entries,
                 "jobs": [{"instance": d, "release_bucket": 0, "deadline_bucket": BUCKETS - 1},
                          {"instance": plain, "release_bucket": release, "deadline_bucket": BUCKETS - 1}]}
    json.dumps(portfolio)   # a JSON document, as a user would write it
    return portfolio, on


def one_job_portfolio_of(raw: dict, buckets: int = 4, bucket_hours: float = 10_000.0) -> dict:
    """A portfolio of one job alone: each GPU type it lists at its own price (its entry's, else the reference) on demand,
    far more GPUs than it
    can hold, no reservation worth signing, buckets long enough for any of its plans; the job's budget and deadline are
    the portfolio's window. Its optimum must be the job's own (``restrict_to_portfolio``'s instance solved alone)."""
    raw = copy.deepcopy(raw)
    raw["hardware"]["offers"] = "reference"
    raw["hardware"].pop("pricing", None)
    own = {o["name"]: o["price_usd_per_gpu_hour"] for o in raw["hardware"]["gpus"] + raw["hardware"].get("rollout_gpus", [])
           if "price_usd_per_gpu_hour" in o}   # a price the job gives its own entry: the portfolio's too
    price = {g: own.get(g) or _reference_price(raw, g) for g in _types(raw)}
    entries = [{"name": g, "reserved_usd_per_gpu_hour": 5 * price[g], "on_demand_usd_per_gpu_hour": price[g],
                "on_demand_available_gpus": 100_000, "max_reserved_gpus": 0} for g in _types(raw)]
    return {"kind": "portfolio", "name": f"alone-{raw['name']}", "horizon": {"buckets": buckets, "bucket_hours": bucket_hours},
            "gpus": entries, "jobs": [{"instance": raw, "release_bucket": 0, "deadline_bucket": buckets - 1}]}
