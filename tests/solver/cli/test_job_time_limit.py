"""Issue 28 items 8 and 9: a single job's ``--time-limit`` bounds the whole command (loading, building, the
solve, the limits table, the risk), and a build that clearly cannot fit it is refused before it starts.

Each runs the real ``planopt`` program (the clock starts in ``main``) and asserts the limit is honoured, with
generous slack for a shared machine; nothing here times how fast planopt is."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SLACK_S = 3.0


def planopt(*args: str) -> tuple[subprocess.CompletedProcess, float]:
    """``planopt ARGS`` as a program, and its wall seconds."""
    start = time.perf_counter()
    res = subprocess.run([sys.executable, "-m", "planopt.cli", *args], capture_output=True, text=True, timeout=120, cwd=ROOT)
    return res, time.perf_counter() - start


def test_a_tiny_time_limit_ends_in_time_with_exit_4_and_what_took_the_time():
    res, wall = planopt("solve", str(ROOT / "instances" / "qwen3-8b-math.json"), "--json", "--time-limit", "0.05")
    assert wall < 0.05 + SLACK_S
    assert res.returncode == 4, res.stderr
    out = json.loads(res.stdout)
    assert out["status"] == "time_limit" and out["plan"] is None
    assert "time limit" in out["message"] and "\n" not in out["message"]


def test_a_limit_covers_the_build_and_the_sensitivity_resolves(tmp_path):
    doc = json.loads((ROOT / "instances" / "math-8b-or-32b.json").read_text())
    presets = ["Qwen3-0.6B", "Qwen3-1.7B", "Qwen3-4B", "Qwen3-14B", "Qwen3-32B", "Llama-3.1-8B"]
    doc["candidate_students"] = [{"name": f"s{i}", "architecture": {"preset": presets[i % len(presets)]},
                                  "baseline_score": 60.0 + i / 10, "general_score_baseline": 88.0} for i in range(30)]
    path = tmp_path / "thirty-students.json"
    path.write_text(json.dumps(doc))
    res, wall = planopt("solve", str(path), "--json", "--time-limit", "3")
    assert wall < 3 + SLACK_S
    assert res.returncode in (0, 4), res.stderr
    out = json.loads(res.stdout)
    assert out["status"] in ("optimal", "time_limit")
    assert out["plan"] is not None or out["message"]


def test_a_build_that_cannot_fit_the_limit_is_refused_before_it_starts(tmp_path):
    doc = json.loads((ROOT / "instances" / "qwen3-8b-math.json").read_text())
    doc["training"].update(phases=6, taper_only=False, samples_per_prompt_options=[2, 4, 8, 16])
    path = tmp_path / "six-phases.json"
    path.write_text(json.dumps(doc))
    res, wall = planopt("solve", str(path), "--time-limit", "3")
    assert wall < 3 + SLACK_S
    assert res.returncode == 2
    assert res.stderr.count("\n") == 1 and res.stderr.startswith("error: --time-limit: ")
    assert "training.samples_per_prompt_options" in res.stderr and "one value would build in" in res.stderr


def test_a_chance_constrained_build_that_cannot_fit_is_refused_naming_the_scenarios(tmp_path):
    doc = json.loads((ROOT / "instances" / "qwen3-32b-sft-then-rl.json").read_text())
    doc["constraints"]["confidence"] = 0.9
    path = tmp_path / "staged-confidence.json"
    path.write_text(json.dumps(doc))
    # 3 s, not 1: on a 2-core machine about twice as slow as the one this was written on, loaded by the suite's two
    # workers, loading the instance alone took the whole 1 s (exit 4, "loading the instance took 1.0 s"; the
    # clean-clone CI of 2026-12-07, 22:12 UTC); the build (at least 3.2 s on a fast machine) still cannot fit in 3 s
    res, wall = planopt("solve", str(path), "--time-limit", "3")
    assert wall < 3 + SLACK_S
    assert res.returncode == 2
    assert res.stderr.startswith("error: --time-limit: the chance-constrained model") and "--scenarios" in res.stderr
