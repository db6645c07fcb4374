"""Sparse MLA (DeepSeek-V3.2) layers as vLLM 0.33.0 builds them (KNOWN_DIFFERENCES 32, round 29).

Each case is a record of `round29-probes.jsonl.gz` (`R29P1-`: the harness with
`benchmarks/vllm_layer_probe.py` and `VLLM_LAYER_PROBE_AT_LOAD=1`, the sparse layers built), one per
kind main 0b3452a (pack 0.33.0+25) answered otherwise: FlashMLA sparse refusing an unquantized cache
under decode context parallelism when its layer is built, the cache the sparse layer writes back
(fp8 -> fp8_ds_mla; on SM120 everything -> fp8_ds_mla), FA4's gathered-heads check. The pack must
answer as vLLM did, and say which rule did it.

Round 30 (`round30-probes.jsonl.gz`, `R30P1-`: the harness with `benchmarks/vllm_builder_probe.py`,
which builds the sparse layer and then FlashMLA sparse's metadata builder): under decode context
parallelism that builder takes fewer than 32 query heads per GPU, and at most 64 gathered over -dcp.
"""

from __future__ import annotations

from typing import Any

import oracle_vllm
import pytest

from solver import load_pack
from solver.errors import Unsatisfiable

VLLM = load_pack("vllm")
RECORDS = {
    r["scenario"]["id"]: r
    for name in ("round29-probes.jsonl.gz", "round30-probes.jsonl.gz")
    for r in oracle_vllm.load_records(oracle_vllm.FIXTURES / name)
}


def _resolve(sid: str) -> Any:
    options, facts = oracle_vllm.request_for(RECORDS[sid]["scenario"]) or ({}, {})
    return oracle_vllm._resolve(VLLM, options, facts)


@pytest.mark.parametrize(
    "sid",
    # SM90 -tp 2 -dcp 2, cache unset; FlashMLA sparse typed; B200 -tp 2 -dcp 2 (64 heads per GPU:
    # FlashMLA first), unset and bfloat16: "DCP for FlashMLA sparse requires an fp8_ds_mla kv-cache"
    ["R29P1-0001", "R29P1-0017", "R29P1-0049", "R29P1-0053"],
)
def test_flashmla_sparse_under_dcp_refuses_an_unquantized_cache(sid: str) -> None:
    assert "DCP for FlashMLA sparse requires an fp8_ds_mla" in RECORDS[sid]["vllm"]["error"]["message"]
    with pytest.raises(Unsatisfiable) as caught:
        _resolve(sid)
    rules = {r.id: r for r in caught.value.conflict.rules}
    assert "flashmla-sparse-dcp-needs-quantized-kv" in rules
    assert "--kv-cache-dtype fp8_ds_mla" in rules["flashmla-sparse-dcp-needs-quantized-kv"].because


@pytest.mark.parametrize(
    ("sid", "rule"),
    [
        # Hopper, fp8 typed: FlashMLA sparse (unset or typed) stores it as fp8_ds_mla
        ("R29P1-0008", "kv-dtype-flashmla-sparse-fp8-is-fp8-ds-mla"),
        ("R29P1-0024", "kv-dtype-flashmla-sparse-fp8-is-fp8-ds-mla"),
        ("R29P1-0072", "kv-dtype-flashmla-sparse-fp8-is-fp8-ds-mla"),
        # RTX PRO 6000: FlashInfer's SM120 sparse kernel stores fp8 and bfloat16 (auto) as fp8_ds_mla
        ("R29P1-0120", "kv-dtype-sparse-sm120-is-fp8-ds-mla"),
        ("R29P1-0116", "kv-dtype-deepseek-v32-bfloat16-sm120-is-fp8-ds-mla"),
    ],
)
def test_the_cache_the_sparse_layer_writes_back_is_a_reported_adjustment(sid: str, rule: str) -> None:
    assert RECORDS[sid]["vllm"]["resolved"]["kv_cache_dtype"] == "fp8_ds_mla"
    resolution = _resolve(sid)
    assert resolution.values["kv_cache_dtype"] == "fp8_ds_mla"
    (adjustment,) = [a for a in resolution.adjustments if a.field == "kv_cache_dtype"]
    assert (adjustment.rule, adjustment.resolved) == (rule, "fp8_ds_mla")


