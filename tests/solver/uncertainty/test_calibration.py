"""`planopt calibrate`: the public calibration set reproduces published runs,
and the command's exit codes and JSON shape are what FORMAT.md promises.

The cases live in instances/calibration/ (verbatim copies of the public set).
Expected values here are the published figures or hand arithmetic on them.
"""

import json
import math
import shutil

import pytest
from typer.testing import CliRunner

from planopt.models.catalog import defaults as d
from planopt.uncertainty.calibrate import arm_gpu_hours, calibrate_case, calibrate_dir, load_case, sft_hours, step_seconds
from planopt.cli import app
from tests.support.common import INSTANCES

CAL = INSTANCES / "calibration"
CASES = sorted(CAL.glob("*.json"))
# Published runs beyond the public set (NeMo RL performance summary rows),
# each with its own tolerance; see CALIBRATION.md.
VALIDATION = INSTANCES / "calibration-validation"
VALIDATION_CASES = sorted(VALIDATION.glob("*.json"))
# Validation cases the model does not yet bring within their tolerance (all
# too fast; CALIBRATION.md "Where the model is weak" explains each). Strict:
# a case that starts passing must be moved out of this list.
KNOWN_WEAK = {
    # MoE rows priced with the calibrated MoE factor (defaults.STEP_TIME_CALIBRATION_FACTOR, 0.574, the
    # median of the 20 MoE rows, issue 24 item 5): the DeepSeek-V3 and Qwen3-235B-on-GB200 rows it was fitted
    # against now pass; the two Qwen3-30B-A3B H100 rows, which the uncalibrated physics priced at 1.15 and
    # 1.12, are too slow with it (CALIBRATION.md, "Out-of-fold coverage")
    "nemo-rl-v05-qwen3-30b-a3b-32xh100": "Qwen3-30B-A3B v0.5 on 32 H100: 1.77 with the MoE calibration",
    "nemo-rl-v06-qwen3-30b-a3b-32xh100": "Qwen3-30B-A3B v0.6 on 32 H100: 1.71 with the MoE calibration",
    # SFT runs on LlamaFactory + DeepSpeed ZeRO-3 offload on 4 nodes: ~0.6, too fast once DeepSpeed's host optimiser
    # step is priced (the single-node Bespoke-Stratos and Sky-T1 rows of the same recipe pass); what remains is
    # multi-node (CALIBRATION.md, "Trainer backends")
    "sft-openthinker-7b-32xh100-offload": "OpenThinker-7B, 20 h on 32 H100 with ZeRO-3 offload: 0.62",
    "sft-openthinker-32b-32xh100": "OpenThinker-32B, 90 h on 32 H100 with ZeRO-3 offload: 0.55",
    # DeepSpeed-Chat step 1 (ZeRO-3, DeepSpeed's own defaults): OPT-66B on 64 A100-80GB is too slow, its ZeRO-3
    # collectives over 8 nodes priced in series (2.2 h) alone outlast the published 82 min
    "sft-deepspeed-chat-opt-66b-64xa100-80g": "DeepSpeed-Chat OPT-66B step 1 on 64 A100: 1.63x",
    # rows added from sources new to the project (issue 24 item 6), nothing fitted to them. Forgetting by
    # family (issue 24 item 4): every row is a 'knowledge' benchmark, priced with Biderman et al.'s IFT share
    # (0.19 of the baseline) on DeepSeekMath's mix curve; these are 100B-500B-token continual pre-training runs,
    # and the share misses them either way (Code Llama HellaSwag and WinoGrande, Swallow 7B HellaSwag now pass)
    "forgetting-codellama-7b-arc": "Code Llama 7B on ARC: 0.62 of the published drop",
    "forgetting-codellama-7b-mmlu": "Code Llama 7B on MMLU: 0.46",
    "forgetting-codellama-7b-truthfulqa": "Code Llama 7B on TruthfulQA: predicted 5.9 points, published 0.94",
    "forgetting-flan-t5-base-math-only-mnli": "Flan-T5-base math-only SFT on MNLI: 0.24 of a collapse (64.5 points)",
    "forgetting-swallow-70b-triviaqa": "Swallow 70B on TriviaQA: 2.4x (the 70B forgets less than the 7B; no size term)",
    "forgetting-swallow-7b-triviaqa": "Swallow 7B on TriviaQA: 0.61",
    # DeepSeek-Coder-V2's general-language table (6T tokens at 70 % code and math, chat models on both sides):
    # the closed-book QA drops of both sizes are larger than the knowledge share gives on NaturalQuestions, and
    # ARC-Easy at 98.1 (near its ceiling) barely moves; TriviaQA of both sizes passes
    "forgetting-deepseek-coder-v2-arc-easy": "DeepSeek-Coder-V2 on ARC-Easy: predicted 6.8 points, published 0.7",
    "forgetting-deepseek-coder-v2-lite-naturalquestions": "DeepSeek-Coder-V2-Lite on NaturalQuestions: 0.52",
    "forgetting-deepseek-coder-v2-naturalquestions": "DeepSeek-Coder-V2 on NaturalQuestions: 0.62",
    # verl's DeepSeek-V3 on 96 H20 with offload (Megatron backend): 0.30, the large-MoE pattern above
    # on a GPU of little compute, with parameter and optimizer offload
    "verl-deepseek-v3-671b-96xh20-offload": "DeepSeek-V3 on 96 H20 with offload (verl, Megatron): 0.52",
}
SFT_CASES = sorted(VALIDATION.glob("sft-*.json"))
# Public cases still outside their tolerance (strict: one that starts passing must
# leave this list). Empty since issue 9 items 1-4: the GB200 Llama 8B case passes.
KNOWN_WEAK_PUBLIC: dict[str, str] = {}
# the dense H100 step-time case of the public set
NEMO_H100 = CAL / "nemo-rl-llama31-8b-16xh100.json"
runner = CliRunner()


