"""Laws of the value classes a whole-condition expansion branches on (`solver.engine.valueclasses`,
`Diagrams.rule`): the diagram is the one a value-by-value expansion gives, on conditions written
to share classes (comparisons with literals, and of fields with products of fields) and on
generated packs; a mutant classing is caught by the same law; a disjunction over two wide fields
and a budget compared with products of sizes expand within a small budget (the MegaMoE budget rules
of SGLang 0.5.23+27, folded back from their twins, and those of +28 with the sizes people type)."""

from __future__ import annotations

from typing import Any

import pytest
from generated import packs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solver.engine.count import pack_checks
from solver.engine.csp import compile_pack
from solver.engine.diagrams import Diagrams, TooLarge
from solver.engine.valueclasses import ValueClasses, value_classes
from solver.model import Field
from solver.pack.expr import Condition, parse

FEW = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

FIELDS = {
    "arch": Field(name="arch", kind="fact", domain=tuple(f"a{i}" for i in range(9))),
    "size": Field(name="size", kind="option", domain=(0, 1, 2, 4, 8, 16)),
    "flag": Field(name="flag", kind="option", domain=(False, True)),
    "ranks": Field(name="ranks", kind="option", domain=(1, 2, 4)),
    "budget": Field(name="budget", kind="fact", domain=(0, 4, 8, 16, 32)),
    "quant": Field(name="quant", kind="option", domain=("none", "fp8", "fp4", "int4")),
}
SETS = {"SOME": ("a1", "a3", "a4")}
ATOMS = [
    "arch == 'a2'",
    "arch != 'a5'",
    "arch in SOME",
    "arch not in ['a0', 'a7']",
    "'a6' == arch",
    "size >= 4",
    "size < 2",
    "size == 16",
    "size in [0, 8]",
    "size > -1",
    "flag",
    "not flag",
    "ranks * size >= 8",
    "size == ranks",
    "ranks <= 2",
    "quant == 'fp4'",
    "quant in ['fp8', 'int4']",
    "size * 4 <= budget * ranks",
    "budget >= size",
    "size > 0 and size * 2 <= budget",
    "ranks * ranks > size",
    "size * ranks * 2 == budget",
    "budget < ranks * 3",
    "budget != size * 2",
]


@st.composite
def conditions(draw: st.DrawFn, depth: int = 0) -> str:
    """A condition over FIELDS: comparisons with literals (which classes merge), products and
    comparisons of two fields (which keep their fields value by value), under and / or / not."""
    if depth >= 3 or draw(st.integers(0, 2)) == 0:
        return draw(st.sampled_from(ATOMS))
    kind = draw(st.sampled_from(["and", "or", "not"]))
    if kind == "not":
        return f"not ({draw(conditions(depth + 1))})"
    parts = draw(st.lists(conditions(depth + 1), min_size=2, max_size=3))
    return f" {kind} ".join(f"({p})" for p in parts)


def _value_by_value(dd: Diagrams, cond: Condition) -> int:
    """The diagram of `cond` expanded over every value of every field (no text, no classes)."""
    return dd.rule(Condition.over(cond.fields, cond.holds))


@pytest.mark.property
@FEW
@given(text=conditions(), order=st.permutations(list(FIELDS)))
def test_an_expansion_by_value_classes_is_the_expansion_value_by_value(text: str, order: list[str]) -> None:
    """In any field order, a condition's diagram expanded once per class of values is the one
    expanded per value (and the one built from its text, leaf by leaf)."""
    cond = parse(text, FIELDS, SETS)
    domains = {name: field.domain for name, field in FIELDS.items()}
    dd = Diagrams(order, domains)
    assert dd.rule(cond) == _value_by_value(dd, cond) == dd.condition(cond, FIELDS, SETS), text


@pytest.mark.property
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=packs())
def test_on_generated_packs_every_rule_expands_by_classes_to_its_value_by_value_diagram(spec: Any) -> None:
    cp = compile_pack(spec.pack)
    dd = Diagrams(list(cp.domains), cp.domains)
    for cond in pack_checks(spec.pack):
        assert dd.rule(cond) == _value_by_value(dd, cond), cond.text


