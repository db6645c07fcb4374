"""Values a condition cannot tell apart, found in its text: what lets a whole-condition expansion
(`solver.engine.diagrams.Diagrams.rule`) branch once per class of values instead of once per value.

A field the condition reads only by comparing it with literals (`==`, `!=`, `in`, `not in` a
list or a named set, `<`, `<=`, `>`, `>=` an integer, or a boolean field alone) gives two values
the same answer in every comparison when neither is a literal it names and no integer it is
ordered against lies between them (or equals one), so those values lead to one sub-diagram:
`architecture in MEGAMOE_NO_FALLBACK_ARCHS or quantization == 'modelopt_fp4'` reads about 55 of
`architecture`'s 63 values as one, and an expansion that reached `quantization` through each of
them spent 55 times the steps of one (what took a folded MegaMoE budget rule past the expansion
budget, round 25).

A field compared with other fields, alone or in products (`max_running_requests * 4 <=
SGLANG_OPT_DEEPGEMM_MEGA_MOE_NUM_MAX_TOKENS_PER_RANK * dp_size`), is classed where the expansion
branches on it (`ValueClasses.at`): each such comparison is evaluated for each of its values with
the other fields the expansion already fixed, and over every combination of those it has not
reached yet; two values that answer alike everywhere (and alike to the literal comparisons) lead to
one sub-diagram, since the condition reads the field through these comparisons only. With the
budget and --dp-size fixed, the listed request counts fall in a few classes (within the budget,
past it) instead of one branch each. Where the combinations left are too many (`MAX_COMBINATIONS`)
the field goes value by value. Once every field compared with another is fixed, what the
condition still says is a key (`ValueClasses.residual`: the known fields' literal classes and each
comparison's answer), and branches with one key share one sub-diagram (the fields after the sizes,
the model's, were expanded again for each budget, size and --dp-size that answered alike).
Round 26: the SGLang pack listed 3 and 2 sizes for these two fields (0.5.23+28) to keep the
MegaMoE budget rules under tests/test_count_diagrams.py's expansion budget; now 12 each.

A field read any other way (`%`, asked about by `given()`) keeps one class per value; so does
every field of a condition without text (made in code: nothing to read) or whose text has a shape
this module does not know.

Imports the standard library, `solver.pack.expr` (the condition) and `solver.pack.marks`.
"""

from __future__ import annotations

import ast
import itertools
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from solver.pack import syntax
from solver.pack.expr import Condition
from solver.pack.marks import is_given_call

__all__ = ["MAX_COMBINATIONS", "ValueClasses", "value_classes"]

_LITERAL_OPS = (ast.Eq, ast.NotEq, ast.In, ast.NotIn)
_ORDER_OPS = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)
_ORDER: dict[type, Callable[[Any, Any], bool]] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}
_COMPARE: dict[type, Callable[[Any, Any], bool]] = {**_ORDER, ast.Eq: operator.eq, ast.NotEq: operator.ne}
# Comparisons evaluated to class one field's values at one branch (values x comparisons x
# combinations of the fields not fixed yet), past which the field is expanded value by value.
MAX_COMBINATIONS = 20_000

Term = Callable[[Mapping[str, Any]], Any]  # an operand's value, given the fields' values


class _Relation:
    """A comparison of fields (alone or multiplied, with integer literals) with each other:
    `test` evaluates it as the condition does (Python's operators on the values)."""

    def __init__(self, fields: set[str], test: Callable[[Mapping[str, Any]], bool]) -> None:
        self.fields = fields
        self.test = test


class ValueClasses:
    """A condition's value classes: per field, for each index of its domain, the first index of a
    value the condition cannot tell from it (itself when none), or None (value by value)."""

    def __init__(
        self,
        fixed: dict[str, tuple[int, ...]],
        signs: dict[str, list[Any]],
        relations: dict[str, list[_Relation]],
        domains: Mapping[str, Sequence[Any]],
        every_relation: Sequence[_Relation] = (),
    ) -> None:
        self.fixed = fixed  # fields whose classes do not depend on the others' values
        self._signs = signs  # fields read by relations: each value's answer to the literal comparisons
        self._relations = relations
        self._domains = domains
        self._seen: dict[tuple[str, tuple[Any, ...]], tuple[int, ...] | None] = {}
        # Evaluations of the condition's comparisons, in evaluations of the whole condition (each
        # evaluates a comparison at most once): what an expansion's budget meters besides its steps.
        self.evaluations = 0
        self._every = list(every_relation)
        self.related = frozenset(name for relation in self._every for name in relation.fields)
        self._literal: dict[str, dict[tuple[type, Any], Any]] = {}  # field -> value -> literal class
        for name, domain in domains.items():
            reps, marks = fixed.get(name), signs.get(name)
            self._literal[name] = {
                (type(v), v): reps[at] if reps else marks[at] if marks else at for at, v in enumerate(domain)
            }

    def residual(self, known: Mapping[str, Any]) -> tuple[Any, ...]:
        """What the condition still says once every field compared with another (`related`) is
        in `known`, as a key: two expansions with equal keys and the same fields known have one
        sub-diagram. It holds each known field's class by its comparisons with literals and each
        comparison of fields' answer: the condition is made of those comparisons, `given()`
        reads (their fields known by index) and comparisons of fields not known yet."""
        self.evaluations += 1
        literal = self._literal
        return (
            *(literal[name][type(value), value] for name, value in known.items()),
            *(relation.test(known) for relation in self._every),
        )

    def at(self, field: str, known: Mapping[str, Any]) -> tuple[int, ...] | None:
        """`field`'s classes where the expansion branches on it, `known` holding the values of
        the fields it has fixed."""
        relations = self._relations.get(field)
        if relations is None:
            return self.fixed.get(field)
        others = sorted({name for r in relations for name in r.fields} - {field})
        key = (field, tuple((type(known[n]), known[n]) if n in known else None for n in others))
        if key not in self._seen:
            self._seen[key] = self._classed(field, relations, others, known)
        return self._seen[key]

    def _classed(
        self, field: str, relations: list[_Relation], others: list[str], known: Mapping[str, Any]
    ) -> tuple[int, ...] | None:
        free = [name for name in others if name not in known]
        domain = self._domains[field]
        combinations = len(domain) * len(relations)
        for name in free:
            combinations *= len(self._domains[name])
        if combinations > MAX_COMBINATIONS:
            return None
        self.evaluations += combinations // len(relations)
        env = {name: known[name] for name in others if name in known}
        combos = itertools.product(*(self._domains[name] for name in free))
        rows = [dict(zip(free, row, strict=True)) for row in combos]
        seen: dict[Any, int] = {}
        reps: list[int] = []
        for at, value in enumerate(domain):
            env[field] = value
            answers = []
            for row in rows:
                env.update(row)
                answers += [r.test(env) for r in relations]
            reps.append(seen.setdefault((self._signs[field][at], tuple(answers)), at))
        return tuple(reps) if any(rep != at for at, rep in enumerate(reps)) else None


