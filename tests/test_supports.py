"""The supports table (`solver.engine.supports`) against a plain list of the rows it was given.

Its bit sets are stored as runs per field (a row costs the fields it changed); whatever order
rows come in, with repeats, equal values in other objects, `True` next to `1`, and restarts at
the row limit, every question must answer what a scan of the stored rows answers.
"""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any

import pytest

from solver.engine import supports as supports_module
from solver.engine.localsearch import Mended
from solver.engine.supports import Supports

DOMAINS: dict[str, list[Any]] = {
    "a": [True, False, 1, 0],  # True and 1 are equal in Python and must stay apart here
    "b": ["x", "y", "z"],
    "c": [1, 2, 3, 1000],
    "d": [False, True],
}


def _fresh(value: Any) -> Any:
    """An equal value in another object where Python makes one (the identity test's blind spot)."""
    if isinstance(value, str):
        return "".join(list(value))
    if isinstance(value, int) and not isinstance(value, bool):
        return int(str(value))
    return value


def _same(x: Any, y: Any) -> bool:
    return type(x) is type(y) and x == y


def _scan_keeping(rows: list[dict[str, Any]], pins: dict[str, Any]) -> list[int]:
    return [i for i, row in enumerate(rows) if all(_same(row[n], v) for n, v in pins.items())]


@pytest.mark.parametrize("width", [1, 3, 64])
@pytest.mark.parametrize("mended", [False, True])
@pytest.mark.parametrize("seed", range(40))
def test_every_question_answers_what_a_scan_of_the_rows_answers(
    seed: int, mended: bool, width: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`mended`: rows changed from the row before come as a `Mended` of the mapping given last
    (as the local search makes them), which the table stores as those changes when that mapping
    is its newest row (not after a repeat), and looks at whole otherwise. `width`: the columns
    per chunk of a stored row (one per column, chunks of three across the four fields, and one
    chunk), which a row made from the one before shares where nothing changed."""
    rng = random.Random(seed)
    monkeypatch.setattr(supports_module, "MAX_SOLUTIONS", rng.choice([5, 9, 4096]))
    monkeypatch.setattr(supports_module, "_CHUNK", width)
    table = Supports(SimpleNamespace(domains=DOMAINS))  # type: ignore[arg-type]
    table._limit = supports_module.MAX_SOLUTIONS  # (its floor of 64 would hide the restarts)
    rows: list[dict[str, Any]] = []  # what the table holds since it last started again
    current = {n: rng.choice(d) for n, d in DOMAINS.items()}
    given: dict[str, Any] = {}  # the mapping given last
    for _ in range(60):
        # Mostly one or two fields changed from the row before (as a sweep's mends), sometimes
        # a row from anywhere, sometimes a repeat.
        changes: list[str] | None = None
        if rng.random() < 0.2:
            current = {n: rng.choice(d) for n, d in DOMAINS.items()}
        else:
            changes = rng.sample(list(DOMAINS), rng.randint(1, 2))
            for name in changes:
                current[name] = rng.choice(DOMAINS[name])
        row = {n: _fresh(v) if rng.random() < 0.3 else v for n, v in current.items()}
        if mended and changes is not None and given:
            made = Mended(given)
            for name in changes:  # (and maybe a field named that did not change)
                made[name] = row[name]
            made.changed += changes + rng.sample(list(DOMAINS), rng.randint(0, 1))
            row = made
        given = row
        known = any(all(_same(r[n], row[n]) for n in DOMAINS) for r in rows)
        if not known and len(rows) >= table._limit:
            rows = []
        kept_pins = {n: row[n] for n in rng.sample(list(DOMAINS), 2)}
        before = table.keeping(kept_pins)
        added = table.added(row)
        assert (added is None) is known
        if not known:
            rows.append(dict(row))
            # The new row put into a `keeping` of pins it keeps: that `keeping` taken afresh.
            joined = Supports.joined(before, added)
            assert joined is None if before[0] != table.generation else joined == table.keeping(kept_pins)
        assert table.size == len(rows)
        pins = {n: rng.choice(DOMAINS[n]) for n in rng.sample(list(DOMAINS), rng.randint(0, 2))}
        keeping = table.keeping(pins)
        expected = _scan_keeping(rows, pins)
        example = table.example(keeping)
        assert example == (rows[expected[0]] if expected else None)
        if example is not None:
            assert all(_same(example[n], rows[expected[0]][n]) for n in DOMAINS)
        for name, domain in DOMAINS.items():
            proven = table.proven(name, domain, keeping)
            wanted = [v for v in domain if any(_same(rows[i][name], v) for i in expected)]
            assert [(type(v), v) for v in proven] == [(type(v), v) for v in wanted]
        name = rng.choice(list(DOMAINS))
        value = rng.choice(DOMAINS[name])
        others = {n: v for n, v in pins.items() if n != name}
        holding = _scan_keeping(rows, {name: value})
        closest = table.closest(name, value, others)
        if not holding:
            assert closest is None
        else:
            for pin, pinned in others.items():
                narrowed = [i for i in holding if _same(rows[i][pin], pinned)]
                holding = narrowed or holding
            assert closest == rows[holding[0]]
        # `latest`: the same narrowing, the newest rows first.
        count = rng.randint(1, 3)
        latest = table.latest(name, value, others, count)
        assert latest == [rows[i] for i in reversed(holding)][:count]
