"""The one formats table (`solver/render/formats.py`): every command's `--format` choices, its
`--json` and what it prints come from the table, and every JSON document kind is printed by a
format of it or by a named home outside it.

Not a restatement of the table: the parsers are built with a *changed* table and must follow it
(a command that hard-codes its choices again keeps the old ones and fails), and every command is
run with every format while the table's writers are replaced (a command that prints by itself
prints its own text and fails).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest

from solver import frozen
from solver.cli.commands import COMMANDS, build_parser, main
from solver.render import formats
from solver.render.schema import DOCUMENT_KINDS

FIXTURES = Path(__file__).parent / "fixtures" / "packs"
TOY, TOY2 = str(FIXTURES / "toy"), str(FIXTURES / "toy-v2")

# The answers printed by a command of another name.
COMMAND_OF = {"explain": "lint"}
# Document kinds printed outside the table, and where.
ELSEWHERE = {
    "error": "solver.cli.commands.emit_error (every command's bad input, budget, broken pack)",
    "configurator": "solver/serve (over HTTP)",
    "state": "solver/serve (over HTTP)",
    "reasons": "solver/serve (over HTTP)",
    "facts": "solver/serve (over HTTP)",
    "checked": "nothing prints it today (render/schema.py describes it)",
}


def _parser_of(command: str) -> argparse.ArgumentParser:
    sub = next(a for a in build_parser(command)._actions if isinstance(a, argparse._SubParsersAction))
    parser: argparse.ArgumentParser = sub.choices[command]
    return parser


def _option(parser: argparse.ArgumentParser, flag: str) -> argparse.Action | None:
    return parser._option_string_actions.get(flag)


def test_format_options_follow_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each --format's choices, default and help are the table's: changed in the table, changed
    in the parser (order too)."""
    with_option = [name for name, answer in formats.ANSWERS.items() if answer.option]
    assert with_option == ["resolve", "graph", "matrix"]
    for name in with_option:
        table = formats.ANSWERS[name]
        added = formats.Format("yaml", "solver.render.answers:report")
        changed = frozen.replace(
            table, formats=(added, *reversed(table.formats)), help=f"patched {name}", default="yaml"
        )
        monkeypatch.setitem(formats.ANSWERS, name, changed)
        action = _option(_parser_of(name), "--format")
        assert action is not None, name
        assert list(action.choices or ()) == ["yaml", *reversed(table.choices)], name
        assert (action.default, action.help) == ("yaml", f"patched {name}"), name


def test_a_command_has_format_and_json_exactly_where_the_table_says() -> None:
    """--format only for an answer with `option`, --json only for an answer with a json format,
    and no command outside the table prints either."""
    answers: dict[str, list[formats.Answer]] = {}
    for name, answer in formats.ANSWERS.items():
        answers.setdefault(COMMAND_OF.get(name, name), []).append(answer)
    for command in COMMANDS:
        if command == "__complete":
            continue
        parser = _parser_of(command)
        mine = answers.get(command, [])
        has_format = any(a.option for a in mine)
        has_json = any(f.name == "json" for a in mine for f in a.formats)
        assert (_option(parser, "--format") is not None) == has_format, command
        assert (_option(parser, "--json") is not None) == has_json, command


def test_every_writer_and_document_kind_is_real() -> None:
    printed = set()
    for answer in formats.ANSWERS.values():
        for fmt in answer.formats:
            assert callable(formats.load_writer(fmt.writer)), fmt
            if fmt.notes is not None:
                assert callable(formats.load_writer(fmt.notes)), fmt
            assert set(fmt.documents) <= set(DOCUMENT_KINDS), fmt
            assert bool(fmt.documents) == (fmt.name == "json" and answer.takes != "the JSON Schema"), fmt
            printed.update(fmt.documents)
    assert printed.isdisjoint(set(ELSEWHERE) - {"conflict"})
    assert printed | set(ELSEWHERE) == set(DOCUMENT_KINDS)


