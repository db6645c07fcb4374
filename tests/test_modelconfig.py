"""`--model-config`: Hugging Face configs become facts as the pack's `[model_config]` table says.

Fixtures under tests/fixtures/models/ are shaped like the published config.json files (keys and
values, no weights). Every bad input is an `InvalidInput` naming the path; a bad table is a
`PackError` listing every problem.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from solver import InvalidInput, PackError, load_pack, resolve
from solver.cli.commands import main
from solver.inputs.modelconfig import facts_from_model_config
from solver.pack.modelconfig import check_model_config_map

MODELS = Path(__file__).parent / "fixtures" / "models"
SGLANG = load_pack("sglang")

# What each fixture must give: every fact read, and nothing else (traits the config does not show
# stay unknown for the architecture rules to decide).
EXPECTED: dict[str, dict[str, Any]] = {
    "deepseek-r1-modelopt-nvfp4": {
        "checkpoint_quant": "modelopt_fp4",
        "model_format": "safetensors",
        "architecture": "DeepseekV3ForCausalLM",
        "is_mla": True,
        "is_moe": True,
    },
    "deepseek-v2-lite-chat": {
        "checkpoint_quant": "none",
        "model_format": "safetensors",
        "architecture": "DeepseekV2ForCausalLM",
        "is_mla": True,
        "is_moe": True,
    },
    "deepseek-v3-fp8": {
        "checkpoint_quant": "fp8",
        "model_format": "safetensors",
        "architecture": "DeepseekV3ForCausalLM",
        "is_mla": True,
        "is_moe": True,
    },
    "deepseek-v3.2-fp8": {
        "checkpoint_quant": "fp8",
        "model_format": "safetensors",
        "architecture": "DeepseekV32ForCausalLM",
        "is_mla": True,
        "is_moe": True,
        "is_dsa": True,
    },
    # Published shapes of current models (issue #19 item 6): Gemma 3 keeps its text keys in text_config.
    "gemma-3-27b-it": {
        "checkpoint_quant": "none",
        "model_format": "safetensors",
        "architecture": "Gemma3ForConditionalGeneration",
        "is_mla": False,
        "is_moe": False,
    },
    "glm-4.5": {
        "checkpoint_quant": "none",
        "model_format": "safetensors",
        "architecture": "Glm4MoeForCausalLM",
        "is_mla": False,
        "is_moe": True,
    },
    "gpt-oss-120b": {
        "checkpoint_quant": "mxfp4",
        "model_format": "safetensors",
        "architecture": "GptOssForCausalLM",
        "is_mla": False,
        "is_moe": True,
        "has_attention_sinks": True,
    },
    # Kimi K2 is a DeepSeek-V3 class with 64 heads and block-FP8 weights.
    "kimi-k2-instruct": {
        "checkpoint_quant": "fp8",
        "model_format": "safetensors",
        "architecture": "DeepseekV3ForCausalLM",
        "is_mla": True,
        "is_moe": True,
    },
    "llama-3.1-8b-instruct": {
        "checkpoint_quant": "none",
        "model_format": "safetensors",
        "architecture": "LlamaForCausalLM",
        "is_mla": False,
        "is_moe": False,
    },
    "llama-3.1-8b-instruct-awq-int4": {
        "checkpoint_quant": "awq",
        "model_format": "safetensors",
        "architecture": "LlamaForCausalLM",
        "is_mla": False,
        "is_moe": False,
    },
    "llama-3.1-8b-instruct-gptq-int4": {
        "checkpoint_quant": "gptq",
        "model_format": "safetensors",
        "architecture": "LlamaForCausalLM",
        "is_mla": False,
        "is_moe": False,
    },
    # The quantization lives in hf_quant_config.json only (an older ModelOpt export).
    "llama-3.1-8b-instruct-modelopt-fp8": {
        "checkpoint_quant": "modelopt_fp8",
        "model_format": "safetensors",
        "architecture": "LlamaForCausalLM",
        "is_mla": False,
        "is_moe": False,
    },
    "llama-3.3-70b-instruct": {
        "checkpoint_quant": "none",
        "model_format": "safetensors",
        "architecture": "LlamaForCausalLM",
        "is_mla": False,
        "is_moe": False,
    },
    # The experts are counted in text_config.
    "llama-4-scout-17b-16e-instruct": {
        "checkpoint_quant": "none",
        "model_format": "safetensors",
        "architecture": "Llama4ForConditionalGeneration",
        "is_mla": False,
        "is_moe": True,
    },
    # The experts' width is intermediate_size (no moe_intermediate_size key).
    "minimax-m2": {
        "checkpoint_quant": "fp8",
        "model_format": "safetensors",
        "architecture": "MiniMaxM2ForCausalLM",
        "is_mla": False,
        "is_moe": True,
    },
    "mistral-7b-instruct-v0.3": {
        "checkpoint_quant": "none",
        "model_format": "safetensors",
        "architecture": "MistralForCausalLM",
        "is_mla": False,
        "is_moe": False,
    },
    "mixtral-8x7b-instruct": {
        "checkpoint_quant": "none",
        "model_format": "safetensors",
        "architecture": "MixtralForCausalLM",
        "is_mla": False,
        "is_moe": True,
    },
    # A class the pack does not list is `other`, described by its traits.
    "phi-3-mini-4k-instruct": {
        "checkpoint_quant": "none",
        "model_format": "safetensors",
        "architecture": "other",
        "is_mla": False,
        "is_moe": False,
    },
    # Not listed by the pack: `other`, traits from the config; 10 KV heads.
    "phi-4": {
        "checkpoint_quant": "none",
        "model_format": "safetensors",
        "architecture": "other",
        "is_mla": False,
        "is_moe": False,
    },
    "qwen2.5-7b-instruct": {
        "checkpoint_quant": "none",
        "model_format": "safetensors",
        "architecture": "Qwen2ForCausalLM",
        "is_mla": False,
        "is_moe": False,
    },
    # Not listed by the pack (Qwen2_5_VL...): `other`, traits from the config.
    "qwen2.5-vl-7b-instruct": {
        "checkpoint_quant": "none",
        "model_format": "safetensors",
        "architecture": "other",
        "is_mla": False,
        "is_moe": False,
    },
    "qwen3-235b-a22b-fp8": {
        "checkpoint_quant": "fp8",
        "model_format": "safetensors",
        "architecture": "Qwen3MoeForCausalLM",
        "is_mla": False,
        "is_moe": True,
    },
    "qwen3-30b-a3b": {
        "checkpoint_quant": "none",
        "model_format": "safetensors",
        "architecture": "Qwen3MoeForCausalLM",
        "is_mla": False,
        "is_moe": True,
    },
    "qwen3-30b-a3b-fp8": {
        "checkpoint_quant": "fp8",
        "model_format": "safetensors",
        "architecture": "Qwen3MoeForCausalLM",
        "is_mla": False,
        "is_moe": True,
    },
    "qwen3-30b-a3b-fp8-dynamic-compressed-tensors": {
        "checkpoint_quant": "compressed-tensors",
        "model_format": "safetensors",
        "architecture": "Qwen3MoeForCausalLM",
        "is_mla": False,
        "is_moe": True,
    },
    "qwen3-8b": {
        "checkpoint_quant": "none",
        "model_format": "safetensors",
        "architecture": "Qwen3ForCausalLM",
        "is_mla": False,
        "is_moe": False,
    },
    "qwen3-next-80b-a3b": {
        "checkpoint_quant": "none",
        "model_format": "safetensors",
        "architecture": "Qwen3NextForCausalLM",
        "is_mla": False,
        "is_moe": True,
        "is_hybrid": True,
        "is_hybrid_gdn": True,
    },
}

# The shape facts each fixture gives (shapes.toml), in the order of SHAPE_FACTS.
SHAPE_FACTS = (
    "moe_intermediate_pow2",
    "intermediate_pow2",
    "weight_block_n",
    "checkpoint_dtype",
    "attention_heads_pow2",
    "kv_heads_pow2",
    "kv_heads_power_of_two",
    "moe_has_dense_layers",
    "weight_group_size",
    "linear_value_heads_pow2",
)
SHAPES: dict[str, tuple[Any, ...]] = {
    "deepseek-r1-modelopt-nvfp4": (2048, 2048, 0, "bfloat16", 128, 128, True, True, 16, 0),
    "deepseek-v2-lite-chat": (128, 64, 0, "bfloat16", 16, 16, True, True, 0, 0),
    "deepseek-v3-fp8": (2048, 2048, 128, "bfloat16", 128, 128, True, True, 0, 0),
    "deepseek-v3.2-fp8": (2048, 2048, 128, "bfloat16", 128, 128, True, True, 0, 0),
    "gemma-3-27b-it": (0, 1024, 0, "bfloat16", 32, 16, True, False, 0, 0),
    "glm-4.5": (512, 4096, 0, "bfloat16", 32, 8, True, True, 0, 0),
    "gpt-oss-120b": (0, 64, 0, "float32", 64, 8, True, False, 0, 0),
    "kimi-k2-instruct": (2048, 2048, 128, "bfloat16", 64, 64, True, True, 0, 0),
    "llama-3.1-8b-instruct": (0, 2048, 0, "bfloat16", 32, 8, True, False, 0, 0),
    "llama-3.1-8b-instruct-awq-int4": (0, 2048, 0, "float16", 32, 8, True, False, 128, 0),
    "llama-3.1-8b-instruct-gptq-int4": (0, 2048, 0, "float16", 32, 8, True, False, 128, 0),
    "llama-3.1-8b-instruct-modelopt-fp8": (0, 2048, 0, "bfloat16", 32, 8, True, False, 0, 0),
    "llama-3.3-70b-instruct": (0, 4096, 0, "bfloat16", 64, 8, True, False, 0, 0),
    "llama-4-scout-17b-16e-instruct": (0, 8192, 0, "bfloat16", 8, 8, True, False, 0, 0),
    "minimax-m2": (0, 512, 128, "bfloat16", 16, 8, True, False, 0, 0),
    "mistral-7b-instruct-v0.3": (0, 2048, 0, "bfloat16", 32, 8, True, False, 0, 0),
    "mixtral-8x7b-instruct": (0, 2048, 0, "bfloat16", 32, 8, True, False, 0, 0),
    "phi-3-mini-4k-instruct": (0, 8192, 0, "bfloat16", 32, 32, True, False, 0, 0),
    "phi-4": (0, 512, 0, "bfloat16", 8, 2, False, False, 0, 0),
    "qwen2.5-7b-instruct": (0, 512, 0, "bfloat16", 4, 4, True, False, 0, 0),
    "qwen2.5-vl-7b-instruct": (0, 512, 0, "bfloat16", 4, 4, True, False, 0, 0),
    "qwen3-235b-a22b-fp8": (512, 4096, 128, "bfloat16", 64, 4, True, False, 0, 0),
    "qwen3-30b-a3b": (256, 2048, 0, "bfloat16", 32, 4, True, False, 0, 0),
    "qwen3-30b-a3b-fp8": (256, 2048, 128, "bfloat16", 32, 4, True, False, 0, 0),
    "qwen3-30b-a3b-fp8-dynamic-compressed-tensors": (256, 2048, 0, "bfloat16", 32, 4, True, False, 0, 0),
    "qwen3-8b": (0, 4096, 0, "bfloat16", 32, 8, True, False, 0, 0),
    "qwen3-next-80b-a3b": (512, 1024, 0, "bfloat16", 16, 2, True, False, 0, 32),
}


# Where the checkpoint declares its method: only the older ModelOpt export keeps it in
# hf_quant_config.json (config.json without quantization_config); every other fixture reads false.
HF_QUANT_CONFIG_ONLY = {"llama-3.1-8b-instruct-modelopt-fp8"}


# Round 19's class traits read from the config (architectures[0]): whole-TP head splits (llama.py /
# qwen2.py-style attention) and vision towers that all-reduce over TP; no fixture has a QSA indexer.
HEADS_OVER_TP = {
    "gemma-3-27b-it", "llama-3.1-8b-instruct-awq-int4", "llama-3.1-8b-instruct-gptq-int4",
    "llama-3.1-8b-instruct-modelopt-fp8", "llama-3.1-8b-instruct", "llama-3.3-70b-instruct",
    "mistral-7b-instruct-v0.3", "mixtral-8x7b-instruct", "phi-3-mini-4k-instruct", "phi-4",
    "qwen2.5-7b-instruct", "qwen2.5-vl-7b-instruct",
}  # fmt: skip
VISION_TP_REDUCE = {"gemma-3-27b-it", "qwen2.5-vl-7b-instruct"}

# Round 20's shape facts: the power-of-two part of the routed expert count (capped at 64) and of
# the vision tower's heads; 0 where the config has no experts / no vision tower.
EXPERTS_AND_VISION_HEADS = {
    "deepseek-r1-modelopt-nvfp4": (64, 0), "deepseek-v2-lite-chat": (64, 0),
    "deepseek-v3-fp8": (64, 0), "deepseek-v3.2-fp8": (64, 0), "gemma-3-27b-it": (0, 16),
    "glm-4.5": (32, 0), "gpt-oss-120b": (64, 0), "kimi-k2-instruct": (64, 0),
    "llama-3.1-8b-instruct": (0, 0), "llama-3.1-8b-instruct-awq-int4": (0, 0),
    "llama-3.1-8b-instruct-gptq-int4": (0, 0), "llama-3.1-8b-instruct-modelopt-fp8": (0, 0),
    "llama-3.3-70b-instruct": (0, 0), "llama-4-scout-17b-16e-instruct": (16, 16),
    "minimax-m2": (64, 0), "mistral-7b-instruct-v0.3": (0, 0), "mixtral-8x7b-instruct": (8, 0),
    "phi-3-mini-4k-instruct": (0, 0), "phi-4": (0, 0), "qwen2.5-7b-instruct": (0, 0),
    "qwen2.5-vl-7b-instruct": (0, 16), "qwen3-235b-a22b-fp8": (64, 0), "qwen3-30b-a3b": (64, 0),
    "qwen3-30b-a3b-fp8": (64, 0), "qwen3-30b-a3b-fp8-dynamic-compressed-tensors": (64, 0),
    "qwen3-8b": (0, 0), "qwen3-next-80b-a3b": (64, 0),
}  # fmt: skip


def _expected(name: str) -> dict[str, Any]:
    # No fixture is an MXFP8 checkpoint, so none names quant_algo MXFP8 (its test is below); the
    # GPTQ export is quantized with act-order (desc_act) and no static groups.
    where = {
        "quant_in_hf_quant_config": name in HF_QUANT_CONFIG_ONLY,
        "quant_algo_mxfp8": False,
        "gptq_desc_act": name == "llama-3.1-8b-instruct-gptq-int4",
    }
    traits: dict[str, Any] = {"has_qsa_indexer": False}
    if name in HEADS_OVER_TP:
        traits["heads_split_over_tp"] = True
    if name in VISION_TP_REDUCE:
        traits["vision_tower_tp_reduce"] = True
    experts, vision_heads = EXPERTS_AND_VISION_HEADS[name]
    traits.update(moe_experts_pow2=experts, vision_heads_pow2=vision_heads)
    return {**EXPECTED[name], **dict(zip(SHAPE_FACTS, SHAPES[name], strict=True)), **where, **traits}


def test_every_fixture_has_an_expectation() -> None:
    assert sorted(p.name for p in MODELS.iterdir()) == sorted(EXPECTED) == sorted(SHAPES)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_gives_the_right_facts(name: str) -> None:
    pins = facts_from_model_config(SGLANG, MODELS / name)
    assert {k: p.value for k, p in pins.items()} == _expected(name)
    assert {p.source for p in pins.values()} == {"model-config"}
    # The config.json file itself reads the same as its directory.
    same = facts_from_model_config(SGLANG, MODELS / name / "config.json")
    assert {k: p.value for k, p in same.items()} == _expected(name)


@pytest.mark.parametrize("name", sorted(EXPECTED))
@pytest.mark.parametrize("gpu_arch", ["sm90", "sm100"])
def test_fixture_facts_agree_with_the_architecture_rules(name: str, gpu_arch: str) -> None:
    # A trait read from the config must never contradict what the pack says about the class.
    pins = facts_from_model_config(SGLANG, MODELS / name)
    res = resolve(SGLANG, {}, {**pins, "platform": "cuda", "gpu_arch": gpu_arch}, reasons=False)
    for fact, value in _expected(name).items():
        assert res.values[fact] == value
        assert res.provenance[fact].source == "model-config"


def test_the_shipped_table_is_valid() -> None:
    assert check_model_config_map(SGLANG) == []


# --- paths and formats --------------------------------------------------------------------


def _config(directory: Path, doc: Any, name: str = "config.json") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize(
    ("quantization_config", "hf_quant_config", "expected"),
    [
        # ModelOpt's MXFP8 export in config.json (the oracle harness's `mxfp8` checkpoint)
        ({"quant_method": "modelopt", "quant_algo": "MXFP8", "group_size": 32}, None, ("mxfp8", True)),
        # the older export: hf_quant_config.json only
        (None, {"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "MXFP8"}}, ("mxfp8", True)),
        # a config that says quant_method mxfp8 alone: --quantization modelopt is refused over it
        ({"quant_method": "mxfp8", "activation_scheme": "dynamic"}, None, ("mxfp8", False)),
        ({"quant_method": "modelopt", "quant_algo": "FP8"}, None, ("modelopt_fp8", False)),
    ],
)
def test_an_mxfp8_export_names_its_quant_algo(
    tmp_path: Path, quantization_config: Any, hf_quant_config: Any, expected: tuple[str, bool]
) -> None:
    """quant_algo_mxfp8 is what `--quantization modelopt` reads of an MXFP8 checkpoint (oracle
    grid G17B: the ModelOpt export loads as mxfp8, the plain one is refused at start-up)."""
    doc: dict[str, Any] = {"architectures": ["Qwen3ForCausalLM"]}
    if quantization_config is not None:
        doc["quantization_config"] = quantization_config
    _config(tmp_path, doc)
    if hf_quant_config is not None:
        _config(tmp_path, hf_quant_config, "hf_quant_config.json")
    values = {k: p.value for k, p in facts_from_model_config(SGLANG, tmp_path).items()}
    assert (values["checkpoint_quant"], values["quant_algo_mxfp8"]) == expected


def test_gguf_file_or_directory_is_a_gguf_checkpoint(tmp_path: Path) -> None:
    weights = tmp_path / "Llama-3.1-8B-Q4_K_M.gguf"
    weights.write_bytes(b"GGUF\x03\x00\x00\x00")
    for path in (weights, tmp_path):
        pins = facts_from_model_config(SGLANG, path)
        assert {k: p.value for k, p in pins.items()} == {"checkpoint_quant": "gguf", "model_format": "gguf"}


def test_gguf_beside_a_config_overrides_the_config_quantization(tmp_path: Path) -> None:
    _config(tmp_path, json.loads((MODELS / "llama-3.1-8b-instruct" / "config.json").read_text()))
    (tmp_path / "model-Q8_0.gguf").write_bytes(b"GGUF")
    values = {k: p.value for k, p in facts_from_model_config(SGLANG, tmp_path).items()}
    assert values["model_format"] == "gguf" and values["checkpoint_quant"] == "gguf"
    assert values["architecture"] == "LlamaForCausalLM"


def test_pytorch_bin_weights_are_pt(tmp_path: Path) -> None:
    _config(tmp_path, {"architectures": ["LlamaForCausalLM"]})
    (tmp_path / "pytorch_model.bin").write_bytes(b"\x00")
    assert facts_from_model_config(SGLANG, tmp_path)["model_format"].value == "pt"


def test_a_lone_safetensors_file_is_refused(tmp_path: Path) -> None:
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"\x00")
    with pytest.raises(InvalidInput, match="does not describe the model") as exc:
        facts_from_model_config(SGLANG, weights)
    assert str(weights) in str(exc.value)


def test_skipped_facts_are_not_read(tmp_path: Path) -> None:
    # A fact the user sets is not read, so a value the pack cannot name does not block them.
    path = _config(
        tmp_path, {"architectures": ["LlamaForCausalLM"], "quantization_config": {"quant_method": "hqq"}}
    )
    pins = facts_from_model_config(SGLANG, path, skip={"checkpoint_quant"})
    assert "checkpoint_quant" not in pins and pins["architecture"].value == "LlamaForCausalLM"


# --- bad inputs ---------------------------------------------------------------------------


def _bad(path: Path, *needles: str) -> InvalidInput:
    with pytest.raises(InvalidInput) as exc:
        facts_from_model_config(SGLANG, path)
    text = str(exc.value)
    assert str(path) in text, text
    for needle in needles:
        assert needle in text, text
    return exc.value


def test_missing_path(tmp_path: Path) -> None:
    _bad(tmp_path / "nope" / "config.json", "no such file or directory")


def test_directory_without_config(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("weights elsewhere")
    _bad(tmp_path, "has no config.json", "*.gguf")


def test_malformed_json(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text('{"architectures": ["LlamaForCausalLM"],,}')
    _bad(path, "not valid JSON", "line 1")


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text("")
    _bad(path, "not valid JSON")


def test_binary_file(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_bytes(b"\xff\xfe\x00\x81garbage")
    _bad(path, "not UTF-8")


# The reads go through solver.pack.loader.read_bounded, which also reads pack files: regular files
# only, at most MAX_CONFIG_BYTES, never trusting stat() alone.


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_a_config_json_that_never_ends_is_refused(tmp_path: Path) -> None:
    (tmp_path / "config.json").symlink_to("/dev/zero")
    _bad(tmp_path, "config.json", "not a regular file (a character device)")


def test_a_config_json_that_is_a_pipe_is_refused_without_waiting(tmp_path: Path) -> None:
    import os

    os.mkfifo(tmp_path / "config.json")
    _bad(tmp_path, "not a regular file (a named pipe)")


def test_a_config_json_that_is_a_directory_says_so(tmp_path: Path) -> None:
    (tmp_path / "config.json").mkdir()
    _bad(tmp_path, "not a regular file (a directory)")


def test_a_config_over_the_size_limit_is_refused_unread(tmp_path: Path) -> None:
    from solver.inputs.modelconfig import MAX_CONFIG_BYTES

    path = tmp_path / "config.json"
    with open(path, "wb") as handle:
        handle.truncate(MAX_CONFIG_BYTES + 1)  # sparse: reading it would be slow
    _bad(path, f"is {MAX_CONFIG_BYTES + 1} bytes", str(MAX_CONFIG_BYTES), "weights file")


def test_an_integer_json_cannot_convert_is_bad_input(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text('{"num_experts": ' + "9" * 5000 + "}")
    _bad(path, "not valid JSON", "digits")


@pytest.mark.parametrize(
    "doc, kind", [([1, 2], "an array"), ("LlamaForCausalLM", "a string"), (None, "null"), (3, "a number")]
)
def test_json_that_is_not_an_object(tmp_path: Path, doc: Any, kind: str) -> None:
    _bad(_config(tmp_path, doc), f"holds {kind}; a model config is a JSON object")


@pytest.mark.parametrize(
    "doc, needles",
    [
        ({"architectures": "LlamaForCausalLM"}, ["architectures is a string", "expected an array"]),
        ({"architectures": [42]}, ["architectures.0 is a number", "expected a string"]),
        ({"architectures": [["LlamaForCausalLM"]]}, ["architectures.0 is an array"]),
        ({"quantization_config": "fp8"}, ["quantization_config is a string", "expected an object"]),
        (
            {"quantization_config": {"quant_method": {"name": "fp8"}}},
            ["quantization_config.quant_method is an object"],
        ),
        ({"num_experts": "128"}, ["num_experts is a string", "expected a number"]),
        ({"text_config": [1]}, ["text_config is an array", "expected an object"]),
    ],
)
def test_wrong_types_name_the_key(tmp_path: Path, doc: dict[str, Any], needles: list[str]) -> None:
    _bad(_config(tmp_path, doc), *needles)


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    exc = _bad(_config(tmp_path, {"architectures": "X", "quantization_config": "fp8", "num_experts": "8"}))
    assert len(exc.issues) == 3


def test_unknown_quant_method_is_an_error_with_did_you_mean(tmp_path: Path) -> None:
    path = _config(
        tmp_path, {"architectures": ["LlamaForCausalLM"], "quantization_config": {"quant_method": "gptqq"}}
    )
    exc = _bad(path, "quantization_config.quant_method is 'gptqq'", "--set checkpoint_quant=")
    assert exc.issues[0].field == "checkpoint_quant"
    assert "gptq" in exc.issues[0].did_you_mean


def test_unknown_modelopt_algorithm_falls_back_to_the_generic_spelling(tmp_path: Path) -> None:
    path = _config(
        tmp_path,
        {
            "architectures": ["LlamaForCausalLM"],
            "quantization_config": {"quant_method": "modelopt", "quant_algo": "W4A8_AWQ"},
        },
    )
    assert facts_from_model_config(SGLANG, path)["checkpoint_quant"].value == "modelopt"


# SGLang 0.5.23 (model_config.py::_parse_modelopt_quant_config) serves a ModelOpt MIXED_PRECISION
# checkpoint as modelopt_mixed only when one of its layers is NVFP4 (or W4A16_NVFP4); the
# W4A8_AWQ + FP8 exports (DeepSeek-R1-W4AFP8) and a checkpoint listing no layers are w4afp8.
@pytest.mark.parametrize(
    ("layers", "expected"),
    [
        (None, "w4afp8"),
        ({"mlp.experts.0.down_proj": {"quant_algo": "W4A8_AWQ"}, "o_proj": {"quant_algo": "FP8"}}, "w4afp8"),
        ({"experts.0": {"quant_algo": "NVFP4"}, "o_proj": {"quant_algo": "FP8"}}, "modelopt_mixed"),
        ({"mlp.experts.0.down_proj": {"quant_algo": "w4a16_nvfp4"}}, "modelopt_mixed"),
    ],
)
def test_mixed_precision_modelopt(tmp_path: Path, layers: dict[str, Any] | None, expected: str) -> None:
    quant: dict[str, Any] = {"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION"}
    if layers is not None:
        quant["quantized_layers"] = layers
    doc = {"architectures": ["Qwen3MoeForCausalLM"], "num_experts": 128, "quantization_config": quant}
    assert facts_from_model_config(SGLANG, _config(tmp_path, doc))["checkpoint_quant"].value == expected


def test_mixed_precision_modelopt_in_hf_quant_config(tmp_path: Path) -> None:
    path = _config(tmp_path, {"architectures": ["DeepseekV3ForCausalLM"], "n_routed_experts": 256})
    layers = {"model.layers.3.mlp.experts.0.down_proj": {"quant_algo": "NVFP4"}}
    quantization = {"quant_algo": "MIXED_PRECISION", "quantized_layers": layers}
    (tmp_path / "hf_quant_config.json").write_text(
        json.dumps({"producer": {"name": "modelopt"}, "quantization": quantization})
    )
    assert facts_from_model_config(SGLANG, path)["checkpoint_quant"].value == "modelopt_mixed"


def test_values_match_ignoring_case(tmp_path: Path) -> None:
    path = _config(
        tmp_path, {"architectures": ["LlamaForCausalLM"], "quantization_config": {"quant_method": "FP8"}}
    )
    assert facts_from_model_config(SGLANG, path)["checkpoint_quant"].value == "fp8"


# --- the command line ---------------------------------------------------------------------


def test_cli_resolves_from_a_model_config(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "resolve",
            "--model-config",
            str(MODELS / "deepseek-v3-fp8"),
            "--set",
            "platform=cuda",
            "--set",
            "gpu_arch=sm90",
            "--json",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads(out)
    assert doc["status"] == "resolved"
    assert doc["values"]["architecture"] == "DeepseekV3ForCausalLM"
    assert doc["values"]["quantization"] == "fp8"
    assert doc["provenance"]["checkpoint_quant"] == {
        "kind": "fact",
        "source": "model-config",
        "rule": None,
        "because": None,
        "rejected": [],
    }


def test_cli_set_wins_over_the_model_config(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "resolve",
            "--model-config",
            str(MODELS / "qwen3-30b-a3b-fp8"),
            "--set",
            "platform=cuda",
            "--set",
            "gpu_arch=sm90",
            "--set",
            "architecture=other",
            "--json",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads(out)
    assert doc["values"]["architecture"] == "other"
    assert doc["provenance"]["architecture"]["source"] == "fact"
    assert doc["provenance"]["checkpoint_quant"]["source"] == "model-config"


def test_cli_bad_model_config_exits_2_without_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "config.json"
    path.write_text("{not json")
    code = main(
        ["resolve", "--model-config", str(path), "--set", "platform=cuda", "--set", "gpu_arch=sm90", "--json"]
    )
    out, _ = capsys.readouterr()
    assert code == 2
    doc = json.loads(out)
    assert doc["error"]["type"] == "InvalidInput"
    assert str(path) in doc["error"]["issues"][0]["message"]


# --- the table ----------------------------------------------------------------------------

TINY_FIELDS = """
[field.arch]
kind = "fact"
domain = ["other", "Dense", "Sparse"]

