"""Hardware detection: vendor tool output mapped through the pack's detect table and domains,
reported line by line; never an error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from solver.errors import PackError
from solver.inputs import detect as detect_module
from solver.inputs.detect import ToolMissing, arch_from_compute_cap, detect, detect_facts, probe
from solver.model import Field, Launcher, OpenRange, Pack

ROOT = Path(__file__).resolve().parent.parent

PACK = Pack(
    name="hw",
    version="1",
    fields={
        "platform": Field(name="platform", kind="fact", domain=("cuda", "hip", "cpu")),
        "gpu_arch": Field(
            name="gpu_arch", kind="fact", domain=("sm80", "sm90", "sm100", "sm120", "gfx942", "none")
        ),
        "gpus": Field(name="gpus", kind="fact", domain=(0, 1, 2, 4, 8), open=OpenRange(min=0)),
        "amx": Field(name="amx", kind="fact", domain=(False, True)),
    },
    launcher=Launcher(
        detect={"platform": "platform", "gpu_arch": "gpu_arch", "gpu_count": "gpus", "cpu_amx": "amx"},
        detect_platforms={"nvidia": "cuda", "amd": "hip", "cpu": "cpu"},
    ),
)
H100 = "9.0, NVIDIA H100 80GB HBM3\n"
AMX_CPU = "processor\t: 0\nflags\t\t: fpu sse2 avx512f amx_bf16 amx_tile amx_int8\n"
OLD_CPU = "processor\t: 0\nflags\t\t: fpu sse2 avx2\n"


def tools(**outputs: str | None) -> Any:
    """A runner that answers as the named tools would (None: the tool failed); tools not named
    are not installed."""

    def run(argv: Sequence[str]) -> str | None:
        key = argv[0].replace("-", "_")
        if key not in outputs:
            raise ToolMissing(argv[0])
        return outputs[key]

    return run


def found(
    pack: Pack = PACK, cpuinfo: str | None = None, environ: dict[str, str] | None = None, **kw: Any
) -> Any:
    given = kw.pop("given", None)
    return detect(pack, given=given, run=tools(**kw), read_cpuinfo=lambda: cpuinfo, environ=environ or {})


@pytest.mark.parametrize(
    ("cap", "arch"),
    [
        ("9.0", "sm90"),
        ("10.0", "sm100"),
        ("12.0", "sm120"),
        ("8.6", "sm86"),
        ("7.5", "sm75"),
        (" 12.1 ", "sm121"),
        ("", None),
        ("9", None),
        ("[N/A]", None),
    ],
)
def test_compute_capability_maps_to_sm(cap: str, arch: str | None) -> None:
    assert arch_from_compute_cap(cap) == arch


@pytest.mark.parametrize(
    ("outputs", "expected"),
    [
        ({"nvidia_smi": H100 * 8}, {"platform": "cuda", "gpu_arch": "sm90", "gpus": 8}),
        ({"nvidia_smi": "10.0, NVIDIA B200\n"}, {"platform": "cuda", "gpu_arch": "sm100", "gpus": 1}),
        # Mixed GPUs: which one would the server use? The platform and count are certain.
        ({"nvidia_smi": "9.0, NVIDIA H100\n8.0, NVIDIA A100\n"}, {"platform": "cuda", "gpus": 2}),
        # A value the pack does not know is not emitted; the rest still is.
        ({"nvidia_smi": "7.5, Tesla T4\n"}, {"platform": "cuda", "gpus": 1}),
        # An open count: 3 GPUs is a value of the range though not listed.
        ({"nvidia_smi": H100 * 3}, {"platform": "cuda", "gpu_arch": "sm90", "gpus": 3}),
        (
            {"rocminfo": "  Name:             gfx942\n  Name:   amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-\n"},
            {"platform": "hip", "gpu_arch": "gfx942", "gpus": 1},
        ),
        (
            {"rocminfo": None, "rocm_smi": "GPU[0] : GFX Version: gfx942\nGPU[1] : GFX Version: gfx942\n"},
            {"platform": "hip", "gpu_arch": "gfx942", "gpus": 2},
        ),
        ({"rocminfo": "  Name: gfx1100\n"}, {"platform": "hip", "gpus": 1}),
        ({"nvidia_smi": "No devices were found\n"}, {}),
        ({}, {}),
    ],
)
def test_detected_facts_have_source_detected_and_only_pack_values(
    outputs: dict[str, str], expected: dict[str, Any]
) -> None:
    pins = found(**outputs).pins
    assert {n: p.value for n, p in pins.items()} == expected
    assert all(p.source == "detected" for p in pins.values())


def test_the_report_says_what_was_found_and_what_was_not() -> None:
    notes = found(nvidia_smi=H100 * 2).notes
    assert any("nvidia-smi: 2 x NVIDIA H100 80GB HBM3 (sm90)" in n for n in notes)
    mixed = found(nvidia_smi="9.0, NVIDIA H100\n8.0, NVIDIA A100\n").notes
    assert any("different architectures" in n and "gpu_arch is not detected" in n for n in mixed)
    nothing = found().notes
    assert any("nvidia-smi, rocminfo, rocm-smi not on PATH" in n for n in nothing)
    failed = found(nvidia_smi=None).notes
    assert any("nvidia-smi failed" in n for n in failed)
    odd = found(nvidia_smi=H100 * 3, pack=_without_open_count()).notes
    assert "gpus=3 is not a value of gpus: not set" in odd


def _without_open_count() -> Pack:
    fields = dict(PACK.fields)
    fields["gpus"] = Field(name="gpus", kind="fact", domain=(0, 1, 2, 4, 8))
    return Pack(name="hw", version="1", fields=fields, launcher=PACK.launcher)


@pytest.mark.parametrize(("cpuinfo", "amx"), [(AMX_CPU, True), (OLD_CPU, False), ("processor : 0\n", False)])
def test_amx_is_read_on_a_cpu_host(cpuinfo: str, amx: bool) -> None:
    pins = found(cpuinfo=cpuinfo, given={"platform": "cpu"}).pins
    assert pins["amx"].value is amx and pins["amx"].source == "detected"
    assert "platform" not in pins  # given, not overridden


def test_amx_is_not_a_fact_of_a_gpu_host() -> None:
    result = found(cpuinfo=AMX_CPU, nvidia_smi=H100)
    assert "amx" not in result.pins
    assert "amx is set only with platform=cpu" in result.notes
    unreadable = found(cpuinfo=None, given={"platform": "cpu"})
    assert "amx" not in unreadable.pins and any("not readable" in n for n in unreadable.notes)


def test_cuda_visible_devices_narrows_what_the_server_sees() -> None:
    smi = "9.0, NVIDIA H100\n8.0, NVIDIA A100\n8.0, NVIDIA A100\n"
    pins = found(nvidia_smi=smi, environ={"CUDA_VISIBLE_DEVICES": "1,2"}).pins
    assert (pins["gpu_arch"].value, pins["gpus"].value) == ("sm80", 2)


def test_fact_names_come_from_the_pack() -> None:
    bare = Pack(name="x", version="1", fields={"arch": Field(name="arch", kind="fact", domain=("sm90",))})
    assert detect_facts(bare, run=tools(nvidia_smi=H100)) == {}
    named = Pack(name="x", version="1", fields=bare.fields, launcher=Launcher(detect={"gpu_arch": "arch"}))
    assert detect_facts(named, run=tools(nvidia_smi=H100))["arch"].value == "sm90"


def test_a_detect_table_naming_no_fact_is_a_pack_error(tmp_path: Path) -> None:
    from solver import load_pack

    (tmp_path / "pack.toml").write_text(
        '[pack]\nname = "p"\nversion = "1"\n'
        '[pack.launcher]\ndetect = { gpu_arch = "tp", gpu_colour = "tp" }\n'
        'detect_platforms = { nvidia = "metal" }\n'
        '[field.tp]\nkind = "option"\ndomain = [1, 2]\n'
    )
    with pytest.raises(PackError) as info:
        load_pack(str(tmp_path))
    text = str(info.value)
    assert "gpu_arch = 'tp' is not a fact field" in text
    assert "'gpu_colour' is not detected" in text
    assert "nvidia = 'metal' is not a value of the platform fact" in text


def test_nvidia_smi_is_asked_with_a_timeout_and_never_through_a_shell(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[tuple[list[str], dict[str, Any]]] = []

    def fake_run(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        calls.append((argv, kwargs))
        return subprocess.CompletedProcess(argv, 0, stdout="9.0, NVIDIA H100\n", stderr="")

    monkeypatch.setattr(detect_module.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(detect_module.subprocess, "run", fake_run)
    assert probe(read_cpuinfo=lambda: None, environ={}).found == {
        "platform": "nvidia",
        "gpu_count": 1,
        "gpu_arch": "sm90",
    }
    argv, kwargs = calls[0]
    assert argv == ["nvidia-smi", "--query-gpu=compute_cap,name", "--format=csv,noheader"]
    assert kwargs["timeout"] == detect_module.TIMEOUT_SECONDS and not kwargs.get("shell")


@pytest.mark.parametrize(
    "failure", [subprocess.TimeoutExpired("nvidia-smi", 5), OSError("exec format error"), "exit 9"]
)
def test_a_hanging_or_failing_tool_means_not_detected(monkeypatch: pytest.MonkeyPatch, failure: Any) -> None:
    def fake_run(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        if isinstance(failure, BaseException):
            raise failure
        return subprocess.CompletedProcess(argv, 9, stdout="9.0, H100\n", stderr="boom")

    monkeypatch.setattr(detect_module.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(detect_module.subprocess, "run", fake_run)
    assert detect_facts(PACK) == {}


def test_no_tool_on_path_runs_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("nothing may run when no tool is installed")

    monkeypatch.setattr(detect_module.shutil, "which", lambda name: None)
    monkeypatch.setattr(detect_module.subprocess, "run", fail)
    assert detect_facts(PACK) == {}


# --- end to end: fake vendor tools on PATH -------------------------------------------------------


def _fake_tools(tmp_path: Path, **scripts: str) -> dict[str, str]:
    """An environment whose PATH holds only the given fake tools (shell scripts printing text)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in scripts.items():
        tool = bin_dir / name.replace("_", "-")
        tool.write_text(f"#!/bin/sh\ncat <<'EOF'\n{text}EOF\n")
        tool.chmod(0o755)
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("CONFSOLVE_") and k != "CUDA_VISIBLE_DEVICES"
    }
    env["PATH"] = f"{bin_dir}:/bin:/usr/bin"  # /bin for sh and cat; no real GPU tool there
    env["PYTHONPATH"] = str(ROOT)
    return env


