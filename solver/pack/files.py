"""A pack's files read safely: bounded bytes, bounded TOML, one digest.

A pack is untrusted data. Each file is read by `read_bounded` (regular files only, at most
MAX_FILE_BYTES, once each, MAX_PACK_BYTES in all, at most MAX_FILES listed); TOML nesting is
bounded before tomllib recurses, and control characters are refused. `read_bounded` is also how
`solver.inputs.modelconfig` reads a model's config files. Every problem goes to the caller's list
(`PackProblem`), so one load reports them all.
"""

from __future__ import annotations

import os
import re
import stat
import sys
from collections.abc import Callable
from itertools import accumulate
from pathlib import Path
from typing import Any, Protocol

from solver.errors import Collector, PackProblem
from solver.pack.text import toml_error_line

__all__ = [
    "MAX_FILES",
    "MAX_FILE_BYTES",
    "MAX_PACK_BYTES",
    "MAX_TOML_NESTING",
    "RefusedFile",
    "pack_digest",
    "parse_toml",
    "read_bounded",
    "read_files",
]

MAX_FILE_BYTES = 16 * 1024 * 1024

# All files of a pack together, and how many it may list: pack.toml cannot make the loader read
# one file many times, or many files without end.
MAX_PACK_BYTES = 2 * MAX_FILE_BYTES

MAX_FILES = 1_000

# Arrays and tables nested deeper than this are refused (tomllib recurses once per level).
MAX_TOML_NESTING = 64


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


# What `listed(bytes of pack.toml)` answers when it knows that manifest: the pack's name and the
# files it lists (a shipped pack's prebuilt form records them: `solver.pack.prebuilt.listed`).
Listed = tuple[str, list[str]]


def read_files(
    root: Path, problems: Collector[PackProblem], listed: Callable[[bytes], Listed | None] | None = None
) -> tuple[dict[str, Any] | None, str, list[tuple[str, bytes]]] | None:
    """The parsed pack.toml, the pack's name, and the name and bytes of pack.toml and of every
    file it lists; None when nothing more can be checked. Each file is read once, bounded
    (`read_bounded`), and all of them together are at most MAX_PACK_BYTES. A pack.toml that
    `listed` knows is not parsed (None in its place: the caller parses it if it needs more than
    the digest), which spares a cached pack's load the TOML parser."""
    if not root.is_dir():
        problems.add(PackProblem("pack", f"{root} is not a directory"))
        return None
    try:
        head = _read_file(root, "pack.toml", MAX_FILE_BYTES, problems)
    except RefusedFile as exc:
        problems.add(PackProblem("file", _refusal(exc), "pack.toml"))
        return None
    if head is None:
        return None
    known = listed(head[0]) if listed is not None else None
    manifest: dict[str, Any] | None = None
    if known is not None:
        pack_name, names = known
    else:
        manifest = parse_toml("pack.toml", head[0], problems)
        if manifest is None:
            return None
        meta = manifest.get("pack")
        if not isinstance(meta, dict):
            problems.add(
                PackProblem(
                    "pack",
                    "needs a [pack] table: name, version and files (the pack's other TOML files)",
                    "pack.toml",
                )
            )
            return None
        pack_name = str(meta.get("name") or root.name)
        names = meta.get("files", [])
    if not isinstance(names, list) or not all(isinstance(f, str) for f in names):
        problems.add(PackProblem("pack.files", "must be a list of file names", "pack.toml"))
        return None
    if len(names) > MAX_FILES:
        problems.add(PackProblem("pack.files", f"lists {len(names)} files; at most {MAX_FILES}", "pack.toml"))
        return None
    files = [("pack.toml", head[0])]
    seen: dict[object, str] = {head[1]: "pack.toml"}
    budget = MAX_PACK_BYTES - len(head[0])
    for name in names:
        if Path(name).name != name or not name.endswith(".toml") or len(name) > 255 or "\0" in name:
            shown = repr(name) if len(name) <= 80 else repr(name[:80]) + "..."
            problems.add(PackProblem("pack.files", f"{shown} is not a .toml file name", "pack.toml"))
            continue
        if name == "pack.toml":
            problems.add(PackProblem("pack.files", "lists pack.toml itself; list the other files", name))
            continue
        if name in seen.values():
            problems.add(PackProblem("pack.files", f"{name!r} is listed twice", "pack.toml"))
            continue
        if budget < 0:
            continue  # reported once, at the file that went over
        try:
            loaded = _read_file(root, name, min(MAX_FILE_BYTES, budget), problems)
        except RefusedFile as exc:
            problems.add(PackProblem("file", _refusal(exc), name))
            if not exc.kind and exc.limit < MAX_FILE_BYTES:
                budget = -1
            continue
        if loaded is None:
            continue
        raw, identity = loaded
        if identity in seen:
            problems.add(
                PackProblem("pack.files", f"{name!r} is the same file as {seen[identity]!r}", "pack.toml")
            )
            continue
        seen[identity] = name
        files.append((name, raw))
        budget -= len(raw)
    return manifest, pack_name, files


