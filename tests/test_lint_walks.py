"""Laws of `solver.lint.walks`, the layers of rules (and their cores) lint's reasons keep per start.

A walk kept for a start is read again by later reasons from the same fields, whatever their pins
and pin values: its layers and cores must be the ones `rule_layers` and `peel` give for those
pins, over the same rules, and a reason asked after others (reading kept walks) must be the
reason a fresh oracle gives. The reasons are judged against a fresh oracle (which kept nothing)
and the layers against the walk and the peel made anew.
"""

from __future__ import annotations

import pytest
from generated import Oracle, PackSpec, packs
from hypothesis import assume, given
from hypothesis import strategies as st
from test_lint_shapes import LAW, _oracle

from solver.engine.csp import CompiledPack
from solver.lint.walks import Walks
from solver.reasoning.conflicts import rule_layers
from solver.reasoning.peel import peel

pytestmark = pytest.mark.property


@LAW
@given(spec=packs(), data=st.data())
def test_a_kept_walk_is_the_walk_of_every_reason_from_its_start(spec: PackSpec, data: st.DataObject) -> None:
    cp = CompiledPack(spec.pack)
    names = [f.name for f in spec.fields]
    assume(names)
    domains = Oracle(spec).domains
    walks = Walks(cp)
    for _ in range(3):
        start = data.draw(st.lists(st.sampled_from(names), unique=True, min_size=1))
        pinned = data.draw(st.lists(st.sampled_from(start), unique=True))
        pins = {n: data.draw(st.sampled_from(domains[n])) for n in pinned}
        every = list(cp.rule_ids)
        rules = every if data.draw(st.booleans()) else [r for r in every if data.draw(st.booleans())]
        walk = walks.walk(start, rules)
        expected = [(layer, peel(cp, layer, start)) for layer in rule_layers(cp, start, pins, rules)]
        made = []
        while (layer := walk.layer(len(made))) is not None:
            made.append((layer.rules, layer.core))
            assert layer.at == {rid: p for p, rid in enumerate(layer.core)}
        assert made == expected


@LAW
@given(spec=packs(), data=st.data())
def test_a_reason_after_others_from_the_same_fields_is_the_reason_alone(
    spec: PackSpec, data: st.DataObject
) -> None:
    brute = Oracle(spec)
    every = list(CompiledPack(spec.pack).rule_ids)
    names = [f.name for f in spec.fields]
    assume(names)
    pinned = data.draw(st.lists(st.sampled_from(names), unique=True, min_size=1))
    asked = []
    for _ in range(3):
        pins = {n: data.draw(st.sampled_from(brute.domains[n])) for n in pinned}
        rules = every if data.draw(st.booleans()) else [r for r in every if data.draw(st.booleans())]
        if not brute.sat(pins, rules):
            asked.append((pins, rules, data.draw(st.booleans())))
    assume(asked)
    warm = _oracle(spec)
    for pins, rules, blame in asked:
        assert warm.reason(pins, [], rules, blame_pins=blame) == _oracle(spec).reason(
            pins, [], rules, blame_pins=blame
        )
