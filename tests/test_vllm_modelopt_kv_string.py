"""ModelOpt's KV-cache scheme written as a string, in the vLLM pack (`checkpoint_kv_cache_quant`).

vLLM 0.33.0 reads a ModelOpt checkpoint's `kv_cache_scheme` as an object ({"num_bits": 8, "type":
"float", ...}) or as a string ("FP8", "NVFP4", any case), before `kv_cache_quant_algo`, in
config.json's quantization_config or, when config.json has none, in hf_quant_config.json
(utils/torch_utils.py::get_kv_cache_quant_algo_string, through MODELOPT_TO_VLLM_KV_CACHE_DTYPE_MAP);
an empty string is no scheme, and another string falls back to auto with a warning.
Executed with the vLLM harness (round 27, sm90 / sm100, Llama): "FP8" and "fp8" give cache_dtype
fp8_e4m3 (FlashAttention on H100), "NVFP4" nvfp4 (FlashInfer on B200), the string wins over a
kv_cache_quant_algo NVFP4, "" and "INT8" give auto (the latter with vLLM's warning).

Before (main a1e60f3, pack 0.33.0+23) `--model-config` refused every string scheme with exit 2
("quantization_config.kv_cache_scheme is a string (...); expected an object"). Now the string is
read as vLLM reads it, and an unknown one is still refused, naming the key, the value and the
spellings read: vLLM's silent "auto" would hide a scheme the checkpoint's scales were made for.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from solver import load_pack
from solver.cli.commands import main
from solver.errors import InvalidInput
from solver.inputs.modelconfig import facts_from_model_config

VLLM = load_pack("vllm")
MODELS = Path(__file__).parent / "fixtures" / "models"
# the published Llama-3.1-8B-Instruct config.json; ModelOpt's quantization is written per case
LLAMA = json.loads((MODELS / "llama-3.1-8b-instruct" / "config.json").read_text())
FP8 = {"quant_method": "modelopt", "quant_algo": "FP8", "exclude_modules": ["lm_head"]}
NVFP4 = {"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16, "exclude_modules": ["lm_head"]}


def model(tmp_path: Path, quantization: dict[str, Any], *, legacy: bool = False) -> Path:
    """A model directory: the quantization in config.json, or (`legacy`, ModelOpt 0.29 and
    earlier) in hf_quant_config.json with none in config.json."""
    directory = tmp_path / "model"
    directory.mkdir(exist_ok=True)
    config = dict(LLAMA)
    if legacy:
        inner = {k: v for k, v in quantization.items() if k != "quant_method"}
        hf_quant = {"producer": {"name": "modelopt", "version": "0.29.0"}, "quantization": inner}
        (directory / "hf_quant_config.json").write_text(json.dumps(hf_quant))
    else:
        config["quantization_config"] = quantization
    (directory / "config.json").write_text(json.dumps(config))
    return directory


@pytest.mark.parametrize(
    ("quantization", "legacy", "expected"),
    [
        (FP8 | {"kv_cache_scheme": "FP8"}, False, "fp8"),
        (FP8 | {"kv_cache_scheme": "fp8"}, False, "fp8"),
        (NVFP4 | {"kv_cache_scheme": "NVFP4"}, False, "nvfp4"),
        # the scheme is read before kv_cache_quant_algo
        (FP8 | {"kv_cache_scheme": "FP8", "kv_cache_quant_algo": "NVFP4"}, False, "fp8"),
        # an empty string is no scheme (vLLM's `or` passes over it)
        (FP8 | {"kv_cache_scheme": ""}, False, "none"),
        (FP8 | {"kv_cache_scheme": "", "kv_cache_quant_algo": "FP8"}, False, "fp8"),
        # hf_quant_config.json (ModelOpt 0.29), which vLLM reads when config.json has no quantization
        (FP8 | {"kv_cache_scheme": "FP8"}, True, "fp8"),
        (FP8 | {"kv_cache_scheme": {"dynamic": False, "num_bits": 8, "type": "float"}}, True, "fp8"),
        # the object form, read before as now
        (FP8 | {"kv_cache_scheme": {"dynamic": False, "num_bits": 8, "type": "float"}}, False, "fp8"),
    ],
)
def test_a_string_scheme_is_read_as_vllm_reads_it(
    tmp_path: Path, quantization: dict[str, Any], legacy: bool, expected: str
) -> None:
    pins = facts_from_model_config(VLLM, model(tmp_path, quantization, legacy=legacy))
    assert pins["checkpoint_kv_cache_quant"].value == expected


@pytest.mark.parametrize(
    ("quantization", "gpu", "cache", "backend"),
    # what vLLM 0.33.0 resolved for these checkpoints with --kv-cache-dtype unset (the harness)
    [
        (FP8 | {"kv_cache_scheme": "FP8"}, "sm90", "fp8_e4m3", "FLASH_ATTN"),
        (NVFP4 | {"kv_cache_scheme": "NVFP4"}, "sm100", "nvfp4", "FLASHINFER"),
    ],
)
def test_a_string_scheme_sets_the_cache_vllm_runs(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    quantization: dict[str, Any],
    gpu: str,
    cache: str,
    backend: str,
) -> None:
    argv = ["resolve", "--pack", "vllm", "--model-config", str(model(tmp_path, quantization))]
    argv += [
        "--set",
        "platform=cuda",
        "--set",
        f"gpu_arch={gpu}",
        "--set",
        "tensor_parallel_size=1",
        "--json",
    ]
    code = main(argv)
    values = json.loads(capsys.readouterr().out)["values"]
    assert (code, values["kv_cache_dtype"], values["attention_backend"]) == (0, cache, backend)


@pytest.mark.parametrize("scheme", ["INT8", "fp8_per_head", "unsupported"])
def test_an_unknown_string_is_refused_naming_key_value_and_the_spellings_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], scheme: str
) -> None:
    directory = model(tmp_path, FP8 | {"kv_cache_scheme": scheme})
    with pytest.raises(InvalidInput) as refused:
        facts_from_model_config(VLLM, directory)
    message = str(refused.value)
    assert f'quantization_config.kv_cache_scheme is "{scheme}"' in message
    assert "checkpoint_kv_cache_quant: FP8, NVFP4" in message
    assert "--set checkpoint_kv_cache_quant=" in message
    code = main(["check", "--pack", "vllm", "--model-config", str(directory)])
    assert code == 2
    assert "Traceback" not in capsys.readouterr().err


def test_a_scheme_of_neither_form_is_still_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match=r"kv_cache_scheme is an array"):
        facts_from_model_config(VLLM, model(tmp_path, FP8 | {"kv_cache_scheme": ["FP8"]}))
