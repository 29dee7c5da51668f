"""The values ``planopt init`` writes for what a few flags do not say: a reasoning job of the size the cost
model is calibrated on. Each is a sourced figure (most are the calibration workload of ``defaults.py``, the
run the learning curves are anchored on) or a choice of options the user should edit; none is a schema
default (those stay out of the file ``init`` writes, where ``planopt schema`` documents them).

``EDIT`` lists the fields that describe the user's own job rather than a published run: ``init`` names them
in its summary.
"""

from __future__ import annotations

from planopt.models.catalog import defaults as d

# --- The task: a math-reasoning job as the calibration anchor runs it ---------------------------------------
# Target-task score before training: Qwen3-8B's AIME'24 start, 55.0 (Qwen3 report, Table 21; the anchor of the
# learning curves in defaults.py, RL_SIGNAL_SCALE_SAMPLES).
TASK_SCORE_BASELINE = 55.0
# General-capability score before training: IF-eval 85, the start of TML's forgetting points that the SFT
# forgetting prior is fitted to (defaults.SFT_FORGETTING_SHARE_OF_BASELINE = 40/85).
GENERAL_SCORE_BASELINE = 85.0
# Tokens per sample: the calibration workload's 128-token prompts and 4,200-token responses, longest 20,480
# (defaults.CALIBRATION_PROMPT_TOKENS, _RESPONSE_TOKENS, _MAX_RESPONSE_TOKENS, sourced there).
PROMPT_TOKENS = d.CALIBRATION_PROMPT_TOKENS
RESPONSE_TOKENS = d.CALIBRATION_RESPONSE_TOKENS
MAX_RESPONSE_TOKENS = d.CALIBRATION_MAX_RESPONSE_TOKENS
# Distinct prompts: DeepScaleR-Preview's math problems (agentica-org/DeepScaleR-Preview-Dataset on Hugging Face,
# 40,315 problem-answer pairs as its viewer counts them; "a curated dataset of 40,000 reasoning-intensive
# problems" in lime-nlp/DeepScaleR_Difficulty's card, 2025), an open RL prompt set of reasoning-length math.
PROMPTS_AVAILABLE = 40_315

# --- Training options (choices: the MIP picks one of each list) --------------------------------------------
# Prompts per step: 512 for RL and OPD (defaults.CALIBRATION_PROMPTS_PER_STEP: TML's OPD and DAPO), 128
# examples for SFT (defaults.CALIBRATION_SFT_GLOBAL_BATCH_EXAMPLES).
PROMPTS_PER_STEP = {"sft": d.CALIBRATION_SFT_GLOBAL_BATCH_EXAMPLES, "rl": d.CALIBRATION_PROMPTS_PER_STEP,
                    "opd": d.CALIBRATION_PROMPTS_PER_STEP}
# Training lengths around the published runs: RL up to the anchor's 2,565 steps (defaults.RL_SIGNAL_SCALE_SAMPLES;
# Qwen3-235B-A22B's RL ran 170, post-training.md §1.5); OPD around TML's ~150 steps and the anchor's 449
# (defaults.OPD_SIGNAL_SCALE_SAMPLES); SFT 128K to 1.28M examples at 128 per step, around TML's 400K and 2M
# (defaults.SFT_SIGNAL_SCALE_SAMPLES).
STEPS_OPTIONS = {"sft": [1000, 3000, 10000], "rl": [200, 500, 1000, 2500], "opd": [50, 150, 450]}
METHODS_DEFAULT = ("rl",)   # RL needs no teacher and no labeled data: the fewest values to edit

# --- SFT data (only with sft) --------------------------------------------------------------------------------
# Examples per SFT sample: a prompt and its response (PROMPT_TOKENS + RESPONSE_TOKENS). Examples owned, the
# price of a labeled example and the labeling pace have no published default: placeholders, to edit
# (the price and pace are those of instances/qwen3-8b-math.json).
EXAMPLES_AVAILABLE = 0
USD_PER_LABELED_EXAMPLE = 2.0
LABELED_EXAMPLES_PER_DAY = 10_000

# --- Hardware --------------------------------------------------------------------------------------------------
# The H100 SXM, the dominant 2025 training GPU, in whole 8-GPU nodes up to the calibration's 64
# (defaults.CALIBRATION_GPU, CALIBRATION_GPUS).
GPUS_DEFAULT = (d.CALIBRATION_GPU,)
GPU_COUNTS_DEFAULT = (8, 16, 32, d.CALIBRATION_GPUS)

# --- OPD's teacher (only with opd) ----------------------------------------------------------------------------
# A teacher's score when none is given: it closes the share of the headroom Qwen3-235B-A22B closes over
# Qwen3-8B on AIME'24 (defaults.CALIBRATION_TEACHER_SHARE_OF_HEADROOM = (85.7 - 55)/(100 - 55)).
TEACHER_SHARE_OF_HEADROOM = d.CALIBRATION_TEACHER_SHARE_OF_HEADROOM

# The fields of the written job that describe the user's own job: ``init`` lists them to edit.
EDIT = ("task.baseline_score", "task.general_score_baseline", "task.prompt_tokens", "task.response_tokens",
        "task.max_response_tokens", "task.prompts_available", "training.methods", "reward.verifier_usd_per_sample",
        "sft_data", "teacher.score", "hardware.gpus", "constraints")
