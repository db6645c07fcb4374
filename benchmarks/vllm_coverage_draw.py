"""Draw vLLM oracle scenarios over the parts of contract-vllm.md the harness's make_random.py never draws.

make_random.py draws five GPUs, eight GPUs per node, each model with its usual checkpoints and the
option values people usually type. This draws uniformly over the whole contract instead: every
compute capability the harness mocks (sm70 ... sm121), every node size, any checkpoint format on
any model template, and every value of every option's domain (all KV-cache dtypes, attention
backends, quantization methods, all-to-all and MoE backends, odd block and parallel sizes). The
output is the harness's input format (JSON lines for its oracle.py), so a draw runs with

    python benchmarks/vllm_coverage_draw.py --seed N --count 500 > draw.jsonl
    ORACLE_VLLM_MODELS=... venv/bin/python oracle.py < draw.jsonl > results.jsonl

and pairs up with the scenarios as `{"scenario", "vllm"}` records for differential_vllm.py.

`--themes attention,mla,...` draws by theme instead (round robin over the themes named): each
scenario types 2-5 options that decide one thing together (attention backend, KV-cache dtype,
block size and FA version; MLA backends with heads per GPU and DCP; the parallel sizes with EP,
EPLB, DBO and the all-to-all backend; MoE backends with quantization; every KV-cache dtype with a
pinned backend of either kind on Thor, RTX PRO 6000 and DGX Spark beside Hopper and B200/B300),
over the models and GPUs where they matter. A uniform draw rarely types two of them at once.

`--short` draws commands as users type them (the harness's make_random.py: its models, checkpoints,
0-3 flags and their usual values) on the GPUs make_random never mocks (SHORT_SMS: SM 75, 86, 89,
120, 121), the rest left to vLLM's defaults.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import oracle_vllm  # tests/ is not a package; the path is set just above

from solver import load_pack

SMS = [70, 75, 80, 86, 89, 90, 100, 103, 110, 120, 121]
NUM_GPUS = [1, 2, 4, 8, 16]
ARCHS = [
    "LlamaForCausalLM",
    "Qwen2ForCausalLM",
    "Qwen3ForCausalLM",
    "MixtralForCausalLM",
    "Qwen3MoeForCausalLM",
    "Glm4MoeForCausalLM",
    "DeepseekV2ForCausalLM",
    "DeepseekV3ForCausalLM",
    "DeepseekV32ForCausalLM",
    "GptOssForCausalLM",
    "Qwen3NextForCausalLM",
    "Llama4ForConditionalGeneration",
]
# The harness's checkpoint formats (its models.py), None for an unquantized checkpoint.
CHECKPOINTS: list[str | None] = [
    None,
    "fp8",
    "fp8_tensor",
    "awq",
    "gptq",
    "compressed_tensors_fp8",
    "compressed_tensors_w4a16",
    "modelopt_fp8",
    "modelopt_fp4",
    "mxfp8",
    "w4afp8_mixed",
    "mxfp4",
    "bitsandbytes",
]
# The options drawn: contract-vllm.md's, with the pack's domains (which spell the contract's) except
# where noted; auto values are drawn too (vLLM cannot tell them from an unset option).
# The contract's options as the replay reads them (tests/oracle_vllm.py), and the FA version.
OPTIONS = sorted(oracle_vllm.OPTIONS | {"flash_attn_version"})
OVERRIDES: dict[str, list[Any]] = {
    # every multiple of 16 is a pack value (hybrid alignment); draw the sizes users type, odd ones too
    "block_size": [1, 8, 16, 32, 48, 64, 128, 256, 272, 544, 1024],
    # `none` is a resolved value only: vLLM has no --quantization none
    "quantization": [],
    "dtype": ["auto"],
    "attention_backend": ["auto"],
}


def domains() -> dict[str, list[Any]]:
    """Each drawn option's values: the pack's domain, adjusted by OVERRIDES."""
    pack = load_pack("vllm")
    out: dict[str, list[Any]] = {}
    for name in OPTIONS:
        values = list(pack.fields[name].domain)
        if name == "block_size":
            values = OVERRIDES[name]
        elif name == "quantization":
            values = [v for v in values if v != "none"]
        else:
            values += [v for v in OVERRIDES.get(name, []) if v not in values]
        out[name] = values
    return out


def draw(rng: random.Random, values: dict[str, list[Any]], kv: list[str] | None = None) -> dict[str, Any]:
    """One scenario: a uniform GPU, node, model and checkpoint, and 1-4 options with uniform values
    (with `kv`, a KV-cache dtype of that list always, and 0-3 other options)."""
    sc = _machine_and_model(rng, "V", SMS, ARCHS, CHECKPOINTS)
    if rng.random() < 0.4:
        sc["num_gpus"] = rng.choice(NUM_GPUS)
    if rng.random() < 0.1:
        sc["facts"] = {"has_flashinfer": False}
    names = rng.sample(OPTIONS, rng.randint(1, 4))
    if kv:
        names = ["kv_cache_dtype", *[n for n in names if n != "kv_cache_dtype"][:3]]
    for name in names:
        _type(sc, name, rng.choice(kv if kv and name == "kv_cache_dtype" else values[name]))
    return sc


def _machine_and_model(
    rng: random.Random, section: str, sms: list[int], archs: list[str], checkpoints: list[str | None]
) -> dict[str, Any]:
    """A scenario's GPU, model and checkpoint (none typed yet): both draws' start."""
    sc: dict[str, Any] = {
        "section": section,
        "platform": "cuda",
        "sm": rng.choice(sms),
        "architecture": rng.choice(archs),
        "args": {},
    }
    ckpt = rng.choice(checkpoints)
    if ckpt is not None:
        sc["checkpoint_quant"] = ckpt
    return sc


def _type(sc: dict[str, Any], name: str, value: Any) -> None:
    """Type one option (the FA version as vLLM reads it: inside `--attention-config`)."""
    if name == "flash_attn_version":
        sc["args"]["attention_config"] = {"flash_attn_version": value}
    else:
        sc["args"][name] = value


CUDA_ATTENTION = [
    "FLASH_ATTN",
    "FLASHINFER",
    "TRITON_ATTN",
    "FLEX_ATTENTION",
    "TURBOQUANT",
    "TRITON_FLASHINFER",
    "TRITON_FLASH_ATTN",
    "FLASH_ATTN_DIFFKV",
    "TRITON_ATTN_DIFFKV",
    "HPC_ATTN",
]
CUDA_MLA = [
    "FLASHINFER_MLA",
    "TOKENSPEED_MLA",
    "CUTLASS_MLA",
    "FLASH_ATTN_MLA",
    "FLASHMLA",
    "TRITON_MLA",
    "FLASHINFER_MLA_SPARSE",
    "FLASHMLA_SPARSE",
    "FLASH_ATTN_MLA_SPARSE",
    "FLASH_ATTN_MLA_SPARSE_FA4",
    "FLASHINFER_MLA_SPARSE_SM120",
]
MOE_ARCHS = [
    "MixtralForCausalLM",
    "Qwen3MoeForCausalLM",
    "Glm4MoeForCausalLM",
    "DeepseekV2ForCausalLM",
    "DeepseekV3ForCausalLM",
    "DeepseekV32ForCausalLM",
    "GptOssForCausalLM",
    "Qwen3NextForCausalLM",
    "Llama4ForConditionalGeneration",
]
MLA_ARCHS = ["DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM"]
# Themes: the options that decide one thing together, typed together (a random draw rarely sets
# more than one of them), each over the machines and models where they matter. A theme is
# (architectures, GPUs, checkpoints, {option: values}); a scenario types 2-5 of its options.
THEMES: dict[str, tuple[list[str], list[int], list[str | None], dict[str, list[Any]]]] = {
    "attention": (
        [a for a in ARCHS if a not in MLA_ARCHS],
        SMS,
        [None, None, "fp8", "modelopt_fp8", "awq"],
        {
            "attention_backend": CUDA_ATTENTION,
            "kv_cache_dtype": ["auto", "fp8", "fp8_e4m3", "fp8_e5m2", "bfloat16", "float16", "nvfp4"],
            "block_size": [16, 32, 64, 128, 256],
            "flash_attn_version": [2, 3, 4],
            "dtype": ["auto", "bfloat16", "float16", "float32"],
            "tensor_parallel_size": [1, 2, 4, 8],
        },
    ),
    "mla": (
        MLA_ARCHS,
        [80, 86, 89, 90, 100, 103, 110, 120, 121],
        [None, "fp8", "modelopt_fp8", "modelopt_fp4", "compressed_tensors_fp8"],
        {
            "attention_backend": CUDA_MLA,
            "kv_cache_dtype": ["auto", "fp8", "fp8_e4m3", "fp8_ds_mla", "nvfp4_ds_mla", "bfloat16"],
            "block_size": [16, 32, 64, 128, 256],
            "tensor_parallel_size": [1, 2, 4, 8, 16],
            "decode_context_parallel_size": [1, 2, 4, 8],
            "dtype": ["auto", "bfloat16", "float16"],
        },
    ),
    "quantization": (
        ARCHS,
        SMS,
        CHECKPOINTS,
        {
            "quantization": [],  # the pack's domain without `none` (domains())
            "dtype": ["auto", "bfloat16", "float16", "float32", "half"],
            "kv_cache_dtype": ["auto", "fp8", "fp8_e4m3", "nvfp4"],
            "moe_backend": [],
        },
    ),
    "parallel": (
        MOE_ARCHS,
        [80, 90, 100, 103, 120],
        [None, "fp8", "modelopt_fp4", "mxfp4"],
        {
            "tensor_parallel_size": [1, 2, 4, 8, 16],
            "pipeline_parallel_size": [1, 2, 4],
            "data_parallel_size": [1, 2, 4, 8],
            "decode_context_parallel_size": [1, 2, 4],
            "enable_expert_parallel": [False, True],
            "enable_eplb": [False, True],
            "enable_dbo": [False, True],
            "all2all_backend": [],
        },
    ),
    "moe": (
        MOE_ARCHS,
        [80, 89, 90, 100, 103, 110, 120, 121],
        [None, "fp8", "modelopt_fp4", "modelopt_fp8", "mxfp4", "compressed_tensors_w4a16", "awq"],
        {
            "moe_backend": [],
            "quantization": [],
            "enable_expert_parallel": [False, True],
            "all2all_backend": [],
            "tensor_parallel_size": [1, 2, 4, 8],
        },
    ),
    # Every KV-cache dtype on the GPUs where the backends differ most (Thor, RTX PRO 6000, DGX
    # Spark next to Hopper and B200/B300), any model, with a pinned backend of either kind.
    "kvcache": (
        ARCHS,
        [80, 89, 90, 100, 103, 110, 120, 121],
        [None, None, "fp8", "modelopt_fp8", "modelopt_fp4"],
        {
            "kv_cache_dtype": [],  # the pack's whole domain (domains())
            "attention_backend": CUDA_ATTENTION + CUDA_MLA,
            "block_size": [16, 32, 64, 128, 256],
            "flash_attn_version": [2, 3, 4],
            "tensor_parallel_size": [1, 2, 4, 8],
        },
    ),
    "hybrid": (
        ["Qwen3NextForCausalLM", "GptOssForCausalLM", "Llama4ForConditionalGeneration"],
        SMS,
        [None, "fp8", "modelopt_fp4", "mxfp4"],
        {
            "block_size": [16, 32, 48, 64, 96, 128, 256, 272, 544, 1024],
            "kv_cache_dtype": [],
            "tensor_parallel_size": [1, 2, 4, 8],
            "attention_backend": CUDA_ATTENTION,
        },
    ),
    # Chunked prefill and prefix caching against what they change: a hybrid model's mamba state
    # (its block alignment, its cache dtype), the KV cache and the backend, over every GPU.
    "scheduler": (
        [
            "Qwen3NextForCausalLM",
            "Qwen3NextForCausalLM",
            "GptOssForCausalLM",
            "Llama4ForConditionalGeneration",
            "LlamaForCausalLM",
            "DeepseekV3ForCausalLM",
        ],
        SMS,
        [None, None, "fp8", "modelopt_fp4"],
        {
            "enable_chunked_prefill": [True, False],
            "enable_prefix_caching": [True, False],
            "block_size": [16, 32, 64, 128, 256, 272, 544, 1024],
            "kv_cache_dtype": ["auto", "fp8", "bfloat16", "nvfp4"],
            "tensor_parallel_size": [1, 2, 4, 8],
            "dtype": ["auto", "float16", "float32"],
            "attention_backend": CUDA_ATTENTION,
        },
    ),
    # Consumer Blackwell (RTX PRO 6000 sm120, DGX Spark sm121): FA2/FA4 only, no FA3, no TMEM
    # MLA kernels, FlashInfer's own SM120 sparse MLA; any model, checkpoint and option that decides
    # the backend, its KV cache and its block.
    "consumer": (
        ARCHS,
        [120, 121],
        [None, None, "fp8", "modelopt_fp8", "modelopt_fp4", "mxfp4", "awq", "mxfp8"],
        {
            "attention_backend": CUDA_ATTENTION + CUDA_MLA,
            "kv_cache_dtype": [],
            "block_size": [16, 32, 64, 128, 256],
            "flash_attn_version": [2, 3, 4],
            "quantization": [],
            "dtype": ["auto", "bfloat16", "float16", "float32"],
            "tensor_parallel_size": [1, 2, 4, 8],
        },
    ),
    # MLA backends on Hopper and datacenter Blackwell over quantized checkpoints (the KV cache a
    # checkpoint brings, FP8/FP4 weights against the MLA kernels' dtypes and block sizes).
    "mlaquant": (
        MLA_ARCHS,
        [90, 100, 103],
        [
            "fp8",
            "modelopt_fp8",
            "modelopt_fp4",
            "compressed_tensors_fp8",
            "mxfp8",
            "w4afp8_mixed",
            "awq",
            None,
        ],
        {
            "attention_backend": CUDA_MLA,
            "kv_cache_dtype": ["auto", "fp8", "fp8_e4m3", "fp8_ds_mla", "nvfp4_ds_mla", "bfloat16"],
            "block_size": [16, 32, 64, 128, 256],
            "quantization": [],
            "tensor_parallel_size": [1, 2, 4, 8, 16],
            "dtype": ["auto", "bfloat16", "float16"],
        },
    ),
    # The cells the fixtures hold least of (round 22's count by GPU x model family x typed flag):
    # Turing, Ampere consumer, Ada, B300, Thor and consumer Blackwell under the hybrid, MLA, gpt-oss
    # (sinks) and Llama 4 (chunked local attention) models over quantized checkpoints, with a typed
    # KV-cache dtype and backend (the checkpoint's KV scheme and KV-cache method against them).
    "thin": (
        [
            "Qwen3NextForCausalLM",
            "Qwen3NextForCausalLM",
            "GptOssForCausalLM",
            "Llama4ForConditionalGeneration",
            "DeepseekV3ForCausalLM",
            "DeepseekV2ForCausalLM",
            "Glm4MoeForCausalLM",
            "LlamaForCausalLM",
        ],
        [75, 86, 89, 103, 110, 120, 121],
        ["fp8", "fp8_tensor", "modelopt_fp8", "modelopt_fp4", "mxfp8", "w4afp8_mixed", "awq", "mxfp4", None],
        {
            "kv_cache_dtype": [],
            "attention_backend": CUDA_ATTENTION + CUDA_MLA,
            "block_size": [16, 32, 64, 128, 256, 544],
            "flash_attn_version": [2, 3, 4],
            "tensor_parallel_size": [1, 2, 4, 8],
            "dtype": ["auto", "bfloat16", "float16"],
        },
    ),
    # Round 23's themes, on the GPUs the fixtures hold least of. Decode context parallelism (always
    # typed) against the backends that support it, the KV cache, the block and the heads per GPU.
    "dcp": (
        [
            "DeepseekV3ForCausalLM",
            "DeepseekV2ForCausalLM",
            "DeepseekV32ForCausalLM",
            "Qwen3ForCausalLM",
            "LlamaForCausalLM",
            "Qwen3NextForCausalLM",
            "GptOssForCausalLM",
        ],
        [86, 89, 103, 110, 121],
        [None, None, "fp8", "modelopt_fp8", "modelopt_fp4", "awq"],
        {
            "decode_context_parallel_size": [2, 4, 8],
            "tensor_parallel_size": [1, 2, 4, 8, 16],
            "attention_backend": CUDA_ATTENTION + CUDA_MLA,
            "kv_cache_dtype": [],
            "block_size": [16, 32, 64, 128, 256],
            "flash_attn_version": [2, 3, 4],
        },
    ),
    # A typed MoE backend (always) against the checkpoint, the method typed, expert parallelism and
    # the all-to-all backend, off Hopper and B200.
    "moethin": (
        MOE_ARCHS,
        [75, 86, 89, 103, 110, 121],
        [
            None,
            "fp8",
            "fp8_tensor",
            "modelopt_fp4",
            "modelopt_fp8",
            "mxfp4",
            "mxfp8",
            "awq",
            "gptq",
            "compressed_tensors_w4a16",
        ],
        {
            "moe_backend": [],
            "quantization": [],
            "enable_expert_parallel": [False, True],
            "all2all_backend": [],
            "tensor_parallel_size": [1, 2, 4, 8],
            "dtype": ["auto", "bfloat16", "float16"],
        },
    ),
    # Small nodes (1, 2 or 4 GPUs given) and no FlashInfer, with the parallel sizes, the backend and
    # the KV cache.
    "nodes": (
        ARCHS,
        [89, 103, 121],
        [None, None, "fp8", "modelopt_fp4", "mxfp4", "awq"],
        {
            "tensor_parallel_size": [1, 2, 4, 8],
            "pipeline_parallel_size": [1, 2, 4],
            "data_parallel_size": [1, 2, 4],
            "decode_context_parallel_size": [1, 2, 4],
            "enable_expert_parallel": [False, True],
            "attention_backend": CUDA_ATTENTION + CUDA_MLA,
            "kv_cache_dtype": ["auto", "fp8", "fp8_e5m2", "bfloat16", "nvfp4"],
        },
    ),
    # Chunked prefill or prefix caching (one always typed) on the thin GPUs under sparse MLA, MLA,
    # hybrid and sinks models, with DCP, the block, the KV cache and the backend.
    "sched2": (
        [
            "DeepseekV32ForCausalLM",
            "DeepseekV3ForCausalLM",
            "Qwen3NextForCausalLM",
            "GptOssForCausalLM",
            "Llama4ForConditionalGeneration",
            "Qwen3MoeForCausalLM",
        ],
        [75, 86, 89, 103, 110, 121],
        [None, None, "fp8", "modelopt_fp4", "mxfp4"],
        {
            "enable_chunked_prefill": [True, False],
            "enable_prefix_caching": [True, False],
            "decode_context_parallel_size": [1, 2, 4],
            "block_size": [16, 32, 64, 128, 256, 272, 544, 1024],
            "kv_cache_dtype": [],
            "tensor_parallel_size": [1, 2, 4, 8],
            "attention_backend": CUDA_ATTENTION + CUDA_MLA,
        },
    ),
    # Round 24's themes, on the cells the fixtures hold least of: the rare checkpoint formats
    # (bitsandbytes, MXFP8, W4A8, GPTQ, compressed-tensors W4A16) under a typed method, dtype and KV
    # cache on Volta, Turing, Ampere consumer, B300, Thor and DGX Spark; and pipeline / data
    # parallelism, EP, EPLB and DBO on those GPUs' nodes of 2-16.
    "qrare": (
        ARCHS,
        [70, 75, 86, 103, 110, 121],
        ["bitsandbytes", "mxfp8", "w4afp8_mixed", "gptq", "compressed_tensors_w4a16", "fp8_tensor"],
        {
            "quantization": [],
            "dtype": ["auto", "bfloat16", "float16", "float32"],
            "kv_cache_dtype": ["auto", "fp8", "fp8_e5m2", "bfloat16", "int8_per_token_head"],
            "attention_backend": CUDA_ATTENTION + CUDA_MLA,
            "tensor_parallel_size": [1, 2, 4, 8],
        },
    ),
    "parthin": (
        [*MOE_ARCHS, "LlamaForCausalLM"],
        [70, 75, 86, 110, 121],
        [None, "fp8", "modelopt_fp4", "mxfp4", "awq"],
        {
            "pipeline_parallel_size": [2, 3, 4],
            "data_parallel_size": [2, 4, 8],
            "tensor_parallel_size": [1, 2, 4, 8],
            "enable_expert_parallel": [False, True],
            "enable_eplb": [False, True],
            "enable_dbo": [False, True],
            "all2all_backend": [],
        },
    ),
    # Round 25's themes, on the cells the fixtures hold least of on the common GPUs (Ampere, Ada,
    # Hopper, B200/B300, RTX PRO 6000): the ModelOpt checkpoints (FP8, NVFP4, MXFP8 and the
    # hf_quant_config.json mixed precision) under a typed method or KV cache, with the backend, the
    # MoE backend and the dtype; and a typed MoE backend on the datacenter GPUs (Ampere, Hopper,
    # B200, RTX PRO 6000) against every checkpoint, the method typed, EP and the all-to-all backend.
    "modelopt": (
        ARCHS,
        [80, 89, 90, 100, 103, 120],
        ["modelopt_fp8", "modelopt_fp4", "mxfp8", "w4afp8_mixed"],
        {
            "quantization": [],
            "kv_cache_dtype": [],
            "attention_backend": CUDA_ATTENTION + CUDA_MLA,
            "moe_backend": [],
            "dtype": ["auto", "bfloat16", "float16", "float32"],
            "tensor_parallel_size": [1, 2, 4, 8],
        },
    ),
    "moedc": (
        MOE_ARCHS,
        [80, 90, 100, 120],
        [
            None,
            "fp8",
            "fp8_tensor",
            "modelopt_fp8",
            "modelopt_fp4",
            "mxfp8",
            "w4afp8_mixed",
            "mxfp4",
            "awq",
            "gptq",
            "compressed_tensors_fp8",
            "compressed_tensors_w4a16",
        ],
        {
            "moe_backend": [],
            "quantization": [],
            "enable_expert_parallel": [False, True],
            "all2all_backend": [],
            "tensor_parallel_size": [1, 2, 4, 8],
            "data_parallel_size": [1, 2, 4],
            "dtype": ["auto", "bfloat16", "float16"],
        },
    ),
}
# Round 23's to 25's themes type one of these options in every scenario (the earlier ones draw as they did).
ALWAYS: dict[str, list[str]] = {
    "dcp": ["decode_context_parallel_size"],
    "moethin": ["moe_backend"],
    "sched2": ["enable_chunked_prefill", "enable_prefix_caching"],
    "qrare": ["quantization", "dtype"],
    "parthin": ["pipeline_parallel_size", "data_parallel_size"],
    "modelopt": ["quantization", "kv_cache_dtype"],
    "moedc": ["moe_backend"],
}


def draw_theme(rng: random.Random, values: dict[str, list[Any]], theme: str) -> dict[str, Any]:
    """One scenario of a theme: its models, GPUs and checkpoints, 2-5 of its options typed together."""
    archs, sms, checkpoints, options = THEMES[theme]
    sc = _machine_and_model(rng, f"T-{theme}", sms, archs, checkpoints)
    # The machine varies by GPU only (node size in the parallel and nodes themes, FlashInfer in
    # nodes): the oracle starts one worker per machine, which costs more than the scenarios it runs.
    if theme in ("parallel", "parthin"):
        sc["num_gpus"] = rng.choice([4, 8, 16] if theme == "parallel" else [2, 4, 8, 16])
    if theme == "nodes":
        sc["num_gpus"] = rng.choice([1, 2, 4])
        if rng.random() < 0.5:
            sc["facts"] = {"has_flashinfer": False}
    names = rng.sample(sorted(options), rng.randint(2, min(5, len(options))))
    if theme in ALWAYS:
        one = rng.choice(ALWAYS[theme])
        names = [one, *(n for n in names if n != one)][:5]
    for name in names:
        _type(sc, name, rng.choice(options[name] or values[name]))
    return sc


# --short (round 23): commands as users type them, on the GPUs make_random.py never mocks (it
# draws SM 80/89/90/100/120): its models, checkpoints, zero to three flags and their values
# (the ones people type), the rest left to vLLM's defaults.
SHORT_SMS = [75, 86, 89, 120, 121]
HARNESS = Path(os.environ.get("VLLM_ORACLE_HARNESS", "/work/shared/tools/vllm-oracle"))


def harness_make_random() -> ModuleType:
    """The harness's make_random.py (its tables: models, checkpoints, flags people type)."""
    sys.path.insert(0, str(HARNESS))
    import make_random  # the harness's, on the path just set

    return make_random


