"""A Hugging Face ``config.json`` read as planopt's architecture fields (``Architecture``).

planopt describes a transformer by ``params_b``, ``active_params_b``, ``layers``, ``hidden``,
``kv_heads`` and ``head_dim`` (``models/schema/instance.py``). A Hugging Face config gives the
shapes; the parameter counts are the arithmetic of the family's modelling code in ``transformers``
(one term per weight matrix, bias and norm):

- every family: embeddings ``V·h`` (and an untied ``lm_head``, ``V·h`` more), two RMSNorms per
  layer and a final one (``h`` each);
- grouped-query attention (Llama, Mistral, Qwen2, Qwen3, Mixtral, Qwen2-MoE, Qwen3-MoE):
  ``q`` and ``o`` ``h·n·d``, ``k`` and ``v`` ``h·n_kv·d`` each; biases on q, k, v for Qwen2 and
  Qwen2-MoE (``Qwen2Attention``: ``bias=True``), where ``attention_bias`` says so for the others;
  Qwen3's per-head q and k RMSNorms (``d`` each);
- multi-head latent attention (DeepSeek-V3, ``DeepseekV3Attention``): ``q_a`` ``h·r_q``, its norm,
  ``q_b`` ``r_q·n·(d_nope + d_rope)`` (``q_proj`` ``h·n·(d_nope + d_rope)`` without a q LoRA rank),
  ``kv_a`` ``h·(r_kv + d_rope)``, its norm, ``kv_b`` ``r_kv·n·(d_nope + d_v)``, ``o`` ``n·d_v·h``;
  its KV cache holds the latent, ``r_kv + d_rope`` values per token and layer, which planopt writes as
  one KV head of ``(r_kv + d_rope)/2`` (K and V count twice in ``physics.kv_bytes_per_token``), as the
  DeepSeek-V3 calibration cases do (``instances/calibration-validation/*deepseek-v3*``: 1 × 288);
- a gated MLP (gate, up, down): ``3·h·I``;
- a mixture of experts: ``E`` routed experts of ``3·h·I_moe`` each (``moe_intermediate_size``, or
  ``intermediate_size`` for Mixtral) and a router ``h·E``; shared experts of ``3·h·I_shared``
  (DeepSeek: ``n_shared_experts·moe_intermediate_size``; Qwen2-MoE: ``shared_expert_intermediate_size``,
  with its ``h``-wide gate); DeepSeek-V3's router bias (``e_score_correction_bias``, ``E``). Layers
  before ``first_k_dense_replace`` (DeepSeek) or listed in ``mlp_only_layers`` or off
  ``decoder_sparse_step`` (Qwen) are dense. A token runs ``num_experts_per_tok`` routed experts, so
  ``active_params_b`` counts those, the shared experts and everything outside the experts.

Checked against the published totals: Qwen3-8B 8.19B, Llama-3.1-8B 8.03B, Qwen3-30B-A3B 30.5B with
3.3B active, Mixtral-8x7B 46.7B with 12.9B active, Qwen1.5-MoE-A2.7B 14.3B with 2.7B active,
DeepSeek-V3 671B with 37B active (``tests/models/schema/test_hf_config.py``). DeepSeek's multi-token
prediction module (``num_nextn_predict_layers``) is not in the Hugging Face model and not counted.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

DENSE_FAMILIES: tuple[str, ...] = ("llama", "mistral", "qwen2", "qwen3")
MOE_FAMILIES: tuple[str, ...] = ("mixtral", "qwen2_moe", "qwen3_moe", "deepseek_v3")
FAMILIES: tuple[str, ...] = DENSE_FAMILIES + MOE_FAMILIES
_BIASED_QKV = ("qwen2", "qwen2_moe")          # q, k, v biases are hard-wired in their attention
_QK_NORM = ("qwen3", "qwen3_moe")             # per-head RMSNorm on q and k


class HfConfigError(ValueError):
    """A Hugging Face config planopt cannot read: a family it does not know, or a key missing or malformed."""


def families_line() -> str:
    """The families understood, as one phrase for messages and the README."""
    return f"dense {', '.join(DENSE_FAMILIES)}; MoE {', '.join(MOE_FAMILIES)}"


_REQUIRED = object()


def _int(config: Mapping[str, Any], key: str, default: Any = _REQUIRED) -> int:
    value = config.get(key)
    if value is None:
        if default is _REQUIRED or default is None:
            raise HfConfigError(f"{key}: required by model_type {config.get('model_type')!r}, missing")
        value = default
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise HfConfigError(f"{key}: expected a non-negative integer, got {value!r}")
    return value


def _positive(config: Mapping[str, Any], key: str, default: Any = _REQUIRED) -> int:
    value = _int(config, key, default)
    if value < 1:
        raise HfConfigError(f"{key}: expected a positive integer, got {value!r}")
    return value


def architecture_from_hf_config(config: Any) -> dict[str, Any]:
    """planopt's architecture fields of the Hugging Face ``config`` (the object of a ``config.json``).

    Returns ``params_b``, ``active_params_b``, ``layers``, ``hidden``, ``kv_heads`` and ``head_dim``, and
    for the record ``heads``, ``vocab``, ``context_tokens``, ``moe`` and ``model_type``. Raises
    :class:`HfConfigError` (one line) for a family not understood or a missing or malformed key."""
    if not isinstance(config, Mapping):
        raise HfConfigError(f"expected a JSON object (a Hugging Face config.json), got {type(config).__name__}")
    family = config.get("model_type")
    if family is None:
        raise HfConfigError(f"model_type is missing (not a Hugging Face config.json?); planopt reads {families_line()}")
    if family not in FAMILIES:
        raise HfConfigError(f"model_type {family!r} is not understood; planopt reads {families_line()}")
    h = _positive(config, "hidden_size")
    layers = _positive(config, "num_hidden_layers")
    heads = _positive(config, "num_attention_heads")
    vocab = _positive(config, "vocab_size")
    tied = config.get("tie_word_embeddings", False)
    if not isinstance(tied, bool):
        raise HfConfigError(f"tie_word_embeddings: expected true or false, got {tied!r}")
    embeddings = vocab * h * (1 if tied else 2)
    norms = 2 * h

    if family == "deepseek_v3":
        attention, kv_heads, head_dim = _latent_attention(config, h, heads)
    else:
        kv_heads = _positive(config, "num_key_value_heads", heads)
        head_dim = _positive(config, "head_dim", h // heads if h % heads == 0 else None)
        all_biased = config.get("attention_bias", False) is True   # Llama, Mistral, Qwen3: q, k, v and o biases
        attention = 2 * h * heads * head_dim + 2 * h * kv_heads * head_dim
        attention += (heads * head_dim + 2 * kv_heads * head_dim) if family in _BIASED_QKV or all_biased else 0
        attention += h if all_biased and family not in _BIASED_QKV else 0
        attention += 2 * head_dim if family in _QK_NORM else 0

    moe = family in MOE_FAMILIES
    sparse = _sparse_layers(config, family, layers) if moe else set()
    dense_mlp = 3 * h * _positive(config, "intermediate_size") if len(sparse) < layers else 0
    total = active = 0
    if not moe:
        total = active = layers * (attention + dense_mlp + norms)
    else:
        expert, routed, top_k, shared, router = _experts(config, family, h)
        for layer in range(layers):
            if layer in sparse:
                total += attention + norms + routed * expert + shared + router
                active += attention + norms + top_k * expert + shared + router
            else:
                total += attention + norms + dense_mlp
                active += attention + norms + dense_mlp
    total += embeddings + h
    active += embeddings + h
    return {"params_b": round(total / 1e9, 6), "active_params_b": round(active / 1e9, 6), "layers": layers,
            "hidden": h, "kv_heads": kv_heads, "head_dim": head_dim, "heads": heads, "vocab": vocab,
            "context_tokens": config.get("max_position_embeddings"), "moe": moe, "model_type": family}


def _latent_attention(config: Mapping[str, Any], h: int, heads: int) -> tuple[int, int, int]:
    """DeepSeek-V3's multi-head latent attention: its parameters, and its latent KV cache as one head."""
    q_rank = config.get("q_lora_rank")
    kv_rank = _positive(config, "kv_lora_rank")
    nope, rope = _positive(config, "qk_nope_head_dim"), _positive(config, "qk_rope_head_dim")
    v_dim = _positive(config, "v_head_dim")
    if q_rank is None:
        q = h * heads * (nope + rope)
    else:
        q_rank = _positive(config, "q_lora_rank")
        q = h * q_rank + q_rank + q_rank * heads * (nope + rope)
    kv = h * (kv_rank + rope) + kv_rank + kv_rank * heads * (nope + v_dim)
    o = heads * v_dim * h
    latent = kv_rank + rope
    return q + kv + o, 1, max(1, latent // 2)


def _experts(config: Mapping[str, Any], family: str, h: int) -> tuple[int, int, int, int, int]:
    """One routed expert's parameters, the routed experts, those a token runs, the shared experts' and the router's."""
    top_k = _positive(config, "num_experts_per_tok")
    shared = 0
    if family == "mixtral":
        routed = _positive(config, "num_local_experts")
        expert = 3 * h * _positive(config, "intermediate_size")
        router = h * routed
    elif family == "deepseek_v3":
        routed = _positive(config, "n_routed_experts")
        width = _positive(config, "moe_intermediate_size")
        expert = 3 * h * width
        shared = _int(config, "n_shared_experts", 0) * expert
        router = h * routed + routed   # the gate and its e_score_correction_bias
    else:   # qwen2_moe, qwen3_moe
        routed = _positive(config, "num_experts")
        expert = 3 * h * _positive(config, "moe_intermediate_size")
        router = h * routed
        if family == "qwen2_moe":
            width = _int(config, "shared_expert_intermediate_size", 0)
            shared = 3 * h * width + (h if width else 0)   # the shared expert and its sigmoid gate
    if top_k > routed:
        raise HfConfigError(f"num_experts_per_tok: {top_k} is more than the {routed} routed experts")
    return expert, routed, top_k, shared, router


def _sparse_layers(config: Mapping[str, Any], family: str, layers: int) -> set[int]:
    """The layers whose MLP is a mixture of experts."""
    if family == "mixtral":
        return set(range(layers))
    if family == "deepseek_v3":
        first = _int(config, "first_k_dense_replace", 0)
        every = _positive(config, "moe_layer_freq", 1)
        return {n for n in range(layers) if n >= first and n % every == 0}
    step = _positive(config, "decoder_sparse_step", 1)
    dense = config.get("mlp_only_layers") or []
    if not isinstance(dense, list) or not all(isinstance(n, int) and not isinstance(n, bool) for n in dense):
        raise HfConfigError(f"mlp_only_layers: expected a list of layer numbers, got {dense!r}")
    return {n for n in range(layers) if n not in dense and (n + 1) % step == 0}


def read_hf_config(path: str, base_dir: Any) -> dict:
    """The JSON object of the Hugging Face config at ``path`` (relative to ``base_dir``, the instance file's folder);
    ValueError naming ``hf_config`` for any reason it cannot be read. Without ``base_dir`` (an instance given as an
    object: the Python API, the HTTP service) no file is read."""
    if base_dir is None:
        raise ValueError(f"hf_config: {path!r} is a path, and files are read only for an instance file; "
                         "give the config's JSON object instead")
    p = Path(path) if Path(path).is_absolute() else Path(base_dir) / path
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"hf_config: {p}: file not found") from None
    except IsADirectoryError:
        raise ValueError(f"hf_config: {p}: is a directory, expected a config.json") from None
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise ValueError(f"hf_config: {p}: not valid JSON") from None
    except (OSError, ValueError) as exc:
        raise ValueError(f"hf_config: {p}: cannot be read ({getattr(exc, 'strerror', None) or exc})") from None
    if not isinstance(data, dict):
        raise ValueError(f"hf_config: {p}: expected a JSON object")
    return data
