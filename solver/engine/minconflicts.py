"""Min-conflicts local search, for questions that are not a propagated `State`.

Lint asks for solutions of the pack with one rule left out and its negation added, and a walk
that may move any field of a broken rule finds those where `solver.engine.localsearch.repair`,
which re-decides a region with every other field fixed, does not (measured in solver/README.md's
one-home table). The one home of that walk (`solver.lint.oracle` calls it); it lived beside the
engine's other local searches in `solver.engine.localsearch` until that module reached the
600-line bound.
"""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from solver.engine.state import Constraint
from solver.model import Scalar

if TYPE_CHECKING:
    import random

__all__ = ["Place", "Predicate", "min_conflicts"]


Predicate = tuple[tuple[str, ...], Callable[[tuple[Scalar, ...]], bool]]
"""A check as the min-conflicts walk sees it: the fields it reads, and whether their values pass."""


def min_conflicts(
    domains: Mapping[str, Sequence[Scalar]],
    rules: Sequence[Predicate],
    tables: Sequence[Constraint],
    reading: Mapping[str, Sequence[int]],
    wanted: Collection[int] | None,
    extra: Sequence[Predicate],
    fixed: Mapping[str, Scalar],
    current: dict[str, Scalar],
    changed: Sequence[str],
    rng: random.Random,
    steps: int,
    moved: list[str] | None = None,
    places: dict[tuple[int, str], Place] | None = None,
) -> dict[str, Scalar] | None:
    """Min-conflicts local search from `current` (with `fixed` applied), a solution of every rule
    but where the `changed` fields moved: the rules in `wanted` (all when None) and the `extra`
    checks must hold. Changed in place; a solution or None. `rules`: each rule as a predicate
    and `tables` as its constraint, by index (made once by the caller: a list per walk was a
    pass over the pack per question); `reading`: the indices of the rules that read each field;
    `domains`: each field's values (those the rules' tables list). `moved`, when given,
    receives each field the walk sets (the only ones it changes).

    Checks are numbered: the rules by their index, the extras after them. Only the checks
    around a moved field are looked at, never the whole pack. `places`: each rule's position of
    a field and reader of its other fields' values, by (rule index, field), kept by the caller
    across walks over the same `rules` (`_place`).
    """
    if places is None:
        places = {}
    base = len(rules)
    # (Check `index` is `rules[index]`, or `extra[index - base]` past the rules: one list of both
    # was a copy of the pack's rules per walk, 3,000 at 1,000 synthetic fields, two per question.)
    extra_reading: dict[str, list[int]] = {}
    for offset, (names, _) in enumerate(extra):
        for name in names:
            extra_reading.setdefault(name, []).append(base + offset)

    arounds: dict[str, list[int]] = {}

    def around(name: str) -> list[int]:
        found = arounds.get(name)
        if found is None:
            mine = [j for j in reading.get(name, ()) if wanted is None or j in wanted]
            found = arounds[name] = mine + extra_reading.get(name, [])
        return found

    def fails(index: int) -> bool:
        names, holds = rules[index] if index < base else extra[index - base]
        return not holds(tuple([current[n] for n in names]))

    extra_cuts: dict[tuple[int, int, tuple[Scalar, ...]], frozenset[Scalar]] = {}

    def keeps(index: int, name: str) -> frozenset[Scalar]:
        """The values of `name` with which check `index` holds, its other fields as they are: a
        rule's from its table (`Constraint.allowed`, shared by every question on the pack)."""
        if index < base:
            place = places.get((index, name))
            if place is None:
                place = places[index, name] = _place(rules[index][0], name)
            at, read = place
            others = read(current)
            con = tables[index]
            found = con.cuts.get((at, others))
            return found if found is not None else con.allowed(at, others)
        names, holds = extra[index - base]
        at = names.index(name)
        others = tuple([current[n] for n in names if n != name])
        key = (index, at, others)
        found = extra_cuts.get(key)
        if found is None:
            found = extra_cuts[key] = _kept(holds, at, others, domains[name])
        return found

    bad = {j for name in changed for j in around(name) if fails(j)}
    bad |= {base + i for i in range(len(extra)) if fails(base + i)}
    for _ in range(steps):
        if not bad:
            return current
        chosen = rng.choice(sorted(bad))
        names = (rules[chosen] if chosen < base else extra[chosen - base])[0]
        free = [n for n in names if n not in fixed]
        if not free:
            break
        moves = _best_moves(free, bad, around, keeps, domains, current)
        if not moves:
            break
        # Mostly greedy; now and then a random move, so plateaus do not trap the search.
        if rng.random() > 0.1:
            name, value = rng.choice(moves)
        else:
            name = rng.choice(free)
            value = rng.choice(list(domains[name]))
        current[name] = value
        if moved is not None:
            moved.append(name)
        for j in around(name):
            if fails(j):
                bad.add(j)
            else:
                bad.discard(j)
    return current if not bad else None


def _best_moves(
    free: Sequence[str],
    bad: set[int],
    around: Callable[[str], list[int]],
    keeps: Callable[[int, str], frozenset[Scalar]],
    domains: Mapping[str, Sequence[Scalar]],
    current: Mapping[str, Scalar],
) -> list[tuple[str, Scalar]]:
    """`min_conflicts`' moves (a field of `free`, a new value) that leave the fewest checks
    failing, in field and domain order. A move's score is how many checks around its field fail
    with it, less how many fail now: each check's values that keep it are read once per field
    (a table lookup, `keeps`), not the check evaluated once per value. On the SGLang pack's lint
    the evaluations (4.8 million counted per value; 2.1 million stopping one past the best
    score kept) were 30 % of the time."""
    moves: list[tuple[str, Scalar]] = []
    best = 0
    for name in free:
        was = current[name]
        near = around(name)
        support: Counter[Scalar] = Counter()
        for j in near:
            support.update(keeps(j, name))
        worst = len(near) - sum(1 for j in near if j in bad)
        for value in domains[name]:
            if value == was:
                continue
            score = worst - support[value]
            if not moves or score < best:
                best, moves = score, [(name, value)]
            elif score == best:
                moves.append((name, value))
    return moves


Place = tuple[int, Callable[[Mapping[str, Scalar]], tuple[Scalar, ...]]]
"""A field's position in a rule, and the reader of the rule's other fields' values (a tuple)."""


def _place(names: tuple[str, ...], name: str) -> Place:
    """`name`'s position in `names` and a reader of the others' values as a tuple, in C: built
    per lookup (the position searched, the tuple made by a comprehension), it was most of a
    lookup's cost (SGLang's lint: 219,000 lookups)."""
    rest = [n for n in names if n != name]
    if len(rest) == 1:
        only = rest[0]
        return names.index(name), lambda current: (current[only],)
    return names.index(name), (operator.itemgetter(*rest) if rest else _nothing)


def _nothing(current: Mapping[str, Scalar]) -> tuple[()]:
    return ()


def _kept(
    holds: Callable[[tuple[Scalar, ...]], bool], at: int, others: tuple[Scalar, ...], values: Sequence[Scalar]
) -> frozenset[Scalar]:
    """The `values` at position `at` with which `holds` holds, the other positions `others`."""
    row: list[Any] = list(others)
    row.insert(at, None)
    ok = []
    for value in values:
        row[at] = value
        if holds(tuple(row)):
            ok.append(value)
    return frozenset(ok)
