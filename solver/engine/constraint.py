"""A condition as the engine uses it (`Constraint`): the predicate with its remembered answers,
its allowed values per question and its python-constraint object, and the two helpers every
holder of one needs (`memoized` answers, `picker` for the values it reads). Knows no pack and no
state: the compiled pack (`solver.engine.csp`) builds these, `solver.engine.state` propagates them.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from operator import itemgetter
from typing import Any

from solver.bounded import Memo
from solver.frozen import Mutable, field, mutable_type
from solver.model import Scalar
from solver.pack.expr import Condition

__all__ = [
    "MEMO_LIMIT",
    "PROJECTED_COMBINATIONS",
    "Constraint",
    "ResidueCheck",
    "RuleConstraint",
    "memoized",
    "picker",
    "projected",
    "supported",
]

# The bound of a query's own answer tables (a pack's rules share the compiled pack's `Memo`).
MEMO_LIMIT = 1 << 16


# What arc consistency needs of a constraint: its check, a name for it that stays valid as long
# as the residue table it goes with, and that table (the last support found per value, so a
# revision tries it first). Not a predicate type: the predicate is the constraint's `Condition`.
ResidueCheck = tuple[Callable[[tuple[Scalar, ...]], bool], str, dict[Any, tuple[Scalar, ...]]]


@mutable_type
class Constraint(Mutable):
    """A `Condition` as the engine uses it: a rule of the pack (`key`: its id) or a query's own
    condition, with the engine's tables for it. Not a second predicate type: the predicate is
    `condition`, and `fields` and `holds` are its fields and its remembered answers (read on
    every step of propagation, so kept here rather than looked up through it)."""

    key: str
    condition: Condition
    holds: Callable[[tuple[Scalar, ...]], bool]
    """`condition.holds`, remembered (`memoized`)."""
    constraint: Any
    """The python-constraint object the backtracking search is given (`LazyConstraint`)."""
    full: tuple[tuple[Scalar, ...], ...] = ()
    """Each field's whole domain (in the pack's order)."""
    cuts: dict[tuple[int, tuple[Scalar, ...]], frozenset[Scalar]] = field(default_factory=dict)
    """For one free field (by position) and the values of the others: the values that satisfy
    the constraint. Forward checking asks the same few questions again and again, within a
    query and across queries, and a set lookup per value is cheaper than evaluating it."""
    memo: Memo | None = None
    """The compiled pack's shared entry budget, for a rule of the pack (then `cuts` and
    `projections` are its tables); None for a query's own condition (tables die with it)."""
    projections: dict[Any, Any] = field(default_factory=dict)
    """`projected`'s answers, by the fields left free and every field's
    domain: a page's questions project the same rules over the same facts' domains, for its pack
    and for each typed copy (whose rules over facts are mostly the pack's own constraints)."""
    fields: tuple[str, ...] = field(init=False)
    pick: Callable[[Mapping[str, Scalar]], tuple[Scalar, ...]] = field(init=False, repr=False)
    """The values of `fields` in an assignment, as the tuple `holds` takes (`picker`)."""

    def __post_init__(self) -> None:
        self.fields = self.condition.fields
        self.pick = picker(self.fields)

    def allowed(self, at: int, others: tuple[Scalar, ...]) -> frozenset[Scalar]:
        key = (at, others)
        found = self.cuts.get(key)
        if found is None:
            base: list[Any] = list(others)
            base.insert(at, None)
            # The condition itself, not the remembered `holds`: this answer is remembered whole,
            # and each of its value tuples kept as well was ~10 table entries per new answer
            # (115,000 of a choices call's 130,000 at 5,000 synthetic fields).
            holds = self.condition.holds
            ok = []
            for value in self.full[at]:
                base[at] = value
                if holds(tuple(base)):
                    ok.append(value)
            found = frozenset(ok)
            self.keep(self.cuts, key, found)
        return found

    def keep(self, table: dict[Any, Any], key: Any, value: Any) -> None:
        """`table[key] = value` for one of this constraint's tables: under the compiled pack's
        entry budget for a rule of the pack, else up to a bound of its own."""
        if self.memo is not None:
            self.memo.store(table, key, value)
        elif len(table) < _CUT_LIMIT:
            table[key] = value


