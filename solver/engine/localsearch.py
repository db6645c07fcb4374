"""Local search over a propagated `State`: solutions found near a known one, and a cheap first descent.

A query that changes one field of a solved request rarely needs a search: the old solution (the
hint) is kept where it still holds and the few fields around the rules it breaks are decided again
(`repair`, `redecide`); a group of open rules gets a short depth-first descent with forward
checking (`dive`) before the backtracking search of `solver.engine.backtrack` is tried. The open
rules split into groups that share no free field (`independent_groups`). The one home of the
engine's local search: `CompiledPack.search`, `mend` and `mend_in_place` call it.

`min_conflicts` is the other local search kept here, for questions that are not a propagated
`State`: lint asks for solutions of the pack with one rule left out and its negation added, and a
walk that may move any field of a broken rule finds those where `repair`, which re-decides a
region with every other field fixed, does not (measured in solver/README.md's one-home table).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from solver.engine.groups import connected_groups
from solver.engine.state import Constraint, State, undo_trail
from solver.model import Scalar

if TYPE_CHECKING:
    import random

__all__ = [
    "SWEEP_FIELDS",
    "dive",
    "fits_hint",
    "hint_first",
    "independent_groups",
    "min_conflicts",
    "redecide",
    "repair",
    "starting_values",
]

Assignment = dict[str, Scalar]


def fits_hint(
    hint: Mapping[str, Scalar], domains: Mapping[str, list[Scalar]], cons: Sequence[Constraint]
) -> bool:
    """Whether the hint's values are still possible and satisfy every constraint of a group."""
    for con in cons:
        values = []
        for f in con.fields:
            if f not in hint or hint[f] not in domains[f]:
                return False
            values.append(hint[f])
        if not con.holds(tuple(values)):
            return False
    return True


def independent_groups(state: State) -> list[list[Constraint]]:
    """The open constraints split into groups that share no free field (`connected_groups`):
    each group can be searched on its own."""
    domains = state.domains
    cons = list(state.open.values())
    return connected_groups(cons, [[f for f in con.fields if len(domains[f]) > 1] for con in cons])


def starting_values(domains: Mapping[str, Sequence[Scalar]], hint: Mapping[str, Scalar] | None) -> Assignment:
    """Each field's first value, or the hint's where the field still allows it: what a group that
    needs no search keeps."""
    solution: Assignment = {name: values[0] for name, values in domains.items()}
    if hint is not None:
        for name, values in domains.items():
            if len(values) > 1 and name in hint and hint[name] in values:
                solution[name] = hint[name]
    return solution


def repair(
    state: State, hint: Mapping[str, Scalar], around: Sequence[str] | None = None
) -> tuple[Assignment | None, int]:
    """The hint made into a solution by changing only fields near the rules it breaks, or None;
    and the steps that took (fields confirmed or decided again), which count against the budget.

    The fields of the broken rules are decided again (depth-first, the hint's value first) with
    every other field kept at its hint value; if that fails, the region grows by the fields that
    share a rule with it, a few times. Costs one pass over the open rules plus work around the
    change, so a resolution that changes one field at a time does not search the whole pack each
    time. None only means "not found nearby": the caller then searches properly.
    """
    domains, open_ = state.domains, state.open
    region: set[str] = set()
    if around is not None and len(hint) == len(domains):
        # The hint solved the state before `around` narrowed: only rules reading those fields
        # can be broken now (a dict copy instead of a pass over every field and rule).
        base = dict(hint)
        steps = len(around)
        suspects: dict[str, Constraint] = {}
        for name in around:
            if base[name] not in domains[name]:
                base[name] = domains[name][0]
                if len(domains[name]) > 1:
                    region.add(name)
            for con in state.by_field.get(name, ()):
                if con.key in open_:
                    suspects[con.key] = con
        cons: Collection[Constraint] = suspects.values()
    else:
        base = {
            name: hint[name] if name in hint and hint[name] in values else values[0]
            for name, values in domains.items()
        }
        steps = sum(1 for values in domains.values() if len(values) > 1)
        cons = open_.values()
    for con in cons:
        if not con.holds(tuple(base[f] for f in con.fields)):
            free = [f for f in con.fields if len(domains[f]) > 1]
            if not free:
                return None, steps
            region.update(free)
    if not region:
        return base, steps
    for _ in range(_REPAIR_ROUNDS):
        if len(region) > _REPAIR_FIELDS:
            return None, steps
        steps += len(region)
        if redecide(state, base, sorted(region)):
            return base, steps
        grown = set(region)
        for name in region:
            for con in state.by_field.get(name, ()):
                if con.key in open_:
                    grown.update(f for f in con.fields if len(domains[f]) > 1)
        if grown == region:
            return None, steps
        region = grown
    return None, steps


