"""Read a pack directory (TOML) into a checked `Pack`, reporting every problem at once.

A pack is untrusted data: nothing in it runs. Conditions are parsed by `solver.pack.expr`; sizes are
bounded so a hostile pack ends in a `PackError`, not in a hang or a memory blow-up: each file is
read by `read_bounded` (regular files only, at most MAX_FILE_BYTES, once each, MAX_PACK_BYTES in
all), TOML nesting is bounded before tomllib recurses, and no check recurses over the pack's data.
`read_bounded` is also how `solver.inputs.modelconfig` reads a model's config files.
Imports the standard library, `solver.model`, `solver.pack.expr` and `solver.errors`; never networkx or
python-constraint.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from typing import Any

from solver.bounded import PACKS_KEPT, Lru
from solver.errors import DependencyCycle, PackError, PackProblem
from solver.model import (
    DETECTED_HOSTS,
    DETECTED_QUANTITIES,
    AssumedGroup,
    Field,
    Launcher,
    Pack,
    Preference,
    RecordInvalid,
    Rule,
    Scalar,
)
from solver.pack.expr import Condition, ExprError, parse, rule_condition
from solver.pack.text import FileIndex, did_you_mean, index_of, toml_error_line

__all__ = [
    "MAX_DOMAIN",
    "MAX_FIELDS",
    "MAX_FILE_BYTES",
    "MAX_RULES",
    "PackSemantics",
    "RefusedFile",
    "load_directory",
    "read_bounded",
    "semantics",
]

MAX_FIELDS = 20_000
MAX_RULES = 200_000
MAX_DOMAIN = 1_000
MAX_FILE_BYTES = 16 * 1024 * 1024
# All files of a pack together, and how many it may list: pack.toml cannot make the loader read
# one file many times, or many files without end.
MAX_PACK_BYTES = 2 * MAX_FILE_BYTES
MAX_FILES = 1_000
# Arrays and tables nested deeper than this are refused (tomllib recurses once per level).
MAX_TOML_NESTING = 64

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:+-]{0,127}$")
_FIELD_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
_SET_NAME = re.compile(r"^[A-Z][A-Z0-9_]{0,127}$")
_FILE_KEYS = {"pack", "sets", "field", "rule", "preference", "model_config", "lint"}


@dataclass(frozen=True)
class PackSemantics:
    """The parsed conditions of a pack, kept beside it so they are parsed once."""

    rules: dict[str, Condition]
    whens: dict[str, Condition]
    preferences: dict[str, Condition | None]


# By digest, the most recently used kept (widened packs, one per unlisted value a request pins,
# must not accumulate in a long-lived process).
_SEMANTICS: Lru[str, PackSemantics] = Lru(PACKS_KEPT)
_CACHE: Lru[str, Pack] = Lru(PACKS_KEPT)


def semantics(pack: Pack) -> PackSemantics:
    """The parsed conditions of a loaded (or hand-built) pack."""
    found = _SEMANTICS.get(pack.digest) if pack.digest else None
    if found is None:
        problems: list[PackProblem] = []
        found = _parse_conditions(pack, problems)
        if problems:
            raise PackError(problems, pack.name)
        if pack.digest:
            _SEMANTICS.put(pack.digest, found)
    return found


def _known(digest: str, root: Path) -> Pack | None:
    """The pack with this digest from the process cache or the on-disk cache, if either has it."""
    pack = _CACHE.get(digest)
    if pack is not None:
        return pack
    from solver.pack import cache

    entry = cache.read(digest)
    if entry is None or not isinstance(entry.get("pack"), dict):
        return None
    try:
        pack = Pack.from_json(entry["pack"], digest=digest, directory=str(root))
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    _CACHE.put(digest, pack)
    return pack


def _store(pack: Pack) -> None:
    """Put a checked pack in the on-disk cache, if it survives the JSON round trip unchanged."""
    from solver.pack import cache

    doc = pack.model_dump(mode="json", exclude={"digest", "directory"})
    try:
        again = Pack.from_json(doc, digest=pack.digest, directory=pack.directory)
    except (KeyError, TypeError, ValueError, AttributeError):
        return
    if again == pack:
        cache.write(pack.digest, pack=doc)


def load_directory(directory: str | Path) -> Pack:
    """Load and check the pack in `directory`; raise one `PackError` listing every problem."""
    root = Path(directory)
    problems: list[PackProblem] = []
    found = _read_files(root, problems)
    if found is None:
        raise PackError(problems, root.name)
    manifest, files = found
    # The digest covers the name and bytes of every file, so a pack seen before (in this process,
    # or in the on-disk cache) is found without parsing or checking anything again. A pack with a
    # file that could not be read is never looked up: the cache must not hide a broken file.
    digest = _digest(files)
    if not problems:
        known = _known(digest, root)
        if known is not None:
            return known
    docs = [("pack.toml", manifest)]
    where = _Locator(files)
    for name, raw in files[1:]:
        doc = _parse_toml(name, raw, problems)
        if doc is not None:
            docs.append((name, doc))
        else:  # its names are declared, only broken: their uses elsewhere are not problems too
            where.broken.update(where.index(name).declared())
    pack = _assemble(root, docs, digest, problems, where)
    if problems:
        problems[:] = where.finish(problems, pack)
        cycles = [p for p in problems if p.where == "depends_on cycle"]
        raise (DependencyCycle if cycles and len(cycles) == len(problems) else PackError)(
            problems, pack.name if pack else root.name
        )
    assert pack is not None
    _CACHE.put(digest, pack)
    _store(pack)
    return pack


class RefusedFile(Exception):
    """`read_bounded` would not read a file: not a regular file, or larger than the limit.

    `kind` says what it is when it is not a regular file ("a character device", ...); `size` is
    the size of a file too large, when known (None when the file only showed it by not ending).
    """

    def __init__(self, path: Path, limit: int, *, size: int | None = None, kind: str = "") -> None:
        self.path, self.limit, self.size, self.kind = path, limit, size, kind
        super().__init__(
            f"{path}: not a regular file ({kind})" if kind else f"{path}: larger than {limit} bytes"
        )


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISSOCK, "a socket"),
)


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "a special file")


def read_bounded(path: Path, limit: int) -> bytes:
    """The bytes of the regular file `path` (symlinks followed), reading at most `limit` + 1
    bytes: the one place where confsolve reads a file it was pointed at (pack files, model configs).

    Raises `RefusedFile` for anything but a regular file (a device such as /dev/zero, a pipe, a
    directory) and for a file larger than `limit` bytes, whether stat() says so or the file only
    shows it by not ending. Other `OSError`s (missing, no permission) pass through.
    """
    mode = os.stat(path).st_mode
    if not stat.S_ISREG(mode):
        raise RefusedFile(path, limit, kind=_kind(mode))
    # O_NONBLOCK: were the path swapped for a pipe after the check, opening it must not wait for
    # a writer; fstat then says what was really opened.
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise RefusedFile(path, limit, kind=_kind(info.st_mode))
        if info.st_size > limit:
            raise RefusedFile(path, limit, size=info.st_size)
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise RefusedFile(path, limit)
    return data


def _read_files(
    root: Path, problems: list[PackProblem]
) -> tuple[dict[str, Any], list[tuple[str, bytes]]] | None:
    """The parsed pack.toml, and the name and bytes of it and of every file it lists; None when
    nothing more can be checked. Each file is read once, bounded (`read_bounded`), and all of
    them together are at most MAX_PACK_BYTES."""
    if not root.is_dir():
        problems.append(PackProblem("pack", f"{root} is not a directory"))
        return None
    try:
        head = _read_file(root, "pack.toml", MAX_FILE_BYTES, problems)
    except RefusedFile as exc:
        problems.append(PackProblem("file", _refusal(exc), "pack.toml"))
        return None
    if head is None:
        return None
    manifest = _parse_toml("pack.toml", head[0], problems)
    if manifest is None:
        return None
    meta = manifest.get("pack")
    if not isinstance(meta, dict):
        problems.append(PackProblem("pack", "pack.toml needs a [pack] table", "pack.toml"))
        return None
    names = meta.get("files", [])
    if not isinstance(names, list) or not all(isinstance(f, str) for f in names):
        problems.append(PackProblem("pack.files", "must be a list of file names", "pack.toml"))
        return None
    if len(names) > MAX_FILES:
        problems.append(
            PackProblem("pack.files", f"lists {len(names)} files; at most {MAX_FILES}", "pack.toml")
        )
        return None
    files = [("pack.toml", head[0])]
    seen: dict[object, str] = {head[1]: "pack.toml"}
    budget = MAX_PACK_BYTES - len(head[0])
    for name in names:
        if Path(name).name != name or not name.endswith(".toml") or len(name) > 255 or "\0" in name:
            shown = repr(name) if len(name) <= 80 else repr(name[:80]) + "..."
            problems.append(PackProblem("pack.files", f"{shown} is not a .toml file name", "pack.toml"))
            continue
        if name == "pack.toml":
            problems.append(PackProblem("pack.files", "lists pack.toml itself; list the other files", name))
            continue
        if name in seen.values():
            problems.append(PackProblem("pack.files", f"{name!r} is listed twice", "pack.toml"))
            continue
        if budget < 0:
            continue  # reported once, at the file that went over
        try:
            loaded = _read_file(root, name, min(MAX_FILE_BYTES, budget), problems)
        except RefusedFile as exc:
            problems.append(PackProblem("file", _refusal(exc), name))
            if not exc.kind and exc.limit < MAX_FILE_BYTES:
                budget = -1
            continue
        if loaded is None:
            continue
        raw, identity = loaded
        if identity in seen:
            problems.append(
                PackProblem("pack.files", f"{name!r} is the same file as {seen[identity]!r}", "pack.toml")
            )
            continue
        seen[identity] = name
        files.append((name, raw))
        budget -= len(raw)
    return manifest, files


def _read_file(root: Path, name: str, limit: int, problems: list[PackProblem]) -> tuple[bytes, object] | None:
    """The bytes of one pack file and its identity on disk, or None after reporting why not;
    `RefusedFile` (not a regular file, over `limit`) is the caller's to report."""
    path = root / name
    # A link may point within the pack (a shared file), never out of it: the pack is the files
    # in its directory, not whatever a link in it names (/etc/..., a user's home).
    base = os.path.realpath(root)
    if os.path.commonpath([os.path.realpath(path), base]) != base:
        problems.append(PackProblem("file", "is a link to a file outside the pack directory", name))
        return None
    try:
        raw = read_bounded(path, limit)
        info = path.stat()
    except FileNotFoundError:
        if name == "pack.toml":
            problems.append(PackProblem("pack", f"no pack.toml in {root}", name))
        else:
            problems.append(PackProblem("file", "listed in pack.toml but missing", name))
        return None
    except OSError as exc:
        problems.append(PackProblem("file", f"cannot be read: {exc.strerror or exc}", name))
        return None
    # Two names for one file (a hard link or a symlink) would read it twice; inode 0 means the
    # platform does not say, and the name alone identifies the file.
    identity: object = (info.st_dev, info.st_ino) if info.st_ino else name
    return raw, identity


