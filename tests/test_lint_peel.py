"""Laws of `solver.reasoning.peel`, the rules lint's reasons leave out before QuickXplain.

A rule peeled off a set is in no minimal conflict of any question over the set's rules with pins
on the `blocked` fields: QuickXplain over the rules left, in their order, and the pins, gives the
conflict it gives over every rule and the pins (brute force over the cartesian product judges each
consistency question), and the set with the pins has a solution exactly when its core does. The
pins are drawn on the blocked fields only and put after the rules or mixed among them, as lint's
totality reasons (its pins are items) and its other reasons (its pins are fixed) ask.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from generated import Oracle, PackSpec, packs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solver.engine.csp import CompiledPack
from solver.reasoning.conflicts import quickxplain
from solver.reasoning.peel import peel

pytestmark = pytest.mark.property

LAW = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

Item = tuple[str, Any]  # ("rule", id) or ("pin", (field, value))


def _consistent(oracle: Oracle) -> Any:
    def consistent(chosen: Sequence[Item]) -> bool:
        pins = dict(v for k, v in chosen if k == "pin")
        rules = [v for k, v in chosen if k == "rule"]
        return oracle.sat(pins, rules)

    return consistent


@LAW
@given(spec=packs(), data=st.data())
def test_quickxplain_over_the_core_gives_the_same_conflict(spec: PackSpec, data: st.DataObject) -> None:
    oracle = Oracle(spec)
    cp = CompiledPack(spec.pack)
    rules = [r for r in cp.rule_ids if data.draw(st.booleans())]
    names = [f.name for f in spec.fields]
    blocked = data.draw(st.lists(st.sampled_from(names), unique=True)) if names else []
    pinned = [n for n in blocked if data.draw(st.booleans())]
    pins = {n: data.draw(st.sampled_from(oracle.domains[n])) for n in pinned}
    core = peel(cp, rules, blocked)
    assert core == [r for r in rules if r in core]  # (a sub-list, in the set's order)
    assert oracle.sat(pins, rules) == oracle.sat(pins, core)

    pin_items: list[Item] = [("pin", p) for p in pins.items()]
    mixed = data.draw(st.booleans())

    def items(chosen: list[str]) -> list[Item]:
        out: list[Item] = [("rule", r) for r in chosen]
        if not mixed:
            return out + pin_items
        # The pins among the rules, each at a drawn place (the same places for both lists).
        for at, item in zip(places, pin_items, strict=True):
            out.insert(min(at, len(out)), item)
        return out

    places = [data.draw(st.integers(0, len(rules))) for _ in pin_items]
    whole, kept = items(rules), items(core)
    consistent = _consistent(oracle)
    if consistent(whole):
        return
    assert quickxplain(consistent, kept) == quickxplain(consistent, whole)


def test_a_rule_is_peeled_only_at_a_free_field_it_alone_reads(tmp_path: Any) -> None:
    """A chain a -> b -> c: with nothing blocked every rule goes (c, then b, is read by one rule
    only); `a` blocked (a question pins it) keeps nothing either, but with `c` blocked the chain
    may be part of a conflict and stays; a rule none of whose values keeps it whatever its other
    fields hold (`d == e`) is never peeled (the test is three-valued, cautious)."""
    from test_lint import write_pack

    from solver import load_pack

    pack = {
        "pack.toml": '[pack]\nname = "peel"\nversion = "1"\ndescription = "chains"\nfiles = ["r.toml"]\n',
        "r.toml": "\n".join(
            [f'[field.{n}]\nkind = "option"\ndomain = [false, true]\n' for n in "abcde"]
            + [
                f'[[rule]]\nid = "{rid}"\n{body}\nbecause = "test"\nsource = "tests/test_lint_peel.py"\n'
                for rid, body in [
                    ("a-then-b", 'when = "a == True"\nrequire = "b == True"'),
                    ("b-then-c", 'when = "b == True"\nrequire = "c == True"'),
                    ("d-is-e", 'require = "d == e"'),
                ]
            ]
        ),
    }
    cp = CompiledPack(load_pack(write_pack(tmp_path / "pack", pack)))
    chain = ["a-then-b", "b-then-c"]
    assert peel(cp, chain, []) == []
    assert peel(cp, chain, ["a"]) == []
    assert peel(cp, chain, ["a", "c"]) == chain
    # (Each value of e keeps it for one value of d only: no value keeps it whatever d holds.)
    assert peel(cp, ["d-is-e"], []) == ["d-is-e"]
