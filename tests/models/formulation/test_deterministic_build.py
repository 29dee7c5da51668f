"""The model an instance builds does not depend on the machine's BLAS threads. The hours matrix was a BLAS product,
whose summation order follows the thread count; a last-bit difference flipped ties of the exact dominance pruning,
so a Dask worker (one BLAS thread) built 172 recipes of ``qwen3-8b-math-teacher-precision-by-phase`` where the CLI
(one thread per core) built 171, and the service's ``validate`` disagreed with the CLI's."""

import json
import os
import subprocess
import sys

import pytest

from tests.support.common import INSTANCES

CASES = ["qwen3-8b-math-teacher-precision-by-phase", "qwen3-32b-agentic-rl-split-rollout"]


def plan_space(name: str, threads: int) -> str:
    env = {**os.environ, **{k: str(threads) for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}}
    out = subprocess.run([sys.executable, "-m", "planopt.cli", "validate", str(INSTANCES / f"{name}.json"), "--json"],
                         capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout)["plan_space"]


@pytest.mark.parametrize("name", CASES)
def test_one_and_four_blas_threads_build_the_same_model(name):
    assert plan_space(name, 1) == plan_space(name, 4)
