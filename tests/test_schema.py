"""Every `--json` document of every command validates against `confsolve schema`."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from solver import PackError, load_pack
from solver.cli.commands import build_parser, main
from solver.render.schema import DOCUMENT_KINDS, output_schema

TOY = str(Path(__file__).parent / "fixtures" / "packs" / "toy")
SGLANG_FACTS = ["--set", "platform=cuda", "--set", "gpu_arch=sm90", "--set", "architecture=LlamaForCausalLM"]


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    schema = output_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def commands() -> set[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return set(sub.choices)


def sglang_loads() -> bool:
    try:
        load_pack("sglang")
    except PackError:
        return False
    return True


def toy_runs() -> list[tuple[list[str], str, int]]:
    """(argv, expected status, expected exit code) for the toy pack."""
    p = ["--pack", TOY]
    runs = [
        (["resolve", *p, "--set", "gpu=b200", "--set", "quant=fp4"], "resolved", 0),
        (
            ["resolve", *p, "--set", "gpu=h100", "--set", "quant=none", "--set", "kernel=cutlass"],
            "resolved",
            0,
        ),  # with an adjustment
        (["resolve", *p, "--set", "gpu=h100", "--set", "quant=fp4", "--set", "tp=8"], "conflict", 1),
        (["resolve", *p, "--set", "gpu=b200", "--set", "kernel=cutlas"], "error", 2),
        (["resolve", *p, "--set", "nonsense"], "error", 2),
        (["choices", *p, "--set", "gpu=a100"], "choices", 0),
        (["choices", "kernel", *p, "--set", "gpu=a100", "--set", "quant=none"], "choices", 0),
        (["check", *p, "--set", "gpu=b200"], "resolved", 0),  # the resolve document, mode predict
        (["check", *p, "--set", "gpu=a100", "--set", "quant=fp4"], "conflict", 1),
        (["why", "kernel", *p, "--set", "gpu=b200", "--set", "quant=fp4", "--set", "fusion=true"], "why", 0),
        (["show", *p], "pack", 0),
        (["matrix", "quant", "gpu", *p], "matrix", 0),
        (["matrix", "quant", "gpu", *p, "--set", "gpu=a100"], "error", 2),
    ]
    available = commands()
    if "count" in available:
        runs.append((["count", *p, "--set", "gpu=b200"], "counted", 0))
        runs.append((["count", *p, "--by", "kernel"], "counted", 0))
        runs.append((["count", *p, "--limit", "1"], "bounded", 4))  # cut short: bounds
        runs.append((["count", *p, "--by", "kernel", "--limit", "2"], "bounded", 4))
    if "lint" in available:
        runs.append((["lint", *p], "linted", 0))
    return runs


@pytest.mark.parametrize(("argv", "status", "code"), toy_runs(), ids=lambda v: str(v)[:60])
def test_toy_documents_validate(
    validator: jsonschema.Draft202012Validator,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    status: str,
    code: int,
) -> None:
    got = main([*argv, "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["status"] == status and (status == "linted" or got == code)
    validator.validate(doc)


def test_graph_and_broken_pack_documents_validate(
    validator: jsonschema.Draft202012Validator, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    main(["graph", "--pack", TOY, "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["status"] == "graph"
    validator.validate(doc)
    (tmp_path / "pack.toml").write_text('[pack]\nname = "bad"\nversion = "1"\nfiles = ["x.toml"]\n')
    assert main(["resolve", "--pack", str(tmp_path), "--set", "a=1", "--json"]) == 3
    doc = json.loads(capsys.readouterr().out)
    assert doc["status"] == "error" and doc["error"]["problems"]
    validator.validate(doc)


@pytest.mark.skipif(not sglang_loads(), reason="the sglang pack does not load yet")
@pytest.mark.parametrize(
    ("argv", "status"),
    [
        (["resolve", *SGLANG_FACTS], "resolved"),
        (["resolve", *SGLANG_FACTS, "--set", "quantization=fp4x"], "error"),
        (["check", *SGLANG_FACTS, "--set", "tp_size=8"], "resolved"),
        (["packs"], "packs"),
        (["show"], "pack"),
    ],
)
def test_sglang_documents_validate(
    validator: jsonschema.Draft202012Validator,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    status: str,
) -> None:
    main([*argv, "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["status"] == status
    if argv[0] == "check":
        assert doc["mode"] == "predict"
    validator.validate(doc)


def test_a_wrong_document_is_rejected(validator: jsonschema.Draft202012Validator) -> None:
    with pytest.raises(jsonschema.ValidationError):
        validator.validate({"schema": 1, "status": "resolved", "values": {}})
    with pytest.raises(jsonschema.ValidationError):
        validator.validate({"schema": 2, "status": "counted", "count": 3})
    with pytest.raises(jsonschema.ValidationError):
        validator.validate({"schema": 1, "status": "unheard-of"})


def test_schema_command_prints_the_whole_schema_or_one_kind(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    whole = json.loads(capsys.readouterr().out)
    assert [ref["$ref"] for ref in whole["oneOf"]] == [f"#/$defs/{k}_document" for k in DOCUMENT_KINDS]
    assert main(["schema", "--kind", "counted"]) == 0
    one = json.loads(capsys.readouterr().out)
    jsonschema.validate({"schema": 1, "status": "counted", "count": 4}, one)
    with pytest.raises(SystemExit) as exc:
        main(["schema", "--kind", "nope"])
    assert exc.value.code == 2
