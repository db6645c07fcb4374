"""Values a condition cannot tell apart, found in its text: what lets a whole-condition expansion
(`solver.engine.diagrams.Diagrams.rule`) branch once per class of values instead of once per value.

A field the condition reads only by comparing it with literals (`==`, `!=`, `in`, `not in` a
list or a named set, `<`, `<=`, `>`, `>=` an integer, or a boolean field alone) gives two values
the same answer in every comparison when neither is a literal it names and no integer it is
ordered against lies between them (or equals one), so those values lead to one sub-diagram:
`architecture in MEGAMOE_NO_FALLBACK_ARCHS or quantization == 'modelopt_fp4'` reads about 55 of
`architecture`'s 63 values as one, and an expansion that reached `quantization` through each of
them spent 55 times the steps of one (what took a folded MegaMoE budget rule past the expansion
budget, round 25). A field read any other way (multiplied, compared with another field, asked
about by `given()`) keeps one class per value; so does every field of a condition without text
(made in code: nothing to read) or whose text has a shape this module does not know.

Imports the standard library, `solver.pack.expr` (the condition) and `solver.pack.marks`.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from solver.pack.expr import Condition
from solver.pack.marks import is_given_call

__all__ = ["value_classes"]

_LITERAL_OPS = (ast.Eq, ast.NotEq, ast.In, ast.NotIn)
_ORDER_OPS = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)
_ORDER: dict[type, Callable[[Any, Any], bool]] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}


def value_classes(check: Condition, domains: Mapping[str, Sequence[Any]]) -> dict[str, tuple[int, ...]]:
    """Field -> for each index of its domain, the first index of a value the condition cannot
    tell from it (itself when none), for the fields of `check` where two values share a class."""
    if not check.text:
        return {}
    try:
        tree = ast.parse(check.text, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    fields = set(check.fields)
    if not fields <= {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}:
        return {}  # a field the text does not show: the text is not the whole condition
    reads = _Reads(fields)
    if not reads.walk(tree):
        return {}
    named: dict[str, set[tuple[type, Any]]] = {}
    for field, value in [*check.literals, *reads.written]:  # (the text's own, should a copy drop one)
        named.setdefault(field, set()).add((type(value), value))
    classes: dict[str, tuple[int, ...]] = {}
    for field in fields - reads.other:
        names, cuts = named.get(field, set()), sorted(reads.cuts.get(field, ()), key=str)
        seen: dict[Any, int] = {}
        reps: list[int] = []
        for at, value in enumerate(domains[field]):
            if (type(value), value) in names:
                sign: Any = ("named", type(value), value)
            elif cuts and type(value) is not int:
                sign = ("unordered", at)  # (an int field's domain holds only ints; never merged)
            else:
                sign = tuple(_ORDER[op](value, cut) for op, cut in cuts)
            reps.append(seen.setdefault(sign, at))
        if any(rep != at for at, rep in enumerate(reps)):
            classes[field] = tuple(reps)
    return classes


class _Reads:
    """How a condition's text reads its fields: `other`, those read other than by comparing with
    literals; `cuts`, how each field is ordered against integers (`size >= 4`: (GtE, 4))."""

    def __init__(self, fields: set[str]) -> None:
        self.fields = fields
        self.other: set[str] = set()
        self.cuts: dict[str, set[tuple[type, int]]] = {}
        self.written: list[tuple[str, Any]] = []  # (field, a literal written beside it)

    def walk(self, tree: ast.expr) -> bool:
        """Reads `tree`; False when it has a shape this does not know."""
        stack: list[ast.AST] = [tree]
        while stack:
            node = stack.pop()
            if isinstance(node, ast.BoolOp):
                stack += node.values
            elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
                stack.append(node.operand)
            elif isinstance(node, ast.Compare) or is_given_call(node):
                if not (isinstance(node, ast.Compare) and self._with_literals(node)):
                    # (`given(FIELD)` reads whether FIELD is given and, compared, its typed value)
                    self.other |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} & self.fields
            elif isinstance(node, ast.Name) and node.id in self.fields:
                continue  # a boolean field alone (compared with True)
            elif not isinstance(node, ast.Constant):
                return False
        return True

    def _with_literals(self, node: ast.Compare) -> bool:
        """`FIELD op LITERALS` (or `LITERAL == FIELD`, `!=`): one comparison of one field with
        values written in the text or a named set, or with an integer by order (recorded as a
        cut of the field)."""
        if len(node.ops) != 1:
            return False
        op, left, right = node.ops[0], node.left, node.comparators[0]
        if isinstance(right, ast.Name) and right.id in self.fields and isinstance(op, ast.Eq | ast.NotEq):
            left, right = right, left  # (the language orders only a field against an integer)
        if not (isinstance(left, ast.Name) and left.id in self.fields):
            return False
        if isinstance(op, _ORDER_OPS):
            cut = _integer(right)
            if cut is None:
                return False
            self.cuts.setdefault(left.id, set()).add((type(op), cut))
            return True
        if not isinstance(op, _LITERAL_OPS):
            return False
        if isinstance(right, ast.Constant) or _integer(right) is not None:
            self.written.append((left.id, _literal(right)))
            return isinstance(op, ast.Eq | ast.NotEq)
        if isinstance(right, ast.List | ast.Tuple | ast.Set):
            if not all(isinstance(e, ast.Constant) or _integer(e) is not None for e in right.elts):
                return False
            self.written += [(left.id, _literal(e)) for e in right.elts]
            return isinstance(op, ast.In | ast.NotIn)
        return (
            isinstance(op, ast.In | ast.NotIn) and isinstance(right, ast.Name) and right.id not in self.fields
        )


def _integer(node: ast.expr) -> int | None:
    """An integer literal (`-1` too), else None."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _integer(node.operand)
        return None if inner is None else -inner
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    return None


def _literal(node: ast.expr) -> Any:
    """The value of a constant (an integer written negative too)."""
    number = _integer(node)
    return number if number is not None else getattr(node, "value", None)
