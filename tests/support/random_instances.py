"""Random job instances for the correctness contract (MIP vs enumeration).

One generator draws a job from an option grid: ``SMALL`` (enumerable plan by
plan, the contract tests) or ``LARGE`` (1e5-1e6 plans, the vectorised oracle's
tests). Limits are drawn from the jobs' own plans' metrics (a random quantile,
or none), so that about half of the instances have binding limits and some
are infeasible.
"""

from __future__ import annotations

import random
import zlib
from dataclasses import dataclass

from planopt.instance import parse_instance
from planopt.oracles.by_plan import all_plans

SMALL_MODELS = ["Qwen3-0.6B", "Qwen3-1.7B", "Qwen3-4B", "Qwen3-8B", "Llama-3.1-8B", "Qwen3-30B-A3B"]
TEACHERS = ["Qwen3-8B", "Qwen3-14B", "Qwen3-32B", "Qwen3-30B-A3B", "Llama-3.1-70B"]
GPUS = ["L4", "L40S", "A100-40GB", "A100-80GB", "H100-SXM", "H100-PCIe", "H200", "B200", "MI300X", "TPU-v5p"]


@dataclass(frozen=True)
class Grid:
    """Where a random job's options are drawn from: each pool with how many entries to take (lo, hi)."""

    steps: tuple[int, ...]
    steps_taken: tuple[int, int]
    samples_per_prompt: tuple[int, ...]
    samples_taken: tuple[int, int]
    gpus_taken: tuple[int, int]
    counts: tuple[int, ...]
    counts_taken: tuple[int, int]
    intervals: tuple[float, ...]
    intervals_taken: tuple[int, int]
    failures_per_gpu_hour: tuple[float, ...]
    shares_taken: tuple[int, int]
    precisions_taken: tuple[int, int]
    baseline_high: float
    reward_models: bool  # RL jobs may score with a reward model on the GPUs


SMALL = Grid(steps=(20, 50, 100, 200, 400, 1000, 3000), steps_taken=(1, 3), samples_per_prompt=(1, 2, 4, 8, 16),
             samples_taken=(1, 3), gpus_taken=(1, 3), counts=(1, 2, 4, 8, 16, 32), counts_taken=(1, 3),
             intervals=(5, 15, 30, 60, 120, 480), intervals_taken=(1, 4), failures_per_gpu_hour=(2e-5, 1e-3),
             shares_taken=(1, 2), precisions_taken=(1, 2), baseline_high=70, reward_models=True)
LARGE = Grid(steps=(20, 50, 100, 150, 200, 300, 400, 600, 1000, 2000, 3000), steps_taken=(2, 6),
             samples_per_prompt=(1, 2, 4, 8, 16, 32), samples_taken=(2, 5), gpus_taken=(3, 8),
             counts=(1, 2, 4, 8, 16, 32, 64), counts_taken=(3, 6),
             intervals=(5, 10, 15, 30, 45, 60, 90, 120, 240, 480, 960), intervals_taken=(3, 10),
             failures_per_gpu_hour=(2e-5, 1e-4, 1e-3), shares_taken=(1, 3), precisions_taken=(1, 3),
             baseline_high=60, reward_models=False)


def _take(rng: random.Random, pool, taken: tuple[int, int]) -> list:
    return sorted(rng.sample(list(pool), rng.randint(*taken)))


def family_of_name(name: str) -> str:
    """A general-score family for a random job, from its name (not its generator: the other draws stay as they
    were before families existed)."""
    from planopt.models.catalog import defaults as d
    return d.GENERAL_SCORE_FAMILIES[zlib.crc32(name.encode()) % len(d.GENERAL_SCORE_FAMILIES)]


