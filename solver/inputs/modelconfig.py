"""Read a model's facts from its Hugging Face `config.json` (or model directory), as the pack says.

Owns `--model-config`: finding the config file and the weight format from a path, reading JSON
safely (every problem becomes an `InvalidInput` naming the file, never a traceback), and applying
the pack's `[model_config]` table as `solver.pack.modelconfig` compiles it (documented in
constraints/README.md, "Model configs"). This module knows no launcher, device or model family:
every key name, value spelling and file pattern lives in the pack.
Imports the standard library, `solver.model`, `solver.errors`, `solver.inputs.pins` and, for its
bounded file reader, `solver.pack.loader`.
"""

from __future__ import annotations

import difflib
import fnmatch
import json
import os
import sys
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from solver.errors import InputIssue, InvalidInput
from solver.inputs.pins import coerce
from solver.model import Field, Pack, Pin, Scalar
from solver.pack.loader import RefusedFile, read_bounded
from solver.pack.modelconfig import (
    _MISSING,
    ModelConfigMap,
    _Detect,
    _FactRule,
    _Tests,
    compile_model_config_map,
)
from solver.values import show

__all__ = ["MAX_CONFIG_BYTES", "MODEL_CONFIG_FLAG", "facts_from_model_config"]

# A config.json is a few kilobytes; a limit keeps a wrong path (a weights file) from being read
# into memory. `read_bounded` enforces it, and refuses what is not a regular file (/dev/zero).
MAX_CONFIG_BYTES = 16 * 1024 * 1024
# The option messages name a model path by, unless the caller says the user typed another one.
MODEL_CONFIG_FLAG = "--model-config"
_MAX_DIR_ENTRIES = 100_000


# --- reading a model --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Named:
    """A file as messages name it: its path, and the flag the user gave the model with
    (`--model-config`, or a launcher's `--model-path`), so an error speaks the user's words."""

    flag: str
    path: str

    def says(self, text: str) -> str:
        return f"{self.flag} {self.path}: {text}"

    def at(self, path: str | Path) -> _Named:
        return _Named(self.flag, str(path))


@dataclass
class _Source:
    """What a model path holds: the parsed config (if any), extra files, the weight format."""

    shown: _Named
    config: dict[str, Any] | None
    extra: dict[str, dict[str, Any]]
    detected: _Detect | None


def facts_from_model_config(
    pack: Pack,
    path: str | os.PathLike[str],
    *,
    skip: Collection[str] = (),
    flag: str = MODEL_CONFIG_FLAG,
    notes: list[str] | None = None,
) -> dict[str, Pin]:
    """The facts a model config gives, as pins with source `model-config`, in field order.

    `path` is a config JSON file, a model directory holding one, or a weights file / directory
    of a self-describing format (the pack's `standalone` formats, e.g. a single-file checkpoint).
    Facts named in `skip` (set by the user instead) are not read. `notes` receives what was read
    otherwise than the config says, as the launcher reads it (a closed map's `fallback`: an unknown
    ModelOpt KV-cache scheme read as none), for the caller to say. Raises `InvalidInput` naming
    the path (after `flag`, the option the user gave it with) for anything unreadable or
    unexpected, `PackError` for a broken `[model_config]`.
    """
    from solver.inputs.hubcache import model_path

    table = compile_model_config_map(pack)
    try:
        # a hub id: its locally cached snapshot
        source = _read_source(table, model_path(path, flag=flag), flag)
    except (OSError, ValueError) as exc:
        if isinstance(exc, InvalidInput):
            raise
        # A name too long, an embedded NUL byte, a loop of symlinks: still the user's input.
        raise _invalid(_Named(flag, os.fsdecode(path)), f"cannot be used: {exc}") from None
    issues: list[InputIssue] = []
    values: dict[str, Scalar] = {}
    if source.config is not None:
        reader = _Reader(source, table, issues, notes if notes is not None else [])
        for rule in table.facts:
            if rule.fact in skip:
                continue
            if rule.fact in values:  # an earlier entry of the fact's list decided it
                continue
            value = _apply(pack, rule, reader, source.shown, issues)
            if value is not None:
                values[rule.fact] = value
    if table.format is not None:
        detected = source.detected
        chosen = detected.value if detected is not None else table.format.default
        if chosen is not None:
            values[table.format.fact] = chosen
        # The weight format is stronger evidence than config keys (a single-file checkpoint
        # rarely ships a config.json that mentions its own quantization).
        if detected is not None:
            values.update(detected.implies)
    if issues:
        # Two facts read through the same malformed key report it once, even when they expect
        # different kinds of value (is_moe a number, moe_experts_pow2 a positive integer): the
        # message up to "; expected" names the key and what it holds.
        unique = {issue.message.split("; expected ")[0]: issue for issue in reversed(issues)}
        raise InvalidInput(list(reversed(unique.values())))
    return {
        name: Pin(field=name, value=values[name], source="model-config")
        for name in pack.fields
        if name in values and name not in skip
    }


