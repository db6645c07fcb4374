"""A pack's compiled conditions kept on disk beside its cache entry, so a start skips compiling them.

Every start of a launcher or a `check` needs the pack's conditions (`solver.pack.loader.semantics`):
~750 for the SGLang pack, each parsed with `ast`, checked against the pack and turned into two
functions (`solver.pack.codegen`), ~60 ms, then ~30 ms compiling the shapes a query calls. None
of that changes until the pack or confsolve does, so the conditions are kept in a side file of
the pack's cache entry (`solver.pack.cache`, suffix `.cond`: same key, same trust rules, same
eviction), written with `marshal`: for each condition its text, fields, literals and `given`
fields, and for each of its two functions the code (or, not compiled yet, the generated source)
and the constants. Sources are ours, never pack text (see `solver.pack.codegen`).

The file is written when a pack is loaded and checked (its functions not compiled yet); the
first start that reads it compiles every shape in it and writes it again with the code, so later
starts compile nothing. The cache key covers the interpreter's version (code objects are only
valid for the interpreter that made them) and confsolve's code. Anything unexpected in the file
is a miss. Imports the standard library and `solver.pack`.
"""

from __future__ import annotations

import marshal
from types import CodeType
from typing import Any

from solver.pack import cache, codegen
from solver.pack.crosscheck import PackSemantics
from solver.pack.expr import Condition

__all__ = ["keep", "recall"]

SUFFIX = ".cond"
COMPILE_ALL_MAX = 4096  # shapes (the SGLang pack has 471; ~90 us each to compile here)
_FORMAT = "confsolve-conditions-1"


def keep(digest: str, found: PackSemantics) -> None:
    """Write the conditions of the pack `digest` (checked, without problems) to the cache."""
    if digest.isalnum():
        cache.write_blob(digest, SUFFIX, lambda: _dump(digest, found))


def recall(digest: str) -> PackSemantics | None:
    """The conditions kept for the pack `digest`, or None."""
    if not digest.isalnum():
        return None
    raw = cache.read_blob(digest, SUFFIX)
    if raw is None:
        return None
    try:
        found, waiting = _load(digest, raw)
    except (ValueError, TypeError, EOFError, IndexError, KeyError, AttributeError):
        return None
    # The first reading compiles every shape now, for every later start; not a pack of so many
    # shapes that compiling them all would cost more than a start spends on the few it calls.
    if 0 < waiting <= COMPILE_ALL_MAX:
        for group in (found.rules, found.whens, found.preferences):
            for cond in group.values():
                if cond is not None:
                    codegen.compile_now(cond.holds)
                    codegen.compile_now(cond.partial)
        keep(digest, found)
    return found


def _dump(digest: str, found: PackSemantics) -> bytes:
    groups = tuple(
        tuple((key, None if cond is None else _record(cond)) for key, cond in group.items())
        for group in (found.rules, found.whens, found.preferences)
    )
    return marshal.dumps((_FORMAT, digest, groups))


def _record(cond: Condition) -> tuple[Any, ...]:
    return (
        cond.text,
        cond.fields,
        cond.literals,
        cond.given,
        *codegen.state(cond.holds),
        *codegen.state(cond.partial),
    )


def _load(digest: str, raw: bytes) -> tuple[PackSemantics, int]:
    doc = marshal.loads(raw)
    if not (isinstance(doc, tuple) and len(doc) == 3 and doc[0] == _FORMAT and doc[1] == digest):
        raise ValueError("not this pack's conditions")
    waiting: set[str] = set()  # the sources not compiled yet
    groups: list[dict[str, Any]] = []
    for group in doc[2]:
        made: dict[str, Any] = {}
        for key, record in group:
            if record is None:
                made[str(key)] = None
                continue
            text, fields, literals, given, holds, holds_consts, partial, partial_consts = record
            waiting.update(made for made in (holds, partial) if not isinstance(made, CodeType))
            made[str(key)] = Condition(
                text=_typed(text, str),
                fields=_strings(fields),
                holds=codegen.restore("holds", holds, _typed(holds_consts, tuple)),
                partial=codegen.restore("partial", partial, _typed(partial_consts, tuple)),
                literals=_typed(literals, tuple),
                given=_strings(given),
            )
        groups.append(made)
    rules, whens, preferences = groups
    return PackSemantics(rules=rules, whens=whens, preferences=preferences), len(waiting)


def _typed(value: Any, kind: type) -> Any:
    if not isinstance(value, kind):
        raise TypeError(f"expected {kind.__name__}")
    return value


def _strings(value: Any) -> tuple[str, ...]:
    if not isinstance(value, tuple) or not all(isinstance(v, str) for v in value):
        raise TypeError("expected names")
    return value
