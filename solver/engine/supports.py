"""Supports: the solutions a compiled pack has already met, indexed so a valid-value question is a
few bit operations, and the values already proven impossible under some pins.

A value `v` of field `f` is possible under pins `P` exactly when some complete solution has
`f = v` and keeps `P`. Every solution any question finds (a resolution, a witness for a choice,
a repair) is such a proof for every one of its values at once, and it stays one for every later
question whose pins it keeps. So each compiled pack keeps the solutions it has met as a matrix of
bits: for each field value, the set of known solutions that hold it (a Python int used as a bit
set). The values a request leaves possible are then the field values whose bit set meets the AND
of its pins' bit sets; only the values no known solution proves need a search, and each search
adds one more solution for every later question. A page that adds one pin at a time asks mostly
what the solutions met on the earlier clicks answer already.

The other half is a memo of refutations: "no solution has `f = v` under pins `P`" holds under
every superset of `P` too, so a value refuted under the inputs of an earlier click is not
searched again after one more pin. Both halves only ever hold exact facts (solutions checked by
the engine's search, refutations proven by it), so reusing them changes no answer.

Thread-safe: one lock guards the tables; readers copy what they need. Bounded: past
`MAX_SOLUTIONS` stored solutions (fewer for packs of many fields: `MAX_CELLS`), or `MAX_REFUTED`
pin sets, a table starts again empty.
Imports only the standard library and `solver.engine.csp`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any

from solver.engine.csp import CompiledPack
from solver.model import Scalar

__all__ = ["MAX_CELLS", "MAX_REFUTED", "MAX_SOLUTIONS", "Keeping", "Supports", "supports_for"]

MAX_SOLUTIONS = 4096
MAX_CELLS = 2_000_000  # solutions x fields kept at most (a 5,000-field pack keeps 400 solutions)
MAX_REFUTED = 512

Keeping = tuple[int, int]
"""A set of stored solutions: (the table's generation, a bit set of rows)."""

_MEMO_KEY = "supports"
_CREATE = threading.Lock()


def supports_for(cp: CompiledPack) -> Supports:
    """The supports of a compiled pack, created on first use and kept with it."""
    found: Supports | None = cp.memo.get(_MEMO_KEY)
    if found is None:
        with _CREATE:
            found = cp.memo.get(_MEMO_KEY)
            if found is None:
                found = cp.memo[_MEMO_KEY] = Supports(cp)
    return found


class Supports:
    """Known solutions of one compiled pack as bit sets per field value, and known refutations.

    Refutations come back as (field, `tag(value)`) pairs: `tag` keeps `True` apart from `1`.
    """

    def __init__(self, cp: CompiledPack) -> None:
        self.names: tuple[str, ...] = tuple(cp.domains)
        self._lock = threading.Lock()
        self._bits: dict[tuple[str, Any], int] = {}
        self._seen: set[tuple[tuple[Scalar, ...], tuple[str, ...]]] = set()
        self._rows: list[tuple[Scalar, ...]] = []
        self._generation = 0  # bumped when the table starts again: older bit sets mean nothing
        self._limit = max(64, min(MAX_SOLUTIONS, MAX_CELLS // max(1, len(self.names))))
        self._last: dict[str, Scalar] | None = None
        self._refuted: dict[frozenset[tuple[str, Any]], set[tuple[str, Any]]] = {}

    @staticmethod
    def tag(value: Scalar) -> Any:
        """A value as a key that keeps `True` apart from `1` (equal and equally hashed in Python)."""
        return _tagged(value)

    # -- solutions -------------------------------------------------------------------------
    @property
    def size(self) -> int:
        """How many distinct solutions are stored."""
        return len(self._rows)

    @property
    def last(self) -> dict[str, Scalar] | None:
        """The solution added last (a starting point for the next search), or None."""
        return self._last

    def add(self, solution: Mapping[str, Scalar]) -> bool:
        """Store a complete solution of every hard rule (the caller vouches for it: it comes from
        the engine's search or a resolution). False when it was known already or incomplete."""
        names = self.names
        if len(solution) < len(names):
            return False
        try:
            values = tuple([solution[n] for n in names])
        except KeyError:
            return False
        # The row as a key that keeps `True` apart from `1`: its values and their types. (Built
        # with C-level loops: a witness is stored per value proven on a pack of thousands of
        # fields, and a Python call per field made this 14 % of listing choices at 2,500.)
        types = tuple([type(v).__name__ for v in values])
        row = (values, types)
        with self._lock:
            if row in self._seen:
                self._last = dict(solution)
                return False
            if len(self._rows) >= self._limit:
                self._bits.clear()
                self._seen.clear()
                self._rows.clear()
                self._generation += 1
            bit = 1 << len(self._rows)
            self._seen.add(row)
            self._rows.append(values)
            bits = self._bits
            get = bits.get
            for key in zip(names, zip(types, values, strict=True), strict=True):
                bits[key] = get(key, 0) | bit
            self._last = dict(solution)
        return True

    def rows_after(self, mark: Keeping) -> tuple[Keeping, list[dict[str, Scalar]]]:
        """The solutions stored since `mark` (what an earlier call returned; `(-1, 0)` for all),
        and the mark to pass next time: a copy of the pack built from this one takes them over
        (`solver.reasoning.givenchoices`)."""
        with self._lock:
            start = mark[1] if mark[0] == self._generation else 0
            rows = [dict(zip(self.names, row, strict=True)) for row in self._rows[start:]]
            return (self._generation, len(self._rows)), rows

    def keeping(self, pins: Mapping[str, Scalar]) -> Keeping:
        """The stored solutions that keep every pin: a bit set, with the table's generation."""
        with self._lock:
            found = (1 << len(self._rows)) - 1
            for name, value in pins.items():
                found &= self._bits.get((name, _tagged(value)), 0)
                if not found:
                    break
            return (self._generation, found)

    def example(self, keeping: Keeping) -> dict[str, Scalar] | None:
        """One solution of `keeping` (the one stored first), or None."""
        generation, found = keeping
        with self._lock:
            if not found or generation != self._generation:
                return None  # none, or the table started again since `keeping` was taken
            at = (found & -found).bit_length() - 1
            return dict(zip(self.names, self._rows[at], strict=True))

    def closest(self, name: str, value: Scalar, pins: Mapping[str, Scalar]) -> dict[str, Scalar] | None:
        """A stored solution with `name = value` that keeps as many of `pins` as it can (taken
        greedily in their order), or None: the best start for a search for that value."""
        with self._lock:
            found = self._bits.get((name, _tagged(value)), 0)
            if not found:
                return None
            for pin, pinned in pins.items():
                narrowed = found & self._bits.get((pin, _tagged(pinned)), 0)
                if narrowed:
                    found = narrowed
            at = (found & -found).bit_length() - 1
            return dict(zip(self.names, self._rows[at], strict=True))

    def proven(self, name: str, values: Iterable[Scalar], keeping: Keeping) -> list[Scalar]:
        """The `values` of `name` some solution of `keeping` holds."""
        generation, found = keeping
        with self._lock:
            if not found or generation != self._generation:
                return []
            bits = self._bits
            return [v for v in values if bits.get((name, _tagged(v)), 0) & found]

    # -- refutations -----------------------------------------------------------------------
    def refuted(self, pins: Mapping[str, Scalar]) -> set[tuple[str, Any]]:
        """The (field, tagged value) pairs proven impossible under pins that `pins` include."""
        given = {(n, _tagged(v)) for n, v in pins.items()}
        out: set[tuple[str, Any]] = set()
        with self._lock:
            for under, pairs in self._refuted.items():
                if under <= given:
                    out |= pairs
        return out

    def refute(self, pins: Mapping[str, Scalar], name: str, value: Scalar) -> None:
        """Record that no solution keeps `pins` and has `name = value` (proven by the caller)."""
        under = frozenset((n, _tagged(v)) for n, v in pins.items())
        with self._lock:
            if under not in self._refuted and len(self._refuted) >= MAX_REFUTED:
                self._refuted.clear()
            self._refuted.setdefault(under, set()).add((name, _tagged(value)))


def _tagged(value: Scalar) -> Any:
    """A value as a key that keeps `True` apart from `1` (equal and equally hashed in Python)."""
    return (type(value).__name__, value)