def _read_source(table: ModelConfigMap, path: Path, flag: str) -> _Source:
    shown = _Named(flag, str(path))
    detects = table.format.detect if table.format is not None else ()
    if not path.exists():
        if path.is_symlink():
            raise _invalid(shown, "a symbolic link that leads nowhere (a loop of links, or a missing target)")
        raise _invalid(
            shown,
            "no such file or directory (give a local config.json or model "
            "directory; confsolve does not download models)",
        )
    if path.is_dir():
        names = _list_dir(path, shown)
        detected = next((d for d in detects if any(fnmatch.fnmatch(n, d.glob) for n in names)), None)
        config_path = path / table.config
        if not config_path.is_file():
            if detected is not None and detected.standalone:
                return _Source(shown, None, {}, detected)
            if config_path.exists():  # a directory or a device by that name: say so
                _read_json(config_path, shown)
            hint = ""
            standalone = [d.glob for d in detects if d.standalone]
            if standalone:
                hint = f" or a {' / '.join(standalone)} file"
            raise _invalid(shown, f"the directory has no {table.config}{hint}")
        directory = path
    elif path.is_file():
        detected = next((d for d in detects if fnmatch.fnmatch(path.name, d.glob)), None)
        if detected is not None:
            if detected.standalone:
                return _Source(shown, None, {}, detected)
            raise _invalid(
                shown,
                f"a {detected.glob} weights file does not describe the model; "
                f"give the model directory (with {table.config}) instead",
            )
        config_path = path
        directory = path.parent
        names = _list_dir(directory, shown.at(directory), quiet=True)
        detected = next((d for d in detects if any(fnmatch.fnmatch(n, d.glob) for n in names)), None)
    else:
        raise _invalid(shown, "not a regular file or directory")
    config = _read_json(config_path, shown)
    extra: dict[str, dict[str, Any]] = {}
    for alias, name in table.files.items():
        candidate = directory / name
        if candidate.is_file():
            extra[alias] = _read_json(candidate, shown)
    return _Source(shown.at(config_path), config, extra, detected)


def _list_dir(path: Path, shown: _Named, *, quiet: bool = False) -> list[str]:
    names: list[str] = []
    try:
        with os.scandir(path) as entries:
            for entry in entries:
                names.append(entry.name)
                if len(names) >= _MAX_DIR_ENTRIES:
                    break
    except OSError as exc:
        if quiet:
            return []
        raise _invalid(shown, f"cannot list the directory: {exc.strerror or exc}") from None
    return names


