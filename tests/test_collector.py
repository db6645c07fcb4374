"""`solver.engine.collector.fewer_collections`: the collector's first threshold raised for a long
question only, and the host's settings back after it, whatever happens meanwhile."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from solver import Unsatisfiable, explain, load_pack, resolve
from solver.engine import collector
from solver.engine.collector import fewer_collections
from solver.inputs.pins import collect_pins
from solver.reasoning import conflicts, diagnose
from solver.reasoning.plan import plan_for

TOY = Path(__file__).parent / "fixtures" / "packs" / "toy"


@pytest.fixture(autouse=True)
def _host_thresholds() -> Iterator[tuple[int, int, int]]:
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    try:
        yield (700, 10, 10)
    finally:
        gc.set_threshold(*before)


def test_the_threshold_is_raised_inside_and_put_back_after() -> None:
    with fewer_collections():
        assert gc.get_threshold() == (collector._YOUNG, 10, 10)
    assert gc.get_threshold() == (700, 10, 10)


def test_put_back_after_an_exception() -> None:
    with pytest.raises(RuntimeError), fewer_collections():
        raise RuntimeError("boom")
    assert gc.get_threshold() == (700, 10, 10)


def test_nested_calls_put_it_back_when_the_outermost_leaves() -> None:
    with fewer_collections():
        with fewer_collections():
            pass
        assert gc.get_threshold()[0] == collector._YOUNG  # the outer call still runs
    assert gc.get_threshold() == (700, 10, 10)


def test_concurrent_calls_put_it_back_when_the_last_leaves() -> None:
    first_in, second_in, first_may_leave = threading.Event(), threading.Event(), threading.Event()
    seen: list[tuple[int, int, int]] = []

    def first() -> None:
        with fewer_collections():
            first_in.set()
            first_may_leave.wait(10)
        seen.append(gc.get_threshold())  # the second call still runs

    def second() -> None:
        first_in.wait(10)
        with fewer_collections():
            second_in.set()
            first_may_leave.set()
            thread.join(10)
            seen.append(gc.get_threshold())

    thread = threading.Thread(target=first)
    other = threading.Thread(target=second)
    thread.start()
    other.start()
    other.join(20)
    assert seen == [(collector._YOUNG, 10, 10), (collector._YOUNG, 10, 10)]
    assert gc.get_threshold() == (700, 10, 10)


def test_a_host_change_meanwhile_is_kept() -> None:
    with fewer_collections():
        gc.set_threshold(1234, 5, 6)
    assert gc.get_threshold() == (1234, 5, 6)


@pytest.mark.parametrize("host", [(0, 10, 10), (50_000, 10, 10)])
def test_a_host_with_collection_off_or_a_higher_threshold_is_left_alone(host: tuple[int, int, int]) -> None:
    gc.set_threshold(*host)
    with fewer_collections():
        assert gc.get_threshold() == host
    assert gc.get_threshold() == host


def test_choices_run_with_the_threshold_raised_and_put_it_back(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[int, int, int]] = []
    asked = diagnose._request_choices

    def watched(*args: Any, **kwargs: Any) -> diagnose.Choices:
        seen.append(gc.get_threshold())
        return asked(*args, **kwargs)

    monkeypatch.setattr(diagnose, "_request_choices", watched)
    out = diagnose.valid_choices(load_pack(TOY))
    assert out.possible
    assert seen == [(collector._YOUNG, 10, 10)]
    assert gc.get_threshold() == (700, 10, 10)


def test_explain_and_repairs_run_with_the_threshold_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    # The minimal conflict and the repairs of an impossible request (explain, and a resolve that
    # fails), and the repairs a server's helper asks for alone.
    seen: dict[str, list[tuple[int, int, int]]] = {"conflict": [], "repairs": []}
    conflict, repairs = conflicts.minimal_conflict, diagnose._repairs

    def watched_conflict(*args: Any, **kwargs: Any) -> Any:
        seen["conflict"].append(gc.get_threshold())
        return conflict(*args, **kwargs)

    def watched_repairs(*args: Any, **kwargs: Any) -> Any:
        seen["repairs"].append(gc.get_threshold())
        return repairs(*args, **kwargs)

    monkeypatch.setattr(diagnose, "minimal_conflict", watched_conflict)
    monkeypatch.setattr(diagnose, "_repairs", watched_repairs)
    pack = load_pack(TOY)
    found = explain(pack, {"quant": "fp4"}, {"gpu": "a100"})
    assert found is not None and found.repairs
    with pytest.raises(Unsatisfiable):
        resolve(pack, {"quant": "fp4"}, {"gpu": "a100"})
    assert diagnose.repairs(plan_for(pack), collect_pins(pack, {"quant": "fp4"}, {"gpu": "a100"}))
    raised = (collector._YOUNG, 10, 10)
    assert seen == {"conflict": [raised, raised], "repairs": [raised, raised, raised]}
    assert gc.get_threshold() == (700, 10, 10)


def test_lint_runs_with_the_threshold_raised_and_puts_it_back(monkeypatch: pytest.MonkeyPatch) -> None:
    from solver.lint import checks

    seen: list[tuple[int, int, int]] = []
    run = checks._Linter.run

    def watched(self: checks._Linter, totality: bool) -> None:
        seen.append(gc.get_threshold())
        run(self, totality)

    monkeypatch.setattr(checks._Linter, "run", watched)
    assert checks.lint(load_pack(TOY)).stats["solver_calls"] > 0
    assert seen == [(collector._YOUNG, 10, 10)]
    assert gc.get_threshold() == (700, 10, 10)
