"""A set of real models to draw facts from: `confsolve diff --models PATH`.

Owns finding model paths, nothing more: each pack then reads its own facts from every path
through `solver.inputs.modelconfig` (its `[model_config]` table), as `--model-config` does.
A PATH is one of:

- a model: a config file, or a directory holding any regular file (config.json, weights);
- a directory of models: a directory holding only directories, each one model;
- a config archive `*.json.gz` (or `*.json`, told apart by holding only objects of files): a JSON
  object `{model name: {file name: JSON content}}` (or that object under "configs"), the form
  tests/fixtures keeps the configs of the recorded launcher runs in. Its files are written to a
  private temporary directory that lives as long as the `models_at` block, and read from there
  like any model directory.

Everything is bounded (the archive's decompressed size, the models listed, the file names an
archive may write: plain names only, never a path), and every problem is an `InvalidInput`
naming the PATH. Standard library, `solver.errors` and `solver.pack.loader` (bounded reading).
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import json
import os
import re
import secrets
import shutil
import stat
import tempfile
import threading
import zlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from solver.errors import InputIssue, InvalidInput
from solver.pack.loader import RefusedFile, read_bounded

__all__ = ["MAX_ARCHIVE_BYTES", "MAX_MODELS", "models_at", "remove_scratch"]

MAX_MODELS = 10_000
MAX_ARCHIVE_BYTES = 64 * 1024 * 1024  # decompressed; the repo's largest archive is ~1 MB
# A file an archive may write: a plain name (config.json, hf_quant_config.json), never a path.
_FILE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")


def _issue(source: str, message: str) -> InvalidInput:
    named = source or "''"
    return InvalidInput([InputIssue(field="models", value=source, message=f"--models {named}: {message}")])


class _Scratch:
    """The private directory archives are written to, made on first use (a directory of models
    needs none). Listed in `_LIVE` while it exists, so that a command ended while its worker is
    still inside the diff (Ctrl-C, a deadline) can remove it (`remove_scratch`)."""

    def __init__(self) -> None:
        self.path: Path | None = None
        self.generation = _GENERATION[0]

    def write(self, index: int, name: str, files: dict[str, str]) -> Path:
        """Write `files` (name: text) into directory `name` of source `index`, made on the way (the
        scratch itself on first use), and return it. All under the lock `remove_scratch` takes,
        which a worker `remove_scratch` has given up on (an older generation) is refused: a
        worker still writing after Ctrl-C ended its command made the removed scratch again
        (`mkdir`'s parents), and a Ctrl-C between making and listing it left it behind."""
        with _LIVE_LOCK:
            if self.generation != _GENERATION[0]:
                raise RuntimeError("the command has ended: no scratch directory for it")
            if self.path is None:
                path = Path(tempfile.gettempdir()) / f"confsolve-models-{secrets.token_hex(8)}"
                _LIVE.add(path)  # listed before it exists
                path.mkdir(mode=0o700)
                self.path = path
            directory = self.path / str(index) / name
            directory.mkdir(parents=True)
            for file_name, text in files.items():
                (directory / file_name).write_text(text, encoding="utf-8")
        return directory

    def remove(self) -> None:
        if self.path is not None:
            shutil.rmtree(self.path, ignore_errors=True)
            with _LIVE_LOCK:
                _LIVE.discard(self.path)


# Writes one model's files into the scratch of a source: `_Scratch.write` with the source's index.
_Write = Callable[[str, dict[str, str]], Path]
_LIVE: set[Path] = set()
_LIVE_LOCK = threading.Lock()
_GENERATION = [0]  # advanced by remove_scratch: the scratches of a command it ended make no more


def remove_scratch() -> None:
    """Remove every archive's directory still in use (the command line calls this when it ends
    a command whose worker it leaves behind)."""
    with _LIVE_LOCK:
        live = list(_LIVE)
        _LIVE.clear()
        _GENERATION[0] += 1
    for path in live:
        shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def models_at(sources: Sequence[str | os.PathLike[str]]) -> Iterator[dict[str, Path]]:
    """The models under `sources`, by name (a directory's or the archive's; a repeated name gets
    `#2`, `#3`), in the order given and sorted within a directory or archive. Raises
    `InvalidInput` for a PATH that holds no model or cannot be read."""
    scratch = _Scratch()
    try:
        found: dict[str, Path] = {}
        for index, source in enumerate(sources):
            shown = os.fsdecode(source)
            where = functools.partial(scratch.write, index)
            for found_name, path in _models(Path(source), shown, where):
                # Printed by diff: no control characters (a terminal escape), a bounded length.
                name = "".join(c if c.isprintable() else "?" for c in found_name[:120])
                label, n = name, 1
                while label in found:
                    n += 1
                    label = f"{name}#{n}"
                found[label] = path
                if len(found) > MAX_MODELS:
                    raise _issue(shown, f"more than {MAX_MODELS} models")
        yield found
    finally:
        scratch.remove()


def _models(path: Path, shown: str, write: _Write) -> list[tuple[str, Path]]:
    if not shown:  # Path("") is the working directory: its subdirectories were read as models
        raise _issue(shown, "an empty path (give a model directory, config file or archive; . is this one)")
    try:
        try:
            mode = path.stat().st_mode
        except FileNotFoundError:
            raise _issue(shown, "no such file or directory") from None
        if stat.S_ISDIR(mode):
            return _directory(path, shown)
        if path.name.endswith(".json.gz"):
            return _archive(_read_archive(path, shown), shown, write)
        if path.name.endswith(".json"):
            parsed = _configs(_parse(read_bounded(path, MAX_ARCHIVE_BYTES), shown))
            if _is_archive(parsed):
                return _archive(parsed, shown, write)
        return [(path.parent.name or path.name, path)]
    except RefusedFile as exc:
        raise _issue(shown, f"cannot be read: {exc}") from None
    except OSError as exc:  # a loop of links, no permission, a name too long
        raise _issue(shown, f"cannot be read: {exc.strerror or exc}") from None


def _directory(path: Path, shown: str) -> list[tuple[str, Path]]:
    entries = []
    with os.scandir(path) as listing:
        for entry in listing:
            if entry.name.startswith("."):
                continue
            entries.append(entry)
            if len(entries) > MAX_MODELS:
                raise _issue(shown, f"more than {MAX_MODELS} entries")
    if not entries:
        raise _issue(shown, "an empty directory: no model in it")
    if any(not e.is_dir() for e in entries):
        return [(path.resolve().name, path)]  # a model directory itself
    return [(e.name, Path(e.path)) for e in sorted(entries, key=lambda e: e.name)]


def _read_archive(path: Path, shown: str) -> Any:
    raw = read_bounded(path, MAX_ARCHIVE_BYTES)
    try:
        # Decompressed in one bounded step: a small gzip can hold gigabytes of zeros.
        inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        data = inflater.decompress(raw, MAX_ARCHIVE_BYTES + 1)
    except (zlib.error, gzip.BadGzipFile) as exc:
        raise _issue(shown, f"not a gzip file ({exc})") from None
    if len(data) > MAX_ARCHIVE_BYTES or inflater.unconsumed_tail:
        raise _issue(shown, f"holds more than {MAX_ARCHIVE_BYTES} bytes of JSON")
    parsed = _configs(_parse(data, shown))
    if not _is_archive(parsed):
        raise _issue(shown, "not a config archive: a JSON object {model name: {file name: JSON object}}")
    return parsed


def _parse(data: bytes, shown: str) -> Any:
    try:
        return json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise _issue(shown, f"not valid JSON ({type(exc).__name__}: {str(exc)[:120]})") from None


def _configs(parsed: Any) -> Any:
    """The archive proper: the oracle's fixture keeps it under "configs", beside its scenarios."""
    if isinstance(parsed, dict) and isinstance(parsed.get("configs"), dict):
        return parsed["configs"]
    return parsed


def _is_archive(parsed: Any) -> bool:
    return (
        isinstance(parsed, dict)
        and bool(parsed)
        and all(
            isinstance(files, dict) and bool(files) and all(isinstance(v, dict) for v in files.values())
            for files in parsed.values()
        )
    )


def _archive(parsed: dict[str, dict[str, Any]], shown: str, write: _Write) -> list[tuple[str, Path]]:
    """Write each model's files to the scratch (one numbered directory per model: names from the
    archive never become paths) and list them."""
    out: list[tuple[str, Path]] = []
    for number, name in enumerate(sorted(parsed)):
        files = parsed[name]
        bad = [f for f in files if not _FILE_NAME.fullmatch(f)]
        if bad:
            raise _issue(shown, f"model {name[:80]!r}: {bad[0][:80]!r} is not a plain file name")
        texts = {file_name: json.dumps(content) for file_name, content in files.items()}
        out.append((name, write(f"{number:05d}", texts)))
    return out
