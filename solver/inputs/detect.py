"""Optional hardware detection: the machine's platform and GPU architecture as `detected` pins.

Owns asking the vendor tools that are on PATH — `nvidia-smi` (CUDA), then `rocminfo` / `rocm-smi`
(ROCm) — with a timeout, and mapping their answers generically: compute capability X.Y -> `smXY`,
a gfx target -> itself, plus the platform (`cuda` / `hip`). A value is emitted only when the pack's
domain has it, so a pack without such fields gets nothing. Never imports torch or a GPU library
(seconds of start-up, and a launcher may run on a login node); a missing tool, a timeout or odd
output means "not detected", never an error: detection only fills in what nobody said.

>>> from solver.model import Field, Pack
>>> pack = Pack(name="demo", version="1", fields={
...     "gpu_arch": Field(name="gpu_arch", kind="fact", domain=("sm90", "sm100"))})
>>> def fake(argv):  # what nvidia-smi prints on an H100 machine
...     return "9.0, NVIDIA H100 80GB HBM3" if argv[0] == "nvidia-smi" else None
>>> {name: pin.value for name, pin in detect_facts(pack, run=fake).items()}
{'gpu_arch': 'sm90'}
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable, Sequence

from solver.model import Pack, Pin, Scalar

__all__ = ["TIMEOUT_SECONDS", "arch_from_compute_cap", "detect_facts", "probe"]

TIMEOUT_SECONDS = 5.0

Runner = Callable[[Sequence[str]], str | None]

_CAP = re.compile(r"^\s*(\d+)\.(\d+)\s*$")
_GFX = re.compile(r"\bgfx[0-9a-f]{3,4}\b", re.IGNORECASE)


def _run(argv: Sequence[str]) -> str | None:
    """The tool's stdout, or None when it is not on PATH, fails or hangs."""
    if shutil.which(argv[0]) is None:
        return None
    try:
        done = subprocess.run(
            list(argv),
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",  # any bytes a tool prints
            timeout=TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def arch_from_compute_cap(cap: str) -> str | None:
    """`"9.0"` -> `"sm90"`, `"12.1"` -> `"sm121"`; None for anything else."""
    match = _CAP.match(cap)
    return f"sm{match.group(1)}{match.group(2)}" if match else None


def probe(run: Runner = _run) -> dict[str, str]:
    """What the vendor tools say: `{"platform": ..., "gpu_arch": ...}`, possibly empty.

    Several GPUs of different architectures give no `gpu_arch` (which one would the server use?).
    """
    out = run(["nvidia-smi", "--query-gpu=compute_cap,name", "--format=csv,noheader"])
    if out is not None:
        archs = {arch_from_compute_cap(line.split(",")[0]) for line in out.splitlines() if line.strip()}
        archs.discard(None)
        found = {"platform": "cuda"} if archs else {}
        if len(archs) == 1:
            found["gpu_arch"] = str(archs.pop())
        if found:
            return found
    for argv in (["rocminfo"], ["rocm-smi", "--showproductname"]):
        out = run(argv)
        if out is None:
            continue
        targets = {m.lower() for m in _GFX.findall(out)}
        if targets:
            found = {"platform": "hip"}
            if len(targets) == 1:
                found["gpu_arch"] = targets.pop()
            return found
    return {}


def detect_facts(
    pack: Pack,
    *,
    run: Runner = _run,
    platform_field: str = "platform",
    arch_field: str = "gpu_arch",
) -> dict[str, Pin]:
    """Detected facts as pins with source `detected`, only for values the pack's domains contain."""
    found = probe(run)
    out: dict[str, Pin] = {}
    for key, name in (("platform", platform_field), ("gpu_arch", arch_field)):
        field = pack.fields.get(name)
        value: Scalar | None = found.get(key)
        if field is None or field.kind != "fact" or value is None or value not in field.domain:
            continue
        out[name] = Pin(field=name, value=value, source="detected")
    return out