def _read_file(
    root: Path, name: str, limit: int, problems: Collector[PackProblem]
) -> tuple[bytes, object] | None:
    """The bytes of one pack file and its identity on disk, or None after reporting why not;
    `RefusedFile` (not a regular file, over `limit`) is the caller's to report."""
    path = root / name
    # A link may point within the pack (a shared file), never out of it: the pack is the files
    # in its directory, not whatever a link in it names (/etc/..., a user's home).
    base = os.path.realpath(root)
    if os.path.commonpath([os.path.realpath(path), base]) != base:
        problems.add(PackProblem("file", "is a link to a file outside the pack directory", name))
        return None
    try:
        raw = read_bounded(path, limit)
        info = path.stat()
    except FileNotFoundError:
        if name == "pack.toml":
            problems.add(PackProblem("pack", f"no pack.toml in {root}", name))
        else:
            problems.add(PackProblem("file", "listed in pack.toml but missing", name))
        return None
    except OSError as exc:
        problems.add(PackProblem("file", f"cannot be read: {exc.strerror or exc}", name))
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


# The patterns of this module are texts, compiled where they are used (the `re` module keeps
# them): a `check` from the prebuilt form parses no TOML, and compiling them at import was ~0.4 ms
# of its start (round cold30).

# Strings and comments, whose brackets are text (matched with re.DOTALL). Unrolled loops, and an
# unclosed string runs to the end of its line (or of the text): every match succeeds where it
# starts, so the scan is linear (a 16 MB file in about a second); an unclosed string is
# tomllib's to report.
_TOML_SKIP = (
    r'"""[^"\\]*(?:(?:\\.?|"{1,2}(?!"))[^"\\]*)*(?:"{3,5})?'  # multi-line basic string
    r"|'''[^']*(?:'{1,2}(?!')[^']*)*(?:'{3,5})?"  # multi-line literal string
    r'|"[^"\\\n]*(?:\\[^\n]?[^"\\\n]*)*"?'  # basic string
    r"|'[^'\n]*'?"  # literal string
    r"|#[^\n]*"  # comment
)

_NOT_BRACKET = r"[^\[\]{}]+"

_BRACKET_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}.__getitem__


def _bracket_nesting(text: str) -> int:
    """How deep arrays and inline tables nest in TOML `text` (strings and comments skipped)."""
    if text.count("[") + text.count("{") <= MAX_TOML_NESTING:
        return 0  # cannot be too deep
    brackets = re.sub(_NOT_BRACKET, "", re.sub(_TOML_SKIP, " ", text, flags=re.DOTALL))
    return max(accumulate(map(_BRACKET_STEP, brackets)), default=0)


# A dotted key of more than MAX_TOML_NESTING parts (`a.b.c...`, strings already blanked out):
# each part is a level of tables, and tomllib builds them in time quadratic in their number (an
# 80 KB key took 48 s and 9 GB), so it is refused before tomllib sees it.
_DOTTED_RUN = r"(?:[A-Za-z0-9_-]+[ \t]*\.[ \t]*){" + str(MAX_TOML_NESTING) + ",}"


def _long_dotted_key(text: str) -> bool:
    if text.count(".") < MAX_TOML_NESTING:
        return False
    return re.search(_DOTTED_RUN, re.sub(_TOML_SKIP, "s", text, flags=re.DOTALL)) is not None


