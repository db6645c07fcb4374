"""Laws of QuickXplain's questions asked by position (`solver.reasoning.consistency.Positions`,
`solver.reasoning.conflicts.quickxplain_bits`), against brute force on generated packs.

`Reasons.why` asks its minimal reasons this way: each question an int whose bits are the items'
positions, answered from masks of what is known. Its answers must be the brute-force answers,
whatever questions came before (the masks of verdicts, witnesses and refutations it keeps are
filled as questions come), and QuickXplain over them must give `quickxplain`'s answer.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from generated import Case, Oracle, cases
from hypothesis import given
from hypothesis import strategies as st
from test_laws import law

from solver.engine.csp import compile_pack
from solver.model import Scalar
from solver.reasoning.conflicts import Item, _oracle, quickxplain, quickxplain_bits
from solver.reasoning.consistency import Checks, Positions, positions

pytestmark = pytest.mark.property


def _items(case: Case, fixed: dict[str, Scalar]) -> list[Item]:
    pins = [Item("pin", n, v) for n, (v, _) in case.pins().items() if n not in fixed]
    return [Item("rule", rid) for rid in compile_pack(case.pack).rule_ids] + pins


def _sat(oracle: Oracle, items: Sequence[Item], fixed: dict[str, Scalar], mask: int) -> bool:
    pins = dict(fixed)
    for at in positions(mask):
        item = items[at]
        if item.kind == "pin":
            assert item.value is not None
            if item.name in pins and pins[item.name] != item.value:
                return False
            pins[item.name] = item.value
    rules = [items[at].name for at in positions(mask) if items[at].kind == "rule"]
    return oracle.sat(pins, rules)


@law(100)
@given(case=cases(), data=st.data())
def test_questions_by_position_get_the_brute_force_answers(case: Case, data: st.DataObject) -> None:
    """Any sequence of questions (sets of rules and pins, a field's value fixed in all of them)
    gets the answer brute force gives each, from one `Positions` that keeps what it learns."""
    oracle = Oracle(case.spec)
    cp = compile_pack(case.pack)
    name = data.draw(st.sampled_from(sorted(case.pack.fields)))
    fixed = {name: data.draw(st.sampled_from(case.pack.fields[name].domain))}
    items = _items(case, fixed)
    ask = Positions(Checks(cp, "law"), [(i.kind, i.name, i.value) for i in items], fixed)
    for mask in data.draw(st.lists(st.integers(0, (1 << len(items)) - 1), min_size=1, max_size=12)):
        assert ask(mask) == _sat(oracle, items, fixed, mask), [items[at].label() for at in positions(mask)]


@law(100)
@given(case=cases(), data=st.data())
def test_quickxplain_by_position_is_quickxplain(case: Case, data: st.DataObject) -> None:
    """Over an inconsistent set of rules and pins, `quickxplain_bits` with `Positions` gives the
    items `quickxplain` with the checks over items gives, in the same order (it asks the same
    questions, which get the same answers)."""
    oracle = Oracle(case.spec)
    cp = compile_pack(case.pack)
    name = data.draw(st.sampled_from(sorted(case.pack.fields)))
    fixed = {name: data.draw(st.sampled_from(case.pack.fields[name].domain))}
    items = _items(case, fixed)
    if _sat(oracle, items, fixed, (1 << len(items)) - 1):
        return
    ask = Positions(Checks(cp, "law"), [(i.kind, i.name, i.value) for i in items], fixed)
    by_position = [items[at] for at in quickxplain_bits(ask, len(items))]
    assert by_position == quickxplain(_oracle(cp, fixed, "law"), items)
    assert not _sat(oracle, items, fixed, sum(1 << items.index(i) for i in by_position))
