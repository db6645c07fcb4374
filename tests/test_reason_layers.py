"""An excluded value's reason searched outwards from its field (`Reasons.why` when propagation
and one case split name none: at 5,000 synthetic fields one value whose layer is ~4,500 rules)
is QuickXplain's preferred conflict over the first layer of rules that refutes the value, the
rules in pack order, then the pins that layer reads by rank. QuickXplain is run over the layer
less its rules in no minimal conflict (`solver.reasoning.peel`); the law, against brute force,
runs it over the whole layer and requires the same items, in the same order.
"""

from __future__ import annotations

from collections.abc import Sequence

from generated import Case, Oracle, cases
from hypothesis import HealthCheck, given, settings

from solver.engine.csp import compile_pack
from solver.model import Scalar
from solver.reasoning.conflicts import Item, _pin_rank, minimal_reason, quickxplain, rule_layers


def _preferred(
    oracle: Oracle, cp: object, name: str, value: Scalar, others: dict[str, Scalar], sources: dict[str, str]
) -> list[Item] | None:
    """The reason as QuickXplain gives it over the first refuting layer, whole, by brute force."""
    asked = {**others, name: value}
    layer: list[str] | None = None
    for rules in rule_layers(cp, [name], others):  # type: ignore[arg-type]
        if not oracle.sat(asked, rules):
            layer = rules
            break
    if layer is None:
        if oracle.sat(asked):
            return None
        layer = list(cp.rule_ids)  # type: ignore[attr-defined]
    read = {f for rid in layer for f in cp.rules[rid].fields}  # type: ignore[attr-defined]
    pins = [Item("pin", n, v, sources[n]) for n, v in others.items() if n in read]
    pins.sort(key=lambda it: _pin_rank(it.source))

    def consistent(items: Sequence[Item]) -> bool:
        fixed = {name: value, **{i.name: i.value for i in items if i.kind == "pin"}}
        return oracle.sat(fixed, [i.name for i in items if i.kind == "rule"])  # type: ignore[arg-type]

    return quickxplain(consistent, [Item("rule", rid) for rid in layer] + pins)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
def test_a_reason_searched_by_layers_is_the_preferred_conflict_of_its_layer(case: Case) -> None:
    oracle = Oracle(case.spec)
    cp = compile_pack(case.pack)
    pins = {n: v for n, (v, _) in case.pins().items()}
    sources = {n: s for n, (_, s) in case.pins().items()}
    for name in case.pack.fields:
        others = {n: v for n, v in pins.items() if n != name}
        if not oracle.sat(others):
            continue
        possible = oracle.possible(name, pins)
        for value in case.pack.fields[name].domain:
            if any(value == v and type(value) is type(v) for v in possible):
                continue
            # (`trace=False`: no propagation's reasons first, straight to the layers.)
            got = minimal_reason(cp, name, value, pins, sources, trace=False)
            assert got == _preferred(oracle, cp, name, value, others, sources), (name, value)