_REPAIR_ROUNDS = 3
SWEEP_FIELDS = 32
_REPAIR_FIELDS = 64
_REPAIR_STEPS = 64


def redecide(state: State, values: dict[str, Scalar], region: Sequence[str]) -> bool:
    """Depth-first over `region` (other fields fixed in `values`); fills `values` on success."""
    domains, open_, by_field = state.domains, state.open, state.by_field
    pending = set(region)
    old = {name: values[name] for name in region}
    # Per field of the region: its open rules, each with the region fields it reads (a rule is
    # checked once none of those is pending).
    rules_of = {
        name: [
            (con, tuple(f for f in con.fields if f in pending))
            for con in by_field.get(name, ())
            if con.key in open_
        ]
        for name in region
    }

    def fits(name: str) -> bool:
        # (`isdisjoint` and a list made into a tuple: the same tests in C, not a generator per
        # rule; this function was a third of listing a page's choices.)
        rules = rules_of[name]
        for i, (con, inside) in enumerate(rules):
            if pending.isdisjoint(inside) and not con.holds(tuple([values[f] for f in con.fields])):
                if i:
                    # The rule that refused this value is tried first for the next one: the
                    # values of a field are mostly refused by the same rule (the value being
                    # mended in), so a region that cannot work fails in one test per value, not
                    # one pass over the field's rules.
                    rules.insert(0, rules.pop(i))
                return False
        return True

    choices: list[list[Scalar]] = []
    index = 0
    steps = 0
    while 0 <= index < len(region):
        name = region[index]
        if len(choices) == index:
            current = domains[name]
            first = old[name]
            choices.append(
                [v for v in reversed(current) if v != first] + ([first] if first in current else [])
            )
        while choices[index]:
            steps += 1
            if steps > _REPAIR_STEPS:
                values.update(old)
                return False
            values[name] = choices[index].pop()
            pending.discard(name)
            if fits(name):
                break
            pending.add(name)
        else:
            choices.pop()
            pending.add(name)
            index -= 1
            if index >= 0:
                pending.add(region[index])
            continue
        index += 1
    if index < 0:
        values.update(old)
        return False
    return True


def dive(
    state: State,
    names: Sequence[str],
    cons: Sequence[Constraint],
    hint: Mapping[str, Scalar] | None,
    budget: int,
) -> tuple[Assignment | None, int, bool]:
    """A cheap first attempt at a group: depth-first search with forward checking to a fixpoint
    (`State.propagate`), changes undone from a trail, fields in the given order, the hint's value
    first, for at most `_DIVE_STEPS` per field.

    Returns the solution (or None), the steps used (they count against the budget) and whether
    the group was refuted: the search is complete, so running out of values proves there is no
    solution. Most groups of a satisfiable request are solved in about one step per field, a few
    dict operations each; when the step limit is hit, the search that maintains arc consistency
    (`solver.engine.backtrack`) takes over, which is what the hard refutations need.
    """
    probe = State({n: state.domains[n] for n in names}, {c.key: c for c in cons}, state.by_field)
    domains = probe.domains
    trail: list[tuple[Any, str, Any]] = []
    frames: list[tuple[int, str, list[Scalar], int]] = []
    limit = min(budget, _DIVE_STEPS * len(names) + 16)
    steps = 0
    index = 0
    while True:
        while index < len(names) and len(domains[names[index]]) == 1:
            index += 1
        if index == len(names):
            return {n: domains[n][0] for n in names}, steps, False
        name = names[index]
        frames.append((index, name, list(reversed(hint_first(domains[name], hint, name))), len(trail)))
        while frames:
            at, field, values, mark = frames[-1]
            undo_trail(trail, mark)
            if not values:
                frames.pop()
                continue
            steps += 1
            if steps > limit:
                return None, steps, False
            trail.append((domains, field, domains[field]))
            domains[field] = [values.pop()]
            if probe.propagate([field], trail):
                index = at + 1
                break
        else:
            return None, steps, True


