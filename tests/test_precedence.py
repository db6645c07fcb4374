"""One precedence merge (solver/inputs/precedence.py): what the user typed wins over what was read,
detected or assumed, and among the read sources a later one wins; the CLI and the launcher merge
through it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from solver import load_pack
from solver.cli.commands import main
from solver.inputs.precedence import read_values, typed_fields
from solver.launcher import resolve_namespace

TOY = Path(__file__).parent / "fixtures" / "packs" / "toy"
MODEL = Path(__file__).parent / "fixtures" / "models" / "qwen3-30b-a3b-fp8"


def test_a_later_source_wins_and_a_typed_field_keeps_no_read_value() -> None:
    pack = load_pack(TOY)
    low, high = {"gpu": "a100", "tp": 2}, {"gpu": "h100"}
    assert read_values(pack, {}, low, high) == {"gpu": "h100", "tp": 2}
    assert read_values(pack, {}, high, low) == {"gpu": "a100", "tp": 2}
    # Typed under any spelling of the field (its flag, kebab-case): nothing read for it is kept.
    for typed in ({"gpu": "b200"}, {"--gpu": "b200"}, ["gpu"]):
        assert read_values(pack, typed, low, high) == {"tp": 2}, typed
    assert typed_fields(pack, ["--gpu", "no-such-flag"]) == {"gpu", "no-such-flag"}
    assert read_values(pack, ["no-such-flag"], low) == low  # names no field: overrides nothing


def test_the_launcher_lets_a_typed_value_win_over_the_facts_it_was_given() -> None:
    pack = load_pack(TOY)
    typed = resolve_namespace({"gpu": "b200", "quant": None}, pack, {"gpu": "a100"})
    assert typed.values["gpu"] == "b200" and typed.provenance["gpu"].source == "fact"
    read = resolve_namespace({"gpu": None}, pack, {"gpu": "h100"})
    assert read.values["gpu"] == "h100"


def _sources(capsys: pytest.CaptureFixture[str], *words: str) -> dict[str, tuple[object, str]]:
    argv = ["resolve", "--set", "platform=hip", "--set", "gpu_arch=gfx942", "--env-from-os", *words, "--json"]
    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    return {
        n: (doc["values"][n], doc["provenance"][n]["source"]) for n in ("SGLANG_USE_AITER", "architecture")
    }


def test_the_command_line_order_set_then_assume_then_model_config_then_environment(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SGLANG_USE_AITER", "1")
    model = ("--model-config", str(MODEL))
    read = _sources(capsys, *model)
    assert read["SGLANG_USE_AITER"] == ("1", "env")
    assert read["architecture"] == ("Qwen3MoeForCausalLM", "model-config")
    assumed = _sources(capsys, *model, "--assume", "SGLANG_USE_AITER=0", "--assume", "architecture=other")
    assert assumed == {"SGLANG_USE_AITER": ("0", "assumed"), "architecture": ("other", "assumed")}
    typed = _sources(
        capsys,
        *model,
        "--assume",
        "SGLANG_USE_AITER=1",
        "--set",
        "SGLANG_USE_AITER=0",
        "--set",
        "architecture=other",
    )
    assert typed == {"SGLANG_USE_AITER": ("0", "fact"), "architecture": ("other", "fact")}