_CUT_LIMIT = 4096

RuleConstraint = Constraint
"""The same class, under the name callers outside the engine use for a pack's rule."""


def picker(fields: tuple[str, ...]) -> Callable[[Mapping[str, Scalar]], tuple[Scalar, ...]]:
    """The values of `fields` in a mapping, as a tuple: one call in C (`itemgetter`) where a
    tuple of a list comprehension was ~1 us per rule checked (a resolution's first search checks
    every open rule against its guess: ~400 rules)."""
    if len(fields) > 1:
        return itemgetter(*fields)
    if fields:
        only = fields[0]
        return lambda values: (values[only],)
    return lambda values: ()


def memoized(
    holds: Callable[[tuple[Scalar, ...]], bool], memo: Memo | None = None
) -> Callable[[tuple[Scalar, ...]], bool]:
    """`holds` with its answers remembered per value tuple: for a rule of the pack, in a table
    of the pack's `memo` (bounded with all the others); for a query's condition, in its own.

    Evaluating a condition walks a tree of closures (microseconds); searches and arc consistency
    ask the same few tuples again and again, within a query and across queries, and a rule is a
    pure function of its fields' values, so a dict lookup can answer. Concurrent queries at worst
    compute an entry twice.
    """
    table: dict[tuple[Scalar, ...], bool] = {} if memo is None else memo.table()
    get = table.get

    def check(values: tuple[Scalar, ...]) -> bool:
        known = get(values)
        if known is None:
            known = bool(holds(values))
            if memo is not None:
                memo.store(table, values, known)
            elif len(table) < MEMO_LIMIT:
                table[values] = known
        return known

    return check


# The most combinations of a rule's open fields `projected` tries by default (derived traits are
# booleans: a rule over a handful of them is a few dozen).
PROJECTED_COMBINATIONS = 256


def projected(
    con: Constraint,
    free: Sequence[str],
    domains: Mapping[str, Sequence[Scalar]],
    limit: int = PROJECTED_COMBINATIONS,
) -> dict[str, frozenset[Scalar]] | None:
    """Each of `free` (some of `con`'s fields) with the values of its domain that some
    combination of the free fields' values satisfying `con` has, the rule's other fields at the
    first value of their `domains`; None past `limit` combinations. What a rule alone says of
    the fields it leaves open (`solver.reasoning.plan.facts_narrowed`, `forcing.facts_force`,
    and each step of a conflict's "Because ..." chain, `solver.render.steps`).

    Remembered in the constraint's `projections` (shared by the pack's family: a typed copy's
    rules over facts are mostly its pack's constraints), by `free` and its fields' domains: a
    one-fact choices question projected the same 46 rules three times (its pack's listing and
    two typed copies'), ~20 ms of its ~60."""
    if math.prod(len(domains[f]) for f in free) > limit:
        return None
    key = (tuple(free), tuple([tuple(domains[f]) for f in con.fields]))
    table = con.projections
    found = table.get(key, _UNPROJECTED)
    if found is _UNPROJECTED:
        found = _projected(con, free, domains)
        con.keep(table, key, found)
    return found  # type: ignore[no-any-return]


_UNPROJECTED = object()


def _projected(
    con: Constraint, free: Sequence[str], domains: Mapping[str, Sequence[Scalar]]
) -> dict[str, frozenset[Scalar]]:
    """`projected`, computed."""
    at = [con.fields.index(f) for f in free]
    values = [domains[f][0] for f in con.fields]
    supported: list[set[Scalar]] = [set() for _ in free]
    unseen = sum(len(domains[f]) for f in free)
    for combo in itertools.product(*(domains[f] for f in free)):
        for i, v in zip(at, combo, strict=True):
            values[i] = v
        if con.holds(tuple(values)):
            for seen, v in zip(supported, combo, strict=True):
                if v not in seen:
                    seen.add(v)
                    unseen -= 1
            if not unseen:
                break  # (every value supported: most rules, after a few combinations)
    return {name: frozenset(seen) for name, seen in zip(free, supported, strict=True)}


