"""Laws of what valid choices reuse instead of searching (round 24, issue #18's one-fact row),
each against brute force on generated packs (tests/generated.py):

- `consistency._one_rule_descent`: whether one rule can hold with some pins, by three-valued
  steps over its free fields, answers what trying every combination answers (or gives up);
- `witness.transplanted`: a stored solution with the pins it lacks put in (and the fields of the
  rules that breaks decided again) is a configuration of every hard rule keeping the pins and
  the value, or None;
- `Supports.latest`: the newest stored rows with a value, narrowed by pins as `closest` narrows;
- `consistency._has_pins`: whether a witness (a solution, or one with a field changed) holds
  every pin, by item views, answers what a test per pin answers.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from types import MappingProxyType

import pytest
from generated import Case, Oracle, cases
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solver.engine.csp import compile_pack
from solver.engine.supports import supports_for
from solver.model import Scalar
from solver.reasoning import consistency
from solver.reasoning.diagnose import prepare_choices, valid_choices
from solver.reasoning.witness import Witnesses, transplanted

pytestmark = pytest.mark.property

LAW = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _same(x: Scalar, y: Scalar) -> bool:
    return type(x) is type(y) and x == y


@LAW
@given(case=cases(), data=st.data())
def test_one_rule_descent_answers_what_every_combination_answers(case: Case, data: st.DataObject) -> None:
    """For every hard rule and pins on some of its fields (and one beside it), the descent says
    yes exactly when some values of the rule's free fields make the rule hold with the pins; with
    few steps it may say None (a search answers), never the wrong answer."""
    cp = compile_pack(case.pack)
    names = list(cp.domains)
    for rid, rule in cp.rules.items():
        pinned = data.draw(st.lists(st.sampled_from(names), unique=True, max_size=3), label=rid)
        pins = {n: data.draw(st.sampled_from(list(cp.domains[n])), label=f"{rid}:{n}") for n in pinned}
        free = [f for f in rule.fields if f not in pins]
        if not free:
            continue
        combos = itertools.product(*([pins[f]] if f in pins else cp.domains[f] for f in rule.fields))
        truth = any(rule.holds(combo) for combo in combos)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(consistency, "_DESCENT_STEPS", 1 << 20)
            assert consistency._one_rule_descent(cp, rid, pins) is truth, (rid, pins)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(consistency, "_DESCENT_STEPS", data.draw(st.integers(1, 4), label="steps"))
            assert consistency._one_rule_descent(cp, rid, pins) in (None, truth), (rid, pins)


@LAW
@given(case=cases(), data=st.data())
def test_a_witness_has_the_pins_a_test_per_pin_finds(case: Case, data: st.DataObject) -> None:
    """A solution (a dict, one read through a proxy, or a `Changed` of either: a value put in
    for one field) holds the pins exactly when each pin's field has the pin's value there; pins
    drawn from the witness (kept) and from the domains (mostly not), the changed field's among
    them or not."""
    cp = compile_pack(case.pack)
    names = list(cp.domains)
    domains = {n: list(cp.domains[n]) for n in names}
    solution = {n: data.draw(st.sampled_from(domains[n]), label=n) for n in names}
    witness: Mapping[str, Scalar] = solution
    if data.draw(st.booleans(), label="proxy"):
        witness = MappingProxyType(solution)
    if data.draw(st.booleans(), label="changed"):
        field = data.draw(st.sampled_from(names), label="field")
        witness = consistency.Changed(
            witness, field, data.draw(st.sampled_from(domains[field]), label="value")
        )
    for _ in range(8):
        pinned = data.draw(st.lists(st.sampled_from(names), unique=True, max_size=len(names)), label="pinned")
        pins = {
            n: witness[n]
            if data.draw(st.booleans(), label=f"keep {n}")
            else data.draw(st.sampled_from(domains[n]))
            for n in pinned
        }
        assert consistency._has_pins(witness, pins) is all(witness[n] == v for n, v in pins.items()), pins


def _is_configuration(oracle: Oracle, row: Mapping[str, Scalar]) -> bool:
    """Every hard rule holds on `row`, a value of every field (brute force's own rule checks)."""
    return all(oracle.holds(rule, row) for rule in oracle.hard)


@LAW
@given(case=cases(), data=st.data())
def test_a_transplanted_solution_is_a_configuration_with_the_pins_and_the_value(
    case: Case, data: st.DataObject
) -> None:
    """After the questions of a page (prepared or not, then the request's pins one by one), a
    stored solution transplanted under other pins, for any value of any field, in their state or
    none, is None or a configuration of every hard rule that keeps the pins and has the value;
    and a value brute force finds impossible under the pins is never given one."""
    oracle = Oracle(case.spec)
    if data.draw(st.booleans(), label="prepare"):
        prepare_choices(case.pack)
    pins: dict[str, Scalar] = {}
    request = sorted({**case.options, **case.facts}.items())
    for name, value in data.draw(st.permutations(request), label="order"):
        pins[name] = value
        options = {n: v for n, v in pins.items() if n in case.options}
        facts = {n: v for n, v in pins.items() if n in case.facts}
        valid_choices(case.pack, options, facts, reasons=False)
    cp = compile_pack(case.pack)
    supports = supports_for(cp)
    # Pins the stored rows were mostly not found under (one or two fields, any values), so the
    # transplants put some in and decide again what that breaks.
    fields = data.draw(st.lists(st.sampled_from(sorted(cp.domains)), unique=True, min_size=1, max_size=2))
    under = {n: data.draw(st.sampled_from(list(cp.domains[n])), label=n) for n in fields}
    for name, domain in cp.domains.items():
        others = {n: v for n, v in under.items() if n != name}
        possible = oracle.possible(name, others)
        # (The pins' state, as choices gives it: its fields a broken rule reads decided again.)
        state = Witnesses(cp, others, "testing transplants").state
        for value in domain:
            row = transplanted(cp, supports, others, name, value, state if data.draw(st.booleans()) else None)
            if row is None:
                continue
            assert any(_same(value, v) for v in possible), (name, value, others)
            assert _same(row[name], value), (name, value, row)
            assert all(_same(row[n], v) for n, v in others.items()), (others, row)
            assert _is_configuration(oracle, row), (name, value, others, row)