def _confsolve(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "solver", *argv],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_check_detect_with_fake_nvidia_smi_reports_and_bounds_the_gpus(tmp_path: Path) -> None:
    if any(Path(d, "nvidia-smi").exists() for d in ("/bin", "/usr/bin")):
        pytest.skip("a real nvidia-smi is on the fallback PATH")
    env = _fake_tools(tmp_path, nvidia_smi=H100 * 4)
    llama = ["--pack", "vllm", "--set", "architecture=LlamaForCausalLM"]
    done = _confsolve(env, "check", "--detect", *llama, "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["values"]["gpu_arch"] == "sm90" and doc["values"]["num_gpus"] == 4
    assert doc["provenance"]["num_gpus"]["source"] == "detected"
    assert "nvidia-smi: 4 x NVIDIA H100 80GB HBM3 (sm90)" in done.stderr
    assert "--detect set platform=cuda" in done.stderr
    # Eight ranks on four GPUs: a conflict naming the bound, never a silently smaller size.
    too_many = _confsolve(env, "check", "--detect", *llama, "--set", "tensor_parallel_size=8")
    assert too_many.returncode == 1 and "world-size-within-4-gpus" in too_many.stdout
    searched = _confsolve(env, "resolve", "--detect", *llama, "--set", "tensor_parallel_size=8")
    assert searched.returncode == 1 and "world-size-within-4-gpus" in searched.stderr


def test_detect_with_no_tool_on_path_says_so(tmp_path: Path) -> None:
    env = _fake_tools(tmp_path)
    if any(Path(d, t).exists() for d in ("/bin", "/usr/bin") for t in ("nvidia-smi", "rocminfo", "rocm-smi")):
        pytest.skip("a real GPU tool is on the fallback PATH")
    done = _confsolve(env, "check", "--detect", "--set", "platform=cuda", "--set", "gpu_arch=sm90")
    assert "no GPU found: nvidia-smi, rocminfo, rocm-smi not on PATH" in done.stderr
    assert "--detect set nothing" in done.stderr


def test_a_pack_without_a_detect_table_gets_the_facts_named_like_the_quantities() -> None:
    bare = Pack(
        name="x", version="1", fields={n: f for n, f in PACK.fields.items() if n in ("platform", "gpu_arch")}
    )
    pins = detect(bare, run=tools(nvidia_smi=H100 * 2), read_cpuinfo=lambda: None, environ={}).pins
    assert {n: p.value for n, p in pins.items()} == {"platform": "cuda", "gpu_arch": "sm90"}


def test_the_sglang_pack_bounds_tp_times_dp_by_the_detected_gpus(tmp_path: Path) -> None:
    if any(Path(d, "nvidia-smi").exists() for d in ("/bin", "/usr/bin")):
        pytest.skip("a real nvidia-smi is on the fallback PATH")
    env = _fake_tools(tmp_path, nvidia_smi=H100 * 4)
    llama = ["--set", "architecture=LlamaForCausalLM"]
    done = _confsolve(env, "check", "--detect", *llama, "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["values"]["num_gpus"] == 4 and doc["provenance"]["num_gpus"]["source"] == "detected"
    # Eight ranks on four GPUs: a conflict naming the bound, never a silently smaller --tp-size.
    too_many = _confsolve(env, "check", "--detect", *llama, "--set", "tp_size=4", "--set", "dp_size=2")
    assert too_many.returncode == 1 and "par-ranks-within-gpus" in too_many.stdout
    searched = _confsolve(env, "resolve", "--detect", *llama, "--set", "tp_size=8")
    assert searched.returncode == 1 and "par-ranks-within-gpus" in searched.stderr
    amx = _confsolve(env, "check", "--detect", "--set", "platform=cpu", *llama)
    assert "cpu_has_amx=" in amx.stderr or "not readable" in amx.stderr  # read, or said why not