def _expected_failures(rows):
    return {r["id"] if isinstance(r, dict) else r.id for r in rows} & set(KNOWN_WEAK_PUBLIC)


def test_the_public_set_is_present_and_stands_alone():
    ids = {json.loads(p.read_text())["id"] for p in CASES}
    assert {"llama3-405b-interruptions", "nemo-rl-llama31-8b-8xgb200", "nemo-rl-llama31-8b-16xh100",
            "qwen3-table21-rl-vs-opd", "tml-opd-qwen3-8b-flops", "tml-personalization-forgetting", "young-daly-3h"} <= ids
    # the mislabelled case (91.0 s is a GB200 row) is gone; the format travels with the cases
    assert "nemo-rl-llama31-8b-8xh100" not in ids
    assert "predict = \"sft_hours\"" in (CAL / "FORMAT.md").read_text()


@pytest.mark.parametrize("path", [
    pytest.param(p, marks=pytest.mark.xfail(reason=KNOWN_WEAK_PUBLIC[p.stem], strict=False)) if p.stem in KNOWN_WEAK_PUBLIC else p
    for p in CASES], ids=[p.stem for p in CASES])
def test_every_figure_is_within_its_tolerance(path):
    case = json.loads(path.read_text())
    rows = calibrate_case(path)
    published = case["published"][case["predict"]] if case["predict"] in case["published"] else None
    # one row per published figure
    expected = len(published) if isinstance(published, list) else len(case["published"])
    assert len(rows) == expected
    for row in rows:
        assert row.predicted is not None and math.isfinite(row.predicted)
        assert 1 / case["tolerance"] <= row.predicted / row.published <= case["tolerance"], row
        assert row.passed


def test_the_validation_set_is_present_and_sourced():
    assert len(VALIDATION_CASES) >= 10
    assert set(KNOWN_WEAK) <= {p.stem for p in VALIDATION_CASES}
    for p in VALIDATION_CASES:
        case = json.loads(p.read_text())
        assert case["source"] and case["notes"], p.name
        assert case["tolerance"] <= 1.5


@pytest.mark.parametrize("path", [
    pytest.param(p, marks=pytest.mark.xfail(reason=KNOWN_WEAK[p.stem], strict=True)) if p.stem in KNOWN_WEAK else p
    for p in VALIDATION_CASES], ids=[p.stem for p in VALIDATION_CASES])
def test_every_validation_figure_is_within_its_tolerance(path):
    case = json.loads(path.read_text())
    for row in calibrate_case(path):
        assert row.predicted is not None and math.isfinite(row.predicted)
        assert 1 / case["tolerance"] <= row.predicted / row.published <= case["tolerance"], row


