"""Caches that stay bounded in a process that answers requests for ever (a launcher, `serve`).

Two shapes, both standard library only and safe to share between threads:

- `Lru`: a few large objects by key (a compiled pack, a plan, parsed conditions, by pack
  digest). A request with an unlisted value of an open field makes a widened pack with a digest
  of its own, so a table keyed by digest grows with every distinct request unless it forgets:
  this one keeps the `size` most recently used. Given a `family` of each key (a pack's copies
  for what requests type, and its widened copies, are the family of that pack), it keeps `size`
  of each of the `FAMILIES_KEPT` families used last: SGLang's pack and its seven typed copies
  filled a table of 8, so a process asking SGLang and vLLM in turn compiled ten packs again per
  SGLang question.
- `Memo`: the many small answer tables of one compiled pack (a rule's verdict per value tuple,
  the values a rule allows given the others, ...). They are looked up millions of times per
  command, so a hit must stay one dict lookup (an LRU's bookkeeping on every hit would cost
  resolve time); instead all the tables of a pack share one entry budget, and when a store goes
  past it the largest tables are emptied, largest first, until half the budget is free. Entries
  are pure functions of their keys, so an emptied table only costs recomputing the entries the
  next queries ask for again; the small tables most queries read stay filled (the vLLM pack's
  few rules over block size x KV dtype x -tp fill ~36k entries each per pass over its fixtures,
  and emptying every table for them made each pass start cold). The memos of one family of
  packs share one budget (`MemoPool`): kept together, a pack's copies must not each add one;
  and what the family's members compile alike they share (`MemoPool.share`: a copy's rules it
  did not rewrite are its pack's constraints, tables and all).
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = [
    "FAMILIES_KEPT",
    "FAMILY_FIELDS",
    "FAMILY_LEAST",
    "MEMO_ENTRIES",
    "PACKS_KEPT",
    "Lru",
    "Memo",
    "MemoPool",
    "digest_family",
    "family_kept",
    "family_pool",
    "weigh_family",
]

K = TypeVar("K")
V = TypeVar("V")

# Entries across every memo table of one compiled pack. Measured on the SGLang pack: a resolve
# stores a few hundred new entries, ~150 bytes each on average (a frozenset of values for the
# larger ones), so this bounds a pack's tables near 60 MB while the working set of a burst of
# similar requests (a page's clicks, a sweep) stays in.
MEMO_ENTRIES = 400_000
# Packs (and what is derived from each) kept by digest, per family (a pack and its copies): the
# shipped packs, a user's own, and the typed and widened copies the latest requests made. The
# 261 SGLang benchmark requests make 37 copies; with 8 kept a pass over them compiled 73 again,
# each a cold start (root, fact states, rankings), most of the first calls' time (round 29:
# 64 kept, none compiled again; ~0.3 MB a copy: a copy shares its pack's unrewritten rules).
PACKS_KEPT = 64
# Families of packs kept by a table given a `family` (each family up to its `size` members).
FAMILIES_KEPT = 4
# Fields across the packs a family keeps in a table made `sized` (a compiled pack, its plan, its
# semantics): a copy costs memory by its pack's size, and 64 copies of a large pack were gigabytes
# (round 30, widened copies of the synthetic packs, RSS after a collection: ~27 MB a copy at 1,000
# fields, ~118 MB at 5,000). SGLang (81 fields) and vLLM (39) keep PACKS_KEPT; 1,000 fields 8;
# 5,000 fields FAMILY_LEAST.
FAMILY_FIELDS = 8192
# The fewest packs a `sized` table keeps of a family, however large: the pack and one copy.
FAMILY_LEAST = 2
# The size of each family weighed (`weigh_family`), the latest kept.
_WEIGHED_KEPT = 256
_weights: OrderedDict[str, int] = OrderedDict()
_weights_lock = threading.Lock()


def weigh_family(digest: str, fields: int) -> None:
    """Say how many fields the packs of `digest`'s family have (a compiled pack does): a `sized`
    table keeps `FAMILY_FIELDS // fields` of them (at most its size, at least `FAMILY_LEAST`)."""
    kept = max(FAMILY_LEAST, FAMILY_FIELDS // max(fields, 1))
    family = digest_family(digest)
    with _weights_lock:
        _weights[family] = kept
        _weights.move_to_end(family)
        while len(_weights) > _WEIGHED_KEPT:
            _weights.popitem(last=False)


def family_kept(family: object, size: int) -> int:
    """How many packs of `family` a `sized` table of `size` keeps (`size` for a family not weighed)."""
    if not isinstance(family, str):
        return size
    with _weights_lock:
        return min(size, _weights.get(family, size))


def digest_family(digest: str) -> str:
    """The digest of the pack that a derived pack (a widened copy, a copy for what a request
    types) was made from, or `digest` itself: a derived pack's digest is its base's followed by
    `+KIND:...` (solver.engine.opendomain, solver.pack.given), and a base's has no `+`."""
    return digest.partition("+")[0]