def _refusal(exc: RefusedFile) -> str:
    """Why `read_bounded` refused a pack file, in words."""
    if exc.kind:
        return f"not a regular file ({exc.kind}); a pack file must be a regular file"
    if exc.limit < MAX_FILE_BYTES and (exc.size is None or exc.size <= MAX_FILE_BYTES):
        return f"the pack's files together are larger than {MAX_PACK_BYTES} bytes"
    return f"larger than {MAX_FILE_BYTES} bytes"


# Strings and comments, whose brackets are text. Unrolled loops, and an unclosed string runs to
# the end of its line (or of the text): every match succeeds where it starts, so the scan is
# linear (a 16 MB file in about a second); an unclosed string is tomllib's to report.
_TOML_SKIP = re.compile(
    r'"""[^"\\]*(?:(?:\\.?|"{1,2}(?!"))[^"\\]*)*(?:"{3,5})?'  # multi-line basic string
    r"|'''[^']*(?:'{1,2}(?!')[^']*)*(?:'{3,5})?"  # multi-line literal string
    r'|"[^"\\\n]*(?:\\[^\n]?[^"\\\n]*)*"?'  # basic string
    r"|'[^'\n]*'?"  # literal string
    r"|#[^\n]*",  # comment
    re.DOTALL,
)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_BRACKET_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}.__getitem__


