"""Where a pack problem is in its file, and what the author probably meant.

tomllib gives data without positions, so positions are found again in the text: one pass over a
file's lines notes each table header, each `id = "..."` and each key, and a problem is placed by
what it names (`rule ID`, `field NAME`, `set NAME`, a key). Only a pack with problems is indexed.
The same pass lists the names a file declares, so that when a file cannot be parsed the loader
does not report every use of those names elsewhere as unknown (a cascade). Standard library and
`solver.frozen` only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from solver.frozen import Mutable, field, mutable_type

__all__ = ["FileIndex", "did_you_mean", "index_of", "toml_error_line"]

# Patterns as texts, compiled where they are used (the `re` module keeps them): a `check` from the
# prebuilt form places no problem, and compiling them at import was ~0.25 ms of its start.
_HEADER = r"^\s*(\[\[?)\s*([^\]#]+?)\s*\]\]?\s*(?:#.*)?$"
_KEY = r"""^\s*("[^"]*"|'[^']*'|[A-Za-z0-9_-]+)\s*(?:\.|=)"""
_ID = r"""^\s*id\s*=\s*(?:"([^"]*)"|'([^']*)')"""
_AT_LINE = r"\(at line (\d+), column \d+\)"
# Keep the index cheap on a hostile file: positions are a help, not a check.
_MAX_LINES = 200_000


@mutable_type
class FileIndex(Mutable):
    """Line numbers (1-based) of a file's tables, ids and keys."""

    headers: dict[str, int] = field(default_factory=dict)  # "field.x", "sets", "pack": first line
    arrays: dict[str, list[int]] = field(default_factory=dict)  # "rule": the [[rule]] lines
    ids: dict[str, int] = field(default_factory=dict)  # id -> line of its [[...]] header
    keys: dict[tuple[int, str], int] = field(default_factory=dict)  # (table line, key) -> line

    def line_of(self, where: str, key: str | None = None) -> int | None:
        """The line a problem about `where` ("rule ID", "preference #3", "field NAME", "set NAME",
        "condition NAME", "pack.version", a table name) and, within it, `key` is on; None when not found."""
        if where in self.headers:
            return (
                self.keys.get((self.headers[where], key), self.headers[where]) if key else self.headers[where]
            )
        kind, _, name = where.partition(" ")
        start: int | None = None
        if kind in ("rule", "preference") and name:
            if name.startswith("#") and name[1:].isdigit():
                lines = self.arrays.get(kind, [])
                index = int(name[1:]) - 1
                start = lines[index] if 0 <= index < len(lines) else None
            else:
                start = self.ids.get(name)
        elif kind == "field" and name:
            start = self.headers.get(f"field.{name}")
            if start is None:  # an inline table under [field]
                table = self.headers.get("field")
                start = self.keys.get((table, name)) if table is not None else None
        elif kind in ("set", "condition") and name:
            table = self.headers.get("sets" if kind == "set" else "conditions")
            return self.keys.get((table, name)) if table is not None else None
        elif "." in where and not name:
            table_name, _, key_name = where.rpartition(".")
            table = self.headers.get(table_name)
            if table is not None:
                return self.keys.get((table, key_name), table)
            return None
        elif not name:
            start = self.headers.get(where)
        if start is None:
            return None
        if key:
            return self.keys.get((start, key), start)
        return start

    def declared(self) -> set[str]:
        """The field, set and condition names this file declares (from its text alone)."""
        names = {h.removeprefix("field.") for h in self.headers if h.startswith("field.")}
        for table in ("field", "sets", "conditions"):
            line = self.headers.get(table)
            if line is not None:
                names.update(k for (t, k) in self.keys if t == line)
        return names


def index_of(text: str) -> FileIndex:
    """One pass over `text`: where each table, id and key is (heuristic: a line inside a
    multi-line string may be taken for a key; a position is a pointer for the reader)."""
    index = FileIndex()
    headers, ids, keys = re.compile(_HEADER), re.compile(_ID), re.compile(_KEY)
    table = 0  # the line of the current table header (0: the top of the file)
    for number, line in enumerate(text.splitlines()[:_MAX_LINES], start=1):
        header = headers.match(line)
        if header is not None:
            name = re.sub(r"\s*\.\s*", ".", header.group(2)).replace('"', "").replace("'", "")
            table = number
            if header.group(1) == "[[":
                index.arrays.setdefault(name, []).append(number)
            else:
                index.headers.setdefault(name, number)
            continue
        found = ids.match(line)
        if found is not None:
            index.ids.setdefault(found.group(1) or found.group(2) or "", table)
        key = keys.match(line)
        if key is not None:
            index.keys.setdefault((table, key.group(1).strip("\"'")), number)
    return index


def toml_error_line(message: str) -> int | None:
    """The line tomllib names in its error message."""
    found = re.search(_AT_LINE, message)
    return int(found.group(1)) if found else None


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """` (did you mean 'x'?)` for the closest known name, or "" when none is close."""
    import difflib  # only for a problem: not on every start's path

    close = difflib.get_close_matches(word, list(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""
