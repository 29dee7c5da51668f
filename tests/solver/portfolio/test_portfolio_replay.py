"""Every returned portfolio schedule runs: the discrete-event replay (planopt.portfolio.replay),
which reads only the JSON output, finds no pool over capacity, every job's GPUs held together and
every job's work done by its deadline; and the replay does catch schedules that do not run."""

from __future__ import annotations

import copy
import json

import pytest

from planopt.portfolio.generate import random_portfolio
from planopt.models.cost.evaluator import Evaluator
from planopt.portfolio.solve import load_portfolio, solve_portfolio
from planopt.portfolio.replay import replay_schedule

from tests.support.common import INSTANCES, split_seeds
from tests.support.portfolio_oracle import tiny_portfolio, twin_portfolio

SHIPPED = sorted(p for p in INSTANCES.glob("*.json") if json.loads(p.read_text()).get("kind") == "portfolio")


def replayed(source) -> tuple[dict, list[str]]:
    res = solve_portfolio(source, rel_gap=1e-9)
    out = json.loads(json.dumps(res.to_dict()))   # what a user gets: the JSON, nothing else
    return out, (replay_schedule(load_portfolio(source), out) if res.jobs else [])


@pytest.mark.parametrize("seed", split_seeds(range(30), 6))
def test_every_oracle_sized_schedule_replays(seed):
    out, problems = replayed(tiny_portfolio(seed))
    assert problems == [], problems


@pytest.mark.parametrize("seed", range(12))
def test_every_twin_schedule_replays(seed):
    out, problems = replayed(twin_portfolio(seed))
    assert problems == [], problems


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_every_shipped_schedule_replays(path):
    out, problems = replayed(str(path))
    assert out["status"] == "optimal" and out["jobs"]
    assert problems == [], problems


def test_a_generated_schedule_replays():
    p = random_portfolio(jobs=8, gpu_types=3, buckets=6, seed=3, bucket_hours=24)
    res = solve_portfolio(p, time_limit=60)
    assert res.status in ("optimal", "time_limit") and res.jobs
    assert replay_schedule(load_portfolio(p), json.loads(json.dumps(res.to_dict()))) == []


# --- the replay catches what does not run ------------------------------------
@pytest.fixture(scope="module")
def small():
    path = str(INSTANCES / "portfolio-small.json")
    out, problems = replayed(path)
    assert problems == []
    return load_portfolio(path), out


def test_replay_catches_a_pool_over_capacity(small):
    data, out = small
    bad = copy.deepcopy(out)
    row = next(r for r in bad["procurement"] if r["tier"] == "reserved")
    row["gpus"] -= 8
    problems = replay_schedule(data, bad)
    assert any(p.startswith("capacity:") and row["gpu"] in p for p in problems), problems


def test_replay_catches_a_job_split_across_fewer_gpus(small):
    data, out = small
    bad = copy.deepcopy(out)
    row = bad["jobs"][0]["schedule"][0]
    row["gpus"] //= 2
    row["hours"] *= 2   # the same GPU-hours on half the GPUs: not the plan's gang
    problems = replay_schedule(data, bad)
    assert any("together" in p for p in problems), problems


def test_replay_catches_missing_work_and_runs_outside_the_window(small):
    data, out = small
    bad = copy.deepcopy(out)
    job = max(bad["jobs"], key=lambda j: len(j["schedule"]))
    dropped = job["schedule"].pop()
    assert any(job["name"] in p and "needs" in p for p in replay_schedule(data, bad))
    bad = copy.deepcopy(out)
    job = next(j for j in bad["jobs"] if j["deadline_bucket"] < data.portfolio.horizon.buckets - 1)
    job["schedule"][-1]["bucket"] = job["deadline_bucket"] + 1
    assert any("outside its window" in p for p in replay_schedule(data, bad))
    assert dropped["hours"] > 0


def test_replay_catches_more_hours_than_the_bucket(small):
    data, out = small
    bad = copy.deepcopy(out)
    row = bad["jobs"][0]["schedule"][0]
    row["hours"] = out["bucket_hours"] * 1.5
    assert any("longer than the bucket" in p for p in replay_schedule(data, bad))


def gang_portfolio() -> dict:
    """Two identical one-plan jobs (4 GPUs each) in one bucket 2.2x as long as each job runs:
    four reserved GPUs would hold both jobs' GPU-hours (fluid), but not both jobs at once."""
    job = {"student": {"preset": "Qwen3-0.6B"},
           "task": {"baseline_score": 30.0, "general_score_baseline": 70.0, "prompt_tokens": 200, "response_tokens": 500,
                    "max_response_tokens": 4096, "prompts_available": 20000},
           "training": {"methods": {"rl": {"steps_options": [300], "prompts_per_step": 64}}, "phases": 1,
                        "samples_per_prompt_options": [4]},
           "hardware": {"gpus": [{"name": "H100-SXM", "counts": [4]}]},
           "checkpointing": {"interval_minutes_options": [60]}}
    p = {"kind": "portfolio", "name": "gang", "horizon": {"buckets": 1, "bucket_hours": 1.0},
         "gpus": [{"name": "H100-SXM", "reserved_usd_per_gpu_hour": 1.0, "max_reserved_gpus": 4,
                   "on_demand_usd_per_gpu_hour": 5.0, "on_demand_available_gpus": 4}],
         "jobs": [{"name": name, "instance": job, "release_bucket": 0, "deadline_bucket": 0} for name in ("a", "b")]}
    data = load_portfolio(p)
    ev = Evaluator(data.instances[0])
    (r,), (h,), (t,) = ev.space()
    hours = ev.metrics(r, h, t).wall_hours - ev.recipe(r).lead_hours
    p["horizon"]["bucket_hours"] = round(2.2 * hours, 6)
    return p


def test_two_jobs_cannot_take_turns_on_one_reservation_within_a_bucket():
    p = gang_portfolio()
    out, problems = replayed(p)
    assert out["status"] == "optimal" and problems == []
    tiers = sorted({row["tier"] for job in out["jobs"] for row in job["schedule"]})
    assert tiers == ["on_demand", "reserved"], tiers   # one job on the reservation, the other on demand
    # the fluid schedule (both on the four reserved GPUs) does not replay
    fluid = copy.deepcopy(out)
    for job in fluid["jobs"]:
        for row in job["schedule"]:
            row["tier"] = "reserved"
    assert any(msg.startswith("capacity:") for msg in replay_schedule(load_portfolio(p), fluid))
