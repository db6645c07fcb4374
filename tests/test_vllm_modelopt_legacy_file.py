"""A legacy ModelOpt hf_quant_config.json vLLM refuses to read (`modelopt_legacy_file_refused`).

vLLM 0.33.0 reads a ModelOpt checkpoint from hf_quant_config.json (ModelOpt 0.29 and earlier) when
config.json has no quantization_config. Its reader maps quant_algo FP8 / FP8_PB_WO / NVFP4 /
MIXED_PRECISION only ("Unknown ModelOpt quant algo: MXFP8",
`model_arch_config_convertor.py::_normalize_quantization_config`), and an NVFP4 `quantization`
table must hold group_size, kv_cache_quant_algo and exclude_modules, a key written as null being
there (`modelopt.py::ModelOptNvFp4Config._from_config`: "NVFP4 quantization requires the following
fields in hf_quant_config.json"); FP8 requires none. Executed with the harness (round 28, `R28P2-`,
80 files: Llama and Qwen3-MoE on SM90/100/120, the cache unset or fp8), VLLM_VERDICTS below; MXFP8
was refused in every form, so its own required keys (kv_cache_quant_algo, exclude_modules) are
never reached. Before (a0ebea6, pack 0.33.0+24) the pack read no such fact and resolved each of
them (`--model-config` gave no `modelopt_legacy_file_refused`, a fact the pack lacked).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from solver import load_pack
from solver.cli.commands import main
from solver.inputs.modelconfig import facts_from_model_config

VLLM = load_pack("vllm")
MODELS = Path(__file__).parent / "fixtures" / "models"
LLAMA = json.loads((MODELS / "llama-3.1-8b-instruct" / "config.json").read_text())
# ModelOpt 0.29's `quantization` tables, complete
FULL: dict[str, dict[str, object]] = {
    "NVFP4": {"quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8", "group_size": 16},
    "MXFP8": {"quant_algo": "MXFP8", "kv_cache_quant_algo": None, "group_size": 32},
    "FP8": {"quant_algo": "FP8", "kv_cache_quant_algo": None},
}
for table in FULL.values():
    table["exclude_modules"] = ["lm_head"]
# What vLLM 0.33.0 said of each legacy file (R28P2-, the harness: accepted, or the ValueError of
# the quantization config's construction), by method and the keys dropped ("null:" writes it null).
VLLM_VERDICTS = {
    ("NVFP4", ""): True,
    ("NVFP4", "group_size"): False,
    ("NVFP4", "kv_cache_quant_algo"): False,
    ("NVFP4", "exclude_modules"): False,
    ("NVFP4", "group_size+exclude_modules"): False,
    ("NVFP4", "kv_cache_quant_algo+exclude_modules"): False,
    ("NVFP4", "null:kv_cache_quant_algo"): True,
    ("NVFP4", "null:group_size"): True,
    ("MXFP8", ""): False,
    ("MXFP8", "group_size"): False,
    ("MXFP8", "kv_cache_quant_algo"): False,
    ("MXFP8", "null:kv_cache_quant_algo"): False,
    ("FP8", ""): True,
    ("FP8", "group_size"): True,
    ("FP8", "kv_cache_quant_algo"): True,
    ("FP8", "exclude_modules"): True,
    ("FP8", "kv_cache_quant_algo+exclude_modules"): True,
}


def legacy_model(tmp_path: Path, algo: str, drop: str, *, in_config: bool = False) -> Path:
    """A model directory with ModelOpt 0.29's hf_quant_config.json for `algo` minus `drop`
    (`in_config`: config.json has a quantization_config too, which vLLM reads instead)."""
    quantization = dict(FULL[algo])
    for key in filter(None, drop.split("+")):
        if key.startswith("null:"):
            quantization[key[5:]] = None
        else:
            quantization.pop(key, None)
    directory = tmp_path / "model"
    directory.mkdir()
    hf_quant = {"producer": {"name": "modelopt", "version": "0.29.0"}, "quantization": quantization}
    (directory / "hf_quant_config.json").write_text(json.dumps(hf_quant))
    config = dict(LLAMA)
    if in_config:
        config["quantization_config"] = {"quant_method": "modelopt", **FULL[algo]}
    (directory / "config.json").write_text(json.dumps(config))
    return directory


@pytest.mark.parametrize(("algo", "drop"), sorted(VLLM_VERDICTS))
def test_the_fact_is_read_as_vllm_checks_the_file(tmp_path: Path, algo: str, drop: str) -> None:
    pins = facts_from_model_config(VLLM, legacy_model(tmp_path, algo, drop))
    assert pins["modelopt_legacy_file_refused"].value is not VLLM_VERDICTS[algo, drop]


@pytest.mark.parametrize("algo", ["NVFP4", "MXFP8"])
def test_config_json_s_own_quantization_config_is_read_instead(tmp_path: Path, algo: str) -> None:
    pins = facts_from_model_config(VLLM, legacy_model(tmp_path, algo, "group_size", in_config=True))
    assert pins["modelopt_legacy_file_refused"].value is False


@pytest.mark.parametrize(("algo", "drop"), sorted(VLLM_VERDICTS))
def test_the_pack_takes_what_vllm_takes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], algo: str, drop: str
) -> None:
    argv = ["check", "--pack", "vllm", "--model-config", str(legacy_model(tmp_path, algo, drop))]
    gpu = "sm90" if algo == "FP8" else "sm100"  # where R28P2 ran them
    argv += ["--set", "platform=cuda", "--set", f"gpu_arch={gpu}", "--set", "tensor_parallel_size=1"]
    code = main(argv)
    out = capsys.readouterr().out
    assert code == (0 if VLLM_VERDICTS[algo, drop] else 1), out
    if not VLLM_VERDICTS[algo, drop]:
        assert "modelopt-legacy-file-refused" in out
        assert "vLLM refuses this checkpoint's hf_quant_config.json" in out


def test_the_fact_belongs_to_nvfp4_and_mxfp8_checkpoints(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["check", "--pack", "vllm", "--set", "platform=cuda", "--set", "gpu_arch=sm90"]
    argv += ["--set", "checkpoint_quant=modelopt_fp8", "--set", "modelopt_legacy_file_refused=true"]
    assert main(argv) == 1
    assert "modelopt-legacy-file-needs-nvfp4-or-mxfp8" in capsys.readouterr().out
