"""Condition text into a `Condition` (`solver.pack.expr`): parsed with Python's `ast`, only a
whitelist of node kinds accepted, checked against the pack's fields and named sets, and compiled
by `solver.pack.codegen` (the language and its guarantees: `solver.pack.expr`).

A module of its own because it imports `ast` (~1.4 ms with its C module): a `confsolve check` of
a shipped pack reads every condition compiled from the prebuilt form and parses none, so it
never imports this module (`expr.parse` and the others import it at their first call).
Imports only the standard library, `solver.model` and `solver.pack`'s condition, codegen, syntax and
marks.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from solver.model import Field, Scalar, given_key, typed_key
from solver.pack import syntax
from solver.pack.codegen import Piece, Writer
from solver.pack.condition import MAX_DEPTH, MAX_LENGTH, Condition, ExprError, _Operand
from solver.pack.marks import is_given_call

__all__ = ["parse", "parse_node", "rule_conditions"]

_CMP = {
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.In: "in",
    ast.NotIn: "not in",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
}
_ORDER_OPS = {"<", "<=", ">", ">="}


# Derived views of the pack's own tuples (a domain, a named set), kept by identity: hashing a
# 1,000-value domain for every literal of every condition made a 28 KB pack load in 43 s. Each
# entry holds its tuple, so an id is never reused while its entry lives; cleared when full.
_BY_IDENTITY: dict[tuple[str, int], tuple[Any, Any]] = {}
_BY_IDENTITY_MAX = 8192


def _by_identity(kind: str, of: Any, build: Callable[[], Any]) -> Any:
    entry = _BY_IDENTITY.get((kind, id(of)))
    if entry is not None and entry[0] is of:
        return entry[1]
    if len(_BY_IDENTITY) >= _BY_IDENTITY_MAX:
        _BY_IDENTITY.clear()
    value = build()
    _BY_IDENTITY[(kind, id(of))] = (of, value)
    return value


def _members(domain: tuple[Scalar, ...]) -> frozenset[tuple[type, Scalar]]:
    """A domain as (type, value) pairs: membership that tells True from 1, in constant time
    (every literal of every condition is checked against its field's domain at load)."""
    result: frozenset[tuple[type, Scalar]] = _by_identity(
        "members", domain, lambda: frozenset((type(v), v) for v in domain)
    )
    return result


class _Compiler:
    def __init__(self, text: str, fields: Mapping[str, Field], sets: Mapping[str, Sequence[Scalar]]):
        self.text = text
        self.fields = fields
        self.sets = sets
        self.read: list[str] = []
        self.literals: list[tuple[str, Scalar]] = []
        self.given: list[str] = []
        self.out = Writer()

    def made(self, text: str, piece: Piece) -> Condition:
        """The condition `piece` describes, over what was read so far (a rule's `when` is
        compiled first: its fields, literals and constants are the first ones written)."""
        holds, partial = self.out.functions(piece)
        return Condition(
            text=text,
            fields=tuple(self.read),
            holds=holds,
            partial=partial,
            literals=tuple(dict.fromkeys(self.literals)),
            given=tuple(dict.fromkeys(self.given)),
        )

    # -- operands --------------------------------------------------------------------------
    def operand(self, node: ast.expr) -> _Operand:
        if isinstance(node, ast.Name):
            if node.id in self.fields:
                if node.id not in self.read:
                    self.read.append(node.id)
                return _Operand("field", name=node.id, display=node.id)
            if node.id in self.sets:
                named = self.sets[node.id]
                return _Operand(
                    "collection",
                    value=_by_identity("set", named, lambda: frozenset(named)),
                    display=node.id,
                    name=node.id,
                )
            raise ExprError(f"unknown name {node.id!r}: not a field or a named set")
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool | int | str) and node.value is not None:
                return _Operand("const", value=node.value, display=repr(node.value))
            raise ExprError(f"literal {node.value!r} is not a string, integer or boolean")
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            inner = node.operand
            if isinstance(inner, ast.Constant) and type(inner.value) is int:
                return _Operand("const", value=-inner.value, display=str(-inner.value))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            return self.product(node)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            return self.remainder(node)
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            values: list[Scalar] = []
            for elt in node.elts:
                item = self.operand(elt)
                if item.kind != "const":
                    raise ExprError("a list may hold only literals")
                values.append(item.value)
            return _Operand("collection", value=frozenset(values), display=repr(sorted(map(str, values))))
        raise ExprError(f"{type(node).__name__} is not allowed in a condition")

    def product(self, node: ast.BinOp) -> _Operand:
        """`a * b * 3`: integer fields and integer literals multiplied (sizes that must divide
        each other, such as a per-rank share, are written as products of powers of two)."""
        factors: list[str] = []
        const = 1
        stack: list[ast.expr] = [node]
        while stack:
            part = stack.pop()
            if isinstance(part, ast.BinOp) and isinstance(part.op, ast.Mult):
                if len(factors) + len(stack) > MAX_DEPTH:
                    raise ExprError(f"a product of more than {MAX_DEPTH} factors")
                stack += [part.right, part.left]
                continue
            item = self.operand(part)
            if item.kind == "field" and all(type(v) is int for v in self.fields[item.name].domain):
                factors.append(item.name)
            elif item.kind == "const" and type(item.value) is int:
                const *= item.value
            else:
                raise ExprError(
                    f"only integer fields and integer literals can be multiplied, "
                    f"not {item.display or item.kind}"
                )
        shown = " * ".join([*factors, *([str(const)] if const != 1 else [])])
        return _Operand("product", value=const, display=shown, factors=tuple(factors))

    def remainder(self, node: ast.BinOp) -> _Operand:
        """`a % b` (b a field or a positive integer literal), for divisibility: `tp_size % ep_size == 0`."""
        left, right = self.operand(node.left), self.operand(node.right)
        if left.kind != "field":
            raise ExprError(f"the left side of '%' must be a field, got {left.display}")
        for side in (left, right):
            if side.kind == "field" and not all(type(v) is int for v in self.fields[side.name].domain):
                raise ExprError(f"'%' needs integer fields ({side.name})")
        if right.kind == "const" and (type(right.value) is not int or right.value < 1):
            raise ExprError(f"'%' needs a positive integer divisor, got {right.display}")
        if right.kind == "collection":
            raise ExprError("'%' cannot take a list")
        return _Operand("remainder", name=left.name, value=right, display=f"{left.display} % {right.display}")

    def check_collection(self, field: str, right: _Operand, op: str) -> None:
        """Every literal of a list or named set is a value of `field`; a named set checked
        against a field once (a pack may use one set in hundreds of rules), its literals then
        recorded as the check recorded them (every parse names the same ones)."""
        domain = self.fields[field].domain
        checked: dict[int, Any] = _by_identity("checked", right.value, dict) if right.name else {}
        known = checked.get(id(domain))
        if known is not None and known[0] is domain:
            self.literals.extend(known[1])
            return
        start = len(self.literals)
        for value in sorted(right.value, key=str):
            self.check_literal(field, value, op)
        if right.name:
            # The domain held, so its id is not reused while the entry lives.
            checked[id(domain)] = (domain, tuple(self.literals[start:]))

    def check_literal(self, field: str, value: Scalar, op: str) -> None:
        domain = self.fields[field].domain
        if op in _ORDER_OPS:
            if type(value) is not int or not all(type(v) is int for v in domain):
                raise ExprError(f"{op!r} needs an integer field and an integer literal ({field})")
            return
        opened = self.fields[field].open
        if opened is not None and opened.admits(value):
            pass  # an open field's unlisted value: legal, and the query that pins it lists it
        elif (type(value), value) not in _members(domain):
            shown = ", ".join(map(repr, domain[:12])) + (" ..." if len(domain) > 12 else "")
            raise ExprError(f"{value!r} is not a value of {field} (domain: {shown})")
        self.literals.append((field, value))

    # -- conditions ------------------------------------------------------------------------
    def condition(self, node: ast.expr, depth: int = 0) -> Piece:
        if depth > MAX_DEPTH:
            raise ExprError(f"condition nested deeper than {MAX_DEPTH} levels")
        if isinstance(node, ast.BoolOp):
            parts = [self.condition(v, depth + 1) for v in node.values]
            return self.out.both(parts) if isinstance(node.op, ast.And) else self.out.either(parts)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return self.out.negate(self.condition(node.operand, depth + 1))
        if isinstance(node, ast.Compare) and is_given_call(node.left):
            return self.given_value(node)
        if isinstance(node, ast.Compare):
            pairs: list[Piece] = []
            left = node.left
            for op_node, right in zip(node.ops, node.comparators, strict=True):
                op = _CMP.get(type(op_node))
                if op is None:
                    raise ExprError(f"operator {type(op_node).__name__} is not allowed")
                pairs.append(self.compare(op, self.operand(left), self.operand(right)))
                left = right
            return self.out.both(pairs)
        if isinstance(node, ast.Name) and node.id in self.fields:
            operand = self.operand(node)
            if not all(type(v) is bool for v in self.fields[node.id].domain):
                raise ExprError(f"{node.id} is not a boolean field; compare it to a value")
            return self.compare("==", operand, _Operand("const", value=True))
        if isinstance(node, ast.Constant) and type(node.value) is bool:
            return self.out.constant(node.value)
        return self.given_leaf(node)

    def given_leaf(self, node: ast.expr) -> Piece:
        """`given(FIELD)`: the request gives FIELD (a `given_key` mark; `holds`: never; solver.pack.given)."""
        if isinstance(node, ast.Name) and node.id not in self.fields and node.id not in self.sets:
            # Named as an unknown name, so that a failed declaration's uses (a named condition
            # that read a failed field) are its cascade, and a typo gets a did-you-mean.
            raise ExprError(f"unknown name {node.id!r}: not a field, set or named condition")
        if not isinstance(node, ast.Call):
            raise ExprError(f"{type(node).__name__} is not allowed as a condition")
        name = self.given_name(node)
        self.given.append(name)
        return self.out.given(given_key(name))

    def given_name(self, node: ast.Call) -> str:
        """The FIELD of a well-formed `given(FIELD)` call."""
        name = node.args[0].id if len(node.args) == 1 and isinstance(node.args[0], ast.Name) else ""
        if getattr(node.func, "id", None) != "given" or node.keywords or name not in self.fields:
            # An undeclared FIELD is an unknown field, so a failed declaration's uses are its cascade.
            unknown = f"unknown field {name!r} in given(): " if name and name not in self.fields else ""
            raise ExprError(f"{unknown}the only call a condition may make is given(FIELD) of a field")
        return name

    def given_value(self, node: ast.Compare) -> Piece:
        """`given(FIELD) == VALUE`, `given(FIELD) in [VALUES]`: the request gives FIELD with one of
        these values as typed, before any adjustment replaces it (false when FIELD is not given).
        Like `given(FIELD)` a mark of the request, not a value of a configuration (`holds`: never;
        `partial`: the `typed_key` mark, else the field's own value; solver.pack.given answers it
        per request). Only `==` and `in`: `not (given(F) == V)` says the rest unambiguously."""
        assert isinstance(node.left, ast.Call)
        name = self.given_name(node.left)
        op = _CMP.get(type(node.ops[0])) if len(node.ops) == 1 else None
        if op not in ("==", "in"):
            raise ExprError(
                f"given({name}) compares only as given({name}) == VALUE or given({name}) in [VALUES] "
                f"(negate with not (...))"
            )
        right = node.comparators[0]
        if isinstance(right, ast.Name) and right.id in self.fields:
            raise ExprError(f"given({name}) compares with literals, not with the field {right.id}")
        item = self.operand(right)
        if op == "==" and item.kind != "const":
            raise ExprError(f"given({name}) == needs one literal; use 'in' for a list")
        if op == "in" and item.kind != "collection":
            raise ExprError(f"given({name}) in needs a list or a named set on the right")
        values = frozenset([item.value]) if op == "==" else item.value
        for value in sorted(values, key=str):
            self.check_typed(name, value)
        self.given.append(name)
        return self.out.given_value(given_key(name), typed_key(name), name, values)

    def check_typed(self, field: str, value: Scalar) -> None:
        """`value` is one the user can type for `field` (a literal of its domain, or of its open
        range); not recorded among the literals the configuration's values are compared with."""
        opened = self.fields[field].open
        if opened is not None and opened.admits(value):
            return
        if (type(value), value) not in _members(self.fields[field].domain):
            domain = self.fields[field].domain
            shown = ", ".join(map(repr, domain[:12])) + (" ..." if len(domain) > 12 else "")
            raise ExprError(f"{value!r} is not a value of {field} (domain: {shown})")

    def at(self, name: str) -> tuple[int, str]:
        """A field read, as the position of its value in `holds`' argument and its name."""
        return self.read.index(name), name

    def compare(self, op: str, left: _Operand, right: _Operand) -> Piece:
        if "product" in (left.kind, right.kind):
            return self.compare_products(op, left, right)
        if "remainder" in (left.kind, right.kind):
            if left.kind != "remainder":
                left, right = right, left
            if op not in ("==", "!=") or right.kind != "const" or type(right.value) is not int:
                raise ExprError(f"compare {left.display} with == or != and an integer")
            divisor = left.value
            by = self.at(divisor.name) if divisor.kind == "field" else divisor.value
            return self.out.remainder(op, self.at(left.name), by, right.value)
        if left.kind != "field" and right.kind == "field" and op in ("==", "!="):
            left, right = right, left
        if left.kind != "field":
            raise ExprError(f"the left side of {op!r} must be a field, got {left.display}")
        field = left.name
        if op in ("in", "not in"):
            if right.kind != "collection":
                raise ExprError(f"{op!r} needs a list or a named set on the right")
            self.check_collection(field, right, op)
        elif right.kind == "collection":
            raise ExprError(f"{op!r} cannot compare {field} with a list; use 'in'")
        elif right.kind == "const":
            self.check_literal(field, right.value, op)
        else:
            other = self.fields[right.name]
            mine = self.fields[field]
            if {type(v) for v in other.domain} != {type(v) for v in mine.domain}:
                raise ExprError(f"{field} and {right.name} have different value types")
            if op in _ORDER_OPS and not all(type(v) is int for v in mine.domain):
                raise ExprError(f"{op!r} needs integer fields ({field}, {right.name})")
        if right.kind == "field":
            return self.out.compare_fields(op, self.at(field), self.at(right.name))
        return self.out.compare(op, *self.at(field), right.value)

    def compare_products(self, op: str, left: _Operand, right: _Operand) -> Piece:
        if op in ("in", "not in"):
            raise ExprError(f"{op!r} cannot take a product; compare it with == or <")
        sides: list[tuple[list[tuple[int, str]], int]] = []
        for side in (left, right):
            if side.kind == "product":
                sides.append(([self.at(n) for n in side.factors], side.value))
            elif side.kind == "field" and all(type(v) is int for v in self.fields[side.name].domain):
                sides.append(([self.at(side.name)], 1))
            elif side.kind == "const" and type(side.value) is int:
                sides.append(([], side.value))
            else:
                raise ExprError(f"{side.display or side.kind} is not an integer to compare with a product")
        return self.out.products(op, sides)


