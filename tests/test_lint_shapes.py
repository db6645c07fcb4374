"""Laws of `solver.lint.shapes`, the earlier conflicts a totality reason proves again first.

A totality reason explains a fact combination with no configuration (its pins are QuickXplain's
items, after the rules). An earlier reason's conflict, its rules with this combination's values
of its facts, that a search proves to have no solution answers every question containing it
without a search. The laws, judged by brute force over the cartesian product (tests/generated.py):
every candidate `Shapes.proven` returns has no solution, and a reason asked after an earlier one
(whose conflict it may reuse) is the reason a fresh oracle gives, which knows no earlier conflict.
The second combination is the first with some pins drawn again: the same conflict with other
values, often one with no solution and sometimes one with a solution (which must not be used).
"""

from __future__ import annotations

import pytest
from generated import Oracle, PackSpec, packs
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from solver.budget import Budget
from solver.engine.csp import CompiledPack
from solver.lint.oracle import PackOracle
from solver.lint.shapes import Proven, Shapes

pytestmark = pytest.mark.property

LAW = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


def _oracle(spec: PackSpec) -> PackOracle:
    return PackOracle(spec.pack, samples=10, seed=0, budget=Budget(100_000))


@LAW
@given(spec=packs(), data=st.data())
def test_a_reason_after_earlier_conflicts_is_the_reason_alone(spec: PackSpec, data: st.DataObject) -> None:
    brute = Oracle(spec)
    rules = list(CompiledPack(spec.pack).rule_ids)
    names = [f.name for f in spec.fields]
    pinned = data.draw(st.lists(st.sampled_from(names), unique=True, min_size=1))
    first = {n: data.draw(st.sampled_from(brute.domains[n])) for n in pinned}
    assume(not brute.sat(first))
    again = set(data.draw(st.lists(st.sampled_from(pinned), unique=True)))
    second = {n: data.draw(st.sampled_from(brute.domains[n])) if n in again else v for n, v in first.items()}
    assume(not brute.sat(second))

    warm = _oracle(spec)
    warm.reason(first, [], rules, blame_pins=True)
    for proven in warm.shapes.proven(second, warm._refutes):
        assert not brute.sat(proven.pins, proven.rules)
    assert warm.reason(second, [], rules, blame_pins=True) == _oracle(spec).reason(
        second, [], rules, blame_pins=True
    )


def test_a_candidate_is_kept_only_when_refuted() -> None:
    shapes = Shapes()
    shapes.record(["r1", "r2"], ["a"])
    shapes.record(["r3"], ["a", "b"])
    shapes.record(["r3"], ["a", "b"])
    asked: list[tuple[dict[str, object], list[str]]] = []

    def refuted(pins: dict[str, object], rules: list[str]) -> bool:
        asked.append((pins, rules))
        return rules == ["r1", "r2"]

    # The most frequent shape first; a shape whose fields are not all pinned is not tried.
    assert shapes.proven({"a": 1, "b": 2}, refuted) == [Proven(("r1", "r2"), {"a": 1})]
    assert asked == [({"a": 1, "b": 2}, ["r3"]), ({"a": 1}, ["r1", "r2"])]
    assert shapes.proven({"b": 2}, refuted) == []


def test_a_proven_conflict_covers_the_positions_of_its_items() -> None:
    proven = Proven(("r2", "r0"), {"b": True})
    assert proven.covers({"r0": 0, "r1": 1, "r2": 2}, ["a", "b"]) == frozenset({0, 2, 4})
    assert proven.covers({"r0": 0, "r1": 1}, ["a", "b"]) is None  # (r2 is not among the items)
    assert proven.within({"r0", "r2"}) and not proven.within({"r0"})
