"""The README's "Teacher precision per phase" paragraphs (issue 27, lever 6): the command runs, the optimum stated
with and without the option is the MIP's and the vectorised oracle's, the explanation of why it pays (forgetting
repair, not scoring time) is what the solver finds, it does not pay with ``qwen3-8b-math.json``'s own options, the
unpriced reload's estimate is the catalog's arithmetic, and the shipped instance is ``qwen3-8b-math.json`` with the
option and int8."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from planopt.cli import app
from planopt.instance import load_instance, parse_instance
from planopt.job.model import solve
from planopt.models.catalog import defaults as d
from planopt.models.cost import physics as ph
from planopt.models.cost.hardware import HardwareProfile
from planopt.oracles.arrays import best_plan_arrays

from tests.support.common import INSTANCES, ROOT

README = (ROOT / "README.md").read_text()
FILE = INSTANCES / "qwen3-8b-math-teacher-precision-by-phase.json"
RULE = next(line for line in README.splitlines() if line.startswith("**Teacher precision per phase.**"))
LINE = next(line for line in README.splitlines()
            if line.startswith("**The optimum of `instances/qwen3-8b-math-teacher-precision-by-phase.json`**"))


def number(text: str) -> float:
    return float(text.replace(",", "").replace("$", ""))


def data(by_phase: bool = True) -> dict:
    out = json.loads(FILE.read_text())
    out["teacher"]["precision_by_phase"] = by_phase
    return out


@pytest.fixture(scope="module")
def optima():
    return solve(parse_instance(data(True))), solve(parse_instance(data(False)))


def test_the_section_shows_the_command_and_it_runs():
    assert "```bash\n.venv/bin/planopt solve instances/qwen3-8b-math-teacher-precision-by-phase.json\n```" in README
    result = CliRunner().invoke(app, ["solve", str(FILE), "--json", "--no-sensitivity"])
    assert result.exit_code == 0, result.stderr
    stage = json.loads(result.stdout)["plan"]["stages"][0]
    assert stage["teacher_precision_by_phase"] == ["int8", "int8", "fp8"] and stage["teacher_precision"] == "int8"


def test_the_stated_optima_with_and_without_are_the_mips_and_the_oracles(optima):
    stated = re.search(r"OPD on (\d+) × ([\w-]+), ([\d,]+) steps, ([\d →]+) samples per prompt, the teacher in "
                       r"([\w →]+): \$([\d,]+) in ([\d.]+) h, quality ([\d.]+), forgetting ([\d.]+) points\. With one "
                       r"precision for the run \(`precision_by_phase: false`\) the optimum is the same GPUs, steps and "
                       r"samples with (\w+) throughout: \$([\d,]+) in ([\d.]+) h, quality ([\d.]+), forgetting ([\d.]+) "
                       r"points", LINE)
    assert stated, LINE
    with_, without = optima
    for by_phase, res in ((True, with_), (False, without)):
        fast = best_plan_arrays(parse_instance(data(by_phase)))
        assert res.status == "optimal"
        assert fast.metrics.cost_usd == pytest.approx(res.metrics.cost_usd, rel=1e-9)
        assert fast.plan.recipe.teacher_precisions == res.plan.recipe.teacher_precisions
        plan = res.plan
        assert (plan.method, plan.gpu_count, plan.gpu, plan.steps) == ("opd", int(stated[1]), stated[2], number(stated[3]))
        assert " → ".join(map(str, plan.samples_per_prompt)) == stated[4]
    assert " → ".join(with_.plan.recipe.teacher_precisions) == stated[5]
    assert without.plan.recipe.teacher_precisions == (stated[10],) * 3 and not without.plan.teacher_precision_by_phase
    for res, (cost, hours, quality, forgetting) in ((with_, stated.group(6, 7, 8, 9)),
                                                    (without, stated.group(11, 12, 13, 14))):
        m = res.metrics
        assert round(m.cost_usd) == number(cost) and f"{m.wall_hours:.1f}" == hours
        assert f"{m.quality:.2f}" == quality and f"{m.forgetting_points:.2f}" == forgetting


def test_why_it_pays_is_what_the_solver_finds(optima):
    with_, without = optima
    pays = re.search(r"A precision per phase pays \$(\d+) \(([\d.]+) %\), but not through faster scoring: the MI300X runs "
                     r"int8 at ([\d,]+) TOPS and fp8 at ([\d,]+) TFLOPS, so scoring takes ([\d.]+) h instead of ([\d.]+) h",
                     LINE)
    a, b = with_.metrics, without.metrics
    assert round(b.cost_usd - a.cost_usd) == number(pays[1])
    assert f"{100 * (b.cost_usd - a.cost_usd) / b.cost_usd:.2f}" == pays[2]
    gpu = HardwareProfile(load_instance(FILE), with_.plan.hardware).gpu
    assert (ph.peak_tflops(gpu, "int8"), ph.peak_tflops(gpu, "fp8")) == (number(pays[3]), number(pays[4]))
    assert (f"{a.hours_breakdown['scoring']:.2f}", f"{b.hours_breakdown['scoring']:.2f}") == (pays[5], pays[6])
    assert a.hours_breakdown["scoring"] > b.hours_breakdown["scoring"]
    floor = re.search(r"the plan ends at ([\d.]+), just above the (\d+) floor", LINE)
    assert f"{a.quality:.2f}" == floor[1] and load_instance(FILE).constraints.min_quality == number(floor[2]) <= a.quality
    repair = re.search(r"forgetting repair falls from \$([\d,]+) to \$([\d,]+)", LINE)
    assert (round(b.cost_breakdown_usd["forgetting_repair"]), round(a.cost_breakdown_usd["forgetting_repair"])) == \
        (number(repair[1]), number(repair[2]))
    # the saving is forgetting repair's: compute and operations cost a little more
    assert b.cost_breakdown_usd["forgetting_repair"] - a.cost_breakdown_usd["forgetting_repair"] > b.cost_usd - a.cost_usd
    assert a.cost_breakdown_usd["compute"] > b.cost_breakdown_usd["compute"]
    # the int8 phases' ceiling is 2 % lower
    assert "2 % lower" in LINE and d.TEACHER_PRECISION_SCORE_PENALTY["int8"] == 0.02


def test_with_the_shipped_options_it_does_not_pay(optima):
    stated = re.search(r"With `qwen3-8b-math.json`'s own options \(([\w, ]+)\) it does not pay: the optimum is the "
                       r"\$([\d,]+) (\w+) plan with or without it", LINE)
    base = json.loads((INSTANCES / "qwen3-8b-math.json").read_text())
    assert ", ".join(base["teacher"]["precision_options"]) == stated[1]
    results = []
    for by_phase in (True, False):
        base["teacher"]["precision_by_phase"] = by_phase
        results.append(solve(parse_instance(base)))
    for res in results:
        assert res.plan.recipe.teacher_precisions == (stated[3],) * 3
        assert round(res.metrics.cost_usd) == number(stated[2])
    assert results[0].metrics.cost_usd == pytest.approx(optima[1].metrics.cost_usd, rel=1e-9)


def test_the_unpriced_reload_is_the_catalogs_arithmetic(optima):
    stated = re.search(r"The optimum below changes once, to (\w+): Qwen3-32B's ([\d.]+) GB of \w+ weights at ([\d.]+) GB/s "
                       r"per node .*? take ([\d.]+) s spread over its (\d+) nodes, ([\d.]+) s if every node reads all of "
                       r"them, ([\d.]+) % of its wall time", RULE)
    assert stated, RULE
    with_ = optima[0]
    precisions = with_.plan.recipe.teacher_precisions
    changes = [b for a, b in zip(precisions, precisions[1:]) if a != b]
    assert changes == [stated[1]]
    inst = load_instance(FILE)
    gb = ph.weight_bytes(inst.teacher.architecture.params_b, stated[1]) / 1e9
    rate = d.CHECKPOINT_WRITE_GB_PER_S_PER_NODE
    nodes = ph.nodes(HardwareProfile(inst, with_.plan.hardware).gpu, with_.plan.gpu_count)
    assert (f"{gb:.1f}", rate, nodes) == (stated[2], number(stated[3]), int(stated[5]))
    assert f"{gb / rate / nodes:.1f}" == stated[4] and f"{gb / rate:.1f}" == stated[6]
    assert f"{100 * gb / rate / (with_.metrics.wall_hours * 3600):.2f}" == stated[7]


def test_the_rule_states_the_formula_the_code_prices():
    for text in ("C_j = teacher score · (1 − π(p_j))", "q_j = q_{j−1} + (C_j − q_{j−1}) · (1 − e^(−S_j/σ))",
                 "the GPUs hold the weights of the heaviest phase's precision",
                 "forgetting is measured against the last phase's ceiling", "|P|^phases"):
        assert text in RULE, text
    assert d.TEACHER_PRECISION_SCORE_PENALTY == {"bf16": 0.0, "fp8": 0.0, "int8": 0.02, "int4": 0.02}
    assert "bf16 and fp8 0, int8 and int4 2 %" in RULE


def test_the_shipped_instance_is_the_math_job_with_the_option_and_int8():
    shipped = json.loads(FILE.read_text())
    base = json.loads((INSTANCES / "qwen3-8b-math.json").read_text())
    assert shipped["teacher"] == {**base["teacher"], "precision_options": ["bf16", "fp8", "int8", "int4"],
                                  "precision_by_phase": True}
    assert {k: v for k, v in shipped.items() if k not in ("name", "teacher")} == \
        {k: v for k, v in base.items() if k not in ("name", "teacher")}


def test_the_prefix_cache_paragraph_states_what_the_solver_finds():
    """The README's "teacher's prefix cache" figures: qwen3-8b-math.json with and without ``teacher.prefix_caching``
    keeps its plan and moves its teacher tokens, cost and hours as stated."""
    line = next(x for x in README.splitlines() if x.startswith("**The teacher's prefix cache**"))
    stated = re.search(r"the same plan, ([\d.]+) → ([\d.]+) billion teacher tokens, \$([\d,.]+) → \$([\d,.]+), "
                       r"([\d.]+) → ([\d.]+) h", line)
    assert stated, line
    base = json.loads((INSTANCES / "qwen3-8b-math.json").read_text())
    cached = json.loads(json.dumps(base))
    cached["teacher"]["prefix_caching"] = True
    off, on = solve(parse_instance(base)), solve(parse_instance(cached))
    assert off.plan == on.plan
    tokens = [m.quantities["teacher_tokens_scored"] / 1e9 for m in (off.metrics, on.metrics)]
    assert [round(t, 2) for t in tokens] == [number(stated.group(1)), number(stated.group(2))]
    assert [round(m.cost_usd, 2) for m in (off.metrics, on.metrics)] == [number(stated.group(3)), number(stated.group(4))]
    assert [round(m.wall_hours, 2) for m in (off.metrics, on.metrics)] == [number(stated.group(5)), number(stated.group(6))]
    assert "150-token prompts, 4,000-token responses" in line
    assert (base["task"]["prompt_tokens"], base["task"]["response_tokens"]) == (150, 4000)
