"""The README's promises: its stated optimum, its commands, its Python examples and its example error stay true."""

import json
import re
import subprocess
import sys

import pytest

from planopt.instance import load_instance
from planopt.oracles.by_plan import best_plan
from planopt.job.model import solve
from tests.support.common import INSTANCES, ROOT

README = (ROOT / "README.md").read_text()
# Every ```python block of the README, in order: each must run as written, on its own, from the repo root.
PYTHON_BLOCKS = re.findall(r"^```python\n(.*?)^```", README, flags=re.DOTALL | re.MULTILINE)
# Generous bound on one block's run (the examples take a few seconds); a hang fails instead of stalling CI.
BLOCK_TIMEOUT_SECONDS = 120


def test_readme_states_the_tiny_optimum_that_solver_and_oracle_find():
    line = next(l for l in README.splitlines() if l.startswith("**The optimum of `instances/tiny.json`**"))
    stated = re.search(r"(?P<method>SFT|RL|OPD) on (?P<count>\d+) × (?P<gpu>[\w-]+), (?P<steps>[\d,]+) steps.*?: \$(?P<cost>[\d,.]+)", line)
    assert stated, line
    inst = load_instance(INSTANCES / "tiny.json")
    mip, oracle = solve(inst), best_plan(inst)
    for res in (mip, oracle):
        assert res.plan.method == stated["method"].lower()
        assert res.plan.gpu_count == int(stated["count"]) and res.plan.gpu == stated["gpu"]
        assert res.plan.steps == int(stated["steps"].replace(",", ""))
        assert round(res.metrics.cost_usd, 2) == float(stated["cost"].replace(",", ""))


def test_readme_test_command_is_what_ci_runs():
    ci = (ROOT / ".ci" / "run").read_text()
    assert ".venv/bin/pytest -q" in README and ".venv/bin/pytest -q" in ci
    install = 'pip install -e ".[test]"'
    assert install in README and install.replace('"', '') in ci.replace('"', '')


def test_the_readme_has_python_examples():
    assert PYTHON_BLOCKS, "no ```python block found in README.md"


@pytest.mark.parametrize("block", PYTHON_BLOCKS, ids=[f"block{n}" for n in range(len(PYTHON_BLOCKS))])
def test_every_python_example_runs_as_written(block):
    run = subprocess.run([sys.executable, "-c", block], cwd=ROOT, capture_output=True, text=True,
                         timeout=BLOCK_TIMEOUT_SECONDS)
    assert run.returncode == 0, f"README example failed:\n{block}\n--- stderr ---\n{run.stderr[-3000:]}"


def test_readme_example_error_is_the_real_message(tmp_path, monkeypatch):
    """The README's example of a one-line error is what `planopt validate` prints for that mistake."""
    from typer.testing import CliRunner
    from planopt.cli import app
    block = re.search(r"^```\n(error: .*?)\n^```", README, flags=re.DOTALL | re.MULTILINE)
    assert block, "README.md lost its example error block"
    line = block[1]
    stated = re.match(r"error: (?P<path>\S+): hardware\.gpus\.(?P<index>\d+)\S*: unknown GPU '(?P<name>[^']+)'", line)
    assert stated, line
    data = json.loads((INSTANCES / "tiny.json").read_text())
    data["hardware"]["gpus"][int(stated["index"])]["name"] = stated["name"]
    bad = tmp_path / stated["path"]
    bad.parent.mkdir(parents=True, exist_ok=True)
    bad.write_text(json.dumps(data))
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(app, ["validate", stated["path"]])
    assert res.exit_code == 2
    assert res.stderr.strip() == line


def test_readme_python_frontier_shows_the_plans_it_says():
    """Issue 13 item 6: the README's Python frontier example is a curve, not one point, and its comment is true."""
    import planopt
    line = next(l for l in README.splitlines() if l.startswith("frontier = planopt.frontier("))
    kwargs = dict(re.findall(r"(\w+)=(\d+)\)", line))
    stated = re.search(r"# (?P<n>\d+) plans: \$(?P<lo>[\d,]+) at (?P<qlo>[\d.]+) up to \$(?P<hi>[\d,]+) at (?P<qhi>[\d.]+)",
                       README[README.index(line):])
    assert stated and kwargs == {"min_quality": "60"}, line
    frontier = planopt.frontier("instances/qwen3-8b-math.json", x="cost_usd", y="quality", min_quality=60)
    assert len(frontier) == int(stated["n"]) > 1
    cheapest, best = frontier.iloc[-1], frontier.iloc[0]
    assert f"{cheapest.cost_usd:,.0f}" == stated["lo"] and f"{cheapest.quality:.2f}" == stated["qlo"]
    assert f"{best.cost_usd:,.0f}" == stated["hi"] and f"{best.quality:.2f}" == stated["qhi"]
    with pytest.raises(planopt.InputError, match="min_qualty: unknown limit"):
        planopt.frontier("instances/tiny.json", min_qualty=60)


