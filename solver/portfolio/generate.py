"""Random but realistic portfolios for benchmarks and demos (``planopt generate portfolio``).

Everything is drawn from the catalog (``models/catalog``): students are the
catalog's dense and MoE presets up to 32B total parameters, teachers the
larger presets, GPU types and their on-demand and spot prices the catalog's
entries. What the catalog does not hold is drawn from stated ranges:

- reserved price: the catalog's reserved price where it is below on-demand,
  else 0.55–0.70 × on-demand (a 1-year commitment discount; ASSUMPTION, the
  catalog's reserved prices are short capacity blocks that cost more than
  on-demand);
- on-demand availability per bucket: 8–64 GPUs; spot availability 0–32 GPUs;
  preemptions 2e-4–2e-3 per GPU-hour (ASSUMPTION: a spot GPU is reclaimed
  every few weeks to months of use);
- jobs: a release bucket and a window of 2–8 buckets; methods, lengths and
  samples per prompt from small option lists sized like published runs
  (512–1024 prompts per RL/OPD step, 2–8K-token responses; SFT mostly on
  owned data), so that GPU time is most of a portfolio's cost; a minimum
  quality between the baseline and the best score a plan that fits the
  job's window reaches, so every job has a plan.
"""

from __future__ import annotations

import random
from typing import Any

from planopt.models.catalog import load_gpus, load_models
from planopt.models.cost.recipes import enumerate_recipes, profile
from planopt.instance import parse_instance

STUDENT_MAX_PARAMS_B = 32.0
JOB_GPU_COUNTS = (8, 16, 32)  # whole 8-GPU nodes: the sizes of the published post-training runs the jobs imitate


def _students():
    return [m for m in load_models().values() if m.params_b <= STUDENT_MAX_PARAMS_B and m.params_b >= 1.0]


def random_job(rng: random.Random, index: int) -> dict[str, Any]:
    """A random valid job of a generated portfolio (student, methods, baseline, hardware, release and deadline)."""
    models = sorted(load_models().values(), key=lambda m: m.params_b)
    student = rng.choice(_students())
    teachers = [m for m in models if m.params_b > student.params_b * 1.5 and m.params_b <= 80]
    methods = rng.sample(["sft", "rl", "opd"] if teachers else ["sft", "rl"], rng.randint(1, 2))
    baseline = round(rng.uniform(20, 60), 1)
    prompts = rng.choice([512, 1024])
    training: dict[str, Any] = {"methods": {}, "phases": 2, "samples_per_prompt_options": rng.choice([[4, 8], [8, 16]])}
    for m in methods:
        if m == "sft":
            steps = sorted(rng.sample([1000, 2000, 4000, 8000], 2))
        elif m == "rl":
            steps = sorted(rng.sample([200, 400, 800, 1600], 2))
        else:
            steps = sorted(rng.sample([100, 200, 400, 800], 2))
        training["methods"][m] = {"steps_options": steps, "prompts_per_step": 256 if m == "sft" else prompts}
    response = rng.choice([2000, 4000, 8000])
    job: dict[str, Any] = {
        "name": f"job{index:03d}-{student.name.lower()}-{'+'.join(methods)}",
        "student": {"preset": student.name},
        "task": {"baseline_score": baseline, "general_score_baseline": round(rng.uniform(60, 85), 1),
                 "prompt_tokens": rng.choice([150, 400, 1000]), "response_tokens": response,
                 "max_response_tokens": 4 * response, "prompts_available": 50000},
        "training": training,
        "hardware": {"gpus": [{"name": "H100-SXM", "counts": [8]}]},  # replaced by the portfolio's GPU types (random_portfolio)
        "checkpointing": {"interval_minutes_options": [30, 60, 120, 240]},
        "operations": {"fixed_usd": rng.choice([0, 500]), "usd_per_wall_hour": rng.choice([0, 5])},
        "forgetting_repair_usd_per_point": rng.choice([0, 200]),
    }
    if "sft" in methods:
        job["sft_data"] = {"examples_available": rng.choice([500000, 2000000]), "usd_per_labeled_example": rng.choice([0.1, 0.5]),
                           "labeled_examples_per_day": rng.choice([20000, 100000]), "example_tokens": rng.choice([2000, 4000]),
                           "external_data_share_options": [1.0, 0.7]}
    if "rl" in methods:
        job["reward"] = {"verifier_usd_per_sample": 0.0001, "design_usd": rng.choice([0, 3000])}
    if "opd" in methods:
        teacher = rng.choice(teachers)
        job["teacher"] = {"architecture": {"preset": teacher.name}, "score": round(rng.uniform(baseline + 15, min(95, baseline + 45)), 1),
                          "precision_options": ["bf16", "fp8"]}
    inst = parse_instance(job)
    best = max(profile(inst, r).quality for r in enumerate_recipes(inst))
    job["constraints"] = {"min_quality": round(baseline + rng.uniform(0.3, 0.9) * (best - baseline), 2)}
    return job


