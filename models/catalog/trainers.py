"""Sourced efficiencies of the training backends (``training.trainer``; priced by ``models/cost/trainer.py``)."""

# --- Trainer backends (issue 24, item 1) ---------------------------------------------
# The software that runs the training passes: ``training.trainer`` / ``trainer_options``
# (``cost/trainer.py``). Each backend is priced relative to the MFU curves above, whose
# RL anchors are NeMo RL's Megatron backend (MFU_MOE_*, the calibration cases) and whose
# dense points are Megatron-LM's (22B, 175B) and torchtitan's (8B); a plan that names no
# trainer is priced exactly as before this block (``TRAINER_DEFAULT``).
TRAINER_BACKENDS = ("megatron", "fsdp", "deepspeed")
# Training passes (forward + backward + optimiser) of PyTorch DTensor / FSDP2 against
# Megatron-Core on the same workload: NeMo RL v0.3 blog (nvidia-nemo.github.io/blog/
# 2025/07/21/nemo-rl-v0.3), "Table 1. Model performance comparison for different training
# configurations across Megatron compared to PyTorch DTensor" (GRPO, steps 22-29 averaged),
# row "Llama 3.1-8B Instruct", 1 node x 8 H100: policy training 28 s (Megatron) vs 38 s
# (PyT DTensor); get logprobs 18 s vs 19 s (also quoted in NVIDIA-NeMo/RL issue #959,
# whose reruns give 27 s vs 40 s and 18 s vs 19 s). Speed of a training pass = 28/38 =
# 0.737, of a scoring forward pass 18/19 = 0.947 (INFERRED: ratios of the row's times;
# the two runs generated 795 and 777 tokens per sample, so per token the training ratio
# is at most 2.3 % lower, 0.720).
FSDP_TRAIN_SECONDS_MEGATRON_LLAMA31_8B = 28.0
FSDP_TRAIN_SECONDS_DTENSOR_LLAMA31_8B = 38.0
FSDP_LOGPROB_SECONDS_MEGATRON_LLAMA31_8B = 18.0
FSDP_LOGPROB_SECONDS_DTENSOR_LLAMA31_8B = 19.0
# DeepSpeed ZeRO-3 against PyTorch FSDP (full sharding) on the same workload: Hugging Face
# blog "A Hugging Face Accelerate Story of Multiple Backends: FSDP and DeepSpeed"
# (huggingface.co/blog/deepspeed-to-fsdp-and-back, 2024-06), Table 3: IBM Granite 7B on
# 4 A100, batch 8, bf16: FSDP (aligned mode) 3,158.7 tokens/s/device (MFU 0.41),
# DeepSpeed ZeRO-3 3,094.5 tokens/s/device (MFU 0.40): 0.980 of FSDP's speed
# (INFERRED), at a batch large enough that both hide their collectives.
DEEPSPEED_TOKENS_PER_S_PER_DEVICE_GRANITE_7B = 3094.5
FSDP_TOKENS_PER_S_PER_DEVICE_GRANITE_7B = 3158.7
_FSDP_TRAIN = FSDP_TRAIN_SECONDS_MEGATRON_LLAMA31_8B / FSDP_TRAIN_SECONDS_DTENSOR_LLAMA31_8B
_FSDP_FORWARD = FSDP_LOGPROB_SECONDS_MEGATRON_LLAMA31_8B / FSDP_LOGPROB_SECONDS_DTENSOR_LLAMA31_8B
_DEEPSPEED = DEEPSPEED_TOKENS_PER_S_PER_DEVICE_GRANITE_7B / FSDP_TOKENS_PER_S_PER_DEVICE_GRANITE_7B
# Per backend: the speed of its training passes and of its scoring passes against the MFU
# curve (1 = the curve), the share of ZeRO-3's 3 x 2N collective bytes per micro-step it
# moves (FSDP_COLLECTIVES_PER_MICROSTEP), and whether it overlaps them with compute.
# - megatron: the curve itself; its distributed optimiser reduce-scatters gradients and
#   all-gathers parameters once per optimiser step, overlapped with the backward
#   (Megatron-LM --overlap-grad-reduce / --overlap-param-gather), and its tensor-parallel
#   collectives are inside the measured throughput the curve is read from: no per-micro-step
#   parameter traffic (share 0).
# - fsdp (PyTorch FSDP / FSDP2 / DTensor): ZeRO-3's traffic (share 1), overlapped: FSDP2
#   all-gathers the next layer's parameters while the current one computes (implicit
#   forward prefetch; backward_prefetch BACKWARD_PRE, the FSDP default), so only the part of
#   a micro-step's collectives longer than its compute shows (cost/trainer.py).
# - deepspeed ZeRO-3, as DeepSpeed runs it by default (`deepspeed-zero3`): share 1, overlapped as FSDP's
#   (only what outlasts a micro-step's compute shows): overlap_comm defaults to true at stage 3
#   (DeepSpeedZeroConfig.overlap_comm_valid, deepspeed/runtime/zero/config.py) and parameters are
#   prefetched (stage3_prefetch_bucket_size, default 5e7; DeepSpeed-Chat's ds_utils.py sets 3e7
#   and leaves overlap_comm to that default).
# - deepspeed ZeRO-3 with overlap_comm false (`deepspeed-zero3-serial`): share 1, in series with
#   compute: LlamaFactory's examples/deepspeed/ds_z3_config.json and ds_z3_offload_config.json set
#   "overlap_comm": false (the all-gathers run on the compute stream; CALIBRATION.md), and
#   at one long sequence per GPU ZeRO-3's parameter fetches are not hidden:
#   ZeRO++, whose collectives move 4x fewer bytes than ZeRO-3's, runs 1.28-1.36x faster at
#   1K tokens per GPU and 1.24-1.29x at 2K (Microsoft Research blog "DeepSpeed ZeRO++: A
#   leap in speed for LLM and chat model training with 4X less communication", Fig. 6,
#   400 Gbps; quoted in deepspeedai/DeepSpeed issue #6781).
#   ZeRO-1 and ZeRO-2 keep whole bf16 parameters on every GPU (no parameter all-gather per
#   micro-step) and reduce-scatter the gradients each micro-step: 2N of the 6N (share 1/3),
#   in series (INFERRED from ZeRO, arXiv 1910.02054, §7.2.1; overlap_comm defaults to false
#   below stage 3), or overlapped with the backward where overlap_comm is set true
#   (`deepspeed-zero2-overlap`: the option "attempts to overlap the reduction of the gradients
#   with backward computation", DeepSpeed's configuration reference).
# - host_optimizer: under CPU offload, where the optimiser step runs. DeepSpeed's ZeRO-Offload
#   keeps the fp32 master weights and Adam moments in host memory and updates them there
#   (DeepSpeedCPUAdam, "offloads the optimizer memory and computation from the GPU to the host
#   CPU", DeepSpeed's ZeRO-Offload tutorial), so a step costs host CPU time
#   (DEEPSPEED_OFFLOAD_HOST_SECONDS_PER_PARAM_PER_STEP below); verl's and FSDP's offload move
#   the state to the GPU for the update and back (priced as host-link bytes, physics).
TRAINER_EFFICIENCY = {
    "megatron": {"train_speed": 1.0, "forward_speed": 1.0, "collective_share": 0.0, "overlap": True,
                 "host_optimizer": False},
    "fsdp": {"train_speed": _FSDP_TRAIN, "forward_speed": _FSDP_FORWARD, "collective_share": 1.0, "overlap": True,
             "host_optimizer": False},
    **{f"deepspeed-zero{stage}{suffix}": {"train_speed": _FSDP_TRAIN * _DEEPSPEED,
                                          "forward_speed": _FSDP_FORWARD * _DEEPSPEED,
                                          "collective_share": 1.0 if stage == 3 else 1.0 / 3.0, "overlap": overlap,
                                          "host_optimizer": True}
       for stage in (1, 2, 3)
       for suffix, overlap in ((("", True), ("-serial", False)) if stage == 3 else (("", False), ("-overlap", True)))},
}
# The trainer of a plan that names none: the MFU curve, ZeRO-3's collectives in series,
# ZeRO-3's sharded memory, the optimiser state over the host link under offload, i.e. the
# pricing of every release before trainers were modelled (the shipped instances' figures).
TRAINER_DEFAULT = {"train_speed": 1.0, "forward_speed": 1.0, "collective_share": 1.0, "overlap": False,
                   "host_optimizer": False}
