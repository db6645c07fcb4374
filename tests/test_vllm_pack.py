"""The vLLM pack on the same engine: explanation, repair, choices, count, matrix and diff work on it.

Each test asks the CLI (JSON documents) a question whose answer vLLM 0.33.0 fixes, so the
features are shown to work on a second launcher's pack, not only to run.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import constraints
from solver import Unsatisfiable, load_pack, resolve
from solver.cli.commands import main

LLAMA = {"platform": "cuda", "architecture": "LlamaForCausalLM", "num_attention_heads": 32}
L40S_FP8_KV = {**LLAMA, "gpu_arch": "sm89", "kv_cache_dtype": "fp8"}
LLAMA_CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "hidden_size": 4096,
    "torch_dtype": "bfloat16",
}


def sets(**values: Any) -> list[str]:
    """`--set NAME=VALUE` arguments."""
    return [arg for name, value in values.items() for arg in ("--set", f"{name}={value}")]


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    code = main([argv[0], "--json", *argv[1:]])
    return code, json.loads(capsys.readouterr().out)


def conflict_rules(doc: dict[str, Any]) -> set[str]:
    return {rule["id"] for rule in doc["conflict"]["rules"]}


@pytest.fixture
def llama_dir(tmp_path: Path) -> Path:
    model = tmp_path / "llama"
    model.mkdir()
    (model / "config.json").write_text(json.dumps(LLAMA_CONFIG))
    return model


def test_the_pack_is_shipped() -> None:
    assert "vllm" in constraints.shipped_packs()
    pack = load_pack("vllm")
    assert pack.name == "vllm" and pack.version.startswith("0.33.0")


def test_why_explains_the_selector_skipping_flash_attention(capsys: pytest.CaptureFixture[str]) -> None:
    # L40S + FP8 KV cache: FlashAttention 2 cannot read it, so vLLM's list moves on to FlashInfer.
    argv = ["why", "--pack", "vllm", *sets(**L40S_FP8_KV), "attention_backend"]
    code, doc = run(argv, capsys)
    assert code == 0 and doc["value"] == "FLASHINFER"
    text = json.dumps(doc)
    assert "attention-priority" in text and "fa-fp8-kv-needs-fa3-hopper-or-fa4-blackwell" in text


def test_conflict_names_the_rule_and_a_repair_that_resolves(capsys: pytest.CaptureFixture[str]) -> None:
    # Heads not divisible by the tensor-parallel size: the repair changes -tp, and it resolves.
    argv = ["resolve", "--pack", "vllm", *sets(**LLAMA, gpu_arch="sm90", tensor_parallel_size=3)]
    code, doc = run(argv, capsys)
    assert code == 1 and doc["status"] == "conflict"
    assert "heads-divisible-by-tp" in conflict_rules(doc)
    repair = doc["repairs"][0]
    assert "tensor_parallel_size" in {*repair["set"], *repair["unset"]}
    facts = {**LLAMA, "gpu_arch": "sm90"}
    options = {name: value for name, value in repair["set"].items() if name not in facts}
    assert resolve(load_pack("vllm"), options, facts).values["tensor_parallel_size"] != 3


@pytest.mark.parametrize("command", ["check", "resolve"])
def test_an_unknown_gpu_count_bounds_nothing_and_is_never_chosen(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # -tp 16 with the GPU count not given: the count is assumed unknown (0) and said so; it is
    # never a count picked to fit the request (it was 16, "the first value that works").
    code, doc = run(
        [command, "--pack", "vllm", *sets(**LLAMA, gpu_arch="sm90", tensor_parallel_size=16)], capsys
    )
    assert code == 0 and doc["values"]["tensor_parallel_size"] == 16
    assert doc["values"]["num_gpus"] == 0
    assert {"field": "num_gpus", "value": 0} in [
        {k: a[k] for k in ("field", "value")} for a in doc["assumed"]
    ]
    # A known count bounds the world size: a conflict naming the rule, -tp kept as typed.
    argv = [command, "--pack", "vllm", *sets(**LLAMA, gpu_arch="sm90", tensor_parallel_size=16, num_gpus=8)]
    code, doc = run(argv, capsys)
    assert code == 1 and doc["status"] == "conflict"
    assert "world-size-within-8-gpus" in conflict_rules(doc)


def test_choices_list_the_backends_an_fp8_kv_cache_leaves(capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = run(["choices", "--pack", "vllm", *sets(**L40S_FP8_KV)], capsys)
    assert code == 0
    backend = doc["choices"]["attention_backend"]
    assert {"FLASHINFER", "TRITON_ATTN"} <= set(backend["possible"])
    # Neither reads an FP8 KV cache on SM89, and each exclusion names its rule.
    assert "fa-fp8-kv-needs-fa3-hopper-or-fa4-blackwell" in backend["excluded"]["FLASH_ATTN"]["rules"]
    assert "flex-kv-dtype" in backend["excluded"]["FLEX_ATTENTION"]["rules"]


def test_count_splits_by_backend_and_adds_up(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["count", "--pack", "vllm", *sets(**L40S_FP8_KV), "--by", "attention_backend"]
    code, doc = run(argv, capsys)
    assert code == 0 and doc["status"] == "counted"
    by = {k: int(v) for k, v in doc["by"]["attention_backend"].items()}
    assert sum(by.values()) == int(doc["count"])
    assert by.get("FLASH_ATTN", 0) == 0 and by["FLASHINFER"] > 0


def test_matrix_of_gpu_and_backend_for_deepseek(capsys: pytest.CaptureFixture[str]) -> None:
    facts = sets(
        platform="cuda", architecture="DeepseekV3ForCausalLM", num_attention_heads=128, tensor_parallel_size=8
    )
    code, doc = run(["matrix", "--pack", "vllm", *facts, "gpu_arch", "attention_backend"], capsys)
    assert code == 0
    cells = {(c["row"], c["column"]): c for c in doc["cells"]}
    # FlashMLA's dense kernel is Hopper-only; CUTLASS MLA is B200/B300-only; MLA needs an MLA backend.
    assert cells[("sm90", "FLASHMLA")]["ok"] and not cells[("sm100", "FLASHMLA")]["ok"]
    assert cells[("sm100", "CUTLASS_MLA")]["ok"] and not cells[("sm90", "CUTLASS_MLA")]["ok"]
    assert "backend-needs-hopper" in cells[("sm100", "FLASHMLA")]["reason"]["rules"]
    assert not cells[("sm90", "FLASH_ATTN")]["ok"]


def test_diff_of_two_pack_versions_names_the_changed_rule(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A pack edit that lets FLEX_ATTENTION read an FP8 KV cache: the diff names the rule.
    old = constraints.pack_directory("vllm")
    assert old is not None
    new = tmp_path / "vllm-edited"
    shutil.copytree(old, new)
    attention = new / "attention.toml"
    text = attention.read_text()
    edited = text.replace(
        'require = "kv_cache_dtype in KV_UNQUANTIZED"\nbecause = "FlexAttention',
        'require = "kv_cache_dtype in KV_UNQUANTIZED or kv_cache_dtype in KV_FP8"\nbecause = "FlexAttention',
    )
    assert edited != text
    attention.write_text(edited)
    code, doc = run(["diff", str(old), str(new), *sets(**L40S_FP8_KV)], capsys)
    assert code == 0 and doc["status"] == "diffed"
    assert "flex-kv-dtype" in json.dumps(doc)


def test_the_resolution_reports_vllm_overrides_as_adjustments() -> None:
    facts = {**LLAMA, "gpu_arch": "sm100"}
    res = resolve(load_pack("vllm"), {"attention_backend": "FLASH_ATTN", "flash_attn_version": 3}, facts)
    assert res.values["flash_attn_version"] == 4
    assert [(a.field, a.requested, a.rule) for a in res.adjustments] == [
        ("flash_attn_version", 3, "fa3-on-blackwell-is-fa4")
    ]


def test_vllm_serve_command_line_with_aliases(llama_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # `vllm serve MODEL` with vLLM's short aliases; the model's config.json gives the heads.
    serve = ["check", "--pack", "vllm", "--set", "gpu_arch=sm89", "--", "vllm", "serve", str(llama_dir)]
    code, doc = run([*serve, "-tp", "2", "-pp", "2", "-dp", "2", "--kv-cache-dtype", "fp8"], capsys)
    assert code == 0, doc
    values = doc["values"]
    assert [values[f"{kind}_parallel_size"] for kind in ("tensor", "pipeline", "data")] == [2, 2, 2]
    assert values["attention_backend"] == "FLASHINFER" and values["num_attention_heads"] == 32
    # -tp 3 does not divide 32 heads: a conflict naming the rule, as vLLM's refusal would.
    code, doc = run([*serve, "-tp", "3"], capsys)
    assert code == 1 and "heads-divisible-by-tp" in conflict_rules(doc)
    # -q on an unquantized checkpoint: online FP8 is allowed, AWQ needs an AWQ checkpoint.
    code, doc = run([*serve, "-q", "awq"], capsys)
    assert code == 1 and "quant-unquantized-checkpoint-online-only" in conflict_rules(doc)
    code, doc = run([*serve, "-q", "fp8"], capsys)
    assert code == 0 and doc["values"]["quantization"] == "fp8"


def test_argv_output_is_a_vllm_serve_command(llama_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "resolve",
            "--pack",
            "vllm",
            "--set",
            "gpu_arch=sm89",
            "--format",
            "argv",
            "--minimal",
            "--",
            "vllm",
            "serve",
            str(llama_dir),
            "--kv-cache-dtype",
            "fp8",
        ]
    )
    out = capsys.readouterr().out.strip()
    assert code == 0
    assert out.startswith(f"vllm serve {llama_dir}") and "--kv-cache-dtype fp8" in out


QWEN3_NEXT = {
    "platform": "cuda",
    "architecture": "Qwen3NextForCausalLM",
    "num_attention_heads": 16,
    "num_gpus": 8,
    "checkpoint_quant": "none",
}


def predicted(options: dict[str, Any], **facts: Any) -> Any:
    """What vLLM does with the request as typed (the oracle replay's mode)."""
    return resolve(load_pack("vllm"), options, {**QWEN3_NEXT, **facts}, reasons=False, predict=True)


@pytest.mark.parametrize(
    ("gpu_arch", "options", "block_size"),
    [
        # vLLM 0.33.0 (oracle records V2718-0026, -0048): any --block-size below the mamba state
        # becomes the smallest multiple of itself that holds it, not only 16 ... 256.
        ("sm90", {"block_size": 272}, 544),
        ("sm110", {"block_size": 48, "data_parallel_size": 8}, 576),
        ("sm90", {"block_size": 48, "tensor_parallel_size": 4, "kv_cache_dtype": "fp8"}, 576),
        # a size that holds the 16-bit state is kept; with an fp8 cache it is raised
        ("sm90", {"block_size": 544}, 544),
        ("sm90", {"block_size": 544, "kv_cache_dtype": "fp8"}, 1088),
        # SM75 runs float16 whatever the checkpoint: the alignment is not tested under bfloat16
        # (V6161-0141, V11002-0258, V2020001-0055; an FP8 cache there is kind 28, refused)
        ("sm75", {"block_size": 128}, 640),
        ("sm75", {"block_size": 32}, 544),
    ],
)
def test_qwen3_next_user_block_sizes_are_raised_as_vllm_raises_them(
    gpu_arch: str, options: dict[str, Any], block_size: int
) -> None:
    resolution = predicted(options, gpu_arch=gpu_arch)
    assert resolution.values["block_size"] == block_size
    changed = [a for a in resolution.adjustments if a.field == "block_size"]
    assert bool(changed) == (block_size != options["block_size"])


@pytest.mark.parametrize(
    ("options", "backend", "block_size"),
    [
        # Thor (SM110) runs FA2 by default: FLASH_ATTN's 16-token kernel blocks, 544 at -tp 1
        ({}, "FLASH_ATTN", 544),
        # FA3 or FA4 typed: FA4's head-size-256 kernel (compute capability 10.x and 11.x) and its
        # 128-token blocks, though vLLM reports FA2 (V1620003-0002, R16P2-0027, R17P1-0112, -0192)
        ({"flash_attn_version": 4}, "FLASH_ATTN", 640),
        ({"flash_attn_version": 3, "attention_backend": "FLASH_ATTN"}, "FLASH_ATTN", 640),
        (
            {"flash_attn_version": 4, "attention_backend": "FLASH_ATTN", "tensor_parallel_size": 4},
            "FLASH_ATTN",
            384,
        ),
        # a typed size FA4's kernel refuses: vLLM's selector skips FLASH_ATTN (R17P1-0137)
        ({"flash_attn_version": 4, "block_size": 16}, "FLASHINFER", 544),
        # FA2 typed: FA2's 16-token blocks, and FLASH_ATTN keeps a typed size off 128
        # (KNOWN_DIFFERENCES 20, R17P1-0096, -0105, -0107; pack 0.33.0+12 and +13 read it as FA4)
        ({"flash_attn_version": 2}, "FLASH_ATTN", 544),
        ({"flash_attn_version": 2, "attention_backend": "FLASH_ATTN"}, "FLASH_ATTN", 544),
        ({"flash_attn_version": 2, "block_size": 16}, "FLASH_ATTN", 544),
        ({"flash_attn_version": 2, "block_size": 272}, "FLASH_ATTN", 544),
    ],
)
def test_thor_runs_fa4s_head_256_kernel_when_fa3_or_fa4_is_typed(
    options: dict[str, Any], backend: str, block_size: int
) -> None:
    resolution = predicted(options, gpu_arch="sm110")
    assert (resolution.values["attention_backend"], resolution.values["block_size"]) == (backend, block_size)
    assert resolution.values["flash_attn_version"] == 2  # what vLLM reports at head size 256


@pytest.mark.parametrize(
    ("gpu_arch", "options", "block_size"),
    [
        # FLASH_ATTN pinned (FLASHINFER is the first of Qwen3-Next's list on B200/B300)
        ("sm100", {}, 640),  # FA4 by default: its head-size-256 kernel's 128-token blocks
        ("sm100", {"flash_attn_version": 4}, 640),
        ("sm103", {"flash_attn_version": 3}, 640),  # 3 runs as 4 on 10.x
        # FA2 typed: its 16-token blocks (KNOWN_DIFFERENCES 20: R17P1-, R11P5-0045; 640 before)
        ("sm100", {"flash_attn_version": 2}, 544),
        ("sm103", {"flash_attn_version": 2, "tensor_parallel_size": 4}, 272),
        # a typed size FA2 takes as it is and aligns, where FA4's kernel refuses it (R12P1-0012)
        ("sm100", {"flash_attn_version": 2, "block_size": 16}, 544),
    ],
)
def test_b200_sizes_the_block_for_the_fa_version_typed(
    gpu_arch: str, options: dict[str, Any], block_size: int
) -> None:
    resolution = predicted({"attention_backend": "FLASH_ATTN", **options}, gpu_arch=gpu_arch)
    assert resolution.values["block_size"] == block_size


# FLASH_ATTN_DIFFKV asks _get_fa4_hd256_block_size with its class's V head size (128 until a model sets
# it), so vLLM's configuration keeps Qwen3-Next's 544 (R18P1-0108...0119); after model load the layers'
# spec carries V head size 256, FA4's kernel asks for 128-token pages, and select_common_block_size
# raises "No common block size for 544" (round 20's probe past the oracle, KNOWN_DIFFERENCES 26).
@pytest.mark.parametrize(
    ("gpu_arch", "options"),
    [
        ("sm100", {}),
        ("sm100", {"flash_attn_version": 4}),
        ("sm100", {"flash_attn_version": 4, "block_size": 16}),
        ("sm103", {"tensor_parallel_size": 4, "block_size": 16}),
        ("sm110", {"flash_attn_version": 4}),
        ("sm110", {"flash_attn_version": 3, "block_size": 16}),
    ],
)
def test_flash_attn_diffkv_off_128_token_blocks_fails_at_kv_cache_set_up(
    gpu_arch: str, options: dict[str, Any]
) -> None:
    with pytest.raises(Unsatisfiable):
        predicted({"attention_backend": "FLASH_ATTN_DIFFKV", **options}, gpu_arch=gpu_arch)


@pytest.mark.parametrize(
    ("gpu_arch", "options", "block_size"),
    [
        ("sm100", {"flash_attn_version": 2}, 544),  # FA2: 16-token kernel blocks
        ("sm110", {}, 544),  # Thor's default FA2
        ("sm100", {"block_size": 128}, 640),  # a multiple of 128 holding the state
        ("sm100", {"block_size": 160}, 640),
        ("sm103", {"tensor_parallel_size": 8, "block_size": 128}, 256),
    ],
)
def test_flash_attn_diffkv_runs_with_fa2_or_128_token_blocks(
    gpu_arch: str, options: dict[str, Any], block_size: int
) -> None:
    resolution = predicted({"attention_backend": "FLASH_ATTN_DIFFKV", **options}, gpu_arch=gpu_arch)
    assert resolution.values["block_size"] == block_size


@pytest.mark.parametrize(
    ("gpu_arch", "options"),
    [
        ("sm100", {"flash_attn_version": 4}),
        ("sm100", {"flash_attn_version": 4, "block_size": 16}),
        ("sm110", {"flash_attn_version": 3, "block_size": 16}),
    ],
)
def test_a_refusal_after_an_adjustment_names_the_rule_that_refuses(
    gpu_arch: str, options: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """vLLM lowers a typed FA3/FA4 to FA2 for Qwen3-Next's head size 256 whatever else then fails;
    FLASH_ATTN_DIFFKV then fails on its block. The conflict named the adjusting rule
    `fa-large-heads-on-blackwell-is-fa2` (a typed FA4 "cannot hold" with head size 256) and hid the
    block rule, `check` quoted the head-size rule's because, and only "unset both" was offered
    (ff88a15)."""
    with pytest.raises(Unsatisfiable) as raised:
        predicted({"attention_backend": "FLASH_ATTN_DIFFKV", **options}, gpu_arch=gpu_arch)
    rules = {r.id for r in raised.value.conflict.rules}
    assert "block-size-diffkv-fa4-head-256" in rules
    assert "fa-large-heads-on-blackwell-is-fa2" not in rules
    assert raised.value.adjusted["flash_attn_version"][0] == options["flash_attn_version"]
    # one change: the backend (ff88a15 offered only "unset the backend and the FA version")
    assert [r for r in raised.value.repairs if len(r.set) + len(r.unset) == 1]
    argv = [f"--set={n}={v}" for n, v in {**QWEN3_NEXT, "gpu_arch": gpu_arch, **options}.items()]
    assert main(["check", "--pack", "vllm", *argv, "--set=attention_backend=FLASH_ATTN_DIFFKV"]) == 1
    out = capsys.readouterr().out
    assert "No common block size" in out and "head_dim 256" not in out


def test_thor_with_fa4_typed_refuses_a_pinned_flash_attn_block_off_128() -> None:
    # R17P1-0129: "Selected backend FLASH_ATTN is not valid ... block_size not supported"; main
    # 7b8e94c aligned 16 to FA2's 544 and said ok
    options = {"flash_attn_version": 4, "attention_backend": "FLASH_ATTN", "block_size": 16}
    with pytest.raises(Unsatisfiable) as raised:
        predicted(options, gpu_arch="sm110")
    assert "block-size-fa4-head-256" in {r.id for r in raised.value.conflict.rules}


def test_auto_dtype_below_sm80_is_float16_before_the_checkpoint_dtype_is_known() -> None:
    assert predicted({}, gpu_arch="sm75").values["dtype"] == "float16"
    assert predicted({}, gpu_arch="sm75", model_dtype="float32").values["dtype"] == "float16"
    assert predicted({}, gpu_arch="sm90").values["dtype"] == "bfloat16"


@pytest.mark.parametrize(
    ("facts", "options", "rule"),
    [
        # V2718-0202: moonep runs bfloat16 models only (a float16 one is refused, not only a quantized one)
        (LLAMA | {"gpu_arch": "sm90"}, {"all2all_backend": "moonep", "dtype": "half"}, "moonep-bf16-only"),
        (LLAMA | {"gpu_arch": "sm75"}, {"all2all_backend": "moonep"}, "moonep-bf16-only"),
        # R31415-0243: FA4's head-256 kernel takes no FP8 KV cache on B200, FA2 none at all
        (
            QWEN3_NEXT | {"gpu_arch": "sm100"},
            {"attention_backend": "FLASH_ATTN", "kv_cache_dtype": "fp8_e4m3"},
            "fa-fp8-kv-needs-fa3-hopper-or-fa4-blackwell",
        ),
        # V1720002-0075: TRITON_FLASH_ATTN's causal route runs FA3 or FA4 only ("causal route
        # requires FlashAttention v3 or v4"); main 7b8e94c said ok to a typed FA2 on H100
        (
            QWEN3_NEXT | {"gpu_arch": "sm90"},
            {"attention_backend": "TRITON_FLASH_ATTN", "flash_attn_version": 2},
            "triton-flash-attn-needs-fa3-or-fa4",
        ),
        # R17P2-0066: and FlashAttention's FP8 check (FA3 on Hopper, FA4 only at head size 512)
        (
            QWEN3_NEXT | {"gpu_arch": "sm90"},
            {"attention_backend": "TRITON_FLASH_ATTN", "flash_attn_version": 4, "kv_cache_dtype": "fp8"},
            "fa-fp8-kv-needs-fa3-hopper-or-fa4-blackwell",
        ),
        # KNOWN_DIFFERENCES 28: Triton attention and Triton MLA read an FP8 KV cache with native FP8,
        # which needs SM89; vLLM's configuration and selection take it and the first layer built
        # raises (TritonAttentionImpl.__init__, executed with the oracle's mocks on an A100). Main
        # ff88a15 said ok to each: the pinned backend, gpt-oss's sinks (FlashInfer runs them on
        # Hopper and Blackwell only), a T4 (no FlashInfer), DeepSeek's TRITON_MLA, a per-token-head cache
        (
            LLAMA | {"gpu_arch": "sm80"},
            {"attention_backend": "TRITON_ATTN", "kv_cache_dtype": "fp8"},
            "triton-kv-dtype",
        ),
        (
            {
                "platform": "cuda",
                "architecture": "GptOssForCausalLM",
                "num_attention_heads": 64,
                "gpu_arch": "sm80",
            },
            {"kv_cache_dtype": "fp8_e5m2"},
            "triton-kv-dtype",
        ),
        (
            QWEN3_NEXT | {"gpu_arch": "sm75"},
            {"block_size": 16, "kv_cache_dtype": "fp8"},
            "triton-kv-dtype",
        ),
        (
            {
                "platform": "cuda",
                "architecture": "DeepseekV3ForCausalLM",
                "num_attention_heads": 128,
                "gpu_arch": "sm86",
            },
            {"tensor_parallel_size": 8, "kv_cache_dtype": "fp8"},
            "mla-kv-dtype",
        ),
        (
            LLAMA | {"gpu_arch": "sm86"},
            {"attention_backend": "TRITON_ATTN", "kv_cache_dtype": "fp8_per_token_head"},
            "triton-kv-dtype",
        ),
        # KNOWN_DIFFERENCES 30: HPC_ATTN's Impl runs 4 or 8 query heads per KV head on a GPU (Qwen2's
        # 7; Llama 4 at -tp 8: 5 heads and one replicated KV head), executed on H100; main ff88a15 said ok
        (
            {
                "platform": "cuda",
                "architecture": "Qwen2ForCausalLM",
                "num_attention_heads": 28,
                "gpu_arch": "sm90",
            },
            {"attention_backend": "HPC_ATTN"},
            "hpc-attn-head-size",
        ),
        (
            {
                "platform": "cuda",
                "architecture": "Llama4ForConditionalGeneration",
                "num_attention_heads": 40,
                "gpu_arch": "sm90",
            },
            {"attention_backend": "HPC_ATTN", "tensor_parallel_size": 8},
            "hpc-attn-head-size",
        ),
        # KNOWN_DIFFERENCES 29: an fp8_e5m2 cache over a checkpoint whose quantization config gives
        # the attention layers e4m3 KV scales (Fp8Config, ModelOpt FP8 / NVFP4 / MXFP8, ModelOpt mixed
        # with a KV scheme): vLLM's configuration and selection take it and the first layer built
        # raises in _init_kv_cache_quant (executed with the oracle's mocks); main 595b19b said ok.
        # Only FLASHINFER, TRITON_ATTN and TRITON_FLASHINFER store fp8_e5m2, so unpinned no backend is left
        (
            LLAMA | {"gpu_arch": "sm90", "checkpoint_quant": "fp8"},
            {"kv_cache_dtype": "fp8_e5m2"},
            "flashinfer-kv-dtype",
        ),
        (
            LLAMA
            | {"gpu_arch": "sm90", "checkpoint_quant": "modelopt_fp8", "checkpoint_kv_cache_quant": "fp8"},
            {"attention_backend": "TRITON_ATTN", "kv_cache_dtype": "fp8_e5m2"},
            "triton-kv-dtype",
        ),
        (
            LLAMA | {"gpu_arch": "sm100", "checkpoint_quant": "modelopt_fp4"},
            {"attention_backend": "FLASHINFER", "kv_cache_dtype": "fp8_e5m2"},
            "flashinfer-kv-dtype",
        ),
        (
            QWEN3_NEXT | {"gpu_arch": "sm100", "checkpoint_quant": "modelopt_mxfp8"},
            {"kv_cache_dtype": "fp8_e5m2", "tensor_parallel_size": 4},
            "triton-kv-dtype",
        ),
        (
            QWEN3_NEXT
            | {"gpu_arch": "sm100", "checkpoint_quant": "modelopt_mixed", "checkpoint_kv_cache_quant": "fp8"},
            {"attention_backend": "TRITON_FLASHINFER", "kv_cache_dtype": "fp8_e5m2"},
            "triton-flashinfer-kv-dtype",
        ),
        # and where the method typed gives them one whatever the checkpoint: a typed deepseek_v4_fp8
        # (an Fp8Config) over an unquantized checkpoint raises there too (executed on H100 and B200
        # with the probe); pack 0.33.0+19 read the checkpoint alone and said ok
        (
            LLAMA | {"gpu_arch": "sm90", "checkpoint_quant": "none"},
            {"quantization": "deepseek_v4_fp8", "kv_cache_dtype": "fp8_e5m2"},
            "flashinfer-kv-dtype",
        ),
        (
            LLAMA | {"gpu_arch": "sm100", "checkpoint_quant": "none"},
            {
                "quantization": "deepseek_v4_fp8",
                "attention_backend": "TRITON_ATTN",
                "kv_cache_dtype": "fp8_e5m2",
            },
            "triton-kv-dtype",
        ),
        # a typed --quantization humming over a ModelOpt MXFP8 checkpoint: HummingConfig reads the
        # checkpoint's config_groups, which ModelOpt's export writes for FP8 and NVFP4 but not for
        # MXFP8; the first layer built raises KeyError 'config_groups' (executed on H100 and B200
        # with the layer probe and ModelOpt's export form, round 24); pack 0.33.0+20 said ok
        (
            LLAMA | {"gpu_arch": "sm100", "checkpoint_quant": "modelopt_mxfp8"},
            {"quantization": "humming"},
            "quant-humming-modelopt-mxfp8-no-config-groups",
        ),
        # KNOWN_DIFFERENCES 31: an NVFP4 KV cache on FlashInfer split by decode context parallelism
        # off B200/B300 (FlashAttention-2's NVFP4 prefill): the selector takes it, the metadata
        # builder raises at KV-cache init (executed on A10, H100 and RTX PRO 6000 with the DCP group
        # stood in for); main ce45aae said ok, pinned or not (no other backend stores NVFP4)
        (
            LLAMA | {"gpu_arch": "sm90"},
            {"kv_cache_dtype": "nvfp4", "decode_context_parallel_size": 2, "tensor_parallel_size": 16},
            "flashinfer-nvfp4-kv-on-fa2",
        ),
        (
            LLAMA | {"gpu_arch": "sm120"},
            {
                "attention_backend": "FLASHINFER",
                "kv_cache_dtype": "nvfp4",
                "decode_context_parallel_size": 2,
                "tensor_parallel_size": 16,
            },
            "flashinfer-nvfp4-kv-on-fa2",
        ),
    ],
)
def test_requests_vllm_refuses_are_conflicts(
    facts: dict[str, Any], options: dict[str, Any], rule: str
) -> None:
    with pytest.raises(Unsatisfiable) as raised:
        resolve(load_pack("vllm"), options, facts, reasons=False, predict=True)
    assert rule in {r.id for r in raised.value.conflict.rules}


@pytest.mark.parametrize(
    ("facts", "options"),
    [
        # 4 query heads per KV head on each GPU: Llama (32/8), Qwen3 at -tp 8 (4 heads, one KV head)
        (LLAMA | {"gpu_arch": "sm90"}, {"attention_backend": "HPC_ATTN"}),
        (
            {
                "platform": "cuda",
                "architecture": "Qwen3ForCausalLM",
                "num_attention_heads": 32,
                "gpu_arch": "sm90",
            },
            {"attention_backend": "HPC_ATTN", "tensor_parallel_size": 8},
        ),
        # an fp8_e5m2 cache where the checkpoint's config gives the attention layers no KV-cache
        # method (KNOWN_DIFFERENCES 29, executed): AWQ, compressed-tensors without a
        # kv_cache_scheme, ModelOpt mixed precision without a KV scheme, an online --quantization
        # fp8 over an unquantized checkpoint
        (LLAMA | {"gpu_arch": "sm90", "checkpoint_quant": "awq"}, {"kv_cache_dtype": "fp8_e5m2"}),
        (
            LLAMA | {"gpu_arch": "sm90", "checkpoint_quant": "compressed-tensors"},
            {"kv_cache_dtype": "fp8_e5m2"},
        ),
        (
            LLAMA | {"gpu_arch": "sm90", "checkpoint_quant": "modelopt_mixed"},
            {"kv_cache_dtype": "fp8_e5m2"},
        ),
        (
            LLAMA | {"gpu_arch": "sm90", "checkpoint_quant": "none"},
            {"quantization": "fp8", "kv_cache_dtype": "fp8_e5m2"},
        ),
        # a typed --quantization humming over an FP8 checkpoint: HummingConfig gives attention no
        # KV-cache method, so the layer builds (executed on H100 with the probe, FP8 block and
        # per-tensor); pack 0.33.0+19 read the checkpoint alone and refused it
        (
            LLAMA | {"gpu_arch": "sm90", "checkpoint_quant": "fp8"},
            {"quantization": "humming", "kv_cache_dtype": "fp8_e5m2"},
        ),
        (
            LLAMA | {"gpu_arch": "sm90", "checkpoint_quant": "fp8"},
            {"quantization": "humming", "attention_backend": "TRITON_ATTN", "kv_cache_dtype": "fp8_e5m2"},
        ),
        # ... and over ModelOpt FP8 and NVFP4 checkpoints as ModelOpt exports them (config_groups
        # targeting Linear): the layers build (executed, round 24; the harness's flat templates
        # have no config_groups and fail, KNOWN_DIFFERENCES 29)
        (
            LLAMA
            | {"gpu_arch": "sm90", "checkpoint_quant": "modelopt_fp8", "checkpoint_kv_cache_quant": "fp8"},
            {"quantization": "humming"},
        ),
        (LLAMA | {"gpu_arch": "sm100", "checkpoint_quant": "modelopt_fp4"}, {"quantization": "humming"}),
        # an NVFP4 cache split by DCP on B200, where FlashInfer reads it through TensorRT-LLM (executed)
        (
            LLAMA | {"gpu_arch": "sm100"},
            {"kv_cache_dtype": "nvfp4", "decode_context_parallel_size": 2, "tensor_parallel_size": 16},
        ),
    ],
)
def test_what_vllm_builds_the_layers_of_is_taken(facts: dict[str, Any], options: dict[str, Any]) -> None:
    resolve(load_pack("vllm"), options, facts, reasons=False, predict=True)


@pytest.mark.parametrize(
    ("gpu_arch", "options", "backend"),
    [
        # FlashInfer reads an FP8 cache on an A100, so vLLM never reaches TRITON_ATTN there; from SM89
        # on Triton reads it; a per-token-head int8 cache needs no native FP8
        ("sm80", {"kv_cache_dtype": "fp8"}, "FLASHINFER"),
        ("sm89", {"attention_backend": "TRITON_ATTN", "kv_cache_dtype": "fp8"}, "TRITON_ATTN"),
        (
            "sm80",
            {"attention_backend": "TRITON_ATTN", "kv_cache_dtype": "int8_per_token_head"},
            "TRITON_ATTN",
        ),
    ],
)
def test_an_fp8_cache_below_sm89_runs_where_no_triton_kernel_reads_it(
    gpu_arch: str, options: dict[str, Any], backend: str
) -> None:
    resolution = resolve(
        load_pack("vllm"), options, LLAMA | {"gpu_arch": gpu_arch}, reasons=False, predict=True
    )
    assert resolution.values["attention_backend"] == backend


@pytest.mark.parametrize(
    ("tp", "options", "block_size"),
    [
        # V145014-0113: a ModelOpt FP8 checkpoint's KV scheme is the cache vLLM runs with
        # --kv-cache-dtype unset, so the block is raised for an FP8 cache (272 at -tp 8), not for
        # the 16-bit one a free search could pick (144, which the FP8 cache then refused)
        (8, {"block_size": 16}, 272),
        (4, {"block_size": 272}, 544),
        (1, {"block_size": 48}, 1104),
        # a typed 16-bit cache is the user's: the 16-bit answer
        (8, {"block_size": 16, "kv_cache_dtype": "bfloat16"}, 144),
    ],
)
def test_a_checkpoints_fp8_kv_scheme_raises_the_block_as_vllm_does(
    tp: int, options: dict[str, Any], block_size: int
) -> None:
    fp8_kv = {"checkpoint_quant": "modelopt_fp8", "checkpoint_kv_cache_quant": "fp8"}
    resolution = predicted({"tensor_parallel_size": tp, **options}, gpu_arch="sm89", **fp8_kv)
    assert resolution.values["block_size"] == block_size
    assert [a.field for a in resolution.adjustments] == ["block_size"]


@pytest.mark.parametrize(
    ("options", "block_size"),
    [
        # R12P3-0058: at -tp 16 an NVFP4 cache holds the mamba state from 239 tokens
        ({"block_size": 128}, 256),
        ({"block_size": 16}, 240),
        ({"block_size": 48}, 240),
        ({}, 240),
    ],
)
def test_qwen3_next_at_tp16_with_an_nvfp4_cache(options: dict[str, Any], block_size: int) -> None:
    request = {"tensor_parallel_size": 16, "kv_cache_dtype": "nvfp4", **options}
    assert predicted(request, gpu_arch="sm100", num_gpus=16).values["block_size"] == block_size


@pytest.mark.parametrize(
    ("options", "block_size"),
    [
        # R15P1- (vLLM 0.33.0 on H100, 16 GPUs): the mamba state is kept in the model dtype, so with
        # --dtype float32 and a typed KV-cache dtype the block holds twice the tokens (the
        # 16-bit answers of half the -tp; V1420002-0112 is the first row)
        ({"tensor_parallel_size": 4, "kv_cache_dtype": "fp8_e5m2"}, 1072),
        ({"tensor_parallel_size": 1, "kv_cache_dtype": "fp8"}, 2144),
        ({"tensor_parallel_size": 2, "kv_cache_dtype": "int8_per_token_head"}, 2112),
        ({"tensor_parallel_size": 16, "kv_cache_dtype": "fp8"}, 272),
        ({"tensor_parallel_size": 4, "kv_cache_dtype": "fp8", "block_size": 544}, 1088),
        ({"tensor_parallel_size": 8, "kv_cache_dtype": "fp8", "block_size": 256}, 768),
        ({"tensor_parallel_size": 1, "kv_cache_dtype": "int8_per_token_head", "block_size": 48}, 2112),
        ({"tensor_parallel_size": 1, "kv_cache_dtype": "fp8", "block_size": 2048}, 4096),
        # R16P1-0006, -0055, -0070: a typed size that holds the 16-bit state but not the float32 one
        # is raised to twice itself (the per-size adjustments read QN_F32_STATE), not refused
        ({"tensor_parallel_size": 16, "kv_cache_dtype": "fp8", "block_size": 256}, 512),
        ({"tensor_parallel_size": 8, "kv_cache_dtype": "int8_per_token_head", "block_size": 384}, 768),
        ({"tensor_parallel_size": 16, "kv_cache_dtype": "int4_per_token_head", "block_size": 272}, 544),
        # an auto cache is float32 too: the 16-bit answer
        ({"tensor_parallel_size": 1, "kv_cache_dtype": "auto"}, 544),
    ],
)
def test_qwen3_next_in_float32_holds_twice_the_tokens(options: dict[str, Any], block_size: int) -> None:
    resolution = predicted({"dtype": "float32", **options}, gpu_arch="sm90", num_gpus=16)
    assert resolution.values["block_size"] == block_size
    assert resolution.values["attention_backend"] == "TRITON_ATTN"


def test_two_typed_values_that_each_need_an_adjustment_are_both_adjusted() -> None:
    # V1520002-0173 (vLLM 0.33.0 on B300): FA3 typed for Qwen3-Next's head size 256 falls back to
    # FA2, and --block-size 256 under an fp8 cache is raised to 1280; vLLM then runs FLASHINFER.
    # Each typed value broke the other's adjustment: the request was refused.
    request = {
        "flash_attn_version": 3,
        "tensor_parallel_size": 1,
        "block_size": 256,
        "kv_cache_dtype": "fp8_e5m2",
    }
    resolution = predicted(request, gpu_arch="sm103")
    assert resolution.values["attention_backend"] == "FLASHINFER"
    assert resolution.values["block_size"] == 1280
    assert {(a.field, a.requested, a.resolved) for a in resolution.adjustments} == {
        ("flash_attn_version", 3, 2),
        ("block_size", 256, 1280),
    }


@pytest.mark.parametrize(
    ("facts", "queries_per_kv"),
    [
        ({"architecture": "LlamaForCausalLM"}, 4),
        # a Llama-3-70B-sized model: 64 heads over the family's 8 KV heads (the family's 4 before)
        ({"architecture": "LlamaForCausalLM", "num_attention_heads": 64}, 8),
        ({"architecture": "other", "num_attention_heads": 40, "num_key_value_heads": 8}, 5),
        ({"architecture": "DeepseekV3ForCausalLM"}, 1),
    ],
)
def test_queries_per_kv_follows_the_head_counts(facts: dict[str, Any], queries_per_kv: int) -> None:
    resolution = resolve(
        load_pack("vllm"), {}, {"platform": "cuda", "gpu_arch": "sm90", **facts}, reasons=False
    )
    assert resolution.values["num_queries_per_kv"] == queries_per_kv


def test_a_typed_queries_per_kv_that_disagrees_with_the_heads_is_refused() -> None:
    facts = {**LLAMA, "gpu_arch": "sm90", "num_key_value_heads": 8, "num_queries_per_kv": 8}
    with pytest.raises(Unsatisfiable) as raised:
        resolve(load_pack("vllm"), {}, facts, reasons=False)
    assert "queries-per-kv-from-head-counts" in {r.id for r in raised.value.conflict.rules}


@pytest.mark.parametrize("typed", ["flash_attn", "Flash_Attn", "triton_attn"])
def test_attention_backend_names_are_read_in_any_case(typed: str, capsys: pytest.CaptureFixture[str]) -> None:
    # vLLM upper()s --attention-backend before the enum lookup (AttentionConfig.validate_backend_before)
    code, doc = run(
        ["check", "--pack", "vllm", *sets(**LLAMA, gpu_arch="sm90", attention_backend=typed)], capsys
    )
    assert code == 0 and doc["values"]["attention_backend"] == typed.upper()


def test_the_per_size_qwen3_next_rules_are_what_the_generator_writes() -> None:
    # block_size_user.toml is written from block_size.toml's mamba-state thresholds: an edit of
    # either alone (a threshold, an answer) leaves them disagreeing, as this says.
    import subprocess
    import sys

    script = Path(__file__).resolve().parent.parent / "benchmarks" / "vllm_block_size_rules.py"
    made = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    assert made.returncode == 0, made.stdout + made.stderr


@pytest.mark.parametrize(
    ("num_gpus", "options", "accepted"),
    [
        # R14P1-: vLLM 0.33.0 takes -pp 16 on 16 GPUs for every measured model (it was outside the
        # pack's domain: an input error) and refuses it on 8, or with -tp 2 (world size 32)
        (16, {"pipeline_parallel_size": 16}, True),
        (8, {"pipeline_parallel_size": 16}, False),
        (16, {"pipeline_parallel_size": 16, "tensor_parallel_size": 2}, False),
    ],
)
def test_pipeline_parallel_16_is_a_world_size_question(
    num_gpus: int, options: dict[str, Any], accepted: bool
) -> None:
    facts = LLAMA | {"gpu_arch": "sm90", "num_gpus": num_gpus}
    if accepted:
        assert (
            resolve(load_pack("vllm"), options, facts, reasons=False, predict=True).values[
                "pipeline_parallel_size"
            ]
            == 16
        )
        return
    with pytest.raises(Unsatisfiable) as raised:
        resolve(load_pack("vllm"), options, facts, reasons=False, predict=True)
    assert {r.id for r in raised.value.conflict.rules} & {
        "world-size-within-8-gpus",
        "world-size-within-16-gpus",
    }


@pytest.mark.parametrize(
    ("architecture", "options", "refused"),
    [
        # R14P2-: Qwen3-Next (mamba) with prefix caching on, vLLM's default, needs chunked prefill
        ("Qwen3NextForCausalLM", {"enable_chunked_prefill": False}, True),
        ("Qwen3NextForCausalLM", {"enable_chunked_prefill": False, "enable_prefix_caching": True}, True),
        ("Qwen3NextForCausalLM", {"enable_chunked_prefill": False, "enable_prefix_caching": False}, False),
        ("LlamaForCausalLM", {"enable_chunked_prefill": False}, False),
    ],
)
def test_a_mamba_models_prefix_caching_needs_chunked_prefill(
    architecture: str, options: dict[str, Any], refused: bool
) -> None:
    facts = QWEN3_NEXT | {"gpu_arch": "sm90", "architecture": architecture}
    if refused:
        with pytest.raises(Unsatisfiable) as raised:
            resolve(load_pack("vllm"), options, facts, reasons=False, predict=True)
        assert "mamba-prefix-caching-needs-chunked-prefill" in {r.id for r in raised.value.conflict.rules}
        return
    resolution = resolve(load_pack("vllm"), options, facts, reasons=False, predict=True)
    assert resolution.values["enable_chunked_prefill"] is False
    # vLLM logs that disabling chunked prefill is not officially supported
    assert "chunked-prefill-off-unsupported" in {w.rule for w in resolution.warnings}


def test_the_launch_commands_no_chunked_prefill_is_read(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["check", "--pack", "vllm", *sets(platform="cuda", gpu_arch="sm90"), "--set"]
    argv += ["architecture=Qwen3NextForCausalLM", "--", "vllm", "serve", "--no-enable-chunked-prefill"]
    code, doc = run(argv, capsys)
    assert code == 1 and "mamba-prefix-caching-needs-chunked-prefill" in conflict_rules(doc)


# A typed FA3/FA4 where vLLM 0.33.0 has no such kernel (KNOWN_DIFFERENCES 2): vLLM keeps no FA
# version, its selector still takes FLASH_ATTN, and FlashAttentionImpl.forward asserts "FlashAttention
# version not detected" at the start-up profile run. The records are the oracle's (V1920002-0000,
# -0078, -0167; R1520003-0199; R17P1-0156), which accepted them at the configuration stage.
FA3 = {"flash_attn_version": 3}
FA4 = {"flash_attn_version": 4}
FP8_KV_CHECKPOINT = {"checkpoint_quant": "modelopt_fp8", "checkpoint_kv_cache_quant": "fp8"}


@pytest.mark.parametrize(
    ("gpu_arch", "arch", "options", "facts"),
    [
        ("sm89", "Llama4ForConditionalGeneration", FA3, {}),
        ("sm120", "Qwen3MoeForCausalLM", {**FA4, "block_size": 544}, {}),
        ("sm89", "Qwen3NextForCausalLM", {**FA4, "quantization": "humming"}, {"checkpoint_quant": "awq"}),
        ("sm89", "LlamaForCausalLM", {**FA3, "attention_backend": "FLASH_ATTN"}, {}),
        ("sm120", "Qwen3NextForCausalLM", FA4, {}),
    ],
)
def test_a_flash_attention_version_without_kernels_is_refused(
    gpu_arch: str, arch: str, options: dict[str, Any], facts: dict[str, Any]
) -> None:
    request = {"platform": "cuda", "gpu_arch": gpu_arch, "architecture": arch, **facts}
    with pytest.raises(Unsatisfiable) as exc:
        resolve(load_pack("vllm"), options, request, reasons=False, predict=True)
    assert "fa-version-not-built" in {rule.id for rule in exc.value.conflict.rules}


# Where vLLM's selector passes FLASH_ATTN over (quantized cache, sinks, another backend pinned) the
# typed version is never read: vLLM runs, and so does the answer (the oracle's records of a typed
# FA3/FA4 on these GPUs: FLASHINFER for an fp8 cache, TRITON_ATTN for gpt-oss's sinks).
@pytest.mark.parametrize(
    ("gpu_arch", "arch", "options", "facts", "backend"),
    [
        ("sm89", "LlamaForCausalLM", {**FA3, "kv_cache_dtype": "fp8_e4m3"}, {}, "FLASHINFER"),
        ("sm89", "LlamaForCausalLM", FA4, FP8_KV_CHECKPOINT, "FLASHINFER"),
        ("sm86", "GptOssForCausalLM", FA3, {"checkpoint_quant": "mxfp4"}, "TRITON_ATTN"),
        ("sm80", "LlamaForCausalLM", {**FA4, "attention_backend": "TRITON_ATTN"}, {}, "TRITON_ATTN"),
        ("sm120", "LlamaForCausalLM", FA3, {}, "FLASH_ATTN"),  # runs as FA2
    ],
)
def test_a_flash_attention_version_vllm_never_reads_is_not_refused(
    gpu_arch: str, arch: str, options: dict[str, Any], facts: dict[str, Any], backend: str
) -> None:
    request = {"platform": "cuda", "gpu_arch": gpu_arch, "architecture": arch, **facts}
    resolution = resolve(load_pack("vllm"), options, request, reasons=False, predict=True)
    assert resolution.values["attention_backend"] == backend