def test_values_a_condition_never_tells_apart_share_a_class() -> None:
    cond = parse("(arch in SOME or quant == 'fp4') and size >= 4 and not flag", FIELDS, SETS)
    domains = {name: field.domain for name, field in FIELDS.items()}
    classes = value_classes(cond, domains).fixed
    assert classes["arch"] == (0, 1, 0, 3, 4, 0, 0, 0, 0)  # a1, a3, a4 named; the others one class
    assert classes["quant"] == (0, 0, 2, 0)
    assert classes["size"] == (0, 0, 0, 3, 3, 3)  # below 4, then from 4 up
    assert "flag" not in classes  # (two values, both read)
    made_in_code = value_classes(Condition.over(cond.fields, cond.holds), domains)  # no text
    assert made_in_code.fixed == {} and made_in_code.at("size", {}) is None


def test_a_field_multiplied_is_classed_by_the_thresholds_the_others_leave() -> None:
    """`ranks * size >= 8`: with `ranks` fixed at 2 the threshold is 4 (0, 1, 2 one class; 4 and
    8 another; 16 named); with `ranks` not fixed yet, every threshold any rank gives (1 and 0 still
    one class: below all of them). `ranks` is read beside `size`, so neither is fixed."""
    domains = {name: field.domain for name, field in FIELDS.items()}
    product = value_classes(parse("ranks * size >= 8 or size == 16 or ranks == 2", FIELDS, SETS), domains)
    assert product.fixed == {}
    assert product.at("size", {"ranks": 2}) == (0, 0, 0, 3, 3, 5)
    assert product.at("size", {}) == (0, 0, 2, 3, 4, 5)
    assert product.at("ranks", {"size": 8}) == (0, 1, 0)  # 1 and 4 reach 8; 2 named
    remainder = value_classes(parse("size % ranks == 0 or size == 16", FIELDS, SETS), domains)
    assert remainder.at("size", {"ranks": 2}) is None  # (`%`: value by value)


# Written with a product the classes must read whole: a mutant that forgets a field not fixed
# yet, or a comparison (in a class or in the key of what is left to expand), gives another
# diagram on one of these in one of these orders.
_MUTANT_CATCHERS = [
    "size * 4 <= budget * ranks or size == 0",
    "(size > 0 and size * 2 <= budget) or (flag and size * 8 <= budget * ranks)",
    "budget < ranks * 3 and not (size * ranks * 2 == budget)",
    "(size * 4 <= budget * ranks or quant == 'fp4') and (budget < ranks * 3 or quant == 'none')",
]


def _forgets_the_fields_not_fixed(
    self: ValueClasses, field: str, relations: Any, others: Any, known: Any
) -> Any:
    """A mutant of `ValueClasses._classed`: the fields not fixed yet read at their first value."""
    first = {n: self._domains[n][0] for n in others if n not in known}
    return _CLASSED(self, field, relations, others, {**first, **known})


def _forgets_a_comparison(self: ValueClasses, field: str, relations: Any, others: Any, known: Any) -> Any:
    """A mutant of `ValueClasses._classed`: the last comparison of the field is not read."""
    return _CLASSED(self, field, relations[:-1], others, known) if len(relations) > 1 else None


def _residual_without_the_last_answer(self: ValueClasses, known: Any) -> Any:
    """A mutant of `ValueClasses.residual`: the last comparison's answer left out of the key."""
    return _RESIDUAL(self, known)[:-1]


_CLASSED, _RESIDUAL = ValueClasses._classed, ValueClasses.residual