def test_readme_python_sweep_shows_the_plans_it_says():
    """Issue 13 item 6: the README's sweep example moves along the trade-off, and its comment is true."""
    import planopt
    line = next(l for l in README.splitlines() if l.startswith("sweep = planopt.sweep("))
    comment = README[:README.index(line)].splitlines()[-1]
    stated = re.findall(r"\$([\d,]+) at (\d+)", comment)
    floors = [int(q) for _, q in stated]
    assert len(stated) == 3 and f"[{', '.join(map(str, floors))}]" in line, (comment, line)
    sweep = planopt.sweep("instances/qwen3-8b-math.json", "min_quality", floors)
    assert [f"{c:,.0f}" for c in sweep["cost_usd"]] == [cost for cost, _ in stated]
    plans = {(r.steps, r.samples_per_prompt) for r in sweep.itertuples()}
    assert len(plans) == 3 and "three different plans" in comment


def _sentence(start: str) -> str:
    return next(l for l in README.splitlines() if l.startswith(start))


def test_readme_states_the_staged_optimum_and_what_each_stage_reaches_alone():
    import json
    import planopt
    line = _sentence("On `qwen3-32b-sft-then-rl.json`")
    stated = re.search(r"SFT plan alone reaches (?P<sft>[\d.]+) and the best RL plan alone (?P<rl>\d+\.\d+).*?"
                       r"\$(?P<cost>[\d,]+) in (?P<hours>[\d.]+) h, quality (?P<q>[\d.]+), (?P<f>[\d.]+) points", line)
    assert stated, line
    res = planopt.solve(INSTANCES / "qwen3-32b-sft-then-rl.json", sensitivity=False)
    assert [s.method for s in res.plan.stages] == ["sft", "rl"]
    assert f"{res.metrics.cost_usd:,.0f}" == stated["cost"] and f"{res.metrics.wall_hours:.1f}" == stated["hours"]
    assert f"{res.metrics.quality:.2f}" == stated["q"] and f"{res.metrics.forgetting_points:.2f}" == stated["f"]
    data = json.loads((INSTANCES / "qwen3-32b-sft-then-rl.json").read_text())
    data["constraints"].pop("min_quality")
    for method in ("sft", "rl"):
        alone = {**data, "objective": "quality", "training": {**data["training"], "stage_sequences": [[method]]}}
        best = planopt.solve(alone, sensitivity=False)
        assert f"{best.metrics.quality:.2f}" == stated[method], method


def test_readme_states_which_base_wins_where():
    import planopt
    line = _sentence("**Which base model.**")
    stated = re.search(r"\$(?P<cost>[\d,]+) in (?P<hours>[\d.]+) h, quality (?P<q>[\d.]+)\..*?the 8B's "
                       r"\$(?P<cost8>[\d,]+) plan at (?P<q8>[\d.]+)", line)
    assert stated, line
    res = planopt.solve(INSTANCES / "math-8b-or-32b.json", sensitivity=False)
    assert res.student == "Qwen3-32B" and f"{res.metrics.cost_usd:,.0f}" == stated["cost"]
    assert f"{res.metrics.quality:.2f}" == stated["q"]
    front = planopt.frontier(INSTANCES / "math-8b-or-32b.json", x="cost_usd", y="quality", min_quality=60)
    small = front[front["student"] == "Qwen3-8B"]
    assert len(small) == 1 and (front["student"] == "Qwen3-32B").sum() == len(front) - 1
    assert f"{small['cost_usd'].iloc[0]:,.0f}" == stated["cost8"] and f"{small['quality'].iloc[0]:.2f}" == stated["q8"]


