"""Fewer young garbage collections while a long question runs, scoped and put back after it.

A `valid_choices` with reasons at 5,000 synthetic fields makes and drops big tables all along
(a copy of a propagated state is four dicts of up to 12,000 entries, a stored solution a tuple of
5,000 values), and Python's collector, run every 700 new container objects, walked each one that
happened to be alive when it ran: ~24 million entries per call in ~600 young collections, and
their promotions set off a full collection of the whole heap (the compiled pack's ~600,000
objects). Nearly nothing there is garbage in a cycle (~600 objects per call): the collector is
overhead. So for the length of such a call the first generation's threshold is raised, which
leaves most of those tables dead before a collection sees them.

Process-wide state is changed only as far as this promises:

- scoped: `fewer_collections()` raises the threshold when the first caller enters and puts the
  host's value back when the last one leaves (nested and concurrent calls count, under a lock);
- never lowered, never switched on: a host whose threshold is already as high, or 0 (collection
  off), is left alone; the other two thresholds are not touched, nor `gc.enable` / `gc.freeze`;
- never clobbered: if the host changes the thresholds while a call runs, the host's change is
  kept (the value is put back only if it is still the one set here).

Cycles made meanwhile are still collected, later (every `_YOUNG` new objects instead of 700).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["fewer_collections"]

# The first generation's threshold while a long question runs. 20,000 new objects: at 5,000
# synthetic fields a choices call then has ~12 young collections instead of ~550 and no full one
# (1,000 / 5,000 / 20,000 / 100,000 measured; past 20,000 no further gain).
_YOUNG = 20_000

_LOCK = threading.Lock()
_callers = 0
_saved: tuple[int, int, int] | None = None  # the host's thresholds, while raised here


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Run the block with young collections every `_YOUNG` new objects (see the module)."""
    global _callers, _saved
    with _LOCK:
        if _callers == 0:
            host = gc.get_threshold()
            if 0 < host[0] < _YOUNG:
                _saved = host
                gc.set_threshold(_YOUNG, host[1], host[2])
        _callers += 1
    try:
        yield
    finally:
        with _LOCK:
            _callers -= 1
            if _callers == 0 and _saved is not None:
                if gc.get_threshold() == (_YOUNG, _saved[1], _saved[2]):
                    gc.set_threshold(*_saved)
                _saved = None
