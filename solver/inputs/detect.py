"""Optional hardware detection (`--detect`): what this machine is, as `detected` pins, and a report.

Owns asking the vendor tools that are on PATH — `nvidia-smi` (NVIDIA), then `rocminfo` /
`rocm-smi` (AMD) — with a timeout, reading the CPU's flags from `/proc/cpuinfo`, and mapping the
answers generically: compute capability X.Y -> `smXY`, a gfx target -> itself, how many GPUs,
whether the CPU has AMX tiles. Which fact each answer fills, and the platform value of each kind
of host, is pack data (`[pack.launcher] detect` / `detect_platforms`); a pack without them gets
the facts named like the quantities (`platform`, `gpu_arch`, ...), if it has any. A value is
emitted only when the fact's domain has it (or its open range admits it).
Never imports torch or a GPU library (seconds of start-up, and a launcher may run on a login
node); a missing tool, a timeout or odd output means "not detected", never an error, and every
such outcome is a line of the report: detection only fills in what nobody said, and says so.

The tools, the CPU flags and the environment are parameters, so tests give fake answers:

>>> from solver.model import Field, Launcher, Pack
>>> pack = Pack(name="demo", version="1", fields={
...     "gpu_arch": Field(name="gpu_arch", kind="fact", domain=("sm90", "sm100"))},
...     launcher=Launcher(detect={"gpu_arch": "gpu_arch"}))
>>> def fake(argv):  # what nvidia-smi prints on an H100 machine
...     if argv[0] != "nvidia-smi":
...         raise ToolMissing(argv[0])
...     return "9.0, NVIDIA H100 80GB HBM3"
>>> found = detect(pack, run=fake, read_cpuinfo=lambda: None, environ={})
>>> {name: pin.value for name, pin in found.pins.items()}
{'gpu_arch': 'sm90'}
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from solver.model import DETECTED_QUANTITIES, Field, Pack, Pin, Scalar

__all__ = [
    "TIMEOUT_SECONDS",
    "Detection",
    "Probe",
    "ToolMissing",
    "arch_from_compute_cap",
    "detect",
    "detect_facts",
    "probe",
]

TIMEOUT_SECONDS = 5.0
CPUINFO = "/proc/cpuinfo"
# The CPU flags that mean Intel AMX as SGLang's CPU kernels use it (tiles and bfloat16 tiles).
AMX_FLAGS = ("amx_tile", "amx_bf16")


class ToolMissing(LookupError):
    """The tool is not on PATH (a runner raises it; any other failure is an answer of None)."""


# A tool's stdout, None when it failed or hung; raises ToolMissing when it is not installed.
Runner = Callable[[Sequence[str]], str | None]

_CAP = re.compile(r"^\s*(\d+)\.(\d+)\s*$")
_ROCMINFO_AGENT = re.compile(r"^\s*Name:\s+(gfx[0-9a-f]{3,4})\s*$", re.IGNORECASE | re.MULTILINE)
_ROCM_SMI_GPU = re.compile(r"GPU\[(\d+)\].*?\b(gfx[0-9a-f]{3,4})\b", re.IGNORECASE)
_NVIDIA = ["nvidia-smi", "--query-gpu=compute_cap,name", "--format=csv,noheader"]


def _run(argv: Sequence[str]) -> str | None:
    """The tool's stdout, or None when it fails or hangs; ToolMissing when it is not on PATH."""
    if shutil.which(argv[0]) is None:
        raise ToolMissing(argv[0])
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


def _read_cpuinfo() -> str | None:
    try:
        with open(CPUINFO, encoding="utf-8", errors="replace") as handle:
            return handle.read(4 * 1024 * 1024)
    except OSError:
        return None


def arch_from_compute_cap(cap: str) -> str | None:
    """`"9.0"` -> `"sm90"`, `"12.1"` -> `"sm121"`; None for anything else."""
    match = _CAP.match(cap)
    return f"sm{match.group(1)}{match.group(2)}" if match else None


