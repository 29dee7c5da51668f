"""The README's "Continued pre-training" section (issue 27, lever 7): its command runs, the optimum it states is the
MIP's and the oracle's, the optimum without the block is what the solver finds, and its sourced numbers are the
defaults'."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from planopt.cli import app
from planopt.instance import load_instance, parse_instance
from planopt.job.model import solve
from planopt.models.catalog import defaults as d
from planopt.models.catalog import spreads as sp
from planopt.oracles.arrays import best_plan_arrays

from tests.support.common import INSTANCES, ROOT

README = (ROOT / "README.md").read_text()
FILE = INSTANCES / "math-8b-pretrained-or-32b.json"
SECTION = README[README.index("## Continued pre-training"):README.index("## Instances")]
LINE = next(line for line in SECTION.splitlines()
            if line.startswith("**The optimum of `instances/math-8b-pretrained-or-32b.json`**"))


def number(text: str) -> float:
    return float(text.replace(",", "").replace("$", ""))


@pytest.fixture(scope="module")
def optimum():
    return solve(load_instance(FILE))


def test_the_section_shows_the_command_and_it_runs():
    assert ".venv/bin/planopt solve instances/math-8b-pretrained-or-32b.json" in SECTION
    result = CliRunner().invoke(app, ["solve", str(FILE), "--json", "--no-sensitivity"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["plan"]["stages"][0]["pretraining_tokens"] == 5e9


def test_the_stated_optimum_is_the_mips_and_the_oracles(optimum):
    stated = re.search(r"(Qwen3-\w+) pre-trained on ([\d.]+) B tokens \(([\d.e+]+) FLOPs, ([\d.]+) h on its GPUs, corpus "
                       r"\$([\d,]+)\), starting from ([\d.]+) instead of ([\d.]+), then distilled in (\w+) for ([\d,]+) "
                       r"steps on (\d+) × ([\w-]+): \$([\d,]+) in ([\d.]+) h, quality ([\d.]+)\.", LINE)
    assert stated, LINE
    (student, tokens, flops, cpt_hours, corpus, start, base, precision, steps, count, gpu, cost, wall,
     quality) = stated.groups()
    m, stage = optimum.metrics, optimum.plan.stages[0]
    assert optimum.plan.student == student and stage.recipe.pretraining_tokens == float(tokens) * 1e9
    assert stage.method == "opd" and stage.recipe.teacher_precision == precision and stage.recipe.steps == number(steps)
    assert (stage.hardware.count, stage.hardware.gpu) == (int(count), gpu)
    assert f"{m.pretraining['flops']:.3g}" == flops.replace("e+", "e+") and f"{m.pretraining['compute_hours']:.1f}" == cpt_hours
    assert round(m.pretraining["data_usd"]) == number(corpus)
    assert f"{m.pretraining['start_score']:.2f}" == start and m.pretraining["baseline_score"] == float(base)
    assert (round(m.cost_usd), f"{m.wall_hours:.1f}", f"{m.quality:.2f}") == (number(cost), wall, quality)
    oracle = best_plan_arrays(load_instance(FILE))
    assert oracle.metrics.cost_usd == pytest.approx(m.cost_usd, rel=1e-6)


def test_without_the_block_the_bigger_base_wins():
    stated = re.search(r"Without the block the 8B cannot reach (\d+) \(at best ([\d.]+)\), and the optimum is the bigger "
                       r"base, (Qwen3-\w+) distilled for ([\d,]+) steps on (\d+) × ([\w-]+): \$([\d,]+) in ([\d.]+) h, "
                       r"quality ([\d.]+)\.", LINE)
    assert stated, LINE
    floor, best8, student, steps, count, gpu, cost, wall, quality = stated.groups()
    data = json.loads(FILE.read_text())
    assert data["constraints"]["min_quality"] == float(floor)
    assert data["continued_pretraining"]["tokens_options"] == [0, 1e9, 2e9, 5e9, 1e10, 2e10]
    assert data["continued_pretraining"]["usd_per_billion_tokens"] == 100
    del data["continued_pretraining"]
    res = solve(parse_instance(data))
    m, stage = res.metrics, res.plan.stages[0]
    assert res.plan.student == student and stage.method == "opd" and stage.recipe.steps == number(steps)
    assert (stage.hardware.count, stage.hardware.gpu) == (int(count), gpu)
    assert (round(m.cost_usd), f"{m.wall_hours:.1f}", f"{m.quality:.2f}") == (number(cost), wall, quality)
    limits = {k: v for k, v in data["constraints"].items() if k != "min_quality"}
    eight = {**data, "candidate_students": None, "constraints": limits, "objective": "quality"}
    assert f"{solve(parse_instance(eight)).metrics.quality:.2f}" == best8  # the 8B's most under the other limits
    data["candidate_students"] = None
    assert solve(parse_instance(data)).status == "infeasible"


def test_the_sourced_numbers_are_the_defaults():
    assert "s = 0.1436 and k = 0.64 tokens per parameter" in SECTION
    assert d.CPT_HEADROOM_SHARE == 0.1436 and d.CPT_TOKENS_PER_PARAMETER_SCALE == 0.64
    assert "MATH 4.5 → 18.0 and 12.2 → 25.0, i.e. 0.141 and 0.146" in SECTION
    assert f"{13.5 / 95.5:.3f}" == "0.141" and f"{12.8 / 87.8:.3f}" == "0.146"
    low, high = sp.FACTOR_CPT_HEADROOM_SHARE
    assert f"P10–P90 {low:.2f}–{high:.1f} × the point" in SECTION
    assert "σ = 0.886 in logs" in SECTION


def test_the_instances_table_and_the_refusals_list_it():
    assert "| `instances/math-8b-pretrained-or-32b.json` |" in README
    for field in ("plan.pretraining_tokens", "plan.stages.1.pretraining_tokens", "`usd_per_billion_tokens`", "`releases`"):
        assert field in SECTION
