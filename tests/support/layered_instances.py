"""Random jobs that switch the plan model's layers on at random, several at once (issue 23 item 2): stages,
a choice of student, retention, separate rollout hardware, asynchronous RL, a trained teacher, (issue 27,
lever 1) environment pools, (lever 6) a teacher precision per sampling phase and asynchronous OPD, and (lever 7)
continued pre-training, on the small random jobs of ``random_instances`` and ``staged_instances``, small enough for
the plan-by-plan oracle (and its scenario counterpart) to list every plan. The environments, precision,
asynchronous-OPD and continued pre-training layers are each drawn from a generator of their own, so the other
layers' draws are those of the seeds before them; continued pre-training is switched on only where the job stays
within the oracle's size, so every seed that drew a job before still draws one."""

from __future__ import annotations

import copy
import random

from planopt.instance import parse_instance
from planopt.oracles.by_plan import all_plans, space_size

from tests.support.random_instances import SMALL_MODELS, family_of_name, random_job_dict, with_drawn_limits
from tests.support.precision_instances import with_precision_by_phase
from tests.support.retention_instances import retention_block, with_a_covering_option

LAYERS = ("stages", "students", "retention", "rollout", "async", "teacher")
ALL_LAYERS = LAYERS + ("environments", "precision", "async_opd", "cpt")
MAX_LAYERED_PLANS = 900


def _base(seed: int, rng: random.Random, staged: bool, max_stages: int) -> dict:
    if not staged:
        return random_job_dict(rng, f"layered-{seed}")
    from tests.support.staged_instances import shrunk_staged_job_dict
    d = shrunk_staged_job_dict(seed)
    sequences = [q for q in d["training"]["stage_sequences"] if len(q) <= max_stages]
    d["training"]["stage_sequences"] = sequences or [["sft", "rl"] if "rl" in d["training"]["methods"] else
                                                     sorted(d["training"]["methods"])[:1]]
    for method in d["training"]["stage_sequences"][0]:
        d["training"]["methods"].setdefault(method, {"steps_options": [50, 200], "prompts_per_step": 32})
    return d


def _student(d: dict, rng: random.Random) -> None:
    own = d["student"]["preset"]
    other = rng.choice([m for m in SMALL_MODELS if m != own])
    base = d["task"]["baseline_score"]
    d["candidate_students"] = [{"name": other, "architecture": {"preset": other},
                                "baseline_score": min(99.0, base + rng.uniform(-10, 15)),
                                "general_score_baseline": rng.uniform(50, 90),
                                "general_score_family": family_of_name(f"{d['name']}-{other}")}]


def _teacher(d: dict, rng: random.Random) -> bool:
    from tests.support.teacher_instances import with_trained_teacher
    return "opd" in d["training"]["methods"] and with_trained_teacher(d, rng) is not None


def _with_precision(d: dict, on: set[str], rng: random.Random) -> tuple[dict, set[str]]:
    """``d`` with a teacher precision per phase (two precisions) and ``on`` with its layer, where ``d`` has OPD and its
    space stays within MAX_LAYERED_PLANS; else ``d`` and ``on`` as they were (the seed keeps its other layers)."""
    trial = copy.deepcopy(d)
    if not with_precision_by_phase(trial, rng):
        return d, on
    trial["teacher"]["precision_options"] = trial["teacher"]["precision_options"][:2]
    try:
        fits = space_size(parse_instance(trial)) <= MAX_LAYERED_PLANS
    except ValueError:
        fits = False
    return (trial, on | {"precision"}) if fits else (d, on)


def _with_async_opd(d: dict, on: set[str], rng: random.Random) -> tuple[dict, set[str]]:
    """``d`` with asynchronous OPD (rollout GPUs where it has none, staleness 0 or 1, ``training.asynchronous_opd``)
    and ``on`` with its layer, where ``d`` has OPD and its space stays within MAX_LAYERED_PLANS; else ``d`` and
    ``on`` as they were (the seed keeps its other layers)."""
    if "opd" not in d["training"]["methods"]:
        return d, on
    trial = copy.deepcopy(d)
    trial["hardware"].setdefault("rollout_gpus", [{"name": rng.choice(["H100-SXM", "B200"]), "counts": [8]}])
    trial["training"].setdefault("staleness_steps_options", [0, 1])
    trial["training"]["asynchronous_opd"] = True
    try:
        fits = space_size(parse_instance(trial)) <= MAX_LAYERED_PLANS
    except ValueError:
        fits = False
    return (trial, on | {"async_opd", "rollout"}) if fits else (d, on)