@dataclass
class Probe:
    """What the machine said: `found` quantity -> value (`platform` is a host kind: nvidia, amd;
    see `solver.model.DETECTED_QUANTITIES`), and one line per thing looked at."""

    found: dict[str, Scalar] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


@dataclass
class Detection:
    """The pins detection gives a pack (source `detected`) and the report of how it got them."""

    pins: dict[str, Pin] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _ask(run: Runner, argv: Sequence[str], missing: list[str]) -> str | None:
    try:
        return run(argv)
    except ToolMissing:
        missing.append(argv[0])
        return None


def _visible(
    gpus: list[tuple[str | None, str]], environ: Mapping[str, str], out: Probe
) -> list[tuple[str | None, str]]:
    """The GPUs a server started here would see: CUDA_VISIBLE_DEVICES by index, when it is set."""
    raw = environ.get("CUDA_VISIBLE_DEVICES")
    if raw is None:
        return gpus
    wanted = [w.strip() for w in raw.split(",") if w.strip()]
    if all(w.isdigit() for w in wanted):
        seen = [gpus[int(w)] for w in wanted if int(w) < len(gpus)]
        out.notes.append(f"CUDA_VISIBLE_DEVICES={raw}: {len(seen)} of the {len(gpus)} GPUs are visible")
        return seen
    out.notes.append(
        f"CUDA_VISIBLE_DEVICES={raw} names GPUs by UUID: counted {len(wanted)}, architectures of all"
    )
    return gpus[: len(wanted)] if len(wanted) <= len(gpus) else gpus


def _nvidia(out: str, environ: Mapping[str, str], probe_: Probe) -> None:
    gpus = []
    for line in out.splitlines():
        if line.strip():
            cap, _, name = line.partition(",")
            gpus.append((arch_from_compute_cap(cap), name.strip() or "a GPU"))
    gpus = [g for g in gpus if g[0] is not None]
    if not gpus:
        probe_.notes.append("nvidia-smi answered but listed no GPU with a compute capability")
        return
    gpus = _visible(gpus, environ, probe_)
    if not gpus:
        return
    probe_.found.update(platform="nvidia", gpu_count=len(gpus))
    _one_arch(Counter(gpus), "nvidia-smi", probe_)


def _amd(out: str, tool: str, probe_: Probe) -> bool:
    if tool == "rocminfo":
        targets = [m.lower() for m in _ROCMINFO_AGENT.findall(out)]
    else:  # rocm-smi: one line per GPU and property; each GPU once
        targets = [gfx.lower() for gfx in dict(_ROCM_SMI_GPU.findall(out)).values()]
    if not targets:
        return False
    probe_.found.update(platform="amd", gpu_count=len(targets))
    _one_arch(Counter((t, t) for t in targets), tool, probe_)
    return True


def _one_arch(gpus: Counter[tuple[str | None, str]], tool: str, probe_: Probe) -> None:
    listed = "; ".join(f"{n} x {name} ({arch})" for (arch, name), n in gpus.items())
    archs = {arch for arch, _ in gpus}
    if len(archs) == 1:
        probe_.found["gpu_arch"] = str(archs.pop())
        probe_.notes.append(f"{tool}: {listed}")
    else:
        probe_.notes.append(
            f"{tool}: GPUs of different architectures ({listed}): gpu_arch is not detected; "
            "--set the one the server runs on (and CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES)"
        )


def _cpu(text: str | None, probe_: Probe) -> None:
    if text is None:
        probe_.notes.append(f"{CPUINFO} is not readable: the CPU's features are not detected")
        return
    flags = next(
        (line.partition(":")[2].split() for line in text.splitlines() if line.startswith("flags")), None
    )
    if flags is None:
        probe_.notes.append(f"{CPUINFO} lists no x86 flags: no AMX")
        probe_.found["cpu_amx"] = False
        return
    has = all(flag in flags for flag in AMX_FLAGS)
    probe_.found["cpu_amx"] = has
    probe_.notes.append(f"CPU flags: {' and '.join(AMX_FLAGS)} {'present' if has else 'absent'} (AMX)")


