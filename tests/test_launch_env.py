"""Environment variables in front of a launch command: `SGLANG_USE_AITER=1 python -m ...`.

A shell runs such a line with the variables in the launcher's environment, so they are the
pack's environment facts as typed (not assumed, not refused as a stray word), and a repair that
changes one is written back in front of the command.
"""

from __future__ import annotations

import json

import pytest
from clirun import run

from solver import InvalidInput, Pack, load_pack
from solver.inputs.launch import read_command, shell_line, write_command

SGLANG = ["python", "-m", "sglang.launch_server"]
ROCM = ["--set", "platform=hip", "--set", "gpu_arch=gfx942", "--set", "architecture=LlamaForCausalLM"]


@pytest.fixture(scope="module")
def pack() -> Pack:
    return load_pack("sglang")


@pytest.mark.parametrize("env_word", [[], ["env"], ["/usr/bin/env"]])
def test_assignments_in_front_are_the_environment(pack: Pack, env_word: list[str]) -> None:
    words = [*env_word, "SGLANG_USE_AITER=1", "CUDA_VISIBLE_DEVICES=0,1", *SGLANG, "--tp", "2"]
    cmd = read_command(pack, words)
    assert cmd.environment == (("SGLANG_USE_AITER", "1"), ("CUDA_VISIBLE_DEVICES", "0,1"))
    assert cmd.program == tuple(SGLANG) and cmd.options == {"tp_size": "2"}
    # Written back as typed, the variable the pack does not model included.
    again = write_command(pack, cmd, {"tp_size": 2})
    assert again[: len(words) - 2] == [*(["env"] if env_word else []), *words[len(env_word) : -2]]


def test_a_flag_with_an_equals_sign_is_no_assignment(pack: Pack) -> None:
    assert read_command(pack, ["--tp=2"]).environment == ()
    with pytest.raises(InvalidInput, match="env's option '-i' is not read"):
        read_command(pack, ["env", "-i", "A=1", *SGLANG])


def test_the_environment_in_front_is_given_not_assumed(capsys: pytest.CaptureFixture[str]) -> None:
    words = ["check", *ROCM, "--json", "--", "SGLANG_USE_AITER=1", *SGLANG, "--tp", "2"]
    code, out, _ = run(capsys, *words)
    assert code == 0
    doc = json.loads(out)
    assert doc["values"]["SGLANG_USE_AITER"] == "1"
    assert "SGLANG_USE_AITER" not in [a["field"] for a in doc.get("assumed", [])]
    # The same as --set: the launcher's own picks follow it (aiter attention on ROCm with aiter).
    code, same_out, _ = run(
        capsys, "check", *ROCM, "--set", "SGLANG_USE_AITER=1", "--json", "--", *SGLANG, "--tp", "2"
    )
    assert code == 0 and json.loads(same_out)["values"] == doc["values"]


def test_set_and_the_environment_in_front_must_agree(capsys: pytest.CaptureFixture[str]) -> None:
    words = ["check", *ROCM, "--set", "SGLANG_USE_AITER=0", "--", "SGLANG_USE_AITER=true", *SGLANG]
    code, _, err = run(capsys, *words)
    assert code == 2 and "SGLANG_USE_AITER=true in the launch command disagree" in err


def test_set_and_the_environment_in_front_agree_when_they_mean_one_value(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # "true" is one of the variable's words for 1: not a disagreement with --set ...=1
    words = ["check", *ROCM, "--set", "SGLANG_USE_AITER=1", "--", "SGLANG_USE_AITER=true", *SGLANG]
    code, _, err = run(capsys, *words)
    assert code != 2 and "disagree" not in err


def test_a_repair_rewrites_the_variable_in_front(capsys: pytest.CaptureFixture[str]) -> None:
    # The MLX runner needs mps: on CUDA the repair turns the typed variable off.
    words = [
        "check",
        "--set",
        "platform=cuda",
        "--set",
        "gpu_arch=sm90",
        "--set",
        "architecture=MiniMaxM3SparseForCausalLM",
        "--",
        "SGLANG_USE_MLX=1",
        "CUDA_VISIBLE_DEVICES=0,1",
        *SGLANG,
        "--tp",
        "2",
    ]
    code, out, err = run(capsys, *words)
    assert code == 1
    line = shell_line(["SGLANG_USE_MLX=0", "CUDA_VISIBLE_DEVICES=0,1", *SGLANG, "--tp-size", "2"])
    assert line in out + err
    assert "on a machine or model with SGLANG_USE_MLX" not in out + err
