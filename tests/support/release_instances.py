"""Random jobs with repeated releases (``releases``, ``models/cost/releases.py``): the SMALL-grid job of
``random_instances.random_job_dict`` (or a staged job, or a job with candidate students) run at 2 to 12
releases, with a share of the SFT labels bought again at each later one. Limits are drawn from the plans of
the job with its releases, so that the budget bounds the total."""

from __future__ import annotations

import random

from planopt.instance import parse_instance
from planopt.oracles.by_plan import all_plans

from tests.support.candidate_instances import candidate_job_dict
from tests.support.random_instances import random_job_dict, with_drawn_limits
from tests.support.staged_instances import shrunk_staged_job_dict


def with_releases(inst: dict, rng: random.Random) -> dict:
    """``inst`` with a ``releases`` block: a count, or a horizon and an interval, and a labels share."""
    share = rng.choice([0.0, 0.5, 1.0])
    if rng.random() < 0.3:
        inst["releases"] = {"horizon_months": 12, "interval_months": rng.choice([1, 3, 6]), "sft_labels_rebuilt_share": share}
    else:
        inst["releases"] = {"count": rng.choice([2, 3, 12]), "sft_labels_rebuilt_share": share}
    return inst


def release_instance_dict(seed: int, kind: str = "job", max_stages: int = 3) -> dict:
    """A job of ``kind`` (``job``, ``staged``, ``candidates``) with releases and limits drawn from its own plans;
    a staged job's sequences cut to their first ``max_stages`` stages."""
    rng = random.Random(210_000 + seed)
    inst = {"job": lambda: random_job_dict(rng, f"releases-{seed}"), "staged": lambda: shrunk_staged_job_dict(seed),
            "candidates": lambda: candidate_job_dict(seed)}[kind]()
    if kind == "staged":
        cut = [q[:max_stages] for q in inst["training"]["stage_sequences"]]
        inst["training"]["stage_sequences"] = [q for n, q in enumerate(cut) if q not in cut[:n]]
    inst = with_releases(inst, rng)
    return with_drawn_limits(inst, all_plans(parse_instance(inst)), random.Random(230_000 + seed))
