"""A shipped pack prebuilt: its checked form and compiled conditions, installed as a Python module.

The first start after an install has no disk cache (`solver.pack.cache`), so before this it read
and validated every TOML file, parsed, checked and compiled the ~750 conditions and wrote the
cache: ~130 ms of a first `confsolve check`'s CPU, against ~10 ms to read the cache later. A
shipped pack's directory (`constraints/NAME/`, a Python package) may hold that result as
`prebuilt.py`, written by

    python -m solver.engine.shipped constraints/sglang constraints/vllm

(which also writes the compiled count; `--prebuilt-only` writes this alone): the pack as the disk
cache holds it (`Pack.model_dump(mode="json")`, rebuilt by `Pack.from_json`) and its field order
(`solver.pack.graph`'s, kept in the entry for `solver.reasoning.plan`), each condition's text,
fields, literals, `given` fields and constants, and the generated source of each shape of
condition (`solver.pack.codegen`) as a function of the module. pip compiles a package's modules
at install, so the shapes arrive compiled for the installed interpreter, whatever its version;
code in a package is as trusted as confsolve's own.

It is read only for a pack directory of the installed `constraints` package (never for a pack
given by path elsewhere: a module there is not ours to import), only when its bytecode is there
and up to date (an install with `--no-compile`, or a checkout under PYTHONDONTWRITEBYTECODE, would
compile it on every start, at more than the files cost), and only when its `DIGEST` is the digest
of the pack files beside it and its `FORMAT` this module's; otherwise the pack is loaded from its
files as before. What keeps it right: tests/test_prebuilt.py writes it again from the pack and
requires the same text, so a form stale for its pack or for the code that loads and compiles a
pack cannot land. The writer is `solver.pack.prebuild`. Imports the standard library,
`solver.pack` and `constraints`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import CodeType, ModuleType
from typing import TYPE_CHECKING, Any

from solver.pack import codegen
from solver.pack.crosscheck import PackSemantics
from solver.pack.expr import Condition

if TYPE_CHECKING:
    from solver.model import Pack

__all__ = ["FORMAT", "GROUPS", "MODULE", "TABLES", "condition", "listed", "manifest_of", "read", "recall"]

MODULE = "prebuilt"  # constraints/NAME/prebuilt.py
FORMAT = "confsolve-prebuilt-1"
GROUPS = ("RULES", "WHENS", "PREFERENCES")
TABLES = ("value_reads", "valued_preferences")  # `solver.pack.given`'s, as literals


def recall(digest: str, root: Path, keep: Callable[[str, PackSemantics], None]) -> Pack | None:
    """The prebuilt pack of the shipped pack in `root` whose files have `digest`, its conditions
    given to `keep(digest, ...)`; or None (not a shipped pack's directory, no prebuilt form, or
    one for other files)."""
    module = _shipped_module(root)
    found = None if module is None else read(module, digest, str(root))
    if found is None:
        return None
    pack, conditions, tables = found
    keep(digest, conditions)
    from solver.pack import cache

    # The field order `solver.reasoning.plan` reads and the typed-value reads `solver.pack.given`
    # finds (it decodes them when it reads them).
    cache.remember(digest, **tables)
    return pack


def read(
    module: ModuleType, digest: str, directory: str | None
) -> tuple[Pack, PackSemantics, dict[str, Any]] | None:
    """What a load takes from the prebuilt `module` for the files of `digest`: the pack, its
    conditions and the tables kept for this process (`cache.remember`); None for a module of
    another format, files or layout. The writer (`solver.pack.prebuild`) checks its text with it."""
    if getattr(module, "FORMAT", None) != FORMAT or getattr(module, "DIGEST", None) != digest:
        return None
    from solver.model import Pack

    try:
        pack = Pack.from_json(module.PACK, digest=digest, directory=directory)
        rules, whens, preferences = (_conditions(getattr(module, name), module.CODE) for name in GROUPS)
    except (AttributeError, KeyError, TypeError, ValueError, IndexError):
        return None  # a module of another layout: the files decide, as without one
    tables: dict[str, Any] = {}
    order = getattr(module, "ORDER", None)
    if isinstance(order, tuple) and all(isinstance(name, str) for name in order):
        tables["order"] = list(order)
    for part in TABLES:
        if hasattr(module, part.upper()):
            tables[part] = getattr(module, part.upper())
    return pack, PackSemantics(rules=rules, whens=whens, preferences=preferences), tables


def listed(root: Path, manifest: bytes) -> tuple[str, list[str]] | None:
    """The pack's name and the files its pack.toml lists, when `manifest` is the pack.toml the
    prebuilt form of the shipped pack in `root` was written from; otherwise None (the loader
    parses it). Spares a load from the prebuilt form or the cache the TOML parser (~5 ms of a
    first `confsolve check`): the files it names are read and digested all the same."""
    module = _shipped_module(root)
    return None if module is None else manifest_of(module, manifest)


def manifest_of(module: ModuleType, manifest: bytes) -> tuple[str, list[str]] | None:
    """`listed` of the prebuilt `module` (the writer checks its text with it)."""
    record = getattr(module, "MANIFEST", None)
    if not isinstance(record, tuple) or len(record) != 3:
        return None
    digest, name, files = record
    if not (isinstance(name, str) and isinstance(files, tuple) and all(isinstance(f, str) for f in files)):
        return None
    from solver.pack.files import sha256

    return (name, list(files)) if digest == sha256(manifest).hexdigest() else None


def _conditions(records: Any, codes: list[CodeType]) -> dict[str, Any]:
    return {key: None if record is None else condition(record, codes) for key, record in records}


def _shipped_module(root: Path) -> ModuleType | None:
    """The module `prebuilt` of the installed `constraints` package's pack directory `root`
    (kept once found: a load asks twice, `listed` then `recall`). A miss is not kept: the
    module's bytecode may be written later in the process (a first import compiles it), and a
    remembered miss would then load every later pack from its files."""
    found = _MODULES.get(root)
    if found is None:
        found = _find_module(root)
        if found is not None:
            _MODULES[root] = found
    return found


_MODULES: dict[Path, ModuleType] = {}


def _find_module(root: Path) -> ModuleType | None:
    try:
        import constraints

        directory = root.resolve()
        shipped = Path(constraints.__file__).resolve().parent
    except (ImportError, OSError, RuntimeError):
        return None
    if directory.parent != shipped:
        return None  # a pack given by path: its directory's code is not confsolve's
    if not directory.name.isidentifier():
        return None
    if not _compiled(directory / f"{MODULE}.py"):
        return None
    import importlib

    try:
        return importlib.import_module(f"constraints.{directory.name}.{MODULE}")
    except (ImportError, SyntaxError, ValueError):
        return None


def _compiled(path: Path) -> bool:
    """Whether `path` has up-to-date bytecode for this interpreter, as pip writes at install (the
    header importlib checks: magic number, then the source's time and size, or a hash). Without
    it, importing would compile the module (~0.9 MB): ~250 ms, more than loading from the files."""
    from importlib.util import MAGIC_NUMBER, cache_from_source

    try:
        source = path.stat()
        with open(cache_from_source(str(path)), "rb") as compiled:
            head = compiled.read(16)
    except (OSError, NotImplementedError, ValueError):
        return False
    if len(head) < 16 or head[:4] != MAGIC_NUMBER:
        return False
    if int.from_bytes(head[4:8], "little") & 1:
        return True  # hash-based bytecode: importlib checks the hash itself
    stamp = (int(source.st_mtime) & 0xFFFFFFFF, source.st_size & 0xFFFFFFFF)
    return (int.from_bytes(head[8:12], "little"), int.from_bytes(head[12:16], "little")) == stamp


def condition(record: tuple[Any, ...], codes: list[CodeType]) -> Condition:
    """A condition of its record in the module: (text, fields, literals, given, the shape of
    `holds` (an index into CODE), its constants, the shape of `partial`, its constants)."""
    text, fields, literals, given, holds, holds_consts, partial, partial_consts = record
    return Condition(
        text=text,
        fields=fields,
        holds=codegen.restore("holds", codes[holds], holds_consts),
        partial=codegen.restore("partial", codes[partial], partial_consts),
        literals=literals,
        given=given,
    )
