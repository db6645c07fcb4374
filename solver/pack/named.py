"""The names a pack declares for reuse in its conditions: value sets and conditions.

`[sets]` NAME = [values] names a list of literals (`architecture in DEEPSEEK_FAMILY`).
`[conditions]` NAME = "condition" names a whole condition that several rules and preferences
share, so a launcher fact written once stays one text ("SGLang's --quantization holds mxfp8",
typed or copied from the checkpoint by a family override), not a clause copied into every rule
that reads it and mended in some copies only.

A named condition is expanded where it is read, once, when the pack loads: every rule and
preference then carries the condition it enforces in full, so everything downstream (the compiler,
the `given()` copies of a request, lint, the counter) reads plain conditions and knows nothing of
names. A named condition may read another; a cycle is a load error naming it. Names are
UPPER_CASE like sets, and may not be a field's or a set's name. Standard library only.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from solver import frozen
from solver.errors import Collector, PackProblem
from solver.model import Field, Preference, Rule, Scalar
from solver.pack.expr import MAX_LENGTH, ExprError, parse

__all__ = ["collect_conditions", "collect_sets", "expand_conditions", "expand_records"]

_UPPER_NAME = r"^[A-Z][A-Z0-9_]{0,127}$"  # (compiled where used: a pack read from its files)
# No recursion over the pack's data beyond this depth, and no expanded text longer than a
# condition may be (expr.MAX_LENGTH): a hostile pack gets a problem, not a hang.
MAX_NAMED_DEPTH = 16
Locate = Callable[[str, str], int | None]
_Record = TypeVar("_Record", Rule, Preference)


def collect_sets(
    table: Any,
    file: str,
    sets: dict[str, tuple[Scalar, ...]],
    problems: Collector[PackProblem],
    locate: Locate,
    broken: set[str],
) -> None:
    """`[sets]` of one file into `sets`; a malformed entry is a problem and its name `broken`
    (its uses elsewhere are a cascade, not problems of their own)."""

    def invalid(values: Any) -> str:
        literals = (
            isinstance(values, list) and values and all(isinstance(v, str | int | bool) for v in values)
        )
        return "" if literals else "must be a non-empty list of literals"

    found = _collect_named(
        table, file, ("set", "sets", "NAME = [values]"), invalid, sets, problems, locate, broken
    )
    sets.update((name, tuple(values)) for name, values in found.items())


def collect_conditions(
    table: Any,
    file: str,
    conditions: dict[str, tuple[str, str]],
    problems: Collector[PackProblem],
    locate: Locate,
    broken: set[str],
) -> None:
    """`[conditions]` of one file into `conditions` (name -> (text, file))."""

    def invalid(text: Any) -> str:
        return "" if isinstance(text, str) and text.strip() else "must be a non-empty condition string"

    kind = ("condition", "conditions", 'NAME = "condition"')
    found = _collect_named(table, file, kind, invalid, conditions, problems, locate, broken)
    conditions.update((name, (text, file)) for name, text in found.items())


def _collect_named(
    table: Any,
    file: str,
    kind: tuple[str, str, str],
    invalid: Callable[[Any], str],
    declared: Mapping[str, Any],
    problems: Collector[PackProblem],
    locate: Locate,
    broken: set[str],
) -> dict[str, Any]:
    """The entries of one file's `[sets]` or `[conditions]` (`kind`: what one is, the table,
    its shape) with an UPPER_CASE name not declared before and a value `invalid` accepts."""
    what, table_name, shape = kind
    if not isinstance(table, dict):
        problems.add(PackProblem(table_name, f"must be a table of {shape}", file))
        return {}
    found: dict[str, Any] = {}
    upper = re.compile(_UPPER_NAME)
    for name, value in table.items():
        if not upper.match(name):
            message = f"{what} names are UPPER_CASE"
        elif name in declared or name in found:
            message = "declared twice"
        else:
            message = invalid(value)
            if not message:
                found[name] = value
                continue
        problems.add(PackProblem(f"{what} {name}", message, file, locate(file, f"{what} {name}")))
        if message != "declared twice":
            broken.add(name)
    return found


def expand_conditions(
    conditions: Mapping[str, tuple[str, str]],
    fields: Mapping[str, Field],
    sets: Mapping[str, Sequence[Scalar]],
    problems: Collector[PackProblem],
    locate: Locate,
    broken: set[str],
) -> dict[str, str]:
    """Each named condition with the names it reads replaced by their conditions, checked as a
    condition of its own (so a wrong literal is reported at the name, not at every reader). A
    name that is also a field's or a set's, or a cycle, is a problem that names it."""
    taken = {**dict.fromkeys(sets, "set"), **dict.fromkeys(fields, "field")}
    texts = {name: text for name, (text, _) in conditions.items()}
    names = set(texts)
    done: dict[str, str] = {}

    def refuse(name: str, message: str) -> None:
        file = conditions[name][1]
        problems.add(PackProblem(f"condition {name}", message, file, locate(file, f"condition {name}")))
        broken.add(name)

    for name in conditions:
        if name in taken:
            refuse(name, f"is also the name of a {taken[name]}; give the condition another name")
    for name in conditions:
        if name in broken:
            continue
        try:
            _expand_name(name, texts, names, done, [], broken)
        except _Cycle as cycle:
            path = " -> ".join(cycle.path)
            refuse(cycle.path[0], f"reads itself through {path}; a named condition cannot read itself")
            broken.update(cycle.path)
            broken.add(name)
        except _Broken:
            broken.add(name)  # reads a broken name: a cascade, reported where that name is
        except _Refused as refused:
            refuse(name, str(refused))
    for name, text in done.items():
        if name not in broken:
            try:
                parse(text, fields, sets)
            except ExprError as exc:
                refuse(name, str(exc))
    return {name: text for name, text in done.items() if name not in broken}


class _Cycle(Exception):
    def __init__(self, path: list[str]) -> None:
        super().__init__(path)
        self.path = path


class _Broken(Exception):
    pass


class _Refused(Exception):
    """Expansion bounds: a hostile pack cannot make the loader recurse deeply or build huge texts."""


def _expand_name(
    name: str,
    texts: Mapping[str, str],
    names: set[str],
    done: dict[str, str],
    path: list[str],
    broken: set[str],
) -> str:
    """`name`'s condition fully expanded (memoised in `done`; `names`: the keys of `texts`).
    Raises `_Cycle` with the cycle's names, `_Broken` when it reads a name whose declaration
    failed, `_Refused` past MAX_NAMED_DEPTH or past a condition's length."""
    if name in done:
        return done[name]
    if name in broken:
        raise _Broken
    if name in path:
        raise _Cycle([*path[path.index(name) :], name])
    if len(path) >= MAX_NAMED_DEPTH:
        raise _Refused(f"named conditions read each other more than {MAX_NAMED_DEPTH} deep")
    path.append(name)
    expanded = _substitute(
        texts[name], names, lambda used: _expand_name(used, texts, names, done, path, broken)
    )
    if len(expanded) > MAX_LENGTH:
        raise _Refused(f"longer than {MAX_LENGTH} characters once the names it reads are expanded")
    path.pop()
    done[name] = expanded
    return expanded