# DeepSpeed ZeRO-Offload's optimiser step on the host, one published table that runs the same
# job with and without optimizer offload: gist.github.com/chenyaofo/d4cd6a20ab4b95cb3a49491747e2139a
# ("Benchmark of LLaMA-7B models using deepspeed-based traning code", DeepSpeed 0.14.2, PyTorch
# 2.2.0, CUDA 12.1, one node of 8 A800 with 2 x Intel Xeon 8358 and 1 TB host memory,
# sequence 4,096), rows ZeRO-3 with HF gradient checkpointing, batch 2 per device and 64 per
# gradient step: Th.put 4.45 without offload, 2.05 with offload_optimizer (READ). INFERRED: Th.put is
# samples per second of the whole node (the only reading a node can reach: 4.45 x 4,096 tokens
# is 2,278 tokens/s per A800, 30 % MFU at 6N; per device or per step would exceed the A800's
# peak), so a gradient step of 64 samples takes 64/4.45 = 14.38 s and 64/2.05 = 31.22 s, and
# offloading the optimiser adds 16.84 s per step for LLaMA-7B's 6,738,415,616 parameters
# (Touvron et al., arXiv 2302.13971, Table 2 "6.7B"; the HF checkpoint's count) on one node's
# host: 2.50e-9 s per parameter per step per node, the host CPUs of a node shared by its GPUs'
# ranks. The same table's ZeRO-2 pair (4.19 vs 1.81 at 1 per device, 8 micro-steps per step)
# gives 2.98e-9: the part that grows with micro-steps (fp32 gradients to the host) is not
# separated, and the per-step figure of the ZeRO-3 pair is used. Weak: one host's CPUs and
# memory; a host with more cores or memory bandwidth updates faster.
DEEPSPEED_OFFLOAD_SAMPLES_PER_S_ZERO3_LLAMA7B = 4.45
DEEPSPEED_OFFLOAD_SAMPLES_PER_S_ZERO3_OPTIM_OFFLOAD_LLAMA7B = 2.05
DEEPSPEED_OFFLOAD_SAMPLES_PER_GRADIENT_STEP_LLAMA7B = 64.0
DEEPSPEED_OFFLOAD_PARAMS_LLAMA7B = 6_738_415_616.0
DEEPSPEED_OFFLOAD_HOST_SECONDS_PER_PARAM_PER_STEP = (
    DEEPSPEED_OFFLOAD_SAMPLES_PER_GRADIENT_STEP_LLAMA7B / DEEPSPEED_OFFLOAD_SAMPLES_PER_S_ZERO3_OPTIM_OFFLOAD_LLAMA7B
    - DEEPSPEED_OFFLOAD_SAMPLES_PER_GRADIENT_STEP_LLAMA7B / DEEPSPEED_OFFLOAD_SAMPLES_PER_S_ZERO3_LLAMA7B
) / DEEPSPEED_OFFLOAD_PARAMS_LLAMA7B
# Training-state bytes per parameter a GPU holds unsharded, and sharded over the n GPUs
# (ZeRO, arXiv 1910.02054, Fig. 1 with K = 12: ZeRO-1 (2 + 2)Ψ + 12Ψ/n, ZeRO-2
# 2Ψ + 14Ψ/n, ZeRO-3 16Ψ/n). FSDP full sharding and Megatron's distributed optimiser with
# its model parallelism are priced as fully sharded (TRAIN_STATE_BYTES_PER_PARAM over n).
ZERO_STAGE_STATE_BYTES_PER_PARAM = {1: (4.0, 12.0), 2: (2.0, 14.0), 3: (0.0, 16.0)}
