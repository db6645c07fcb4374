"""Small value moves for lint's questions: the cases that make a condition true whatever its other
fields hold (`condition_cases`, `solver.lint.rings.by_cases`), and the nearest change of one or two
fields that makes a condition hold (`nearest_change`, `PackOracle.repair`), a known solution with
one field changed so that a rule breaks and no other does (`OneChange`), a solution of a few
conditions alone over a small product of their fields' values (`small_solution`), a search's
value order from a known solution (`known_first`) and whether a known solution keeps some pins
and conditions (`satisfies`).

Imports only the standard library and `solver.values`.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from solver.values import same

if TYPE_CHECKING:
    from solver.engine.csp import CompiledPack
    from solver.model import Scalar
    from solver.pack.expr import Condition

MAX_CASES = 16
CASE_EVALUATIONS = 4000
NEAREST_PAIRS = 2000
SMALL_PRODUCT = 4096


def condition_cases(
    check: Condition, pins: Mapping[str, Scalar], domains: Mapping[str, Sequence[Scalar]]
) -> list[dict[str, Scalar]]:
    """Up to `MAX_CASES` assignments of one or two of the check's unpinned fields under which
    its three-valued form says it holds whatever the rest are (none when it has no such form).
    A value that already decides the check false is not paired with anything."""
    if not check.three_valued:
        return []
    partial = check.partial
    found: list[dict[str, Scalar]] = []
    open_: dict[str, list[Scalar]] = {}  # values that leave the check undecided
    for name in (n for n in check.fields if n not in pins):
        for value in domains[name]:
            verdict = partial({**pins, name: value})
            if verdict is True:
                found.append({name: value})
            elif verdict is None:
                open_.setdefault(name, []).append(value)
    evaluations = 0
    for first, second in itertools.combinations(open_, 2):
        for value, other in itertools.product(open_[first], open_[second]):
            if len(found) >= MAX_CASES or evaluations >= CASE_EVALUATIONS:
                return found[:MAX_CASES]
            evaluations += 1
            if partial({**pins, first: value, second: other}) is True:
                found.append({first: value, second: other})
    return found[:MAX_CASES]


def nearest_change(
    check: Condition,
    current: Mapping[str, Scalar],
    fixed: Mapping[str, Scalar],
    domains: Mapping[str, Sequence[Scalar]],
) -> dict[str, Scalar] | None:
    """Values for one or two of the check's free fields that make it hold, or None."""
    free = [n for n in check.fields if n not in fixed]
    trial = dict(current)

    def holds() -> bool:
        return bool(check.holds(tuple(trial[n] for n in check.fields)))

    for name in free:
        for value in domains[name]:
            trial[name] = value
            if holds():
                return {name: value}
        trial[name] = current[name]
    pairs = list(itertools.combinations(free, 2))
    if sum(len(domains[a]) * len(domains[b]) for a, b in pairs) > NEAREST_PAIRS:
        return None
    for first, second in pairs:
        for value in domains[first]:
            trial[first] = value
            for other in domains[second]:
                trial[second] = other
                if holds():
                    return {first: value, second: other}
        trial[first], trial[second] = current[first], current[second]
    return None


def small_solution(
    conditions: Sequence[Condition],
    pins: Mapping[str, Scalar],
    domains: Mapping[str, Sequence[Scalar]],
    cells: int = SMALL_PRODUCT,
) -> tuple[bool, dict[str, Scalar] | None]:
    """(True, a solution of `conditions` with `pins` over their fields and the pinned ones, or
    None when there is none) when the conditions' unpinned fields have at most `cells` value
    combinations, tried in turn; (False, None) when there are more (nothing decided).

    A question about a rule's own fields (is it constant, does one condition imply another) is
    a product of a few small domains: trying it costs less than building a counter for it (lint
    asks it about every rule: 6,300 times at 1,000 synthetic fields)."""
    names = list(dict.fromkeys([*pins, *(n for c in conditions for n in c.fields)]))
    choices = []
    size = 1
    for name in names:
        values = [v for v in domains[name] if name not in pins or same(v, pins[name])]
        size *= len(values)
        if size > cells:
            return False, None
        choices.append(values)
    if len(conditions) == 1 and tuple(names) == conditions[0].fields:
        # One condition over exactly these fields (every question lint asks here: is a rule
        # constant, does one condition imply another): each row is its own tuple, filtered in C
        # (the same first row; synthetic 1,000: 6,600 questions, ~210 rows each).
        row = next(filter(conditions[0].holds, itertools.product(*choices)), None)
        return True, None if row is None else dict(zip(names, row, strict=True))
    checks = [(c.holds, [names.index(n) for n in c.fields]) for c in conditions]
    for row in itertools.product(*choices):
        if all(holds(tuple([row[i] for i in at])) for holds, at in checks):
            return True, dict(zip(names, row, strict=True))
    return True, None