@pytest.mark.parametrize(
    ("method", "mutant"),
    [
        ("_classed", _forgets_the_fields_not_fixed),
        ("_classed", _forgets_a_comparison),
        ("residual", _residual_without_the_last_answer),
    ],
)
def test_the_law_catches_a_mutant_classing(method: str, mutant: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The law above (classes = value by value) fails on each mutant for one of the written
    conditions in one of the orders, where the honest classing passes it: the law sees a classing
    that merges values (or branches) it should not."""
    domains = {name: field.domain for name, field in FIELDS.items()}
    orders = [list(FIELDS), list(reversed(FIELDS))]

    def differs() -> bool:
        found = False
        for text in _MUTANT_CATCHERS:
            for order in orders:
                dd = Diagrams(order, domains)
                cond = parse(text, FIELDS, SETS)
                found |= dd.rule(cond) != _value_by_value(dd, cond)
        return found

    assert not differs()
    monkeypatch.setattr(ValueClasses, method, mutant)
    assert differs()


def test_a_disjunction_over_two_wide_fields_expands_within_a_small_budget() -> None:
    """`(wide in SOME or other == 'v') and ...`, ordered wide, three 8-valued fields, then other:
    value by value, each of the 57 values of `wide` outside the set leaves the condition open
    until `other` (57 x 8^3 x 40 = 1.2 million steps, past `_SMALL_BUDGET` = 300,000 of
    tests/test_count_diagrams.py); by classes a few hundred. Fails on def6101 (TooLarge): the
    shape that split the MegaMoE budget rules of SGLang 0.5.23+27 into `-nvfp4` twins."""
    fields = {
        "wide": Field(name="wide", kind="fact", domain=tuple(f"w{i}" for i in range(60))),
        **{m: Field(name=m, kind="option", domain=tuple(range(8))) for m in ("m1", "m2", "m3")},
        "other": Field(name="other", kind="option", domain=tuple(f"o{i}" for i in range(40))),
    }
    sets = {"SOME": ("w1", "w2", "w3")}
    text = "not ((wide in SOME or other == 'o7') and m1 >= 2 and m2 != 5) or (m3 < 4 or wide == 'w2')"
    cond = parse(text, fields, sets)
    domains = {name: field.domain for name, field in fields.items()}
    dd = Diagrams(["wide", "m1", "m2", "m3", "other"], domains)
    root = dd.rule(cond, 300_000)
    assert root == dd.condition(cond, fields, sets)
    with pytest.raises(TooLarge):  # (what the expansion value by value costs)
        dd.rule(Condition.over(cond.fields, cond.holds, cond.partial), 300_000)


def test_a_size_compared_with_products_expands_within_a_small_budget() -> None:
    """The MegaMoE budget shape: `size` (64 sizes) checked against `budget x ranks` for four
    token multipliers, ordered after `budget` (12 values), `ranks` (6), `dp`, `spec` and the model
    fields. Value by value each of the 4,608 branches before `size` takes 64 more (~500,000 steps
    on 6dc6b8c, past 300,000: TooLarge, where a field in a product was expanded value by value);
    classed by the thresholds the branch leaves, a few each (~50,000)."""
    fields = {
        "budget": Field(name="budget", kind="fact", domain=tuple(256 * 2**i for i in range(12))),
        "ranks": Field(name="ranks", kind="option", domain=(1, 2, 4, 8, 16, 32)),
        "dp": Field(name="dp", kind="option", domain=(False, True)),
        "spec": Field(name="spec", kind="option", domain=("none", "a", "b", "c")),
        "wide": Field(name="wide", kind="fact", domain=tuple(f"w{i}" for i in range(60))),
        "other": Field(name="other", kind="option", domain=tuple(f"o{i}" for i in range(40))),
        "size": Field(name="size", kind="option", domain=(0, *(8 * i for i in range(1, 64)))),
    }
    sets = {"SOME": ("w1", "w2", "w3", "w4", "w5", "w6")}
    fits = " and ".join(
        f"(spec != '{algo}' or size * {tokens} <= budget or (dp and size * {tokens} <= budget * ranks))"
        for algo, tokens in (("none", 1), ("a", 4), ("b", 8), ("c", 16))
    )
    text = f"not ((wide in SOME or other == 'o7') and size > 0) or ({fits})"
    cond = parse(text, fields, sets)
    domains = {name: field.domain for name, field in fields.items()}
    dd = Diagrams(list(fields), domains)
    root = dd.rule(cond, 300_000)
    assert root == dd.condition(cond, fields, sets)
    with pytest.raises(TooLarge):  # (what the expansion value by value costs)
        dd.rule(Condition.over(cond.fields, cond.holds, cond.partial), 300_000)
