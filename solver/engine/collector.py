"""Fewer young garbage collections while a long question runs, scoped and put back after it.

A `valid_choices` with reasons at 5,000 synthetic fields makes and drops big tables all along
(a copy of a propagated state is four dicts of up to 12,000 entries, a stored solution a tuple of
5,000 values), and Python's collector, run every 700 new container objects, walked each one that
happened to be alive when it ran: ~24 million entries per call in ~600 young collections, and
their promotions set off a full collection of the whole heap (the compiled pack's ~600,000
objects). Nearly nothing there is garbage in a cycle (~600 objects per call): the collector is
overhead. So for the length of such a call the first generation's threshold is raised, which
leaves most of those tables dead before a collection sees them.

The middle threshold is raised with it. Every tenth young collection also collects the middle
generation, and every tenth of those may collect the whole heap (Python collects it when the
objects moved to the old generation since the last full collection reach a quarter of it). A
choices call at 5,000 fields had ~47 young collections, so ~5 middle ones, each promoting to the
old generation what the call happened to hold then; whether one of them also set off a full
collection (~0.8 s there, over ~650,000-840,000 objects) depended on the counts the process
brought into the call, so the same call took ~1 s more in one run than in the next
(benchmarks/README.md, round synth29). With the middle threshold at `_MIDDLE` a call collects only
young objects; what it still holds at its end is collected by the first young collection after
it (the host's thresholds are back by then), and the tables it made and dropped meanwhile never
reach the old generation, so they no longer bring the next full collection nearer.

Process-wide state is changed only as far as this promises:

- scoped: `fewer_collections()` raises the thresholds when the first caller enters and puts the
  host's values back when the last one leaves (nested and concurrent calls count, under a lock);
- never lowered, never switched on: a host whose first threshold is already as high, or 0
  (collection off), is left alone, and so is a middle threshold already as high; the third
  threshold is not touched, nor `gc.enable` / `gc.freeze`;
- never clobbered: if the host changes the thresholds while a call runs, the host's change is
  kept (the values are put back only if they are still the ones set here).

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
# The middle threshold meanwhile: young collections per collection of the middle generation. Far
# above a long question's young collections (~50 for choices at 5,000 fields, ~12 for explain).
_MIDDLE = 1_000

_LOCK = threading.Lock()
_callers = 0
_saved: tuple[int, int, int] | None = None  # the host's thresholds, while raised here


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Run the block with young collections every `_YOUNG` new objects and no older ones (see the
    module)."""
    global _callers, _saved
    with _LOCK:
        if _callers == 0:
            host = gc.get_threshold()
            if 0 < host[0] < _YOUNG:
                _saved = host
                gc.set_threshold(*_raised(host))
        _callers += 1
    try:
        yield
    finally:
        with _LOCK:
            _callers -= 1
            if _callers == 0 and _saved is not None:
                if gc.get_threshold() == _raised(_saved):
                    gc.set_threshold(*_saved)
                _saved = None


def _raised(host: tuple[int, int, int]) -> tuple[int, int, int]:
    """The thresholds a long question runs with, given the host's (see the module)."""
    return (_YOUNG, max(host[1], _MIDDLE), host[2])
