"""Hardware detection: vendor tool output mapped through the pack's domains; never an error."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from typing import Any

import pytest

from solver.inputs import detect
from solver.inputs.detect import arch_from_compute_cap, detect_facts, probe
from solver.model import Field, Pack

PACK = Pack(
    name="hw",
    version="1",
    fields={
        "platform": Field(name="platform", kind="fact", domain=("cuda", "hip", "cpu")),
        "gpu_arch": Field(
            name="gpu_arch", kind="fact", domain=("sm80", "sm90", "sm100", "sm120", "gfx942", "none")
        ),
    },
)


def tools(**outputs: str) -> Any:
    """A runner that answers as the named tools would; other tools are not installed."""

    def run(argv: Sequence[str]) -> str | None:
        return outputs.get(argv[0].replace("-", "_"))

    return run


@pytest.mark.parametrize(
    ("cap", "arch"),
    [
        ("9.0", "sm90"),
        ("10.0", "sm100"),
        ("12.0", "sm120"),
        ("8.6", "sm86"),
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
        (
            {"nvidia_smi": "9.0, NVIDIA H100 80GB HBM3\n9.0, NVIDIA H100 80GB HBM3\n"},
            {"platform": "cuda", "gpu_arch": "sm90"},
        ),
        ({"nvidia_smi": "10.0, NVIDIA B200\n"}, {"platform": "cuda", "gpu_arch": "sm100"}),
        ({"nvidia_smi": "12.0, NVIDIA GeForce RTX 5090\n"}, {"platform": "cuda", "gpu_arch": "sm120"}),
        # Mixed GPUs: which one would the server use? Only the platform is certain.
        ({"nvidia_smi": "9.0, NVIDIA H100\n8.0, NVIDIA A100\n"}, {"platform": "cuda"}),
        # A value the pack does not know is not emitted; the platform still is.
        ({"nvidia_smi": "7.5, Tesla T4\n"}, {"platform": "cuda"}),
        (
            {"rocminfo": "  Name:                    gfx942\n  Marketing Name: AMD Instinct MI300X\n"},
            {"platform": "hip", "gpu_arch": "gfx942"},
        ),
        ({"rocm_smi": "GPU[0] : GFX Version: gfx942\n"}, {"platform": "hip", "gpu_arch": "gfx942"}),
        ({"rocminfo": "Name: gfx1100\n"}, {"platform": "hip"}),
        ({"nvidia_smi": "No devices were found\n"}, {}),
        ({}, {}),
    ],
)
def test_detected_facts_have_source_detected_and_only_pack_values(
    outputs: dict[str, str], expected: dict[str, str]
) -> None:
    pins = detect_facts(PACK, run=tools(**outputs))
    assert {n: p.value for n, p in pins.items()} == expected
    assert all(p.source == "detected" for p in pins.values())


def test_a_pack_without_hardware_fields_gets_nothing() -> None:
    pack = Pack(name="x", version="1", fields={"a": Field(name="a", kind="option", domain=(1,))})
    assert detect_facts(pack, run=tools(nvidia_smi="9.0, H100\n")) == {}


def test_field_names_are_parameters() -> None:
    pack = Pack(name="x", version="1", fields={"arch": Field(name="arch", kind="fact", domain=("sm90",))})
    pins = detect_facts(pack, run=tools(nvidia_smi="9.0, H100\n"), arch_field="arch")
    assert pins["arch"].value == "sm90"


def test_nvidia_smi_is_asked_with_a_timeout_and_never_through_a_shell(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[tuple[list[str], dict[str, Any]]] = []

    def fake_run(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        calls.append((argv, kwargs))
        return subprocess.CompletedProcess(argv, 0, stdout="9.0, NVIDIA H100\n", stderr="")

    monkeypatch.setattr(detect.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(detect.subprocess, "run", fake_run)
    assert probe() == {"platform": "cuda", "gpu_arch": "sm90"}
    argv, kwargs = calls[0]
    assert argv == ["nvidia-smi", "--query-gpu=compute_cap,name", "--format=csv,noheader"]
    assert kwargs["timeout"] == detect.TIMEOUT_SECONDS and not kwargs.get("shell")


@pytest.mark.parametrize(
    "failure", [subprocess.TimeoutExpired("nvidia-smi", 5), OSError("exec format error"), "exit 9"]
)
def test_a_hanging_or_failing_tool_means_not_detected(monkeypatch: pytest.MonkeyPatch, failure: Any) -> None:
    def fake_run(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        if isinstance(failure, BaseException):
            raise failure
        return subprocess.CompletedProcess(argv, 9, stdout="9.0, H100\n", stderr="boom")

    monkeypatch.setattr(detect.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(detect.subprocess, "run", fake_run)
    assert detect_facts(PACK) == {}


def test_no_tool_on_path_runs_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("nothing may run when no tool is installed")

    monkeypatch.setattr(detect.shutil, "which", lambda name: None)
    monkeypatch.setattr(detect.subprocess, "run", fail)
    assert detect_facts(PACK) == {}
