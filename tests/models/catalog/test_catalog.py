"""Tests of the sourced default catalog (models/catalog)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from planopt.models.catalog import (
    CatalogLookupError,
    GpuSpec,
    ModelSpec,
    find_gpu,
    find_model,
    load_gpus,
    load_models,
    normalize_name,
)

CATALOG_DIR = Path(__file__).resolve().parents[3] / "models" / "catalog"

REQUIRED_GPUS = {
    "A100-40GB", "A100-80GB", "H100-SXM", "H100-PCIe", "H200", "B200", "L40S", "L4",
    "MI300X", "MI325X", "TPU-v5e", "TPU-v5p", "TPU-v6e",
}
REQUIRED_MODELS = {
    "Qwen3-0.6B", "Qwen3-1.7B", "Qwen3-4B", "Qwen3-8B", "Qwen3-14B", "Qwen3-32B",
    "Qwen3-30B-A3B", "Qwen3-235B-A22B", "Llama-3.1-8B", "Llama-3.1-70B", "Llama-3.1-405B",
}
GPU_POSITIVE_FIELDS = (
    "bf16_tflops", "hbm_gb", "hbm_tbps", "intra_node_gb_per_s", "inter_node_gb_per_s",
    "gpus_per_node", "price_on_demand_usd_per_gpu_hour",
)
GPU_OPTIONAL_POSITIVE_FIELDS = (
    "fp8_tflops", "int8_tops", "price_on_demand_high_usd_per_gpu_hour",
    "price_spot_usd_per_gpu_hour", "price_reserved_usd_per_gpu_hour",
)
MODEL_POSITIVE_FIELDS = (
    "params_b", "active_params_b", "layers", "hidden", "heads", "kv_heads", "head_dim",
    "vocab", "context_tokens",
)


def kv_bytes_per_token_bf16(model: ModelSpec) -> int:
    """2 (K and V) x layers x kv_heads x head_dim x 2 bytes (bf16)."""
    return 2 * model.layers * model.kv_heads * model.head_dim * 2


def test_json_keys_match_dataclass_fields() -> None:
    for file_name, list_key, cls in (("gpus.json", "gpus", GpuSpec), ("models.json", "models", ModelSpec)):
        document = json.loads((CATALOG_DIR / file_name).read_text(encoding="utf-8"))
        assert set(document) == {"as_of", list_key}
        field_names = [f.name for f in dataclasses.fields(cls)]
        for entry in document[list_key]:
            assert list(entry) == field_names, entry["name"]


def test_every_entry_has_a_source() -> None:
    for spec in [*load_gpus().values(), *load_models().values()]:
        assert isinstance(spec.source, str) and spec.source.strip(), spec.name


def test_gpu_catalog_covers_required_accelerators() -> None:
    gpus = load_gpus()
    assert len(gpus) >= 10
    assert REQUIRED_GPUS <= set(gpus)


def test_model_catalog_covers_required_presets() -> None:
    assert REQUIRED_MODELS <= set(load_models())


def test_gpu_numbers_are_positive() -> None:
    for gpu in load_gpus().values():
        for field in GPU_POSITIVE_FIELDS:
            value = getattr(gpu, field)
            assert isinstance(value, (int, float)) and not isinstance(value, bool), (gpu.name, field)
            assert value > 0, (gpu.name, field)
        for field in GPU_OPTIONAL_POSITIVE_FIELDS:
            value = getattr(gpu, field)
            assert value is None or value > 0, (gpu.name, field)
        assert isinstance(gpu.gpus_per_node, int)
        assert gpu.as_of and gpu.vendor


def test_fp8_at_least_bf16_where_present() -> None:
    for gpu in load_gpus().values():
        if gpu.fp8_tflops is not None:
            assert gpu.fp8_tflops >= gpu.bf16_tflops, gpu.name


def test_high_price_not_below_default_price() -> None:
    for gpu in load_gpus().values():
        high = gpu.price_on_demand_high_usd_per_gpu_hour
        if high is not None:
            assert high >= gpu.price_on_demand_usd_per_gpu_hour, gpu.name


def test_reserved_prices_from_aws_capacity_blocks() -> None:
    assert find_gpu("H100-SXM").price_reserved_usd_per_gpu_hour == pytest.approx(4.916)
    assert find_gpu("H200").price_reserved_usd_per_gpu_hour == pytest.approx(5.408)
    assert find_gpu("A100-40GB").price_reserved_usd_per_gpu_hour == pytest.approx(1.844)


def test_model_numbers_are_positive_and_consistent() -> None:
    for model in load_models().values():
        for field in MODEL_POSITIVE_FIELDS:
            value = getattr(model, field)
            assert isinstance(value, (int, float)) and not isinstance(value, bool), (model.name, field)
            assert value > 0, (model.name, field)
        assert model.active_params_b <= model.params_b, model.name
        if not model.moe:
            assert model.active_params_b == model.params_b, model.name
        assert model.heads % model.kv_heads == 0, model.name


def test_kv_bytes_pin_the_shapes() -> None:
    assert kv_bytes_per_token_bf16(find_model("Qwen3-8B")) == 147_456
    assert kv_bytes_per_token_bf16(find_model("Llama-3.1-8B")) == 131_072


def test_find_gpu_ignores_case_spaces_and_hyphens() -> None:
    assert find_gpu("h100 sxm").name == "H100-SXM"
    assert find_gpu("H100").name == "H100-SXM"
    assert find_gpu("tpu_v6e").name == "TPU-v6e"
    assert find_gpu("mi300x").name == "MI300X"


def test_find_model_by_alias() -> None:
    assert find_model("qwen3-8b").name == "Qwen3-8B"
    assert find_model("Qwen/Qwen3-8B").name == "Qwen3-8B"
    assert find_model("meta-llama/Llama-3.1-70B-Instruct").name == "Llama-3.1-70B"


def test_unknown_gpu_suggests_close_name() -> None:
    with pytest.raises(CatalogLookupError) as excinfo:
        find_gpu("H10O")
    message = str(excinfo.value)
    assert "did you mean" in message
    assert "H100-SXM" in message
    assert "\n" not in message
    assert isinstance(excinfo.value, ValueError)


def test_unknown_name_without_close_match_lists_canonical_names() -> None:
    with pytest.raises(CatalogLookupError) as excinfo:
        find_model("zzzzzzzz")
    message = str(excinfo.value)
    assert "Qwen3-8B" in message and "Llama-3.1-405B" in message


def test_aliases_are_unique_across_entries() -> None:
    for specs in (load_gpus(), load_models()):
        owner: dict[str, str] = {}
        for spec in specs.values():
            for label in (spec.name, *spec.aliases):
                key = normalize_name(label)
                assert owner.setdefault(key, spec.name) == spec.name, (label, owner[key], spec.name)


def test_specs_are_frozen_and_aliases_are_tuples() -> None:
    gpu = find_gpu("H200")
    assert isinstance(gpu.aliases, tuple)
    with pytest.raises(dataclasses.FrozenInstanceError):
        gpu.hbm_gb = 1  # type: ignore[misc]
    assert load_gpus() is load_gpus()
