"""The tables `vllm_coverage_draw.py` draws from: the GPUs the vLLM oracle mocks, the model templates and
checkpoint formats of its harness, the CUDA attention backends, and the themes (each round's options
that decide one thing together, over the machines and models where they matter)."""

from __future__ import annotations

from typing import Any

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
# A typed MoE backend with what it is checked against: the method, EP, the all-to-all, -tp, dtype.
MOE_TYPED: dict[str, list[Any]] = {
    "moe_backend": [],
    "quantization": [],
    "enable_expert_parallel": [False, True],
    "all2all_backend": [],
    "tensor_parallel_size": [1, 2, 4, 8],
    "dtype": ["auto", "bfloat16", "float16"],
}
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
        MOE_TYPED,
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
        {**MOE_TYPED, "data_parallel_size": [1, 2, 4]},
    ),
    # Round 26's themes, from the fixtures' count per GPU x checkpoint / option (15,758 records):
    # the compressed-tensors checkpoints (FP8 dynamic, W4A16) on the GPUs that hold 9-31 records of
    # each (Volta, Turing, SM86, B300, Thor, DGX Spark) under a typed method, dtype, KV cache and
    # backend; and chunked prefill / prefix caching on the common GPUs (Ampere, Ada, Hopper, RTX PRO
    # 6000: 17-54 records each, the rare ones had round 23's sched2) with blocks, KV caches, backends.
    "ctthin": (
        ARCHS,
        [70, 75, 86, 103, 110, 121],
        ["compressed_tensors_fp8", "compressed_tensors_w4a16"],
        {
            "quantization": ["compressed-tensors", "humming", "fp8", "gptq_marlin", "moe_wna16"],
            "dtype": ["auto", "bfloat16", "float16", "float32"],
            "kv_cache_dtype": ["auto", "fp8", "fp8_e5m2", "bfloat16", "fp8_per_token_head"],
            "attention_backend": CUDA_ATTENTION + CUDA_MLA,
            "tensor_parallel_size": [1, 2, 4, 8],
        },
    ),
    "schedc": (
        ARCHS,
        [80, 89, 90, 120],
        [None, "fp8", "modelopt_fp4", "awq", "mxfp4"],
        {
            "enable_chunked_prefill": [True, False],
            "enable_prefix_caching": [True, False],
            "block_size": [16, 32, 64, 128, 256, 272, 544],
            "kv_cache_dtype": ["auto", "fp8", "bfloat16", "fp8_e5m2"],
            "attention_backend": CUDA_ATTENTION + CUDA_MLA,
            "tensor_parallel_size": [1, 2, 4, 8],
        },
    ),
    # Round 27's theme, from the fixtures' count per GPU x checkpoint (15,986 records): bitsandbytes,
    # ModelOpt MXFP8 and the W4A8 mixed precision hold 10-34 records each on Ampere, Ada, B200 and
    # RTX PRO 6000 (qrare drew them on the rare GPUs), under a typed method and KV cache with the
    # backend, the dtype and -tp.
    "qcommon": (
        ARCHS,
        [80, 89, 100, 120],
        ["bitsandbytes", "mxfp8", "w4afp8_mixed"],
        {
            "quantization": [],
            "kv_cache_dtype": [],
            "attention_backend": CUDA_ATTENTION + CUDA_MLA,
            "dtype": ["auto", "bfloat16", "float16", "float32"],
            "tensor_parallel_size": [1, 2, 4, 8],
        },
    ),
    # and the ModelOpt FP8 / NVFP4 checkpoints on the rare GPUs (Volta, Turing, SM86, Thor, DGX
    # Spark: 14-85 records each), the same options typed.
    "mothin": (
        ARCHS,
        [70, 75, 86, 110, 121],
        ["modelopt_fp8", "modelopt_fp4"],
        {
            "quantization": [],
            "kv_cache_dtype": [],
            "attention_backend": CUDA_ATTENTION + CUDA_MLA,
            "dtype": ["auto", "bfloat16", "float16", "float32"],
            "tensor_parallel_size": [1, 2, 4, 8],
        },
    ),
    # Round 28's themes, from the fixtures' count per GPU x option / architecture (15,395 records
    # with a GPU): dual-batch overlap and EPLB hold 16-53 records each on Volta, Turing, SM86, B300,
    # Thor and DGX Spark (parthin typed them beside -pp / -dp), typed here with EP, -dp, the
    # all-to-all and the MoE backend; and the dense and MoE models those GPUs hold 16-45 records of
    # (Qwen2, Qwen3, Mixtral, Qwen3-MoE, GLM-4 MoE, DeepSeek-V2) with chunked prefill or prefix
    # caching typed (sched2 drew them over MLA / hybrid / sinks models), blocks, caches, backends.
    "dbothin": (
        MOE_ARCHS,
        [70, 75, 86, 103, 110, 121],
        [None, "fp8", "modelopt_fp4", "mxfp4", "awq", "compressed_tensors_fp8"],
        {
            "enable_dbo": [False, True],
            "enable_eplb": [False, True],
            "enable_expert_parallel": [False, True],
            "data_parallel_size": [1, 2, 4],
            "tensor_parallel_size": [1, 2, 4, 8],
            "all2all_backend": [],
            "moe_backend": [],
        },
    ),
    "archthin": (
        # The families between Llama and DeepSeek-V3 in ARCHS (the thin cells, round 28).
        ARCHS[ARCHS.index("Qwen2ForCausalLM") : ARCHS.index("DeepseekV3ForCausalLM")],
        [70, 75, 86, 103, 110, 121],
        [None, "fp8", "awq", "gptq", "modelopt_fp8", "compressed_tensors_w4a16"],
        {
            "enable_chunked_prefill": [True, False],
            "enable_prefix_caching": [True, False],
            "block_size": [16, 32, 64, 128, 256],
            "kv_cache_dtype": ["auto", "fp8", "fp8_e4m3", "bfloat16", "float16"],
            "attention_backend": CUDA_ATTENTION + CUDA_MLA,
            "dtype": ["auto", "bfloat16", "float16", "float32"],
            "tensor_parallel_size": [1, 2, 4],
        },
    ),
    # Round 29's themes, from the fixtures' count per GPU x architecture x option (16,307 records):
    # sparse MLA (DeepSeek-V3.2) under decode context parallelism holds 10-17 records a GPU on Hopper,
    # B200/B300 and SM120/121, typed here with -tp (the heads per GPU), every sparse backend and
    # the caches the sparse layers rewrite (fp8 -> fp8_ds_mla); and the KV-cache dtypes against a
    # pinned backend on Volta, Turing and SM86 (336-500 records each), where the kernels' native FP8
    # and bfloat16 checks apply.
    "sparsedcp": (
        ["DeepseekV32ForCausalLM"],
        [90, 100, 103, 120, 121],
        [None, None, "fp8", "modelopt_fp4", "compressed_tensors_fp8"],
        {
            "decode_context_parallel_size": [1, 2, 4, 8],
            "tensor_parallel_size": [1, 2, 4, 8, 16],
            "attention_backend": [b for b in CUDA_MLA if "SPARSE" in b],
            "kv_cache_dtype": ["auto", "bfloat16", "fp8", "fp8_e4m3", "fp8_ds_mla", "nvfp4_ds_mla"],
            "block_size": [64, 128, 256],
            "dtype": ["auto", "bfloat16", "float16"],
        },
    ),
    "oldkv": (
        ARCHS,
        [70, 75, 86],
        [None, None, "fp8", "awq", "gptq", "modelopt_fp8"],
        {
            "kv_cache_dtype": [
                "auto",
                "fp8",
                "fp8_e4m3",
                "fp8_e5m2",
                "bfloat16",
                "float16",
                "int8_per_token_head",
            ],
            "attention_backend": CUDA_ATTENTION + CUDA_MLA,
            "dtype": ["auto", "bfloat16", "float16", "float32"],
            "block_size": [16, 32, 64],
            "tensor_parallel_size": [1, 2, 4],
        },
    ),
}
# Round 23's to 29's themes type one of these options in every scenario (the earlier ones draw as they did).
ALWAYS: dict[str, list[str]] = {
    "dcp": ["decode_context_parallel_size"],
    "moethin": ["moe_backend"],
    "sched2": ["enable_chunked_prefill", "enable_prefix_caching"],
    "qrare": ["quantization", "dtype"],
    "parthin": ["pipeline_parallel_size", "data_parallel_size"],
    "modelopt": ["quantization", "kv_cache_dtype"],
    "moedc": ["moe_backend"],
    "ctthin": ["quantization", "kv_cache_dtype"],
    "schedc": ["enable_chunked_prefill", "enable_prefix_caching"],
    "qcommon": ["quantization", "kv_cache_dtype"],
    "mothin": ["quantization", "kv_cache_dtype"],
    "dbothin": ["enable_dbo", "enable_eplb"],
    "archthin": ["enable_chunked_prefill", "enable_prefix_caching"],
    "sparsedcp": ["decode_context_parallel_size", "kv_cache_dtype"],
    "oldkv": ["kv_cache_dtype", "attention_backend"],
}
