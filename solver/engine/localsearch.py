"""Local search over a propagated `State`: solutions found near a known one, and a cheap first descent.

A query that changes one field of a solved request rarely needs a search: the old solution (the
hint) is kept where it still holds and the few fields around the rules it breaks are decided again
(`repair`, `redecide`); a change that runs further is followed along the rules it breaks, with
forward checking, until the values meet the old solution again (`chase`); a group of open rules
gets a short depth-first descent with forward checking (`dive`) before the backtracking search
of `solver.engine.backtrack` is tried. The open rules split into groups that share no free field
(`independent_groups`). The one home of the engine's local search: `CompiledPack.search`, `mend`
and `mend_in_place` call it.

The other local search, for questions that are not a propagated `State` (lint's), is
`solver.engine.minconflicts`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from solver.engine.groups import connected_groups
from solver.engine.state import Constraint, State, Verdict, undo_trail
from solver.model import Scalar

__all__ = [
    "SWEEP_FIELDS",
    "Kept",
    "Mended",
    "chase",
    "dive",
    "fits_hint",
    "hint_first",
    "independent_groups",
    "redecide",
    "repair",
    "settle",
    "starting_values",
]

Assignment = dict[str, Scalar]


class Mended(dict[str, Scalar]):
    """A solution `repair` made from `near` (a complete solution of the state before the change)
    by changing only fields of `changed` (every field whose value may differ from `near`'s, and
    maybe a few that do not): whoever stores solutions one after another stores this one as the
    few changes it is (`solver.engine.supports`), not as a pass over every field of the pack."""

    __slots__ = ("changed", "near")

    def __init__(self, near: Mapping[str, Scalar]) -> None:
        super().__init__(near)
        self.near: Mapping[str, Scalar] | None = near
        self.changed: list[str] = []
        if isinstance(near, Mended) and near.near is not None:
            # Made from a solution made from another: from that one, with both changes. (One
            # link, never a chain of solutions each keeping the one before alive.)
            self.near, self.changed = near.near, list(near.changed)


class Kept(dict[str, Scalar]):
    """A hint that keeps every open rule of the state it is given with (a solution of every rule
    of the pack, for a state with no condition of its own): `repair` then checks only the rules
    reading a field whose hint value the state no longer allows, where it checked every open
    rule (lint's whole-pack searches: ~2,600 rules each at 1,000 synthetic fields). The caller
    vouches for it; the answer is the same as with the plain hint."""

    __slots__ = ()


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
    state: State,
    hint: Mapping[str, Scalar],
    around: Sequence[str] | None = None,
    in_rule_order: bool = False,
) -> tuple[Assignment | None, int]:
    """The hint made into a solution by changing only fields near the rules it breaks, or None;
    and the steps that took (fields confirmed or decided again), which count against the budget.

    The fields of the broken rules are decided again (depth-first, the hint's value first) with
    every other field kept at its hint value; if that fails, the region grows by the fields that
    share a rule with it, a few times. Costs one pass over the open rules plus work around the
    change, so a resolution that changes one field at a time does not search the whole pack each
    time. None only means "not found nearby": the caller then searches properly.

    `in_rule_order` (a resolution's first search): the region is decided in the order the broken
    rules read their fields, not by name (see below).
    """
    domains, open_ = state.domains, state.open
    # `in_rule_order`: in the order the broken rules read their fields (a dict: insertion-ordered,
    # unlike a set), a rule's `when` before what it requires, so `redecide` keeps the values that
    # trigger it and mends what it requires. Sorted by name, an FA4 backend on SM100 that needs
    # --page-size 128 had each of ~24 decode backends tried per page size before the page size
    # moved, past the step limit (r18-gemma4, D-b200-Llama-fa4, r18-lfm2: the first search's
    # repair failed and the checked second guess was made, ~0.5 ms). Only there: in the
    # consistency questions of choices' reasons at 5,000 synthetic fields, a repair in that order
    # led one search to the backtracking search (~0.7 s of a 1.5 s call).
    region: dict[str, None] = {}
    if around is not None and len(hint) == len(domains):
        # The hint solved the state before `around` narrowed: only rules reading those fields
        # can be broken now (a dict copy instead of a pass over every field and rule).
        # (Given a `Mended`, the answer is one too, for a caller that stores it as its changes;
        # a resolution's hints are plain, and so are its witnesses.)
        mended = Mended(hint) if isinstance(hint, Mended) else None
        base: Assignment = mended if mended is not None else dict(hint)
        steps = len(around)
        suspects: dict[str, Constraint] = {}
        for name in around:
            if base[name] not in domains[name]:
                base[name] = domains[name][0]
                if mended is not None:
                    mended.changed.append(name)
                if len(domains[name]) > 1:
                    region[name] = None
            for con in state.by_field.get(name, ()):
                if con.key in open_:
                    suspects[con.key] = con
        cons: Collection[Constraint] = suspects.values()
    else:
        mended = None
        base = {
            name: hint[name] if name in hint and hint[name] in values else values[0]
            for name, values in domains.items()
        }
        steps = sum(1 for values in domains.values() if len(values) > 1)
        cons = _breakable(state, hint, base) if isinstance(hint, Kept) else open_.values()
    # Around a change, `condition.holds`, not the remembered `holds` (also in `redecide`): a
    # mend's value tuples are mostly new, and remembering each was ~420,000 table entries per
    # choices call at 5,000 synthetic fields (the tables' budget emptied twice within the call,
    # and three full garbage collections). A pass over every open rule (a resolution's first
    # search) asks mostly what it asked before: there the remembered answers pay.
    for con in cons:
        holds = con.condition.holds if mended is not None else con.holds
        if not holds(con.pick(base)):
            free = [f for f in con.fields if len(domains[f]) > 1]
            if not free:
                return None, steps
            region.update(dict.fromkeys(free))
    if not region:
        return base, steps
    for _ in range(_REPAIR_ROUNDS):
        if len(region) > _REPAIR_FIELDS:
            return None, steps
        steps += len(region)
        if redecide(state, base, list(region) if in_rule_order else sorted(region)):
            if mended is not None:
                mended.changed += region  # (a field `redecide` gave its old value back: no change)
            return base, steps
        # The fields of their open rules, then those still free (the region's are): the sets
        # filled in C, one filter after (a generator per rule was most of a failed repair).
        near: set[str] = set()
        for name in region:
            for con in state.by_field.get(name, ()):
                if con.key in open_:
                    near.update(con.fields)
        # (The fields added after the region's, sorted: a set's order changes with the hash seed.)
        added = sorted(f for f in near if f not in region and len(domains[f]) > 1)
        if not added:
            return None, steps
        region.update(dict.fromkeys(added))
    return None, steps


def _breakable(state: State, hint: Kept, base: Assignment) -> Collection[Constraint]:
    """The open rules `base` (`hint` with the values `state` no longer allows replaced) can
    break: those reading a replaced field. Every other reads only hint values, which keep it."""
    open_, by_field = state.open, state.by_field
    moved = [name for name, value in base.items() if name not in hint or value is not hint[name]]
    return {c.key: c for name in moved for c in by_field.get(name, ()) if c.key in open_}.values()


_REPAIR_ROUNDS = 3
SWEEP_FIELDS = 32
_REPAIR_FIELDS = 64
_REPAIR_STEPS = 64


def redecide(state: State, values: dict[str, Scalar], region: Sequence[str]) -> bool:
    """Depth-first over `region` (other fields fixed in `values`); fills `values` on success."""
    domains, open_, by_field = state.domains, state.open, state.by_field
    pending = set(region)
    old = {name: values[name] for name in region}
    # Per field of the region: its open rules (a rule is checked once none of the region fields
    # it reads is pending: `pending` holds only region fields, so that is `pending.isdisjoint`
    # of its fields, a test in C; a set of its region fields made per rule per call was a
    # twentieth of a choices call at 5,000 synthetic fields, ~6,000 calls from the sweep).
    rules_of = {name: [con for con in by_field.get(name, ()) if con.key in open_] for name in region}

    def fits(name: str) -> bool:
        # (`isdisjoint` and a list made into a tuple: the same tests in C, not a generator per
        # rule; this function was a third of listing a page's choices.)
        rules = rules_of[name]
        for i, con in enumerate(rules):
            if pending.isdisjoint(con.fields) and not con.condition.holds(con.pick(values)):
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
    never: Verdict | None = None,
) -> tuple[Assignment | None, int, bool]:
    """A cheap first attempt at a group: depth-first search with forward checking to a fixpoint
    (`State.propagate`), changes undone from a trail, fields in the given order, the hint's value
    first, for at most `_DIVE_STEPS` per field.

    Returns the solution (or None), the steps used (they count against the budget) and whether
    the group was refuted: the search is complete, so running out of values proves there is no
    solution. Most groups of a satisfiable request are solved in about one step per field, a few
    dict operations each; when the step limit is hit, the search that maintains arc consistency
    (`solver.engine.backtrack`) takes over, which is what the hard refutations need.

    `never` (`CompiledPack.never`): propagation one step past forward checking
    (`State.strengthen`: the group's domains first, then each step). A plain descent dead-ends
    where forward checking left a value no solution has (a page size the FA4 backend refuses
    while the backends are free; a disabled DP attention a MegaMoE token budget refuses once the
    PD mode is fixed), and the arc-consistent search then took 5-7 ms for its first pass and
    ~0.1-0.4 ms a step: of one warm call of each SGLang benchmark request, 31 such searches -> 1
    (16 finding a solution, 15 refuting; tests/test_descent.py). Round 27 made the strengthened
    descent a second try after the plain one's step limit; it is the only one now (round 29):
    the plain try that gave up first cost the slowest requests that resolve (D-b200-Llama-fa4,
    r18-gemma4, a-m6) a third of their time, and where it succeeds the strengthened one finds
    the same solution. The solution is the first in the descent's order whichever propagation
    it takes: both try the same fields and values in the same order, and the values the stronger
    step removes lead to no solution; it takes no more steps (each branch it tries, the plain
    descent tries too); a wipe-out it finds at the start is a refutation.
    """
    probe = _probe(state, names, cons)
    if never is not None and not probe.strengthen(never):
        return None, 0, True
    return _descend(probe, names, hint, budget, never)


def _probe(state: State, names: Sequence[str], cons: Sequence[Constraint]) -> State:
    """A state of the group alone: its fields' domains (the lists shared: narrowing replaces
    them) and its constraints open."""
    return State({n: state.domains[n] for n in names}, {c.key: c for c in cons}, state.by_field)


def _descend(
    probe: State,
    names: Sequence[str],
    hint: Mapping[str, Scalar] | None,
    budget: int,
    never: Verdict | None = None,
) -> tuple[Assignment | None, int, bool]:
    """`dive`'s depth-first search over `probe` (changed, undone where it backs up); `never`: see
    `_next_move`."""
    domains = probe.domains
    trail: list[tuple[Any, str, Any]] = []
    frames: list[Frame] = []
    limit = min(budget, _DIVE_STEPS * len(names) + 16)
    steps = 0
    index = 0
    while True:
        while index < len(names) and len(domains[names[index]]) == 1:
            index += 1
        if index == len(names):
            return {n: domains[n][0] for n in names}, steps, False
        name = names[index]
        frames.append((name, list(reversed(hint_first(domains[name], hint, name))), len(trail), index))
        steps, moved = _next_move(probe, frames, trail, steps, limit, never)
        if moved is None:
            return None, steps, not frames
        index = moved + 1


Frame = tuple[str, list[Scalar], int, int]
"""A depth-first search's branch: its field, the values left to try (the next one last), the
trail's length before it, and the field's position in the search's order (`dive`'s)."""


def _next_move(
    state: State,
    frames: list[Frame],
    trail: list[tuple[Any, str, Any]],
    steps: int,
    limit: int,
    never: Verdict | None = None,
) -> tuple[int, int | None]:
    """One move of a depth-first search with forward checking: undo to the deepest branch with a
    value left, fix that value and propagate, backing up further on a wipe-out. Returns the steps
    so far and the position of the branch that moved, or None when more than `limit` steps were
    taken (`frames` then not empty) or every branch ran out of values (`frames` empty: a proof
    that the search's state has no solution). `never`: each step propagates one step past
    forward checking (`State.strengthen`; `state` then a fixpoint of it)."""
    domains = state.domains
    while frames:
        field_, values, mark, at = frames[-1]
        undo_trail(trail, mark)
        if not values:
            frames.pop()
            continue
        steps += 1
        if steps > limit:
            return steps, None
        trail.append((domains, field_, domains[field_]))
        domains[field_] = [values.pop()]
        if state.propagate([field_], trail) if never is None else state.strengthen(never, [field_], trail):
            return steps, at
    return steps, None


_DIVE_STEPS = 1


def chase(
    state: State, hint: Mapping[str, Scalar], around: Sequence[str], budget: int
) -> tuple[Assignment | None, int, bool]:
    """A solution of `state` near `hint`, which was a complete solution before `around` narrowed:
    depth-first with forward checking (`State.propagate`, undone from a trail), branching only
    where the hint no longer holds, so the search follows a change along the pack's chains of
    rules and stops where the new values meet the hint again. `repair`, which decides a region
    again with every other field fixed and grows it by whole rings of neighbours, gives up on a
    change that runs three or four rules out (its rings pass its field limit first), and the
    fallback was a descent through the whole group (a propagation per field: ~4,000 at 5,000
    synthetic fields, for 3-4 fields that differ from the hint).

    Each step takes the values as they stand (a fixed field's value, else the hint's) and looks
    only at the fields that may differ from the hint (`around`, and those this search narrowed):
    the first such field whose hint value is gone is branched on, else a free field of the first
    open rule over them that the values break; when none is left the values are a solution
    (every other rule read only hint values, and the hint kept it). Sound whatever it returns;
    returns the solution (or None), the steps used, and whether `state` was refuted: each branch
    takes every value of its field, so running out of them proves there is no solution.
    At most `budget` steps (and `_CHASE_STEPS`): past that the caller searches as before."""
    domains, open_, by_field = state.domains, state.open, state.by_field
    trail: list[tuple[Any, str, Any]] = []
    frames: list[Frame] = []
    limit = min(budget, _CHASE_STEPS)
    steps = 0
    try:
        while True:
            differ = list(dict.fromkeys([*around, *(key for table, key, _ in trail if table is domains)]))
            name = _chase_branch(domains, open_, by_field, hint, differ)
            if name is None:
                solution = dict(hint)
                for f in differ:
                    values = domains[f]
                    solution[f] = values[0] if len(values) == 1 else hint[f]
                return solution, steps, False
            if not name:
                return None, steps, False  # (a closed rule left open: not expected; give up)
            frames.append((name, list(reversed(hint_first(domains[name], hint, name))), len(trail), 0))
            steps, at = _next_move(state, frames, trail, steps, limit)
            if at is None:
                return None, steps, not frames
    finally:
        undo_trail(trail, 0)


_CHASE_STEPS = 256


def settle(
    state: State,
    hint: Mapping[str, Scalar],
    around: Sequence[str] | None,
    allowed: int,
    chase_first: bool,
    in_rule_order: bool = False,
) -> tuple[Assignment | None, int, bool]:
    """`CompiledPack.search`'s tries near `hint`: `repair`, then, when `around` says where the
    hint was a complete solution, `chase`. Returns the solution (or None), the steps used (past
    `allowed`: the caller stops) and whether that decides the search (a solution, or chase's
    refutation). `chase_first` (lint's QuickXplain questions grown from a solved one): `chase`
    before `repair`, as about half of them have no solution, which chase proves where repair
    first fails (SGLang's totality check: 646 refutations, a failed repair of ~0.9 ms each
    before a chase of ~0.4 ms); a chase that ran out is not run again. `in_rule_order`: `repair`'s."""
    chasing = around is not None and len(hint) == len(state.domains)
    steps = 0
    if chase_first and around is not None and chasing:
        found, steps, refuted = chase(state, hint, around, allowed)
        if found is not None or refuted:
            return found, steps, True
    repaired, used = repair(state, hint, around, in_rule_order)
    steps += used
    if repaired is not None or steps > allowed:
        return repaired, steps, repaired is not None
    if around is not None and chasing and not chase_first:
        # Not near enough for `repair`: follow the change along the rules it breaks before a
        # descent through the whole group (`chase`).
        found, used, refuted = chase(state, hint, around, allowed - steps)
        return found, steps + used, found is not None or refuted
    return None, steps, False


def _chase_branch(
    domains: Mapping[str, list[Scalar]],
    open_: Mapping[str, Constraint],
    by_field: Mapping[str, list[Constraint]],
    hint: Mapping[str, Scalar],
    moved: Sequence[str],
) -> str | None:
    """`chase`'s next field: one of `moved` whose hint value is gone, else the smallest free
    field of the first open rule reading `moved` that the current values break; None when
    nothing is broken, "" for a broken rule with no free field."""
    for f in moved:
        values = domains[f]
        if len(values) > 1 and hint[f] not in values:
            return f
    seen: set[str] = set()
    for f in moved:
        for con in by_field.get(f, ()):
            key = con.key
            if key in seen or key not in open_:
                continue
            seen.add(key)
            current = []
            free = []
            for g in con.fields:
                values = domains[g]
                if len(values) == 1:
                    current.append(values[0])
                else:
                    current.append(hint[g])
                    free.append(g)
            if not con.holds(tuple(current)):
                return min(free, key=lambda g: len(domains[g])) if free else ""
    return None


def hint_first(values: list[Scalar], hint: Mapping[str, Scalar] | None, name: str) -> list[Scalar]:
    if hint is None or name not in hint or hint[name] not in values or values[0] == hint[name]:
        return values
    return [hint[name], *(v for v in values if v != hint[name])]