def test_readme_states_the_split_rollout_optimum_and_what_colocation_reaches():
    """Issue 12 item 3: every figure of the split-rollout instance's sentences is what the solver finds."""
    import json
    import planopt
    from planopt.models.catalog import defaults as d
    section = _sentence("**Separate rollout hardware.**")
    assert f"in {d.ROLLOUT_HBM_SHARE:.0%} of their memory" in section.replace(" %", "%")
    assert f"has {d.DEDICATED_ROLLOUT_HBM_SHARE:.0%} of their memory" in section.replace(" %", "%")
    line = _sentence("On `qwen3-32b-agentic-rl-split-rollout.json`")
    stated = re.search(
        r"quality floor (?P<floor>\d+) from (?P<base>\d+), a one-week deadline of (?P<deadline>\d+) h, training on at most "
        r"(?P<nb>\d+) B200 or (?P<nh>\d+) H100\).*?the fastest one, RL on (?P<fast_n>\d+) × (?P<fast_gpu>[\w-]+), takes "
        r"(?P<fast_h>[\d.]+) h\. The optimum keeps that RL plan \((?P<steps>[\d,]+) steps, rank-(?P<rank>\d+) LoRA, "
        r"(?P<spp>[\d → ]+) samples per prompt\) on (?P<n>\d+) × (?P<gpu>[\w-]+) and generates on (?P<rn>\d+) × "
        r"(?P<rgpu>[\w-]+) of their own: generation falls from (?P<gen_co>[\d.]+) h to (?P<gen>[\d.]+) h, and the job costs "
        r"\$(?P<cost>[\d,]+) in (?P<hours>[\d.]+) h, quality (?P<q>[\d.]+)\. With two weeks \((?P<two>\d+) h\) the colocated "
        r"plan is optimal again, at \$(?P<cost2>[\d,]+) in (?P<hours2>[\d.]+) h: the split buys (?P<gain_h>\d+) hours for "
        r"\$(?P<extra>[\d,]+)\.", line)
    assert stated, line
    path = INSTANCES / "qwen3-32b-agentic-rl-split-rollout.json"
    data = json.loads(path.read_text())
    c = data["constraints"]
    assert (c["min_quality"], data["task"]["baseline_score"], c["deadline_hours"]) == \
        (float(stated["floor"]), float(stated["base"]), float(stated["deadline"]))
    caps = {g["name"]: g["available_gpus"] for g in data["hardware"]["gpus"]}
    assert caps == {"B200": int(stated["nb"]), "H100-SXM": int(stated["nh"])}
    res = planopt.solve(path, sensitivity=False)
    p = res.plan
    assert (p.method, p.steps, p.adapter, p.lora_rank) == ("rl", int(stated["steps"].replace(",", "")), "lora", int(stated["rank"]))
    assert " → ".join(map(str, p.samples_per_prompt)) == stated["spp"].strip()
    assert (p.gpu_count, p.gpu, p.rollout_gpu_count, p.rollout_gpu) == (int(stated["n"]), stated["gpu"], int(stated["rn"]), stated["rgpu"])
    assert f"{res.metrics.cost_usd:,.0f}" == stated["cost"] and f"{res.metrics.wall_hours:.1f}" == stated["hours"]
    assert f"{res.metrics.quality:.2f}" == stated["q"] and f"{res.metrics.hours_breakdown['generation']:.1f}" == stated["gen"]
    colocated = {**data, "hardware": {**data["hardware"], "rollout_gpus": []}}
    assert planopt.solve(colocated, sensitivity=False).status == "infeasible"
    fastest = planopt.solve({**colocated, "objective": "time", "constraints": {**c, "deadline_hours": None}}, sensitivity=False)
    f = fastest.plan
    assert (f.method, f.gpu_count, f.gpu) == ("rl", int(stated["fast_n"]), stated["fast_gpu"])
    assert f"{fastest.metrics.wall_hours:.1f}" == stated["fast_h"]
    two = planopt.solve({**data, "constraints": {**c, "deadline_hours": float(stated["two"])}}, sensitivity=False)
    assert two.plan.rollout_gpu is None and (two.plan.recipe, two.plan.gpu, two.plan.gpu_count) == (p.recipe, p.gpu, p.gpu_count)
    assert f"{two.metrics.cost_usd:,.0f}" == stated["cost2"] and f"{two.metrics.wall_hours:.1f}" == stated["hours2"]
    assert f"{two.metrics.hours_breakdown['generation']:.1f}" == stated["gen_co"]
    assert round(two.metrics.wall_hours - res.metrics.wall_hours) == int(stated["gain_h"])
    assert f"{round(res.metrics.cost_usd) - round(two.metrics.cost_usd):,}" == stated["extra"]