def test_moe_students_pay_expert_all_to_all_and_dense_ones_do_not():
    path = next(p for p in VALIDATION_CASES if "qwen3-30b-a3b" in p.stem and "h100" in p.stem)
    _, by = step_seconds(load_case(path))
    assert sum(v for k, v in by.items() if "alltoall" in k) > 0
    _, dense = step_seconds(load_case(NEMO_H100))
    assert not any("alltoall" in k for k in dense)


def test_flops_follow_the_source_convention():
    # TML OPD: 150 steps x 512 prompts x 4 samples x 4,200 tokens; student 8N, teacher 2N per token
    rows = {r.figure: r for r in calibrate_case(CAL / "tml-opd-qwen3-8b-flops.json")}
    tokens = 150 * 512 * 4 * 4200
    assert rows["student_flops"].predicted == pytest.approx(tokens * 8 * 8.19e9)
    assert rows["teacher_flops"].predicted == pytest.approx(tokens * 2 * 32.8e9)


def test_interruptions_scale_with_gpus_and_hours(tmp_path):
    case = json.loads((CAL / "llama3-405b-interruptions.json").read_text())
    case.update(gpu_count=1024, hours=100)
    p = tmp_path / "small.json"
    p.write_text(json.dumps(case))
    (row,) = calibrate_case(p)
    assert row.predicted == pytest.approx(419 / (16384 * 1296) * 1024 * 100)


@pytest.mark.parametrize("mtbf_h, write_s", [(24.0, 60), (100.0, 120), (3.0, 300), (0.25, 300)])
def test_the_optimiser_finds_the_exact_optimum_on_its_own(tmp_path, mtbf_h, write_s):
    from planopt.models.cost.physics import optimal_checkpoint_interval_hours, young_daly_interval_hours
    case = json.loads((CAL / "young-daly-3h.json").read_text())
    case.update(job_mtbf_hours=mtbf_h, checkpoint_write_seconds=write_s, restart_seconds=600)
    p = tmp_path / "yd.json"
    p.write_text(json.dumps(case))
    (row,) = calibrate_case(p)
    exact = optimal_checkpoint_interval_hours(write_s / 3600, 1 / mtbf_h) * 60
    assert row.predicted == pytest.approx(exact, rel=0.005)  # the grid steps by 0.5 %
    young = young_daly_interval_hours(write_s / 3600, 1 / mtbf_h) * 60
    if write_s / 3600 / mtbf_h > 0.01:
        # Young's first-order rule overshoots once the write is a visible share of the MTBF
        # (Daly 2006): 42.4 vs 39.1 min at 5 min / 3 h; 12.2 vs 9.2 min at 5 min / 15 min
        assert young > exact * 1.05


def test_step_time_grows_with_responses_and_shrinks_with_gpus(tmp_path):
    base = json.loads(NEMO_H100.read_text())

    def seconds(**changes):
        case = json.loads(json.dumps(base))
        for key, value in changes.items():
            if key == "gpu_count":
                case["gpu_count"] = value
            else:
                case["workload"][key] = value
        p = tmp_path / "c.json"
        p.write_text(json.dumps(case))
        return step_seconds(load_case(p))[0]

    t = seconds()
    assert seconds(response_tokens=2000) > t
    assert seconds(max_response_tokens=8192) > t
    assert seconds(gpu_count=32) < t
    assert seconds(activation_recompute=False) < t


def test_nemo_rl_step_breakdown_has_every_part():
    _, by = step_seconds(load_case(NEMO_H100))
    families = {k.split("|")[0] for k in by}
    assert {"decode_tokens", "rollout_tail_steps", "student_logprob_flops", "train_flops", "weight_sync_steps"} <= families
    # NeMo RL v0.3 (8 H100, Llama-3.1-8B): refit ~5 s of a ~112 s step
    sync = sum(v for k, v in by.items() if k.startswith("weight_sync"))
    assert 2.5 < sync < 10


def test_learning_curves_are_anchored_on_qwen3_table21_gpu_hours():
    case = load_case(CAL / "qwen3-table21-rl-vs-opd.json")
    rl, _ = arm_gpu_hours(case, 0)
    opd, _ = arm_gpu_hours(case, 1)
    assert 17_920 / 1.25 < rl < 17_920 * 1.25
    assert 1_800 / 1.25 < opd < 1_800 * 1.25


