"""`given(FIELD) == VALUE` (the value typed) on generated packs, judged by brute force.

tests/generated.py draws rules that read `given(OPTION)` and `given(OPTION) == VALUE` /
`given(OPTION) in [VALUES]` (`Cond` kind `typed`); its oracle reads no request marks (the pack as
loaded). Here the judge reads them: every configuration of the pack's domains, each hard rule
evaluated with `given(F)` true when the request types F and `given(F) == V` true when it typed V
(solver.pack.given). `count` counts exactly those keeping the pins; `resolve`'s answer keeps every
hard rule as the request typed it, adjusted values included (the marks read the value typed,
before the adjustment); each field's choices are the values some configuration takes when that
value is the one typed (picking a value types it: solver.reasoning.givenchoices).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping

from generated import Case, Cond, FieldSpec, PackSpec, RuleSpec, cases
from hypothesis import event, example, given
from test_laws import law
from test_laws_trust import answer

from solver import valid_choices
from solver.engine.count import count
from solver.model import Resolution, Scalar

Row = tuple[Scalar, ...]


def _same(a: Scalar, b: Scalar) -> bool:
    return a == b and type(a) is type(b)


def _marked(cond: Cond, index: Mapping[str, int], typed: Mapping[str, Scalar]) -> Callable[[Row], bool]:
    """`cond` over full rows, the request's marks read from `typed` (what it types)."""
    if cond.kind == "given":
        on = cond.name in typed
        return lambda row: on
    if cond.kind == "typed":
        values = cond.value if isinstance(cond.value, tuple) else (cond.value,)
        on = cond.name in typed and any(_same(typed[cond.name], v) for v in values if v is not None)
        return lambda row: on
    if cond.kind in ("not", "and", "or"):
        parts = [_marked(p, index, typed) for p in cond.parts]
        if cond.kind == "not":
            return lambda row: not parts[0](row)
        if cond.kind == "and":
            return lambda row: all(p(row) for p in parts)
        return lambda row: any(p(row) for p in parts)
    return cond.compile(index)


def _rows(spec: PackSpec, typed: Mapping[str, Scalar], pins: Mapping[str, Scalar]) -> list[Row]:
    """Every configuration keeping `pins` and each hard rule, marks from `typed`."""
    index = {f.name: i for i, f in enumerate(spec.fields)}
    checks = []
    for rule in spec.rules:
        if rule.severity != "error":
            continue
        body = _marked(rule.body, index, typed)
        when = _marked(rule.when, index, typed) if rule.when else None
        checks.append((when, body, rule.forbid))
    fixed = [(index[n], v) for n, v in pins.items()]
    return [
        row
        for row in itertools.product(*(f.domain for f in spec.fields))
        if all(_same(row[i], v) for i, v in fixed)
        and all((when is not None and not when(row)) or body(row) != forbid for when, body, forbid in checks)
    ]


def _reads_typed(case: Case) -> bool:
    def walk(c: Cond | None) -> bool:
        return c is not None and (c.kind == "typed" or any(walk(p) for p in c.parts))

    return any(walk(r.body) or walk(r.when) for r in case.spec.rules)


_A_IS_Q = Cond("cmp", op="==", name="a", value="q")
# Typed `a = q` refuses `b = r` (two options `a`: p, q and `b`: r, s).
_B_IS_R, _TYPED_A_Q = Cond("cmp", op="==", name="b", value="r"), Cond("typed", name="a", value="q")
_TYPED_Q_NO_R = RuleSpec("typed-q-no-r", _B_IS_R, when=_TYPED_A_Q, forbid=True)


def _two_options(rules: tuple[RuleSpec, ...], options: dict[str, Scalar]) -> Case:
    fields = (FieldSpec("a", "option", ("p", "q")), FieldSpec("b", "option", ("r", "s")))
    return Case(PackSpec(fields=fields, sets=(), rules=rules, prefs=()), options, {}, False)


# `a` typed `q` is adjusted to `p` (a rule forbids q, adjusting it): the answer keeps a = p, and b
# must not be r, for the value typed was q.
_ADJUSTED_BUT_TYPED = _two_options(
    (
        RuleSpec("no-a-q", _A_IS_Q, forbid=True, adjusts="a", adjust_to=("p",)),
        _TYPED_Q_NO_R,
    ),
    {"a": "q"},
)
# With `a q` and `b r` typed, `a`'s choices are `p` (picking p types p), not none (the request's
# own typed q read for every value of `a`).
_PICKING_TYPES_THE_VALUE = _two_options((_TYPED_Q_NO_R,), {"a": "q", "b": "r"})


@law(150)
@given(case=cases(given_rules=True))
@example(case=_ADJUSTED_BUT_TYPED)
def test_count_reads_the_value_typed(case: Case) -> None:
    """`count` under the request's pins is the number of configurations keeping them and every
    hard rule with the request's marks (a typed value read as typed)."""
    event("typed value read" if _reads_typed(case) else "given() only")
    pins = {**case.options, **case.facts}
    assert count(case.pack, pins=pins).count == len(_rows(case.spec, case.options, pins))


@law(150)
@given(case=cases(given_rules=True))
@example(case=_ADJUSTED_BUT_TYPED)
def test_an_answer_keeps_the_rules_as_the_request_typed_them(case: Case) -> None:
    """`resolve`'s answer keeps every hard rule with the marks of the request as typed, also
    where it adjusted a typed value (the marks read the value typed, not the adjusted one)."""
    got = answer(case, predict=False)
    if not isinstance(got, Resolution):
        return
    event("adjusted" if got.adjustments else "as typed")
    row = tuple(got.values[f.name] for f in case.spec.fields)
    assert row in _rows(case.spec, case.options, {}), got.values


@law(100)
@given(case=cases(given_rules=True))
@example(case=_ADJUSTED_BUT_TYPED)
@example(case=_PICKING_TYPES_THE_VALUE)
def test_choices_read_the_value_picked_as_typed(case: Case) -> None:
    """Each option's possible values are those some configuration takes with the other pins,
    its marks those of the request with that value typed (its own pin left out)."""
    event("typed value read" if _reads_typed(case) else "given() only")
    names = list(case.pack.fields)
    got = valid_choices(case.pack, case.options, case.facts, fields=names, reasons=False)
    pins = {**case.options, **case.facts}
    for f in case.spec.fields:
        if f.kind != "option":
            continue
        others = {n: v for n, v in pins.items() if n != f.name}
        typed = {n: v for n, v in case.options.items() if n != f.name}
        expected = [v for v in f.domain if _rows(case.spec, {**typed, f.name: v}, {**others, f.name: v})]
        assert got.possible[f.name] == expected, f.name