def draw_short(rng: random.Random, mr: ModuleType) -> dict[str, Any]:
    """One `--short` scenario: make_random.py's draw on one of SHORT_SMS."""
    arch = mr.pick(rng, [(a, m[0]) for a, m in mr.MODELS.items()])
    _, kind, checkpoints, tps = mr.MODELS[arch]
    ckpt = mr.pick(rng, checkpoints)
    wanted = mr.pick(rng, [(0, 15), (1, 35), (2, 30), (3, 20)])
    weights = mr.option_weights(kind, min(tps) >= 2)
    flags: dict[str, Any] = {}
    while len(flags) < wanted:
        left = [o for o in weights if o not in flags]
        option = rng.choices(left, weights=[weights[o] for o in left], k=1)[0]
        flags[option] = mr.draw_value(rng, option, arch, kind, ckpt, tps)
    sc = {"section": "S", "platform": "cuda", "sm": rng.choice(SHORT_SMS), "architecture": arch}
    sc["args"] = mr.to_args(flags)
    if ckpt:
        sc["checkpoint_quant"] = ckpt
    return sc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--count", type=int, default=500)
    parser.add_argument(
        "--kv-cache-dtype",
        metavar="A,B",
        help="every scenario gives one of these KV-cache dtypes (a focused draw over their block sizes)",
    )
    parser.add_argument(
        "--themes",
        metavar="A,B",
        help=f"draw the themes named (round robin; any of {', '.join(THEMES)}) instead of uniformly",
    )
    parser.add_argument("--short", action="store_true", help="0-3 flags as users type them, rare GPUs")
    args = parser.parse_args(argv)
    mr = harness_make_random() if args.short else None
    kv = args.kv_cache_dtype.split(",") if args.kv_cache_dtype else None
    themes = args.themes.split(",") if args.themes else []
    unknown = set(themes) - set(THEMES)
    if unknown:
        parser.error(f"unknown theme(s) {sorted(unknown)}; themes: {', '.join(THEMES)}")
    rng = random.Random(args.seed)
    values = domains()
    seen: set[str] = set()
    out: list[dict[str, Any]] = []
    while len(out) < args.count:
        if mr is not None:
            sc = draw_short(rng, mr)
        elif themes:
            sc = draw_theme(rng, values, themes[len(out) % len(themes)])
        else:
            sc = draw(rng, values, kv)
        key = json.dumps(sc, sort_keys=True)
        if key in seen:
            continue
        seen.add(key)
        sc["id"] = f"V{args.seed}-{len(out):04d}"
        out.append(sc)
    for sc in out:
        print(json.dumps(sc))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