def test_forgetting_shrinks_with_general_data(tmp_path):
    case = json.loads((CAL / "tml-personalization-forgetting.json").read_text())
    shares = [1.0, 0.9, 0.7, 0.5]
    case["points"] = [{"external_data_share": s} for s in shares]
    case["published"]["forgetting_points"] = [1.0] * len(shares)
    p = tmp_path / "f.json"
    p.write_text(json.dumps(case))
    values = [r.predicted for r in calibrate_case(p)]
    assert values == sorted(values, reverse=True)
    assert values[0] < case["baseline_score"]


# --- the command --------------------------------------------------------------

@pytest.mark.slow  # 7 s on 2 cores (the default run's heaviest); .ci/run runs it with -m slow
def test_cli_exit_0_only_when_every_case_passes(tmp_path):
    rows = calibrate_dir(CAL)
    failing = {r.id for r in rows if not r.passed}
    assert failing <= set(KNOWN_WEAK_PUBLIC)
    res = runner.invoke(app, ["calibrate", str(CAL)])
    assert res.exit_code == (1 if failing else 0), res.output
    for p in CASES:
        assert json.loads(p.read_text())["id"] in res.output
    # without the known-weak cases the set passes: exit 0
    for p in CASES:
        if p.stem not in KNOWN_WEAK_PUBLIC:
            shutil.copy(p, tmp_path / p.name)
    res = runner.invoke(app, ["calibrate", str(tmp_path)])
    assert res.exit_code == 0, res.output


def test_cli_json_is_one_array_of_figures():
    res = runner.invoke(app, ["calibrate", str(CAL), "--json"])
    rows = json.loads(res.stdout)
    assert res.exit_code == (1 if any(not r["passed"] for r in rows) else 0), res.output
    assert isinstance(rows, list) and rows
    for row in rows:
        # FORMAT.md "Output": these six, plus `interval` [p10, p90] where the cost model carries an
        # uncertainty model, plus `error` only on a row that could not be predicted; `trainer` says
        # which trainer the row was priced with (FORMAT.md "Trainer"), null for a kind that does not train
        assert {"id", "figure", "predicted", "published", "ratio", "passed", "trainer"} <= set(row)
        assert set(row) <= {"id", "figure", "predicted", "published", "ratio", "passed", "interval", "trainer"}
        assert row["trainer"] == (None if row["id"] in ("young-daly-3h", "llama3-405b-interruptions") else "default")
        if row.get("interval") is not None:
            assert row["interval"][0] <= row["interval"][1]
        assert row["ratio"] == pytest.approx(row["predicted"] / row["published"])
    figures = {(r["id"], r["figure"]) for r in rows}
    assert ("tml-opd-qwen3-8b-flops", "teacher_flops") in figures
    assert ("tml-personalization-forgetting", "forgetting_points[1]") in figures


@pytest.mark.slow  # 7 s on 2 cores (the default run's heaviest); .ci/run runs it with -m slow
def test_cli_exit_1_when_a_figure_is_off(tmp_path):
    for p in CASES:
        shutil.copy(p, tmp_path / p.name)
    bad = json.loads((CAL / "llama3-405b-interruptions.json").read_text())
    bad["published"]["interruptions"] = 419_000
    (tmp_path / "llama3-405b-interruptions.json").write_text(json.dumps(bad))
    res = runner.invoke(app, ["calibrate", str(tmp_path)])
    assert res.exit_code == 1, res.output
    assert "FAIL" in res.output
    js = json.loads(runner.invoke(app, ["calibrate", str(tmp_path), "--json"]).stdout)
    assert [r["id"] for r in js if not r["passed"] and r["id"] not in KNOWN_WEAK_PUBLIC] == ["llama3-405b-interruptions"]