def probe(
    run: Runner = _run,
    read_cpuinfo: Callable[[], str | None] = _read_cpuinfo,
    environ: Mapping[str, str] | None = None,
) -> Probe:
    """Ask the machine: NVIDIA first, then AMD; the CPU's flags always."""
    env = os.environ if environ is None else environ
    out = Probe()
    missing: list[str] = []
    answer = _ask(run, _NVIDIA, missing)
    if answer is not None:
        _nvidia(answer, env, out)
    elif "nvidia-smi" not in missing:
        out.notes.append("nvidia-smi failed or timed out")
    if "platform" not in out.found:
        for argv in (["rocminfo"], ["rocm-smi", "--showproductname"]):
            answer = _ask(run, argv, missing)
            if answer is not None and _amd(answer, argv[0], out):
                break
    if "platform" not in out.found:
        if missing:
            out.notes.append(f"no GPU found: {', '.join(missing)} not on PATH")
        else:
            out.notes.append("no GPU found by nvidia-smi, rocminfo or rocm-smi")
    _cpu(read_cpuinfo(), out)
    return out


# A pack without a detect table: the facts named like the quantities, and the platforms by the
# names their vendors' runtimes go by.
_USUAL_PLATFORMS = {"nvidia": "cuda", "amd": "hip", "cpu": "cpu"}


def _table(pack: Pack) -> tuple[dict[str, str], dict[str, str]]:
    """(quantity -> fact, host kind -> platform value): the pack's `[pack.launcher] detect`
    tables, else the facts that bear the quantities' own names."""
    launcher = pack.launcher
    if launcher is not None and launcher.detect:
        return dict(launcher.detect), dict(launcher.detect_platforms)
    named = {q: q for q in DETECTED_QUANTITIES if q in pack.fields and pack.fields[q].kind == "fact"}
    return named, dict(_USUAL_PLATFORMS) if named else {}


def _admits(spec: Field, value: Scalar) -> bool:
    if value in spec.domain and type(value) in {type(v) for v in spec.domain}:
        return True
    return spec.open is not None and spec.open.admits(value)


def detect(
    pack: Pack,
    *,
    given: Mapping[str, Scalar] | None = None,
    run: Runner = _run,
    read_cpuinfo: Callable[[], str | None] = _read_cpuinfo,
    environ: Mapping[str, str] | None = None,
) -> Detection:
    """Detected facts as pins with source `detected`, and the report.

    `given`: the facts the user set; the CPU's features are only facts of a host whose platform
    (given or detected) is the pack's CPU platform, and a given fact is not overridden."""
    table, platforms = _table(pack)
    if not table:
        return Detection(notes=[f"the {pack.name} pack names no fact --detect could fill"])
    found = probe(run, read_cpuinfo, environ)
    values = dict(found.found)
    if "platform" in values:
        host = str(values["platform"])
        platform = platforms.get(host)
        if platform is None:
            del values["platform"]
        else:
            values["platform"] = platform
    given = given or {}
    platform_field = table.get("platform", "")
    platform_now = given.get(platform_field, values.get("platform"))
    out = Detection(notes=list(found.notes))
    cpu = platforms.get("cpu")
    if "cpu_amx" in values and (platform_now is None or platform_now != cpu):
        del values["cpu_amx"]  # a CPU's matrix units are a fact of a CPU host only
        if "cpu_amx" in table:
            out.notes.append(f"{table['cpu_amx']} is set only with {platform_field}={cpu}")
    for quantity, value in values.items():
        name = table.get(quantity)
        spec = pack.fields.get(name or "")
        if spec is None or name in given:
            continue
        if not _admits(spec, value):
            out.notes.append(f"{name}={value} is not a value of {name}: not set")
            continue
        out.pins[spec.name] = Pin(field=spec.name, value=value, source="detected")
    return out


def detect_facts(
    pack: Pack, *, run: Runner = _run, given: Mapping[str, Scalar] | None = None
) -> dict[str, Pin]:
    """The pins of `detect` alone."""
    return detect(pack, run=run, given=given).pins
