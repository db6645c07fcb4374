"""Caches that stay bounded in a process that answers requests for ever (a launcher, `serve`).

Two shapes, both standard library only and safe to share between threads:

- `Lru`: a few large objects by key (a compiled pack, a plan, parsed conditions, by pack
  digest). A request with an unlisted value of an open field makes a widened pack with a digest
  of its own, so a table keyed by digest grows with every distinct request unless it forgets:
  this one keeps the `size` most recently used.
- `Memo`: the many small answer tables of one compiled pack (a rule's verdict per value tuple,
  the values a rule allows given the others, ...). They are looked up millions of times per
  command, so a hit must stay one dict lookup (an LRU's bookkeeping on every hit would cost
  resolve time); instead all the tables of a pack share one entry budget, and when a store goes
  past it the largest tables are emptied, largest first, until half the budget is free. Entries
  are pure functions of their keys, so an emptied table only costs recomputing the entries the
  next queries ask for again; the small tables most queries read stay filled (the vLLM pack's
  few rules over block size x KV dtype x -tp fill ~36k entries each per pass over its fixtures,
  and emptying every table for them made each pass start cold).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Generic, TypeVar

__all__ = ["MEMO_ENTRIES", "PACKS_KEPT", "Lru", "Memo"]

K = TypeVar("K")
V = TypeVar("V")

# Entries across every memo table of one compiled pack. Measured on the SGLang pack: a resolve
# stores a few hundred new entries, ~150 bytes each on average (a frozenset of values for the
# larger ones), so this bounds a pack's tables near 60 MB while the working set of a burst of
# similar requests (a page's clicks, a sweep) stays in.
MEMO_ENTRIES = 400_000
# Packs (and what is derived from each) kept by digest: the shipped packs, a user's own, and the
# widened copies the latest requests made.
PACKS_KEPT = 8


class Lru(Generic[K, V]):
    """At most `size` values by key; the least recently used one is dropped first."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
            return found

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def pop(self, key: K) -> None:
        with self._lock:
            self._items.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def __len__(self) -> int:
        return len(self._items)


class Memo:
    """The memo tables of one owner (a compiled pack), under one shared entry budget."""

    def __init__(self, entries: int | None = None) -> None:
        self.entries = MEMO_ENTRIES if entries is None else entries
        self.stored = 0  # entries stored since the tables were last emptied (approximate under threads)
        self.flushes = 0
        self._tables: list[dict[object, object]] = []
        self._lock = threading.Lock()

    def table(self) -> dict[K, V]:
        """A new empty table under this budget (the caller looks up and stores with `store`)."""
        made: dict[K, V] = {}
        with self._lock:
            self._tables.append(made)  # type: ignore[arg-type]
        return made

    def store(self, table: dict[K, V], key: K, value: V) -> None:
        """`table[key] = value`, emptying the largest tables first when the budget is spent."""
        if self.stored >= self.entries:
            self.flush()
        self.stored += 1
        table[key] = value

    def flush(self) -> None:
        """Empty the largest tables until at most half the budget is held (all of them when one
        table alone holds more): the entries left count towards the budget as stored."""
        with self._lock:
            held = sum(len(made) for made in self._tables)
            for made in sorted(self._tables, key=len, reverse=True):
                if held <= self.entries // 2:
                    break
                held -= len(made)
                made.clear()
            self.stored = held
            self.flushes += 1

    def size(self) -> int:
        """Entries held now, over every table."""
        with self._lock:
            return sum(len(made) for made in self._tables)