def test_readme_states_the_asynchronous_optimum_and_the_staleness_penalty():
    """Issue 12 item 4: the asynchronous section's figures are the defaults' and the solver's."""
    import json
    import planopt
    from planopt.models.catalog import defaults as d
    line = _sentence("**Asynchronous RL.**")
    stated = re.search(r"δ = `priors\.staleness_gain_loss_per_step` = (?P<delta>[\d.]+), .*?AIME24: (?P<q0>[\d.]+) synchronous, "
                       r"(?P<q8>[\d.]+) at η = 8 and (?P<q16>[\d.]+) at η = 16, from a base of (?P<base>[\d.]+)\).*?"
                       r"the optimum generates one step behind on the same (?P<n>\d+) × (?P<gpu>[\w-]+) and (?P<rn>\d+) × "
                       r"(?P<rgpu>[\w-]+), with (?P<spp>[\d → ]+) samples per prompt.*?: \$(?P<cost>[\d,]+) in (?P<hours>[\d.]+) h, "
                       r"quality (?P<q>[\d.]+)\.", line)
    assert stated, line
    assert float(stated["delta"]) == d.STALENESS_GAIN_LOSS_PER_STEP
    gain = float(stated["q0"]) - float(stated["base"])
    assert round(1 - ((float(stated["q8"]) - float(stated["base"])) / gain) ** (1 / 8), 4) == d.STALENESS_GAIN_LOSS_PER_STEP
    data = json.loads((INSTANCES / "qwen3-32b-agentic-rl-split-rollout.json").read_text())
    data["training"]["staleness_steps_options"] = [0, 1]
    res = planopt.solve(data, sensitivity=False)
    p = res.plan
    assert p.staleness_steps == 1 and (p.gpu_count, p.gpu, p.rollout_gpu_count, p.rollout_gpu) == \
        (int(stated["n"]), stated["gpu"], int(stated["rn"]), stated["rgpu"])
    assert " → ".join(map(str, p.samples_per_prompt)) == stated["spp"].strip()
    assert f"{res.metrics.cost_usd:,.0f}" == stated["cost"] and f"{res.metrics.wall_hours:.1f}" == stated["hours"]
    assert f"{res.metrics.quality:.2f}" == stated["q"]


def test_readme_states_the_trained_teacher_optimum():
    """Issue 12 item 1: every figure of the trained-teacher instance's sentence is the instance's or the solver's."""
    import json
    import planopt
    from planopt.instance import parse_instance
    from planopt.models.cost.teacher_training import teacher_option
    line = _sentence("**A teacher trained as a stage.**")
    stated = re.search(
        r"On `(?P<file>[\w.-]+)` \(the math job, whose (?P<teacher>[\w.-]+) teacher must first be brought from (?P<base>\d+) to "
        r"(?P<score>[\d.]+); budget \$(?P<budget>[\d,]+)\), no SFT or RL plan reaches the quality floor of (?P<floor>\d+) "
        r"\(at best (?P<alone>[\d.]+)\), and the optimum trains the teacher by (?P<tm>SFT|RL) for (?P<ts>[\d,]+) steps on "
        r"(?P<tn>\d+) × (?P<tg>[\w-]+) \(\$(?P<tc>[\d,]+) in (?P<th>[\d.]+) h, reaching (?P<tq>[\d.]+)\), then distils it in "
        r"(?P<prec>\w+) for (?P<steps>[\d,]+) steps on (?P<n>\d+) × (?P<gpu>[\w-]+): \$(?P<cost>[\d,]+) in (?P<hours>[\d.]+) h, "
        r"quality (?P<q>[\d.]+)\.", line)
    assert stated, line
    data = json.loads((INSTANCES / stated["file"]).read_text())
    t = data["teacher"]
    assert (t["architecture"]["preset"], t["training"]["baseline_score"], t["score"]) == \
        (stated["teacher"], float(stated["base"]), float(stated["score"]))
    assert f"{data['constraints']['budget_usd']:,.0f}" == stated["budget"]
    assert data["constraints"]["min_quality"] == float(stated["floor"])
    res = planopt.solve(data, sensitivity=False)
    p, tp = res.plan, res.plan.teacher_training
    assert (p.method, p.teacher_precision, p.steps, p.gpu_count, p.gpu) == \
        ("opd", stated["prec"], int(stated["steps"].replace(",", "")), int(stated["n"]), stated["gpu"])
    assert f"{res.metrics.cost_usd:,.0f}" == stated["cost"] and f"{res.metrics.wall_hours:.1f}" == stated["hours"]
    assert f"{res.metrics.quality:.2f}" == stated["q"]
    assert (tp.method, tp.steps, tp.gpu_count, tp.gpu) == \
        (stated["tm"].lower(), int(stated["ts"].replace(",", "")), int(stated["tn"]), stated["tg"])
    from planopt.models.cost.evaluator import Evaluator
    option = teacher_option(parse_instance(data), tp, "opd", Evaluator)
    assert f"{option.cost_usd:,.0f}" == stated["tc"] and f"{option.wall_hours:.1f}" == stated["th"]
    assert f"{option.quality:.2f}" == stated["tq"]
    without = json.loads(json.dumps(data))
    without["training"]["methods"].pop("opd")
    assert planopt.solve(without, sensitivity=False).status == "infeasible"
    without.update(objective="quality", constraints={**data["constraints"], "min_quality": None})
    assert f"{planopt.solve(without, sensitivity=False).metrics.quality:.2f}" == stated["alone"]


