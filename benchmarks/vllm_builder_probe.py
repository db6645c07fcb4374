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
"""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

# benchmarks/ is not a package: the shared hook is found on the path set here
sys.path.insert(0, str(Path(__file__).resolve().parent))

from vllm_probe_hook import probe_after_block_size

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


if __name__ == "__main__":
    probe_after_block_size(_build_flashinfer_builder, "builder", __file__)