# The most points `supported` visits (each a three-valued evaluation, ~1 us) before it gives up.
SUPPORTED_STEPS = 20_000


def supported(
    con: Constraint,
    free: Sequence[str],
    domains: Mapping[str, Sequence[Scalar]],
    steps: int = SUPPORTED_STEPS,
) -> dict[str, frozenset[Scalar]] | None:
    """`projected`'s answer for a rule over too many combinations to try each: the free fields
    are given values one at a time, and the rule's three-valued answer (`Condition.partial`)
    settles a whole subtree at once (true: every value below is supported; false: none is), and
    a subtree that could only support values already supported is not entered. None past
    `steps` points, or for a condition with no three-valued form. Remembered with `projected`'s
    answers (vLLM's Qwen3-Next block-size rules: 57,904 and 98,230 combinations, a few hundred
    points; the chain searched the pack once per value, ~0.5 ms each)."""
    if not con.condition.three_valued:
        return None
    key = ("supported", tuple(free), tuple([tuple(domains[f]) for f in con.fields]))
    table = con.projections
    found = table.get(key, _UNPROJECTED)
    if found is _UNPROJECTED:
        found = _supported(con, free, domains, steps)
        con.keep(table, key, found)
    return found  # type: ignore[no-any-return]


def _supported(
    con: Constraint, free: Sequence[str], domains: Mapping[str, Sequence[Scalar]], steps: int
) -> dict[str, frozenset[Scalar]] | None:
    """`supported`, computed: a depth-first walk over the free fields, first those whose values
    settle the rule alone most often, then the fewest values first (a field the rule reads only
    in one branch, walked before the fields that decide it, multiplied the points: Qwen3-Next's
    block-size rule, ~50,000 points fewest values first, under 500 so)."""
    partial = con.condition.partial
    # The rule's other fields at the first value of their domains, as `projected` takes them.
    assigned: dict[str, Scalar] = {f: domains[f][0] for f in con.fields if f not in free}
    settles = {f: sum(partial({**assigned, f: v}) is not None for v in domains[f]) for f in free}
    order = sorted(free, key=lambda f: (-settles[f], len(domains[f])))
    seen: dict[str, set[Scalar]] = {f: set() for f in order}
    # How many values of the field at each depth are not yet supported.
    unseen = [len(domains[f]) for f in order]
    budget = [steps]

    def mark(name: str, values: Sequence[Scalar], depth: int) -> None:
        for value in values:
            if value not in seen[name]:
                seen[name].add(value)
                unseen[depth] -= 1

    def walk(depth: int) -> bool:
        """False when the budget ran out."""
        budget[0] -= 1
        if budget[0] < 0:
            return False
        verdict = partial(assigned)
        if verdict is None and depth == len(order):
            verdict = con.condition.holds(tuple(assigned[f] for f in con.fields))
        if verdict is False:
            return True
        if verdict is True:
            for at in range(len(order)):
                name = order[at]
                mark(name, [assigned[name]] if at < depth else domains[name], at)
            return True
        name = order[depth]
        for value in domains[name]:
            # Nothing to learn below: the values fixed so far and every value of the fields
            # left are supported already.
            if (
                value in seen[name]
                and not any(unseen[depth + 1 :])
                and all(assigned[order[at]] in seen[order[at]] for at in range(depth))
            ):
                continue
            assigned[name] = value
            if not walk(depth + 1):
                return False
        assigned.pop(name, None)
        return True

    if not walk(0):
        return None
    return {name: frozenset(seen[name]) for name in free}
