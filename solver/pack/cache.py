"""An on-disk cache of what depends only on a pack's content: the checked pack and its field order.

A launcher pays for a pack on every start: TOML parsing, validation and the field graph (networkx
alone costs ~200 ms to import). None of that changes until the pack files do, so the results are
kept as JSON in `$XDG_CACHE_HOME/confsolve/` (default `~/.cache/confsolve/`), one file per pack
digest. The key also covers the source of every module of `solver` (the code that parses, checks
and validates a pack) and the interpreter's version, so an upgrade of confsolve or of Python never
reads an entry written by another version.

An entry is trusted only as far as the directory holding it: the directory must belong to this
user and be writable by no one else, and each entry file must belong to this user (a regular
file, not a link); otherwise the cache is not used at all. That is what stops another user from
planting an entry that turns a conflict into "ok". Entries are JSON, never pickle, read bounded
(MAX_ENTRY_BYTES) and parsed with nesting errors caught, so a corrupt or hostile file can only
be a miss. The one exception is the side file of a pack's compiled conditions
(`solver.pack.condcache`): `marshal` data holding code objects this process generated and
compiled, which is why the directory must be this user's alone (as the installed package is:
whoever can write there can already change what runs); writes are atomic, so a file is never
half-written.

Best effort, never a source of errors: a missing, unreadable, corrupt or foreign entry is a miss,
and a failed write is ignored (an unwritable or full disk). Writes are atomic (a temporary file
renamed), so concurrent processes see an old entry or a new one. Set `CONFSOLVE_NO_CACHE=1` to
neither read nor write. At most `MAX_ENTRIES` entries are kept. Imports only the standard library.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["MAX_ENTRIES", "read", "read_blob", "remember", "write", "write_blob"]

FORMAT = 2
MAX_ENTRIES = 32
MAX_ENTRY_BYTES = 64 * 1024 * 1024

_code_key: str | None = None
_entries: dict[str, dict[str, Any]] = {}


def _directory() -> Path | None:
    if os.environ.get("CONFSOLVE_NO_CACHE"):
        return None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    if not os.path.isabs(base):
        return None  # the XDG spec says to ignore relative paths
    directory = Path(base) / "confsolve"
    try:
        info = os.lstat(directory)
    except FileNotFoundError:
        return directory  # created by the first write, 0700
    except OSError:
        return None
    return directory if _private(info, stat.S_ISDIR) else None


def _private(info: os.stat_result, kind: Any) -> bool:
    """Owned by this user, of the expected kind (not a link), writable by no one else."""
    mine = not hasattr(os, "getuid") or info.st_uid == os.getuid()
    return bool(kind(info.st_mode)) and mine and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _code() -> str:
    global _code_key
    if _code_key is None:
        _code_key = code_key(Path(__file__).parent.parent)
    return _code_key


def code_key(solver: Path) -> str:
    """The part of a cache entry's name that changes with the code reading it: the modules of
    the package at `solver` and this interpreter."""
    # The interpreter too: the conditions' side file holds its code objects (pack.condcache).
    from solver.pack.files import sha256

    digest = sha256(f"{FORMAT}\0{sys.version}\0{sys.implementation.cache_tag}".encode())
    # Every module: which of them decide what an entry holds changes as the code does (the
    # loader now runs the model-config checks, validation, the condition language, ...).
    for path in sorted(solver.rglob("*.py")):
        try:
            digest.update(path.relative_to(solver).as_posix().encode() + b"\0" + path.read_bytes())
        except OSError:
            digest.update(path.name.encode())
    return digest.hexdigest()[:16]


def _path(digest: str, suffix: str = ".json") -> Path | None:
    directory = _directory()
    if directory is None or not digest.isalnum():
        return None
    return directory / f"{digest[:32]}-{_code()}{suffix}"


def read(digest: str) -> dict[str, Any] | None:
    """The cached entry of the pack with this content digest, or None."""
    if digest in _entries:
        return _entries[digest]
    path = _path(digest)
    if path is None:
        return None
    try:
        raw = _read_own(path)
        import json  # (only now: a first start, and any start of a shipped pack, reads no entry)

        entry = json.loads(raw)
    except (OSError, ValueError, RecursionError, MemoryError):
        return None
    if not isinstance(entry, dict) or entry.get("digest") != digest:
        return None
    _entries[digest] = entry
    return entry


def _read_own(path: Path) -> bytes:
    """The bytes of an entry file this user owns (not a link), at most MAX_ENTRY_BYTES."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not _private(info, stat.S_ISREG) or info.st_size > MAX_ENTRY_BYTES:
            raise OSError(f"{path}: not a private regular file of a sane size")
        return handle.read(MAX_ENTRY_BYTES + 1)


def read_blob(digest: str, suffix: str) -> bytes | None:
    """The bytes of a side file of this pack digest (`suffix`, e.g. ".count": what a command
    keeps apart from the entry every load reads), under the entries' trust rules, or None."""
    path = _path(digest, suffix)
    if path is None:
        return None
    try:
        return _read_own(path)
    except OSError:
        return None


def write_blob(digest: str, suffix: str, make: Callable[[], bytes]) -> None:
    """Keep what `make()` gives as the side file `suffix` of this digest (made only when there is
    a cache to write to; atomic, best effort: failures are ignored); at most `MAX_ENTRIES` side
    files of a suffix are kept."""
    path = _path(digest, suffix)
    if path is None:
        return
    data = make()
    if len(data) > MAX_ENTRY_BYTES:
        return
    with contextlib.suppress(OSError):
        _replace(path, data)
        _evict(path.parent, suffix)


def _replace(path: Path, data: bytes) -> None:
    """Write `data` to `path` through a temporary file renamed over it (readers see the old file
    or the new one, never half of one); nothing if the directory is not ours."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    if _directory() is None:  # made by someone else meanwhile, or made open: not ours to use
        return
    import tempfile  # only when writing (it brings shutil, random and the compressors)

    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, path)
    except BaseException:
        # A full disk (or a failed rename) must not leave half an entry behind, run after run.
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def remember(digest: str, **parts: Any) -> None:
    """Add `parts` to the entry of this digest in this process only (what a shipped pack's
    prebuilt form brings, `solver.pack.prebuilt`: on disk it would only repeat the module)."""
    _entries[digest] = {**_entries.get(digest, {}), **parts, "digest": digest}


def write(digest: str, **parts: Any) -> None:
    """Add `parts` to the entry of this digest (JSON-serialisable values); ignore any failure."""
    path = _path(digest)
    entry = {**(read(digest) or {}), **parts, "digest": digest}
    _entries[digest] = entry
    if path is None:
        return
    import json

    try:
        # dumps, not dump: only the one-shot encoder is the C one (dump cost a first run 50 ms)
        _replace(path, json.dumps(entry, separators=(",", ":")).encode())
        _evict(path.parent)
    except (OSError, TypeError, ValueError):
        return


def _evict(directory: Path, suffix: str = ".json") -> None:
    entries = sorted(directory.glob(f"*{suffix}"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in entries[MAX_ENTRIES:]:
        old.unlink(missing_ok=True)