@pytest.mark.parametrize("mutate, field", [
    (lambda c: c["workload"].pop("max_response_tokens"), "workload.max_response_tokens"),
    (lambda c: c["student"].update(layers="many"), "student.layers"),
    (lambda c: c.update(predict="vibes"), "predict"),
    (lambda c: c.pop("tolerance"), "tolerance"),
])
def test_cli_a_bad_case_is_an_error_row_naming_the_field(tmp_path, mutate, field):
    # FORMAT.md: a case with a bad field is that case's error row (exit 1), not a stop of the folder
    case = json.loads(NEMO_H100.read_text())
    mutate(case)
    p = tmp_path / "broken.json"
    p.write_text(json.dumps(case))
    res = runner.invoke(app, ["calibrate", str(tmp_path), "--no-intervals"])
    assert res.exit_code == 1, res.output
    (line,) = [x for x in res.output.splitlines() if "not read:" in x]
    assert line.startswith("nemo-rl-llama31-8b-16xh100 ") and f"not read: {field}: " in line
    assert "Traceback" not in res.output
    (row,) = json.loads(runner.invoke(app, ["calibrate", str(tmp_path), "--json"]).stdout)
    assert row["passed"] is False and row["predicted"] is None and row["error"].startswith("not read: ")
    assert calibrate_dir(tmp_path)[0].file == str(p)


def test_cli_exit_2_on_invalid_json(tmp_path):
    (tmp_path / "garbled.json").write_text("{not json")
    res = runner.invoke(app, ["calibrate", str(tmp_path)])
    assert res.exit_code == 2
    assert "garbled.json" in res.output


def test_calibrate_dir_rows_are_dataframe_friendly():
    import pandas as pd
    frame = pd.DataFrame([r.as_record() for r in calibrate_dir(CAL)])
    assert {"id", "figure", "predicted", "published", "ratio", "passed", "tolerance", "file", "error"} <= set(frame.columns)
    assert frame.loc[~frame["id"].isin(list(KNOWN_WEAK_PUBLIC)), "passed"].all()


@pytest.mark.slow  # 7 s on 2 cores (the default run's heaviest); .ci/run runs it with -m slow
def test_a_case_that_does_not_fit_is_a_failed_row_and_the_others_still_run(tmp_path):
    for p in CASES:
        shutil.copy(p, tmp_path / p.name)
    case = json.loads(NEMO_H100.read_text())
    case.update(id="too-small", gpu={**case["gpu"], "hbm_gb": 8}, gpu_count=1)
    (tmp_path / "too-small.json").write_text(json.dumps(case))
    rows = calibrate_dir(tmp_path)
    (bad,) = [r for r in rows if r.id == "too-small"]
    assert bad.predicted is None and bad.ratio is None and not bad.passed
    assert "does not fit" in bad.error and "GB/GPU" in bad.error
    assert {r.id for r in rows} >= {json.loads(p.read_text())["id"] for p in CASES}
    res = runner.invoke(app, ["calibrate", str(tmp_path), "--json"])
    assert res.exit_code == 1, res.output
    js = {r["id"]: r for r in json.loads(res.stdout)}
    assert js["too-small"]["predicted"] is None and js["too-small"]["ratio"] is None
    assert js["too-small"]["passed"] is False and "does not fit" in js["too-small"]["error"]
    assert "error" not in js["young-daly-3h"]
    table = runner.invoke(app, ["calibrate", str(tmp_path)])
    assert table.exit_code == 1 and "too-small step_seconds: not predicted: the job does not fit" in table.output


# --- SFT runs (predict: sft_hours) and CPU offload ------------------------------

def _case(tmp_path, base, name="c.json", **workload):
    case = json.loads(json.dumps(base))
    for key, value in workload.items():
        if key in ("gpu_count", "gpu"):
            case[key] = value
        else:
            case["workload"][key] = value
    p = tmp_path / name
    p.write_text(json.dumps(case))
    return p


S1 = VALIDATION / "sft-s1-32b-16xh100.json"


def test_at_least_three_published_sft_runs_with_sources():
    assert len(SFT_CASES) >= 3
    for p in SFT_CASES:
        case = json.loads(p.read_text())
        assert case["predict"] == "sft_hours" and case["published"]["hours"] > 0
        assert "READ" in case["notes"] and "INFERRED" in case["notes"] and case["source"]
        assert case["gpu_count"] >= 8
    assert any(json.loads(p.read_text())["workload"].get("cpu_offload") for p in SFT_CASES)