def test_readme_states_what_tracking_the_shipped_run_says():
    """The verdict and figures "Tracking a run" states are what `planopt track` finds on the shipped run."""
    import planopt
    section = README[README.index("### Tracking a run"):README.index("### Reliability by cluster")]
    run = INSTANCES / "runs" / "qwen3-8b-math-slow"
    r = planopt.track(run / "instance.json", run / "plan.json", run / "tensorboard", run / "mapping.json")
    assert f"the verdict, `{r.headline}`" in section
    step = next(c for c in r.checks if c.name == "step_seconds")
    assert (f"take {step.measured:.1f} s where the plan's band is {step.predicted['p10']:.0f}–{step.predicted['p90']:.0f} s"
            in section)
    quality = r.after.meets_limit["min_quality"].mean(), r.before.meets_limit["min_quality"].mean()
    assert (f"every limit in {r.after.share():.1%} of the scenarios, down from {r.before.share():.1%} before the run "
            f"(its quality floor in {quality[0]:.1%}, down from {quality[1]:.1%})").replace("%", " %") in section



def test_readme_states_what_track_jsons_series_carries():
    """"Tracking a run" says what ``track --json``'s ``series`` holds (the picture's data, the page's Run view's)."""
    import planopt
    from planopt.runs.track import BAND_POINTS
    section = README[README.index("### Tracking a run"):README.index("### Reliability by cluster")]
    assert f"P10, P50 and P90 at up to {BAND_POINTS} steps from its first to its last" in section
    run = INSTANCES / "runs" / "qwen3-8b-math-slow"
    series = planopt.track(run / "instance.json", run / "plan.json", run / "wandb.csv", run / "mapping.json",
                           scenarios=100).to_dict()["series"]
    assert [s["name"] for s in series] == ["step_seconds", "task_score", "forgetting"]
    steps = series[0]["predicted"]["step"]
    assert len(steps) <= BAND_POINTS and (steps[0], steps[-1]) == (1, 400)
    assert all(s["measured"]["step"][-1] == 80 for s in series)

def test_readme_states_what_the_imported_lambda_prices_buy():
    """The "Using them" example: the plan of ``instances/prices/tiny-lambda-prices.json`` buys what the README
    says, at the imported file's price, and its 16-GPU count is left out."""
    from planopt.models.cost.hardware import plan_offers, unheld_counts
    stated = re.search(r"its plan buys (\d+) GPUs from (\w+) ([\w-]+) at \$([\d.]+) per GPU-hour", README)
    assert stated, "the README no longer states what the imported prices buy"
    inst = load_instance(INSTANCES / "prices" / "tiny-lambda-prices.json")
    result = solve(inst)
    (offer,) = plan_offers(inst, result.plan)
    assert (str(offer["count"]), offer["provider"], offer["region"], f"{offer['usd_per_gpu_hour']:.2f}") == stated.groups()
    rows = json.loads((INSTANCES / "prices" / "lambda-vms-sample.json").read_text())["prices"]
    assert offer["usd_per_gpu_hour"] == next(r["usd_per_gpu_hour"] for r in rows if r["region"] == offer["region"])
    assert unheld_counts(inst) == ["hardware.gpus.0: H100-SXM × 16 (no on-demand offer in the price catalog holds them)"]
    assert "its 16-GPU count is left out" in README


