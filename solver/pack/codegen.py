"""A checked condition as two plain Python functions, from source this module writes.

The condition compiler (`solver.pack.expr`) walks a condition's tree, checked against the pack,
and describes it here piece by piece; each piece is a pair of Python expressions, one over `a`
(the values of the fields read, in order: `holds`) and one over `m` (a mapping of the known
values: `partial`, three-valued). No text of the pack ever enters the source: a field is `a[3]`
(its position, an integer of ours) or a parameter holding its name, every literal and named set
is a parameter (`h0`, `p1`, ...) whose value is bound as the parameter's default, and the
operators are the language's, chosen from our own table. What a source can say is therefore
fixed by the shape of the tree alone, so conditions written alike (a pack has hundreds) share
one code object, compiled once per process (`_CODE`: at a function's first call, or when its
shape is made a fourth time; `solver.pack.condcache` keeps them on disk); each condition is then
a function of that code with its own constants as defaults. The functions run with no builtins.

Why not a tree of closures (until December 2026): two closures per node, each with its cells and
their tuple, left ~40 garbage-collected objects per rule, 1.27 million at 5,000 fields, and a
full collection over them cost ~0.9 s of an explain. Now a condition is two functions and their
defaults. Imports only the standard library.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from types import CodeType, FunctionType
from typing import Any

Scalar = str | int | bool  # solver.model's (this module imports only the standard library)

__all__ = ["UNKNOWN", "Piece", "Writer", "compile_now", "restore", "state", "written"]

Piece = tuple[str, str]  # (the expression over `a` for holds, the one over `m` for partial)

# The operators of the language, as Python writes them (`exprparse._CMP` maps the parsed ones here).
_OPERATORS = frozenset({"==", "!=", "in", "not in", "<", "<=", ">", ">="})


class _Unknown:
    """The value of a field not decided yet (three-valued evaluation)."""

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Any = _Unknown()


def _remainder(x: int, y: int) -> int:
    # A divisor of 0 (a field whose domain lists 0) leaves x whole: `x % 0 == 0` only for x == 0.
    return x % y if y else x


# What generated code may name besides its parameters: nothing else, not even builtins.
_GLOBALS: dict[str, Any] = {"__builtins__": {}, "U": UNKNOWN, "rem": _remainder}

# Code objects by source; a source is a shape (no pack text), so this holds as many entries as
# the packs seen have shapes of conditions. Cleared when full, so a stream of packs with new
# shapes cannot grow it (code objects are not tracked by the garbage collector).
_CODE: dict[str, CodeType] = {}
_CODE_MAX = 16384


# How many functions of each shape not compiled yet were made. A shape is compiled when made
# the `_COMPILE_AT`-th time rather than at a first call: a stub and what it holds are two more
# tracked objects per function, and the shapes of a large pack are few (the 5,000-field
# synthetic pack's 60,000 functions have 40); the SGLang pack's rarer shapes (408 of its 471
# are made fewer than four times) wait for a call, which a `check` makes for about half.
_SEEN: dict[str, int] = {}
_COMPILE_AT = 4


def _code(source: str) -> CodeType:
    code = _CODE.get(source)
    if code is None:
        module = compile(source, "<condition>", "exec", dont_inherit=True)
        code = next(c for c in module.co_consts if isinstance(c, CodeType))
        if len(_CODE) >= _CODE_MAX:
            _CODE.clear()
        _CODE[source] = code
    return code


class Writer:
    """The source of one condition's `holds` and `partial`, written piece by piece."""

    def __init__(self) -> None:
        self.fast_consts: list[Any] = []
        self.tri_consts: list[Any] = []
        self.temps = 0

    def _fast(self, value: Any) -> str:
        self.fast_consts.append(value)
        return f"h{len(self.fast_consts) - 1}"

    def _tri(self, value: Any) -> str:
        self.tri_consts.append(value)
        return f"p{len(self.tri_consts) - 1}"

    def _temp(self) -> str:
        self.temps += 1
        return f"t{self.temps}"

    def _known(self, name: str) -> tuple[str, str]:
        """`(t := m.get(NAME, U)) is U` and `t`: the test that a field is not known yet."""
        temp = self._temp()
        return f"({temp} := m.get({self._tri(name)}, U)) is U", temp

    # -- leaves ----------------------------------------------------------------------------
    def compare(self, op: str, index: int, name: str, value: Any) -> Piece:
        """The field at `index` (named `name`) compared with a literal or collection `value`."""
        assert op in _OPERATORS
        unknown, x = self._known(name)
        return (
            f"(a[{index:d}] {op} {self._fast(value)})",
            f"(None if {unknown} else {x} {op} {self._tri(value)})",
        )

    def compare_fields(self, op: str, left: tuple[int, str], right: tuple[int, str]) -> Piece:
        assert op in _OPERATORS
        (i, first), (j, second) = left, right
        unknown_x, x = self._known(first)
        unknown_y, y = self._known(second)
        return (
            f"(a[{i:d}] {op} a[{j:d}])",
            f"(None if {unknown_x} or {unknown_y} else {x} {op} {y})",
        )

    def products(self, op: str, sides: Sequence[tuple[Sequence[tuple[int, str]], int]]) -> Piece:
        """`const * f * g op const * h`: each side its integer constant and fields (index, name)."""
        assert op in _OPERATORS
        fast: list[str] = []
        tri: list[str] = []
        unknown: list[str] = []
        for factors, const in sides:
            fast.append(" * ".join([self._fast(const), *(f"a[{i:d}]" for i, _ in factors)]))
            names = []
            for _, name in factors:
                test, temp = self._known(name)
                unknown.append(test)
                names.append(temp)
            tri.append(" * ".join([self._tri(const), *names]))
        known = f"None if {' or '.join(unknown)} else " if unknown else ""
        return f"(({fast[0]}) {op} ({fast[1]}))", f"({known}({tri[0]}) {op} ({tri[1]}))"

    def remainder(self, op: str, field: tuple[int, str], divisor: tuple[int, str] | int, value: int) -> Piece:
        """`FIELD % DIVISOR op value`, the divisor a field (index, name) or an integer."""
        assert op in _OPERATORS
        (i, name) = field
        unknown_x, x = self._known(name)
        if isinstance(divisor, tuple):
            unknown_y, y = self._known(divisor[1])
            fast_divisor, tests = f"a[{divisor[0]:d}]", f"{unknown_x} or {unknown_y}"
        else:
            fast_divisor, y, tests = self._fast(divisor), self._tri(divisor), unknown_x
        return (
            f"(rem(a[{i:d}], {fast_divisor}) {op} {self._fast(value)})",
            f"(None if {tests} else rem({x}, {y}) {op} {self._tri(value)})",
        )

    def given(self, key: str) -> Piece:
        """`given(FIELD)`: never in `holds`; in `partial`, whether the mapping marks `key` True."""
        return "False", f"(m.get({self._tri(key)}, False) is True)"

    def given_value(self, key: str, typed: str, name: str, values: frozenset[Scalar]) -> Piece:
        """`given(FIELD) in values`: never in `holds`; in `partial`, False unless the mapping marks
        `key` True, then whether the typed value (its `typed` entry, else the field's own value,
        which is the typed one unless an adjustment replaced it) is one of `values`."""
        temp = self._temp()
        seen = f"m.get({self._tri(typed)}, m.get({self._tri(name)}, U))"
        return "False", (
            f"(False if m.get({self._tri(key)}, False) is not True else "
            f"(None if ({temp} := {seen}) is U else {temp} in {self._tri(values)}))"
        )

    @staticmethod
    def constant(value: bool) -> Piece:
        word = "True" if value is True else "False"
        return word, word

    # -- connectives -----------------------------------------------------------------------
    def negate(self, piece: Piece) -> Piece:
        temp = self._temp()
        return f"(not {piece[0]})", f"(None if ({temp} := {piece[1]}) is None else not {temp})"

    def both(self, pieces: Sequence[Piece]) -> Piece:
        """Every piece holds; three-valued: False at the first False, else None if any is None."""
        return self._join(pieces, "and", "False", "True")

    def either(self, pieces: Sequence[Piece]) -> Piece:
        """Some piece holds; three-valued: True at the first True, else None if any is None."""
        return self._join(pieces, "or", "True", "False")

    def _join(self, pieces: Sequence[Piece], word: str, decisive: str, otherwise: str) -> Piece:
        if len(pieces) == 1:
            return pieces[0]
        temps = [self._temp() for _ in pieces]
        # Stop at the first decisive answer as the loop did; then None if any part was unknown.
        test = "is not" if word == "and" else "is"
        chain = f" {word} ".join(
            f"({t} := {p[1]}) {test} {decisive}" for t, p in zip(temps, pieces, strict=True)
        )
        if word == "and":
            chain = f"not ({chain})"
        undecided = " or ".join(f"{t} is None" for t in temps)
        fast = f" {word} ".join(p[0] for p in pieces)
        return f"({fast})", f"({decisive} if {chain} else (None if {undecided} else {otherwise}))"

    # -- the functions ---------------------------------------------------------------------
    def functions(
        self, piece: Piece
    ) -> tuple[Callable[[Sequence[Any]], bool], Callable[[Mapping[str, Any]], bool | None]]:
        """`holds(a)` and `partial(m)` of the condition `piece` describes, over the constants
        written so far (a piece written first, a rule's `when`, uses a prefix of them)."""
        return (
            _function("holds", "a", piece[0], tuple(self.fast_consts)),
            _function("partial", "m", piece[1], tuple(self.tri_consts)),
        )


