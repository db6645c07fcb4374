"""Laws, against brute force, of two searches that explain's repairs rest on and that the laws of
tests/test_laws.py barely reach on their small packs:

- `solver.engine.localsearch.chase` (the search that follows a change from a known solution) runs
  only where the cheaper `repair` gave up: here every value of every field is put into a solved
  request and chased directly, with budgets large and tiny (a search stopped by its budget must
  not pass for a refutation); what it returns is a solution, what it refutes has none;
- `solver.reasoning.conflicts.diagnoses` skips the sets of pins whose trial would fail like an
  earlier one (a known conflict, or pins that wiped out a field as they were fixed): it must give
  exactly the sets a trial of every set gives.
"""

from __future__ import annotations

import itertools

from generated import Case, Oracle, cases
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solver.engine.csp import compile_pack
from solver.engine.localsearch import chase
from solver.model import Pin
from solver.reasoning.conflicts import diagnoses, minimal_conflict


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases(), budget=st.sampled_from([1, 2, 5, 1000]))
def test_a_chased_change_gives_a_solution_or_a_true_refutation(case: Case, budget: int) -> None:
    oracle = Oracle(case.spec)
    cp = compile_pack(case.pack)
    pins = {n: v for n, (v, _) in case.pins().items()}
    state = cp.start(pins)
    row = next(oracle.solutions(pins), None)
    if state is None or row is None:
        return
    witness = dict(zip(oracle.names, row, strict=True))
    for name in case.pack.fields:
        for value in list(state.domains[name]):
            changed: list[str] = []
            if not state.fix(name, value, changed):
                continue
            before = {n: list(d) for n, d in state.domains.items()}
            found, steps, refuted = chase(state, {**witness, name: value}, changed, budget)
            # The state is left as it was found (the search undoes its own narrowing).
            assert state.domains == before
            state.undo()
            assert steps <= budget + 1
            if found is not None:
                assert not refuted
                assert found[name] == value and all(found[n] == v for n, v in pins.items())
                assert all(oracle.holds(rule, found) for rule in oracle.hard), (name, value, found)
            elif refuted:
                assert not oracle.sat({**pins, name: value}), (name, value)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases(), with_conflict=st.booleans(), limit=st.sampled_from([1, 2, 6]))
def test_diagnoses_are_every_smallest_set_of_user_pins_whose_removal_works(
    case: Case, with_conflict: bool, limit: int
) -> None:
    oracle = Oracle(case.spec)
    pins = {n: Pin(field=n, value=v, source=s) for n, (v, s) in case.pins().items()}
    values = {n: p.value for n, p in pins.items()}
    if oracle.sat(values):
        return
    cp = compile_pack(case.pack)
    conflicts = []
    if with_conflict:
        core = minimal_conflict(cp, pins)
        assert core is not None
        conflicts = [{p.field for p in core[0]}]
    user = [n for n, p in pins.items() if p.source == "user"]
    expected: list[tuple[str, ...]] = []
    for size in range(1, min(3, len(user)) + 1):
        for combo in itertools.combinations(user, size):
            smaller = any(set(d) <= set(combo) for d in expected)
            if (
                len(expected) < limit
                and not smaller
                and oracle.sat({n: v for n, v in values.items() if n not in combo})
            ):
                expected.append(combo)
    assert diagnoses(cp, pins, conflicts=conflicts, limit=limit) == expected