class Lru(Generic[K, V]):
    """At most `size` values by key; the least recently used one is dropped first. With
    `family`, at most `size` values of each family and `FAMILIES_KEPT` families: a family not
    used for longest is dropped whole, and a full family drops its own least recently used.
    `sized` (with `family`, keyed by pack digest): at most `family_kept` of a family, fewer of a
    large pack's."""

    def __init__(
        self, size: int, family: Callable[[K], object] | None = None, *, sized: bool = False
    ) -> None:
        self.size = size
        self._family = family or (lambda key: None)
        self._families = FAMILIES_KEPT if family is not None else 1
        # (With `family`: fewer of a large pack's family, `family_kept`.)
        self._sized = sized and family is not None
        self._items: OrderedDict[object, OrderedDict[K, V]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        family = self._family(key)
        with self._lock:
            members = self._items.get(family)
            found = None if members is None else members.get(key)
            if found is not None:
                assert members is not None
                members.move_to_end(key)
                self._items.move_to_end(family)
            return found

    def put(self, key: K, value: V) -> None:
        family = self._family(key)
        with self._lock:
            members = self._items.setdefault(family, OrderedDict())
            members[key] = value
            members.move_to_end(key)
            self._items.move_to_end(family)
            limit = family_kept(family, self.size) if self._sized else self.size
            while len(members) > limit:
                members.popitem(last=False)
            while len(self._items) > self._families:
                self._items.popitem(last=False)

    def pop(self, key: K) -> None:
        family = self._family(key)
        with self._lock:
            members = self._items.get(family)
            if members is not None:
                members.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def __len__(self) -> int:
        with self._lock:
            return sum(len(members) for members in self._items.values())


class MemoPool:
    """One entry budget shared by the `Memo`s of one family of packs (held weakly: a memo
    dropped with its compiled pack leaves the pool with its tables)."""

    def __init__(self, entries: int | None = None) -> None:
        self.entries = MEMO_ENTRIES if entries is None else entries
        self.stored = 0  # entries stored since the tables were last emptied (approximate under threads)
        self.flushes = 0
        self.memos: weakref.WeakSet[Memo] = weakref.WeakSet()
        # What the family's owners share (a pack's copies compile most rules alike: the same
        # constraint, with its tables, serves each), kept while one of them holds it.
        self.shared: weakref.WeakValueDictionary[object, object] = weakref.WeakValueDictionary()
        self.lock = threading.Lock()

    def share(self, key: object, make: Callable[[], V]) -> V:
        """What the family's owners keep under `key`, made by `make` when none holds it: a pack's
        copies share what they compile alike (solver.engine.csp: a copy's rules it did not
        rewrite are its pack's constraints, tables and all). Kept while an owner holds it (a
        weak table); a key naming an object by `id` is valid while the value holds that object."""
        with self.lock:
            found = self.shared.get(key)
        if found is None:
            found = make()
            with self.lock:
                self.shared[key] = found
        return found  # type: ignore[return-value]

    def tables(self) -> list[dict[object, object]]:
        return [made for memo in list(self.memos) for made in memo.tables]

    def flush(self) -> None:
        """Empty the largest tables until at most half the budget is held (all of them when one
        table alone holds more): the entries left count towards the budget as stored."""
        with self.lock:
            tables = self.tables()
            held = sum(len(made) for made in tables)
            for made in sorted(tables, key=len, reverse=True):
                if held <= self.entries // 2:
                    break
                held -= len(made)
                made.clear()
            self.stored = held
            self.flushes += 1


class Memo:
    """The memo tables of one owner (a compiled pack), under an entry budget: its own, or its
    family's `pool`."""

    def __init__(self, entries: int | None = None, pool: MemoPool | None = None) -> None:
        self.pool = MemoPool(entries) if pool is None else pool
        self.tables: list[dict[object, object]] = []
        with self.pool.lock:
            self.pool.memos.add(self)

    @property
    def flushes(self) -> int:
        return self.pool.flushes

    def table(self) -> dict[K, V]:
        """A new empty table under this budget (the caller looks up and stores with `store`)."""
        made: dict[K, V] = {}
        with self.pool.lock:
            self.tables.append(made)  # type: ignore[arg-type]
        return made

    def store(self, table: dict[K, V], key: K, value: V) -> None:
        """`table[key] = value`, emptying the largest tables first when the budget is spent."""
        pool = self.pool
        if pool.stored >= pool.entries:
            pool.flush()
        pool.stored += 1
        table[key] = value

    def size(self) -> int:
        """Entries held now, over every table of the pool."""
        with self.pool.lock:
            return sum(len(made) for made in self.pool.tables())


# The memo budget of each family of packs with a compiled pack alive (gone with the last of them).
_POOLS: weakref.WeakValueDictionary[str, MemoPool] = weakref.WeakValueDictionary()
_POOLS_LOCK = threading.Lock()


def family_pool(digest: str) -> MemoPool | None:
    """The budget the memos of the family of the pack with this digest share (None, a budget
    of its own, for a pack without a digest)."""
    if not digest:
        return None
    family = digest_family(digest)
    with _POOLS_LOCK:
        pool = _POOLS.get(family)
        if pool is None:
            pool = _POOLS[family] = MemoPool()
    return pool
