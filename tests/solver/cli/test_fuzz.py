"""The fuzzer (issue 13): mutated instances and portfolios never make the CLI print a traceback, exit 1,
or print anything but one strict JSON object under ``--json``; an input error is one ``error:`` line.

A seeded sample of ``SAMPLE`` cases runs (its first ``DEFAULT_RUN`` by default, the rest with ``-m slow``; the
valid-but-huge ones always among the first, and
``FIELD_SAMPLE`` of the fields issue 28 added: stages, candidate students, rollout GPUs and staleness,
retention, a trained teacher, uncertainty overrides with a confidence, a teacher precision per phase, portfolio
offers, pilot CSVs, and ``ENVIRONMENT_SAMPLE`` more of the environment pools of issue 27's lever 1);
``PLANOPT_FUZZ=full`` runs all 2,160 (``benchmarks/fuzz.py`` runs them too and tabulates the outcomes,
BENCHMARKS.md §6).
"""

from __future__ import annotations

import os
import random

import pytest

from tests.support.fuzzing import FIELD_BASES, cases, run
from tests.support.common import split_seeds

SAMPLE = 200
DEFAULT_RUN = 100  # of the chosen cases, the default run's (the huge ones among them); the rest run with -m slow
FIELD_SAMPLE = 60
ENVIRONMENT_SAMPLE = 8
ALL = cases()
HUGE = [c for c in ALL if c.operation == "huge"]
FIELDS = [c for c in ALL if c.is_field_base]
OLD = [c for c in ALL if c.operation != "huge" and not c.is_field_base]
ENVIRONMENTS = [c for c in FIELDS if c.base == "qwen3-32b-agentic-rl-environments.json"]


def _chosen() -> list:
    chosen = HUGE + random.Random(13).sample(OLD, SAMPLE - len(HUGE) - FIELD_SAMPLE) + random.Random(28).sample(FIELDS, FIELD_SAMPLE)
    return chosen + [c for c in random.Random(27).sample(ENVIRONMENTS, ENVIRONMENT_SAMPLE) if c not in chosen]


CHOSEN = ALL if os.environ.get("PLANOPT_FUZZ") == "full" else _chosen()


def test_the_full_set_is_large_and_covers_every_mutation():
    assert len(ALL) >= 2000
    assert {c.base for c in FIELDS} == set(FIELD_BASES)
    assert {c.operation for c in FIELDS} == {c.operation for c in OLD}
    assert {c.operation for c in ALL} == {"delete", "wrong_type", "number", "empty", "duplicate", "unknown_name",
                                         "unknown_field", "unicode", "truncate", "non_utf8", "deep", "huge"}
    assert {c.base for c in ALL} >= {"tiny.json", "portfolio-small.json"}
    assert [c.id for c in cases()] == [c.id for c in ALL]  # deterministic


@pytest.mark.parametrize("case", split_seeds(CHOSEN, DEFAULT_RUN), ids=lambda c: c.id)
def test_mutated_input_keeps_the_cli_contract(tmp_path, case):
    problems = [f"{o.command}: {o.problem}" for o in run(case, tmp_path) if o.problem]
    assert not problems, f"{case.operation} at {case.where}: {problems}"


@pytest.mark.parametrize("case", HUGE, ids=lambda c: c.id)
def test_valid_but_huge_inputs_are_refused(tmp_path, case):
    outcomes = run(case, tmp_path)
    assert [o.exit_code for o in outcomes] == [2, 2]
