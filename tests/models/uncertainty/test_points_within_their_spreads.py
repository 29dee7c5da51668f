"""Every parameter's point lies within its own P10-P90 (issue 24: "no point estimate outside its own [P10, P90]"),
on every shipped job instance: the log-normal ones have their ranges around the point, and the additive one (the
fp8 teacher's penalty, a point 0 that a log-normal cannot hold) is centred on it."""

from __future__ import annotations

import json

import pytest

from planopt.instance import parse_instance
from planopt.models.uncertainty.model import parameters

from tests.support.common import INSTANCES

JOBS = [p for p in sorted(INSTANCES.glob("*.json")) if json.loads(p.read_text()).get("kind", "job") == "job"]


def test_the_shipped_jobs_draw_the_fp8_penalty_somewhere():
    names = {p.name for path in JOBS for p in parameters(parse_instance(json.loads(path.read_text())))}
    assert "priors.fp8_teacher_score_penalty" in names and len(JOBS) >= 10


@pytest.mark.parametrize("path", JOBS, ids=[p.stem for p in JOBS])
def test_every_point_lies_within_its_own_p10_p90(path):
    for p in parameters(parse_instance(json.loads(path.read_text()))):
        low, high = p.quantile(0.1), p.quantile(0.9)
        assert low - 1e-12 <= p.point <= high + 1e-12, (p.name, p.point, low, high)
