"""Every JSON document every command prints validates against `confsolve schema`, for every
status it can end in, on every shipped pack (`confsolve packs`, so a pack added later is
covered), and a few fixture packs for what the shipped ones are too slow for (lint).

The requests come from each pack's own case files (tests/cases/PACK/*.toml): the first that
resolves, the first that conflicts. A status a pack has no case for is skipped, saying so.
"""

from __future__ import annotations

import json
import sys
import tomllib
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hostile import FIXTURES, ROOT, TOY

import constraints
from solver import load_pack
from solver.cli.commands import main
from solver.render.schema import DOCUMENT_KINDS, output_schema
from solver.values import MAX_SAFE_INTEGER, exact_count

CASES = ROOT / "tests" / "cases"
LINT_PROBLEMS = str(FIXTURES / "packs" / "lint-problems")


@cache
def _validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(output_schema())


def _packs() -> list[str]:
    """The shipped packs, as `confsolve packs --json` lists them."""
    import io
    from contextlib import redirect_stdout

    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["packs", "--json"]) == 0
    return [row["name"] for row in json.loads(out.getvalue())["packs"]]


def _request(pack: str, status: str) -> list[str] | None:
    """--set arguments of the pack's first case file that ends in `status`, or None."""
    for path in sorted((CASES / pack).glob("*.toml")) if (CASES / pack).is_dir() else []:
        case = tomllib.loads(path.read_text(encoding="utf-8"))
        request = case["request"]
        # A predict-mode case ends in `status` only as typed (check), not under resolve.
        if case.get("pack") != pack or case["expect"]["status"] != status or request.get("predict"):
            continue
        pins = {**request.get("facts", {}), **request.get("options", {})}
        return [
            w
            for k, v in pins.items()
            for w in ("--set", f"{k}={str(v).lower() if isinstance(v, bool) else v}")
        ]
    return None


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    code = main(argv)
    out = capsys.readouterr().out
    doc = json.loads(out)
    errors = sorted(_validator().iter_errors(doc), key=lambda e: list(e.path))
    assert not errors, (argv, [f"{'/'.join(map(str, e.path))}: {e.message[:300]}" for e in errors[:5]])
    return code, doc


def _two_options(pack: str) -> tuple[str, str]:
    loaded = load_pack(pack)
    small = [n for n, f in loaded.fields.items() if f.kind == "option" and len(f.domain) <= 6]
    return small[0], small[1]


