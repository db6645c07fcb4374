"""The minimal reason of every excluded value of a configurator state, computed apart from the
clicks: in a worker process when the pack can be loaded there (from its directory), so that this
CPU-heavy pass (two full `valid_choices` with reasons) never holds the server's interpreter lock
while a click is being answered.

A value the facts alone exclude gets its reason among the facts (scope `facts`); any other
excluded value its reason among all the inputs (scope `choices`).
"""

from __future__ import annotations

import threading
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from solver.model import Pack, Scalar

__all__ = ["ReasonWorker", "excluded_reasons"]

Values = tuple[tuple[str, Scalar], ...]


def _key(value: Scalar) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def excluded_reasons(pack: Pack, values: Values) -> dict[str, dict[str, Any]]:
    """Field -> excluded value -> {"scope", "pins", "rules"} for the state `values`."""
    from solver.inputs.pins import collect_pins
    from solver.reasoning.diagnose import valid_choices

    facts_only = tuple((n, v) for n, v in values if pack.fields[n].kind == "fact")
    scopes = [("choices", values), ("facts", facts_only)] if facts_only != values else [("facts", values)]
    found: dict[str, dict[str, Any]] = {name: {} for name in pack.fields}
    # Every field at once: one pass per scope shares its witnesses and propagation states
    # across fields, where a pass per field would repeat them.
    for scope, given in scopes:
        choices = valid_choices(pack, collect_pins(pack, dict(given)), fields=list(pack.fields), reasons=True)
        for name, excluded in choices.excluded.items():
            for value, items in excluded.items():
                # The facts' own reason wins for a value the facts alone exclude.
                found[name][_key(value)] = {
                    "scope": scope,
                    "pins": [
                        {
                            "field": i.name,
                            "value": None if i.value is None else _key(i.value),
                            "source": i.source,
                        }
                        for i in items
                        if i.kind == "pin"
                    ],
                    "rules": [_rule_ref(pack, i.name) for i in items if i.kind == "rule"],
                }
    return found


def _rule_ref(pack: Pack, rule_id: str) -> dict[str, str]:
    rule = pack.rule(rule_id)
    return {"id": rule.id, "because": rule.because, "source": rule.source}


_WORKER_PACKS: dict[str, Pack] = {}


def _in_worker(directory: str, values: Values) -> dict[str, dict[str, Any]]:
    """Runs in the worker process: the pack loaded once per directory, then the reasons."""
    pack = _WORKER_PACKS.get(directory)
    if pack is None:
        from solver import load_pack

        pack = _WORKER_PACKS[directory] = load_pack(directory)
    return excluded_reasons(pack, values)


def _lower_priority() -> None:
    """The worker's initializer: reasons are extra (the page draws a click's state without them),
    so the worker takes the CPU only when the server's own thread does not want it. Without it, a
    click that came before the last click's reasons were done shared the machine's cores with
    them (on 2 cores, the server's wall time per click was several times its CPU time)."""
    import contextlib
    import os

    with contextlib.suppress(AttributeError, OSError):  # no nice() here, or not allowed: run as is
        os.nice(10)


class ReasonWorker:
    """One worker process for the reasons of one pack (started on first use), or none: a pack
    without a directory (built in code) is answered in the calling thread, and so is every
    question after the worker has died."""

    def __init__(self, pack: Pack) -> None:
        self.pack = pack
        self._pool: ProcessPoolExecutor | None = None
        self._broken = pack.directory is None
        self._lock = threading.Lock()

    def reasons(self, values: Values) -> dict[str, dict[str, Any]]:
        future = self._submit(values)
        if future is not None:
            try:
                result: dict[str, dict[str, Any]] = future.result()
                return result
            except BrokenProcessPool:
                self._broken = True
        return excluded_reasons(self.pack, values)

    def _submit(self, values: Values) -> Future[dict[str, dict[str, Any]]] | None:
        with self._lock:
            if self._broken:
                return None
            if self._pool is None:
                import multiprocessing

                # spawn, not fork: the server has threads, and a forked copy of their locks is unsafe.
                self._pool = ProcessPoolExecutor(
                    max_workers=1,
                    mp_context=multiprocessing.get_context("spawn"),
                    initializer=_lower_priority,
                )
            try:
                return self._pool.submit(_in_worker, str(self.pack.directory), values)
            except (BrokenProcessPool, RuntimeError):
                self._broken = True
                return None

    def close(self) -> None:
        with self._lock:
            self._broken = True
            if self._pool is not None:
                self._pool.shutdown(wait=False, cancel_futures=True)
                self._pool = None