[field.moe]
kind = "fact"
domain = [false, true]

[field.layers]
kind = "fact"
domain = [32, 64]

[field.kernel]
kind = "option"
domain = ["a", "b"]
"""


def _tiny_pack(tmp_path: Path, table: str) -> Any:
    root = tmp_path / "pack"
    root.mkdir()
    (root / "pack.toml").write_text(
        '[pack]\nname = "tiny"\nversion = "1"\nfiles = ["fields.toml", "model.toml"]\n'
    )
    (root / "fields.toml").write_text(TINY_FIELDS)
    (root / "model.toml").write_text(table)
    return load_pack(str(root))


def test_a_tiny_table_reads_values_tests_and_ints(tmp_path: Path) -> None:
    pack = _tiny_pack(
        tmp_path,
        """
[model_config.facts.arch]
value = ["architectures.0"]
map = { "SparseForCausalLM" = "Sparse" }
fallback = "other"
[model_config.facts.moe]
above = { n_experts = 1 }
otherwise = false
[model_config.facts.layers]
value = ["num_hidden_layers"]
""",
    )
    path = _config(
        tmp_path / "m", {"architectures": ["SparseForCausalLM"], "n_experts": 8, "num_hidden_layers": 64.0}
    )
    values = {k: p.value for k, p in facts_from_model_config(pack, path).items()}
    assert values == {"arch": "Sparse", "moe": True, "layers": 64}
    path = _config(tmp_path / "n", {"architectures": ["Whatever"], "num_hidden_layers": 48})
    with pytest.raises(InvalidInput, match="num_hidden_layers is 48"):
        facts_from_model_config(pack, path)


@pytest.mark.parametrize(
    ("doc", "read"),
    [
        ({"window": 0, "kinds": ["sliding"]}, False),  # the first entry decides
        ({"window": 8, "kinds": ["sliding"]}, True),
        ({"kind": "slider"}, True),  # `missing`: not written, the class default applies
        ({"kind": "slider", "window": None}, None),  # a null is written: no entry holds
        ({"kind": "other", "window": None}, None),
        ({"kinds": ["full"]}, False),
    ],
)
def test_a_list_of_entries_is_tried_in_order(tmp_path: Path, doc: dict[str, Any], read: Any) -> None:
    pack = _tiny_pack(
        tmp_path,
        """
