"""One predicate type (solver/pack/expr.py, `Condition`): a pack's rules, a query's own conditions
(`Condition.over`) and their negations (`Condition.negated`) are the same type, and the engine
takes them as they are."""

from __future__ import annotations

import itertools
from pathlib import Path

from solver import load_pack
from solver.engine.csp import compile_pack
from solver.pack.expr import Condition

TOY = Path(__file__).parent / "fixtures" / "packs" / "toy"


def test_a_negated_condition_holds_exactly_where_the_condition_fails() -> None:
    pack = load_pack(TOY)
    cp = compile_pack(pack)
    for rule in cp.rules.values():
        cond, negated = rule.condition, rule.condition.negated()
        assert negated.fields == cond.fields and negated.text == f"not ({cond.text})"
        for values in itertools.product(*(pack.fields[f].domain for f in cond.fields)):
            assert negated.holds(values) is not bool(cond.holds(values)), (rule.key, values)
            known = dict(zip(cond.fields, values, strict=True))
            assert negated.partial(known) is not cond.partial(known), (rule.key, values)
        assert negated.partial({}) == (None if cond.partial({}) is None else not cond.partial({}))


def test_a_condition_made_in_code_restricts_a_query_like_a_rule() -> None:
    cp = compile_pack(load_pack(TOY))
    only_tp8 = Condition.over(("tp",), lambda values: values[0] == 8)
    assert only_tp8.text == "" and only_tp8.partial({"tp": 8}) is None  # undecided without `partial`
    found = cp.satisfiable({}, extra=[only_tp8])
    assert found is not None and found["tp"] == 8
    assert cp.satisfiable({"tp": 4}, extra=[only_tp8]) is None
    assert cp.satisfiable({"tp": 4}, extra=[only_tp8.negated()]) is not None