def _bracket_nesting(text: str) -> int:
    """How deep arrays and inline tables nest in TOML `text` (strings and comments skipped)."""
    if text.count("[") + text.count("{") <= MAX_TOML_NESTING:
        return 0  # cannot be too deep
    brackets = _NOT_BRACKET.sub("", _TOML_SKIP.sub(" ", text))
    return max(accumulate(map(_BRACKET_STEP, brackets)), default=0)


# A dotted key of more than MAX_TOML_NESTING parts (`a.b.c...`, strings already blanked out):
# each part is a level of tables, and tomllib builds them in time quadratic in their number (an
# 80 KB key took 48 s and 9 GB), so it is refused before tomllib sees it.
_DOTTED_RUN = re.compile(r"(?:[A-Za-z0-9_-]+[ \t]*\.[ \t]*){" + str(MAX_TOML_NESTING) + ",}")


def _long_dotted_key(text: str) -> bool:
    if text.count(".") < MAX_TOML_NESTING:
        return False
    return _DOTTED_RUN.search(_TOML_SKIP.sub("s", text)) is not None


def _parse_toml(name: str, raw: bytes, problems: list[PackProblem]) -> dict[str, Any] | None:
    """The TOML document in `raw`, or None after reporting why it is not one."""
    import tomllib  # only when a file is parsed: a pack served from the cache needs none

    too_deep = PackProblem("file", f"arrays or tables nested deeper than {MAX_TOML_NESTING} levels", name)
    try:
        text = raw.decode("utf-8")
        # tomllib recurses once per level of arrays and inline tables: refuse deep nesting before
        # it sees it (RecursionError is the backstop).
        if _bracket_nesting(text) > MAX_TOML_NESTING or _long_dotted_key(text):
            problems.append(too_deep)
            return None
        doc = tomllib.loads(text)
    except UnicodeDecodeError as exc:
        problems.append(PackProblem("file", f"not UTF-8 text ({exc.reason} at byte {exc.start})", name))
        return None
    except RecursionError:
        problems.append(too_deep)
        return None
    except tomllib.TOMLDecodeError as exc:
        problems.append(
            PackProblem("file", f"not valid TOML: {_shorten(str(exc))}", name, toml_error_line(str(exc)))
        )
        return None
    except ValueError as exc:  # tomllib lets int() refuse an integer literal of 4,300+ digits
        problems.append(PackProblem("file", f"not valid TOML: {_number_problem(exc)}", name))
        return None
    # Dotted keys (a.b.c = 1) nest tables without brackets; what reads the pack later may recurse.
    if _data_nesting(doc) > MAX_TOML_NESTING:
        problems.append(too_deep)
        return None
    controlled = _control_characters(doc)
    if controlled:
        problems += [
            PackProblem(
                where,
                f"holds the control character {char!r}: pack text reaches "
                "terminals, so it may not hold escapes, carriage returns or "
                "direction overrides",
                name,
            )
            for where, char in controlled
        ]
    return doc  # checked on (every problem at once); a pack with any problem never loads


