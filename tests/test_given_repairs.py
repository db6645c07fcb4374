"""Repairs and explanations of conflicts whose rules read a flag through `given()` (round 22).

A rule that reads what was typed (`given(FIELD)`, `given(FIELD) == VALUE`) is answered as a
constant in the request's copy of the pack, so the flag it reads is no pin of the conflict: the
search, which changes the conflict's pins, never offered the change the rule's own `because`
names (`solver.reasoning.givenrepairs`). And the conflict's text was told over the copy made
from the adjusted request, not the one typed (`solver.reasoning.resolution.conflict_text`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_engine import write_pack
from test_vllm_pack import QWEN3_NEXT

from solver import Unsatisfiable, check, load_pack, resolve
from solver.cli.commands import main


def _refused(pack: Any, options: dict[str, Any], facts: dict[str, Any]) -> Unsatisfiable:
    with pytest.raises(Unsatisfiable) as raised:
        check(pack, options, facts)
    return raised.value


def _applied(options: dict[str, Any], repair: Any) -> dict[str, Any]:
    """The options typed with the repair made to them."""
    kept = {n: v for n, v in options.items() if n not in repair.unset}
    return {**kept, **repair.set}


@pytest.mark.parametrize(
    ("gpu_arch", "options"),
    [
        ("sm100", {"flash_attn_version": 4}),
        ("sm100", {"flash_attn_version": 4, "block_size": 16}),
        ("sm100", {"flash_attn_version": 4, "tensor_parallel_size": 2}),
        ("sm110", {"flash_attn_version": 3, "block_size": 16}),
    ],
)
def test_a_diffkv_refusal_offers_the_block_size_and_the_fa_version_its_rule_names(
    gpu_arch: str, options: dict[str, Any]
) -> None:
    """`block-size-diffkv-fa4-head-256` says "type --block-size 128 ... or FA 2": it reads both
    through given(), so 595b19b offered backend changes only. Each repair resolves as typed, and
    none types the KV-cache dtype the rule also reads (`search = false`: precision, not typed)."""
    pack = load_pack("vllm")
    options = {"attention_backend": "FLASH_ATTN_DIFFKV", **options}
    facts = {**QWEN3_NEXT, "gpu_arch": gpu_arch}
    refused = _refused(pack, options, facts)
    assert "block-size-diffkv-fa4-head-256" in {r.id for r in refused.conflict.rules}
    changes = [(r.set, r.unset) for r in refused.repairs]
    assert ({"block_size": 128}, []) in changes
    # FA 2 typed, or on Thor (whose default is FA2) the typed version left unset
    assert ({"flash_attn_version": 2}, []) in changes or ({}, ["flash_attn_version"]) in changes
    for repair in refused.repairs:
        assert "kv_cache_dtype" not in repair.set and repair.changes == 1
        assert check(pack, _applied(options, repair), facts).values == repair.values
    # fewest changes first, then the least rank lost
    ranks = [(r.changes, r.rank_loss) for r in refused.repairs]
    assert ranks == sorted(ranks)


def test_a_typed_moe_runner_a_gptq_marlin_moe_refuses_is_repaired_by_leaving_it_unset() -> None:
    """SGLang's `moe-gptq-marlin-runner-auto` (a typed --moe-runner-backend, read through
    given(), fails GPTQ Marlin MoE experts): 595b19b offered only changes of the quantization."""
    pack = load_pack("sglang")
    options = {"quantization": "gptq_marlin", "moe_runner_backend": "triton"}
    facts = {"platform": "cuda", "gpu_arch": "sm100", "is_moe": True}
    refused = _refused(pack, options, facts)
    assert [r.id for r in refused.conflict.rules] == ["moe-gptq-marlin-runner-auto"]
    unset = [r for r in refused.repairs if r.unset == ["moe_runner_backend"] and not r.set]
    assert unset and check(pack, _applied(options, unset[0]), facts).values == unset[0].values


@pytest.mark.parametrize(
    ("options", "facts", "flag"),
    [
        # tests/cases/sglang/r19-deepseek-v4-fp4-dequant-typed-runner-refused.toml: "drop
        # --moe-runner-backend", read through given(); 595b19b offered three facts stated otherwise
        (
            {"moe_runner_backend": "triton"},
            {
                "platform": "cuda",
                "gpu_arch": "sm100",
                "architecture": "DeepseekV4ForCausalLM",
                "checkpoint_quant": "fp8",
                "moe_experts_fp4": True,
                "SGLANG_DSV4_FP4_DEQUANT": "1",
            },
            "moe_runner_backend",
        ),
        # tests/cases/sglang/r19-hrm-text-typed-trtllm-mha-a100-refused.toml: a typed trtllm_mha
        # (SGLang makes it triton after checking its GPU); 595b19b offered only facts
        (
            {"attention_backend": "trtllm_mha"},
            {"platform": "cuda", "gpu_arch": "sm80", "architecture": "HrmTextForCausalLM"},
            "attention_backend",
        ),
    ],
)
def test_leaving_a_typed_flag_unset_comes_before_facts_stated_otherwise(
    options: dict[str, Any], facts: dict[str, Any], flag: str
) -> None:
    pack = load_pack("sglang")
    refused = _refused(pack, options, facts)
    first = refused.repairs[0]
    assert (first.set, first.unset) == ({}, [flag])
    assert check(pack, _applied(options, first), facts).values == first.values


_POLICY_PACK = {
    "fields.toml": """
