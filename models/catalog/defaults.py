"""Sourced default coefficients of the cost model.

Every constant carries its unit in its name and its source next to it. An
instance may override each of them (see ``schema.Efficiency``,
``schema.Reliability`` and ``schema.MethodPriors``); these are the values used
when it does not. "INFERRED" marks arithmetic on a source, as in
``models/catalog/reference/``.
"""

from __future__ import annotations

import math

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
# MoE training MFU (replaces the dense curve for MoE students), log-interpolated in
# active parameters and flat outside: Megatron-Core, the trainer of NeMo RL's Megatron
# backend, measures Qwen3-30B-A3B on 16 H100 at 5,275 tokens/s/GPU and Qwen3-235B-A22B
# on 256 H100 at 1,575 tokens/s/GPU (Megatron-Bridge 25.11 performance table, FP8;
# hardware.md C.2 [MBRIDGE]) -> 6 x 3.3e9 x 5,275 = 104 and 6 x 22e9 x 1,575 = 208
# TFLOP/s of model FLOPs, 0.105 and 0.21 of the H100's BF16 peak (INFERRED). A BF16 run is
# no faster than an FP8 one, so these are upper bounds for the RL trainer's BF16 MFU.
# They replace the earlier factor 0.66 x dense MFU (NeMo Automodel + DeepEP, 189-279
# TFLOP/s in BF16, [AUTOMODEL]), which NeMo RL's Megatron path does not reach: with it
# Qwen3-30B-A3B GRPO steps were predicted at 0.83-0.89 of NeMo RL's published times,
# with this curve at 1.02-1.04 (CALIBRATION.md). The expert all-to-all is priced as its
# own term on top (MOE_ALLTOALL_*), although the measured throughput includes it.
MFU_MOE_BY_ACTIVE_PARAMS_B = ((3.3, 0.105), (22.0, 0.21))
# Multi-node scaling: torchtitan Llama 3.1 8B keeps 5,605 of 5,762 tokens/s/GPU
# from 8 to 128 H100 (four doublings): 0.993 per doubling beyond one node
# (INFERRED from [TITAN]).
SCALING_EFFICIENCY_PER_DOUBLING = 0.993
# Achievable matmul share of peak (MAMF, [MLE]) relative to the H100's 0.80:
# an accelerator whose matmuls reach less of their peak reaches less MFU.
MAMF_SHARE_OF_PEAK = {
    "A100-40GB": 0.87, "A100-80GB": 0.87, "H100-SXM": 0.80, "H100-PCIe": 0.80,
    "H200": 0.80, "B200": 0.78, "MI300X": 0.51, "MI325X": 0.60,
    # GB200: [MLE] measures its own MAMF, 1,822 of 2,500 TFLOPS = 0.73 (hardware.md A.1
    # notes), below the B200's 0.78. GB200 / H100 = 2.5 x 0.73 / 0.80 = 2.28x per GPU,
    # against Megatron-Bridge's measured 2.18x (Llama3 8B FP8, 31,508 vs 14,451 tokens/s/GPU,
    # hardware.md C.2) and NeMo RL's ~2x (Qwen3-32B GRPO, 16 GB200 381 s vs 32 H100 376 s).
    "GB200": 0.73,
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
# Share of HBM a rollout engine on its own GPUs (separate rollout hardware, ``rollout.py``)
# may use for weights and KV cache: nothing else lives there, so vLLM's default
# `--gpu-memory-utilization 0.9` (vLLM engine arguments) instead of the colocated 0.6.
DEDICATED_ROLLOUT_HBM_SHARE = 0.9

# --- Mixture-of-experts communication ---------------------------------------
# Routed experts per token: Qwen3-30B-A3B and Qwen3-235B-A22B route each token
# to 8 of 128 experts (hardware.md E), DeepSeek-V3 to 8 of 256 (DeepSeek-V3
# config.json, num_experts_per_tok 8). The schema has no top-k field, so 8 is
# used for every MoE student.
MOE_ROUTED_EXPERTS_PER_TOKEN = 8
# Expert-parallel all-to-all: per MoE layer and pass, each token's hidden
# vector (bf16) is dispatched to its k experts and the k outputs combined back
# (DeepEP, github.com/deepseek-ai/DeepEP README: "MoE dispatch and combine";
# the backward pass of a dispatch is a combine and vice versa, so a training
# step moves the bytes twice, three times with recomputation).
MOE_ALLTOALL_BYTES_PER_ELEMENT = 2.0
# Achieved all-to-all bandwidth as a share of the per-GPU link (scale-out when
# the job spans nodes, one direction of the scale-up link otherwise): DeepEP
# V2 README, SM90 + CX7 (50 GB/s), EP 8x4: 61 GB/s "logical" bottleneck
# bandwidth including local-rank traffic, "matches or exceeds hardware
# bandwidth limits" -> 1.0 of the link for bytes counted without the local
# share (INFERRED). NeMo RL's Megatron uses its own all-to-all dispatcher, not
# DeepEP, so this is an upper bound on the achieved rate.
MOE_ALLTOALL_SHARE_OF_LINK = 1.0

# --- Tensor-parallel decode communication ----------------------------------
# A tensor-parallel decode iteration all-reduces the hidden state twice per
# layer (Megatron-LM, arXiv 1909.08053 §3: one all-reduce after attention, one
# after the MLP, in the forward pass). Each costs a fixed latency plus the ring
# bytes 2(tp-1)/tp x batch x hidden x 2 B over the link. Latency per
# all-reduce: ~10 us inside an NVLink node and ~50 us across nodes over
# InfiniBand for the sub-MB messages of decode (INFERRED, weak: order of
# magnitude of NCCL small-message all-reduce latencies; no per-case fit).
TP_ALLREDUCES_PER_LAYER = 2
TP_ALLREDUCE_LATENCY_S_SCALE_UP = 10e-6
TP_ALLREDUCE_LATENCY_S_SCALE_OUT = 50e-6

# --- Reliability ------------------------------------------------------------
# Unexpected job interruptions per GPU-hour, by published cluster. Every rate is
# put on one basis: *all unexpected interruptions of a job that spans the
# cluster* (hardware, software, network, unplanned maintenance), per GPU-hour.
# A source that counts one cause only is divided by that cause's share of
# Llama 3's 419 interruptions (Table 5), the only published breakdown of a whole
# run (INFERRED: assumes the same cause mix).
#
# Llama 3 (arXiv 2407.21783 §3.3.4, Table 5; hyperscale production, H100): 419
# unexpected interruptions in a 54-day (1,296 h) snapshot on 16,384 H100, all
# causes -> 1.973e-5 per GPU-hour (INFERRED).
LLAMA3_INTERRUPTIONS = 419
LLAMA3_GPUS = 16384
LLAMA3_HOURS = 54 * 24.0
LLAMA3_FAILURES_PER_GPU_HOUR = LLAMA3_INTERRUPTIONS / (LLAMA3_GPUS * LLAMA3_HOURS)
# Llama 3 Table 5: 72 of the 419 were "GPU HBM3 Memory": 17.2 % (the basis of
# the memory-only rates below).
LLAMA3_HBM_INTERRUPTIONS = 72
LLAMA3_HBM_SHARE = LLAMA3_HBM_INTERRUPTIONS / LLAMA3_INTERRUPTIONS
# NCSA Delta (Cui et al., "Story of Two GPUs: Characterizing the Resilience of
# Hopper H100 and Ampere A100 GPUs", SC '25, arXiv 2503.11901 v4; an academic
# research cluster, 11.7 M GPU-hours over 2.5 years): per-GPU mean time between
# uncorrectable memory errors 283,271 h on A100 (40 GB HBM2e) and 88,768 h on
# H100 (96 GB HBM3, GH200), the abstract's "3.2x lower per-GPU MTBE" (the two
# figures as quoted from v4 with its Table 1 counts by secondary notes; the
# abstract read); GPU errors "frequently result in job failures" (abstract:
# application recovery largely ineffective). Memory errors only:
# divided by LLAMA3_HBM_SHARE -> 2.05e-5 (A100) and 6.56e-5 (H100) per GPU-hour
# (INFERRED, weak: Delta's error counts mix a few faulty GPUs and a mostly
# single-GPU job mix; its raw XID rates of other components are error events,
# not interruptions, and are not used).
DELTA_A100_MEMORY_MTBE_HOURS_PER_GPU = 283_271.0
DELTA_H100_MEMORY_MTBE_HOURS_PER_GPU = 88_768.0
DELTA_A100_FAILURES_PER_GPU_HOUR = 1.0 / DELTA_A100_MEMORY_MTBE_HOURS_PER_GPU / LLAMA3_HBM_SHARE
DELTA_H100_FAILURES_PER_GPU_HOUR = 1.0 / DELTA_H100_MEMORY_MTBE_HOURS_PER_GPU / LLAMA3_HBM_SHARE
# Crusoe (GPU cloud, H200), GTC 2025 talk as tabulated by G. Lockwood,
# glennklockwood.com/garden/component-reliability ("Crusoe"): the shares of
# fault causes over a four-month period (GPU recoverable faults 19.5 %, GPU host
# replacement 41.5 %, InfiniBand 34.1 %, other host 4.9 %) have a lowest common
# denominator of 205 failures of all causes, and the talk's cluster is "a
# 1,600-GPU H200 cluster in Iceland" ->
# 205 / (1,600 x 4 x 730 h) = 4.39e-5 per GPU-hour (INFERRED, weak: both the
# count and the GPU count are Lockwood's reading of the talk).
CRUSOE_FAILURES = 205
CRUSOE_GPUS = 1600
CRUSOE_HOURS = 4 * 730.0  # four billing months of 8,760 h / 12 (HOURS_PER_MONTH)
CRUSOE_FAILURES_PER_GPU_HOUR = CRUSOE_FAILURES / (CRUSOE_GPUS * CRUSOE_HOURS)
# Nebius (GPU cloud, H100/H200), "Fault-tolerant training: How we build
# reliable clusters for distributed AI workloads" (nebius.com/blog/posts/
# how-we-build-reliable-clusters, 2025-08-28, opening section): a customer's
# 3,000-GPU production cluster recorded "169,800 GPU hours or 56.6 hours of
# stable operation", one interval between interruptions of the customer's job
# -> 1 / 169,800 = 5.89e-6 per GPU-hour (INFERRED, weak: a best stretch a
# provider chose to publish, so the low end of cloud rates).
NEBIUS_STABLE_GPU_HOURS = 169_800.0
NEBIUS_FAILURES_PER_GPU_HOUR = 1.0 / NEBIUS_STABLE_GPU_HOURS
# Classes of cluster (`reliability.cluster_class`) and the published rates
# behind each. A class's rate is the geometric mean of its sources' rates; its
# spread is in spreads.CLUSTER_FAILURES_PER_GPU_HOUR.
CLUSTER_CLASS_SOURCES = {
    # one operator's own production fleet under a single flagship job
    "hyperscale_production": {"Llama 3 (Meta, 16,384 H100)": LLAMA3_FAILURES_PER_GPU_HOUR},
    # a GPU cloud's cluster rented for training
    "cloud": {"Crusoe (H200)": CRUSOE_FAILURES_PER_GPU_HOUR, "Nebius (3,000 GPUs)": NEBIUS_FAILURES_PER_GPU_HOUR},
    # a shared academic / research cluster
    "research": {"NCSA Delta A100": DELTA_A100_FAILURES_PER_GPU_HOUR, "NCSA Delta H100": DELTA_H100_FAILURES_PER_GPU_HOUR},
}
CLUSTER_CLASSES = tuple(CLUSTER_CLASS_SOURCES)
PUBLISHED_FAILURES_PER_GPU_HOUR = {name: rate for sources in CLUSTER_CLASS_SOURCES.values()
                                   for name, rate in sources.items()}


def geometric_mean(values) -> float:
    """The geometric mean of positive ``values``: the middle of rates that spread over factors."""
    values = list(values)
    if len(values) == 1:  # exactly the one rate (exp(log(x)) may differ from x in the last bit)
        return values[0]
    return math.exp(sum(math.log(v) for v in values) / len(values))


CLUSTER_FAILURES_PER_GPU_HOUR = {cls: geometric_mean(sources.values()) for cls, sources in CLUSTER_CLASS_SOURCES.items()}
# The default (no `cluster_class`, no measured rate): Llama 3's rate, 1.973e-5.
# The geometric middle of all five published rates above is 2.33e-5 (1.18x);
# the point is kept at Llama 3's (every shipped figure is priced with it) and
# the default spread is centred on it (spreads.ABSOLUTE_FAILURES_PER_GPU_HOUR),
# so the point is the median of its own distribution.
FAILURES_PER_GPU_HOUR = LLAMA3_FAILURES_PER_GPU_HOUR
# Restart after a failure: 10 minutes (INFERRED). Llama 3 recovered
# automatically from all but 3 of 419 interruptions and kept ">90 % effective
# training time" with one interruption every ~3.1 h (post-training.md §4): the
# time lost per interruption (restart + half an interval of work + its share
# of writes) is then <= 0.1 x 3.1 h = 19 min, which bounds the restart from
# above; a restart re-schedules resources, initialises collective
# communication and loads the checkpoint (Huawei MindCluster, "Resumable
# training: Performance Description", hiascend.com, which times each part),
# minutes at cluster scale.
RESTART_MINUTES = 10.0
# Checkpoint write bandwidth per node: Llama 3's Tectonic file system sustains
# 2 TB/s and peaks at 7 TB/s for the 16K-GPU job (arXiv 2407.21783 §3.3.1),
# i.e. 0.98 and 3.4 GB/s per 8-GPU node over 2,048 nodes (INFERRED). 2 GB/s
# lies between them; it is an instance field
# (`reliability.checkpoint_write_gb_per_s_per_node`): set your own.
CHECKPOINT_WRITE_GB_PER_S_PER_NODE = 2.0
# Weight hand-over trainer -> rollout engine ("refit") goes over the scale-up
# link inside a node and the scale-out network across nodes, but achieves far
# less than the link: NeMo RL v0.3 (Megatron, Llama-3.1-8B Instruct, 1 node of
# 8 H100, generation TP 1; step-time table of nvidia-nemo.github.io/blog/
# 2025/07/21/nemo-rl-v0.3, quoted in NVIDIA-NeMo/RL issue #959) reports refit
# 5 s for 16.06 GB of bf16 weights per GPU -> 3.2 GB/s per GPU (INFERRED);
# the same table's Llama-3.1-70B on 8 nodes refits in 14 s, i.e. 141 GB over
# a TP-4 group at ~2.5 GB/s per GPU (INFERRED, consistent).
REFIT_GB_PER_S_PER_GPU = 3.2

# --- Storage prices (hardware.md §D, finout.io 2026) ------------------------
HOT_STORAGE_USD_PER_GB_MONTH = 0.023   # AWS S3 Standard, first 50 TB
COLD_STORAGE_USD_PER_GB_MONTH = 0.004  # S3 Glacier Instant Retrieval
# Reading a checkpoint back from S3 Glacier Instant Retrieval: $0.03 per GB
# retrieved (crispy-engineering.com, "AWS S3 Glacier Instant Retrieval for
# additional storage cost savings": $0.004/GB-month storage, $0.03/GB retrieval);
# S3 Standard (hot) has no per-GB retrieval fee.
COLD_RETRIEVAL_USD_PER_GB = 0.03
# Glacier Instant Retrieval bills every object for at least 90 days
# (cloudcostkit.com "S3 Glacier Pricing", checked against the AWS S3 pricing
# page 2026-06-18): 90 x 24 = 2,160 h. A rolling checkpoint deleted sooner is
# still billed 2,160 h. S3 Standard has no minimum.
COLD_MIN_STORAGE_HOURS = 90 * 24.0

# --- Rollback events (issue 12 item 7) ---------------------------------------
# A rollback event forces a restart from a checkpoint *older* than the newest
# (the newest holds a corrupted or diverging state), unlike a failure, which
# resumes from the newest. PaLM 540B (Chowdhery et al. 2022, arXiv 2204.02311
# §5.1): "spikes in the loss roughly 20 times during training", each handled by
# restarting "from a checkpoint roughly 100 steps before the spike started"; the
# run took 6,144 TPU v4 chips x 1,200 h + 3,072 chips x 336 h = 8,404,992
# chip-hours (§4 / Appendix B) -> 20 / 8,404,992 = 2.38e-6 rollback events per
# accelerator-hour (INFERRED; PaLM saw no spikes on its smaller models, so this
# is a large-model rate). Silent data corruption (Llama 3, arXiv 2407.21783
# Table 5: 6 of the 419 interruptions) is already inside FAILURES_PER_GPU_HOUR
# and is not counted again.
ROLLBACK_EVENTS_PER_GPU_HOUR = 20.0 / (6144 * 1200.0 + 3072 * 336.0)
HOURS_PER_MONTH = 730.0                # 8,760 h / 12 months, the cloud billing month

# Spot preemption (a single job's ``hardware.pricing: spot`` or ``either``). AWS's
# Spot Instance Advisor (aws.amazon.com/ec2/spot/instance-advisor; its data file
# spot-bid-advisor.s3.amazonaws.com/spot-advisor-data.json, whose definition the
# grailbio/base `spotadvisor` package documents): "Frequency of interruption
# represents the rate at which Spot has reclaimed capacity during the trailing
# month. They are in ranges of < 5%, 5-10%, 10-15%, 15-20% and >20%." GPU
# instances of the H100 class sit in the top range (Lyceum Technologies, "Spot
# Instance GPU ML Training", 2026-02-23: "high-demand hardware like the H100 can
# see rates exceeding 20 percent during peak periods"). The point value is the top
# range's lower edge, 20 % of instances reclaimed per month (INFERRED, a lower
# bound for the H100 class); a node is reclaimed at the constant rate
# -ln(1 - 0.2) / 730 h = 3.06e-4 per node-hour, and a synchronous gang stops when
# any of its nodes is (so its rate is nodes x that). Its spread is
# spreads.ABSOLUTE_SPOT_RECLAIMED_SHARE_PER_MONTH.
SPOT_RECLAIMED_SHARE_PER_MONTH = 0.20
SPOT_ADVISOR_LOWEST_RANGE_EDGE_SHARE_PER_MONTH = 0.05   # the Advisor's "< 5%" range, its most stable instances


def spot_reclaims_per_node_hour(reclaimed_share_per_month: float) -> float:
    r"""The constant hourly rate :math:`\lambda` at which a share :math:`q` of nodes is reclaimed within a month:
    :math:`1 - e^{-730 \lambda} = q`, so :math:`\lambda = -\ln(1 - q) / 730`."""
    return -math.log1p(-reclaimed_share_per_month) / HOURS_PER_MONTH


# --- Quality priors ----------------------------------------------------------
# Learning curves q(S) = q0 + (C − q0)·(1 − exp(−S / S0)), S = effective samples.
# SFT: fitted to TML's Qwen3-8B-Base points (400K examples -> 60 % AIME'24,
# 2M -> ~70 %, start ~0): S0 ≈ 205K examples, ceiling ≈ 70 % of the headroom
# (INFERRED; post-training.md §1.2).
SFT_SIGNAL_SCALE_SAMPLES = 205_000.0
SFT_CEILING_SHARE_OF_HEADROOM = 0.70
# RL ceiling: Qwen3-235B-A22B went 70.1 -> 85.1 AIME'24 in 170 RL steps, half
# of its headroom to 100 (Qwen3 report, post-training.md §1.5): the reachable
# ceiling is taken as 0.5 of the headroom (INFERRED).
RL_CEILING_SHARE_OF_HEADROOM = 0.50
# Absolute scales, anchored on Qwen3 Table 21 (Qwen3-8B from the same start,
# AIME'24 55.0: RL -> 67.6 in 17,920 GPU-h; OPD -> 74.4 in 1,800 GPU-h) under
# the default calibration workload below (64 H100, 512 prompts per step,
# 128 + 4,200 tokens per sample, longest response 20,480; RL 16 samples per
# prompt, OPD 4 with the Qwen3-235B-A22B teacher in bf16). planopt's own
# evaluator prices one such step at 6.99 GPU-h for RL and 4.01 GPU-h for OPD
# (generation, the longest response, log-probs, update, refit; INFERRED by
# `planopt calibrate`, tests/solver/uncertainty/test_calibration.py re-checks the anchor). Since the
# MoE MFU curve (MFU_MOE_BY_ACTIVE_PARAMS_B) prices the Qwen3-235B-A22B teacher's
# scoring, an OPD step is 4.13 GPU-h and the OPD arm 1,855 GPU-h, 3 % above the
# anchor; OPD_SIGNAL_SCALE_SAMPLES was not re-fitted for it.
# RL: 17,920 / 6.99 = 2,565 steps = 2,565·512·15 = 19.7M group comparisons
# (all groups mixed at a 0.55 pass rate and k = 16); 67.6 is
# 1 - exp(-S/S0) = (67.6-55)/(77.5-55) = 0.56 of the way to the ceiling
# 77.5, so S/S0 = 0.821 and S0 = 19.7M / 0.821 = 24M (INFERRED).
RL_SIGNAL_SCALE_SAMPLES = 2.4e7
# OPD: dense per-token supervision. 1,800 / 4.01 = 449 steps = 449·512·4 =
# 0.92M samples; with the teacher at 85.7 (Qwen3-235B-A22B AIME'24), 74.4 is
# (74.4-55)/(85.7-55) = 0.632 of the way, S/S0 = 1.0, S0 = 0.92M (INFERRED).
# Cross-check: TML's OPD (Qwen3-8B, 60 -> 70 in ~150 steps of 512 x 4 =
# 307K samples, teacher ~81) implies S0 ≈ 0.49M, 1.9x faster than this anchor;
# RL / OPD = 26 in samples, inside TML's 7-10x fewer steps and 50-100x less
# compute.
OPD_SIGNAL_SCALE_SAMPLES = 9.2e5
# Teacher precision: "Give Me BF16 or Give Me Death" (arXiv 2411.02355):
# FP8 W8A8 lossless; INT8 W8A8 1–3 % degradation (-> 2 %); INT4 W4A16
# "rivaling 8-bit" (-> 2 %). Relative drop of the teacher's score.
# FP8 0 (priors.fp8_teacher_score_penalty; its spread in spreads.ABSOLUTE_FP8_TEACHER_SCORE_PENALTY): the paper's
# W8A8-FP checkpoints (Neural Magic's Meta-Llama-3.1-{8B,70B}-Instruct-FP8-dynamic cards) recover 99.7 % of Open
# LLM v1, 100.0-101.2 % of v2, 101.6-105.4 % of Arena-Hard and 100.0-100.4 % of HumanEval pass@1; the 405B's
# 100.0-100.1 % of Open LLM v1: the sign changes across suites, within the evaluations' noise.
TEACHER_PRECISION_SCORE_PENALTY = {"bf16": 0.0, "fp8": 0.0, "int8": 0.02, "int4": 0.02}

# --- Forgetting priors -------------------------------------------------------
# forgetting = general_baseline · share_{m,f} · mix_f(external_share) · progress,
# where f is the family of the general-capability score (task.general_score_family).
# A small documented set of families, each with its own SFT share (and mix curve)
# from a published forgetting figure; families without a readable table of
# distant-data SFT (math, chat) are not offered rather than guessed (README, "What
# planopt does not know").
#   instruction_following: behaviour scores (IFEval, IF-eval);
#   knowledge: multiple-choice and short-answer knowledge and understanding scores
#     (MMLU, ARC, HellaSwag, WinoGrande, TriviaQA, TruthfulQA, NLI);
#   coding: code-generation pass rates (HumanEval, MBPP).
GENERAL_SCORE_FAMILIES = ("instruction_following", "knowledge", "coding")
# The default keeps every shipped instance's numbers: the SFT prior was fitted to
# IF-eval (instances/calibration/tml-personalization-forgetting.json).
GENERAL_SCORE_FAMILY_DEFAULT = "instruction_following"
# instruction_following, SFT: Thinking Machines Lab, "On-Policy Distillation" (2025,
# https://thinkingmachines.ai/blog/on-policy-distillation/), personalisation
# experiment table (reference/post-training.md §1.4): Qwen3-8B IF-eval 85 -> 45 after
# mid-training on 100 % internal documents, 85 -> 79 at 70/30 documents/chat.
# Share 40/85 = 0.47 of the baseline at share 1.0; mix exponent ln(6/40)/ln(0.7) =
# 5.32 (fitted to the published points, FORMAT.md allows), measured down to s = 0.7.
SFT_FORGETTING_SHARE_IF_OF_BASELINE = 40.0 / 85.0
SFT_FORGETTING_MIX_EXPONENT_IF = 5.32
SFT_FORGETTING_MIX_MEASURED_SHARE_MIN_IF = 0.7
# knowledge, SFT: Biderman et al. 2024, "LoRA Learns Less and Forgets Less" (TMLR,
# https://arxiv.org/abs/2405.09673), §4.2 and Fig. 3: forgetting = the drop of the
# mean of HellaSwag, ARC-Challenge and WinoGrande (§4.2 text, read at
# https://www.hackernoon.com/over-time-lora-holds-up-better-than-full-finetuning).
# Llama-2-7B, full fine-tuning, IFT on 100 % new-domain data (as read for
# LORA_FORGETTING_SHARE below, INFERRED from the figure): base 0.645; math IFT
# (MetaMathQA) 0.57, a drop of 0.075 = 0.116 of the baseline; code IFT
# (Magicoder-Evol-Instruct) a drop of 0.195 = 0.302 of it. The share is their
# geometric mean, sqrt(0.116 · 0.302) = 0.187; spreads.py draws between the two.
# No source read varies the share for this family: it borrows the curve measured
# over the widest range of shares, the coding family's (INFERRED; README says so).
SFT_FORGETTING_SHARE_KNOWLEDGE_MATH_IFT = 0.075 / 0.645
SFT_FORGETTING_SHARE_KNOWLEDGE_CODE_IFT = 0.195 / 0.645
SFT_FORGETTING_SHARE_KNOWLEDGE_OF_BASELINE = math.sqrt(SFT_FORGETTING_SHARE_KNOWLEDGE_MATH_IFT
                                                       * SFT_FORGETTING_SHARE_KNOWLEDGE_CODE_IFT)
# coding, SFT (continued pre-training): Shao et al. 2024, "DeepSeekMath"
# (https://arxiv.org/abs/2402.03300), §5.1.1, Table 7 (DeepSeek-LLM 1.3B; read from
# a full-text copy in the code index): after 400B code tokens HumanEval 25.0 %,
# MBPP 40.0 %; then 150B math tokens only (new-domain share 1.0): 12.2 % and 17.0 %,
# drops of 12.8/25.0 = 0.512 and 23.0/40.0 = 0.575 of the baseline; the share is
# their geometric mean, 0.543. The same 150B math tokens mixed into the 400B code
# tokens in one stage (new-domain share 150/550 = 0.273): HumanEval 29.3 % (no
# drop) and MBPP 39.4 % (a drop of 0.6 of 40.0 = 0.015 of the baseline, 0.026 of
# the math-only drop). Mix exponent ln(0.6/23.0)/ln(150/550) = 2.81 (INFERRED: the
# one-stage run against the code-only one; MBPP's drop, HumanEval's gain would say
# less), measured down to s = 0.273.
SFT_FORGETTING_SHARE_CODING_HUMANEVAL = (25.0 - 12.2) / 25.0
SFT_FORGETTING_SHARE_CODING_MBPP = (40.0 - 17.0) / 40.0
SFT_FORGETTING_SHARE_CODING_OF_BASELINE = math.sqrt(SFT_FORGETTING_SHARE_CODING_HUMANEVAL
                                                    * SFT_FORGETTING_SHARE_CODING_MBPP)
SFT_FORGETTING_MIX_SHARE_CODING_MIXED = 150.0 / 550.0
SFT_FORGETTING_MIX_EXPONENT_CODING = (math.log((40.0 - 39.4) / (40.0 - 17.0))
                                      / math.log(SFT_FORGETTING_MIX_SHARE_CODING_MIXED))
SFT_FORGETTING_SHARE_OF_BASELINE_BY_FAMILY = {"instruction_following": SFT_FORGETTING_SHARE_IF_OF_BASELINE,
                                              "knowledge": SFT_FORGETTING_SHARE_KNOWLEDGE_OF_BASELINE,
                                              "coding": SFT_FORGETTING_SHARE_CODING_OF_BASELINE}
SFT_FORGETTING_SHARE_OF_BASELINE = SFT_FORGETTING_SHARE_OF_BASELINE_BY_FAMILY[GENERAL_SCORE_FAMILY_DEFAULT]
# Mix curve mix_f(s): the share of full forgetting kept at new-domain share s,
# s^alpha_f where family f's source measured it (s >= s_f), and below the smallest
# measured share not the power law extrapolated (0.2^5.32 = 2e-4 would forget almost
# nothing, which no source read shows) but linear in s from the measured point,
# s_f^alpha_f · s / s_f: forgetting follows the new-domain examples seen (INFERRED,
# weak: no source read measures below 0.27).
SFT_FORGETTING_MIX_EXPONENT_BY_FAMILY = {"instruction_following": SFT_FORGETTING_MIX_EXPONENT_IF,
                                         "knowledge": SFT_FORGETTING_MIX_EXPONENT_CODING,
                                         "coding": SFT_FORGETTING_MIX_EXPONENT_CODING}
SFT_FORGETTING_MIX_MEASURED_SHARE_MIN_BY_FAMILY = {"instruction_following": SFT_FORGETTING_MIX_MEASURED_SHARE_MIN_IF,
                                                   "knowledge": SFT_FORGETTING_MIX_SHARE_CODING_MIXED,
                                                   "coding": SFT_FORGETTING_MIX_SHARE_CODING_MIXED}
SFT_FORGETTING_MIX_EXPONENT = SFT_FORGETTING_MIX_EXPONENT_BY_FAMILY[GENERAL_SCORE_FAMILY_DEFAULT]
# RL and OPD stay near the base distribution (RL's Razor, arXiv 2509.04259;
# Retaining by Doing, arXiv 2510.18874); Qwen3 Table 21 shows MMLU-Redux up,
# not down, after both. A residual 2 % of the baseline at full progress keeps
# the tolerance meaningful (INFERRED, weak: no published matched drop). One share
# for every family: no source read gives an on-policy drop by family (GRPO on GSM8K
# and MATH in the public repo Emilianopp/forgetting-llms, STATUS.md, Qwen3-1.7B:
# MMLU +0.2 and +0.5, IFEval +1.5 and +3.1 points, i.e. no drop in either family).
RL_FORGETTING_SHARE_OF_BASELINE = 0.02
OPD_FORGETTING_SHARE_OF_BASELINE = 0.02
# SFT forgetting grows with examples seen on the scale of its learning curve.
SFT_FORGETTING_SCALE_SAMPLES = SFT_SIGNAL_SCALE_SAMPLES

# --- A GPU the catalog does not know (calibration cases, custom options) -----
# Fields a published case rarely gives. Every NVIDIA HGX/DGX and AMD MI300X
# platform in the catalog is an 8-GPU node (hardware.md A.2); scale-up link =
# NVLink4 900 GB/s bidirectional per GPU (H100/H200, hardware.md A.1);
# scale-out = 400 Gb/s (50 GB/s) per GPU, "typically 400 Gb/s per GPU on
# H100/H200 clusters" (hardware.md A.1 notes, CX-7 in [TITAN]).
CUSTOM_GPU_GPUS_PER_NODE = 8
CUSTOM_GPU_INTRA_NODE_GB_PER_S = 900.0
CUSTOM_GPU_INTER_NODE_GB_PER_S = 50.0

# --- Default calibration workload (``planopt calibrate``) ----------------------
# Published comparisons that give GPU-hours but not the run's shape (Qwen3
# Table 21) are predicted on this workload and hardware; the absolute
# learning-curve scales above are anchored on it.
# GPU: Table 21 does not state the GPU; H100 SXM, the dominant 2025 training
# GPU, 8 nodes of 8 (INFERRED: holds a 235B-A22B bf16 teacher sharded with room
# for 20K-token activations; GPU-hours vary little with the count).
CALIBRATION_GPU = "H100-SXM"
CALIBRATION_GPUS = 64
# 512 prompts per step: TML OPD (~512 prompts x 4 samples per step) and DAPO
# (arXiv 2503.14476: 512 prompts x 16 responses per batch).
CALIBRATION_PROMPTS_PER_STEP = 512
CALIBRATION_SAMPLES_PER_PROMPT = {"sft": 1, "rl": 16, "opd": 4}
# Prompt ~128 tokens: NeMo RL OpenMathInstruct-2 rows, tokens/s/GPU x GPUs x
# step s / samples - mean response = 3,359·8·91/2,048 - 1,066 ≈ 128 (INFERRED).
CALIBRATION_PROMPT_TOKENS = 128.0
# Reasoning-length responses: ~4,200 tokens, the mean implied by TML's OPD
# FLOPs for Qwen3-8B (post-training.md §1.2, INFERRED there); longest 20,480 =
# DAPO's 16,384 + 4,096 overlong buffer (arXiv 2503.14476).
CALIBRATION_RESPONSE_TOKENS = 4200.0
CALIBRATION_MAX_RESPONSE_TOKENS = 20480.0
CALIBRATION_SCORE_CEILING = 100.0
# A comparison that does not give the OPD teacher's score: the teacher closes
# this share of the headroom above the start. Qwen3-235B-A22B (thinking) scores
# 85.7 on AIME'24 (Qwen3 report, Table of flagship results) against the 8B
# start of 55.0: (85.7 - 55)/(100 - 55) = 0.68 (INFERRED; weak where the
# teacher is not a flagship).
CALIBRATION_TEACHER_SHARE_OF_HEADROOM = (85.7 - 55.0) / (100.0 - 55.0)
# Reliability cases use a small model on one node; the figure depends only on
# the overridden reliability fields (Qwen3-0.6B: the smallest catalog preset).
CALIBRATION_RELIABILITY_MODEL = "Qwen3-0.6B"
CALIBRATION_RELIABILITY_GPUS = 8
CALIBRATION_RELIABILITY_STEPS = 1000

# --- SFT runs: attention, FSDP / ZeRO-3 communication, CPU offload -----------------
# Attention FLOPs per token and layer in a forward pass: 4·s·h (Q·K^T and A·V, each
# 2·s·h; Megatron-LM, arXiv 2104.04473 Eq. 3: 24Bsh² + 4Bs²h per layer, its s² term).
# A training pass costs 3 forward passes (4 with activation recomputation), the same
# ratios as TRAIN_/FORWARD_FLOPS_PER_PARAM_TOKEN; torchtitan's MFU counts the same
# 12·L·h·s term (its get_num_flop_per_token), so it is priced at the same MFU.
ATTENTION_FLOPS_PER_LAYER_HIDDEN_CONTEXT = 4.0
# Causal masking: FlashAttention skips the masked blocks, about half of the score
# matrix ("FlashAttention-2", arXiv 2307.08691 §4.1: the causal FLOPs are half).
CAUSAL_ATTENTION_SHARE = 0.5
# FSDP / ZeRO-3 moves 3Ψ per micro-step (ZeRO, arXiv 1910.02054 §7.2.2: parameter
# all-gather in the forward, again in the backward, gradient reduce-scatter), each
# in bf16 weights' size; a ring collective sends (n-1)/n of it per GPU.
FSDP_COLLECTIVES_PER_MICROSTEP = 3.0
# CPU offload (ZeRO-3 offload / ZeRO-Infinity, arXiv 2104.07857; FSDP CPUOffload;
# verl actor param_offload / optimizer_offload). Per micro-step each GPU streams its
# share of the bf16 parameters in for the forward and again for the backward and its
# bf16 gradients out: 3 x 2 bytes per parameter. Per optimiser step the fp32 master
# weights and Adam moments (12 bytes per parameter, ZeRO's K = 12) cross the host link
# in and out once (verl moves them to the GPU for the update and back; DeepSpeed's
# CPU-Adam reads and writes them in host memory instead, priced as host CPU time on a
# DeepSpeed trainer: trainers.DEEPSPEED_OFFLOAD_HOST_SECONDS_PER_PARAM_PER_STEP).
OFFLOAD_STREAM_BYTES_PER_PARAM_PER_MICROSTEP = 6.0
OFFLOAD_STATE_BYTES_PER_PARAM_PER_STEP = 2.0 * 12.0
# Host link per GPU, one direction, GB/s (datasheets): PCIe Gen4 x16 = 32 GB/s
# (A100 "PCIe Gen4: 64 GB/s" bidirectional, NVIDIA A100 datasheet; L40S, L4 the same
# generation), PCIe Gen5 x16 = 64 GB/s (H100/H200 "PCIe Gen5: 128 GB/s", NVIDIA
# H100 and H200 datasheets; B200 on HGX B200; MI300X/MI325X "PCIe Gen5 x16", AMD
# datasheets). GB200: NVLink-C2C 900 GB/s bidirectional between one Grace CPU and its
# two B200 (NVIDIA GB200 NVL72 datasheet) -> 225 GB/s per GPU and direction (INFERRED).
# A GPU missing here has no host-link figure: offload on it is bad input.
HOST_LINK_GB_PER_S_PER_GPU = {
    "A100-40GB": 32.0, "A100-80GB": 32.0, "L40S": 32.0, "L4": 32.0,
    "H100-SXM": 64.0, "H100-PCIe": 64.0, "H200": 64.0, "B200": 64.0,
    "MI300X": 64.0, "MI325X": 64.0, "GB200": 225.0,
}
# A GPU without a catalog figure (a calibration case's own GPU) takes the default of its
# host link's PCIe generation, one direction of an x16 link, GB/s (instances/calibration/
# FORMAT.md: "PCIe Gen4 x16 = 32, Gen5 x16 = 64"; PCI-SIG PCIe 4.0 / 5.0 at 16 / 32 GT/s per
# lane, 128b/130b: 31.5 / 63 GB/s, which the datasheets above round to 32 / 64).
HOST_LINK_GB_PER_S_BY_PCIE_GENERATION = {4: 32.0, 5: 64.0}
# The PCIe generation of a GPU family's host interface, matched on the start of the name
# (case, spaces, hyphens ignored; the longest family first). Datasheets: NVIDIA A100, A800,
# A40, A30, A10, L40, L40S, L4 "PCIe Gen4 x16"; H100, H800, H200, H20 "PCIe Gen5 x16";
# HGX B200 / B100 "PCIe Gen5"; AMD Instinct MI250X, MI210 "PCIe Gen4 x16", MI300X, MI325X
# "PCIe Gen5 x16". A family missing here has no default: a case that offloads on such a GPU
# gives gpu.host_link_gb_per_s itself.
PCIE_GENERATION_BY_GPU_FAMILY = {
    "A100": 4, "A800": 4, "A40": 4, "A30": 4, "A10": 4, "L40": 4, "L4": 4, "MI250": 4, "MI210": 4,
    "H100": 5, "H800": 5, "H200": 5, "H20": 5, "B200": 5, "B100": 5, "MI300": 5, "MI325": 5,
}
# An SFT case that does not give its global batch: 128 examples per optimiser step
# (Stanford Alpaca train recipe, github.com/tatsu-lab/stanford_alpaca README: batch
# size 128; Tulu 2, arXiv 2311.10702 Table 9: effective batch 128).
CALIBRATION_SFT_GLOBAL_BATCH_EXAMPLES = 128

# --- Step-time physics (issue 9, items 1-4) -----------------------------------------
# Software releases of the RL stack: the same hardware and recipe got faster from one
# NeMo RL release to the next. Each release is a dated entry; an instance sets
# ``efficiency.software_release`` (default: the newest). Two effects:
# - ``policy_logprob_pass``: up to v0.6 the GRPO step recomputes the policy's
#   log-probs before the update (the importance-sampling denominator) besides the
#   reference model's; v0.7's performance recipes set ``loss_fn.force_on_policy_ratio:
#   true`` (git diff v0.5.0..v0.7.0 of examples/configs/recipes/llm/performance/*.yaml,
#   NVIDIA-NeMo/RL), which skips that pass (NVIDIA-NeMo/RL PR #2177: "skip the expensive
#   prepare_for_lp_inference() and get_logprobs() calls"; PR #3135, cherry-picked into
#   r0.7.0: "reduces logprob time by 41.6%-50.1%", i.e. one of two passes).
# - ``speed_vs_newest``: what else the release changed (vLLM 0.1x -> 0.20, Megatron
#   grouped-GEMM MoE and sequence packing in the v0.7 recipes), as the measured ratio
#   of step times of the same recipe on the same GPUs in consecutive releases' tables
#   (docs/about/performance-summary.md at tags v0.5.0, v0.6.0 and the v0.7 table),
#   applied to every training, scoring and decode rate. v0.6 -> v0.7: Qwen3-235B-A22B
#   on 256 H100, 312 -> 285 s (0.913; the only same-GPU-count pair whose recipe did
#   not change model-specific features: DeepSeek-V3 changed checkpoint in v0.6 and
#   added MTP speculative decoding in v0.7, and the v0.6 128-GB200 Qwen3-235B row,
#   345 s, is slower than its own 64-GB200 row). The pair includes the dropped
#   policy pass, which is ~2 % of that step (INFERRED), so 0.913 is kept as is.
#   v0.5 -> v0.6: geometric mean of the four same-GPU-count pairs, Qwen3-235B-A22B
#   128 H100 431 -> 395 s, 64 GB200 332 -> 286 s, Qwen3-30B-A3B 32 H100 198 -> 192 s,
#   16 GB200 232 -> 221 s = 0.924 (INFERRED); v0.5 = 0.913 x 0.924 = 0.844. None of the
#   v0.6 rows is a calibration case; the v0.5 and v0.7 rows are (the pairs give the
#   release ratio, not any row's absolute time).
SOFTWARE_RELEASES = {
    "nemo-rl-v0.5": {"date": "2026-01-30", "policy_logprob_pass": True, "speed_vs_newest": 0.913 * 0.924},
    "nemo-rl-v0.6": {"date": "2026-04-29", "policy_logprob_pass": True, "speed_vs_newest": 0.913},
    "nemo-rl-v0.7": {"date": "2026-07-29", "policy_logprob_pass": False, "speed_vs_newest": 1.0},
}
SOFTWARE_RELEASE_DEFAULT = "nemo-rl-v0.7"

# --- Calibrated step-time efficiency (issue 24 item 5) ----------------------------------
# A factor on every training, scoring and decode rate of a model of one kind, where the
# step-time model is biased on that kind's published rows: the median required factor
# f* (the multiplier on both rates that reproduces a row's published time, with the rate-free
# collectives left as they are) of the kind's calibration rows, derived leave-one-source-out
# by planopt.uncertainty.out_of_fold (`python benchmarks/uncertainty_spreads.py`). A kind
# is calibrated only where its out-of-fold P10-P90 of f* excludes 1 (the point prediction
# would lie outside its own interval); its spread in spreads.py is then centred on the
# calibrated point. MoE: median f* of the 21 MoE rows (20 NeMo RL v0.5/v0.6/v0.7 rows and
# verl's DeepSeek-V3 on H20) = 0.567 (out-of-fold P10-P90 0.358-0.920 before the factor, on
# the 20 NeMo RL rows); dense RL and SFT rows leave 1
# inside their ranges and are not calibrated. The factor is empirical, not physics: a
# B200 log-prob measurement of Qwen3-30B-A3B (NVIDIA-NeMo/RL PR #3295) agrees with the
# uncalibrated physics (tests/solver/uncertainty/test_calibration.py), so the MoE bias
# sits in the large-MoE rows (DeepSeek-V3, Qwen3-235B on GB200; CALIBRATION.md).
# An instance's own efficiency.mfu_train replaces the MFU, calibration included.
STEP_TIME_CALIBRATION_FACTOR = {"moe": 0.567}

# --- Data reuse: repeated prompts and examples (issue 12, item 5) ---------------------
# Effective data of U distinct items drawn D times in all (R = D/U - 1 repetitions
# beyond the first epoch): D' = U + U·R*·(1 - exp(-R/R*)) (Muennighoff et al. 2023,
# "Scaling Data-Constrained Language Models", NeurIPS 2023, arXiv 2305.16264, Eq. 5;
# the fit of App. A: R*_D = 15.387756, "repeated tokens are worth 1 - 1/e of fresh ones
# at R = R*"). Fitted on pre-training tokens (7M-9B parameters, 1-500 epochs); used here
# for SFT examples and for RL / OPD prompts alike (INFERRED: no published fit of prompt
# reuse in RL; the spread in spreads.FACTOR_REPEAT_SCALE carries the doubt).
REPEAT_SCALE_EPOCHS = 15.387756
# SFT epochs over distinct examples when the instance lists none: one pass, every
# example beyond those owned is bought (the behaviour before epochs were a choice).
SFT_MAX_EPOCHS_OPTIONS_DEFAULT = (1,)

# --- LoRA or full fine-tuning (issue 12, item 2) -----------------------------------
# A plan trains all weights ("full") or low-rank adapters on every linear layer
# ("lora", rank r). The instance lists the options; by default only full weights,
# so a plan without `adapter` means what it meant before adapters were a choice.
ADAPTER_OPTIONS_DEFAULT = ("full",)
LORA_RANK_OPTIONS_DEFAULT = (16,)
# LoRA on "all-linear" modules: the q, k, v, o projections and the three MLP
# matrices of each layer (Biderman et al. 2024, "LoRA Learns Less and Forgets Less",
# TMLR, §4.6: target all modules; Thinking Machines, "LoRA Without Regret", 2025:
# apply LoRA to all layers, MLP included). A d_in x d_out matrix gets r(d_in + d_out)
# adapter parameters (Hu et al. 2021, arXiv 2106.09685: B in R^{d x r}, A in R^{r x k}).
LORA_ATTENTION_MATRICES = 4
LORA_MLP_MATRICES = 3   # gated MLP: gate, up, down (Llama / Qwen)
# Frozen layers skip the weight-gradient GEMMs: forward 2N + input-gradient 2N = 4N
# FLOPs per token instead of 6N ("LoRA Without Regret": a LoRA pass costs about 2/3
# of a full fine-tuning pass; TRL docs "LoRA Without Regret": "using only ~67% of the
# compute"). With activation recomputation one more forward: 6N (Megatron-LM Eq. 3).
FROZEN_TRAIN_FLOPS_PER_PARAM_TOKEN = 4.0
FROZEN_TRAIN_RECOMPUTE_FLOPS_PER_PARAM_TOKEN = 6.0
# Frozen base weights are held in bf16 (2 bytes/param) and sharded over the job; the
# adapter carries the mixed-precision Adam state of ZeRO (16 bytes/param) — the
# reference's LoRA memory model ("≈ base weights 2 B/param bf16 + 16 B x trainable
# adapter params + activations", reference/hardware.md, INFERRED from LoRA
# arXiv 2106.09685 and QLoRA arXiv 2305.14314). Activations stay: the backward still
# flows through every frozen layer.
FROZEN_WEIGHT_BYTES_PER_PARAM = 2.0
# FSDP with frozen weights: all-gather in the forward and again in the backward, no
# gradient reduce-scatter for them (ZeRO §7.2.2 less its gradient collective).
FROZEN_FSDP_COLLECTIVES_PER_MICROSTEP = 2.0
# CPU offload with frozen weights: bf16 parameters in for the forward and the
# backward, no gradients out (4 bytes/param per micro-step instead of 6).
FROZEN_OFFLOAD_STREAM_BYTES_PER_PARAM_PER_MICROSTEP = 4.0
# Quality: the share of full fine-tuning's gain over the baseline a LoRA plan keeps.
# SFT 0.87, OPD 0.94: rank-32 LoRA trails full fine-tuning by 13 % after large SFT and
# by 6 % after on-policy distillation (Thinking Machines, "On-Policy Distillation",
# 2025; reference/post-training.md). RL 1.0: LoRA, even rank 1, matches full
# fine-tuning in policy-gradient RL ("LoRA Without Regret", 2025: RL conveys about one
# bit per episode, far below any adapter's capacity). Rank does not enter within the
# ranks offered (16-256 learn alike early, "LoRA Without Regret"; Biderman et al.:
# rank 16 and 256 bracket each other's IFT scores). Spreads in spreads.py.
# Asynchronous RL: the share of RL's quality gain lost per step of staleness (a plan keeps (1 - δ)^s of
# the synchronous gain at staleness s). AReaL (Fu et al. 2025; blog/AReaL_v0_3.md, Table 3), decoupled PPO
# objective, DeepSeek-R1-Distill-Qwen-1.5B, AIME24 after 1,000 updates: 42.0 at η = 0, 41.8 at η = 2, 41.0 at
# η = 8, 38.7 at η = 16, from a base of 28.9 (DeepSeek-R1 report, Table 5): the gain of 13.1 points keeps
# 0.985, 0.924 and 0.748, i.e. δ = 0.0077, 0.0099 and 0.018 per step (INFERRED); the point is η = 8's, the
# largest staleness AReaL calls "properly constrained" (η = 1 and 4 gain slightly: noise at this size).
STALENESS_GAIN_LOSS_PER_STEP = 0.0099
# Asynchronous (off-policy) OPD: the share of OPD's gain lost per step of staleness. INFERRED: RL's δ above. No
# measured figure per step was found: AsyncOPD (Kang et al. 2026, arXiv 2606.24143, READ abstract) reports
# "comparable accuracy" to synchronous OPD at 1.6-3.8x the throughput with its estimators, and that the
# student-weighted reverse KL (the per-token reward of Thinking Machines' OPD) is "vulnerable" to stale rollouts
# when left as is; its per-staleness accuracies were not readable. The spread (spreads.py) says how little is known.
OPD_STALENESS_GAIN_LOSS_PER_STEP = STALENESS_GAIN_LOSS_PER_STEP
LORA_GAIN_SHARE = {"sft": 0.87, "rl": 1.0, "opd": 0.94}

# --- Continued pre-training (issue 27, lever 7; cost/pretraining.py, reference/pretraining.md) ----------------
# A first stage may first continue pre-training its base on T domain tokens: 6·N·T training FLOPs (the rule
# every trained token is priced by, TRAIN_FLOPS_PER_PARAM_TOKEN), and a start score closing a share of the
# headroom to the task's ceiling, g(T, N) = s·(1 − exp(−T / (k·N))), N the student's parameters.
# s: Llemma (Azerbayev et al. 2023, arXiv 2310.10631, Table 1; the same table on the EleutherAI/llemma_7b and
# llemma_34b model cards), few-shot CoT accuracy of Code Llama before and Llemma after continued pre-training on
# Proof-Pile-2, 7B for 200B tokens and 34B for 50B: MATH 4.5 -> 18.0 and 12.2 -> 25.0, i.e. 13.5/95.5 = 0.141 and
# 12.8/87.8 = 0.146 of the headroom to 100 (INFERRED); the point is their mean, MATH being the math jobs' target.
CPT_HEADROOM_SHARE = 0.1436
# k, tokens per parameter: the 34B run (1.47 tokens per parameter) closed as large a share as the 7B run
# (28.6 tokens per parameter) on the median benchmark of the table (34B/7B share ratio 1.08 over GSM8k, OCW,
# MMLU-STEM, SAT, MATH), so it was saturated: read as at least 90 % of s, exp(−1.47/k) ≤ 0.1, k ≤ 1.47/ln 10 =
# 0.64 (INFERRED; an upper bound: the two runs are compute-matched, 6NT = 8.4e21 and 1.0e22 FLOPs, so they
# cannot separate tokens from parameters, and k is the slowest saturation they allow).
CPT_TOKENS_PER_PARAMETER_SCALE = 0.64
# Forgetting: the share of full fine-tuning's forgetting a LoRA plan keeps. SFT 0.2:
# Biderman et al. 2024 §4.2, math IFT at epoch 4: forgetting metric (mean of
# HellaSwag, ARC-Challenge, WinoGrande) LoRA 0.63 vs full 0.57, against a base near
# 0.645 (their LoRA code-CPT curve, "roughly constant", at 0.64): drops 0.015 vs
# 0.075 = 0.2 (INFERRED from their figures; code IFT gives 0.015/0.195 = 0.08).
# RL and OPD 1.0: no published LoRA-vs-full forgetting comparison; on-policy
# forgetting follows the KL moved on the task (RL's Razor, arXiv 2509.04259), which a
# LoRA plan reaching the same reward moves alike (INFERRED).
LORA_FORGETTING_SHARE = {"sft": 0.2, "rl": 1.0, "opd": 1.0}

# --- Evaluation runs (issue 12, item 8) -------------------------------------------
# A validation pass every 10 steps over 256 held-out prompts, one greedy sample each
# (NeMo RL examples/configs/grpo_math_1B.yaml: val_period 10, max_val_samples 256).
# Its decode runs on the plan's own GPUs (the rollout engine's speed); the responses
# are as long as the task's.
# The interval is an input, not a decision: what a sparser one loses (the best checkpoint missed) needs how
# much evaluated scores move between nearby checkpoints, in points, and no such figure was found
# (reference/post-training.md §7, NOT FOUND), so only its GPU time is priced (issue 27, lever 3).
EVAL_EVERY_STEPS = 10
EVAL_PROMPTS = 256

# --- Network (issue 12, item 8) -----------------------------------------------------
# Traffic inside one cluster (weight hand-over, collectives) is not billed. Egress
# out of a region: AWS $0.09/GB, first tier (reference/hardware.md §D "Egress to
# internet"; range $0.05-0.12/GB across providers).
EGRESS_USD_PER_GB = 0.09

# --- Log ingest and indexing (issue 12, item 8) -------------------------------------
# Trajectory logs are ingested and indexed by a log service: Amazon CloudWatch Logs,
# Standard class, $0.50 per GB ingested (us-east-1, June 2026; c3x.dev "CloudWatch
# Logs cost optimization"; ingestion is 80-90 % of such a bill).
LOG_INGEST_USD_PER_GB = 0.50

# Trainer backends (issue 24 item 1): their sourced efficiencies live in trainers.py; named here as every
# default is (``d.TRAINER_EFFICIENCY``)
from planopt.models.catalog.trainers import (  # noqa: E402,F401
    TRAINER_BACKENDS, FSDP_TRAIN_SECONDS_MEGATRON_LLAMA31_8B, FSDP_TRAIN_SECONDS_DTENSOR_LLAMA31_8B, FSDP_LOGPROB_SECONDS_MEGATRON_LLAMA31_8B, FSDP_LOGPROB_SECONDS_DTENSOR_LLAMA31_8B, DEEPSPEED_TOKENS_PER_S_PER_DEVICE_GRANITE_7B, FSDP_TOKENS_PER_S_PER_DEVICE_GRANITE_7B, TRAINER_EFFICIENCY, TRAINER_DEFAULT, ZERO_STAGE_STATE_BYTES_PER_PARAM, DEEPSPEED_OFFLOAD_HOST_SECONDS_PER_PARAM_PER_STEP)

# Long context and eager decode (issue 24 item 2): context parallelism's ring and the eager launch overhead
# live in long_context.py; named here as every default is
from planopt.models.catalog.long_context import (  # noqa: E402,F401
    CP_RING_FORWARD_PASSES_PER_SCORING_PASS, EAGER_OVERHEAD_SECONDS_PER_LAYER_BY_BATCH)