_DIVE_STEPS = 1


def hint_first(values: list[Scalar], hint: Mapping[str, Scalar] | None, name: str) -> list[Scalar]:
    if hint is None or name not in hint or hint[name] not in values or values[0] == hint[name]:
        return values
    return [hint[name], *(v for v in values if v != hint[name])]


Predicate = tuple[tuple[str, ...], Callable[[tuple[Scalar, ...]], bool]]
"""A check as the min-conflicts walk sees it: the fields it reads, and whether their values pass."""


def min_conflicts(
    domains: Mapping[str, Sequence[Scalar]],
    rules: Sequence[Predicate],
    reading: Mapping[str, Sequence[int]],
    wanted: Collection[int] | None,
    extra: Sequence[Predicate],
    fixed: Mapping[str, Scalar],
    current: dict[str, Scalar],
    changed: Sequence[str],
    rng: random.Random,
    steps: int,
) -> dict[str, Scalar] | None:
    """Min-conflicts local search from `current` (with `fixed` applied), a solution of every rule
    but where the `changed` fields moved: the rules in `wanted` (all when None) and the `extra`
    checks must hold. Changed in place; a solution or None. `reading`: the indices of the rules
    that read each field.

    Checks are numbered: the rules by their index, the extras after them. Only the checks
    around a moved field are looked at, never the whole pack.
    """
    base = len(rules)
    checks = list(rules) + list(extra)
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
        names, holds = checks[index]
        return not holds(tuple([current[n] for n in names]))

    bad = {j for name in changed for j in around(name) if fails(j)}
    bad |= {base + i for i in range(len(extra)) if fails(base + i)}
    for _ in range(steps):
        if not bad:
            return current
        names = checks[rng.choice(sorted(bad))][0]
        free = [n for n in names if n not in fixed]
        if not free:
            break
        moves: list[tuple[str, Scalar]] = []
        best = 0
        for name in free:
            was = current[name]
            near = around(name)
            # The checks failing now first: they mostly still fail, so a move that cannot be
            # among the best is known after a few tests (it is not counted to the end). The
            # moves kept and their scores are those of a full count; on the SGLang pack's lint
            # the full counts were 30 % of the time (4.8 million rule tests).
            broken = [j for j in near if j in bad]
            before = len(broken)
            ordered = broken + [j for j in near if j not in bad]
            for value in domains[name]:
                if value == was:
                    continue
                current[name] = value
                # (more failures than `before + best`: worse than a move kept already)
                score = _failures(ordered, fails, before + best if moves else None) - before
                if not moves or score < best:
                    best, moves = score, [(name, value)]
                elif score == best:
                    moves.append((name, value))
            current[name] = was
        if not moves:
            break
        # Mostly greedy; now and then a random move, so plateaus do not trap the search.
        if rng.random() > 0.1:
            name, value = rng.choice(moves)
        else:
            name = rng.choice(free)
            value = rng.choice(list(domains[name]))
        current[name] = value
        for j in around(name):
            if fails(j):
                bad.add(j)
            else:
                bad.discard(j)
    return current if not bad else None


def _failures(order: Sequence[int], fails: Callable[[int], bool], cap: int | None) -> int:
    """How many of the checks `order` fail, counted only to one past `cap` (None: all)."""
    count = 0
    for index in order:
        if fails(index):
            count += 1
            if cap is not None and count > cap:
                break
    return count
