"""vLLM's oracle one stage further: FlashInfer's attention-metadata builder (KNOWN_DIFFERENCES 31).

The GPU model runner builds each attention group's metadata builder when it sets up the KV cache,
after the model is loaded: past the oracle's last stage. `FlashInferMetadataBuilder.__init__`
refuses some caches the selector took (an NVFP4 cache read through FlashAttention-2's prefill,
SM8x / SM90 / SM12x, split by decode context parallelism; NVFP4 at head size 64). This runs the
oracle unchanged and, after its last stage, when FlashInfer was selected, builds that builder for
the full-attention layers with vLLM's own `FullAttentionSpec` of the configuration's cache (block
size, KV heads per GPU, head size, cache dtype and its quantization mode). The DCP group, which
needs torch.distributed, is stood in for by its size (`parallel_state._DCP`, all the builder
reads of it). The builder then asks for the model's attention layers
(`infer_global_hyperparameters`), which are not built here: reaching that assertion means every
check before it passed, and is reported as a pass. A failure is reported as the oracle reports
any, a RuntimeError whose message starts "[builder]" (the stage stays `block_size`). Run it with
the oracle's venv, as oracle.py (JSON scenarios on stdin, results on stdout):

    ORACLE_VLLM_WORKERS=2 $ORACLE_VLLM_HOME/venv/bin/python benchmarks/vllm_builder_probe.py < in > out

Since round 30 it builds FlashMLA sparse's metadata builder too, when the oracle selected FlashMLA
sparse for a sparse MLA model (DeepSeek-V3.2): `FlashMLASparseMetadataBuilder.__init__` refuses
decode context parallelism with 32 or more heads per GPU, or with gathered heads that pad to
another FP8 decode kernel than the local ones (KNOWN_DIFFERENCES 32). Its layer is built first, as
`vllm_layer_probe.py` builds it (the builder reads it from the forward context), with three stand-ins
for what only a GPU worker has: the workspace manager (the Impl reserves its scratch buffers there;
sizes, no checks), the DCP process group (its size and rank) and the layer's DCP manager (the
collectives' buffers and multicast setup, which read the process group's devices; the builder
only asks that the layer have one).

Since round 31 the sparse layer's own builder class is built for FlashInfer's sparse kernels too
(FLASHINFER_MLA_SPARSE on SM100/SM103: the TRT-LLM builder, which reserves FlashInfer's workspace,
with a softmax-statistics slab under DCP; FLASHINFER_MLA_SPARSE_SM120 on SM120/SM121), with one
more stand-in: that workspace (sizes, no checks). They refuse nothing the selector and the layer
took (R31P1, KNOWN_DIFFERENCES 32 (e)).
"""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

# benchmarks/ is not a package: the shared hook is found on the path set here
sys.path.insert(0, str(Path(__file__).resolve().parent))

from vllm_layer_probe import build_mla_layer, stand_in_group_sizes
from vllm_probe_hook import oracle, probe_after_block_size

# Raised past the builder's own checks, where it reads the model's layers (not built here).
_NO_LAYERS = "No attention layers found in the model."


def _build_flashinfer_builder(cfg: Any, backends: Any) -> None:
    if not any(backend.get_name() == "FLASHINFER" for backend in backends):
        return
    import torch
    from vllm.config import set_current_vllm_config
    from vllm.distributed import parallel_state
    from vllm.utils.torch_utils import kv_cache_dtype_str_to_dtype
    from vllm.v1.attention.backends.flashinfer import FlashInferMetadataBuilder
    from vllm.v1.kv_cache_interface import FullAttentionSpec, get_kv_quant_mode

    mc, pc, cc = cfg.model_config, cfg.parallel_config, cfg.cache_config
    dcp = pc.decode_context_parallel_size
    # get_dcp_world_size_and_rank reads the group's size and rank only
    parallel_state._DCP = types.SimpleNamespace(world_size=dcp, rank_in_group=0) if dcp > 1 else None
    with set_current_vllm_config(cfg):
        spec = FullAttentionSpec(
            block_size=cc.block_size,
            num_kv_heads=mc.get_num_kv_heads(pc),
            head_size=mc.get_head_size(),
            dtype=kv_cache_dtype_str_to_dtype(cc.cache_dtype, mc),
            kv_quant_mode=get_kv_quant_mode(cc.cache_dtype),
        )
        try:
            FlashInferMetadataBuilder(spec, ["model.layers.0.self_attn.attn"], cfg, torch.device("cpu"))
        except AssertionError as e:
            if str(e) != _NO_LAYERS:
                raise


