"""The hook both vLLM probes share: one more stage of vLLM's after the oracle's last one, or at load.

The oracle (shared/tools/vllm-oracle/oracle.py) runs vLLM 0.33.0's configuration, its attention
selector and its block-size finalisation; `vllm_layer_probe.py` (the attention layers as the model
builds them) and `vllm_builder_probe.py` (FlashInfer's metadata builder) each run one more of vLLM's
steps after that. This runs the oracle unchanged with such a step added: `probe_after_block_size`
wraps the oracle's block-size stage so that `build(cfg, backends)` runs after it, reports a failure
there as the oracle reports any (a RuntimeError whose message starts "[tag]" and names the original
error; the record's stage stays `block_size`), and starts the oracle's driver or worker;
`probe_at_load` runs the step before the selection instead, where vLLM's model loader builds the
layers. Both are run with the oracle's venv, as oracle.py (JSON scenarios on stdin, results on
stdout).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

ORACLE = os.environ.get("ORACLE_VLLM_TOOLS", "/work/shared/tools/vllm-oracle")
sys.path.insert(0, ORACLE)

import oracle  # type: ignore[import-not-found]  # noqa: E402  (the harness's module, path set above)

Build = Callable[[Any, Any], Any]


def probe_after_block_size(build: Build, tag: str, script: str) -> None:
    """Run the oracle (driver or worker, as argv says) with `build(cfg, backends)` after its last stage.

    `tag` starts a failure's message ("[layer] KeyError: ..."); `script` is the probe's own file:
    the driver starts each worker as `python <oracle.__file__> --worker`, so pointing the oracle's
    `__file__` at the probe makes the workers, which resolve the scenarios, run the step too.
    """
    finalize = oracle._finalize_block_size

    def finalize_then_build(cfg: Any, backends: Any) -> None:
        finalize(cfg, backends)
        try:
            build(cfg, backends)
        except Exception as e:
            # (the record's stage stays the oracle's last, block_size; the message says where)
            raise RuntimeError(f"[{tag}] {type(e).__name__}: {e}") from e

    oracle._finalize_block_size = finalize_then_build
    _start(script)


def probe_at_load(build: Build, tag: str, script: str) -> None:
    """Run the oracle with `build(cfg, None)` before its selection, where vLLM's model loader builds
    the layers: it returns the backend each built layer took, by kind of layer, which replaces the
    oracle's answer for that kind (record and block-size stage). A failure there is reported as in
    `probe_after_block_size`, at the stage `attention_backend`; one whose message says the layer is
    not buildable under the mocks leaves the oracle's answers as they are."""
    select = oracle._select_attention

    def build_then_select(cfg: Any, res: dict[str, Any]) -> Any:
        layers: dict[str, Any] = {}
        try:
            layers = build(cfg, None)
        except Exception as e:
            if "not buildable under the mocks" not in str(e):
                raise RuntimeError(f"[{tag}] {type(e).__name__}: {e}") from e
            res["layer_not_buildable"] = str(e)[:300]
        backends, error = select(cfg, res)
        if layers and error is None:
            for kind, backend in layers.items():
                res["attention"][kind] = {"backend": backend.get_name()}
            backends = list(dict.fromkeys(layers.values()))
            if (
                "FLASH_ATTN" in {b.get_name() for b in backends}
                and "flash_attn_version" not in res["resolved"]
            ):
                # the version the oracle reports beside FLASH_ATTN, asked as it asks it
                from vllm.config import set_current_vllm_config
                from vllm.v1.attention.backends.fa_utils import get_flash_attn_version

                with set_current_vllm_config(cfg):
                    head_size = cfg.model_config.get_head_size()
                    res["resolved"]["flash_attn_version"] = get_flash_attn_version(head_size=head_size)
        return backends, error

    oracle._select_attention = build_then_select
    _start(script)


def _start(script: str) -> None:
    """Start the oracle's driver or worker, as argv says: the driver starts each worker as
    `python <oracle.__file__> --worker`, so the probe's own file makes the workers run its step."""
    oracle.__file__ = os.path.abspath(script)
    if "--worker" in sys.argv:
        oracle.worker_main()
    else:
        oracle.main()
