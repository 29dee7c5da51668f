"""A Hugging Face config.json as a student's architecture (issue 25 item 1, part 2): the dense and MoE families map
to planopt's fields, with parameter counts computed here from the config's own numbers, one term per weight; a family
not understood is one line naming model_type."""

import json

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from planopt.cli import app
from planopt.models.catalog import find_model
from planopt.models.schema.hf_config import FAMILIES, HfConfigError, architecture_from_hf_config
from planopt.models.schema.instance import Architecture
from tests.support.common import INSTANCES, ROOT

DATA = ROOT / "tests" / "support" / "data" / "hf"
runner = CliRunner()

MIXTRAL_8X7B = {"model_type": "mixtral", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
                "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 32000, "num_local_experts": 8,
                "num_experts_per_tok": 2, "tie_word_embeddings": False, "max_position_embeddings": 32768}
DEEPSEEK_V3 = {"model_type": "deepseek_v3", "hidden_size": 7168, "num_hidden_layers": 61, "num_attention_heads": 128,
               "num_key_value_heads": 128, "intermediate_size": 18432, "vocab_size": 129280, "q_lora_rank": 1536,
               "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
               "n_routed_experts": 256, "n_shared_experts": 1, "num_experts_per_tok": 8, "moe_intermediate_size": 2048,
               "first_k_dense_replace": 3, "moe_layer_freq": 1, "tie_word_embeddings": False,
               "max_position_embeddings": 163840}


def config(name: str) -> dict:
    return json.loads((DATA / name).read_text())


def gqa_attention(c: dict, qk_norm: bool) -> int:
    h, n, kv = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"]
    d = c.get("head_dim") or h // n
    return h * n * d + 2 * h * kv * d + n * d * h + (2 * d if qk_norm else 0)


def embeddings(c: dict) -> int:
    return c["vocab_size"] * c["hidden_size"] * (1 if c.get("tie_word_embeddings") else 2) + c["hidden_size"]


def test_a_dense_config_maps_to_the_fields():
    c = config("qwen3-8b-config.json")
    h, L = c["hidden_size"], c["num_hidden_layers"]
    per_layer = gqa_attention(c, qk_norm=True) + 3 * h * c["intermediate_size"] + 2 * h
    params = L * per_layer + embeddings(c)
    got = architecture_from_hf_config(c)
    assert got["params_b"] == pytest.approx(params / 1e9, abs=1e-6) and got["active_params_b"] == got["params_b"]
    assert (got["layers"], got["hidden"], got["kv_heads"], got["head_dim"]) == (
        L, h, c["num_key_value_heads"], c["head_dim"])
    assert got["context_tokens"] == c["max_position_embeddings"] and got["moe"] is False
    preset = find_model("Qwen3-8B")   # the catalog's Qwen3-8B: 8.19B, the same shapes
    assert round(got["params_b"], 2) == preset.params_b
    assert (got["layers"], got["hidden"], got["kv_heads"], got["head_dim"]) == (
        preset.layers, preset.hidden, preset.kv_heads, preset.head_dim)


