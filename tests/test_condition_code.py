"""Conditions compiled to generated functions (solver/pack/codegen.py) answer as the language says.

`holds` is checked against Python's own evaluation of the condition text (the language is a
subset of Python's expressions; `given()` is false there), and `partial` against a three-valued
(Kleene) reading of the parsed tree written here, on random conditions over small domains: every
full assignment, and random partial ones with random `given` marks. Then what the generated code
may contain (no pack text), its sharing per shape, the compile on first call, and how few objects
the garbage collector has to visit per condition.
"""

from __future__ import annotations

import ast
import functools
import gc
import itertools
import random
from typing import Any

from solver.model import Field, given_key
from solver.pack import codegen
from solver.pack.expr import Condition, parse, rule_condition, rule_conditions

FIELDS = {
    "b1": Field(name="b1", kind="option", domain=(False, True)),
    "b2": Field(name="b2", kind="option", domain=(True, False)),
    "i1": Field(name="i1", kind="option", domain=(0, 1, 2, 4)),
    "i2": Field(name="i2", kind="option", domain=(1, 2, 4)),
    "i3": Field(name="i3", kind="option", domain=(4, 0, 2, 8)),
    "s1": Field(name="s1", kind="fact", domain=("x", "y", "z")),
}
SETS: dict[str, tuple[Any, ...]] = {"SMALL": (1, 2), "NAMES": ("x", "y")}

LEAVES = [
    "i1 == 2",
    "i1 != i2",
    "i1 < 4",
    "i1 >= i3",
    "2 == i3",
    "s1 in NAMES",
    "s1 not in ['x', 'z']",
    "i1 in SMALL",
    "i3 not in [0, 8]",
    "b1",
    "not b2",
    "b1 == b2",
    "i1 * i2 == 4",
    "i1 * 2 <= i3 * i2",
    "8 > i2 * i1 * 2",
    "i1 % 2 == 0",
    "i3 % i2 != 0",
    "i1 % 4 != 1",
    "i2 < i3 <= 4",
    "True",
    "False",
    "given(i1)",
    "given(s1)",
]


def _random_condition(rng: random.Random, depth: int = 0) -> str:
    roll = rng.random()
    if depth >= 4 or roll < 0.35:
        return rng.choice(LEAVES)
    if roll < 0.5:
        return f"not ({_random_condition(rng, depth + 1)})"
    word = "and" if roll < 0.75 else "or"
    parts = [_random_condition(rng, depth + 1) for _ in range(rng.randint(2, 4))]
    return f" {word} ".join(f"({p})" for p in parts)


def _python_value(text: str, values: dict[str, Any]) -> bool:
    """The condition as Python evaluates it (no `%` by 0 here: no divisor's domain holds 0)."""
    # Every field bound: one read only by `given(FIELD)` is not among the values passed.
    scope = {**dict.fromkeys(FIELDS), **values, **{k: frozenset(v) for k, v in SETS.items()}}
    scope["given"] = lambda _: False
    return bool(eval(_python_code(text), {"__builtins__": {}}, scope))


@functools.cache
def _python_code(text: str) -> Any:
    return compile(ast.parse(text.strip(), mode="eval"), "<test>", "eval")


def _kleene(node: ast.expr, known: dict[str, Any]) -> bool | None:
    """Three-valued reading of a parsed condition: None where unknown fields leave it open."""
    if isinstance(node, ast.BoolOp):
        answers = [_kleene(v, known) for v in node.values]
        decisive = isinstance(node.op, ast.Or)  # `or` is decided by a True, `and` by a False
        if decisive in answers:
            return decisive
        return None if None in answers else not decisive
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = _kleene(node.operand, known)
        return None if inner is None else not inner
    if isinstance(node, ast.Constant):
        return bool(node.value)
    if isinstance(node, ast.Call):
        return known.get(given_key(node.args[0].id), False) is True  # type: ignore[attr-defined]
    if isinstance(node, ast.Name):
        return None if node.id not in known else known[node.id] is True
    assert isinstance(node, ast.Compare)  # a chain `a < b <= c` is `a < b and b <= c`
    operands = [node.left, *node.comparators]
    pairs: list[bool | None] = []
    for op, left, right in zip(node.ops, operands, operands[1:], strict=False):
        pair = ast.Compare(left=left, ops=[op], comparators=[right])
        unknown = any(
            isinstance(n, ast.Name) and n.id in FIELDS and n.id not in known for n in ast.walk(pair)
        )
        pairs.append(None if unknown else _python_value(ast.unparse(pair), _values(known)))
    return False if False in pairs else None if None in pairs else True