def _best_quality_in_window(job: dict, portfolio: dict, release: int, deadline: int) -> float | None:
    """The best quality of a plan that can run in the window: GPU work starts at the first bucket
    boundary after the lead time and fits in the buckets left at the plan's GPU count."""
    from planopt.models.cost.evaluator import Evaluator
    from planopt.models.consistency import check_instance
    from planopt.models.schema.portfolio import Portfolio, restrict_to_portfolio
    H = portfolio["horizon"]["bucket_hours"]
    skeleton = Portfolio.model_validate({**portfolio, "jobs": [{"instance": job, "release_bucket": release, "deadline_bucket": deadline}]})
    inst = restrict_to_portfolio(parse_instance({k: v for k, v in job.items() if k != "constraints"}), skeleton)
    check_instance(inst)  # the job as the portfolio loader checks it (models/consistency.py)
    ev = Evaluator(inst)
    recipes, hardware, intervals = ev.space()
    best = None
    for r in recipes:
        rp = ev.recipe(r)
        first = release + -(-rp.lead_hours // H)  # first bucket after the lead time
        buckets = deadline - first + 1
        if buckets <= 0 or (best is not None and rp.quality <= best):
            continue
        for h in hardware:
            m = ev.metrics(r, h, max(intervals))
            if m.fits_memory and m.wall_hours - rp.lead_hours <= buckets * H:
                best = rp.quality
                break
    return best


def random_portfolio(jobs: int, gpu_types: int, buckets: int, seed: int = 0, bucket_hours: float = 168.0,
                     offers: int = 1) -> dict[str, Any]:
    """A portfolio of ``jobs`` random jobs over ``buckets`` buckets sharing ``gpu_types`` catalog GPU types;
    with ``offers`` above 1, each type the price catalog sells is offered by up to that many providers
    (``provider_offers``), the jobs drawn as with one offer."""
    if offers < 1:
        raise ValueError(f"--offers: expected at least 1, got {offers}")
    rng = random.Random(seed)
    catalog = [g for g in load_gpus().values() if g.price_on_demand_usd_per_gpu_hour]
    if not 1 <= gpu_types <= len(catalog):
        raise ValueError(f"--gpu-types: expected 1..{len(catalog)}, got {gpu_types}")
    preferred = ["H100-SXM", "A100-80GB", "H200", "B200", "MI300X", "L40S", "A100-40GB", "H100-PCIe", "MI325X", "L4",
                 "TPU-v5p", "TPU-v6e", "TPU-v5e"]
    names = [n for n in preferred if any(g.name == n for g in catalog)]
    names = (names + sorted(g.name for g in catalog if g.name not in names))[:gpu_types]   # every priced type can be drawn
    gpus = []
    for name in names:
        spec = next(g for g in catalog if g.name == name)
        od = spec.price_on_demand_usd_per_gpu_hour
        res = spec.price_reserved_usd_per_gpu_hour
        if res is None or res >= od:
            res = round(od * rng.uniform(0.55, 0.70), 3)
        entry: dict[str, Any] = {
            "name": name, "reserved_usd_per_gpu_hour": res,
            "on_demand_usd_per_gpu_hour": [round(od * rng.uniform(0.95, 1.15), 3) for _ in range(buckets)],
            "on_demand_available_gpus": [rng.choice([8, 16, 32, 64]) for _ in range(buckets)],
        }
        if spec.price_spot_usd_per_gpu_hour is not None and spec.price_spot_usd_per_gpu_hour < od:
            entry["spot_usd_per_gpu_hour"] = spec.price_spot_usd_per_gpu_hour
            entry["spot_available_gpus"] = [rng.choice([0, 8, 16, 32]) for _ in range(buckets)]
            entry["spot_preemptions_per_gpu_hour"] = rng.choice([2e-4, 5e-4, 1e-3, 2e-3])
        gpus.append(entry)
    out_jobs = []
    for i in range(jobs):
        release = rng.randint(0, max(0, buckets - 2))
        deadline = min(buckets - 1, release + rng.randint(1, 7))
        skeleton = {"kind": "portfolio", "horizon": {"buckets": buckets, "bucket_hours": bucket_hours}, "gpus": gpus}
        while True:  # redraw until some plan fits the window; the target is then set below what fits
            job = random_job(rng, i)
            job["hardware"] = {"gpus": [{"name": name, "counts": list(JOB_GPU_COUNTS)} for name in names]}
            best = _best_quality_in_window(job, skeleton, release, deadline)
            if best is not None and best > job["task"]["baseline_score"]:
                break
        base = job["task"]["baseline_score"]
        job["constraints"]["min_quality"] = round(base + rng.uniform(0.3, 0.9) * (best - base), 2)
        out_jobs.append({"release_bucket": release, "deadline_bucket": deadline, "instance": job})
    name = f"generated-{jobs}j-{gpu_types}g-{buckets}b-s{seed}"
    if offers > 1:
        gpus, name = provider_offers(gpus, offers, buckets, random.Random(seed + OFFERS_SEED_OFFSET)), f"{name}-o{offers}"
    return {"kind": "portfolio", "name": name, "horizon": {"buckets": buckets, "bucket_hours": bucket_hours}, "gpus": gpus,
            "jobs": out_jobs}


OFFERS_SEED_OFFSET = 9173  # the offers' own random stream: the jobs and the one-offer portfolio stay as they were


def provider_offers(gpus: list[dict[str, Any]], offers: int, buckets: int, rng: random.Random) -> list[dict[str, Any]]:
    """Each GPU type the price catalog sells, offered by up to ``offers`` of its sellers at the catalog's
    prices, node size, interconnect and shortest reservation term (``models/catalog/prices.json``), with
    availability drawn as for one offer; a type no provider sells keeps its one entry."""
    from planopt.models.catalog.prices import offers as catalog_offers, providers
    out = []
    for entry in gpus:
        sellers = [s for s in providers() if catalog_offers(s, entry["name"])]
        if not sellers:
            out.append(entry)
            continue
        for seller in rng.sample(sellers, min(offers, len(sellers))):
            tiers = catalog_offers(seller, entry["name"])
            offer: dict[str, Any] = {"name": entry["name"], "provider": seller,
                                     "on_demand_available_gpus": [rng.choice([8, 16, 32, 64]) if "on_demand" in tiers else 0
                                                                  for _ in range(buckets)]}
            if "spot" in tiers:
                offer["spot_available_gpus"] = [rng.choice([0, 8, 16, 32]) for _ in range(buckets)]
                offer["spot_preemptions_per_gpu_hour"] = rng.choice([2e-4, 5e-4, 1e-3, 2e-3])
            out.append(offer)
    return out