[[model_config.facts.moe]]
equals = { window = [0] }
then = false
[[model_config.facts.moe]]
contains = { kinds = ["sliding"] }
present = ["window"]
every = true
[[model_config.facts.moe]]
equals = { kind = ["slider"] }
missing = ["window"]
every = true
[[model_config.facts.moe]]
present = ["kinds"]
then = false
""",
    )
    values = {k: p.value for k, p in facts_from_model_config(pack, _config(tmp_path / "m", doc)).items()}
    assert values.get("moe") == read


def test_an_entry_that_always_decides_must_be_last(tmp_path: Path) -> None:
    with pytest.raises(PackError) as exc:
        _tiny_pack(
            tmp_path,
            """
[[model_config.facts.moe]]
present = ["a"]
otherwise = false
[[model_config.facts.moe]]
present = ["b"]
[[model_config.facts.arch]]
value = ["architectures.0"]
fallback = "other"
[[model_config.facts.arch]]
equals = { b = [1] }
then = "Dense"
""",
        )
    text = str(exc.value)
    assert "model_config.facts.moe[0]" in text and "`otherwise` always gives a value" in text
    assert "model_config.facts.arch[0]" in text and "a `value` entry always gives a value" in text


@pytest.mark.parametrize(
    ("width", "read"),
    [
        (768, 64),
        (2048, 64),
        (1408, 64),
        (96, 32),
        (160, 32),
        (7, None),
        (0, "error"),
        (True, "error"),
        (64.0, "error"),
        ("64", "error"),
    ],
)
def test_a_divisor_entry_reads_the_largest_domain_value_dividing_the_size(
    tmp_path: Path, width: Any, read: Any
) -> None:
    # `layers` has the domain [32, 64]: the fact is the largest of them dividing the config's
    # positive integer; none divides 7 and there is no fallback, so the fact stays unknown.
    pack = _tiny_pack(
        tmp_path,
        """