def test_llama_and_qwen2_biases_and_a_derived_head_dim():
    llama = {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
             "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256, "tie_word_embeddings": False}
    got = architecture_from_hf_config(llama)
    assert got["head_dim"] == 128 and round(got["params_b"], 2) == find_model("Llama-3.1-8B").params_b
    qwen2 = {**llama, "model_type": "qwen2"}    # Qwen2 has q, k and v biases
    extra = 32 * (32 * 128 + 2 * 8 * 128)
    assert architecture_from_hf_config(qwen2)["params_b"] == pytest.approx(got["params_b"] + extra / 1e9, abs=1e-6)


def test_qwen3_moe_counts_every_expert_and_the_active_ones():
    c = config("qwen3-30b-a3b-config.json")
    h, L, E, k = c["hidden_size"], c["num_hidden_layers"], c["num_experts"], c["num_experts_per_tok"]
    expert = 3 * h * c["moe_intermediate_size"]
    common = gqa_attention(c, qk_norm=True) + 2 * h + h * E   # attention, norms, router
    total = L * (common + E * expert) + embeddings(c)
    active = L * (common + k * expert) + embeddings(c)
    got = architecture_from_hf_config(c)
    assert got["params_b"] == pytest.approx(total / 1e9, abs=1e-6)
    assert got["active_params_b"] == pytest.approx(active / 1e9, abs=1e-6)
    assert (got["layers"], got["hidden"], got["kv_heads"], got["head_dim"], got["moe"]) == (L, h, 4, 128, True)
    preset = find_model("Qwen3-30B-A3B")     # 30.5B, 3.3B active
    assert round(got["params_b"], 1) == preset.params_b
    assert got["active_params_b"] == pytest.approx(preset.active_params_b, abs=0.06)   # 3.35 counted, "3.3B" published


def test_mixtral_and_deepseek_v3_match_their_published_totals():
    mix = architecture_from_hf_config(MIXTRAL_8X7B)   # 46.7B, 12.9B active (Mistral AI)
    assert round(mix["params_b"], 1) == 46.7 and round(mix["active_params_b"], 1) == 12.9
    ds = architecture_from_hf_config(DEEPSEEK_V3)     # 671B, 37B active (DeepSeek-V3 report)
    assert round(ds["params_b"]) == 671 and round(ds["active_params_b"]) in (37, 38)
    c = DEEPSEEK_V3                                   # the latent KV cache as one head: (512 + 64) / 2
    assert (ds["kv_heads"], ds["head_dim"]) == (1, (c["kv_lora_rank"] + c["qk_rope_head_dim"]) // 2)
    dense_layers = c["first_k_dense_replace"]
    expert = 3 * c["hidden_size"] * c["moe_intermediate_size"]
    idle = c["n_routed_experts"] - c["num_experts_per_tok"]     # the routed experts a token does not run
    assert ds["params_b"] - ds["active_params_b"] == pytest.approx(
        (c["num_hidden_layers"] - dense_layers) * idle * expert / 1e9, abs=1e-6)


def test_an_unknown_family_names_model_type_and_the_families():
    with pytest.raises(HfConfigError) as info:
        architecture_from_hf_config({"model_type": "gemma3", "hidden_size": 8})
    assert "model_type 'gemma3'" in str(info.value) and all(f in str(info.value) for f in FAMILIES)


def test_the_architecture_block_takes_the_object_and_fields_override():
    arch = Architecture.model_validate({"hf_config": config("qwen3-8b-config.json"), "layers": 30})
    assert arch.layers == 30 and arch.hidden == 4096 and arch.hf_config is None
    with pytest.raises(ValidationError, match="hf_config: model_type 'gemma3'"):
        Architecture.model_validate({"hf_config": {"model_type": "gemma3"}})
    with pytest.raises(ValidationError, match="files are read only for an instance file"):
        Architecture.model_validate({"hf_config": "config.json"})   # an object given in Python reads no file


def job_with_student(tmp_path, student: dict):
    data = json.loads((INSTANCES / "tiny.json").read_text())
    data["student"] = student
    path = tmp_path / "job.json"
    path.write_text(json.dumps(data))
    return path


def test_an_instance_file_reads_a_path_beside_it(tmp_path):
    (tmp_path / "hf").mkdir()
    (tmp_path / "hf" / "config.json").write_text((DATA / "qwen3-30b-a3b-config.json").read_text())
    path = job_with_student(tmp_path, {"hf_config": "hf/config.json"})
    res = runner.invoke(app, ["validate", str(path), "--json"])
    assert res.exit_code == 0, res.output
    from planopt.instance import load_instance
    assert load_instance(path).student.is_moe


def test_an_unknown_family_in_a_file_is_one_line_exit_2(tmp_path):
    path = job_with_student(tmp_path, {"hf_config": {"model_type": "gemma3", "hidden_size": 8}})
    for command in ("validate", "solve"):
        res = runner.invoke(app, [command, str(path)])
        assert res.exit_code == 2, res.output
        lines = res.stderr.strip().splitlines()
        assert len(lines) == 1 and "student: hf_config: model_type 'gemma3' is not understood" in lines[0], lines
        assert "qwen3_moe" in lines[0] and "deepseek_v3" in lines[0]


def test_a_portfolio_file_reads_a_job_s_config_beside_it(tmp_path):
    """A portfolio's job reads its student's config.json relative to the portfolio file; validated as with the
    preset of the same shapes."""
    data = json.loads((INSTANCES / "portfolio-small.json").read_text())
    (tmp_path / "config.json").write_text((DATA / "qwen3-8b-config.json").read_text())
    job = next(j for j in data["jobs"] if j["instance"]["student"] == {"preset": "Qwen3-8B"})
    job["instance"]["student"] = {"hf_config": "config.json"}
    path = tmp_path / "portfolio.json"
    path.write_text(json.dumps(data))
    res = runner.invoke(app, ["validate", str(path)])
    assert res.exit_code == 0, res.output
    from planopt.errors import InputError
    from planopt.portfolio.solve import load_portfolio
    with pytest.raises(InputError, match="files are read only for an instance file"):
        load_portfolio(data)   # as an object (the service's body), no file is read