def _parse_tree(text: str) -> ast.expr:
    if not isinstance(text, str) or not text.strip():
        raise ExprError("a condition must be a non-empty string")
    if len(text) > MAX_LENGTH:
        raise ExprError(f"condition longer than {MAX_LENGTH} characters in {text[:100]!r}...")
    source = text.strip()
    try:
        tree = syntax.expression(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise ExprError(f"not a valid condition ({exc.__class__.__name__}) in {_quote(text)}") from None
    if not source.isascii():
        _refuse_look_alikes(source, tree)
    return tree.body


def _refuse_look_alikes(source: str, tree: ast.AST) -> None:
    """Python folds identifiers to NFKC, so `𝐪𝐮𝐚𝐧𝐭` or `ｔp` would read the field `quant` or
    `tp`: a name must be written exactly as the field or set is declared."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            written = ast.get_source_segment(source, node)
            if written is not None and written != node.id:
                raise ExprError(
                    f"name {written!r} is not written in plain letters (it reads as "
                    f"{node.id!r}); write the field or set name exactly"
                )


def _quote(text: str, limit: int = 200) -> str:
    """The condition as the pack wrote it, quoted, its first `limit` characters when longer (not
    `ast.unparse`, which recurses once per level: under MAX_LENGTH, `- - - ... 1` nests hundreds)."""
    text = text.strip()
    return repr(text) if len(text) <= limit else repr(text[:limit]) + "..."


def parse(text: str, fields: Mapping[str, Field], sets: Mapping[str, Sequence[Scalar]]) -> Condition:
    """Parse and check one condition against the pack's fields and named sets."""
    return _build(text, [(text, _parse_tree(text))], fields, sets, "single")[0]


def parse_node(
    node: ast.expr, fields: Mapping[str, Field], sets: Mapping[str, Sequence[Scalar]]
) -> Condition:
    """One node of a condition the pack's loader has already parsed and checked (a leaf under
    `and` / `or` / `not`), compiled alone, without its text: turning it back into text with
    `ast.unparse` to parse it again would recurse once per level (see `_quote`)."""
    return _build("", [("", node)], fields, sets, "single")[0]


def rule_conditions(
    when: str | None,
    require: str | None,
    forbid: str | None,
    fields: Mapping[str, Field],
    sets: Mapping[str, Sequence[Scalar]],
) -> tuple[Condition, Condition | None]:
    """`rule_condition` and, when the rule has one, its `when` alone (as `parse(when)` gives it),
    from one parse: the `when` is compiled first, so it reads a prefix of the rule's fields."""
    body = require if require is not None else forbid
    if body is None:
        raise ExprError("a rule needs `require` or `forbid`")
    if require is not None and forbid is not None:
        raise ExprError("a rule has `require` or `forbid`, not both")
    trees = [(when, _parse_tree(when))] if when is not None else []
    trees.append((body, _parse_tree(body)))
    text = (f"not ({when}) or " if when else "") + (f"({body})" if require else f"not ({body})")
    made = _build(text, trees, fields, sets, "rule" if require is not None else "rule-forbid")
    return made[0], made[1]


def _build(
    text: str,
    trees: list[tuple[str, ast.expr]],
    fields: Mapping[str, Field],
    sets: Mapping[str, Sequence[Scalar]],
    shape: str,
) -> tuple[Condition, Condition | None]:
    """The condition of `trees` (one, or a rule's `when` and body) and, for a rule with a
    `when`, that `when` alone."""
    compiler = _Compiler(text, fields, sets)
    parts = []
    first: Condition | None = None
    for source, tree in trees:
        try:
            parts.append(compiler.condition(tree))
        except RecursionError:
            raise ExprError(f"condition nested deeper than {MAX_DEPTH} levels in {_quote(source)}") from None
        except ExprError as exc:
            raise ExprError(f"{exc} in {_quote(source)}") from None
        if len(trees) == 2 and first is None:
            first = compiler.made(source, parts[0])
    out = compiler.out
    if shape == "single":
        piece = parts[0]
    else:
        piece = out.negate(parts[-1]) if shape == "rule-forbid" else parts[-1]
        if len(parts) == 2:
            piece = out.either([out.negate(parts[0]), piece])
    return compiler.made(text, piece), first