[field.backend]
kind = "option"
domain = ["plain", "paged"]

[field.page]
kind = "option"
domain = [16, 64]

[field.gpus]
kind = "option"
domain = [1, 2]
search = false
""",
    "rules.toml": """
[[rule]]
id = "paged-needs-typed-page-and-gpus"
when = "backend == 'paged'"
require = "given(page) and given(gpus)"
because = "the paged backend runs only with --page and --gpus typed"
source = "test"
""",
}


def test_a_rule_reading_an_unset_flag_is_repaired_by_typing_it_but_never_a_resource(tmp_path: Path) -> None:
    """Typing `--page` (read through given()) is offered; typing `--gpus` (`search = false`: a
    resource the user did not give) is not, and so no one change resolves with both unset."""
    pack = load_pack(write_pack(tmp_path, _POLICY_PACK))
    with pytest.raises(Unsatisfiable) as raised:
        resolve(pack, {"backend": "paged", "gpus": 2}, {})
    assert ({"page": 16}, []) in [(r.set, r.unset) for r in raised.value.repairs]
    with pytest.raises(Unsatisfiable) as raised:
        resolve(pack, {"backend": "paged", "page": 64}, {})
    assert all("gpus" not in r.set for r in raised.value.repairs)


def test_the_diffkv_conflict_states_the_typed_tp_and_fa_version_as_typed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """595b19b told the conflict over the copy made from the adjusted request (FA4 lowered to FA2
    read as FA2 typed), where the refusing rule held for every -tp: "tensor_parallel_size must be
    1 or 2 or 3 ..." of a typed -tp 2; and its first line gave the FA version as 2, typed as 4."""
    facts = {**QWEN3_NEXT, "gpu_arch": "sm100"}
    options = {"attention_backend": "FLASH_ATTN_DIFFKV", "flash_attn_version": 4, "tensor_parallel_size": 2}
    argv = [f"--set={n}={v}" for n, v in {**facts, **options}.items()]
    assert main(["resolve", "--pack", "vllm", *argv]) == 1
    err = capsys.readouterr().err
    assert "tensor_parallel_size must be" not in err
    assert "--tensor-parallel-size 2 and --attention-backend FLASH_ATTN_DIFFKV and rule" in err
    assert "the request cannot hold." in err
    assert (
        "--attention-config.flash_attn_version 4 (vllm:fa-large-heads-on-blackwell-is-fa2 makes it 2)" in err
    )


def test_the_given_repairs_cut_flags_before_a_budgeted_fact_what_if(monkeypatch: pytest.MonkeyPatch) -> None:
    """`chain_failure` budgets its fact what-ifs (at least one kept) before the given() repairs
    are placed ahead of them; ce45aae cut the merged list flat at the limit, so two inserted flag
    repairs pushed the fact's what-if out. Now the flag repairs are cut first."""
    from types import SimpleNamespace

    from solver.model import Repair
    from solver.reasoning import givenrepairs

    def repair(**change: Any) -> Repair:
        return Repair.model_construct(
            set=change, unset=[], values={}, alternatives={}, changes=1, rank_loss=0
        )

    inserted = [repair(block_size=128), repair(flash_attn_version=2)]
    monkeypatch.setattr(givenrepairs, "given_repairs", lambda *args, **kwargs: inserted)
    kinds = {"attention_backend": "option", "block_size": "option", "flash_attn_version": "option"}
    plan: Any = SimpleNamespace(
        pack=SimpleNamespace(
            fields={
                **{n: SimpleNamespace(kind=k) for n, k in kinds.items()},
                "gpu_arch": SimpleNamespace(kind="fact"),
            }
        )
    )
    searched = [repair(attention_backend="FLASHINFER"), repair(gpu_arch="sm90")]
    kept = givenrepairs.with_given_repairs(searched, plan, {}, None, ([], ["r"]), limit=3)
    assert [r.set for r in kept] == [
        {"attention_backend": "FLASHINFER"},
        {"block_size": 128},
        {"gpu_arch": "sm90"},
    ]
    everything = givenrepairs.with_given_repairs(searched, plan, {}, None, ([], ["r"]), limit=5)
    assert len(everything) == 4 and everything[-1].set == {"gpu_arch": "sm90"}