[model_config.facts.layers]
value = ["moe_intermediate_size"]
divides = true
""",
    )
    path = _config(tmp_path / "m", {"moe_intermediate_size": width})
    if read == "error":
        with pytest.raises(InvalidInput, match="moe_intermediate_size"):
            facts_from_model_config(pack, path)
        return
    values = {k: p.value for k, p in facts_from_model_config(pack, path).items()}
    assert values.get("layers") == read


def test_a_divisor_entry_needs_an_integer_fact(tmp_path: Path) -> None:
    with pytest.raises(PackError, match="divides"):
        facts_from_model_config(
            _tiny_pack(
                tmp_path,
                """
[model_config.facts.arch]
value = ["architectures.0"]
divides = true
""",
            ),
            tmp_path,
        )


# A key read as an object or one value (`two_forms`) by a closed map: the setup both tests below share.
_TWO_FORMS_CLOSED = """
[model_config]
two_forms = ["q.scheme"]
[[model_config.facts.arch]]
equals = { "q.scheme.bits" = [4] }
then = "Sparse"
[[model_config.facts.arch]]
value = ["q.scheme", "q.algo"]
absent = "other"
map = { "DENSE" = "Dense" }
closed = true
"""


def test_a_two_form_key_and_a_closed_map(tmp_path: Path) -> None:
    """`two_forms`: a key written as an object (read by tests through it) or a single value (read by
    a value entry); `closed`: only the map's spellings are read, anything else is refused naming
    them. Round 27 (vLLM's ModelOpt kv_cache_scheme); on a1e60f3 both keys were unknown."""
    pack = _tiny_pack(
        tmp_path,
        _TWO_FORMS_CLOSED,
    )
    read = {
        "object": {"q": {"scheme": {"bits": 4}}},
        "string": {"q": {"scheme": "dense"}},
        "object, then the next key": {"q": {"scheme": {"bits": 8}, "algo": "Dense"}},
        "empty string": {"q": {"scheme": ""}},
    }
    got = {
        name: facts_from_model_config(pack, _config(tmp_path / str(i), doc))["arch"].value
        for i, (name, doc) in enumerate(read.items())
    }
    assert got == {
        "object": "Sparse",
        "string": "Dense",
        "object, then the next key": "Dense",
        "empty string": "other",
    }
    # a domain value the map does not spell is refused too, with the spellings read
    with pytest.raises(
        InvalidInput, match=r'q.scheme is "Sparse", which is not one of the spellings read for arch: DENSE'
    ):
        facts_from_model_config(pack, _config(tmp_path / "s", {"q": {"scheme": "Sparse"}}))
    # another key holding the wrong kind is still an input error
    with pytest.raises(InvalidInput, match=r"q is a string"):
        facts_from_model_config(pack, _config(tmp_path / "t", {"q": "dense"}))
    with pytest.raises(PackError, match=r"closed.*only with a map"):
        (tmp_path / "u").mkdir()
        _tiny_pack(tmp_path / "u", '[model_config.facts.arch]\nvalue = ["a"]\nclosed = true\n')


def test_a_closed_map_with_a_fallback_reads_the_unknown_as_the_launcher_does_and_says_so(
    tmp_path: Path,
) -> None:
    """A closed map with `fallback` (round 28: vLLM reads an unknown ModelOpt KV-cache scheme as
    none, with a warning): a value none of its spellings names, and a two-form key's object form
    its tests did not read, is the fallback, and `notes` says so with the key, the value, the
    spellings read and `fallback_note`; a known spelling and the keys after an empty form are
    read as before. On a0ebea6 `fallback_note` was an unknown key (PackError)."""
    pack = _tiny_pack(
        tmp_path,
        _TWO_FORMS_CLOSED
        + """
fallback = "other"
fallback_note = "the launcher warns and runs it as no scheme"
""",
    )

    def read(doc: dict[str, Any]) -> tuple[Any, list[str]]:
        notes: list[str] = []
        folder = tmp_path / str(len(list(tmp_path.iterdir())))
        value = facts_from_model_config(pack, _config(folder, doc), notes=notes)["arch"].value
        return value, notes

    assert read({"q": {"scheme": "dense"}}) == ("Dense", [])
    assert read({"q": {"scheme": "", "algo": "DENSE"}}) == ("Dense", [])
    value, notes = read({"q": {"scheme": "INT8", "algo": "DENSE"}})
    assert value == "other"
    (note,) = notes
    assert 'q.scheme is "INT8", which is not one of the forms read for arch (DENSE, any case)' in note
    assert "read as arch=other" in note and "the launcher warns and runs it as no scheme" in note
    assert "--set arch=VALUE" in note
    # an object of a form no test reads is taken in place of the next key, as the launcher's `or`
    value, notes = read({"q": {"scheme": {"bits": 16}, "algo": "DENSE"}})
    assert (value, len(notes)) == ("other", 1) and '{"bits": 16}' in notes[0]
    assert read({"q": {"scheme": {"bits": 4}}}) == ("Sparse", [])
    open_map = 'value = ["a"]\nfallback = "other"\n'
    without = (open_map, 'value = ["a"]\nmap = { "X" = "Dense" }\nclosed = true\n')
    for table in without:  # an open map, a closed one without a fallback
        folder = tmp_path / f"bad{len(table)}"
        folder.mkdir()
        with pytest.raises(PackError, match=r"fallback_note.*only with `closed = true` and a `fallback`"):
            _tiny_pack(folder, f'[model_config.facts.arch]\n{table}fallback_note = "says"\n')


def test_a_broken_table_lists_every_problem(tmp_path: Path) -> None:
    """At load: a broken [model_config] table fails with the pack, not at the first config."""
    with pytest.raises(PackError) as exc:
        _tiny_pack(
            tmp_path,
            """
[model_config]
nestd = ["text_config"]
[model_config.format]
fact = "arch"
detect = [{ glob = "*.gguf", value = "gguf" }]
[model_config.facts.arhc]
value = ["architectures.0"]
[model_config.facts.kernel]
present = ["x"]
[model_config.facts.arch]
value = ["architectures.0"]
fallback = "unknown"
map = { "X" = "Y" }
[model_config.facts.moe]
value = ["a"]
present = ["b"]
[model_config.facts.layers]
present = ["x"]
""",
        )
    text = str(exc.value)
    for needle in [
        "unknown key 'nestd'",
        "'gguf' is not a value of arch",
        "unknown field 'arhc' (did you mean 'arch'?)",
        "kernel is an option",
        "'unknown' is not a value of arch",
        "'Y' is not a value of arch",
        "give either `value`",
        "layers is not a true/false fact",
    ]:
        assert needle in text, (needle, text)
    assert len(exc.value.problems) == 8
    assert all(p.file == "model.toml" and p.line for p in exc.value.problems), exc.value.problems


@pytest.mark.parametrize(
    "parts",
    [
        '{ tables = ["layers"] }',
        '{ tables = ["layers"], key = "a.b" }',
        '{ tables = [], key = "algo" }',
        '"layers"',
    ],
)
def test_a_malformed_parts_entry_is_a_pack_error(tmp_path: Path, parts: str) -> None:
    table = f'[model_config.facts.arch]\nvalue = ["architectures.0"]\nparts = {parts}\n'
    with pytest.raises(PackError, match="parts"):
        facts_from_model_config(_tiny_pack(tmp_path, table), tmp_path)


def test_parts_qualify_the_map_by_any_parts_key(tmp_path: Path) -> None:
    # "method/detail/part" is tried for each part's own value (sorted), then "method/detail",
    # then "method"; a parts table that is absent or holds no such key changes nothing.
    pack = _tiny_pack(
        tmp_path,
        """
[model_config.facts.arch]
value = ["architectures.0"]
detail = ["kind"]
parts = { tables = ["layers"], key = "algo" }
map = { "mixed/all" = "Dense", "mixed/all/x" = "Sparse" }
fallback = "other"
""",
    )
    cases = [
        ({"layers": {"a": {"algo": "Y"}, "b": {"algo": "X"}}}, "Sparse"),
        ({"layers": {"a": {"algo": "Y"}}}, "Dense"),
        ({"layers": {"a": "X"}}, "Dense"),
        ({}, "Dense"),
    ]
    for index, (extra, expected) in enumerate(cases):
        doc = {"architectures": ["mixed"], "kind": "all", **extra}
        path = _config(tmp_path / f"m{index}", doc)
        assert facts_from_model_config(pack, path)["arch"].value == expected


@pytest.mark.parametrize(
    ("architecture", "text_model_type", "expected"),
    [
        ("Qwen3_5ForConditionalGeneration", "qwen3_5_text", False),
        ("MiniCPMV4_6ForConditionalGeneration", "qwen3_5_text", False),
        ("MiniCPMV4_6ForConditionalGeneration", "qwen3_5_moe_text", True),
        ("Qwen3_5MoeForConditionalGeneration", "qwen3_5_moe_text", True),
    ],
)
def test_a_dense_qwen3_5_text_config_is_not_moe_for_its_num_experts(
    tmp_path: Path, architecture: str, text_model_type: str, expected: bool
) -> None:
    """SGLang's dense Qwen3.5 text config class (a Qwen3NextConfig) writes num_experts, which its dense
    model never reads (oracle grid G18A: Qwen3.5 and MiniCPM-V 4.6 with such a config load dense)."""
    text = {"model_type": text_model_type, "num_experts": 512, "linear_conv_kernel_dim": 4}
    _config(tmp_path, {"architectures": [architecture], "model_type": "qwen3_5", "text_config": text})
    values = {k: p.value for k, p in facts_from_model_config(SGLANG, tmp_path).items()}
    assert values["is_moe"] is expected


VLLM = load_pack("vllm")
_MISTRAL: dict[str, Any] = {"architectures": ["MistralForCausalLM"], "model_type": "mistral"}
_QWEN2: dict[str, Any] = {
    "architectures": ["Qwen2ForCausalLM"],
    "model_type": "qwen2",
    "num_hidden_layers": 28,
}
_LLAMA: dict[str, Any] = {"architectures": ["LlamaForCausalLM"], "model_type": "llama"}


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        # Gemma-3 on the hub: sliding_window and its pattern, no layer_types (Gemma3TextConfig
        # makes five sliding layers of every six); laws18 saw it assumed false (round 18)
        (
            {
                "architectures": ["Gemma3ForConditionalGeneration"],
                "model_type": "gemma3",
                "text_config": {
                    "model_type": "gemma3_text",
                    "sliding_window": 1024,
                    "sliding_window_pattern": 6,
                },
            },
            True,
        ),
        ({"architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2", "sliding_window": 4096}, True),
        (
            {
                "architectures": ["GptOssForCausalLM"],
                "model_type": "gpt_oss",
                "sliding_window": 128,
                "layer_types": ["sliding_attention", "full_attention"],
            },
            True,
        ),
        # Round 19, each checked against vLLM 0.33.0 with transformers 5.19 (the oracle's venv:
        # get_config, EngineArgs' CacheConfig.sliding_window, the layers' windows); the reader of
        # main 01bb169 left each unread (None) or, for a sliding layer type without a window, True.
        # Mistral-7B-v0.1, Ministral-8B: a window and no layer_types, so every layer slides.
        (_MISTRAL | {"sliding_window": 4096}, True),
        (_MISTRAL | {"sliding_window": 32768}, True),
        # MistralConfig's default window (4096) when the config writes none; 0 disables it.
        (_MISTRAL, True),
        (_MISTRAL | {"sliding_window": 0}, False),
        ({"architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "sliding_window": 2047}, True),
        ({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "sliding_window": 4096}, True),
        # Qwen2.5 writes a window with use_sliding_window false: Qwen2Config clears it.
        (_QWEN2 | {"sliding_window": 131072, "use_sliding_window": False}, False),
        (_QWEN2 | {"sliding_window": 4096}, False),
        (_QWEN2 | {"sliding_window": 4096, "use_sliding_window": True, "max_window_layers": 21}, True),
        # layer_types decide when listed: none sliding, or a sliding type with no window (null).
        (_LLAMA | {"sliding_window": 4096, "layer_types": ["full_attention"] * 2}, False),
        # A sliding layer type with no window (null) slides nowhere; left unread (assumed false).
        (_LLAMA | {"sliding_window": None, "layer_types": ["sliding_attention", "full_attention"]}, None),
        # vLLM cannot load a config without model_type; the architecture rules decide
        (
            {"architectures": ["GptOssForCausalLM"], "layer_types": ["sliding_attention", "full_attention"]},
            None,
        ),
    ],
)
def test_a_model_with_sliding_window_layers_says_so(
    tmp_path: Path, doc: dict[str, Any], expected: bool
) -> None:
    _config(tmp_path, doc)
    values = {k: p.value for k, p in facts_from_model_config(VLLM, tmp_path).items()}
    assert values.get("has_sliding_window") is expected


@pytest.mark.parametrize(
    "doc",
    [
        _MISTRAL | {"sliding_window": 4096},
        _QWEN2 | {"sliding_window": 4096, "use_sliding_window": True, "max_window_layers": 21},
    ],
)
def test_a_config_window_refuses_turboquant_under_any_architecture(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], doc: dict[str, Any]
) -> None:
    """vLLM refuses TURBOQUANT for any sliding layer; a window the config gives wins over the
    architecture's measured checkpoints (arch-dense derives none for Qwen2 only when nothing says
    so). Main 01bb169 resolved both: the window went unread."""
    _config(tmp_path, doc | {"num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128})
    args = ["resolve", "--pack", "vllm", "--model-config", str(tmp_path), "--set", "platform=cuda"]
    args += ["--set", "gpu_arch=sm90", "--json"]
    main(args)
    assert json.loads(capsys.readouterr().out)["values"]["has_sliding_window"] is True
    main([*args, "--set", "attention_backend=TURBOQUANT", "--set", "kv_cache_dtype=turboquant_k8v4"])
    refused = json.loads(capsys.readouterr().out)
    assert refused["status"] == "conflict", refused["status"]
    assert "sliding-window-no-turboquant" in json.dumps(refused)
    # --disable-sliding-window clears the window (ModelConfig.__post_init__): vLLM takes TURBOQUANT
    turboquant = ["--set", "attention_backend=TURBOQUANT", "--set", "kv_cache_dtype=turboquant_k8v4"]
    main([*args, *turboquant, "--set", "disable_sliding_window=true"])
    taken = json.loads(capsys.readouterr().out)
    assert taken["status"] == "resolved" and taken["values"]["attention_backend"] == "TURBOQUANT"


_DSV4 = {"architectures": ["DeepseekV4ForCausalLM"]}
_QWEN4 = {"architectures": ["Qwen4ExpForConditionalGeneration"]}
_QWEN25_VL = {"architectures": ["Qwen2_5_VLForConditionalGeneration"]}


@pytest.mark.parametrize(
    ("doc", "fact", "expected"),
    [
        # DeepSeek-V4's config has index_topk, but SGLang's is_deepseek_dsa lists its class not
        # (oracle G19D: dsv4 attention, 256-token pages); the config leaves is_dsa to the class rules.
        ({**_DSV4, "index_topk": 512, "kv_lora_rank": 512}, "is_dsa", None),
        ({"architectures": ["GlmMoeDsaForCausalLM"], "index_topk": 2048, "kv_lora_rank": 8}, "is_dsa", True),
        ({**_QWEN4, "text_config": {"indexer_n_heads": 64}}, "has_qsa_indexer", True),
        ({**_QWEN4, "text_config": {}}, "has_qsa_indexer", False),
        (_QWEN25_VL, "vision_tower_tp_reduce", True),
        (_QWEN25_VL, "heads_split_over_tp", True),
        ({"architectures": ["Phi3ForCausalLM"]}, "heads_split_over_tp", True),
        # SGLang takes DeepSeek-V4's experts as MXFP4 when the checkpoint does not say (G19D).
        ({**_DSV4, "quantization_config": {"quant_method": "fp8"}}, "moe_experts_fp4", True),
    ],
)
def test_sglang_reads_the_round_19_traits_from_the_config(
    tmp_path: Path, doc: dict[str, Any], fact: str, expected: bool | None
) -> None:
    _config(tmp_path, doc)
    values = {k: p.value for k, p in facts_from_model_config(SGLANG, tmp_path).items()}
    assert values.get(fact) is expected


_STEP3P7 = {"architectures": ["Step3p7ForConditionalGeneration"]}
_GEMMA3 = {"architectures": ["Gemma3ForConditionalGeneration"]}


@pytest.mark.parametrize(
    ("doc", "fact", "expected"),
    [
        # Step 3.7 names its vision heads `heads`, Qwen-VL `num_heads`, SigLIP `num_attention_heads`.
        ({**_STEP3P7, "vision_config": {"heads": 16}}, "vision_heads_pow2", 16),
        ({**_QWEN25_VL, "vision_config": {"num_heads": 12}}, "vision_heads_pow2", 4),
        ({**_GEMMA3, "vision_config": {"num_attention_heads": 24}}, "vision_heads_pow2", 8),
        # Qwen1.5/2-MoE's 60 experts split over at most 4 EP ranks; Granite 4.0-H writes 0 experts.
        ({"architectures": ["Qwen2MoeForCausalLM"], "num_experts": 60}, "moe_experts_pow2", 4),
        ({"architectures": ["GraniteMoeHybridForCausalLM"], "num_local_experts": 0}, "moe_experts_pow2", 0),
        ({"architectures": ["MixtralForCausalLM"], "num_local_experts": 8}, "moe_experts_pow2", 8),
    ],
)
def test_sglang_reads_the_round_20_shapes_from_the_config(
    tmp_path: Path, doc: dict[str, Any], fact: str, expected: int
) -> None:
    _config(tmp_path, doc)
    values = {k: p.value for k, p in facts_from_model_config(SGLANG, tmp_path).items()}
    assert values.get(fact) == expected