def parse_toml(name: str, raw: bytes, problems: Collector[PackProblem]) -> dict[str, Any] | None:
    """The TOML document in `raw`, or None after reporting why it is not one."""
    # Only when a file is parsed (a pack served from the cache needs none). tomli before the
    # standard library's tomllib: the same parser (tomllib is tomli 1.x, vendored), but tomli's
    # wheels are compiled with mypyc and parse the SGLang pack in ~12 ms instead of ~20 ms on a
    # first `check` (README, "Conventions and libraries"). Without it (a distribution's packages,
    # an environment made before it was a dependency) tomllib gives the same documents.
    try:
        import tomli
    except ImportError:
        import tomllib as tomli  # type: ignore[no-redef]

    too_deep = PackProblem("file", f"arrays or tables nested deeper than {MAX_TOML_NESTING} levels", name)
    try:
        text = raw.decode("utf-8")
        # tomllib recurses once per level of arrays and inline tables: refuse deep nesting before
        # it sees it (RecursionError is the backstop).
        if _bracket_nesting(text) > MAX_TOML_NESTING or _long_dotted_key(text):
            problems.add(too_deep)
            return None
        doc = tomli.loads(text)
    except UnicodeDecodeError as exc:
        problems.add(PackProblem("file", f"not UTF-8 text ({exc.reason} at byte {exc.start})", name))
        return None
    except RecursionError:
        problems.add(too_deep)
        return None
    except tomli.TOMLDecodeError as exc:
        problems.add(
            PackProblem("file", f"not valid TOML: {_shorten(str(exc))}", name, toml_error_line(str(exc)))
        )
        return None
    except ValueError as exc:  # tomllib lets int() refuse an integer literal of 4,300+ digits
        problems.add(PackProblem("file", f"not valid TOML: {_number_problem(exc)}", name))
        return None
    # Dotted keys (a.b.c = 1) nest tables without brackets; what reads the pack later may recurse.
    if _data_nesting(doc) > MAX_TOML_NESTING:
        problems.add(too_deep)
        return None
    controlled = _control_characters(doc)
    if controlled:
        problems.add(
            *(
                PackProblem(
                    where,
                    f"holds the control character {char!r}: pack text reaches "
                    "terminals, so it may not hold escapes, carriage returns or "
                    "direction overrides",
                    name,
                )
                for where, char in controlled
            )
        )
    return doc  # checked on (every problem at once); a pack with any problem never loads


# Characters that would let pack text act on a terminal (ANSI escapes, a carriage return that
# overwrites a line, bidirectional overrides that reorder it); tabs and newlines are text, and a
# NUL does nothing on a terminal (in a condition, the condition parser refuses it).
_CONTROL = "[\x01-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]"

_MAX_CONTROL_SHOWN = 20


def _control_characters(doc: Any) -> list[tuple[str, str]]:
    """Where (a dotted key path) strings and keys of `doc` hold a control character, and which."""
    control = re.compile(_CONTROL)
    found: list[tuple[str, str]] = []
    todo: list[tuple[str, Any]] = [("", doc)]
    while todo and len(found) < _MAX_CONTROL_SHOWN:
        path, value = todo.pop()
        if isinstance(value, str):
            hit = control.search(value)
            if hit is not None:
                found.append((path or "value", hit.group()))
        elif isinstance(value, dict):
            for key, item in value.items():
                hit = control.search(key)
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


class Hash(Protocol):
    """What a hash of `hashlib` does that is used here."""

    def update(self, data: bytes, /) -> None: ...

    def hexdigest(self) -> str: ...


def _sha256() -> Callable[..., Hash]:
    """`hashlib.sha256`, or the same function built into the interpreter (`_sha256` in 3.11,
    `_sha2` from 3.12): importing hashlib loads OpenSSL's libcrypto, ~5 ms of a first `confsolve
    check` (round cold28), for the one algorithm a start uses. The same digests; hashlib's where
    the interpreter has no built-in one (built without it, or FIPS builds)."""
    import importlib

    for module in ("_sha256", "_sha2"):
        try:
            made: Callable[..., Hash] = importlib.import_module(module).sha256
        except (ImportError, AttributeError):
            continue
        return made
    from hashlib import sha256

    return sha256


sha256 = _sha256()


def pack_digest(files: list[tuple[str, bytes]]) -> str:
    """sha256 over each file's name, length and bytes (moving text between files changes it)."""
    digest = sha256()
    for name, raw in files:
        digest.update(f"{name}\0{len(raw)}\0".encode())
        digest.update(raw)
    return digest.hexdigest()
