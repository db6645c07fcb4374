"""An on-disk cache of what depends only on a pack's content: the checked pack and its field order.

A launcher pays for a pack on every start: TOML parsing, validation and the field graph (networkx
alone costs ~200 ms to import). None of that changes until the pack files do, so the results are
kept as JSON in `$XDG_CACHE_HOME/confsolve/` (default `~/.cache/confsolve/`), one file per pack
digest. The key also covers the source of the modules that compute those results, so an upgrade of
confsolve never reads an entry written by another version.

Best effort, never a source of errors: a missing, unreadable, corrupt or foreign entry is a miss,
and a failed write is ignored. JSON, not pickle, so a cache entry can only ever be data. Set
`CONFSOLVE_NO_CACHE=1` to neither read nor write. At most `MAX_ENTRIES` entries are kept.
Imports only the standard library.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["MAX_ENTRIES", "read", "write"]

FORMAT = 1
MAX_ENTRIES = 32
# The modules whose code decides what an entry holds (the checked pack and the field order).
_SOURCES = ("model.py", "loader.py", "expr.py", "graph.py", "cache.py")

_code_key: str | None = None
_entries: dict[str, dict[str, Any]] = {}


def _directory() -> Path | None:
    if os.environ.get("CONFSOLVE_NO_CACHE"):
        return None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    if not os.path.isabs(base):
        return None  # the XDG spec says to ignore relative paths
    return Path(base) / "confsolve"


def _code() -> str:
    global _code_key
    if _code_key is None:
        digest = hashlib.sha256(str(FORMAT).encode())
        here = Path(__file__).parent
        for name in _SOURCES:
            try:
                digest.update((here / name).read_bytes())
            except OSError:
                digest.update(name.encode())
        _code_key = digest.hexdigest()[:16]
    return _code_key


def _path(digest: str) -> Path | None:
    directory = _directory()
    if directory is None or not digest.isalnum():
        return None
    return directory / f"{digest[:32]}-{_code()}.json"


def read(digest: str) -> dict[str, Any] | None:
    """The cached entry of the pack with this content digest, or None."""
    if digest in _entries:
        return _entries[digest]
    path = _path(digest)
    if path is None:
        return None
    try:
        entry = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(entry, dict) or entry.get("digest") != digest:
        return None
    _entries[digest] = entry
    return entry


def write(digest: str, **parts: Any) -> None:
    """Add `parts` to the entry of this digest (JSON-serialisable values); ignore any failure."""
    path = _path(digest)
    entry = {**(read(digest) or {}), **parts, "digest": digest}
    _entries[digest] = entry
    if path is None:
        return
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w") as out:
            json.dump(entry, out, separators=(",", ":"))
        os.replace(tmp, path)  # readers see the old entry or the new one, never half of one
        _evict(path.parent)
    except (OSError, TypeError, ValueError):
        return


def _evict(directory: Path) -> None:
    entries = sorted(directory.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in entries[MAX_ENTRIES:]:
        old.unlink(missing_ok=True)