def _read_json(path: Path, named: _Named) -> dict[str, Any]:
    shown = named.at(path)
    try:
        text = read_bounded(path, MAX_CONFIG_BYTES).decode("utf-8-sig")
    except RefusedFile as exc:
        if exc.kind:
            raise _invalid(shown, f"is not a regular file ({exc.kind})") from None
        # No size: stat() said it fits, and reading found more (a file still being written).
        size = f"is {exc.size} bytes" if exc.size is not None else "holds more than it said"
        raise _invalid(
            shown, f"{size}; a model config is at most {MAX_CONFIG_BYTES} bytes (is this a weights file?)"
        ) from None
    except OSError as exc:
        raise _invalid(shown, f"cannot be read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise _invalid(shown, "is not UTF-8 text (is this a weights file?)") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _invalid(
            shown, f"is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    except RecursionError:
        raise _invalid(shown, "is nested too deeply to be a model config") from None
    except ValueError as exc:  # json lets int() refuse a number of 4,300+ digits
        problem = (
            f"a number has more than {sys.get_int_max_str_digits()} digits"
            if "digits" in str(exc)
            else str(exc)[:120]
        )
        raise _invalid(shown, f"is not valid JSON: {problem}") from None
    if not isinstance(doc, dict):
        raise _invalid(shown, f"holds {_kind(doc)}; a model config is a JSON object")
    return doc


def _invalid(shown: _Named, message: str) -> InvalidInput:
    return InvalidInput([InputIssue(field="model_config", value=shown.path, message=shown.says(message))])


def _kind(value: Any) -> str:
    """The JSON type of `value`, with its article ("an array")."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


class _Reader:
    """Key lookup: the top level first, then each nested table; `alias.key` reads an extra file."""

    def __init__(self, source: _Source, table: ModelConfigMap, issues: list[InputIssue], notes: list[str]):
        self.source = source
        self.aliases = set(table.files)
        self.two_forms = table.two_forms
        self.issues = issues
        self.notes = notes  # what was read as the launcher reads it, not as written
        assert source.config is not None
        self.scopes: list[tuple[str, dict[str, Any]]] = [("", source.config)]
        for path in table.nested:
            table = self._walk(source.config, path, source.shown)
            if isinstance(table, dict):
                self.scopes.append((path + ".", table))
            elif table is not _MISSING:
                self._problem(source.shown, path, table, "an object")

    def get(self, path: str) -> tuple[Any, str]:
        """The value at `path` (or `_MISSING`) and where it was found (`text_config.x`)."""
        head, _, rest = path.partition(".")
        if head in self.aliases and rest:
            doc = self.source.extra.get(head)
            if doc is None:  # the directory does not have that file
                return _MISSING, path
            return self._walk(doc, rest, self.source.shown.at(head), base=head + "."), f"{head}:{rest}"
        for prefix, scope in self.scopes:
            value = self._walk(scope, path, self.source.shown, prefix)
            if value is not _MISSING:
                return value, prefix + path
        return _MISSING, path

    def written(self, path: str) -> bool:
        """Whether any scope writes `path`, even as null (a null is a value the config chose;
        an unwritten key takes the config class's default)."""
        first, _, rest = path.partition(".")
        base = ""
        if first in self.aliases and rest:
            doc = self.source.extra.get(first)
            scopes: list[tuple[str, Any]] = [] if doc is None else [(f"{first}:", doc)]
            path, base = rest, first + "."
        else:
            scopes = list(self.scopes)
        head, _, last = path.rpartition(".")
        for prefix, scope in scopes:
            parent = self._walk(scope, head, self.source.shown, prefix, base) if head else scope
            if isinstance(parent, dict) and last in parent:
                return True
        return False

    def _walk(self, doc: Any, path: str, shown: _Named, prefix: str = "", base: str = "") -> Any:
        """The value at `path` in `doc`; `prefix` names the nested scope in messages, `base` the
        extra file (`alias.`), as the pack's `two_forms` spell a key."""
        current = doc
        parts = path.split(".")
        for index, part in enumerate(parts):
            if current is None:
                return _MISSING
            if isinstance(current, dict) and not (part.isdigit() and part not in current):
                if part not in current:
                    return _MISSING
                current = current[part]
            elif isinstance(current, list) and part.isdigit():
                if int(part) >= len(current):
                    return _MISSING
                current = current[int(part)]
            elif (
                isinstance(current, str | int | float | bool)
                and base + ".".join(parts[:index]) in self.two_forms
            ):
                return _MISSING  # the key's single-value form: there is nothing below it
            else:
                expected = "an array" if part.isdigit() else "an object"
                self._problem(shown, prefix + ".".join(parts[:index]), current, expected)
                return _MISSING
        return _MISSING if current is None else current

    def _problem(self, shown: _Named, where: str, value: Any, expected: str) -> None:
        self.issues.append(_type_issue(shown, where, value, expected))


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def _apply(
    pack: Pack, rule: _FactRule, reader: _Reader, shown: _Named, issues: list[InputIssue]
) -> Scalar | None:
    target = pack.fields[rule.fact]
    if rule.tests is None:
        return _read_value(target, rule, reader, shown, issues)
    holds = _holds(rule.tests, reader, shown, issues)
    if holds and rule.unless is not None and _holds(rule.unless, reader, shown, issues):
        holds = False
    return rule.then if holds else rule.otherwise


def _read_value(
    target: Field, rule: _FactRule, reader: _Reader, shown: _Named, issues: list[InputIssue]
) -> Scalar | None:
    # A closed map with a fallback reads what the launcher cannot read as the fallback, a two-form
    # key's object form too (its test entries, before this one, read the forms the launcher reads).
    unknown_read = bool(rule.closed) and rule.fallback is not None
    raw, where = _first(rule.keys, reader, single=True, objects=unknown_read)
    if raw is _MISSING:
        return rule.absent
    if unknown_read and isinstance(raw, dict):
        return _read_as_fallback(target, rule, raw, where, shown, reader)
    if not isinstance(raw, str | int | float | bool):
        issues.append(_type_issue(shown, where, raw, "a single value"))
        return None
    if rule.divides:
        return _largest_divisor(target, rule, raw, where, shown, issues)
    detail, detail_where = _first(rule.detail, reader)
    if detail is not _MISSING and not isinstance(detail, str | int | float | bool):
        issues.append(_type_issue(shown, detail_where, detail, "a single value"))
        return None
    text = _text(raw)
    qualified = f"{text}/{_text(detail)}" if detail is not _MISSING else text
    spellings = [f"{qualified}/{part}" for part in _part_values(rule, reader)]
    spellings += [qualified, text]
    candidate: Any = raw
    mapped = next((s for s in spellings if s in rule.mapping), None)
    if mapped is not None:
        candidate = rule.mapping[mapped]
    elif unknown_read:
        return _read_as_fallback(target, rule, raw, where, shown, reader)
    elif rule.closed:
        issues.append(_unread_spelling(target, rule, raw, where, shown))
        return None
    else:
        expected = _expected_type(target, raw)
        if expected is not None:  # a number where a name belongs is malformed, not unknown
            issues.append(_type_issue(shown, where, raw, expected))
            return None
    value = _match(target, candidate)
    if value is not None:
        return value
    if rule.fallback is not None:
        return rule.fallback
    shown_raw = raw if detail is _MISSING else f"{raw} ({detail_where} = {detail})"
    domain = [str(v) for v in target.domain]
    close = tuple(difflib.get_close_matches(str(candidate), domain, n=3, cutoff=0.6))
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    listed = ", ".join(domain[:20]) + (", ..." if len(domain) > 20 else "")
    issues.append(
        InputIssue(
            field=target.name,
            value=raw,
            did_you_mean=close,
            allowed=tuple(target.domain),
            message=(
                shown.says(
                    f"{where} is {shown_raw!r}, which is not a value of {target.name}{hint} "
                    f"Known: {listed}. Describe the model with --set {target.name}=VALUE instead."
                )
            ),
        )
    )
    return None


def _unread_spelling(target: Field, rule: _FactRule, raw: Any, where: str, shown: _Named) -> InputIssue:
    """A closed map's refusal: the key holds none of the spellings the launcher reads."""
    close = tuple(difflib.get_close_matches(_text(raw), [s.lower() for s in rule.closed], n=2, cutoff=0.6))
    hint = f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""
    return InputIssue(
        field=target.name,
        value=raw,
        did_you_mean=close,
        allowed=rule.closed,
        message=shown.says(
            f"{where} is {_short(raw)}, which is not one of the spellings read for {target.name}: "
            f"{', '.join(rule.closed)} (any case){hint}. Describe the model with "
            f"--set {target.name}=VALUE instead."
        ),
    )


def _read_as_fallback(
    target: Field, rule: _FactRule, raw: Any, where: str, shown: _Named, reader: _Reader
) -> Scalar | None:
    """A closed map's `fallback` for a value none of its spellings names, with the notice saying
    so: the fact is read as the launcher reads the key, not guessed, and the user can say otherwise."""
    assert rule.fallback is not None
    note = f" ({rule.fallback_note})" if rule.fallback_note else ""
    reader.notes.append(
        shown.says(
            f"{where} is {_short(raw)}, which is not one of the forms read for {target.name} "
            f"({', '.join(rule.closed)}, any case): read as {target.name}={show(rule.fallback)}, as the "
            f"launcher reads it{note}. If the model holds another, say so with "
            f"--set {target.name}=VALUE."
        )
    )
    return rule.fallback


def _largest_divisor(
    target: Field, rule: _FactRule, raw: Any, where: str, shown: _Named, issues: list[InputIssue]
) -> Scalar | None:
    """The largest value of the fact's domain that divides the config's positive integer (e.g.
    the power-of-two part of a layer width, capped at the domain's largest power of two)."""
    if type(raw) is not int or raw <= 0:
        issues.append(_type_issue(shown, where, raw, "a positive integer"))
        return None
    found = [v for v in target.domain if type(v) is int and v > 0 and raw % v == 0]
    return max(found) if found else rule.fallback


def _text(value: Any) -> str:
    return show(value).lower()


def _expected_type(target: Field, raw: Any) -> str | None:
    """What `raw` should have been for the fact's domain, or None when its type fits."""
    kinds = {type(v) for v in target.domain}
    if kinds == {str}:
        return None if isinstance(raw, str) else "a string"
    if kinds == {bool}:
        return None if isinstance(raw, bool) else "true or false"
    if kinds == {int}:
        fits = (isinstance(raw, int) and not isinstance(raw, bool)) or (
            isinstance(raw, float) and raw.is_integer()
        )
        return None if fits else "an integer"
    return None


def _part_values(rule: _FactRule, reader: _Reader) -> list[str]:
    """The distinct `part_key` values of the parts table (e.g. each layer's own quantization in a
    mixed-precision checkpoint), lower-cased and sorted; none when the table is absent."""
    table, _where = _first(rule.part_tables, reader)
    if not isinstance(table, dict):
        return []
    found = {
        _text(part[rule.part_key])
        for part in table.values()
        if isinstance(part, dict) and isinstance(part.get(rule.part_key), str | int | float | bool)
    }
    return sorted(found)


def _first(
    paths: tuple[str, ...], reader: _Reader, *, single: bool = False, objects: bool = False
) -> tuple[Any, str]:
    """The first of `paths` written; `single`: passing over a two-form key's object form (its
    tests read it, a value entry reads the single-value form) and its empty string (no scheme);
    `objects`: not over a non-empty object (its tests did not read it: a form the launcher cannot
    read, which it takes in place of the keys after it, as Python's `or` does)."""
    where = paths[0] if paths else ""
    for path in paths:
        value, where = reader.get(path)
        skipped = isinstance(value, dict | list) or value == ""
        if objects and isinstance(value, dict) and value:
            skipped = False
        if single and path in reader.two_forms and skipped:
            continue
        if value is not _MISSING:
            return value, where
    return _MISSING, where


def _match(target: Field, candidate: Any) -> Scalar | None:
    """The domain value `candidate` names: exactly, by the usual coercions, or ignoring case."""
    value, issue = coerce(target, candidate)
    if issue is None and value is not None:
        return value
    if isinstance(candidate, str):
        folded = [v for v in target.domain if isinstance(v, str) and v.lower() == candidate.lower()]
        if len(folded) == 1:
            return folded[0]
    return None


def _holds(tests: _Tests, reader: _Reader, shown: _Named, issues: list[InputIssue]) -> bool:
    """Whether any test holds (`tests.every`: each one; a key missing fails its test)."""
    results: list[bool] = []
    for path in tests.present:
        value, _ = reader.get(path)
        results.append(value is not _MISSING and value is not False)
    for path in tests.missing:
        results.append(not reader.written(path))
    for path, limit in tests.above:
        value, where = reader.get(path)
        if value is not _MISSING and (isinstance(value, bool) or not isinstance(value, int | float)):
            issues.append(_type_issue(shown, where, value, "a number"))
            value = _MISSING
        results.append(value is not _MISSING and value > limit)
    for path, allowed in tests.equals:
        value, where = reader.get(path)
        if value is not _MISSING and not isinstance(value, str | int | float | bool):
            issues.append(_type_issue(shown, where, value, "a single value"))
            value = _MISSING
        results.append(value is not _MISSING and any(_same(value, a) for a in allowed))
    for path, wanted in tests.contains:
        value, where = reader.get(path)
        items = [value] if isinstance(value, str) else value
        if value is not _MISSING and not isinstance(items, list):
            issues.append(_type_issue(shown, where, value, "an array"))
            value = _MISSING
        results.append(value is not _MISSING and any(_same(item, w) for item in items for w in wanted))
    for left, right in tests.differ:
        a, _ = reader.get(left)
        b, _ = reader.get(right)
        results.append(a is not _MISSING and b is not _MISSING and a != b)
    return all(results) if tests.every else any(results)


def _same(value: Any, wanted: Scalar) -> bool:
    if isinstance(value, str) and isinstance(wanted, str):
        return value.lower() == wanted.lower()
    return bool(value == wanted and isinstance(value, bool) == isinstance(wanted, bool))


def _type_issue(shown: _Named, where: str, value: Any, expected: str) -> InputIssue:
    return InputIssue(
        field="model_config",
        value=shown.path,
        message=shown.says(f"{where} is {_kind(value)} ({_short(value)}); expected {expected}"),
    )
