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
("quantization_config.kv_cache_scheme is a string (...); expected an object"). Since +24 the string
is read as vLLM reads it. Until +24 an unknown one was refused (exit 2); since +25 (round 28) it is
read as vLLM reads it, no scheme, and a notice says so, naming the key, the value and the spellings
read (on stderr from the CLI, under `notes` from the server): vLLM's "auto" is then not silent
here. An object of another form is read so too, in place of kv_cache_quant_algo (vLLM's `or`).
Executed (round 28, `R28P1-`, tests/fixtures/oracle_vllm/round28-probes.jsonl.gz): each such
checkpoint resolves vLLM's cache (auto, warned), typed caches as typed.
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


DYNAMIC_FP8 = {"dynamic": True, "num_bits": 8, "type": "float"}  # not a form vLLM reads
UNKNOWN = [
    FP8 | {"kv_cache_scheme": "INT8"},
    FP8 | {"kv_cache_scheme": "fp8_per_head"},
    NVFP4 | {"kv_cache_scheme": "unsupported"},
    # taken in place of kv_cache_quant_algo, as vLLM's `or` takes it
    FP8 | {"kv_cache_scheme": "INT8", "kv_cache_quant_algo": "FP8"},
    FP8 | {"kv_cache_scheme": DYNAMIC_FP8, "kv_cache_quant_algo": "FP8"},
    NVFP4 | {"kv_cache_scheme": {"num_bits": 8, "type": "int"}},
]


@pytest.mark.parametrize("quantization", UNKNOWN)
@pytest.mark.parametrize("legacy", [False, True])
def test_an_unknown_scheme_is_read_as_none_as_vllm_reads_it_and_said(
    tmp_path: Path, quantization: dict[str, Any], legacy: bool
) -> None:
    """Before (a0ebea6, +24): InvalidInput for the strings, fp8 for the dynamic object over an FP8
    kv_cache_quant_algo; vLLM warns and runs auto for each."""
    notes: list[str] = []
    pins = facts_from_model_config(VLLM, model(tmp_path, quantization, legacy=legacy), notes=notes)
    assert pins["checkpoint_kv_cache_quant"].value == "none"
    (note,) = notes
    scheme = quantization["kv_cache_scheme"]
    key = "hf_quant_config:quantization.kv_cache_scheme" if legacy else "quantization_config.kv_cache_scheme"
    assert f"{key} is {json.dumps(scheme)}" in note
    assert "not one of the forms read for checkpoint_kv_cache_quant (FP8, NVFP4, any case)" in note
    assert "read as checkpoint_kv_cache_quant=none" in note and "get_kv_cache_quant_algo_string" in note
    assert "--set checkpoint_kv_cache_quant=VALUE" in note


@pytest.mark.parametrize(
    ("gpu", "cache", "expected"),
    # what vLLM 0.33.0 resolved for Llama over a ModelOpt FP8 checkpoint whose kv_cache_scheme is
    # "INT8" (R28P1-: the harness with the layer probe at load)
    [
        ("sm90", None, "auto"),
        ("sm90", "fp8", "fp8"),
        ("sm100", None, "auto"),
        ("sm100", "bfloat16", "bfloat16"),
    ],
)
def test_an_unknown_scheme_resolves_the_cache_vllm_runs_and_the_cli_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], gpu: str, cache: str | None, expected: str
) -> None:
    directory = model(tmp_path, FP8 | {"kv_cache_scheme": "INT8"})
    argv = ["resolve", "--pack", "vllm", "--model-config", str(directory), "--json"]
    argv += ["--set", "platform=cuda", "--set", f"gpu_arch={gpu}", "--set", "tensor_parallel_size=1"]
    argv += ["--set", f"kv_cache_dtype={cache}"] if cache else []
    code = main(argv)
    out, err = capsys.readouterr()
    assert (code, json.loads(out)["values"]["kv_cache_dtype"]) == (0, expected)
    assert "confsolve: --model-config " in err and 'kv_cache_scheme is "INT8"' in err
    assert "Traceback" not in err


def test_the_server_says_it_beside_the_facts() -> None:
    from solver.serve.api import Configurator

    config = dict(LLAMA, quantization_config=FP8 | {"kv_cache_scheme": "INT8"})
    doc = Configurator(VLLM).answer("model-config", {"config": config})
    assert doc["facts"]["checkpoint_kv_cache_quant"] == "none"
    (note,) = doc["notes"]
    assert note.startswith("--model-config the pasted config.json: quantization_config.kv_cache_scheme")
    plain = Configurator(VLLM).answer("model-config", {"config": dict(LLAMA, quantization_config=FP8)})
    assert "notes" not in plain


def test_a_scheme_of_neither_form_is_still_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match=r"kv_cache_scheme is an array"):
        facts_from_model_config(VLLM, model(tmp_path, FP8 | {"kv_cache_scheme": ["FP8"]}))
