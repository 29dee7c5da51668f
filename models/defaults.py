"""Sourced default coefficients of the cost model.

Every constant carries its unit in its name and its source next to it. An
instance may override each of them (see ``schema.Efficiency``,
``schema.Reliability`` and ``schema.MethodPriors``); these are the values used
when it does not. "INFERRED" marks arithmetic on a source, as in
``models/catalog/reference/``.
"""

from __future__ import annotations

# --- Work per token --------------------------------------------------------
# Transformer Math 101 (EleutherAI, 2023): training = 6·N FLOPs per token
# (forward 2N + backward 4N); inference / scoring = 2·N per token.
TRAIN_FLOPS_PER_PARAM_TOKEN = 6.0
FORWARD_FLOPS_PER_PARAM_TOKEN = 2.0
# Megatron-LM (arXiv 2104.04473, Eq. 3): full activation recomputation adds one
# forward pass, so hardware FLOPs are 8·N per trained token.
TRAIN_RECOMPUTE_FLOPS_PER_PARAM_TOKEN = 8.0

# --- Bytes -----------------------------------------------------------------
# [MLE] inference/README.md: bytes per weight by precision.
WEIGHT_BYTES_PER_PARAM = {"bf16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5}
# KV cache is kept in bf16 by the rollout engine ([MLE] KV formula, bf16).
KV_BYTES_PER_ELEMENT = 2.0
# ZeRO (arXiv 1910.02054): mixed-precision Adam = (2 + 2 + 12) bytes/param.
TRAIN_STATE_BYTES_PER_PARAM = 16.0
# Resumable checkpoint = bf16 weights + fp32 master + Adam m, v = 2+4+8 bytes
# (INFERRED in post-training.md §4 from ZeRO's K = 12).
CHECKPOINT_BYTES_PER_PARAM = 14.0
# Activation checkpoints with recomputation: dtype·layers·seq·hidden bytes
# per sequence in the micro-batch ([MLE] "Anatomy of Model's Memory Usage").
ACTIVATION_BYTES_PER_ELEMENT = 2.0
# Trajectory logs store token ids as int32 (4 bytes/token): INFERRED, the
# smallest lossless record of a sampled trajectory.
LOG_BYTES_PER_TOKEN = 4.0

# --- Achieved efficiency ---------------------------------------------------
# Training MFU vs dense model size, interpolated in log(params):
# torchtitan Llama 3.1 8B on 8×H100 BF16 FSDP: 33–39 % -> 0.36 ([TITAN]);
# Megatron-LM on A100: 22B 41.5 %, 175B 51.4 % ([MLE] quoting Megatron-LM).
MFU_BY_ACTIVE_PARAMS_B = ((8.0, 0.36), (22.0, 0.415), (175.0, 0.514))
# MoE models reach a lower share of peak: NeMo Automodel Qwen3/DeepSeek MoE on
# H100 BF16 189–279 TFLOP/s (mean 234, i.e. 0.237 of 989) vs 0.36 for a dense
# 8B ([AUTOMODEL] vs [TITAN]) -> factor 0.66 (INFERRED).
MFU_MOE_FACTOR = 0.66
# Multi-node scaling: torchtitan Llama 3.1 8B keeps 5,605 of 5,762 tokens/s/GPU
# from 8 to 128 H100 (four doublings): 0.993 per doubling beyond one node
# (INFERRED from [TITAN]).
SCALING_EFFICIENCY_PER_DOUBLING = 0.993
# Achievable matmul share of peak (MAMF, [MLE]) relative to the H100's 0.80:
# an accelerator whose matmuls reach less of their peak reaches less MFU.
MAMF_SHARE_OF_PEAK = {
    "A100-40GB": 0.87, "A100-80GB": 0.87, "H100-SXM": 0.80, "H100-PCIe": 0.80,
    "H200": 0.80, "B200": 0.78, "MI300X": 0.51, "MI325X": 0.60,
}
MAMF_REFERENCE_SHARE = 0.80  # H100 SXM, [MLE]; also the fallback for chips [MLE] does not list
# Decode memory-bandwidth utilisation: "real systems land around 60 to 85
# percent", vLLM/TRT-LLM commonly 70–85 % (hardware.md, B "Typical achieved
# utilization"); the low end 0.70, as a colocated rollout engine is not tuned.
DECODE_MBU = 0.70
# Share of HBM the colocated rollout engine may use for weights and KV cache:
# verl's colocated rollout config `rollout.gpu_memory_utilization: 0.6`.
ROLLOUT_HBM_SHARE = 0.6
# Share of HBM usable for training state: vLLM/PyTorch reserve ~10 % for the
# CUDA context and allocator fragmentation (vLLM default
# gpu_memory_utilization 0.9).
TRAIN_HBM_SHARE = 0.9

# --- Reliability ------------------------------------------------------------
# Llama 3 (arXiv 2407.21783 §3.3.4): 419 unexpected interruptions in 54 days
# (1,296 h) on 16,384 H100 -> 1.973e-5 failures per GPU-hour (INFERRED).
FAILURES_PER_GPU_HOUR = 419.0 / (16384 * 1296.0)
# Restart after a failure: Llama 3 reports automated recovery with only 3 of
# 419 interruptions needing manual work; OPT-175B's logbook shows restarts
# dominated by re-loading a 1.6 TB checkpoint. 10 minutes is INFERRED as the
# time to re-schedule and re-load a checkpoint from a parallel file system.
RESTART_MINUTES = 10.0
# Checkpoint write bandwidth per node: no public figure was found for the
# clusters above (post-training.md §6 lists the gaps). 2 GB/s per node is an
# ASSUMPTION (one NVMe-backed parallel-file-system client); it is an instance
# field (`reliability.checkpoint_write_gb_per_s_per_node`): set your own.
CHECKPOINT_WRITE_GB_PER_S_PER_NODE = 2.0
# Weight hand-over trainer -> rollout engine goes over the scale-up link
# (NVLink) inside a node and over the scale-out network across nodes
# (NeMo RL "Optimizing Weight Transfer" discussion #1189): bytes / link.

# --- Storage prices (hardware.md §D, finout.io 2026) ------------------------
HOT_STORAGE_USD_PER_GB_MONTH = 0.023   # AWS S3 Standard, first 50 TB
COLD_STORAGE_USD_PER_GB_MONTH = 0.004  # S3 Glacier Instant Retrieval
HOURS_PER_MONTH = 730.0                # 8,760 h / 12 months, the cloud billing month

# --- Quality priors ----------------------------------------------------------
# Learning curves q(S) = q0 + (C − q0)·(1 − exp(−S / S0)), S = effective samples.
# SFT: fitted to TML's Qwen3-8B-Base points (400K examples -> 60 % AIME'24,
# 2M -> ~70 %, start ~0): S0 ≈ 205K examples, ceiling ≈ 70 % of the headroom
# (INFERRED; post-training.md §1.2).
SFT_SIGNAL_SCALE_SAMPLES = 205_000.0
SFT_CEILING_SHARE_OF_HEADROOM = 0.70
# RL: Qwen3-235B-A22B went 70.1 -> 85.1 in 170 RL steps, half of its headroom
# to 100 (Qwen3 report, post-training.md §1.5): ceiling 0.5 of the headroom
# (INFERRED). Scale: Qwen3-8B reached 67.6 from 55.0 (0.56 of that ceiling)
# in 17,920 GPU-h (Table 21); at the default GRPO shape (see workloads below)
# that is ≈ 0.82·S0 ≈ 1.0M informative samples -> S0 ≈ 1.2M (INFERRED).
RL_CEILING_SHARE_OF_HEADROOM = 0.50
RL_SIGNAL_SCALE_SAMPLES = 1.2e6
# OPD: dense per-token supervision; the TML blog reports OPD reaching the RL
# policy's score in 7–10× fewer gradient steps and 50–100× less compute, and
# Qwen3 Table 21 ~1/10 of RL's GPU-hours for a larger gain. S0 is set to RL's
# divided by 25 (the geometric mean of 8.5 steps and 75× compute, INFERRED).
OPD_SIGNAL_SCALE_SAMPLES = RL_SIGNAL_SCALE_SAMPLES / 25.0
# Teacher precision: "Give Me BF16 or Give Me Death" (arXiv 2411.02355):
# FP8 W8A8 lossless; INT8 W8A8 1–3 % degradation (-> 2 %); INT4 W4A16
# "rivaling 8-bit" (-> 2 %). Relative drop of the teacher's score.
TEACHER_PRECISION_SCORE_PENALTY = {"bf16": 0.0, "fp8": 0.0, "int8": 0.02, "int4": 0.02}

# --- Forgetting priors -------------------------------------------------------
# forgetting = general_baseline · share_m · external_share^exponent · progress.
# SFT fitted to TML's personalisation points (IF-eval 85 -> 45 at 100 %
# documents, 85 -> 79 at 70 %): share 40/85 = 0.47, exponent
# ln(6/40)/ln(0.7) = 5.32 (fitted to the published points, FORMAT.md allows).
SFT_FORGETTING_SHARE_OF_BASELINE = 40.0 / 85.0
SFT_FORGETTING_MIX_EXPONENT = 5.32
# RL and OPD stay near the base distribution (RL's Razor, arXiv 2509.04259;
# Retaining by Doing, arXiv 2510.18874); Qwen3 Table 21 shows MMLU-Redux up,
# not down, after both. A residual 2 % of the baseline at full progress keeps
# the tolerance meaningful (INFERRED, weak: no published matched drop).
RL_FORGETTING_SHARE_OF_BASELINE = 0.02
OPD_FORGETTING_SHARE_OF_BASELINE = 0.02
# SFT forgetting grows with examples seen on the scale of its learning curve.
SFT_FORGETTING_SCALE_SAMPLES = SFT_SIGNAL_SCALE_SAMPLES