def _function(name: str, arg: str, body: str, consts: tuple[Any, ...]) -> Any:
    """A function of `body`; compiled when first called if its shape is new to this process (a
    `check` calls 490 of the SGLang pack's 1,458 functions: the rules' `holds`, some `partial`s)."""
    params = "".join(f", {name[0]}{n}=None" for n in range(len(consts)))
    return restore(name, f"def {name}({arg}{params}):\n    return {body}\n", consts)


def restore(name: str, made: CodeType | str, consts: tuple[Any, ...]) -> Any:
    """The function `name` of code or of a source we generated (see `state`), with `consts`."""
    code = made if isinstance(made, CodeType) else _CODE.get(made)
    if code is None and isinstance(made, str):
        if len(_SEEN) >= _CODE_MAX:
            _SEEN.clear()
        seen = _SEEN[made] = _SEEN.get(made, 0) + 1
        if seen >= _COMPILE_AT:  # a common shape: compiled now, its functions need no stub
            code = _code(made)
    if code is not None:
        return FunctionType(code, _GLOBALS, name, consts or None)
    if not isinstance(made, str):
        raise TypeError("neither code nor a source")
    pending = _Pending(sys.intern(made), consts)
    pending.function = FunctionType(_FIRST_CALL, _GLOBALS, name, (pending,))
    pending.function.__qualname__ = name
    return pending.function