def test_sft_hours_are_the_solver_evaluators_training_hours():
    """The same work components price an SFT plan in `planopt solve`."""
    from planopt.models.cost.evaluator import Evaluator
    from planopt.models.schema.plan import HardwareChoice, Recipe
    from planopt.instance import parse_instance
    base = json.loads(S1.read_text())
    total, by = sft_hours(load_case(S1))
    assert {k.split("|")[0] for k in by} == {"train_flops", "train_attention_flops", "train_fsdp_bytes"}
    w = base["workload"]
    steps = 5000 // 16  # 312 steps of 16 examples; the case's 5,000 examples are 312.5 steps
    inst = parse_instance({
        "student": {k: v for k, v in base["student"].items() if k != "name"},
        "task": {"baseline_score": 0, "general_score_baseline": 1, "prompt_tokens": 0, "response_tokens": 1,
                 "max_response_tokens": 1, "prompts_available": 1},
        "training": {"methods": {"sft": {"steps_options": [steps], "prompts_per_step": 16}},
                     "trainer": {"backend": base["trainer"]["backend"]}},  # the case's trainer: PyTorch FSDP
        "sft_data": {"examples_available": 10**6, "usd_per_labeled_example": 0, "labeled_examples_per_day": 1,
                     "example_tokens": w["tokens_per_example"], "sequence_length_tokens": w["sequence_length"]},
        "hardware": {"gpus": [{"name": "H100-SXM", "counts": [16]}]},
        "reliability": {"failures_per_gpu_hour": 0},
    })
    m = Evaluator(inst).metrics(Recipe("sft", steps, (), None, 1.0), HardwareChoice("H100-SXM", 16, trainer="fsdp"), 60)
    assert m.hours_breakdown["training"] == pytest.approx(total * steps * 16 / 5000, rel=1e-9)


def test_sft_hours_respond_to_the_workload(tmp_path):
    # the default trainer (collectives in series), so that every work term shows in the total
    base = {k: v for k, v in json.loads(S1.read_text()).items() if k != "trainer"}

    def hours(**kw):
        return sft_hours(load_case(_case(tmp_path, base, **kw)))[0]

    t = hours()
    assert hours(epochs=10) == pytest.approx(2 * t, rel=1e-6)
    # attention grows with the context, so twice the tokens per example costs more than twice the FLOPs part
    _, by1 = sft_hours(load_case(_case(tmp_path, base, tokens_per_example=3600)))
    _, by2 = sft_hours(load_case(_case(tmp_path, base, tokens_per_example=7200)))
    attn = [sum(v for k, v in by.items() if "attention" in k) for by in (by1, by2)]
    assert attn[1] == pytest.approx(4 * attn[0])
    assert hours(activation_recompute=False) < t
    # packing: short examples share micro-steps, so FSDP collectives are paid less often
    short = dict(tokens_per_example=500, sequence_length=4096)
    assert hours(packing=True, **short) < hours(packing=False, **short)
    # several examples per micro-step without packing are padded to the sequence length
    assert hours(micro_batch_examples=4, **short) > 4 * hours(packing=True, **short)
    assert hours(gpu_count=32) < t
    _, by = sft_hours(load_case(_case(tmp_path, base, cpu_offload=True)))
    assert sum(v for k, v in by.items() if k.startswith("offload_")) > 0
    assert sum(by.values()) > t


def test_step_seconds_with_cpu_offload_are_priced_not_rejected(tmp_path):
    base = json.loads(NEMO_H100.read_text())
    small = {**base["gpu"], "hbm_gb": 24}  # 8B x 16 B / 2 GPUs = 64 GB of training state: does not fit in 24 GB
    (row,) = calibrate_case(_case(tmp_path, base, "tight.json", gpu=small, gpu_count=2))
    assert row.error is not None and "does not fit" in row.error
    total, by = step_seconds(load_case(_case(tmp_path, base, "off.json", gpu=small, gpu_count=2, cpu_offload=True)))
    assert sum(v for k, v in by.items() if k.startswith("offload_")) > 0
    plain, _ = step_seconds(load_case(_case(tmp_path, base, "plain.json", gpu_count=2)))
    assert total > plain