def test_an_unset_cache_on_sm120_is_fp8_ds_mla_by_the_rules_not_a_default() -> None:
    assert RECORDS["R29P1-0112"]["vllm"]["resolved"]["kv_cache_dtype"] == "fp8_ds_mla"
    resolution = _resolve("R29P1-0112")
    assert resolution.values["kv_cache_dtype"] == "fp8_ds_mla"
    assert resolution.provenance["kv_cache_dtype"].kind == "rule"


def test_fa4_sparse_takes_only_the_gathered_head_counts_it_is_built_for() -> None:
    # B200 -tp 8 -dcp 8: 16 heads per GPU x 8 = 128 gathered, which FA4 refuses under DCP; vLLM
    # skips it for FlashInfer's sparse kernel (and its 32-token block) ...
    skipped = RECORDS["R29P1-0051"]["vllm"]
    assert skipped["attention"]["mla_sparse"]["backend"] == "FLASHINFER_MLA_SPARSE"
    resolution = _resolve("R29P1-0051")
    assert resolution.values["attention_backend"] == "FLASHINFER_MLA_SPARSE"
    assert resolution.values["block_size"] == skipped["resolved"]["block_size"]
    # ... and refuses it typed (-tp 2 -dcp 2: 64 x 2)
    assert "(8, 16, 32, 64) gathered query heads" in RECORDS["R29P1-0097"]["vllm"]["error"]["message"]
    with pytest.raises(Unsatisfiable) as caught:
        _resolve("R29P1-0097")
    assert "fa4-sparse-mla-gathered-heads" in {r.id for r in caught.value.conflict.rules}


# FlashMLA sparse's metadata builder under DCP: one message per limit (R30P1)
_FEW_HEADS = "DCP for FlashMLA sparse is only supported on the mixed-batch fp8 path"
_PADDING = "DCP for FlashMLA sparse requires the local and DCP-gathered head counts to pad"


@pytest.mark.parametrize(
    ("sid", "message"),
    [
        ("R30P1-0010", _FEW_HEADS),  # H100 -tp 2 -dcp 2, fp8_ds_mla: 64 heads per GPU
        ("R30P1-0021", _FEW_HEADS),  # H100 -tp 4 -dcp 4, fp8 and FlashMLA sparse typed: 32 per GPU
        ("R30P1-0083", _FEW_HEADS),  # B200 -tp 4 -dcp 2, nvfp4_ds_mla typed and pinned
        ("R30P1-0040", _PADDING),  # H100 -tp 8 -dcp 8, fp8_ds_mla: 16 per GPU, 128 gathered
    ],
)
def test_flashmla_sparse_under_dcp_refuses_too_many_heads(sid: str, message: str) -> None:
    assert message in RECORDS[sid]["vllm"]["error"]["message"]
    with pytest.raises(Unsatisfiable) as caught:
        _resolve(sid)
    rules = {r.id: r for r in caught.value.conflict.rules}
    assert "flashmla-sparse-dcp-gathered-heads" in rules
    assert "-dcp 1" in rules["flashmla-sparse-dcp-gathered-heads"].because


def test_the_gathered_heads_limit_is_where_vllm_draws_it() -> None:
    # every probe with a quantized cache under DCP (vLLM's refusals at the builder and the requests
    # it takes: -tp 8 with -dcp 2 or 4, -tp 16 with -dcp 2 to 8), the verdict as vLLM's
    probes = [
        r
        for sid, r in RECORDS.items()
        if sid.startswith("R30P1-")
        and r["scenario"]["args"].get("decode_context_parallel_size", 1) > 1
        and r["scenario"]["args"].get("kv_cache_dtype") is not None
    ]
    accepted = [r["scenario"]["id"] for r in probes if r["vllm"]["ok"]]
    assert len(probes) == 90 and len(accepted) == 54
    for record in probes:
        sid = record["scenario"]["id"]
        try:
            _resolve(sid)
            ours = True
        except Unsatisfiable:
            ours = False
        assert ours == record["vllm"]["ok"], sid