REQUEST = ["--pack", TOY, "--set", "gpu=h100", "--set", "quant=fp8"]
CONFLICT = ["--pack", TOY, "--set", "gpu=a100", "--set", "quant=fp4"]
# (command line, answer, format it must print with); --json and --format together too.
RUNS: list[tuple[list[str], str, str]] = [
    (["resolve", *REQUEST], "resolve", "text"),
    (["resolve", *REQUEST, "--json"], "resolve", "json"),
    (["resolve", *REQUEST, "--format", "json"], "resolve", "json"),
    (["resolve", *REQUEST, "--format", "text", "--json"], "resolve", "json"),
    (["resolve", *REQUEST, "--format", "argv"], "resolve", "argv"),
    (["resolve", *REQUEST, "--format", "argv", "--json"], "resolve", "argv"),
    (["resolve", *REQUEST, "--format", "argv", "--minimal"], "resolve", "argv"),
    (["why", "kernel", *REQUEST], "why", "text"),
    (["why", "kernel", *REQUEST, "--json"], "why", "json"),
    (["choices", *REQUEST], "choices", "text"),
    (["choices", *REQUEST, "--json"], "choices", "json"),
    (["check", *REQUEST], "check", "text"),
    (["check", *REQUEST, "--json"], "check", "json"),
    (["check", *CONFLICT], "check", "text"),
    (["check", *CONFLICT, "--json"], "check", "json"),
    (["graph", "--pack", TOY], "graph", "dot"),
    (["graph", "--pack", TOY, "--format", "mermaid"], "graph", "mermaid"),
    (["graph", "--pack", TOY, "--format", "svg"], "graph", "svg"),
    (["graph", "--pack", TOY, "--format", "json"], "graph", "json"),
    (["graph", "--pack", TOY, "--format", "mermaid", "--json"], "graph", "json"),
    (["packs"], "packs", "text"),
    (["packs", "--json"], "packs", "json"),
    (["show", "--pack", TOY], "show", "text"),
    (["show", "--pack", TOY, "--json"], "show", "json"),
    (["schema"], "schema", "json"),
    (["schema", "--pack-files"], "schema", "json"),
    (["matrix", "quant", "gpu", "--pack", TOY], "matrix", "text"),
    (["matrix", "quant", "gpu", "--pack", TOY, "--format", "markdown"], "matrix", "markdown"),
    (["matrix", "quant", "gpu", "--pack", TOY, "--format", "csv"], "matrix", "csv"),
    (["matrix", "quant", "gpu", "--pack", TOY, "--format", "html"], "matrix", "html"),
    (["matrix", "quant", "gpu", "--pack", TOY, "--format", "csv", "--json"], "matrix", "json"),
    (["lint", "--pack", TOY], "lint", "text"),
    (["lint", "--pack", TOY, "--json"], "lint", "json"),
    (["lint", "--explain", "CS101"], "explain", "text"),
    (["lint", "--explain", "CS101", "--json"], "explain", "json"),
    (["count", "--pack", TOY, "--by", "gpu"], "count", "text"),
    (["count", "--pack", TOY, "--json"], "count", "json"),
    (["count", "--pack", TOY, "--limit", "1", "--json"], "count", "json"),
    (["diff", TOY, TOY2], "diff", "text"),
    (["diff", TOY, TOY2, "--json"], "diff", "json"),
]


def test_the_runs_cover_every_format() -> None:
    covered = {(answer, fmt) for _, answer, fmt in RUNS}
    assert covered == {(n, f.name) for n, a in formats.ANSWERS.items() for f in a.formats}


@pytest.mark.parametrize(("argv", "answer", "fmt"), RUNS, ids=[" ".join(r[0][:1] + r[0][-2:]) for r in RUNS])
def test_every_command_prints_with_the_tables_writer(
    argv: list[str],
    answer: str,
    fmt: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """With every writer of the table replaced, each command prints exactly the replacement of
    the format it was asked for (and its notes on stderr): nothing printed its own way."""

    def stand_in(spec: str) -> Any:
        return lambda *subject: f"<{spec}>\n"

    monkeypatch.setattr(formats, "load_writer", stand_in)
    code = main(argv)
    out, err = capsys.readouterr()
    entry = formats.ANSWERS[answer].format(fmt)
    assert out == f"<{entry.writer}>\n", (argv, err)
    if entry.notes is not None:
        assert err.endswith(f"<{entry.notes}>\n")
    assert code in (0, 1, 4), err


def test_readme_says_which_command_prints_each_document() -> None:
    """README.md, "JSON documents": each kind's row names every command whose answer prints it."""
    readme = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    section = readme.split("## JSON documents", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 2 and cells[0].startswith("`"):
            rows[cells[0].strip("`")] = cells[1]
    for name, answer in formats.ANSWERS.items():
        command = "lint --explain" if name == "explain" else name
        for fmt in answer.formats:
            for kind in fmt.documents:
                assert f"`{command}" in rows[kind], (kind, command, rows[kind])
