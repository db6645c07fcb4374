"""Regression capture: `confsolve resolve --save-case FILE` writes a case that tests/test_cases.py
replays as it is (its own `test_case` function is called on the written file, so the two cannot
drift apart), for a resolved, a conflict and an invalid request.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import hypothesis
import hypothesis.strategies as st
import pytest
from hostile import TOY, sglang_loads, toml_str
from test_cases import test_case as replay

from solver.cli.commands import main

REQUESTS = {
    "resolved": (["--set", "gpu=b200", "--set", "quant=fp4"], 0),
    "adjusted": (["--set", "gpu=h100", "--set", "quant=none", "--set", "kernel=cutlass"], 0),
    "conflict": (["--set", "gpu=h100", "--set", "quant=fp4", "--set", "tp=8"], 1),
    "strict-conflict": (
        ["--set", "gpu=h100", "--set", "quant=none", "--set", "kernel=cutlass", "--strict"],
        1,
    ),
    "invalid-value": (["--set", "gpu=b200", "--set", "kernel=cutlas"], 2),
    "unknown-field": (["--set", "gpu=b200", "--set", "kernal=triton"], 2),
    "assumed-fact": (["--assume", "gpu=a100", "--set", "quant=fp8"], 0),
}


def save(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, argv: list[str], pack: str = str(TOY)
) -> tuple[int, Path]:
    case = tmp_path / f"{name}.toml"
    code = main(["resolve", "--pack", pack, *argv, "--json", "--save-case", str(case)])
    _, err = capsys.readouterr()
    assert f"saved the case to {case}" in err
    return code, case


@pytest.mark.parametrize("name", list(REQUESTS))
def test_saved_case_replays(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str) -> None:
    """The saved case records the outcome the command had (status, values, conflict rules or
    invalid fields) and tests/test_cases.py's `test_case` replays it successfully."""
    argv, expected_code = REQUESTS[name]
    code, case = save(tmp_path, capsys, name, argv)
    assert code == expected_code
    doc = tomllib.loads(case.read_text(encoding="utf-8"))
    status = {0: "resolved", 1: "conflict", 2: "invalid"}[code]
    assert doc["expect"]["status"] == status
    assert (
        doc["expect"].get("values")
        or doc["expect"].get("conflict_rules")
        or doc["expect"].get("invalid_fields")
    )
    replay(case)


def test_a_wrong_expectation_fails_the_replay(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Guard: the replay is a real check. Flip a saved case's expected value or status and
    `test_case` fails."""
    _, case = save(tmp_path, capsys, "resolved", REQUESTS["resolved"][0])
    text = case.read_text(encoding="utf-8")
    assert 'kernel = "trtllm"' in text
    case.write_text(text.replace('kernel = "trtllm"', 'kernel = "triton"'), encoding="utf-8")
    with pytest.raises(AssertionError, match="kernel"):
        replay(case)
    case.write_text(text.replace('status = "resolved"', 'status = "conflict"'), encoding="utf-8")
    with pytest.raises(AssertionError):
        replay(case)


def test_saved_sglang_case_replays(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """On the shipped pack the case names the pack by name (`pack = "sglang"`) and replays."""
    if not sglang_loads():
        pytest.skip("the sglang pack does not load yet")
    code, case = save(
        tmp_path,
        capsys,
        "sglang",
        ["--set", "platform=cuda", "--set", "gpu_arch=sm90", "--set", "architecture=LlamaForCausalLM"],
        "sglang",
    )
    assert code == 0
    assert tomllib.loads(case.read_text())["pack"] == "sglang"
    replay(case)


HOSTILE_INPUT = [
    ("newline-in-value", "kernel=cut\nlass"),
    ("tab-and-bell", "kernel=cut\tl\x07ass"),
    ("delete-char", "kernel=cutlass\x7f"),
    ("non-ascii-field", "k\u00e9rnel=triton"),
    ("control-in-field", "ker\x01nel=triton"),
]


@pytest.mark.parametrize(("label", "item"), HOSTILE_INPUT, ids=[h[0] for h in HOSTILE_INPUT])
def test_save_case_escapes_every_character(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], label: str, item: str
) -> None:
    """Whatever the user typed, the saved case is TOML that replays to the same invalid input."""
    code, case = save(tmp_path, capsys, label, ["--set", "gpu=b200", "--set", item])
    assert code == 2
    doc = tomllib.loads(case.read_text(encoding="utf-8"))
    assert doc["expect"]["status"] == "invalid"
    replay(case)


def test_toml_str_helper_is_the_fix() -> None:
    """The escaping the fix needs (tests/hostile.py's toml_str, proposed for cases._literal)
    round-trips every hostile input above."""
    for _, item in HOSTILE_INPUT:
        assert tomllib.loads(f"v = {toml_str(item)}")["v"] == item


@pytest.mark.property
@hypothesis.settings(max_examples=300, deadline=None)
@hypothesis.given(
    keys=st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=4, unique=True),
    texts=st.lists(st.text(max_size=40), min_size=4, max_size=4),
    number=st.integers(min_value=-(2**63), max_value=2**63 - 1),
    flag=st.booleans(),
    ref=st.text(min_size=1, max_size=20),
)
def test_the_case_writer_round_trips_any_text(
    keys: list[str], texts: list[str], number: int, flag: bool, ref: str
) -> None:
    """The case writer stays hand-written (README, "Conventions and libraries": tomli-w writes
    the same values as tables instead of the one-line request, cannot write the comment, and
    raises on a lone surrogate, which a non-UTF-8 command line gives). Any key and value reads
    back with tomllib as it went in, a lone surrogate as U+FFFD."""
    from solver import load_pack
    from solver.render.cases import case_text

    pack = load_pack(str(TOY))
    request: dict[str, Any] = {k: v for k, v in zip(keys, [*texts, number, flag], strict=False)}
    outcome = {"status": texts[0], "values": {keys[0]: number, "x": flag}, "conflict_rules": texts[1:3]}
    doc = tomllib.loads(case_text(pack, request, flag, outcome, pack_ref=ref))

    def clean(value: Any) -> Any:
        if isinstance(value, str):
            return "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in value)
        return value

    read = {**doc["request"]["facts"], **doc["request"]["options"]}
    assert read == {clean(k): clean(v) for k, v in request.items()}
    assert doc["expect"]["status"] == clean(texts[0])
    assert doc["expect"]["values"] == {clean(keys[0]): number, "x": flag}
    assert doc["expect"]["conflict_rules"] == [clean(t) for t in texts[1:3]]
    assert doc["pack"] == clean(ref) and doc["request"]["strict"] is flag


def test_an_empty_case_file_name_is_refused_not_skipped(capsys: pytest.CaptureFixture[str]) -> None:
    # `--save-case ''` was false, so no case was written and the command said nothing (exit 0)
    argv = ["resolve", "--set", "platform=cuda", "--set", "gpu_arch=sm90", "--save-case", ""]
    assert main(argv) == 2
    assert "--save-case ''" in capsys.readouterr().err