# The sparse MLA backends whose metadata builder this builds (each backend's own builder class):
# FlashMLA sparse's (round 30) and FlashInfer's sparse kernels' on SM100/SM103 (TRT-LLM) and
# SM120/SM121 (round 31). FLASHINFER_MLA_SPARSE_SM90 is never selected with the FlashInfer vLLM
# 0.33.0 pins (its SM90 MLA probe fails), and the CPU / ROCm / XPU ones are not CUDA's.
SPARSE_BUILT = ("FLASHMLA_SPARSE", "FLASHINFER_MLA_SPARSE", "FLASHINFER_MLA_SPARSE_SM120")


def _build_sparse_mla_builder(cfg: Any, backends: Any) -> None:
    if not any(backend.get_name() in SPARSE_BUILT for backend in backends):
        return
    import torch
    from vllm.config import set_current_vllm_config
    from vllm.distributed import parallel_state
    from vllm.model_executor.layers.attention import mla_attention, sparse_mla_attention
    from vllm.utils.torch_utils import set_default_torch_dtype
    from vllm.v1.attention.backends.mla import flashinfer_mla_sparse, flashmla_sparse
    from vllm.v1.attention.ops.dcp import MLADCPManager

    mc, pc = cfg.model_config, cfg.parallel_config
    dcp = pc.decode_context_parallel_size

    class DCPGroup:
        """The DCP group's size and rank, all the Impl and the builders read of it (hashable: the
        group is a cache key in vLLM's communication helpers)."""

        world_size = dcp
        rank_in_group = 0

    class NoWorkspace:
        """The worker's workspace manager: the Impl reserves its scratch buffers (sizes only)."""

        def get_simultaneous(self, *specs: Any) -> None:
            return None

    class DCPManagerStandIn(MLADCPManager):
        """The layer's DCP manager without its collectives (they need the group's devices)."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self.group = DCPGroup()

        def init_kv_gather(self, workspace: torch.Tensor, max_gathered_tokens: int) -> None:
            return None

    def no_flashinfer_workspace(device: Any, min_bytes: int | None = None) -> None:
        """FlashInfer's sparse workspace (394 MiB and, under DCP, the softmax-stats slab: sizes,
        no checks), which the TRT-LLM builder reserves under DCP."""
        return None

    stand_in_group_sizes(pc)
    parallel_state._DCP = DCPGroup() if dcp > 1 else None
    flashmla_sparse.current_workspace_manager = NoWorkspace
    flashinfer_mla_sparse._get_workspace_buffer = no_flashinfer_workspace
    mla_attention.MLADCPManager = DCPManagerStandIn
    # the CPU has no pinned memory; the builder pins a host copy of the context lengths
    sparse_mla_attention.PIN_MEMORY = False
    prefix = "model.layers.0.self_attn.mla_attn"
    with set_current_vllm_config(cfg), set_default_torch_dtype(mc.dtype):
        for _kind, kw in oracle._attention_kinds(cfg):
            if not kw.get("use_sparse"):
                continue
            backend = build_mla_layer(cfg, kw, prefix)
            if backend.get_name() not in SPARSE_BUILT:
                continue
            layer = cfg.compilation_config.static_forward_context[prefix]
            spec = layer.get_kv_cache_spec(cfg)
            backend.get_builder_cls()(spec, [prefix], cfg, torch.device("cpu"))


def _build_builders(cfg: Any, backends: Any) -> None:
    _build_flashinfer_builder(cfg, backends)
    _build_sparse_mla_builder(cfg, backends)


if __name__ == "__main__":
    probe_after_block_size(_build_builders, "builder", __file__)
