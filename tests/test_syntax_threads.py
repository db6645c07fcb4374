"""Conditions parsed in several threads at once (the page server's request threads and its
warm-up do): CPython 3.11 converts a parsed text into `ast` objects with one recursion counter per
interpreter, and a thread switch inside a conversion made another thread's parse fail with
`SystemError: AST constructor recursion depth mismatch` (solver/pack/syntax.py). A collector
callback that gives up the interpreter lock forces the switches the race needs."""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Iterator

import pytest

from solver.model import Field
from solver.pack.expr import ExprError, parse

FIELDS = {name: Field(name=name, kind="option", domain=(0, 1, 2, 3)) for name in ("a", "b", "c")}
TEXT = "(" * 40 + "a == 1 and b in [1, 2, 3] or not (c < 2)" + ")" * 40


@pytest.fixture
def switching_collector() -> Iterator[None]:
    def give_way(phase: str, info: dict[str, int]) -> None:
        time.sleep(0)  # another thread runs here, in the middle of whatever allocated

    threshold = gc.get_threshold()
    gc.callbacks.append(give_way)
    gc.set_threshold(50)
    try:
        yield
    finally:
        gc.callbacks.remove(give_way)
        gc.set_threshold(*threshold)


def test_conditions_parse_in_many_threads_at_once(switching_collector: None) -> None:
    failures: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(400):
                parse(TEXT, FIELDS, {})
        except (SystemError, ExprError) as exc:
            failures.append(exc)

    threads = [threading.Thread(target=work) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures[:2]
