"""Issue #13's examples, each pinned: `check` predicts what SGLang does with the command as typed,
`resolve` says where its answer departs from SGLang's own pick, and nothing is assumed silently."""

from __future__ import annotations

import json

import pytest

from solver import check, load_pack, resolve
from solver.cli import main
from solver.errors import Unsatisfiable

DSV3_B200 = ["--set", "platform=cuda", "--set", "gpu_arch=sm100",
             "--set", "architecture=DeepseekV3ForCausalLM", "--set", "checkpoint_quant=fp8"]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# --- check predicts; resolve searches and says where it departs ----------------------------------


def test_check_refuses_what_sglang_refuses_as_typed(capsys: pytest.CaptureFixture[str]) -> None:
    """sm100 + DeepSeek-V3 + fp8_e5m2 KV: SGLang's own trtllm_mla refuses the KV dtype."""
    code, out, _ = run(capsys, "check", *DSV3_B200, "--set", "kv_cache_dtype=fp8_e5m2")
    assert code == 1
    assert "attention_backend=trtllm_mla" in out and "trtllm-mla-kv-dtype" in out
    assert "Try: set attention_backend=" in out  # the repair says which flag to set


def test_check_conflict_json_names_the_failing_launcher_default(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "check", *DSV3_B200, "--set", "kv_cache_dtype=fp8_e5m2", "--json")
    doc = json.loads(out)
    assert code == 1 and doc["status"] == "conflict"
    assert doc["launcher_default"] == {"field": "attention_backend", "value": "trtllm_mla",
                                       "chain": ["trtllm_mla"],
                                       "preference": "attn-deepseek-family-sm100"}
    pins = {(p["field"], p["value"], p["source"]) for p in doc["conflict"]["pins"]}
    assert ("attention_backend", "trtllm_mla", "launcher-default") in pins
    assert ("kv_cache_dtype", "fp8_e5m2", "user") in pins
    first = doc["repairs"][0]
    assert list(first["set"]) == ["attention_backend"] and not first["unset"]
    assert first["values"]["kv_cache_dtype"] == "fp8_e5m2"


def test_resolve_says_when_it_departs_from_the_launchers_own_pick(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "resolve", *DSV3_B200, "--set", "kv_cache_dtype=fp8_e5m2", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["mode"] == "search"
    [first, *_] = doc["departures"]
    assert first["field"] == "attention_backend" and first["launcher"] is None
    assert "own default trtllm_mla fails here" in first["because"]
    assert first["resolved"] == doc["values"]["attention_backend"] != "trtllm_mla"
    code, out, _ = run(capsys, "resolve", *DSV3_B200, "--set", "kv_cache_dtype=fp8_e5m2")
    assert "NOT THE LAUNCHER'S OWN PICK: attention_backend: sglang's own default trtllm_mla fails" in out


def test_check_json_is_the_resolve_document_in_predict_mode(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "check", *DSV3_B200, "--set", "tp_size=8", "--json")
    doc = json.loads(out)
    assert code == 0
    assert doc["status"] == "resolved" and doc["mode"] == "predict"
    assert {"values", "provenance", "warnings", "assumed", "adjustments"} <= set(doc)
    assert doc["values"]["attention_backend"] == "trtllm_mla"


def test_check_on_fp8_checkpoint_with_cutedsl_runner_is_refused() -> None:
    """SGLang refuses an FP8 checkpoint with the FlashInfer CuteDSL MoE runner; check must not
    re-quantize the model to make the kernel flag work."""
    pack = load_pack("sglang")
    facts = {"platform": "cuda", "gpu_arch": "sm100", "architecture": "Qwen3MoeForCausalLM",
             "checkpoint_quant": "fp8"}
    with pytest.raises(Unsatisfiable) as info:
        check(pack, {"moe_runner_backend": "flashinfer_cutedsl"}, facts)
    assert "nvfp4_online" not in {str(p.value) for p in info.value.conflict.pins}


def test_check_and_resolve_agree_where_the_launcher_chain_works() -> None:
    pack = load_pack("sglang")
    facts = {"platform": "cuda", "gpu_arch": "sm90", "architecture": "LlamaForCausalLM"}
    predicted = check(pack, {"tp_size": 8}, facts)
    searched = resolve(pack, {"tp_size": 8}, facts)
    assert predicted.values == searched.values and not searched.departures