def expand_records(
    records: list[_Record], expanded: Mapping[str, str], keys: tuple[str, ...]
) -> list[_Record]:
    """`records` with every named condition in their `keys` texts replaced by its condition."""
    if not expanded:
        return records
    names = set(expanded)
    out = []
    for record in records:
        changes: dict[str, Any] = {}
        for key in keys:
            text = getattr(record, key)
            if isinstance(text, str):
                new = _substitute(text, names, expanded.get)
                if new != text:
                    changes[key] = new
        out.append(frozen.replace(record, **changes) if changes else record)
    return out


def _substitute(text: str, names: set[str], condition_of: Callable[[str], str | None]) -> str:
    """`text` with each name token in `names` replaced by `(its condition)`. Only name tokens
    are replaced, never text inside a quoted literal; a text Python cannot tokenize is left as
    written for the condition parser to report."""
    if not any(name in text for name in names):
        return text
    if text.strip() in names:  # the whole condition is one name: no parentheses around it
        return condition_of(text.strip()) or text
    import tokenize  # (here: a start from the prebuilt form expands no named condition)

    starts = [0]
    for line in io.StringIO(text):
        starts.append(starts[-1] + len(line))
    pieces: list[str] = []
    at = 0
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type != tokenize.NAME or token.string not in names:
                continue
            replacement = condition_of(token.string)
            if replacement is None:
                continue
            begin = starts[token.start[0] - 1] + token.start[1]
            end = starts[token.end[0] - 1] + token.end[1]
            pieces += [text[at:begin], f"({replacement.strip()})"]
            at = end
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return text
    return "".join(pieces) + text[at:]
