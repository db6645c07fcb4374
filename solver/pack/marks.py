"""The request's marks a condition reads: `given(FIELD)` (whether the request gives FIELD) and
`given(FIELD) == VALUE` / `given(FIELD) in [VALUES]` (the value it typed), found in a checked
condition's text. One home for their shape, read by the request's copies (`solver.pack.given`),
the loader's checks (`solver.pack.crosscheck`) and the counters, which count each mark as a
two-valued field (`solver.engine.count`, `solver.engine.diagrams`). Imports only the standard
library and `solver.model`; `ast` only in the functions that look at syntax trees (as
`solver.pack.syntax`: a `check` from the prebuilt form looks at none).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeGuard

if TYPE_CHECKING:
    import ast

from solver.model import Scalar, given_key
from solver.pack import syntax

__all__ = ["ValueRead", "given_atoms", "is_given_call", "read_key", "typed_holds", "value_read"]


# A `given(FIELD) == VALUE` / `given(FIELD) in [VALUES]` read: the field and the values, each
# with its type (True is not 1).
ValueRead = tuple[str, frozenset[tuple[type, Scalar]]]


def is_given_call(node: ast.AST) -> TypeGuard[ast.Call]:
    """Whether `node` is a call of `given` (its argument not looked at): the one test of that
    shape, for the compiler (`solver.pack.exprparse`), the request's copies (`solver.pack.given`) and
    the counters."""
    import ast

    return isinstance(node, ast.Call) and getattr(node.func, "id", None) == "given"


def value_read(node: ast.AST, sets: Mapping[str, Sequence[Scalar]]) -> ValueRead | None:
    """The field and values of a checked `given(FIELD) == VALUE` or `given(FIELD) in [VALUES]`
    (a list literal or a named set), or None when `node` is no such comparison. For the
    request's copies (`solver.pack.given`) and the counters' two-valued marks; the loader has
    checked the condition, so only the shape is looked at here."""
    import ast

    if not (isinstance(node, ast.Compare) and is_given_call(node.left) and len(node.ops) == 1):
        return None
    call, right = node.left, node.comparators[0]
    arg = call.args[0] if len(call.args) == 1 else None
    if not isinstance(arg, ast.Name):
        return None
    values: Sequence[Any]
    if isinstance(node.ops[0], ast.Eq):
        values = [ast.literal_eval(right)]
    elif isinstance(node.ops[0], ast.In):
        values = list(sets[right.id]) if isinstance(right, ast.Name) else list(ast.literal_eval(right))
    else:
        return None
    return arg.id, frozenset((type(v), v) for v in values)


def typed_holds(read: ValueRead, value: Any) -> bool:
    """Whether a request that typed `value` for the read's field makes the read true."""
    return (type(value), value) in read[1]


def read_key(read: ValueRead) -> str:
    """A value read as a two-valued mark's name (the counters' fields): `given(F) in [V, ...]`,
    values in one order, so the same read always has the same name."""
    shown = ", ".join(repr(v) for _, v in sorted(read[1], key=lambda tv: (tv[0].__name__, repr(tv[1]))))
    return f"{given_key(read[0])} in [{shown}]"


def given_atoms(text: str, sets: Mapping[str, Sequence[Scalar]]) -> dict[str, tuple[str, ValueRead | None]]:
    """The request's marks a checked condition reads, by the name a counter gives each as a
    two-valued field: `given(F)` (`given_key`, no read) and each value read (`read_key`)."""
    import ast

    found: dict[str, tuple[str, ValueRead | None]] = {}
    inside: set[int] = set()
    for node in ast.walk(syntax.expression(text.strip())):  # parents before children
        read = value_read(node, sets)
        if read is not None:
            assert isinstance(node, ast.Compare)
            inside.add(id(node.left))
            found[read_key(read)] = (read[0], read)
        elif isinstance(node, ast.Call) and id(node) not in inside and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Name):
                found[given_key(arg.id)] = (arg.id, None)
    return found
