"""vLLM's oracle one stage further: build each attention layer as the model builds it.

The oracle (shared/tools/vllm-oracle/oracle.py) runs vLLM 0.33.0's configuration, its attention
selector and its block-size finalisation. Some requests pass all three and fail when the model is
constructed: the layer's `Attention.__init__` (`_init_kv_cache_quant`: fp8_e5m2 over an FP8 or
ModelOpt checkpoint, KNOWN_DIFFERENCES 29) or the backend's Impl (Triton's native-FP8 check below
SM89, HPC_ATTN's heads per group: 28, 30). This runs the oracle unchanged and, after its last
stage, builds vLLM's own `Attention` for each kind of attention layer the oracle selected for (the
arguments the model passes: heads and KV heads per GPU, head size, sliding window, gpt-oss's sinks),
with the checkpoint's quant_config and the model dtype as torch's default, under
`set_current_vllm_config`, after running its KV-cache quantization step on a stand-in layer
(FlashInfer's Impl, built before that step, cannot be built under the mocks: such a layer is
reported "[layer, not buildable under the mocks]", no answer). MLA layers are built as MLAAttention
(DeepSeek's attention, with a stand-in `kv_b_proj`: the selection, a sparse cache's canonical
form, the KV-cache quantization step; round 27). Sparse MLA layers (DeepSeek-V3.2) are built too
since round 28: their Impl reads the tensor-parallel world size and every Impl the decode-context-
parallel one, which the executor's process groups give; the probe stands in for those groups with
the sizes the configuration asks for (`stand_in_group_sizes`). GDN / linear-attention layers (Qwen3-Next)
are not built: their choices (prefill and decode kernels) read `additional_config` and environment
variables only, none of the options the pack describes. A
failure there is reported as the oracle reports any, as a RuntimeError whose message starts
"[layer]" and names the original error (the stage stays `block_size`). Run it
with the oracle's venv, as oracle.py (JSON scenarios on stdin, results on stdout):

    ORACLE_VLLM_WORKERS=2 $ORACLE_VLLM_HOME/venv/bin/python benchmarks/vllm_layer_probe.py < in > out

With VLLM_LAYER_PROBE_AT_LOAD=1 the layers are built where vLLM builds them, at model load: after
the configuration, before the selection and the block-size stage (the executor sizes the blocks
after the model is loaded). That order matters when `Attention.__init__` changes what those stages
read: a compressed-tensors checkpoint's KV-cache scheme turns an auto cache into fp8 in
cache_config, and the layer selects its backend for that cache and for per-head scales. The
oracle's selection then runs on that cache_config, and a layer's own backend replaces the oracle's
answer for its kind in the record and in the block-size stage (a FlashInfer layer, not buildable
under the mocks, keeps the oracle's answer: its cache-dtype step and selection ran before its Impl).
A layer failure is then reported at the stage `attention_backend`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

# benchmarks/ is not a package: the shared hook is found on the path set here
sys.path.insert(0, str(Path(__file__).resolve().parent))

from vllm_probe_hook import oracle, probe_after_block_size, probe_at_load


def _build_layers(cfg: Any, _backends: Any) -> dict[str, Any]:
    """Build one Attention per kind of layer; the backend each built layer took, by kind."""
    import torch
    from torch import nn
    from vllm.config import set_current_vllm_config
    from vllm.model_executor.layers.attention import Attention
    from vllm.model_executor.layers.attention.attention import _init_kv_cache_quant
    from vllm.utils.torch_utils import set_default_torch_dtype

    mc, pc = cfg.model_config, cfg.parallel_config
    # as the model loader builds the model (base_loader.py): the layers read the model dtype as
    # torch's default (float32 otherwise: FlashInfer refuses it and the selector takes Triton)
    built: dict[str, Any] = {}
    stand_in_group_sizes(pc)
    with set_current_vllm_config(cfg), set_default_torch_dtype(mc.dtype):
        for n, (kind, kw) in enumerate(oracle._attention_kinds(cfg)):
            if kw.get("use_mla"):
                built[kind] = build_mla_layer(cfg, kw, f"model.layers.{n}.self_attn.mla_attn")
                continue
            prefix = f"model.layers.{n}.self_attn.attn"
            # The KV-cache quantization step first, on a stand-in layer: it reads the cache dtype and
            # the checkpoint's quant_config only, and FlashInfer's Impl, built before it in
            # Attention.__init__, calls into FlashInfer, which the mocks stub out.
            # (an Attention, uninitialised: the quant configs hand their KV-cache method to Attention)
            stand_in = Attention.__new__(Attention)
            nn.Module.__init__(stand_in)
            stand_in.kv_cache_dtype = cfg.cache_config.cache_dtype
            # (a compressed-tensors per-head KV scheme makes one scale per KV head of the layer)
            stand_in.num_kv_heads = mc.get_num_kv_heads(pc)
            _init_kv_cache_quant(stand_in, cfg.quant_config, prefix)
            heads = mc.get_num_attention_heads(pc)
            extra: dict[str, Any] = {}
            if kw.get("has_sink"):
                # gpt-oss passes its sinks (one per local head) to Attention
                extra["sinks"] = torch.nn.Parameter(torch.empty(heads), requires_grad=False)
            window = getattr(mc.hf_text_config, "sliding_window", None) if kw["has_sliding_window"] else None
            try:
                layer = Attention(
                    heads,
                    kw["head_size"],
                    kw["head_size"] ** -0.5,
                    num_kv_heads=mc.get_num_kv_heads(pc),
                    cache_config=cfg.cache_config,
                    quant_config=cfg.quant_config,
                    per_layer_sliding_window=window,
                    prefix=prefix,
                    **extra,
                )
            except Exception as e:
                if "flashinfer" in str(e):
                    # a stubbed FlashInfer object reached a torch call: no answer of vLLM's
                    raise RuntimeError(f"[layer, not buildable under the mocks] {e}") from e
                raise
            built[kind] = layer.attn_backend
    return built


def stand_in_group_sizes(pc: Any) -> None:
    """The process groups' sizes as the executor would set them up for this configuration (the
    oracle starts none): an Impl reads the decode-context-parallel world size when it is built
    (`AttentionImplBase.__new__`: a backend that returns the LSE for decode does so under DCP, and
    FlashMLA's sparse Impl then refuses an unquantized cache), a sparse MLA Impl the tensor-parallel
    one (the masked-MHA prefill check). Each scenario runs in its own forked child."""
    from vllm.distributed import parallel_state
    from vllm.model_executor.layers.attention import sparse_mla_attention

    dcp = pc.decode_context_parallel_size

    def dcp_world_size_and_rank(enabled: bool = True) -> tuple[int, int]:
        return (dcp, 0) if enabled else (1, 0)

    parallel_state.get_dcp_world_size_and_rank = dcp_world_size_and_rank
    sparse_mla_attention.get_tensor_model_parallel_world_size = lambda: pc.tensor_parallel_size


def build_mla_layer(cfg: Any, kw: dict[str, Any], prefix: str) -> Any:
    """Build vLLM's own MLAAttention as DeepSeek's attention does (deepseek_v2.py): it selects its
    backend for the cache dtype in cache_config, canonicalises a sparse MLA cache (written back to
    cache_config) and runs the KV-cache quantization step (a ModelOpt config hands MLA layers its
    KV-cache method, compressed-tensors none). `kv_b_proj` is a stand-in: the layer only keeps it
    until the weights are loaded. The backend it took is returned."""
    import torch
    from torch import nn
    from vllm.model_executor.layers.attention.mla_attention import MLAAttention

    mc, pc = cfg.model_config, cfg.parallel_config
    hf = mc.hf_text_config
    extra: dict[str, Any] = {}
    if kw.get("use_sparse"):
        # DeepSeek-V3.2's indexer writes the top-k indices the sparse layer reads
        extra["topk_indices_buffer"] = torch.empty(1, hf.index_topk, dtype=torch.int32)
    try:
        layer = MLAAttention(
            num_heads=mc.get_num_attention_heads(pc),
            scale=(hf.qk_nope_head_dim + hf.qk_rope_head_dim) ** -0.5,
            qk_nope_head_dim=hf.qk_nope_head_dim,
            qk_rope_head_dim=hf.qk_rope_head_dim,
            v_head_dim=hf.v_head_dim,
            q_lora_rank=getattr(hf, "q_lora_rank", None),
            kv_lora_rank=hf.kv_lora_rank,
            # (a parameter: the DCP manager of an MLA layer reads its device; an Identity has none)
            kv_b_proj=nn.Linear(1, 1, bias=False),
            cache_config=cfg.cache_config,
            quant_config=cfg.quant_config,
            prefix=prefix,
            use_sparse=bool(kw.get("use_sparse")),
            **extra,
        )
    except Exception as e:
        # a stubbed FlashInfer / FlashMLA object reached a torch call, or an Impl asked for a
        # process group beyond the sizes `stand_in_group_sizes` stands in for: no answer of vLLM's
        mocked = ("flashinfer", "flash_mla", "group is not initialized", "workspacemanager not initialized")
        if any(m in str(e).lower() for m in mocked):
            raise RuntimeError(f"[layer, not buildable under the mocks] {e}") from e
        raise
    return layer.attn_backend


if __name__ == "__main__":
    if os.environ.get("VLLM_LAYER_PROBE_AT_LOAD") == "1":
        probe_at_load(_build_layers, "layer", __file__)
    else:
        probe_after_block_size(_build_layers, "layer", __file__)
