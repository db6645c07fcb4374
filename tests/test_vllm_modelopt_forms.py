"""ModelOpt's export forms in the vLLM pack: `modelopt_export_form`, read from the model directory.

A ModelOpt FP8 or NVFP4 checkpoint is the same `checkpoint_quant` whatever ModelOpt version wrote
it, and vLLM 0.33.0's ModelOpt configs read every form. A typed `--quantization humming` does not:
HummingConfig reads config.json's quantization_config through a config group whose `targets` hold
Linear (humming.py::compressed_tensors_get_config), which ModelOpt's export writes since 0.35.
Groups without `targets` (0.31-0.34) fail on 'targets'; ModelOpt 0.29's FP8 form (hf_quant_config.json
only, which vLLM reads with quant_method "modelopt" and no config_groups) on 'config_groups'
(executed with the layer probe, round 25; KNOWN_DIFFERENCES 29).

Before (main def6101, pack 0.33.0+21) the form was neither read nor assumed: every one of these
requests resolved, the ones vLLM fails on included, and `modelopt_export_form` was an unknown field.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from solver import Unsatisfiable, load_pack, resolve
from solver.cli.commands import main
from solver.inputs.modelconfig import facts_from_model_config

VLLM = load_pack("vllm")
MODELS = Path(__file__).parent / "fixtures" / "models"
H100 = {"platform": "cuda", "gpu_arch": "sm90"}
RULE = "quant-humming-modelopt-export-without-linear-group"
# the published Llama-3.1-8B-Instruct config.json, its quantization written per export form below
LLAMA = json.loads((MODELS / "llama-3.1-8b-instruct" / "config.json").read_text())
FP8_GROUP = {
    "input_activations": {"dynamic": False, "num_bits": 8, "type": "float"},
    "weights": {"dynamic": False, "num_bits": 8, "type": "float"},
}
NVFP4_GROUP = {
    "input_activations": {"dynamic": False, "num_bits": 4, "type": "float", "group_size": 16},
    "weights": {"dynamic": False, "num_bits": 4, "type": "float", "group_size": 16},
}


def exported(algo: str, version: str, group: dict[str, Any] | None, targets: bool) -> dict[str, Any]:
    """config.json's quantization_config as ModelOpt's convert_hf_quant_config_format writes it."""
    config: dict[str, Any] = {"ignore": ["lm_head"], "quant_algo": algo, "quant_method": "modelopt"}
    config["producer"] = {"name": "modelopt", "version": version}
    if group is not None:
        config["config_groups"] = {"group_0": group | ({"targets": ["Linear"]} if targets else {})}
    return config


def legacy(algo: str) -> dict[str, Any]:
    """hf_quant_config.json as ModelOpt 0.29 and earlier wrote it (config.json has no quantization_config)."""
    quantization: dict[str, Any] = {"quant_algo": algo, "kv_cache_quant_algo": None}
    quantization["exclude_modules"] = ["lm_head"]
    if algo == "NVFP4":  # (ModelOpt writes it; vLLM refuses an NVFP4 file without it: round 28, R28P2)
        quantization["group_size"] = 16
    return {"producer": {"name": "modelopt", "version": "0.29.0"}, "quantization": quantization}


# (name, config.json's quantization_config, hf_quant_config.json, checkpoint_quant, form, humming ok)
FP8, NVFP4 = "modelopt_fp8", "modelopt_fp4"
FORMS: list[tuple[str, dict[str, Any] | None, dict[str, Any] | None, str, str, bool]] = [
    ("fp8-0.35", exported("FP8", "0.35.0", FP8_GROUP, True), None, FP8, "linear_group", True),
    ("nvfp4-0.35", exported("NVFP4", "0.35.0", NVFP4_GROUP, True), None, NVFP4, "linear_group", True),
    ("fp8-0.33", exported("FP8", "0.33.0", FP8_GROUP, False), None, FP8, "untargeted", False),
    ("nvfp4-0.33", exported("NVFP4", "0.33.0", NVFP4_GROUP, False), None, NVFP4, "untargeted", False),
    ("nvfp4-0.31", exported("NVFP4", "0.31.0", None, False), None, NVFP4, "untargeted", False),
    ("fp8-0.29", None, legacy("FP8"), FP8, "hf_quant_config_only", False),
    # ModelOpt 0.29's NVFP4 form: vLLM gives it quant_method "modelopt_fp4", which HummingConfig
    # hands to the humming package's schema (humming-kernels 0.1.19, vLLM 0.33.0's pin), which has
    # no such method: "unsupported weight quant_method: modelopt_fp4" (round 26; taken before)
    ("nvfp4-0.29", None, legacy("NVFP4"), NVFP4, "hf_quant_config_only", False),
]


def model_dir(
    tmp_path: Path, name: str, config: dict[str, Any] | None, hf_quant: dict[str, Any] | None
) -> Path:
    directory = tmp_path / name
    directory.mkdir()
    written = LLAMA | ({"quantization_config": config} if config is not None else {})
    (directory / "config.json").write_text(json.dumps(written))
    if hf_quant is not None:
        (directory / "hf_quant_config.json").write_text(json.dumps(hf_quant))
    return directory


@pytest.mark.parametrize(("name", "config", "hf_quant", "checkpoint", "form", "humming_ok"), FORMS)
def test_the_export_form_is_read_and_decides_a_typed_humming(
    tmp_path: Path,
    name: str,
    config: dict[str, Any] | None,
    hf_quant: dict[str, Any] | None,
    checkpoint: str,
    form: str,
    humming_ok: bool,
) -> None:
    pins = facts_from_model_config(VLLM, model_dir(tmp_path, name, config, hf_quant))
    assert pins["checkpoint_quant"].value == checkpoint
    assert pins["modelopt_export_form"].value == form
    assert pins["modelopt_export_form"].source == "model-config"
    facts = {**H100, **{field: pin.value for field, pin in pins.items()}}
    # vLLM's ModelOpt configs read every form: left unset, the checkpoint's own method runs
    method = resolve(VLLM, {}, facts, reasons=False).values["quantization"]
    assert method == ("modelopt" if checkpoint == FP8 else NVFP4)
    if humming_ok:
        resolve(VLLM, {"quantization": "humming"}, facts, reasons=False)
    else:
        with pytest.raises(Unsatisfiable) as refused:
            resolve(VLLM, {"quantization": "humming"}, facts)
        assert RULE in {rule.id for rule in refused.value.conflict.rules}


@pytest.mark.parametrize(
    ("name", "code"),
    # nvidia/Llama-3.1-8B-Instruct-FP8 (ModelOpt 0.19: hf_quant_config.json only) fails in vLLM;
    # nvidia/DeepSeek-R1-FP4 (config_groups targeting Linear) builds
    [("llama-3.1-8b-instruct-modelopt-fp8", 1), ("deepseek-r1-modelopt-nvfp4", 0)],
)
def test_published_modelopt_checkpoints_under_a_typed_humming(
    capsys: pytest.CaptureFixture[str], name: str, code: int
) -> None:
    argv = ["resolve", "--pack", "vllm", "--model-config", str(MODELS / name), "--set", "platform=cuda"]
    argv += ["--set", "gpu_arch=sm90", "--set", "quantization=humming", "--json"]
    assert main(argv) == code
    doc = json.loads(capsys.readouterr().out)
    assert (RULE in json.dumps(doc)) is (code == 1)


def test_an_unread_modelopt_checkpoint_s_form_is_assumed_and_said(capsys: pytest.CaptureFixture[str]) -> None:
    """Not read, the current form is assumed (and listed); another checkpoint has no form to assume."""
    for checkpoint, listed in ((FP8, True), (NVFP4, True), ("fp8", False), ("none", False)):
        argv = ["resolve", "--pack", "vllm", "--set", "platform=cuda", "--set", "gpu_arch=sm90", "--json"]
        argv += ["--set", "architecture=LlamaForCausalLM", "--set", f"checkpoint_quant={checkpoint}"]
        assert main(argv) == 0
        doc = json.loads(capsys.readouterr().out)
        assumed = {a["field"]: a for a in doc["assumed"]}
        assert ("modelopt_export_form" in assumed) is listed, (checkpoint, sorted(assumed))
        assert doc["values"]["modelopt_export_form"] == ("linear_group" if listed else "none")


# --- the KV-cache scheme: config.json's `kv_cache_scheme` object, read first as vLLM does ----------


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        # ModelOpt's export (0.31 on) writes the scheme as an object: 8-bit float is FP8 ...
        (exported("FP8", "0.35.0", FP8_GROUP, True) | {"kv_cache_scheme": FP8_GROUP["weights"]}, "fp8"),
        # ... 4-bit float NVFP4 (NVFP4_GROUP's weights: dynamic false, 4 bits, float)
        (
            exported("NVFP4", "0.35.0", NVFP4_GROUP, True) | {"kv_cache_scheme": NVFP4_GROUP["weights"]},
            "nvfp4",
        ),
        # the flat form's string
        ({"quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_quant_algo": "FP8"}, "fp8"),
        (exported("FP8", "0.35.0", FP8_GROUP, True), "none"),
        # a compressed-tensors scheme is read as vLLM's compressed-tensors KV-cache method reads it:
        # ModelOpt's object has no strategy and no symmetric flag, which that method cannot load
        # (tests/test_vllm_kv_scheme.py; before round 26 not read at all: none)
        (
            {
                "quant_method": "compressed-tensors",
                "config_groups": {"group_0": FP8_GROUP | {"targets": ["Linear"]}},
                "kv_cache_scheme": FP8_GROUP["weights"],
            },
            "unsupported",
        ),
    ],
)
def test_a_modelopt_kv_cache_scheme_is_read_as_vllm_reads_it(
    tmp_path: Path, config: dict[str, Any], expected: str
) -> None:
    pins = facts_from_model_config(VLLM, model_dir(tmp_path, "kv", config, None))
    assert pins["checkpoint_kv_cache_quant"].value == expected


def test_deepseek_r1_fp4_runs_an_fp8_cache(capsys: pytest.CaptureFixture[str]) -> None:
    """nvidia/DeepSeek-R1-FP4 declares an FP8 KV cache in `kv_cache_scheme`: vLLM's cache dtype is
    fp8_e4m3 with --kv-cache-dtype unset (the oracle, round 25); main def6101 read none (auto)."""
    argv = ["resolve", "--pack", "vllm", "--model-config", str(MODELS / "deepseek-r1-modelopt-nvfp4")]
    assert main([*argv, "--set", "platform=cuda", "--set", "gpu_arch=sm100", "--json"]) == 0
    values = json.loads(capsys.readouterr().out)["values"]
    assert (values["checkpoint_kv_cache_quant"], values["kv_cache_dtype"]) == ("fp8", "fp8_e4m3")


# A ModelOpt mixed-precision checkpoint under a typed humming: ModelOpt 0.27-0.29's file only (vLLM
# gives it quant_method "modelopt_mixed", which the humming package's schema does not know), and
# config.json's quantization_config without config groups (KeyError 'config_groups') or with
# ModelOpt's per-layer groups, whose targets name layers, never Linear (every layer built
# unquantized, which cannot load the checkpoint's weights). Round 26; pack 0.33.0+22 took all three.
MIXED_LAYERS = {"model.layers.0.self_attn.o_proj": {"quant_algo": "FP8"}}
MIXED_FORMS = [
    (
        None,
        {
            "producer": {"name": "modelopt", "version": "0.27.0"},
            "quantization": {
                "quant_algo": "MIXED_PRECISION",
                "kv_cache_quant_algo": None,
                "quantized_layers": MIXED_LAYERS,
            },
        },
    ),
    (exported("MIXED_PRECISION", "0.35.0", None, False), None),
    (
        exported("MIXED_PRECISION", "0.40.0", FP8_GROUP | {"targets": sorted(MIXED_LAYERS)}, False)
        | {"quantized_layers": MIXED_LAYERS},
        None,
    ),
]


@pytest.mark.parametrize(("config", "hf_quant"), MIXED_FORMS)
def test_a_modelopt_mixed_checkpoint_refuses_a_typed_humming(
    tmp_path: Path, config: dict[str, Any] | None, hf_quant: dict[str, Any] | None
) -> None:
    pins = facts_from_model_config(VLLM, model_dir(tmp_path, "mixed", config, hf_quant))
    facts = {**H100, **{field: pin.value for field, pin in pins.items()}}
    assert facts["checkpoint_quant"] == "modelopt_mixed"
    assert resolve(VLLM, {}, facts, reasons=False).values["quantization"] == "modelopt_mixed"
    with pytest.raises(Unsatisfiable) as refused:
        resolve(VLLM, {"quantization": "humming"}, facts)
    assert RULE in {rule.id for rule in refused.value.conflict.rules}