def _past_loading(pack: str) -> str:
    """A --budget that loading the pack leaves one step of (a step per LOAD_BYTES_PER_STEP bytes)."""
    from solver.budget import LOAD_BYTES_PER_STEP

    directory = ROOT / "constraints" / pack
    listed = tomllib.loads((directory / "pack.toml").read_text(encoding="utf-8"))["pack"]["files"]
    size = sum((directory / name).stat().st_size for name in ["pack.toml", *listed])
    return str(size // LOAD_BYTES_PER_STEP + 1)


# (command words after the pack's request, the exit code, the status) for each document kind
def _scenarios(pack: str) -> list[tuple[str, list[str], int, str]]:
    ok, conflict = _request(pack, "resolved"), _request(pack, "conflict")
    row, col = _two_options(pack)
    p = ["--pack", pack]
    out: list[tuple[str, list[str], int, str]] = [
        ("packs", ["packs", "--json"], 0, "packs"),
        ("show", ["show", *p, "--json"], 0, "pack"),
        ("graph", ["graph", *p, "--json"], 0, "graph"),
        ("bad input", ["resolve", *p, "--set", "no_such_field=1", "--json"], 2, "error"),
        ("bad value", ["check", *p, "--set", f"{row}=no-such-value", "--json"], 2, "error"),
        ("missing pack", ["show", "--pack", "./no/such/pack", "--json"], 2, "error"),
        ("explain", ["lint", "--explain", "CS101", "--json"], 0, "explained"),
    ]
    if ok is not None:
        out += [
            ("resolve", ["resolve", *p, *ok, "--json"], 0, "resolved"),
            ("check", ["check", *p, *ok, "--json"], 0, "checked|resolved"),  # predict mode
            ("why", ["why", row, *p, *ok, "--json"], 0, "why"),
            ("choices", ["choices", row, *p, *ok, "--json"], 0, "choices"),
            ("matrix", ["matrix", row, col, *p, *ok, "--json"], 0, "matrix"),
            ("count", ["count", *p, *ok, "--json"], 0, "counted"),
            ("budget", ["resolve", *p, *ok, "--budget", "1", "--json"], 4, "error"),  # while loading
            ("budget in search", ["resolve", *p, *ok, "--budget", _past_loading(pack), "--json"], 4, "error"),
            ("count bounded", ["count", *p, "--limit", "1", "--json"], 4, "bounded"),
            ("diff", ["diff", pack, pack, "--json"], 0, "diffed"),
        ]
    if conflict is not None:
        out += [
            ("resolve conflict", ["resolve", *p, *conflict, "--json"], 1, "conflict"),
            ("check conflict", ["check", *p, *conflict, "--json"], 1, "conflict"),
        ]
    return out


SHIPPED = _packs()
SCENARIOS = [(pack, *s) for pack in SHIPPED for s in _scenarios(pack)]


@pytest.mark.parametrize(
    ("pack", "name", "argv", "code", "status"), SCENARIOS, ids=[f"{s[0]}-{s[1]}" for s in SCENARIOS]
)
def test_every_document_of_every_shipped_pack_validates(
    pack: str, name: str, argv: list[str], code: int, status: str, capsys: pytest.CaptureFixture[str]
) -> None:
    got, doc = _run(argv, capsys)
    assert got == code and doc["status"] in status.split("|"), doc


@pytest.mark.parametrize("pack", SHIPPED)
def test_a_pack_has_both_a_resolved_and_a_conflict_case(pack: str) -> None:
    """So the table above covers every status for it (a new pack brings its case files)."""
    missing = [s for s in ("resolved", "conflict") if _request(pack, s) is None]
    if missing:
        pytest.skip(f"no tests/cases/{pack}/ case that ends {', '.join(missing)}")


def test_diff_documents_validate(capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = _run(["diff", str(TOY), str(FIXTURES / "packs" / "toy-v2"), "--json"], capsys)
    assert code == 0 and doc["status"] == "diffed"
    code, doc = _run(["diff", str(TOY), str(TOY), "--json"], capsys)
    assert code == 0 and doc["status"] == "diffed"


def test_lint_documents_validate_and_are_byte_identical(capsys: pytest.CaptureFixture[str]) -> None:
    outputs = []
    for _ in range(2):
        code = main(["lint", "--pack", LINT_PROBLEMS, "--json"])
        outputs.append(capsys.readouterr().out)
        assert code == 1
    assert outputs[0] == outputs[1]
    doc = json.loads(outputs[0])
    assert not list(_validator().iter_errors(doc)) and doc["status"] == "linted"
    assert "seconds" not in doc["stats"]


def test_every_finding_code_explains_itself_as_a_document(capsys: pytest.CaptureFixture[str]) -> None:
    from solver.lint.checks import CODES

    for code in CODES:
        got, doc = _run(["lint", "--explain", code.lower(), "--json"], capsys)
        assert got == 0 and doc["code"] == code and doc["explain"]


def test_every_command_takes_json_or_says_why_not(capsys: pytest.CaptureFixture[str]) -> None:
    from solver.cli.commands import COMMANDS

    for name, (_, help_line) in COMMANDS.items():
        if help_line is None:
            continue
        with pytest.raises(SystemExit):
            main([name, "--help"])
        text = " ".join(capsys.readouterr().out.split())
        assert "--json" in text or "No --json" in text, name


def test_schema_lists_every_kind_and_a_version() -> None:
    schema = output_schema()
    assert [ref["$ref"].split("/")[-1] for ref in schema["oneOf"]] == [
        f"{k}_document" for k in DOCUMENT_KINDS
    ]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for kind in DOCUMENT_KINDS:
        assert f"`{kind}`" in readme, kind


@pytest.mark.parametrize(
    ("n", "shown"),
    [
        (0, 0),
        (MAX_SAFE_INTEGER, MAX_SAFE_INTEGER),
        (MAX_SAFE_INTEGER + 1, str(MAX_SAFE_INTEGER + 1)),
        (10**40, "1" + "0" * 40),
        (None, None),
    ],
)
def test_counts_beyond_2_53_are_strings(n: int | None, shown: int | str | None) -> None:
    assert exact_count(n) == shown


def test_a_huge_count_is_a_valid_string(capsys: pytest.CaptureFixture[str]) -> None:
    """A pack whose valid configurations exceed 2**53 (60 free booleans) counts as digits."""
    code, doc = _run(["count", "--pack", _wide_pack(), "--json"], capsys)
    assert code == 0 and doc["count"] == str(2**60)


@cache
def _wide_pack() -> str:
    import tempfile

    root = Path(tempfile.mkdtemp(prefix="wide-pack-"))
    fields = "".join(f'[field.f{i}]\nkind = "option"\ndomain = [false, true]\n' for i in range(60))
    (root / "pack.toml").write_text('[pack]\nname = "wide"\nversion = "1"\nfiles = ["f.toml"]\n')
    (root / "f.toml").write_text(fields)
    return str(root)


def test_a_count_of_more_digits_than_python_prints_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    """A count of 5,001 digits (a pack of thousands of fields; Python converts at most 4,300 by
    default) prints in full, as text and as JSON, and the process's limit is left as it was."""
    from solver.values import count_text

    limit = sys.get_int_max_str_digits()
    big = 10**5000 + 7
    assert count_text(big) == "1" + "0" * 4999 + "7"
    assert exact_count(big) == count_text(big)
    assert sys.get_int_max_str_digits() == limit


def test_shipped_packs_are_what_the_documents_iterate() -> None:
    assert constraints.shipped_packs() == SHIPPED