def _values(known: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in known.items() if k in FIELDS}


def _kleene_rule(when: str | None, body: str, known: dict[str, Any], forbid: bool) -> bool | None:
    answer = _kleene(ast.parse(body, mode="eval").body, known)
    if forbid:
        answer = None if answer is None else not answer
    if when is None:
        return answer
    unless = _kleene(ast.parse(when, mode="eval").body, known)
    parts = [None if unless is None else not unless, answer]
    return True if True in parts else None if None in parts else False


def _check(cond: Condition, python: Any, kleene: Any, rng: random.Random) -> None:
    for values in itertools.product(*(FIELDS[f].domain for f in cond.fields)):
        full = dict(zip(cond.fields, values, strict=True))
        expected = python(full)  # with every field known (and no `given` marks) Kleene's too
        assert cond.holds(values) is expected and cond.partial(full) is expected, (cond.text, full)
    for _ in range(20):
        known: dict[str, Any] = {f: rng.choice(d.domain) for f, d in FIELDS.items() if rng.random() < 0.5}
        known.update({given_key(f): True for f in ("i1", "s1") if rng.random() < 0.3})
        assert cond.partial(known) is kleene(known), (cond.text, known)


def test_generated_conditions_answer_as_python_and_three_valued_logic_do() -> None:
    rng = random.Random(18)
    for _ in range(150):
        text = _random_condition(rng)
        tree = ast.parse(text, mode="eval").body
        cond = parse(text, FIELDS, SETS)
        _check(
            cond, lambda full, t=text: _python_value(t, full), lambda known, n=tree: _kleene(n, known), rng
        )


def test_a_rules_condition_and_its_when_from_one_parse() -> None:
    rng = random.Random(7)
    for _ in range(80):
        when = _random_condition(rng, 2) if rng.random() < 0.8 else None
        body = _random_condition(rng, 2)
        forbid = rng.random() < 0.4
        rule, alone = rule_conditions(when, None if forbid else body, body if forbid else None, FIELDS, SETS)
        again = rule_condition(when, None if forbid else body, body if forbid else None, FIELDS, SETS)
        assert (rule.text, rule.fields, rule.given) == (again.text, again.fields, again.given)

        def python(full: dict[str, Any], w: str | None = when, b: str = body, f: bool = forbid) -> bool:
            return (w is not None and not _python_value(w, full)) or (_python_value(b, full) is not f)

        _check(rule, python, lambda known, w=when, b=body, f=forbid: _kleene_rule(w, b, known, f), rng)
        if when is None:
            assert alone is None
            continue
        assert alone is not None
        separate = parse(when, FIELDS, SETS)
        assert (alone.text, alone.fields, alone.given) == (separate.text, separate.fields, separate.given)
        assert rule.fields[: len(alone.fields)] == alone.fields
        tree = ast.parse(when, mode="eval").body
        _check(
            alone, lambda full, w=when: _python_value(w, full), lambda known, n=tree: _kleene(n, known), rng
        )


def test_a_condition_parsed_again_names_the_same_literals() -> None:
    """A named set is checked against a field's domain once per process; every parse still
    names its literals (`Condition.literals`, which the kept and prebuilt forms record)."""
    sets = {"NAMES": tuple(["x", "y"]), "SMALL": tuple([1, 2])}  # new objects: not checked yet
    text = "s1 in NAMES and i1 not in SMALL"
    first, again = parse(text, FIELDS, sets), parse(text, FIELDS, sets)
    assert first.literals == again.literals == (("s1", "x"), ("s1", "y"), ("i1", 1), ("i1", 2))