@pytest.mark.slow  # 11 s on 2 cores (the default run's heaviest); .ci/run runs it with -m slow
def test_readme_states_the_monthly_optimum_and_the_single_run_it_changes():
    """"Repeated releases": the optimum over 12 releases (MIP and oracle), and the single run's (the same file
    without ``releases``), each method, size, length and cost as the README states them."""
    from planopt.instance import parse_instance
    line = next(l for l in README.splitlines() if l.startswith("**The optimum of `instances/qwen3-8b-math-monthly.json`**"))
    found = re.findall(r"(SFT|OPD) on (\d+) × ([\w-]+), ([\d,]+) steps: \$([\d,]+)", line)
    (once_method, once_n, once_gpu, once_steps, once_cost), (method, n, gpu, steps, total) = found
    first, later = re.search(r"\(\$([\d,]+) the first release, \$([\d,]+) each later one\)", line).groups()
    sft_total = re.search(r"the same SFT plan would cost \$([\d,]+)", line)[1]
    doc = json.loads((INSTANCES / "qwen3-8b-math-monthly.json").read_text())
    monthly = load_instance(INSTANCES / "qwen3-8b-math-monthly.json")
    single = parse_instance({k: v for k, v in doc.items() if k != "releases"})
    number = lambda s: int(s.replace(",", ""))  # noqa: E731
    for inst, (m, count, g, st, cost) in ((single, (once_method, once_n, once_gpu, once_steps, once_cost)),
                                          (monthly, (method, n, gpu, steps, total))):
        for res in (solve(inst), best_plan(inst)):
            assert (res.plan.method, res.plan.gpu_count, res.plan.gpu, res.plan.steps) == (m.lower(), int(count), g, number(st))
            assert round(res.metrics.cost_usd) == number(cost)
    assert once_method != method
    r = solve(monthly).metrics.releases
    assert (round(r["first_release_usd"]), round(r["later_release_usd"])) == (number(first), number(later))
    from planopt.models.cost.evaluator import Evaluator
    assert round(Evaluator(monthly).evaluate(solve(single).plan).cost_usd) == number(sft_total)
    opd_once = re.search(r"against OPD's \$([\d,]+)", line)[1]  # the monthly optimum, run once
    assert round(Evaluator(single).evaluate(solve(monthly).plan).cost_usd) == number(opd_once)


def test_readme_states_what_evaluation_costs_and_what_switching_it_off_saves():
    """"Evaluation frequency is an input": the optimum's validation runs, hours and GPU money on the math job, and
    what the same plan saves and reaches with ``every_steps: null``, as the README states them."""
    from planopt.instance import parse_instance
    from planopt.models.cost.evaluator import Evaluator
    line = next(l for l in README.splitlines() if l.startswith("**Evaluation frequency is an input, not a decision.**"))
    stated = re.search(r"optimum's (?P<runs>\d+) validation runs \((?P<method>OPD|RL|SFT), (?P<steps>[\d,]+) steps, every "
                       r"(?P<every>\d+) steps\) take (?P<hours>[\d.]+) h and \$(?P<gpu>[\d.]+) of GPU time; .*? costs "
                       r"\$(?P<saved>[\d.]+) less \(the evaluation line and \$(?P<ops>[\d.]+) of operations .*?reaches the "
                       r"same (?P<quality>[\d.]+)", line)
    assert stated, line
    doc = json.loads((INSTANCES / "qwen3-8b-math.json").read_text())
    on, off = parse_instance(doc), parse_instance({**doc, "evaluation": {"every_steps": None}})
    assert on.evaluation.every_steps == int(stated["every"])
    plan = solve(on).plan
    assert (plan.stages[0].recipe.method, plan.stages[0].recipe.steps) == (stated["method"].lower(), int(stated["steps"]))
    m_on, m_off = Evaluator(on).evaluate(plan), Evaluator(off).evaluate(plan)
    assert m_on.quantities["evaluations_run"] == int(stated["runs"])
    assert round(m_on.hours_breakdown["evaluation"], 2) == float(stated["hours"])
    assert round(m_on.cost_breakdown_usd["evaluation"], 2) == float(stated["gpu"])
    assert round(m_on.cost_usd - m_off.cost_usd, 2) == float(stated["saved"])
    ops = m_on.cost_breakdown_usd["operations"] - m_off.cost_breakdown_usd["operations"]
    assert round(ops, 2) == float(stated["ops"])
    assert round(m_on.quality, 2) == round(m_off.quality, 2) == float(stated["quality"])
    assert solve(off).plan == plan  # switching evaluation off does not move the optimum: nothing prices the score