def layered_job_dict(seed: int, max_stages: int = 3, precision: bool = True,
                     async_opd: bool = True) -> tuple[dict, set[str]] | None:
    """A random job and the layers it has on, without limits; None when its space is over MAX_LAYERED_PLANS or it
    is not a valid job (a layer that cannot apply is left off). ``precision=False`` (``async_opd=False``) leaves the
    precision (asynchronous-OPD) layer off: the seed's job as it was before that layer (a caller whose own bounds the
    layer breaks falls back to it)."""
    rng = random.Random(400_000 + seed)
    on = {layer for layer in LAYERS if rng.random() < 0.45}
    d = _base(seed, rng, "stages" in on, max_stages)
    methods = d["training"]["methods"]
    d["hardware"]["gpus"] = d["hardware"]["gpus"][:1]
    if "students" in on:
        _student(d, rng)
    if "retention" in on:
        d["retention"] = retention_block(rng)
        d["retention"]["keep_last_options"] = d["retention"]["keep_last_options"][:2]
        d["retention"]["milestone_options"] = d["retention"]["milestone_options"][:1]
        d["retention"]["tiers"] = d["retention"]["tiers"][:1]
        with_a_covering_option(d)
    if ("rollout" in on or "async" in on) and ("rl" in methods or "opd" in methods):
        d["hardware"]["rollout_gpus"] = [{"name": rng.choice(["H100-SXM", "B200"]), "counts": [8]}]
        on.add("rollout")
        if "async" in on and "rl" in methods:
            d["training"]["staleness_steps_options"] = [0, 1]
    on.discard("async") if d["training"].get("staleness_steps_options") is None else None
    if "teacher" in on and not _teacher(d, rng):
        on.discard("teacher")
    if "stages" in on and not any(len(q) > 1 for q in d["training"].get("stage_sequences") or []):
        on.discard("stages")
    env_rng = random.Random(420_000 + seed)
    if env_rng.random() < 0.45 and ("rl" in methods or "opd" in methods):
        from tests.support.environment_instances import environments_block
        d["environments"] = environments_block(env_rng, max_pools=2)
        on.add("environments")
    precision_rng = random.Random(430_000 + seed)
    if precision and precision_rng.random() < 0.45:
        d, on = _with_precision(d, on, precision_rng)
    async_rng = random.Random(440_000 + seed)
    if async_opd and async_rng.random() < 0.35:
        d, on = _with_async_opd(d, on, async_rng)
    try:
        inst = parse_instance(d)
    except ValueError:
        return None
    if space_size(inst) > MAX_LAYERED_PLANS:
        return None
    return _with_pretraining(d, on, seed)


def pretraining_block(rng: random.Random) -> dict:
    """A random ``continued_pretraining`` block: 0 and one or two token counts the small students gain from."""
    tokens = sorted(rng.sample([2e8, 1e9, 3e9, 1e10], rng.choice([1, 2])))
    return {"tokens_options": [0.0] + tokens, "usd_per_billion_tokens": round(rng.uniform(0.0, 400.0), 2),
            "tokens_per_parameter_scale": round(rng.uniform(0.2, 2.0), 3)}


def _with_pretraining(d: dict, on: set[str], seed: int) -> tuple[dict, set[str]]:
    """The job with continued pre-training on (its own generator) where it stays valid and within the oracle's size."""
    rng = random.Random(450_000 + seed)
    if rng.random() >= 0.45:
        return d, on
    cpt = {**d, "continued_pretraining": pretraining_block(rng)}
    try:
        if space_size(parse_instance(cpt)) > MAX_LAYERED_PLANS:
            return d, on
    except ValueError:
        return d, on
    return cpt, on | {"cpt"}


def layered_instance(seed: int, max_stages: int = 3):
    """(``layered_job_dict``'s job with limits drawn from its own plans, its layers), or None."""
    made = layered_job_dict(seed, max_stages)
    if made is None:
        return None
    d, on = made
    rng = random.Random(410_000 + seed)
    d["objective"] = rng.choice(["cost", "cost", "quality", "time", "forgetting"])
    return parse_instance(with_drawn_limits(d, all_plans(parse_instance(d)), rng)), on
