"""The one table of output formats: for every answer a command prints, the formats it has, each
with its writer and the JSON document kinds it prints.

`ANSWERS` is what the command line reads: a command's `--format` choices and default
(`choices`, `default`), which format `--json` stands for and which one wins over it (`chosen`),
and the writer that prints it (`write`). A writer is named "module:function" and imported only
when it runs, so `confsolve --help` imports none and a command only the one it prints with (this
module itself imports nothing but `typing` and `solver.frozen`). A writer is called with the answer's subject
(`Answer.takes` says what, the same for every format of the answer) and returns exactly what goes
to stdout; `notes`, when a format has them, returns what goes to stderr after it (the launch
command alone on stdout, its adjustments on stderr).

Not in the table: errors (`solver.cli.commands.emit_error`: every command's `error` document and
`resolve`'s `conflict`, text on stderr; `check`'s conflict is its answer), the configurator page
(`solver/serve`: its HTML is a static file, its JSON documents go over HTTP), shell completion
scripts (`completion SHELL`: one script per shell, not a format of an answer) and case files
(`resolve --save-case`: a file written besides the answer, `render/cases.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from solver.frozen import Frozen, frozen_type

__all__ = ["ANSWERS", "Answer", "Format", "chosen", "load_writer", "write"]


@frozen_type
class Format(Frozen):
    name: str
    writer: str  # "module:function" -> the text for stdout
    documents: tuple[str, ...] = ()  # the JSON document kinds it prints (render/schema.py)
    listed: bool = True  # among --format's choices (False: reached by --json alone)
    over_json: bool = False  # --format NAME wins over --json
    notes: str | None = None  # "module:function" -> the text for stderr, after stdout


@frozen_type
class Answer(Frozen):
    takes: str  # the writers' arguments, in order
    formats: tuple[Format, ...]
    option: bool = False  # the command has --format (else text, or --json)
    help: str | None = None  # the help of --format
    default: str | None = None  # --format's argparse default (None: the first format)

    @property
    def choices(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.formats if f.listed)

    def format(self, name: str) -> Format:
        for found in self.formats:
            if found.name == name:
                return found
        raise ValueError(f"unknown format {name!r}; use one of {', '.join(f.name for f in self.formats)}")


_R = "solver.render."
_TEXT, _DOC = _R + "answers:", _R + "documents:"

ANSWERS: dict[str, Answer] = {
    "resolve": Answer(
        "pack, resolution, launch command read (or None), the option fields to write, "
        "the Unsatisfiable saying no launch command gives the answer (or None)",
        (
            Format("text", _TEXT + "resolution"),
            Format("json", _DOC + "resolution", ("resolved",)),
            Format(
                "argv",
                _R + "launch:argv_line",
                over_json=True,  # the command line is what a script runs: --json does not replace it
                notes=_R + "launch:argv_notes",
            ),
        ),
        option=True,
        help="text (default), json (= --json), or argv: the launch command to run, "
        "one shell-quoted line (with a launch command after --: yours, completed)",
    ),
    "why": Answer(
        "pack, resolution, field, the fields it depends on, its possible values",
        (Format("text", _TEXT + "why"), Format("json", _DOC + "why", ("why",))),
    ),
    "choices": Answer(
        "pack, choices",
        (Format("text", _TEXT + "choices"), Format("json", _DOC + "choices", ("choices",))),
    ),
    "check": Answer(
        "pack, resolution or Unsatisfiable, how a repair is written (or None), the launch command's notes",
        (Format("text", _TEXT + "check"), Format("json", _DOC + "check", ("resolved", "conflict"))),
    ),
    "graph": Answer(
        "pack",
        (
            Format("dot", _R + "graph:dot"),
            Format("mermaid", _R + "graph:mermaid"),
            Format("json", _R + "graph:graph_json", ("graph",)),
            Format("svg", _R + "graph:svg"),
        ),
        option=True,
        default="dot",
        help="dot (default), mermaid, json (= --json) or svg (Graphviz's dot on PATH draws it)",
    ),
    "packs": Answer(
        "rows (name, version, description)",
        (Format("text", _TEXT + "packs"), Format("json", _DOC + "packs", ("packs",))),
    ),
    "show": Answer("pack", (Format("text", _TEXT + "pack"), Format("json", _DOC + "pack", ("pack",)))),
    "schema": Answer("the JSON Schema", (Format("json", _DOC + "schema"),)),
    "matrix": Answer(
        "matrix",
        (
            Format("text", _R + "matrix:text"),
            Format("markdown", _R + "matrix:markdown"),
            Format("csv", _R + "matrix:csv_text"),
            Format("html", _R + "matrix:html_page"),
            Format("json", _DOC + "matrix", ("matrix",), listed=False),
        ),
        option=True,
        help="text (default), markdown, csv (one row per pair) or html (reasons on hover)",
        default="text",
    ),
    "lint": Answer(
        "lint report", (Format("text", _TEXT + "report"), Format("json", _DOC + "report", ("linted",)))
    ),
    "explain": Answer(  # lint --explain CODE
        "code, its entry (severity, title, explain), its text",
        (Format("text", _TEXT + "explained"), Format("json", _DOC + "explained", ("explained",))),
    ),
    "count": Answer(
        "pack, count or CountLimitReached, the inputs, the --by field (or None)",
        (
            Format("text", _TEXT + "count", notes=_TEXT + "count_notes"),
            Format("json", _DOC + "count", ("counted", "bounded")),
        ),
    ),
    "diff": Answer("diff", (Format("text", _TEXT + "report"), Format("json", _DOC + "diff", ("diffed",)))),
}


def chosen(answer: str, fmt: str | None, json_flag: bool) -> str:
    """The format a command prints: `--format` (else the first), replaced by "json" under
    `--json` unless the format wins over it."""
    table = ANSWERS[answer]
    picked = table.format(fmt or table.formats[0].name)
    if json_flag and not picked.over_json:
        return "json"
    return picked.name


def load_writer(spec: str) -> Callable[..., str]:
    """The function a "module:function" spec names (imported now)."""
    import importlib

    module, _, function = spec.partition(":")
    found: Callable[..., str] = getattr(importlib.import_module(module), function)
    return found


def write(answer: str, fmt: str, *subject: Any) -> tuple[str, str]:
    """What `answer` in format `fmt` prints: (stdout text, stderr text)."""
    entry = ANSWERS[answer].format(fmt)
    out = load_writer(entry.writer)(*subject)
    notes = load_writer(entry.notes)(*subject) if entry.notes is not None else ""
    return out, notes
