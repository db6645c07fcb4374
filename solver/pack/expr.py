"""The condition language of packs: parse safely, check against the pack, compile, evaluate.

`quantization == "fp8" and gpu_arch in BLACKWELL`, `ep_size == tp_size`, `not is_mla`.
Text is parsed with Python's `ast` and only a whitelist of node kinds is accepted; the pack's text
is never evaluated: a checked condition becomes two functions whose source `solver.pack.codegen`
writes from its own pieces (fields by position, literals as parameters' defaults), so a pack from
anywhere cannot run code, import, call or read attributes. What a compiled condition is lives in
`solver.pack.condition` (re-exported here); the parser, `solver.pack.exprparse`, which imports
`ast`, is imported by the first `parse`: a start from the prebuilt form parses no condition.
Imports only the standard library, `solver.model` and those two modules.

>>> from solver.model import Field
>>> fields = {"tp_size": Field(name="tp_size", kind="option", domain=(1, 2, 4, 8))}
>>> cond = parse("tp_size >= 4", fields, {})
>>> cond.fields, cond.holds((8,)), cond.partial({})
(('tp_size',), True, None)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from solver.model import Field, Scalar
from solver.pack.condition import MAX_DEPTH, MAX_LENGTH, Condition, ExprError

if TYPE_CHECKING:
    import ast

__all__ = [
    "MAX_DEPTH",
    "MAX_LENGTH",
    "Condition",
    "ExprError",
    "parse",
    "parse_node",
    "rule_condition",
    "rule_conditions",
]


def parse(text: str, fields: Mapping[str, Field], sets: Mapping[str, Sequence[Scalar]]) -> Condition:
    """Parse and check one condition against the pack's fields and named sets."""
    from solver.pack import exprparse  # (see the module: a start from the prebuilt form parses none)

    return exprparse.parse(text, fields, sets)


def parse_node(
    node: ast.expr, fields: Mapping[str, Field], sets: Mapping[str, Sequence[Scalar]]
) -> Condition:
    """One node of a condition the pack's loader has already parsed and checked, compiled alone
    (`exprparse.parse_node`)."""
    from solver.pack import exprparse

    return exprparse.parse_node(node, fields, sets)


def rule_condition(
    when: str | None,
    require: str | None,
    forbid: str | None,
    fields: Mapping[str, Field],
    sets: Mapping[str, Sequence[Scalar]],
) -> Condition:
    """The condition a rule enforces: `not when or require` (`forbid` is `require not`)."""
    return rule_conditions(when, require, forbid, fields, sets)[0]


def rule_conditions(
    when: str | None,
    require: str | None,
    forbid: str | None,
    fields: Mapping[str, Field],
    sets: Mapping[str, Sequence[Scalar]],
) -> tuple[Condition, Condition | None]:
    """`rule_condition` and, when the rule has one, its `when` alone (as `parse(when)` gives it),
    from one parse (`exprparse.rule_conditions`)."""
    from solver.pack import exprparse

    return exprparse.rule_conditions(when, require, forbid, fields, sets)