def test_new_work_families_scale_with_their_rate_factor(tmp_path):
    """The scenario evaluator rescales hours by recipes.RATE_FACTOR: attention with
    mfu_factor, FSDP and host-link transfers with neither."""
    from planopt.models.cost.recipes import HOURS_CATEGORY, RATE_FACTOR
    for fam in ("train_attention_flops", "train_fsdp_bytes", "offload_stream_bytes", "offload_state_bytes"):
        assert fam in RATE_FACTOR and HOURS_CATEGORY[fam] == "training"
    case = load_case(_case(tmp_path, json.loads(S1.read_text()), cpu_offload=True))
    _, by1 = sft_hours(case)
    case.transform = lambda inst: inst.model_copy(update={"efficiency": inst.efficiency.model_copy(update={"mfu_factor": 2.0})})
    _, by2 = sft_hours(case)
    assert len(by1) == 5
    for key, hours in by1.items():
        factor = RATE_FACTOR[key.split("|")[0]]
        assert by2[key] == pytest.approx(hours / 2 if factor == "mfu_factor" else hours, rel=1e-12), key


@pytest.mark.parametrize("change, field", [
    (dict(tokens_per_example=40000), "workload.tokens_per_example"),
    (dict(epochs=0), "workload.epochs"),
    (dict(cpu_offload=True, gpu={"name": "Mystery-1", "bf16_tflops": 900, "hbm_gb": 80, "hbm_tbps": 3.0}),
     "gpu.host_link_gb_per_s: required with workload.cpu_offload"),
])
def test_bad_sft_cases_are_error_rows_naming_the_field(tmp_path, change, field):
    _case(tmp_path, json.loads(S1.read_text()), "broken.json", **change)
    res = runner.invoke(app, ["calibrate", str(tmp_path), "--no-intervals"])
    assert res.exit_code == 1, res.output
    (line,) = [x for x in res.output.splitlines() if "not read:" in x]
    assert line.startswith("s1-32b-16xh100 hours: not read: ") and field in line


def test_offload_on_a_step_case_without_a_host_link_is_an_error_row(tmp_path):
    base = json.loads(NEMO_H100.read_text())
    _case(tmp_path, base, "broken.json", cpu_offload=True, gpu={**base["gpu"], "name": "Mystery-1"})
    res = runner.invoke(app, ["calibrate", str(tmp_path), "--no-intervals"])
    assert res.exit_code == 1, res.output
    assert "not read: gpu.host_link_gb_per_s: required with workload.cpu_offload" in res.output


def test_stated_truncation_cuts_long_examples_to_the_sequence(tmp_path):
    base = json.loads(S1.read_text())
    cut = sft_hours(load_case(_case(tmp_path, base, tokens_per_example=40000, truncation=True)))[0]
    assert cut == pytest.approx(sft_hours(load_case(_case(tmp_path, base, tokens_per_example=32768)))[0])


def test_instances_reject_untruncated_long_examples_and_offload_without_a_host_link():
    from pydantic import ValidationError
    from planopt.instance import parse_instance
    data = json.loads((INSTANCES / "tiny.json").read_text())
    data["sft_data"] = {**data["sft_data"], "example_tokens": 5000, "sequence_length_tokens": 4096}
    with pytest.raises(ValidationError, match="example_tokens 5000 is above sequence_length_tokens"):
        parse_instance(data)
    data["sft_data"]["truncation"] = True
    parse_instance(data)
    data["training"]["cpu_offload"] = True
    data["hardware"] = {"gpus": [{"name": "Mystery-1", "counts": [8], "bf16_tflops": 900, "hbm_gb": 80, "hbm_tbps": 3.0,
                                  "intra_node_gb_per_s": 900, "inter_node_gb_per_s": 50, "gpus_per_node": 8,
                                  "price_usd_per_gpu_hour": 2.0}]}
    with pytest.raises(ValidationError, match="hardware.gpus.0.name: training.cpu_offload needs a host-link"):
        parse_instance(data)


# --- step-time physics (issue 9, items 1-4) --------------------------------------

def _variant(tmp_path, src, name="variant.json", **top):
    case = json.loads(src.read_text())
    for key, value in top.items():
        if value is None:
            case.pop(key, None)
        else:
            case[key] = value
    p = tmp_path / name
    p.write_text(json.dumps(case))
    return p