def state(function: Any) -> tuple[CodeType | str, tuple[Any, ...]]:
    """What `restore` makes `function` again from: its code, or its source while not compiled
    yet, and its constants."""
    if function.__code__ is _FIRST_CALL:
        pending: _Pending = function.__defaults__[0]
        return pending.source, pending.consts
    return function.__code__, function.__defaults__ or ()


def written(function: Any) -> tuple[str, tuple[Any, ...]]:
    """The source `function` was made of and its constants (what `solver.pack.prebuilt` writes
    into a shipped pack). Only for a function this process made from a source: its code is then
    pending or in `_CODE`; a LookupError otherwise (code read from a file, or evicted)."""
    made, consts = state(function)
    if isinstance(made, str):
        return made, consts
    for source, code in _CODE.items():
        if code is made:
            return source, consts
    raise LookupError("a condition's code whose source this process does not hold")


def compile_now(function: Any) -> None:
    """Compile `function` now if it waits for its first call."""
    if function.__code__ is _FIRST_CALL:
        function.__defaults__[0].install()


class _Pending:
    """A function not compiled yet: its source and constants, until its first call."""

    __slots__ = ("consts", "function", "source")

    def __init__(self, source: str, consts: tuple[Any, ...]) -> None:
        self.source, self.consts = source, consts
        self.function: Any = None

    def install(self) -> Any:
        # In place: whoever kept the function (a memo table, a search's list) now calls the
        # compiled code. Two threads may both get here; each puts in the same code.
        function = self.function
        function.__code__ = _code(self.source)
        function.__defaults__ = self.consts or None
        return function

    def run(self, x: Any) -> Any:
        return self.install()(x)


def _first_call(x: Any, pending: Any = None) -> Any:
    return pending.run(x)


_FIRST_CALL = _first_call.__code__