def test_readme_states_what_the_layered_portfolio_plans():
    """The layered portfolio's paragraph (``instances/portfolio-layered.json``): the staged job's two stages one after
    another on 16 H100s each, the teacher's 8 H100s before its student's 8, the student chosen, the total."""
    import planopt
    line = _sentence("- **Every layer of a job**")
    stated = re.search(r"SFT on (?P<sft>\d+) H100s, then RL on (?P<rl>\d+) H100s.*?the (?P<res>\d+) reserved; the teacher "
                       r"trains on (?P<t>\d+) H100s, then its student distils from it on (?P<s>\d+) H100s; the third job "
                       r"picks (?P<student>[\w.-]+); \$(?P<cost>[\d,]+) in all", line)
    assert stated, line
    res = planopt.solve_portfolio(INSTANCES / "portfolio-layered.json")
    assert res.status == "optimal" and f"{res.cost_usd:,.0f}" == stated["cost"]
    staged, taught, chosen = res.jobs
    assert [(g.stage, g.count) for g in staged.gangs] == [(0, int(stated["sft"])), (1, int(stated["rl"]))]
    assert max(b for b, _ in staged.gangs[0].gpu_hours) < min(b for b, _ in staged.gangs[1].gpu_hours)
    assert {k for g in staged.gangs for _, k in g.gpu_hours} == {"reserved"} and res.reserved["H100-SXM"] == int(stated["res"])
    assert [(g.role, g.count) for g in taught.gangs] == [("teacher", int(stated["t"])), ("training", int(stated["s"]))]
    assert chosen.plan.student == stated["student"]
    assert planopt.replay_schedule(planopt.load_portfolio(INSTANCES / "portfolio-layered.json"), res.to_dict()) == []


@pytest.mark.slow  # 4 s on 2 cores (the default run's heaviest); .ci/run runs it with -m slow
def test_readme_states_the_monthly_optimum_under_uncertainty():
    """"Repeated releases": the chance-constrained optimum at 75 % of 200 scenarios over the 12 releases, as the
    README's command prints it (plan, point and expected cost, in-sample and fresh shares)."""
    from planopt.uncertainty.chance import solve_chance
    line = next(l for l in README.splitlines() if l.startswith("**Under uncertainty, at 75 % of 200 scenarios**"))
    stated = re.search(r"OPD on (\d+) × ([\w-]+), ([\d,]+) steps, with (\d+) samples per prompt in its middle phase "
                       r"instead of (\d+).*?: \$([\d,]+) at the point values, \$([\d,]+) expected.*?in ([\d.]+) % of them "
                       r"and in ([\d.]+) % of 10,000", line)
    assert stated, line
    n, gpu, steps, middle, before, point, expected, inside, fresh = stated.groups()
    monthly = load_instance(INSTANCES / "qwen3-8b-math-monthly.json")
    res = solve_chance(monthly, 0.75, 200, 0, out_of_sample=10_000)
    plan = res.plan
    assert (plan.method, plan.gpu_count, plan.gpu, plan.steps) == ("opd", int(n), gpu, int(steps.replace(",", "")))
    assert plan.stages[0].recipe.samples_per_prompt[1] == int(middle)
    assert solve(monthly).plan.stages[0].recipe.samples_per_prompt[1] == int(before)
    assert round(res.metrics.cost_usd) == int(point.replace(",", ""))
    assert round(res.risk["expected"]["cost_usd"]) == int(expected.replace(",", ""))
    assert round(100 * res.risk["in_sample_share"], 1) == float(inside)
    assert round(100 * res.risk["out_of_sample_share"], 1) == float(fresh)
