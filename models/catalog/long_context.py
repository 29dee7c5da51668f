"""Sourced figures of long-context training and eager decode (issue 24 item 2): context parallelism's ring
(``models/cost/context.py``) and the kernel-launch overhead of decode without CUDA graphs
(``physics.eager_decode_seconds``)."""

# --- Context parallelism: the KV ring --------------------------------------------------
# Ring attention (Liu, Zaharia, Abbeel, "Ring Attention with Blockwise Transformers for
# Near-Infinite Context", arXiv 2310.01889, §3): each of the cp GPUs holding a block of
# the sequence passes its key-value block to the next GPU of a ring, cp - 1 times per
# layer, "overlapping communication of key-value blocks with computation of blockwise
# attention"; "if the computation time exceeds the time required for transferring
# key-value blocks, this results in no additional communication cost. This overlapping
# mechanism applies to both forward and backward passes". Megatron-Core's context
# parallelism (docs "context_parallel" package: CP with P2P ring exchanges of KV,
# overlapped with attention in Transformer Engine) runs the same ring. So a layer-pass
# costs max(attention compute, KV transfer): only the transfer beyond the layer's
# attention compute is priced (cost/context.py), and none beside the GEMMs (the ring does
# not overlap with the MLP in either source, and it needs none of it).
# KV blocks moved per pass, in units of one forward pass's K and V: forward 1 (K, V);
# backward 2 (K, V again, and their gradients dK, dV travel the ring back: ring attention
# §3 "the same operations ... in backward"; Megatron-Core's CP backward exchanges dKV);
# a recomputed forward (activation recomputation) 1 more. This is the ratio of the
# training pass's FLOPs to a forward pass's (6N/2N = 3, 8N/2N = 4), as for attention
# (physics.attention_flops_per_token), and of one scoring pass 1.
CP_RING_FORWARD_PASSES_PER_SCORING_PASS = 1.0

# --- Decode without CUDA graphs (vLLM enforce_eager) ----------------------------------
# vLLM's engine argument enforce_eager "disable[s] CUDA graph and always execute[s] the
# model in eager mode" (vllm-project/vllm PR #1926, the PR that added CUDA graphs): each
# decode iteration then launches every kernel of every layer from the CPU, a per-layer
# overhead that a captured graph replays in one launch. Two published measurements, per
# layer and iteration (INFERRED: the difference of the two times over tokens and layers):
# - vllm-project/vllm PR #1440 ("CUDA graph for Llama"), Llama 2 7B (32 layers), no
#   tensor parallelism, batch 1, 5 input and 100 output tokens: "about 1.05s ... with CUDA
#   graph ... vs about 1.2s without": (1.2 - 1.05) / 100 / 32 = 46.9 us per layer;
#   "at bigger batch sizes I don't see visible gain".
# - xLLM-AI/xllm PR #713 ("add CUDAGraph Executor"), Qwen3-0.6B (28 layers), 3,000 input
#   and 500 output tokens, mean TPOT: concurrency 1 4.20 ms without vs 2.72 ms with
#   (52.9 us per layer, 13 % above the vLLM figure), concurrency 30 9.85 vs 9.11 ms:
#   (9.85 - 9.11) / 28 = 26.4 us per layer.
EAGER_VLLM_LLAMA2_7B_SECONDS_EAGER = 1.2
EAGER_VLLM_LLAMA2_7B_SECONDS_GRAPH = 1.05
EAGER_VLLM_LLAMA2_7B_OUTPUT_TOKENS = 100
EAGER_VLLM_LLAMA2_7B_LAYERS = 32
EAGER_XLLM_QWEN3_06B_TPOT_MS_EAGER_BATCH_30 = 9.85
EAGER_XLLM_QWEN3_06B_TPOT_MS_GRAPH_BATCH_30 = 9.11
EAGER_XLLM_QWEN3_06B_LAYERS = 28
EAGER_XLLM_BATCH = 30
MILLISECONDS_PER_SECOND = 1000.0
# Seconds of eager launch overhead per layer and decode iteration, by the replica's batch:
# piecewise linear in log(batch) between the two points, flat outside them
# (physics._log_interpolate); at batch 1 the vLLM Llama 2 7B figure (the larger model).
EAGER_OVERHEAD_SECONDS_PER_LAYER_BY_BATCH = (
    (1.0, (EAGER_VLLM_LLAMA2_7B_SECONDS_EAGER - EAGER_VLLM_LLAMA2_7B_SECONDS_GRAPH)
     / EAGER_VLLM_LLAMA2_7B_OUTPUT_TOKENS / EAGER_VLLM_LLAMA2_7B_LAYERS),
    (float(EAGER_XLLM_BATCH), (EAGER_XLLM_QWEN3_06B_TPOT_MS_EAGER_BATCH_30 - EAGER_XLLM_QWEN3_06B_TPOT_MS_GRAPH_BATCH_30)
     / MILLISECONDS_PER_SECOND / EAGER_XLLM_QWEN3_06B_LAYERS),
)