# Characters that would let pack text act on a terminal (ANSI escapes, a carriage return that
# overwrites a line, bidirectional overrides that reorder it); tabs and newlines are text, and a
# NUL does nothing on a terminal (in a condition, the condition parser refuses it).
_CONTROL = re.compile("[\x01-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_MAX_CONTROL_SHOWN = 20


def _control_characters(doc: Any) -> list[tuple[str, str]]:
    """Where (a dotted key path) strings and keys of `doc` hold a control character, and which."""
    found: list[tuple[str, str]] = []
    todo: list[tuple[str, Any]] = [("", doc)]
    while todo and len(found) < _MAX_CONTROL_SHOWN:
        path, value = todo.pop()
        if isinstance(value, str):
            hit = _CONTROL.search(value)
            if hit is not None:
                found.append((path or "value", hit.group()))
        elif isinstance(value, dict):
            for key, item in value.items():
                hit = _CONTROL.search(key)
                if hit is not None:
                    found.append((f"{path}.{key!r}".lstrip("."), hit.group()))
                    continue
                todo.append((f"{path}.{key}".lstrip("."), item))
        elif isinstance(value, list):
            todo += [(f"{path}[{i}]", item) for i, item in enumerate(value)]
    return found


_CONTAINERS = (dict, list)  # what tomllib builds tables and arrays from (exact types: fast)


def _data_nesting(doc: Any) -> int:
    """How deep tables and arrays nest in parsed data, the document itself being level 1 (stops
    counting past MAX_TOML_NESTING)."""
    deepest = 0
    todo: list[tuple[Any, int]] = [(doc, 1)]
    while todo and deepest <= MAX_TOML_NESTING:
        value, depth = todo.pop()
        deepest = max(deepest, depth)
        items = value.values() if isinstance(value, dict) else value
        todo += [(item, depth + 1) for item in items if type(item) in _CONTAINERS]
    return deepest


def _number_problem(exc: ValueError) -> str:
    if "digits" in str(exc):
        return f"an integer literal has more than {sys.get_int_max_str_digits()} digits"
    return _shorten(str(exc))


def _shorten(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _digest(files: list[tuple[str, bytes]]) -> str:
    """sha256 over each file's name, length and bytes (moving text between files changes it)."""
    digest = hashlib.sha256()
    for name, raw in files:
        digest.update(f"{name}\0{len(raw)}\0".encode())
        digest.update(raw)
    return digest.hexdigest()


class _Locator:
    """Positions and cascades for one load: the text index of each file (built on first use,
    only for a pack with problems), and the names whose declaration failed."""

    def __init__(self, files: list[tuple[str, bytes]]) -> None:
        self._raw = dict(files)
        self._indexes: dict[str, FileIndex] = {}
        self.broken: set[str] = set()

    def index(self, file: str) -> FileIndex:
        found = self._indexes.get(file)
        if found is None:
            found = self._indexes[file] = index_of(self._raw.get(file, b"").decode("utf-8", "replace"))
        return found

    def line(self, file: str, where: str, key: str | None = None) -> int | None:
        return self.index(file).line_of(where, key) if file in self._raw else None

    def finish(self, problems: list[PackProblem], pack: Pack | None) -> list[PackProblem]:
        """The problems to report: cascades of a failed declaration left out, a did-you-mean
        for an unknown name, and each placed at its line."""
        known = [*pack.fields, *pack.sets] if pack is not None else []
        out: list[PackProblem] = []
        hints = 0
        for problem in problems:
            unknown = _UNKNOWN_NAME.search(problem.message)
            message = problem.message
            if unknown is not None:
                if unknown.group(1) in self.broken:
                    continue  # its declaration failed, and that failure is reported
                if hints < _MAX_HINTS and "did you mean" not in message:
                    hints += 1
                    message = _add_hint(message, unknown, known)
            line = problem.line
            if line is None and problem.file:
                line = self.line(problem.file, problem.where)
            out.append(PackProblem(problem.where, message, problem.file, line))
        return out


# How the checks below name a field or set that is not declared (one pattern, so that a
# cascade of a failed declaration is recognised wherever it shows).
_UNKNOWN_NAME = re.compile(r"unknown (?:name|field) '([A-Za-z_][A-Za-z0-9_]*)'")
_MAX_HINTS = 200  # difflib over the pack's names per hint: bounded for a hostile pack


def _add_hint(message: str, unknown: re.Match[str], known: list[str]) -> str:
    end = unknown.end()  # "unknown name 'x'" + " (did you mean 'y'?)" + ": not a field ..."
    return message[:end] + did_you_mean(unknown.group(1), known) + message[end:]


def _assemble(
    root: Path,
    docs: list[tuple[str, dict[str, Any]]],
    digest: str,
    problems: list[PackProblem],
    where: _Locator,
) -> Pack | None:
    meta = docs[0][1]["pack"]
    name, version = meta.get("name"), meta.get("version")
    if not isinstance(name, str) or not name:
        problems.append(PackProblem("pack.name", "missing or not a string", "pack.toml"))
        name = root.name
    if not isinstance(version, str) or not version:
        problems.append(PackProblem("pack.version", "missing or not a string", "pack.toml"))
        version = "0"
    fields: dict[str, Field] = {}
    sets: dict[str, tuple[Scalar, ...]] = {}
    rules: list[Rule] = []
    prefs: list[Preference] = []
    model_config: dict[str, Any] = {}
    model_config_file = ""
    acknowledged: dict[str, tuple[str, ...]] = {}
    for file, doc in docs:
        for key in doc:
            if key not in _FILE_KEYS:
                problems.append(
                    PackProblem(
                        key,
                        f"unknown table [{key}]{did_you_mean(key, _FILE_KEYS)} "
                        f"(expected one of {', '.join(sorted(_FILE_KEYS))})",
                        file,
                        where.line(file, "", key) or where.line(file, key),
                    )
                )
        _collect_sets(doc.get("sets", {}), file, sets, problems, where)
        _collect_fields(doc.get("field", {}), file, fields, problems, where)
        rules += _collect(doc.get("rule", []), Rule, "rule", file, problems, where)
        prefs += _collect(doc.get("preference", []), Preference, "preference", file, problems, where)
        section = doc.get("model_config", {})
        if isinstance(section, dict):
            model_config.update(section)
            if section:
                model_config_file = file
        else:
            problems.append(PackProblem("model_config", "must be a table", file))
        _collect_acknowledged(doc.get("lint", {}), file, acknowledged, problems)
    if len(fields) > MAX_FIELDS or len(rules) + len(prefs) > MAX_RULES:
        problems.append(
            PackProblem(
                "pack", f"too large: at most {MAX_FIELDS} fields and {MAX_RULES} rules and preferences"
            )
        )
        return None
    launcher = _collect_launcher(meta.get("launcher"), problems)
    _check_flags(fields, launcher, problems)
    _check_detect(fields, launcher, problems)
    example = _collect_example(meta.get("example", {}), fields, problems)
    assumed_groups = _collect_assumed_groups(meta.get("assumed_groups", {}), fields, prefs, problems)
    # Every part was validated on its own above; the pack itself adds no types to check.
    pack = Pack(
        name=name,
        version=version,
        description=str(meta.get("description", "")),
        fields=fields,
        rules=tuple(rules),
        preferences=tuple(prefs),
        sets=sets,
        model_config_map=model_config,
        acknowledged=acknowledged,
        launcher=launcher,
        example=example,
        assumed_groups=assumed_groups,
        digest=digest,
        directory=str(root),
    )
    _check_ids(pack, problems)
    _check_references(pack, problems)
    _check_cycles(pack, problems)
    if model_config:
        _check_model_config(pack, model_config_file, problems)
    found = _parse_conditions(pack, problems)
    if not problems:
        _SEMANTICS.put(digest, found)
    return pack


def _collect_example(
    table: Any, fields: Mapping[str, Field], problems: list[PackProblem]
) -> dict[str, Scalar]:
    """`[pack] example`: fields of the pack, each with a value of its domain."""
    if not isinstance(table, dict):
        problems.append(PackProblem("pack.example", "must be a table of field = value", "pack.toml"))
        return {}
    example: dict[str, Scalar] = {}
    for name, value in table.items():
        field = fields.get(name)
        if field is None:
            meant = did_you_mean(name, fields)
            problems.append(PackProblem("pack.example", f"names no field: {name!r}{meant}", "pack.toml"))
        elif value not in field.domain or type(value) is not type(field.domain[0]):
            problems.append(
                PackProblem("pack.example", f"{name} = {value!r} is not a value of {name}", "pack.toml")
            )
        else:
            example[name] = value
    return example


def _collect_assumed_groups(
    table: Any, fields: Mapping[str, Field], prefs: Iterable[Preference], problems: list[PackProblem]
) -> dict[str, AssumedGroup]:
    """`[pack.assumed_groups]`: each member a preference that fills a fact, in one group at most."""
    where = "pack.assumed_groups"
    if not isinstance(table, dict):
        problems.append(PackProblem(where, "must be a table of [pack.assumed_groups.NAME]", "pack.toml"))
        return {}
    of_fact = {p.id: p for p in prefs if p.field in fields and fields[p.field].kind == "fact"}
    groups: dict[str, AssumedGroup] = {}
    seen: dict[str, str] = {}
    for name, body in table.items():
        try:
            group = AssumedGroup.model_validate(body)
        except RecordInvalid as exc:
            text = _validation_text(exc, AssumedGroup)[0]
            problems.append(PackProblem(f"{where}.{name}", text, "pack.toml"))
            continue
        for pref_id in group.members:
            if pref_id not in of_fact:
                meant = did_you_mean(pref_id, of_fact)
                problems.append(
                    PackProblem(
                        f"{where}.{name}",
                        f"{pref_id!r} is not a preference that fills a fact{meant}",
                        "pack.toml",
                    )
                )
            elif pref_id in seen:
                problems.append(
                    PackProblem(
                        f"{where}.{name}", f"{pref_id!r} is already in group {seen[pref_id]!r}", "pack.toml"
                    )
                )
            seen[pref_id] = name
        groups[name] = group
    return groups


def _collect_launcher(table: Any, problems: list[PackProblem]) -> Launcher | None:
    """`[pack.launcher]` validated (pydantic), with its command strings split as a shell would."""
    if table is None:
        return None
    if not isinstance(table, dict):
        problems.append(PackProblem("pack.launcher", "must be a table", "pack.toml"))
        return None
    try:
        launcher = Launcher.model_validate(table)
    except RecordInvalid as exc:
        problems.append(PackProblem("pack.launcher", _validation_text(exc, Launcher)[0], "pack.toml"))
        return None
    import shlex

    for command in launcher.commands + launcher.positional_model:
        try:
            words = shlex.split(command)
        except ValueError as exc:
            words = []
            problems.append(PackProblem("pack.launcher", f"command {command!r}: {exc}", "pack.toml"))
        if not words or any(w.startswith("-") for w in words[:1]):
            problems.append(
                PackProblem(
                    "pack.launcher", f"command {command!r} must start with a program name", "pack.toml"
                )
            )
    for command in launcher.positional_model:
        if command not in launcher.commands:
            problems.append(
                PackProblem(
                    "pack.launcher",
                    f"positional_model names {command!r}, which is not in commands",
                    "pack.toml",
                )
            )
    return launcher


def _check_detect(
    fields: Mapping[str, Field], launcher: Launcher | None, problems: list[PackProblem]
) -> None:
    """`detect` maps known quantities to fact fields; `detect_platforms` known hosts to values of
    the platform fact."""
    if launcher is None:
        return
    for quantity, name in launcher.detect.items():
        if quantity not in DETECTED_QUANTITIES:
            known = ", ".join(DETECTED_QUANTITIES)
            problems.append(
                PackProblem(
                    "pack.launcher.detect", f"{quantity!r} is not detected (known: {known})", "pack.toml"
                )
            )
        elif name not in fields or fields[name].kind != "fact":
            problems.append(
                PackProblem("pack.launcher.detect", f"{quantity} = {name!r} is not a fact field", "pack.toml")
            )
    platform = fields.get(launcher.detect.get("platform", ""))
    for host, value in launcher.detect_platforms.items():
        if host not in DETECTED_HOSTS:
            known = ", ".join(DETECTED_HOSTS)
            problems.append(
                PackProblem(
                    "pack.launcher.detect_platforms",
                    f"{host!r} is not a host kind (known: {known})",
                    "pack.toml",
                )
            )
        elif platform is None or value not in platform.domain:
            problems.append(
                PackProblem(
                    "pack.launcher.detect_platforms",
                    f"{host} = {value!r} is not a value of the platform fact",
                    "pack.toml",
                )
            )


def _check_flags(fields: Mapping[str, Field], launcher: Launcher | None, problems: list[PackProblem]) -> None:
    """Every launcher flag spells one thing: a field, the model or the config file."""
    owner: dict[str, str] = {}
    if launcher is not None:
        owner.update({flag: "the model" for flag in launcher.model_flags})
        if launcher.config_flag:
            owner[launcher.config_flag] = "the config file"
    for flag in owner:
        if not flag.startswith("-") or len(flag) < 2 or any(c.isspace() or c == "=" for c in flag):
            problems.append(PackProblem("pack.launcher", f"{flag!r} is not a flag", "pack.toml"))
    for name, field in fields.items():
        where = f"field {name}"
        if field.flags and field.flag:
            problems.append(PackProblem(where, "give `flags` or `flag`, not both", field.file))
        spellings = field.all_flags
        if field.flag_value == "boolean_optional":
            spellings += tuple("--no-" + f.lstrip("-") for f in spellings if f.startswith("--"))
        for flag in spellings:
            if not flag.startswith("-") or len(flag) < 2 or any(c.isspace() or c == "=" for c in flag):
                problems.append(PackProblem(where, f"{flag!r} is not a flag", field.file))
            elif flag in owner and owner[flag] != name:
                problems.append(PackProblem(where, f"flag {flag} also spells {owner[flag]}", field.file))
            else:
                owner[flag] = name


def _check_model_config(pack: Pack, file: str, problems: list[PackProblem]) -> None:
    """The `[model_config]` table is checked with the pack, so a broken one fails at load (and in
    lint), not at the first `--model-config`."""
    from solver.pack.modelconfig import check_model_config_map

    problems += [
        PackProblem(p.where, p.message, p.file or file, p.line) for p in check_model_config_map(pack)
    ]


def _collect_sets(
    table: Any,
    file: str,
    sets: dict[str, tuple[Scalar, ...]],
    problems: list[PackProblem],
    where: _Locator,
) -> None:
    if not isinstance(table, dict):
        problems.append(PackProblem("sets", "must be a table of NAME = [values]", file))
        return
    for set_name, values in table.items():
        message = ""
        if not _SET_NAME.match(set_name):
            message = "set names are UPPER_CASE"
        elif set_name in sets:
            message = "declared twice"
        elif (
            not isinstance(values, list)
            or not values
            or not all(isinstance(v, str | int | bool) for v in values)
        ):
            message = "must be a non-empty list of literals"
        else:
            sets[set_name] = tuple(values)
            continue
        problems.append(PackProblem(f"set {set_name}", message, file, where.line(file, f"set {set_name}")))
        if message != "declared twice":
            where.broken.add(set_name)


def _collect_acknowledged(
    table: Any, file: str, acknowledged: dict[str, tuple[str, ...]], problems: list[PackProblem]
) -> None:
    """`[lint.acknowledged]`: subject = ["CODE: reason", ...]. Whether each entry is well formed
    and still matches a finding is lint's business (CS161-CS163); here only the shape."""
    if not isinstance(table, dict) or set(table) - {"acknowledged"}:
        problems.append(PackProblem("lint", "must be a table with only [lint.acknowledged]", file))
        return
    entries = table.get("acknowledged", {})
    if not isinstance(entries, dict):
        problems.append(PackProblem("lint.acknowledged", "must be a table of SUBJECT = [entries]", file))
        return
    for subject, items in entries.items():
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            problems.append(PackProblem(f"lint.acknowledged {subject}", "must be a list of strings", file))
        elif subject in acknowledged:
            problems.append(PackProblem(f"lint.acknowledged {subject}", "acknowledged twice", file))
        else:
            acknowledged[subject] = tuple(items)


def _collect_fields(
    table: Any, file: str, fields: dict[str, Field], problems: list[PackProblem], where_is: _Locator
) -> None:
    if not isinstance(table, dict):
        problems.append(PackProblem("field", "must be a table of [field.NAME] tables", file))
        return
    for field_name, body in table.items():
        where = f"field {field_name}"
        if not _FIELD_NAME.match(field_name):
            problems.append(PackProblem(where, "field names are identifiers", file))
            continue
        if field_name in fields:
            problems.append(PackProblem(where, f"declared twice (first in {fields[field_name].file})", file))
            continue
        if not isinstance(body, dict):
            problems.append(PackProblem(where, "must be a table", file))
            continue
        try:
            field = Field.model_validate({**body, "name": field_name, "file": file})
        except RecordInvalid as exc:
            text, key = _validation_text(exc, Field)
            problems.append(PackProblem(where, text, file, where_is.line(file, where, key)))
            where_is.broken.add(field_name)
            continue
        problems += [PackProblem(where, msg, file) for msg in _domain_problems(field)]
        fields[field_name] = field


def _domain_problems(field: Field) -> list[str]:
    out: list[str] = []
    domain = field.domain
    if not domain:
        return ["the domain is empty"]
    if len(domain) > MAX_DOMAIN:
        out.append(f"the domain has {len(domain)} values; at most {MAX_DOMAIN}")
    kinds = {type(v) for v in domain}
    if len(kinds) > 1:
        out.append("domain values must all be strings, all integers or all booleans")
    if len(set(map(repr, domain))) != len(domain):
        out.append("the domain lists a value twice")
    if field.auto is not None and any(field.auto == v for v in domain):
        out.append(f"auto spelling {field.auto!r} is also a domain value")
    if field.absent is not None and not any(
        field.absent == v and type(field.absent) is type(v) for v in domain
    ):
        out.append(f"absent value {field.absent!r} is not a domain value")
    for key in field.labels:
        if key not in {str(v) for v in domain}:
            out.append(f"label for {key!r}, which is not a domain value")
    if field.env and field.kind != "fact":
        out.append("an environment field must be a fact")
    if field.flag_value != "value" and kinds != {bool}:
        out.append(f"flag_value = {field.flag_value!r} needs a boolean field")
    if field.open is not None:
        if kinds != {int}:
            out.append("open = {...} needs an integer field")
        elif not all(field.open.admits(v) for v in domain):
            out.append(f"the listed values must lie in the open range ({field.open.text()})")
    return out


def _collect(
    items: Any, model: type[Any], what: str, file: str, problems: list[PackProblem], where_is: _Locator
) -> list[Any]:
    if not isinstance(items, list):
        problems.append(PackProblem(what, f"use [[{what}]] entries", file))
        return []
    out = []
    for index, body in enumerate(items):
        label = body.get("id", f"#{index + 1}") if isinstance(body, dict) else f"#{index + 1}"
        where = f"{what} {label}"
        if not isinstance(body, dict):
            problems.append(PackProblem(where, "must be a table", file))
            continue
        try:
            item = model.model_validate({**body, "file": file})
        except RecordInvalid as exc:
            text, key = _validation_text(exc, model)
            problems.append(PackProblem(where, text, file, where_is.line(file, where, key)))
            continue
        for attr in ("because", "source"):
            if not getattr(item, attr).strip():
                problems.append(PackProblem(where, f"`{attr}` is empty", file))
        out.append(item)
    return out


def _check_ids(pack: Pack, problems: list[PackProblem]) -> None:
    seen: dict[str, str] = {}
    items: list[Rule | Preference] = [*pack.rules, *pack.preferences]
    for item in items:
        kind = "rule" if isinstance(item, Rule) else "preference"
        if not _ID.match(item.id):
            problems.append(PackProblem(f"{kind} {item.id}", "ids are letters, digits, - _ . : +", item.file))
        if item.id in seen:
            problems.append(
                PackProblem(f"{kind} {item.id}", f"duplicate id (first in {seen[item.id]})", item.file)
            )
        seen.setdefault(item.id, item.file)
    for set_name in pack.sets:
        if set_name in pack.fields:
            problems.append(PackProblem(f"set {set_name}", "has the same name as a field"))


def _check_references(pack: Pack, problems: list[PackProblem]) -> None:
    fields = pack.fields
    for field in fields.values():
        for dep in field.depends_on:
            if dep not in fields:
                problems.append(
                    PackProblem(
                        f"field {field.name}",
                        f"depends_on unknown field {dep!r}{_hint(dep, fields)}",
                        field.file,
                    )
                )
    for pref in pack.preferences:
        where = f"preference {pref.id}"
        target = fields.get(pref.field)
        if target is None:
            problems.append(
                PackProblem(where, f"unknown field {pref.field!r}{_hint(pref.field, fields)}", pref.file)
            )
            continue
        problems += [PackProblem(where, msg, pref.file) for msg in _values_problems(target, pref.prefer)]
        if not pref.prefer and pref.same_as is None:
            problems.append(PackProblem(where, "needs `prefer` values or `same_as`", pref.file))
        if pref.same_as is not None:
            other = fields.get(pref.same_as)
            if other is None:
                problems.append(
                    PackProblem(where, f"same_as names unknown field {pref.same_as!r}", pref.file)
                )
            elif {type(v) for v in other.domain} != {type(v) for v in target.domain}:
                problems.append(
                    PackProblem(where, f"same_as {pref.same_as} has another value type", pref.file)
                )
    for rule in pack.rules:
        where = f"rule {rule.id}"
        if rule.adjusts is None:
            if rule.adjust_to:
                problems.append(PackProblem(where, "adjust_to without adjusts", rule.file))
            continue
        target = fields.get(rule.adjusts)
        if target is None:
            problems.append(PackProblem(where, f"adjusts unknown field {rule.adjusts!r}", rule.file))
            continue
        if rule.severity != "error":
            problems.append(PackProblem(where, "an adjustment must have severity error", rule.file))
        problems += [PackProblem(where, msg, rule.file) for msg in _values_problems(target, rule.adjust_to)]


def _values_problems(field: Field, values: Iterable[Scalar]) -> list[str]:
    out = []
    for value in values:
        if not any(value == v and type(value) is type(v) for v in field.domain):
            out.append(f"{value!r} is not a value of {field.name}")
    return out


def _check_cycles(pack: Pack, problems: list[PackProblem]) -> None:
    """depends_on must be acyclic; report each cycle as the whole chain.

    Iterative depth-first search: a legal chain may be thousands of fields long. At most
    _MAX_CYCLES_SHOWN cycles are listed (a hostile pack can have quadratically many)."""
    fields = pack.fields
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    found = 0
    for start in fields:
        if start in state:
            continue
        path = [start]
        where = {start: 0}  # position on `path`
        todo = [iter(dict.fromkeys(fields[start].depends_on))]
        state[start] = 1
        while todo:
            dep = next(todo[-1], None)
            if dep is None:
                done = path.pop()
                todo.pop()
                del where[done]
                state[done] = 2
            elif dep not in fields:
                continue
            elif state.get(dep) == 1:
                found += 1
                if found <= _MAX_CYCLES_SHOWN:
                    problems.append(PackProblem("depends_on cycle", _chain([*path[where[dep] :], dep])))
            elif dep not in state:
                state[dep] = 1
                where[dep] = len(path)
                path.append(dep)
                todo.append(iter(dict.fromkeys(fields[dep].depends_on)))
    if found > _MAX_CYCLES_SHOWN:
        problems.append(PackProblem("depends_on cycle", f"... and {found - _MAX_CYCLES_SHOWN} more cycles"))


_MAX_CYCLES_SHOWN = 50


def _chain(names: list[str], ends: int = 20) -> str:
    """`a -> b -> a`; a chain longer than 2 * `ends` links shows its ends and how many are left out."""
    if len(names) <= 2 * ends:
        return " -> ".join(names)
    left_out = len(names) - 2 * ends
    return " -> ".join([*names[:ends], f"... ({left_out} more)", *names[-ends:]])


def _parse_conditions(pack: Pack, problems: list[PackProblem]) -> PackSemantics:
    fields, sets = pack.fields, pack.sets
    for set_name, values in sets.items():
        if len({type(v) for v in values}) > 1:
            problems.append(PackProblem(f"set {set_name}", "mixes value types"))
    rules: dict[str, Condition] = {}
    whens: dict[str, Condition] = {}
    prefs: dict[str, Condition | None] = {}
    for rule in pack.rules:
        try:
            rules[rule.id] = rule_condition(rule.when, rule.require, rule.forbid, fields, sets)
            if rule.when is not None:
                whens[rule.id] = parse(rule.when, fields, sets)
        except ExprError as exc:
            problems.append(PackProblem(f"rule {rule.id}", str(exc), rule.file))
            continue
        if rule.adjusts is not None and rule.adjusts not in rules[rule.id].fields:
            problems.append(
                PackProblem(
                    f"rule {rule.id}", f"adjusts {rule.adjusts}, which the rule does not read", rule.file
                )
            )
    for pref in pack.preferences:
        try:
            prefs[pref.id] = parse(pref.when, fields, sets) if pref.when is not None else None
        except ExprError as exc:
            problems.append(PackProblem(f"preference {pref.id}", str(exc), pref.file))
    return PackSemantics(rules=rules, whens=whens, preferences=prefs)


def _hint(name: str, known: Mapping[str, Any]) -> str:
    import difflib

    close = difflib.get_close_matches(name, list(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


# Keys a record has that a pack file does not write (set by the loader).
_INTERNAL_KEYS = {"name", "file"}


def _validation_text(exc: RecordInvalid, model: type[Any]) -> tuple[str, str | None]:
    """What is wrong with a table, in a pack author's words, and the first key at fault.

    A misspelled key is one problem, not two: "unknown key 'becuase' (did you mean 'because'?)"
    stands for pydantic's "extra input" and the "missing" of the key it means."""
    import dataclasses

    keys = [f.name for f in dataclasses.fields(model) if f.name not in _INTERNAL_KEYS]
    errors = exc.errors()
    extra = [str(e["loc"][0]) for e in errors if e["loc"] and e["msg"] == "Extra inputs are not permitted"]
    meant = {k: did_you_mean(k, keys) for k in extra}
    parts: list[str] = []
    first: str | None = None
    for err in errors:
        key = str(err["loc"][0]) if err["loc"] else None
        loc = ".".join(str(p) for p in err["loc"]) or "value"
        if key in meant:
            parts.append(
                f"unknown key {key!r}{meant[key]} (a {model.__name__.lower()} has: {', '.join(keys)})"
            )
        elif err["msg"] == "Field required" and any(f"'{key}'" in hint for hint in meant.values()):
            continue  # the misspelled key above is this one
        elif err["msg"] == "Field required":
            parts.append(f"`{loc}` is required")
        else:
            parts.append(f"{loc}: {err['msg']}")
        first = first or key
    return "; ".join(parts), (extra[0] if extra else first)