def test_the_release_a_case_cites_is_the_release_it_is_priced_at(tmp_path):
    gb200 = CAL / "nemo-rl-llama31-8b-8xgb200.json"
    assert "v0.5.0" in json.loads(gb200.read_text())["source"]
    cited = step_seconds(load_case(gb200))[0]
    explicit = step_seconds(load_case(_variant(tmp_path, gb200, software_release="nemo-rl-v0.5")))[0]
    newest = step_seconds(load_case(_variant(tmp_path, gb200, "new.json", software_release="nemo-rl-v0.7")))[0]
    uncited = step_seconds(load_case(_variant(tmp_path, gb200, "plain.json", source="a published run")))[0]
    assert cited == pytest.approx(explicit)
    assert uncited == pytest.approx(newest) and newest < cited
    # every NeMo RL validation case says which release it is, and it matches its id
    for p in (p for p in VALIDATION_CASES if p.stem.startswith("nemo-rl-")):
        case = json.loads(p.read_text())
        tag = p.stem.split("-")[2]  # nemo-rl-v05-... -> v05
        assert case["software_release"] == f"nemo-rl-v0.{tag[2:]}", p.name


def test_an_unknown_release_is_an_error_row_naming_the_field(tmp_path):
    _variant(tmp_path, NEMO_H100, "broken.json", software_release="nemo-rl-v9")
    res = runner.invoke(app, ["calibrate", str(tmp_path), "--no-intervals"])
    assert res.exit_code == 1, res.output
    assert "not read: software_release: expected 'nemo-rl-v0.5'" in res.output and "(got 'nemo-rl-v9')" in res.output


def test_v07_skips_the_policy_log_prob_pass(tmp_path):
    src = VALIDATION / "nemo-rl-v07-qwen3-32b-32xh100.json"
    _, new = step_seconds(load_case(src))
    _, old = step_seconds(load_case(_variant(tmp_path, src, software_release="nemo-rl-v0.5")))
    lp = lambda by: sum(v for k, v in by.items() if k.startswith("student_logprob"))
    speed = 0.913 * 0.924  # defaults.SOFTWARE_RELEASES["nemo-rl-v0.5"]
    # reference only (v0.7) vs policy + reference (v0.5), each pass at the release's speed
    assert lp(old) == pytest.approx(2 * lp(new) / speed)


def test_moe_log_probs_match_a_published_b200_measurement(tmp_path, monkeypatch):
    # NVIDIA-NeMo/RL PR #3295 (2026-07, before v0.7): Qwen3-30B-A3B GRPO on 2 nodes x 8 B200,
    # policy + reference log-probs 87.5 s per step (4,740 tokens/s/GPU), step 257.2 s. The
    # 30B-A3B GB200 recipe's workload on 16 catalog B200 (8-GPU nodes: EP 16 all-to-all
    # crosses the network) with both passes (nemo-rl-v0.6): an independent check of the MoE
    # scoring MFU plus the network all-to-all.
    # The check is of the physics: the MoE calibration factor (an empirical median over the MoE rows,
    # defaults.STEP_TIME_CALIBRATION_FACTOR) is set to 1 here; with it the log-probs come out ~1.7x this
    # measurement, the 30B-A3B side of the MoE rows' spread (CALIBRATION.md, "Out-of-fold coverage").
    monkeypatch.setitem(d.STEP_TIME_CALIBRATION_FACTOR, "moe", 1.0)
    src = VALIDATION / "nemo-rl-v05-qwen3-30b-a3b-16xgb200.json"
    b200 = {"name": "B200", "bf16_tflops": 2250, "fp8_tflops": 4500, "hbm_gb": 180, "hbm_tbps": 8.0}
    _, by = step_seconds(load_case(_variant(tmp_path, src, gpu=b200, software_release="nemo-rl-v0.6")))
    logprobs = sum(v for k, v in by.items() if k.startswith(("student_logprob", "logprob_alltoall")))
    assert 87.5 / 1.25 < logprobs < 87.5 * 1.25
    assert 257.2 / 1.25 < sum(by.values()) < 257.2 * 1.25
    # on GB200 NVL72 the same 16 GPUs share one NVLink domain: the all-to-all nearly vanishes
    _, nvl = step_seconds(load_case(src))
    a2a = lambda d_: sum(v for k, v in d_.items() if "alltoall" in k)
    assert a2a(nvl) < a2a(by) / 10