class OneChange:
    """Known solutions with one field of a rule changed so that the rule breaks, every other hard
    rule holds and a wanted condition holds (`find`), with each rule's table of a field's allowed
    values and its answers kept for the whole lint.

    A table's answer depends on the rule, the field and the values of the rule's other fields
    only, never on the question: kept per question, each question made a table for every rule
    reading each of its rule's fields (most never read: the scan stops once no value is left)
    and asked again what an earlier question had (SGLang: 105,000 tables over 572 questions)."""

    def __init__(self, cp: CompiledPack) -> None:
        self.cp = cp
        self._reading: dict[str, Reading] = {}  # (`reading`)
        self._breaking: dict[tuple[str, str], dict[Any, frozenset[Scalar]]] = {}
        self._full = {n: frozenset(d) for n, d in cp.domains.items()}

    def reading(self, name: str) -> Reading:
        """The hard rules reading `name`: each with its table for the field, the tables by rule,
        and each as (id, fields, holds) for a candidate's check (made when first asked, kept:
        made per question, they were most of a question answered by one of the latest solutions,
        synthetic 1,000's 3,530)."""
        found = self._reading.get(name)
        if found is None:
            rules = self.cp.rules_reading(name)
            tables = [(r, _table(self.cp, r, name)) for r in rules]
            checks = [(r, self.cp.rules[r].fields, self.cp.rules[r].holds) for r in rules]
            found = self._reading[name] = (tables, dict(tables), checks)
        return found

    def find(
        self, known: Iterable[Mapping[str, Scalar]], rule_id: str, wanted: Condition
    ) -> dict[str, Scalar] | None:
        """One of the `known` solutions with one field of `rule_id` changed to a value that breaks
        the rule, keeps every other hard rule and makes `wanted` hold; None proves nothing.

        Sound: a known solution keeps every rule, so only the rules reading the changed field can
        break, and the answer is checked on them and on `wanted`. The values come from the
        engine's tables (`Constraint.allowed`: set lookups, no search)."""
        cp = self.cp
        warn = cp.warn_rules.get(rule_id)
        fields = warn.fields if warn is not None else cp.rules[rule_id].fields
        domains = cp.domains
        wanted_fields, wanted_holds = wanted.fields, wanted.holds
        # Per field: the rule's own table (a hard rule), every hard rule's table and check (the
        # rule's own passed over: `rule_id`).
        plan = []
        for name in fields:
            tables, by_rule, checks = self.reading(name)
            own = by_rule.get(rule_id)
            breaking = None if own is None else self._breaking.setdefault((rule_id, name), {})
            plan.append((name, own, breaking, tables, checks, self._full[name]))
        for solution in known:
            for at, (name, own, breaking, tables, checks, full) in enumerate(plan):
                # The values that break the rule, then those every other rule reading the field
                # allows here (set operations, the rules in turn until none is left).
                if own is not None and breaking is not None:
                    allowed, pos, read, single, _ = own
                    key = read(solution)
                    left = breaking.get(key)
                    if left is None:
                        left = breaking[key] = full - allowed(pos, (key,) if single else key)
                else:
                    assert warn is not None
                    row = [solution[n] for n in fields]
                    left = frozenset(
                        v for v in domains[name] if not warn.holds((*row[:at], v, *row[at + 1 :]))
                    )
                for rule, (allowed, pos, read, single, seen) in tables:
                    if not left:
                        break
                    if rule == rule_id:
                        continue
                    key = read(solution)
                    kept = seen.get(key)
                    if kept is None:
                        kept = seen[key] = allowed(pos, (key,) if single else key)
                    left = left & kept
                if not left:
                    continue
                for value in domains[name]:
                    if value not in left:
                        continue
                    # (Checked on the solution as read, the one field replaced: a copy of the
                    # solution per candidate was most of a question at 1,000 synthetic fields.)
                    if all(
                        holds(tuple([value if f == name else solution[f] for f in names]))
                        for rule, names, holds in checks
                        if rule != rule_id
                    ) and wanted_holds(tuple([value if f == name else solution[f] for f in wanted_fields])):
                        return {**solution, name: value}
        return None


Reader = Callable[[Mapping[str, "Scalar"]], Any]
Table = tuple[Callable[..., frozenset["Scalar"]], int, Reader, bool, dict[Any, frozenset["Scalar"]]]
Reading = tuple[
    list[tuple[str, Table]],
    dict[str, Table],
    list[tuple[str, tuple[str, ...], Callable[[tuple["Scalar", ...]], bool]]],
]


def _table(cp: CompiledPack, rule_id: str, name: str) -> Table:
    """A rule's table of the values of `name` it allows, the field's position in the rule, a
    reader of the rule's other fields' values (a tuple, one value when there is one), whether
    there is one, and a memo of the table's answers by those values."""
    con = cp.constraints[rule_id]
    rest = [f for f in con.fields if f != name]
    read: Reader = operator.itemgetter(*rest) if rest else _nothing
    return con.allowed, con.fields.index(name), read, len(rest) == 1, {}


def _nothing(solution: Mapping[str, Scalar]) -> tuple[()]:
    return ()


def known_first(known: Mapping[str, Scalar]) -> Callable[[str, tuple[Scalar, ...]], Sequence[Scalar]]:
    """A search's value order: each field's value in the `known` solution first."""

    def rank(name: str, values: tuple[Scalar, ...]) -> Sequence[Scalar]:
        # The known value's place found in C (`tuple.index`, the first equal one), a `same` per
        # value only past an equal one of another type (`True` and `1`): a counter's search
        # ranks every field it meets (synthetic 1,000: ~290,000 over the lint).
        first = known[name]
        try:
            at = values.index(first)
        except ValueError:
            return values
        if not same(values[at], first):
            at = next((i for i in range(at + 1, len(values)) if same(values[i], first)), -1)
            if at < 0:
                return values
        return values if at == 0 else (values[at], *values[:at], *values[at + 1 :])

    return rank


def satisfies(
    solution: Mapping[str, Scalar], pins: Mapping[str, Scalar], conditions: Sequence[Condition]
) -> bool:
    """Whether `solution` keeps `pins` and satisfies `conditions`: then it answers a QuickXplain
    question about them without a search."""
    if not all(same(solution[n], v) for n, v in pins.items()):
        return False
    return all(c.holds(tuple([solution[f] for f in c.fields])) for c in conditions)
