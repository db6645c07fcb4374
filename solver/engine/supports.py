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

import itertools
import operator
import threading
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

from solver.engine.csp import CompiledPack
from solver.engine.localsearch import Mended
from solver.model import Scalar

__all__ = ["MAX_CELLS", "MAX_REFUTED", "MAX_SOLUTIONS", "Keeping", "PinSet", "Supports", "supports_for"]

MAX_SOLUTIONS = 4096
MAX_CELLS = 2_000_000  # solutions x fields kept at most (a 5,000-field pack keeps 400 solutions)
MAX_REFUTED = 512

Keeping = tuple[int, int]
"""A set of stored solutions: (the table's generation, a bit set of rows)."""
PinSet = frozenset[tuple[str, Any]]
"""Pins as refutations are kept under them (`Supports.pin_set`)."""
Row = tuple[tuple[Scalar, ...], ...]
"""A stored solution: its values in the table's column order, as consecutive chunks of
`_CHUNK` columns. A row made from the one before shares every chunk where no value changed, so
storing it copies the chunks it changed and a tuple of ~80 chunks at 5,000 fields, not a tuple
of 5,000 values (a list and a tuple of them per row, ~2,000 rows per choices call), and the
garbage collector, which walks each new row once, walks ~80 entries and the new chunks."""

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

    The bit sets are kept per field as runs: a field's value holds from the row that set it to
    the row before the next that changed it, and the run still open (up to the newest row) is
    not written out. Most solutions stored one after another differ in a few fields (each is a
    value mended into the one before), so storing one costs the fields it changed, not one
    Python operation per field of the pack: on a pack of thousands of fields, whose choices
    store a solution per value proven, that was the square of its size.
    """

    def __init__(self, cp: CompiledPack) -> None:
        self.names: tuple[str, ...] = tuple(cp.domains)
        self._column = {name: i for i, name in enumerate(self.names)}
        self._row_of = operator.itemgetter(*self.names) if len(self.names) > 1 else None
        self._lock = threading.Lock()
        self._seen: dict[int, list[int]] = {}  # rows by the sum of their columns' hashes
        self._digest = 0  # (that of the newest row)
        self._rows: list[Row] = []
        # Per column: the bit sets of the runs that have ended, by tagged value; and the run
        # still open, (tagged value, its first row).
        self._ended: list[dict[Any, int]] = [{} for _ in self.names]
        self._open: list[tuple[Any, int]] = []
        self._generation = 0  # bumped when the table starts again: older bit sets mean nothing
        self._limit = max(64, min(MAX_SOLUTIONS, MAX_CELLS // max(1, len(self.names))))
        self._last: Row | None = None  # (a dict only when asked: `last`)
        self._source: Mapping[str, Scalar] | None = None  # the mapping the newest row was made of
        self._example: tuple[int, int, Mapping[str, Scalar]] | None = None  # (`example`'s last)
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
    def generation(self) -> int:
        """Bumped each time the table starts again (a `Keeping` of an older one means nothing)."""
        return self._generation

    @property
    def last(self) -> dict[str, Scalar] | None:
        """The solution added last (a starting point for the next search), or None."""
        last = self._last
        return None if last is None else self._solution(last)

    def add(self, solution: Mapping[str, Scalar]) -> bool:
        """Store a complete solution of every hard rule (the caller vouches for it: it comes from
        the engine's search or a resolution, and is not changed after). False when it was known
        already or incomplete."""
        return self.added(solution) is not None

    def added(self, solution: Mapping[str, Scalar]) -> Keeping | None:
        """`add`, returning the new row as a set of stored solutions (to add to a `keeping` of
        pins the caller knows it keeps), or None when it was known already or incomplete."""
        if len(solution) < len(self.names):
            return None
        with self._lock:
            rows, width = self._rows, _CHUNK  # (each row's columns in chunks: see `Row`)
            restart = len(rows) >= self._limit
            previous = None if restart or not rows else rows[-1]
            # The columns whose value is not the very object of the row before: those a
            # `Mended` made from the newest row names, else a C-level pass. Only they are looked
            # at below (an equal value in another object ends its run and starts one with the
            # same value, which changes no bit set): a row of a pack of thousands of fields
            # taken whole and compared with the one before was most of storing it.
            columns: list[int] | None = None
            values: tuple[Scalar, ...] | None = None  # (the whole row, when it was made whole)
            if isinstance(solution, Mended):
                if previous is not None and solution.near is self._source:
                    column = self._column
                    columns = sorted(
                        {
                            c
                            for c in map(column.__getitem__, solution.changed)
                            if solution[self.names[c]] is not previous[c // width][c % width]
                        }
                    )
                solution.near = None  # (read once: see `Mended`)
            if columns is None:
                try:
                    values = self._values(solution)
                except KeyError:
                    return None
                if previous is not None:
                    columns = list(
                        itertools.compress(
                            itertools.count(),
                            map(operator.is_not, values, itertools.chain.from_iterable(previous)),
                        )
                    )
            row = _chunks(width, values, previous, columns, solution, self.names)
            # Known already: a stored row with equal values and the same types (`True` is not
            # `1`). Rows are found by a hash kept up to date with the columns that changed (the
            # hash of a tuple of every field, twice per row, was a pass over the pack each).
            if columns is None or previous is None:
                digest = sum(
                    map(hash, enumerate(values if values is not None else itertools.chain.from_iterable(row)))
                )
            else:
                digest = self._digest + sum(
                    [
                        hash((c, row[c // width][c % width])) - hash((c, previous[c // width][c % width]))
                        for c in columns
                    ]
                )
            same = self._seen.get(digest)
            if same is not None:
                types = _types(row)
                if any(rows[i] == row and _types(rows[i]) == types for i in same):
                    self._last = row
                    return None
            if restart:
                self._seen.clear()
                rows.clear()
                self._generation += 1
            at = len(rows)
            if columns is None or not at:
                self._ended = [{} for _ in self.names]
                self._open = [(_tagged(v), 0) for v in itertools.chain.from_iterable(row)]
            else:
                ended, opened = self._ended, self._open
                for col in columns:
                    new = _tagged(row[col // width][col % width])
                    old, first = opened[col]
                    if new != old:
                        table = ended[col]
                        table[old] = table.get(old, 0) | ((1 << at) - (1 << first))
                        opened[col] = (new, at)
            self._seen.setdefault(digest, []).append(at)
            rows.append(row)
            self._digest = digest
            self._last = row
            self._source = solution
            return (self._generation, 1 << at)

    def _solution(self, row: Row) -> dict[str, Scalar]:
        """A stored row as a mapping of every field."""
        return dict(zip(self.names, itertools.chain.from_iterable(row), strict=True))

    def _values(self, solution: Mapping[str, Scalar]) -> tuple[Scalar, ...]:
        if isinstance(solution, dict) and tuple(solution) == self.names:
            return tuple(solution.values())  # (in the pack's order already: no lookup per field)
        if self._row_of is None:
            return tuple([solution[n] for n in self.names])
        return self._row_of(solution)  # type: ignore[no-any-return]

    def _bits(self, name: str, tagged: Any) -> int:
        """The stored solutions holding `name = value` (`tagged`), as a bit set (under the lock)."""
        col = self._column.get(name)
        if col is None or not self._rows:
            return 0
        found = self._ended[col].get(tagged, 0)
        value, first = self._open[col]
        if value == tagged:
            found |= (1 << len(self._rows)) - (1 << first)
        return found

    @staticmethod
    def joined(keeping: Keeping, row: Keeping | None) -> Keeping | None:
        """`keeping` with `row` (from `added`) put in; None when the table started again between
        them (ask `keeping` again)."""
        if row is None:
            return keeping
        return (keeping[0], keeping[1] | row[1]) if row[0] == keeping[0] else None

    def rows_after(self, mark: Keeping) -> tuple[Keeping, list[dict[str, Scalar]]]:
        """The solutions stored since `mark` (what an earlier call returned; `(-1, 0)` for all),
        and the mark to pass next time: a copy of the pack built from this one takes them over
        (`solver.reasoning.givenchoices`)."""
        with self._lock:
            start = mark[1] if mark[0] == self._generation else 0
            rows = [self._solution(row) for row in self._rows[start:]]
            return (self._generation, len(self._rows)), rows

    def keeping(self, pins: Mapping[str, Scalar] | PinSet) -> Keeping:
        """The stored solutions that keep every pin (or every pair of a `pin_set`, whose values
        are tagged already: choices asks under all the pins but one option's, per pinned option,
        and a tag per pin each time was a pass over ~475 pins in Python at 5,000 synthetic
        fields): a bit set, with the table's generation."""
        pairs = pins if isinstance(pins, frozenset) else ((n, _tagged(v)) for n, v in pins.items())
        with self._lock:
            found = (1 << len(self._rows)) - 1
            for name, tagged in pairs:
                found &= self._bits(name, tagged)
                if not found:
                    break
            return (self._generation, found)

    def example(self, keeping: Keeping) -> Mapping[str, Scalar] | None:
        """One solution of `keeping` (the one stored first), or None. Read-only: the same
        mapping is handed out again while that row stays the first (choices asks once per field
        with a value to prove, and a dict of every field each time was a pass over the pack)."""
        generation, found = keeping
        with self._lock:
            if not found or generation != self._generation:
                return None  # none, or the table started again since `keeping` was taken
            at = (found & -found).bit_length() - 1
            made = self._example
            if made is None or made[0] != generation or made[1] != at:
                made = self._example = (
                    generation,
                    at,
                    MappingProxyType(self._solution(self._rows[at])),
                )
            return made[2]

    def closest(self, name: str, value: Scalar, pins: Mapping[str, Scalar]) -> dict[str, Scalar] | None:
        """A stored solution with `name = value` that keeps as many of `pins` as it can (taken
        greedily in their order), or None: the best start for a search for that value."""
        with self._lock:
            found = self._bits(name, _tagged(value))
            if not found:
                return None
            for pin, pinned in pins.items():
                narrowed = found & self._bits(pin, _tagged(pinned))
                if narrowed:
                    found = narrowed
            at = (found & -found).bit_length() - 1
            return self._solution(self._rows[at])

    def latest(
        self, name: str, value: Scalar, pins: Mapping[str, Scalar], count: int
    ) -> list[dict[str, Scalar]]:
        """Up to `count` stored solutions with `name = value`, narrowed by `pins` as `closest`
        does, the newest first (the ones met on the latest questions, mostly the nearest to
        the next one)."""
        with self._lock:
            found = self._bits(name, _tagged(value))
            for pin, pinned in pins.items():
                if not found:
                    break
                narrowed = found & self._bits(pin, _tagged(pinned))
                if narrowed:
                    found = narrowed
            out: list[dict[str, Scalar]] = []
            while found and len(out) < count:
                at = found.bit_length() - 1
                out.append(self._solution(self._rows[at]))
                found ^= 1 << at
            return out

    def proven(self, name: str, values: Iterable[Scalar], keeping: Keeping) -> list[Scalar]:
        """The `values` of `name` some solution of `keeping` holds."""
        generation, found = keeping
        with self._lock:
            col = self._column.get(name)
            if not found or generation != self._generation or col is None:
                return []
            # (`_bits` per value, its column's tables looked up once: asked per field, ~8,000
            # times per choices call at 5,000 synthetic fields.)
            ended, (current, first) = self._ended[col], self._open[col]
            found_current = found & ((1 << len(self._rows)) - (1 << first))
            return [
                v
                for v in values
                if ended.get(tagged := _tagged(v), 0) & found or (found_current and current == tagged)
            ]

    # -- refutations -----------------------------------------------------------------------
    def refuted(self, pins: Mapping[str, Scalar] | PinSet) -> set[tuple[str, Any]]:
        """The (field, tagged value) pairs proven impossible under pins that `pins` (or a
        `pin_set`) include."""
        given = pins if isinstance(pins, frozenset) else {(n, _tagged(v)) for n, v in pins.items()}
        out: set[tuple[str, Any]] = set()
        with self._lock:
            for under, pairs in self._refuted.items():
                if under <= given:
                    out |= pairs
        return out

    @staticmethod
    def pin_set(pins: Mapping[str, Scalar]) -> PinSet:
        """`pins` as `refute` keys them: made once by a caller that refutes many values under the
        same pins (choices at 5,000 synthetic fields: ~3,000 values under ~460 pins)."""
        return frozenset((n, _tagged(v)) for n, v in pins.items())

    def refute(self, pins: Mapping[str, Scalar] | PinSet, name: str, value: Scalar) -> None:
        """Record that no solution keeps `pins` (or their `pin_set`) and has `name = value`
        (proven by the caller)."""
        under = pins if isinstance(pins, frozenset) else self.pin_set(pins)
        with self._lock:
            if under not in self._refuted and len(self._refuted) >= MAX_REFUTED:
                self._refuted.clear()
            self._refuted.setdefault(under, set()).add((name, _tagged(value)))


# Columns per chunk of a stored row (`Row`).
_CHUNK = 64


def _chunks(
    width: int,
    values: tuple[Scalar, ...] | None,
    previous: Row | None,
    columns: list[int] | None,
    solution: Mapping[str, Scalar],
    names: tuple[str, ...],
) -> Row:
    """A row as its chunks of `width` columns: `values` (the whole row) cut, or, given the row
    before and `columns` (those whose value is another object than `previous`'s, ascending),
    `previous`'s chunks with those columns' values put in, from `values` or else from
    `solution` (a `Mended` of the newest row: only its changed columns are read)."""
    if previous is None or columns is None:
        assert values is not None  # (made whole when there is no row before to start from)
        return tuple([values[i : i + width] for i in range(0, len(values), width)])
    chunks = list(previous)
    for at, changed in itertools.groupby(columns, key=lambda c: c // width):
        start = at * width
        if values is not None:
            chunks[at] = values[start : start + width]
            continue
        part = list(chunks[at])
        for c in changed:
            part[c - start] = solution[names[c]]
        chunks[at] = tuple(part)
    return tuple(chunks)


def _types(row: Row) -> tuple[type, ...]:
    return tuple(map(type, itertools.chain.from_iterable(row)))


def _tagged(value: Scalar) -> Any:
    """A value as a key that keeps `True` apart from `1` (equal and equally hashed in Python).

    One tuple per distinct value, kept by type (bounded): choices asks ~280,000 times per call
    at 5,000 synthetic fields (each pin per pinned option asked about, each value proven), and
    a new tuple each time was the most common object the garbage collector went over there."""
    kind = type(value)
    table = _TAGS.get(kind)
    if table is None:
        table = _TAGS.setdefault(kind, {})
    found = table.get(value)
    if found is None:
        if len(table) >= _TAGS_KEPT:
            table.clear()
        found = table[value] = (kind.__name__, value)
    return found


# The tagged values met, by type (in one table, `True` and `1` would be one key).
_TAGS: dict[type, dict[Any, tuple[str, Any]]] = {}
_TAGS_KEPT = 1 << 16
