"""A compressed-tensors checkpoint's KV-cache scheme in the vLLM pack (`checkpoint_kv_cache_quant`).

llm-compressor writes an FP8 KV cache as config.json's `quantization_config.kv_cache_scheme`
({"type": "float", "num_bits": 8, "strategy": "tensor" or "attn_head", "symmetric": true, ...}).
vLLM 0.33.0 does not read it in its configuration (`resolve_kv_cache_dtype_string` reads ModelOpt's
only: cache_dtype stays auto there) but in each attention layer the model builds:
`Attention.__init__` stores an fp8 cache for --kv-cache-dtype auto and writes it back to
cache_config before the executor sizes the blocks, picks its backend for that cache, and asks for
per-head scales under `attn_head` (FlashAttention 3/4 only); `CompressedTensorsKVCacheMethod`
refuses any other scheme; an MLA layer reads none of it. Executed in round 26 with the layer probe
building the layers before the selection (benchmarks/vllm_layer_probe.py, VLLM_LAYER_PROBE_AT_LOAD):
the records are tests/fixtures/oracle_vllm/round26-ct-kv-scheme.jsonl.gz.

Before (main 6dc6b8c, pack 0.33.0+22) `--model-config` did not read the scheme: every such
checkpoint resolved an auto cache (the FlashAttention backend on Ampere, Ada and RTX PRO 6000,
where vLLM runs FlashInfer), and the unloadable schemes resolved.
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
# RedHatAI/Qwen3-30B-A3B-FP8-dynamic as published (no KV scheme); the scheme is added per case
QWEN3_MOE = json.loads((MODELS / "qwen3-30b-a3b-fp8-dynamic-compressed-tensors" / "config.json").read_text())
# llm-compressor's QuantizationArgs for an FP8 KV cache, as it serialises them
SCHEME = {
    "num_bits": 8,
    "type": "float",
    "symmetric": True,
    "group_size": None,
    "strategy": "tensor",
    "block_structure": None,
    "dynamic": False,
    "actorder": None,
    "observer": "minmax",
    "observer_kwargs": {},
}


def with_scheme(tmp_path: Path, scheme: dict[str, Any] | None, key: str = "quantization_config") -> Path:
    config = dict(QWEN3_MOE)
    quantization = dict(config.pop("quantization_config")) | {"kv_cache_scheme": scheme}
    config[key] = quantization
    directory = tmp_path / "model"
    directory.mkdir(exist_ok=True)
    (directory / "config.json").write_text(json.dumps(config))
    return directory


@pytest.mark.parametrize(
    ("scheme", "key", "expected"),
    [
        (SCHEME, "quantization_config", "fp8"),
        (SCHEME | {"strategy": "attn_head"}, "quantization_config", "fp8_per_head"),
        # what CompressedTensorsKVCacheMethod.validate_kv_cache_scheme refuses
        (SCHEME | {"type": "int"}, "quantization_config", "unsupported"),
        (SCHEME | {"num_bits": 4}, "quantization_config", "unsupported"),
        (SCHEME | {"symmetric": False}, "quantization_config", "unsupported"),
        (SCHEME | {"strategy": "channel"}, "quantization_config", "unsupported"),
        (None, "quantization_config", "none"),
        # vLLM reads compression_config when config.json has no quantization_config
        (SCHEME, "compression_config", "fp8"),
    ],
)
def test_the_scheme_is_read_as_vllm_loads_it(
    tmp_path: Path, scheme: dict[str, Any] | None, key: str, expected: str
) -> None:
    pins = facts_from_model_config(VLLM, with_scheme(tmp_path, scheme, key))
    assert pins["checkpoint_quant"].value == "compressed-tensors"
    assert pins["checkpoint_kv_cache_quant"].value == expected


def resolved(tmp_path: Path, capsys: pytest.CaptureFixture[str], gpu: str, *sets: str) -> dict[str, Any]:
    argv = ["resolve", "--pack", "vllm", "--model-config", str(with_scheme(tmp_path, SCHEME))]
    argv += ["--set", "platform=cuda", "--set", f"gpu_arch={gpu}", "--set", "tensor_parallel_size=1"]
    for assignment in sets:
        argv += ["--set", assignment]
    code = main([*argv, "--json"])
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    return {"code": code, **doc.get("values", {})}


@pytest.mark.parametrize(
    ("gpu", "backend"),
    # the layer's own selection with an fp8 cache: FlashAttention 2 stores none, FlashInfer does
    [("sm80", "FLASHINFER"), ("sm89", "FLASHINFER"), ("sm90", "FLASH_ATTN"), ("sm120", "FLASHINFER")],
)
def test_an_fp8_scheme_runs_an_fp8_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], gpu: str, backend: str
) -> None:
    values = resolved(tmp_path, capsys, gpu)
    assert (values["code"], values["kv_cache_dtype"], values["attention_backend"]) == (0, "fp8", backend)


def test_a_typed_cache_wins_and_fp8_e5m2_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert resolved(tmp_path, capsys, "sm90", "kv_cache_dtype=bfloat16")["kv_cache_dtype"] == "bfloat16"
    # the checkpoint's KV-cache method loads e4m3 scales (_init_kv_cache_quant)
    assert resolved(tmp_path, capsys, "sm90", "kv_cache_dtype=fp8_e5m2")["code"] == 1
    # FlashAttention 2 has no fp8 cache: a pinned FLASH_ATTN on an A100 fails at the first layer
    assert resolved(tmp_path, capsys, "sm80", "attention_backend=FLASH_ATTN")["code"] == 1


FACTS = {
    "platform": "cuda",
    "architecture": "LlamaForCausalLM",
    "checkpoint_quant": "compressed-tensors",
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
}


@pytest.mark.parametrize(
    ("gpu", "options", "backend"),
    [
        ("sm90", {}, "FLASH_ATTN"),
        # B200: FlashInfer reads no per-head scales, FlashAttention 4 does
        ("sm100", {}, "FLASH_ATTN"),
        ("sm80", {}, None),
        ("sm120", {}, None),
        ("sm90", {"attention_backend": "TRITON_ATTN"}, None),
        ("sm90", {"kv_cache_dtype": "bfloat16"}, "FLASH_ATTN"),
    ],
)
def test_per_head_scales_need_flash_attention_3_or_4(
    gpu: str, options: dict[str, Any], backend: str | None
) -> None:
    facts = FACTS | {"gpu_arch": gpu, "checkpoint_kv_cache_quant": "fp8_per_head"}
    if backend is None:
        with pytest.raises(Unsatisfiable):
            resolve(VLLM, options, facts, reasons=False)
    else:
        assert resolve(VLLM, options, facts, reasons=False).values["attention_backend"] == backend


def test_mla_and_humming_ignore_the_scheme() -> None:
    """MLA layers never read the scheme; --quantization humming's config carries none."""
    mla = FACTS | {
        "gpu_arch": "sm90",
        "checkpoint_kv_cache_quant": "fp8",
        "architecture": "DeepseekV3ForCausalLM",
    }
    mla |= {"num_attention_heads": 128, "num_key_value_heads": 128, "is_mla": True}
    assert resolve(VLLM, {"tensor_parallel_size": 8}, mla, reasons=False).values["kv_cache_dtype"] == "auto"
    facts = FACTS | {"gpu_arch": "sm90", "checkpoint_kv_cache_quant": "fp8"}
    assert resolve(VLLM, {"quantization": "humming"}, facts, reasons=False).values["kv_cache_dtype"] == "auto"
    with pytest.raises(Unsatisfiable) as refused:
        resolve(VLLM, {}, FACTS | {"gpu_arch": "sm90", "checkpoint_kv_cache_quant": "unsupported"})
    assert "kv-scheme-compressed-tensors-unloadable" in {rule.id for rule in refused.value.conflict.rules}
