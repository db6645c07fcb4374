"""The hook both vLLM probes share: one more stage after the oracle's last one.

The oracle (shared/tools/vllm-oracle/oracle.py) runs vLLM 0.33.0's configuration, its attention
selector and its block-size finalisation; `vllm_layer_probe.py` (the attention layers as the model
builds them) and `vllm_builder_probe.py` (FlashInfer's metadata builder) each run one more of vLLM's
steps after that. This runs the oracle unchanged with such a step added: `probe_after_block_size`
wraps the oracle's block-size stage so that `build(cfg, backends)` runs after it, reports a failure
there as the oracle reports any (a RuntimeError whose message starts "[tag]" and names the original
error; the record's stage stays `block_size`), and starts the oracle's driver or worker. Both are
run with the oracle's venv, as oracle.py (JSON scenarios on stdin, results on stdout).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

ORACLE = os.environ.get("ORACLE_VLLM_TOOLS", "/work/shared/tools/vllm-oracle")
sys.path.insert(0, ORACLE)

import oracle  # type: ignore[import-not-found]  # noqa: E402  (the harness's module, path set above)

Build = Callable[[Any, Any], None]


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
    oracle.__file__ = os.path.abspath(script)
    if "--worker" in sys.argv:
        oracle.worker_main()
    else:
        oracle.main()
