"""Scenario case files: a request and its expected outcome, as TOML (tests/cases/README.md).

`confsolve resolve --save-case FILE` writes one from a user's command line, so a bug report
becomes a replayable test in one step (libsolv's testcase idea). Only the standard library.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from solver.model import Pack, Pin, Scalar
from solver.values import show

__all__ = ["case_text", "save_case"]


# TOML 1.0 basic strings: `"` and backslash escaped, and every control character (U+0000-U+001F,
# U+007F), by its short escape where TOML has one, else as a \uXXXX escape; the rest is literal.
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def _string(text: str) -> str:
    """`text` as a TOML basic string. A lone surrogate (an undecodable byte of the command line,
    kept by Python as U+DC80-U+DCFF) has no TOML or UTF-8 form: it is written as U+FFFD."""
    out = []
    for ch in text:
        code = ord(ch)
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\u{code:04X}")
        elif 0xD800 <= code <= 0xDFFF:
            out.append("\ufffd")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _literal(value: Scalar) -> str:
    if isinstance(value, int):  # booleans too: TOML spells them as `show` does
        return show(value)
    return _string(str(value))


def _table(values: Mapping[str, Scalar]) -> str:
    items = ", ".join(f"{_key(k)} = {_literal(v)}" for k, v in values.items())
    return "{ " + items + " }" if items else "{}"


def _key(name: str) -> str:
    """A bare key when TOML allows one (ASCII letters, digits, `_` and `-`), else a quoted key."""
    return name if _BARE_KEY.fullmatch(name) else _string(name)


def case_text(
    pack: Pack,
    request: Mapping[str, Any],
    strict: bool,
    outcome: Mapping[str, Any],
    pack_ref: str | None = None,
) -> str:
    """The TOML text of a case: the request as given and the outcome seen now (edit what is wrong).

    `request` maps field names to values or `Pin`s; facts and options are told apart by the pack
    (a name the pack does not know is kept with the options, as the user typed it).
    """
    facts: dict[str, Scalar] = {}
    options: dict[str, Scalar] = {}
    for name, given in request.items():
        value = given.value if isinstance(given, Pin) else given
        field = pack.fields.get(name)
        (facts if field is not None and field.kind == "fact" else options)[name] = value
    lines = [
        f'description = "saved by confsolve resolve --save-case on {_dt.date.today().isoformat()}: '
        'say what should happen"',
        'source = "user report"',
        f"pack = {_literal(pack_ref or pack.name)}",
        f"pack_version = {_literal(pack.version)}",
        "",
        "[request]",
        f"facts = {_table(facts)}",
        f"options = {_table(options)}",
        f"strict = {_literal(strict)}",
        "",
        "# The outcome confsolve gave when the case was saved; correct it to what is expected.",
        "[expect]",
        f"status = {_literal(outcome['status'])}",
    ]
    if outcome.get("values"):
        lines.append(f"values = {_table(outcome['values'])}")
    if outcome.get("conflict_rules"):
        rules = ", ".join(_literal(r) for r in outcome["conflict_rules"])
        lines.append(f"conflict_rules = [{rules}]")
    if outcome.get("invalid_fields"):
        fields = ", ".join(_literal(f) for f in outcome["invalid_fields"])
        lines.append(f"invalid_fields = [{fields}]")
    return "\n".join(lines) + "\n"


def save_case(
    path: str | Path,
    pack: Pack,
    request: Mapping[str, Any],
    strict: bool,
    outcome: Mapping[str, Any],
    pack_ref: str | None = None,
) -> None:
    """Write the case file (see `case_text`); `pack_ref` is how the case names its pack.

    A new file only: an existing file (a symlink too, dangling or not) raises `FileExistsError`,
    so a case never overwrites a file nor writes through a link to somewhere else.
    """
    import os

    text = case_text(pack, request, strict, outcome, pack_ref).encode("utf-8")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(Path(path), flags, 0o644)
    with os.fdopen(fd, "wb") as handle:
        handle.write(text)