def value_classes(check: Condition, domains: Mapping[str, Sequence[Any]]) -> ValueClasses:
    """The classes of `check`'s fields (`ValueClasses.fixed` names those that never depend on
    the others' values and share a class)."""
    none = ValueClasses({}, {}, {}, domains)
    if not check.text:
        return none
    try:
        tree = syntax.expression(check.text).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return none
    fields = set(check.fields)
    if not fields <= {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}:
        return none  # a field the text does not show: the text is not the whole condition
    reads = _Reads(fields)
    if not reads.walk(tree):
        return none
    named: dict[str, set[tuple[type, Any]]] = {}
    for field, value in [*check.literals, *reads.written]:  # (the text's own, should a copy drop one)
        named.setdefault(field, set()).add((type(value), value))
    fixed: dict[str, tuple[int, ...]] = {}
    signs: dict[str, list[Any]] = {}
    for field in fields - reads.other:
        names, cuts = named.get(field, set()), sorted(reads.cuts.get(field, ()), key=str)
        seen: dict[Any, int] = {}
        marks: list[Any] = []
        for at, value in enumerate(domains[field]):
            if (type(value), value) in names:
                sign: Any = ("named", type(value), value)
            elif cuts and type(value) is not int:
                sign = ("unordered", at)  # (an int field's domain holds only ints; never merged)
            else:
                sign = tuple(_ORDER[op](value, cut) for op, cut in cuts)
            marks.append(sign)
        if field in reads.relations:
            signs[field] = marks
            continue
        reps = [seen.setdefault(sign, at) for at, sign in enumerate(marks)]
        if any(rep != at for at, rep in enumerate(reps)):
            fixed[field] = tuple(reps)
    relations = {name: reads.relations[name] for name in signs}
    every = list({id(r): r for rs in reads.relations.values() for r in rs}.values())
    return ValueClasses(fixed, signs, relations, domains, every)


class _Reads:
    """How a condition's text reads its fields: `other`, those read other than by comparing with
    literals or each other; `cuts`, how each field is ordered against integers (`size >= 4`:
    (GtE, 4)); `relations`, the comparisons of fields with each other that read each field."""

    def __init__(self, fields: set[str]) -> None:
        self.fields = fields
        self.other: set[str] = set()
        self.cuts: dict[str, set[tuple[type, int]]] = {}
        self.written: list[tuple[str, Any]] = []  # (field, a literal written beside it)
        self.relations: dict[str, list[_Relation]] = {}

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
                compared = isinstance(node, ast.Compare) and (
                    self._with_literals(node) or self._relation(node)
                )
                if not compared:
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

    def _relation(self, node: ast.Compare) -> bool:
        """`A op B`, `op` one of == != < <= > >= and each side a field, an integer or a product
        of them (`x * 4 <= budget * dp`): recorded for each field it reads."""
        if len(node.ops) != 1 or type(node.ops[0]) not in _COMPARE:
            return False
        left, right = _term(node.left, self.fields), _term(node.comparators[0], self.fields)
        if left is None or right is None:
            return False
        compare = _COMPARE[type(node.ops[0])]
        read = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        relation = _Relation(read, lambda env: compare(left(env), right(env)))
        for name in read:
            self.relations.setdefault(name, []).append(relation)
        return True


def _term(node: ast.expr, fields: set[str]) -> Term | None:
    """An operand's value as a function of the fields' values: a field, an integer literal or a
    product of them (as the condition language multiplies), else None."""
    if isinstance(node, ast.Name) and node.id in fields:
        name = node.id
        return lambda env: env[name]
    number = _integer(node)
    if number is not None:
        return lambda env: number
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        left, right = _term(node.left, fields), _term(node.right, fields)
        if left is None or right is None:
            return None
        return lambda env: left(env) * right(env)
    return None


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