def long_context_of_name(name: str, counts: list[int]) -> tuple[list[int], bool]:
    """Context-parallel degrees (issue 24 item 2) and whether decode replays CUDA graphs, for a random job, from
    its name (as ``family_of_name``: the other draws stay as they were): about half the jobs offer context
    parallelism (degrees up to the largest of ``counts``; a lone degree only where it divides every count), a
    quarter decode eagerly."""
    h = zlib.crc32(("long-context:" + name).encode())
    drawn = ([1], [1], [1, 2], [1, 2, 4], [2], [1, 4])[h % 6]
    degrees = [c for c in drawn if c <= max(counts)] or [1]
    if 1 not in degrees and any(n % degrees[0] for n in counts):
        degrees = [1] + degrees
    return degrees, (h // 6) % 4 != 0


def random_job_dict(rng: random.Random, name: str, grid: Grid = SMALL) -> dict:
    """A random job without limits, its options drawn from ``grid``."""
    methods = rng.sample(["sft", "rl", "opd"], rng.randint(1, 3))
    baseline = rng.uniform(10, grid.baseline_high)
    prompts_per_step = rng.choice([16, 32, 64, 128])
    phases = rng.randint(1, 3)
    training = {"methods": {}, "phases": phases,
                "samples_per_prompt_options": _take(rng, grid.samples_per_prompt, grid.samples_taken),
                "taper_only": rng.random() < 0.7, "activation_recompute": rng.random() < 0.5,
                "reference_logprobs": rng.random() < 0.5}
    for m in methods:
        training["methods"][m] = {"steps_options": _take(rng, grid.steps, grid.steps_taken), "prompts_per_step": prompts_per_step}
    inst = {
        "name": name,
        "student": {"preset": rng.choice(SMALL_MODELS)},
        "task": {"baseline_score": baseline, "general_score_baseline": rng.uniform(50, 90),
                 "prompt_tokens": rng.choice([0, 100, 500]), "response_tokens": rng.choice([300, 1000, 3000]),
                 "max_response_tokens": 8192, "prompts_available": 50000,
                 "general_score_family": family_of_name(name)},
        "training": training,
        "hardware": {"gpus": [{"name": g, "counts": _take(rng, grid.counts, grid.counts_taken)}
                              for g in rng.sample(GPUS, rng.randint(*grid.gpus_taken))]},
        "checkpointing": {"interval_minutes_options": _take(rng, grid.intervals, grid.intervals_taken),
                          "keep_last": rng.randint(1, 3), "milestones_kept": rng.randint(0, 2),
                          "milestone_retention_months": rng.choice([0, 3])},
        "reliability": {"failures_per_gpu_hour": rng.choice(list(grid.failures_per_gpu_hour))},
        "operations": {"fixed_usd": rng.choice([0, 1000]), "usd_per_wall_hour": rng.choice([0, 30])},
        "storage": {"trajectory_log_share": rng.choice([0.0, 0.1])},
        "forgetting_repair_usd_per_point": rng.choice([0, 500]),
        "objective": rng.choice(["cost", "cost", "quality", "time", "forgetting"]),
    }
    if "sft" in methods:
        inst["sft_data"] = {"examples_available": rng.choice([0, 10000]), "usd_per_labeled_example": rng.choice([0.5, 3.0]),
                            "labeled_examples_per_day": rng.choice([2000, 20000]), "example_tokens": rng.choice([800, 2000]),
                            "external_data_share_options": _take(rng, [1.0, 0.85, 0.7, 0.5], grid.shares_taken)}
    if "opd" in methods:
        inst["teacher"] = {"architecture": {"preset": rng.choice(TEACHERS)}, "score": rng.uniform(baseline, 95),
                           "exists": rng.random() < 0.8, "training_usd": 5000, "training_hours": 24,
                           "precision_options": _take(rng, ["bf16", "fp8", "int8", "int4"], grid.precisions_taken)}
    if "rl" in methods:
        inst["reward"] = {"verifier_usd_per_sample": rng.choice([0.0, 0.001]), "design_usd": rng.choice([0, 3000])}
        if grid.reward_models and rng.random() < 0.3:
            inst["reward"]["reward_model"] = {"preset": rng.choice(["Qwen3-1.7B", "Qwen3-8B"])}
        inst["environments"] = {"cpu_seconds_per_sample": rng.choice([0, 5]), "sandbox_usd_per_cpu_hour": 0.05,
                                "latency_seconds_per_step": rng.choice([0, 20])}
    return inst


def random_instance_dict(seed: int) -> dict:
    rng = random.Random(seed)
    inst = with_long_context(random_job_dict(rng, f"random-{seed}"))
    return with_drawn_limits(inst, all_plans(parse_instance(inst)), rng)


def with_long_context(inst: dict) -> dict:
    """``inst`` with the context-parallel degrees and decode mode its name draws (``long_context_of_name``); the
    contract's jobs take them (the layered generators, which change a job's GPUs, do not)."""
    degrees, graphs = long_context_of_name(inst["name"], [n for g in inst["hardware"]["gpus"] for n in g["counts"]])
    if degrees != [1]:
        inst["training"]["context_parallel"] = degrees
    if not graphs:
        inst["efficiency"] = {"cuda_graphs": False}
    return inst


def with_drawn_limits(inst: dict, scored, rng: random.Random) -> dict:
    """``inst`` with limits drawn (``random_limits``) from the metrics of its ``scored`` plans that fit in memory."""
    plans = [p.metrics for p in scored if p.metrics.fits_memory]
    values = {key: [getattr(m, key) for m in plans] for key in ("cost_usd", "wall_hours", "forgetting_points", "quality")}
    inst["constraints"] = random_limits(rng, values)
    return inst


# A limit is placed a relative 1e-6 off the plan value it was drawn from: a plan
# sitting exactly on a limit is decided by the solver's feasibility tolerance,
# not by the model, and this contract is about the model.
OFF_LIMIT = 1e-6


def random_limits(rng: random.Random, values: dict) -> dict:
    """Limits at random quantiles of the plans' own metrics (``values``: metric -> values of
    the plans that fit in memory), each present with a fixed probability."""
    limits = {}
    if len(values["cost_usd"]):
        def quantile(key):
            ordered = sorted(values[key])
            return float(ordered[min(len(ordered) - 1, int(rng.random() * len(ordered)))])
        if rng.random() < 0.5:
            limits["budget_usd"] = quantile("cost_usd") * rng.choice([0.9, 1.0, 1.5]) * (1 + OFF_LIMIT)
        if rng.random() < 0.5:
            limits["deadline_hours"] = quantile("wall_hours") * rng.choice([0.9, 1.0, 1.5]) * (1 + OFF_LIMIT)
        if rng.random() < 0.4:
            limits["max_forgetting_points"] = quantile("forgetting_points") * (1 + OFF_LIMIT)
        if rng.random() < 0.4:
            limits["min_quality"] = quantile("quality") * (1 - OFF_LIMIT)
    return limits