def test_no_text_of_the_pack_enters_the_generated_source() -> None:
    hostile = "x'); __import__('os').system('echo owned'); ('"
    fields = {
        "s": Field(name="s", kind="option", domain=(hostile, "b")),
        "n": Field(name="n", kind="option", domain=(1, 2)),
    }
    codegen._CODE.clear()
    codegen._SEEN.clear()
    cond = parse(f"s == {hostile!r} or n * 2 == 4 or s in EVIL", fields, {"EVIL": (hostile,)})
    assert cond.holds((hostile, 1)) is True and cond.holds(("b", 1)) is False and cond.holds(("b", 2))
    assert cond.partial({"s": "b"}) is None and cond.partial({"s": hostile}) is True
    # This condition's two functions, compiled on their first call. (Not `len(_CODE) == 2`: a
    # thread an earlier test left in this process, a page's prefetch, may compile its own.)
    sources = [codegen.written(cond.holds)[0], codegen.written(cond.partial)[0]]
    assert len(set(sources)) == 2 and all(s in codegen._CODE for s in sources)
    for source in [*sources, *codegen._CODE]:
        assert "owned" not in source and "EVIL" not in source and "'s'" not in source, source
        assert "__import__" not in source


def test_conditions_of_one_shape_share_code_compiled_on_first_call() -> None:
    codegen._CODE.clear()
    codegen._SEEN.clear()
    first = parse("i1 == 2 and s1 in NAMES", FIELDS, SETS)
    second = parse("i3 == 4 and s1 in ['z']", FIELDS, SETS)
    assert not codegen._CODE  # nothing compiled before a call
    assert first.holds((2, "x")) is True and len(codegen._CODE) == 1
    assert second.holds((4, "z")) is True and second.holds((4, "x")) is False
    assert second.holds.__code__ is first.holds.__code__ and len(codegen._CODE) == 1
    assert second.partial({"i3": 0}) is False and first.partial({"s1": "z"}) is False
    assert second.partial.__code__ is first.partial.__code__ and len(codegen._CODE) == 2
    third = parse("i1 == 1 and s1 in NAMES", FIELDS, SETS)  # a known shape: compiled at once
    assert third.holds.__code__ is first.holds.__code__ and third.holds((1, "y")) is True
    codegen._CODE.clear()
    made = [parse(f"i3 == {v} or i2 == 1", FIELDS, SETS) for v in (0, 2, 4, 8)]
    assert len(codegen._CODE) == 2  # the fourth of a shape compiles it (both functions)
    assert made[3].holds.__code__ is codegen._CODE[next(iter(codegen._CODE))]
    assert made[0].holds((0, 2)) is True and made[0].holds.__code__ is made[3].holds.__code__


def test_a_compiled_condition_leaves_few_objects_for_the_garbage_collector() -> None:
    """A tree of closures left ~40 tracked objects per rule (cells, their tuples, functions);
    two functions and their constants leave a handful, called or not."""
    rng = random.Random(3)
    texts = [(_random_condition(rng, 1), _random_condition(rng, 2)) for _ in range(400)]
    gc.collect()
    # The objects the conditions hold, not every object made meanwhile: a thread an earlier test
    # of this worker left (a page's prefetch) may be allocating too (17.8 per condition once, in
    # a full run). The earlier objects are kept alive so that no new one can take an old id
    # (alone, the two counts agree: 7.19 and 7.25 per condition).
    earlier = gc.get_objects()
    old = {id(o) for o in earlier}
    made = [rule_condition(when, body, None, FIELDS, SETS) for when, body in texts]
    for cond in made[::2]:
        cond.partial({})
        cond.holds(tuple(FIELDS[f].domain[0] for f in cond.fields))
    gc.collect()
    tracked = {id(o) for o in gc.get_objects()} - old
    held = {id(cond) for cond in made} & tracked
    todo: list[Any] = list(made)
    while todo:
        for ref in gc.get_referents(todo.pop()):
            if id(ref) in tracked and id(ref) not in held:
                held.add(id(ref))
                todo.append(ref)
    per_condition = len(held) / len(made)
    assert per_condition <= 8, per_condition
    del earlier
