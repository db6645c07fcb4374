"""The only module that uses python-constraint: a pack compiled once into a reusable CSP.

Variables are fields, domains are their values, and each hard rule is one `FunctionConstraint`
over exactly the fields it reads. The compiled form is shared and never mutated: every query gets
fresh `Domain` objects (a python-constraint domain shrinks while it is searched).

A query is answered in layers, cheapest first (`CompiledPack.start` then `search`):
- pins are folded in and forward checking runs to a fixpoint (`State`); rules whose fields are
  all fixed are checked directly, so most conflicts end here;
- a known solution (`hint`: the last witness, with the one value that changed) is kept where it
  still holds and repaired around the rules it breaks (`_repair`);
- each independent group of open rules gets a short depth-first descent with forward checking
  (`_dive`), then, if that does not settle it, the backtracking search that maintains arc
  consistency: a python-constraint `Solver` subclass over its `Domain`s and `FunctionConstraint`s
  (`_Search`), which is what refutations need. python-constraint is imported on first use.
Condition answers, supports and three-valued verdicts are remembered per compiled pack.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from solver.bounded import PACKS_KEPT, Lru, Memo
from solver.budget import Budget
from solver.errors import SolverBudgetExceeded
from solver.model import Pack, Scalar
from solver.pack.expr import Condition
from solver.pack.loader import semantics

__all__ = [
    "CompiledPack",
    "Extra",
    "RuleConstraint",
    "SearchTrace",
    "State",
    "compile_pack",
]

Assignment = dict[str, Scalar]
Ranker = Callable[[str, Mapping[str, Scalar], Sequence[Scalar]], Sequence[Scalar]]


@dataclass(frozen=True)
class Extra:
    """An ad-hoc condition added to one query (e.g. "not when" to test an entailment)."""

    fields: tuple[str, ...]
    holds: Callable[..., bool]


@dataclass
class SearchTrace:
    """What the ordered search saw on its final path: each field's domain when it was decided."""

    domains: dict[str, tuple[Scalar, ...]] = field(default_factory=dict)
    steps: int = 0


@dataclass(frozen=True)
class _Rule:
    id: str
    fields: tuple[str, ...]
    constraint: Any
    condition: Condition
    holds: Callable[[tuple[Scalar, ...]], bool]


def _pc() -> Any:
    """python-constraint, imported on first use: it costs a launcher ~25 ms of start-up (most of
    it `concurrent.futures` for its ParallelSolver), and the common queries are answered by
    propagation and a short descent before any backtracking search is needed."""
    import constraint

    return constraint


class _LazyConstraint:
    """A python-constraint `FunctionConstraint` over `func`, built when first called."""

    __slots__ = ("_func", "_real")

    def __init__(self, func: Callable[..., bool]) -> None:
        self._func = func
        self._real: Any = None

    def __call__(self, *args: Any) -> Any:
        real = self._real
        if real is None:
            real = self._real = _pc().FunctionConstraint(self._func)
        return real(*args)


_SEARCH_CLASS: Any = None


def _new_search(*args: Any) -> Any:
    """A `_Search` that is also a python-constraint `Solver` (the class is made on first use)."""
    global _SEARCH_CLASS
    if _SEARCH_CLASS is None:
        _SEARCH_CLASS = type("_Search", (_Search, _pc().Solver), {})
    return _SEARCH_CLASS(*args)


class _Search:
    """Backtracking that maintains arc consistency, smallest domain first (a python-constraint
    `Solver`: instances come from `_new_search`).

    python-constraint's `Domain` keeps the state (hide / push / pop) and its constraints do the
    forward checking; after each assignment we also make every constraint arc consistent
    (generalised AC over python-constraint's domains), which is what keeps refutation cheap on
    configuration rules: most dead ends show up as an emptied domain right away instead of after
    trying every combination of unrelated fields.
    """

    def __init__(
        self,
        budget: int,
        task: str,
        trace: SearchTrace | None,
        holds: Mapping[int, _Check] | None = None,
        verdicts: Callable[[Any, str, tuple[tuple[str, Scalar], ...]], _Verdicts] | None = None,
    ) -> None:
        self._verdicts = verdicts or _no_verdicts
        self._budget = budget
        self._task = task
        self._trace = trace
        self._holds = holds or {}
        self._weights: dict[int, int] = {}
        self._culprit: Any = None
        # Each field's weighted degree, kept between picks: it only changes when a rule's weight
        # does (then it is recomputed), and summing it for every field at every step would make
        # each step cost the whole group's rules.
        self._wdeg: dict[str, int] = {}

    def _pick(
        self, domains: dict[str, Any], assigned: Mapping[str, Any], vconstraints: dict[str, Any]
    ) -> str | None:
        """dom/wdeg: the smallest domain relative to how often the field's rules have failed.

        Plain smallest-domain-first picks the many unrelated two-valued fields first, and a dead
        end among the big attention fields is then re-proved under every combination of them;
        weighting rules by their failures moves the fields that cause dead ends to the front.
        """
        weights = self._weights
        cached = self._wdeg
        best: str | None = None
        best_score = float("inf")
        for name, dom in domains.items():
            if name in assigned:
                continue
            size = len(dom)
            if size <= 1:
                return name
            wdeg = cached.get(name)
            if wdeg is None:
                wdeg = cached[name] = 1 + sum(weights.get(id(c), 1) for c, _ in vconstraints[name])
            score = size / wdeg
            if score < best_score:
                best, best_score = name, score
        return best

    def _consistent(
        self,
        domains: dict[str, Any],
        assigned: Mapping[str, Any],
        vconstraints: dict[str, Any],
        changed: list[str],
    ) -> bool:
        """Generalised arc consistency from the changed fields; False when a domain empties.

        Three-valued evaluation of the rule with the fixed fields decides most values at once
        (`CompiledPack._verdicts`: satisfied or violated whatever the free fields hold); the others
        are searched for a support only while that search stays small (`_GAC_LIMIT` tuples), else
        kept: weaker than full arc consistency, never wrong.
        """
        holds = self._holds
        passes = self._verdicts
        queue = list(changed)
        queued = set(queue)
        while queue:
            name = queue.pop()
            queued.discard(name)
            for constraint, fields in vconstraints[name]:
                entry = holds.get(id(constraint))
                if entry is None:
                    continue
                check, rkey, residues = entry
                # The free fields, and the values of the others (the same for every target: a
                # target is itself free).
                free = []
                fixed = []
                size = 1
                for f in fields:
                    if f in assigned:
                        fixed.append((f, assigned[f]))
                        continue
                    dom = domains[f]
                    n = len(dom)
                    if n > 1:
                        free.append(f)
                        size *= n
                    else:
                        fixed.append((f, dom[0]))
                if not free:
                    continue
                known = tuple(fixed)
                for target in free:
                    dom = domains[target]
                    before = len(dom)
                    if len(free) > 1 and any(len(domains[f]) == 1 for f in free):
                        # An earlier target of this rule was narrowed to one value: it is known now.
                        known = tuple(
                            (f, assigned[f] if f in assigned else domains[f][0])
                            for f in fields
                            if f != target and (f in assigned or len(domains[f]) == 1)
                        )
                    always, never = passes(constraint, target, known)
                    for value in list(dom):
                        if value in always:
                            continue
                        if value in never or (
                            size <= _GAC_LIMIT
                            and not _supported(
                                check, rkey, fields, domains, assigned, target, value, residues
                            )
                        ):
                            dom.hideValue(value)
                    if not dom:
                        self._culprit = constraint
                        return False
                    if len(dom) != before and target not in queued:
                        queue.append(target)
                        queued.add(target)
        return True

    def getSolutionIter(
        self, domains: dict[str, Any], constraints: Any, vconstraints: dict[str, Any]
    ) -> Iterator[Assignment]:
        assignments: Assignment = {}
        stack: list[tuple[str, list[Scalar], list[Any]]] = []
        steps = 0
        trace = self._trace
        for dom in domains.values():
            dom.pushState()
        if not self._consistent(domains, assignments, vconstraints, list(domains)):
            return
        while True:
            variable = self._pick(domains, assignments, vconstraints)
            if variable is None:
                if trace is not None:
                    trace.steps = steps
                yield dict(assignments)
                if not stack:
                    return
                variable, values, pushed = stack.pop()
                for dom in pushed:
                    dom.popState()
            else:
                values = list(reversed(domains[variable]))  # pop() takes the first value first
                pushed = [domains[x] for x in domains if x not in assignments and x != variable]
            while True:
                if not values:
                    # Nothing left for this variable: go back to the previous one.
                    assignments.pop(variable, None)
                    back = _backtrack(stack, assignments)
                    if back is None:
                        if trace is not None:
                            trace.steps = steps
                        return
                    variable, values, pushed = back
                assignments[variable] = values.pop()
                steps += 1
                if steps > self._budget:
                    raise SolverBudgetExceeded(self._task, self._budget)
                for dom in pushed:
                    dom.pushState()
                failed: Any = None
                for constraint, variables in vconstraints[variable]:
                    if not constraint(variables, domains, assignments, pushed):
                        failed = constraint
                        break
                else:
                    if self._consistent(domains, assignments, vconstraints, [variable]):
                        break
                    failed = self._culprit
                if failed is not None:
                    self._weights[id(failed)] = self._weights.get(id(failed), 1) + 1
                    self._wdeg.clear()
                for dom in pushed:
                    dom.popState()
            stack.append((variable, values, pushed))

    def getSolution(
        self, domains: dict[str, Any], constraints: Any, vconstraints: dict[str, Any]
    ) -> Assignment | None:
        return next(self.getSolutionIter(domains, constraints, vconstraints), None)


_GAC_LIMIT = 256


_Verdicts = tuple[frozenset[Scalar], frozenset[Scalar]]
_NO_VERDICTS: _Verdicts = (frozenset(), frozenset())


def _no_verdicts(constraint: Any, target: str, known: tuple[tuple[str, Scalar], ...]) -> _Verdicts:
    return _NO_VERDICTS


def _fits(hint: Mapping[str, Scalar], domains: Mapping[str, list[Scalar]], cons: Sequence[_Con]) -> bool:
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


def _backtrack(
    stack: list[tuple[str, list[Scalar], list[Any]]],
    assignments: Assignment,
) -> tuple[str, list[Scalar], list[Any]] | None:
    """Unwind `stack` to the latest variable with values left to try (restoring the domains each
    level pushed and dropping the assignments of exhausted levels); None when there is none."""
    while stack:
        variable, values, pushed = stack.pop()
        for dom in pushed:
            dom.popState()
        if values:
            return variable, values, pushed
        del assignments[variable]
    return None


def _independent_groups(state: State) -> list[list[_Con]]:
    """The open constraints split into groups that share no free field (a union-find over the
    free fields of each constraint): each group can be searched on its own."""
    domains = state.domains
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.get(x, x) != x:
            parent[x] = parent.get(parent[x], parent[x])
            x = parent[x]
        return x

    for con in state.open.values():
        free = [f for f in con.fields if len(domains[f]) > 1]
        root = find(free[0])
        for other in free[1:]:
            r = find(other)
            if r != root:
                parent[r] = root
    groups: dict[str, list[_Con]] = {}
    for con in state.open.values():
        first = next(f for f in con.fields if len(domains[f]) > 1)
        groups.setdefault(find(first), []).append(con)
    return list(groups.values())


def _starting_values(
    domains: Mapping[str, Sequence[Scalar]], hint: Mapping[str, Scalar] | None
) -> Assignment:
    """Each field's first value, or the hint's where the field still allows it: what a group that
    needs no search keeps."""
    solution: Assignment = {name: values[0] for name, values in domains.items()}
    if hint is not None:
        for name, values in domains.items():
            if len(values) > 1 and name in hint and hint[name] in values:
                solution[name] = hint[name]
    return solution


def _repair(
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
        suspects: dict[str, _Con] = {}
        for name in around:
            if base[name] not in domains[name]:
                base[name] = domains[name][0]
                if len(domains[name]) > 1:
                    region.add(name)
            for con in state.by_field.get(name, ()):
                if con.key in open_:
                    suspects[con.key] = con
        cons: Collection[_Con] = suspects.values()
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
        if _redecide(state, base, sorted(region)):
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
_SWEEP_FIELDS = 32
_REPAIR_FIELDS = 64
_REPAIR_STEPS = 64


def _redecide(state: State, values: dict[str, Scalar], region: Sequence[str]) -> bool:
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
        for con, inside in rules_of[name]:
            if pending.isdisjoint(inside) and not con.holds(tuple([values[f] for f in con.fields])):
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


def _dive(
    state: State, names: Sequence[str], cons: Sequence[_Con], hint: Mapping[str, Scalar] | None, budget: int
) -> tuple[Assignment | None, int, bool]:
    """A cheap first attempt at a group: depth-first search with forward checking to a fixpoint
    (`State._propagate`), changes undone from a trail, fields in the given order, the hint's value
    first, for at most `_DIVE_STEPS` per field.

    Returns the solution (or None), the steps used (they count against the budget) and whether
    the group was refuted: the search is complete, so running out of values proves there is no
    solution. Most groups of a satisfiable request are solved in about one step per field, a few
    dict operations each; when the step limit is hit, the search that maintains arc consistency
    (`_Search`) takes over, which is what the hard refutations need.
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
        frames.append((index, name, list(reversed(_hint_first(domains[name], hint, name))), len(trail)))
        while frames:
            at, field, values, mark = frames[-1]
            _undo(trail, mark)
            if not values:
                frames.pop()
                continue
            steps += 1
            if steps > limit:
                return None, steps, False
            trail.append((domains, field, domains[field]))
            domains[field] = [values.pop()]
            if probe._propagate([field], trail):
                index = at + 1
                break
        else:
            return None, steps, True


_DIVE_STEPS = 1


def _hint_first(values: list[Scalar], hint: Mapping[str, Scalar] | None, name: str) -> list[Scalar]:
    if hint is None or name not in hint or hint[name] not in values or values[0] == hint[name]:
        return values
    return [hint[name], *(v for v in values if v != hint[name])]


def _supported(
    check: Callable[[tuple[Scalar, ...]], bool],
    rkey: str,
    fields: tuple[str, ...],
    domains: dict[str, Any],
    assigned: Mapping[str, Any],
    target: str,
    value: Scalar,
    residues: dict[Any, tuple[Scalar, ...]],
) -> bool:
    """Whether some combination of the other free fields lets `target = value` satisfy `check`.

    The last support found is remembered (a "residue", as in AC-3rm): a pure rule stays satisfied
    by the same tuple, so if its values are all still available no search is needed. `rkey`
    names the constraint stably within `residues` (see `CompiledPack._checks`).
    """
    key = (rkey, target, value)
    residue = residues.get(key)
    if residue is not None:
        for f, v in zip(fields, residue, strict=True):
            if f in assigned:
                if assigned[f] != v:
                    break
            elif v not in domains[f]:
                break
        else:
            return True
    choices = []
    for f in fields:
        if f == target:
            choices.append((value,))
        elif f in assigned:
            choices.append((assigned[f],))
        else:
            choices.append(tuple(domains[f]))
    for combo in itertools.product(*choices):
        if check(combo):
            if len(residues) < _MEMO_LIMIT or key in residues:
                residues[key] = combo
            return True
    return False


# What arc consistency needs of a constraint: its check, a name for it that stays valid as long
# as the residue table it goes with, and that table.
_Check = tuple[Callable[[tuple[Scalar, ...]], bool], str, dict[Any, tuple[Scalar, ...]]]


@dataclass
class _Con:
    """One constraint of a query: a rule (or an ad-hoc condition) over its fields."""

    key: str
    fields: tuple[str, ...]
    holds: Callable[[tuple[Scalar, ...]], bool]
    constraint: Any
    full: tuple[tuple[Scalar, ...], ...] = ()
    """Each field's whole domain (in the pack's order)."""
    cuts: dict[tuple[int, tuple[Scalar, ...]], frozenset[Scalar]] = field(default_factory=dict)
    """For one free field (by position) and the values of the others: the values that satisfy
    the constraint. Forward checking asks the same few questions again and again, within a
    query and across queries, and a set lookup per value is cheaper than evaluating it."""
    memo: Memo | None = None
    """The compiled pack's shared entry budget, for a rule of the pack (then `cuts` is one of its
    tables); None for a query's own condition, whose table dies with the query."""

    def allowed(self, at: int, others: tuple[Scalar, ...]) -> frozenset[Scalar]:
        key = (at, others)
        found = self.cuts.get(key)
        if found is None:
            base: list[Any] = list(others)
            base.insert(at, None)
            holds = self.holds
            ok = []
            for value in self.full[at]:
                base[at] = value
                if holds(tuple(base)):
                    ok.append(value)
            found = frozenset(ok)
            if self.memo is not None:
                self.memo.store(self.cuts, key, found)
            elif len(self.cuts) < _CUT_LIMIT:
                self.cuts[key] = found
        return found


_CUT_LIMIT = 4096

RuleConstraint = _Con
"""One rule as queries see it (its fields, `holds`, `allowed`); `CompiledPack.constraints`."""


class State:
    """Domains after propagation, and the constraints still open (two or more free fields).

    Copy-on-write: `assign` returns a new state, so a resolution can fix one field after another
    and each step propagates only what the new value touches. `fix` / `undo` do the same in
    place, for callers that walk many fields: a copy costs a pass over every field and rule.
    """

    __slots__ = ("_trails", "by_field", "domains", "open")

    def __init__(
        self, domains: dict[str, list[Scalar]], open_: dict[str, _Con], by_field: dict[str, list[_Con]]
    ) -> None:
        self.domains = domains
        self.open = open_
        self.by_field = by_field
        self._trails: list[list[tuple[Any, str, Any]]] = []

    def fix(self, name: str, value: Scalar, changed: list[str] | None = None) -> bool:
        """`assign` in place: True when `name = value` propagates without wiping out a field (then
        `undo` takes it back), False with the state unchanged. `changed` as in `assign`."""
        if value not in self.domains[name]:
            return False
        trail: list[tuple[Any, str, Any]] = [(self.domains, name, self.domains[name])]
        self.domains[name] = [value]
        if not self._propagate([name], trail):
            _undo(trail, 0)
            return False
        self._trails.append(trail)
        if changed is not None:
            changed.append(name)
            changed.extend(key for table, key, _ in trail[1:] if table is self.domains)
        return True

    def undo(self) -> None:
        """Take back the last `fix` that succeeded."""
        _undo(self._trails.pop(), 0)

    def domain(self, name: str) -> list[Scalar]:
        return self.domains[name]

    def assign(self, name: str, value: Scalar, changed: list[str] | None = None) -> State | None:
        """A new state with `name` fixed to `value`, propagated; None when that wipes out a field.

        `changed`, when given, receives the fields whose domains this narrowed (`name` first):
        a solution of the old state can only break at rules reading them (see `search`).
        """
        if value not in self.domains[name]:
            return None
        new = State(dict(self.domains), dict(self.open), self.by_field)
        new.domains[name] = [value]
        trail: list[tuple[Any, str, Any]] | None = None if changed is None else []
        if not new._propagate([name], trail):
            return None
        if changed is not None and trail is not None:
            changed.append(name)
            changed.extend(key for table, key, _ in trail if table is new.domains)
        return new

    def _propagate(self, changed: list[str], trail: list[tuple[Any, str, Any]] | None = None) -> bool:
        """Fold fixed fields into the open constraints until nothing changes (forward checking
        to a fixpoint): a constraint with no free field is checked, one with a single free field
        filters that field's domain. With a `trail`, every change is logged there so that
        `_undo` can take it back (a probe that tries values in place, without copying)."""
        domains, open_, by_field = self.domains, self.open, self.by_field
        queue = list(changed)
        while queue:
            name = queue.pop()
            for con in by_field.get(name, ()):
                key = con.key
                if key not in open_:
                    continue
                target: str | None = None
                at = 0
                fixed: list[Scalar] = []  # the fixed fields' values in the rule's order (one pass)
                for f in con.fields:
                    dom = domains[f]
                    if len(dom) > 1:
                        if target is not None:
                            break  # two free fields: still open
                        target, at = f, len(fixed)
                    else:
                        fixed.append(dom[0])
                else:
                    if trail is not None:
                        trail.append((open_, key, con))
                    del open_[key]
                    if target is None:
                        if not con.holds(tuple(fixed)):
                            return False
                        continue
                    current = domains[target]
                    allowed = con.allowed(at, tuple(fixed))
                    kept = [v for v in current if v in allowed]
                    if not kept:
                        return False
                    if len(kept) != len(current):
                        if trail is not None:
                            trail.append((domains, target, current))
                        domains[target] = kept
                        queue.append(target)
        return True


_UNSET = object()


def _undo(trail: list[tuple[Any, str, Any]], mark: int) -> None:
    while len(trail) > mark:
        table, key, old = trail.pop()
        table[key] = old


class CompiledPack:
    """A pack compiled for queries. Thread-safe: queries never mutate it."""

    def __init__(self, pack: Pack) -> None:
        sem = semantics(pack)
        self.pack = pack
        # Every answer table kept for the life of the pack shares this one bound (`solver.bounded`):
        # a process resolving distinct requests for ever must not grow.
        self.tables = Memo()
        self.domains: dict[str, tuple[Scalar, ...]] = {n: f.domain for n, f in pack.fields.items()}
        self.rules: dict[str, _Rule] = {}
        self.warn_rules: dict[str, Condition] = {}
        for rule in pack.rules:
            cond = sem.rules[rule.id]
            if rule.severity == "warn":
                self.warn_rules[rule.id] = cond
                continue
            holds = _memoized(cond.holds, self.tables)
            self.rules[rule.id] = _Rule(rule.id, cond.fields, _constraint(holds), cond, holds)
        self.rule_ids: tuple[str, ...] = tuple(self.rules)
        self.rule_index = {rid: i for i, rid in enumerate(self.rule_ids)}
        self._full: dict[str, list[Scalar]] = {n: list(v) for n, v in self.domains.items()}
        # By id, for explanations of every field (`Pack.rule` scans the whole tuple).
        self.models = {rule.id: rule for rule in pack.rules}
        self._cons = {
            rid: _Con(
                rid,
                r.fields,
                r.holds,
                r.constraint,
                tuple(self.domains[f] for f in r.fields),
                self.tables.table(),
                self.tables,
            )
            for rid, r in self.rules.items()
        }
        self._all_by_field = self._index(list(self._cons.values()))
        # Supports found by arc consistency for the pack's rules (by rule id), shared by every
        # query on this pack: a hint only (each is re-checked against the current domains), so
        # sharing across threads is safe. Per-query conditions keep theirs per query (`_checks`).
        self._residues: dict[Any, tuple[Scalar, ...]] = self.tables.table()
        self._by_constraint = {id(r.constraint): r for r in self.rules.values()}
        self._verdict_sets: dict[tuple[int, str, tuple[tuple[str, Scalar], ...]], _Verdicts] = (
            self.tables.table()
        )
        self._root_state: State | object | None = _UNSET
        # What other modules compute once per compiled pack (e.g. solver.engine.tracing's root state).
        self.memo: dict[str, Any] = {}
        # The budget searches are charged to: None here (each search gets a fresh `Budget()`, the
        # per-search bound); a command's or a call's own on the copies `within` makes.
        self.budget: Budget | None = None

    @property
    def constraints(self) -> Mapping[str, RuleConstraint]:
        """The hard rules as constraints, by rule id (read-only: shared by every query)."""
        return self._cons

    @property
    def constraints_by_field(self) -> Mapping[str, Sequence[RuleConstraint]]:
        """The constraints reading each field."""
        return self._all_by_field

    def _verdicts(self, constraint: Any, target: str, known: tuple[tuple[str, Scalar], ...]) -> _Verdicts:
        """The values of `target` that satisfy the rule whatever its other unknown fields hold,
        and those that violate it whatever they hold.

        Most values of a field are of the first kind for most rules (`when` does not mention them,
        or a fixed field already makes `when` false), so arc consistency needs no support search
        for them; the second kind it removes without one, however many values the free fields
        have. Decided by three-valued evaluation with `known` and `target` given, once per rule,
        field and known values, and kept (bounded) for the life of the pack.
        """
        key = (id(constraint), target, known)
        found = self._verdict_sets.get(key)
        if found is None:
            rule = self._by_constraint.get(key[0])
            if rule is None:
                return _NO_VERDICTS
            given = dict(known)
            partial = rule.condition.partial
            answers = {v: partial({**given, target: v}) for v in self.domains[target]}
            found = (
                frozenset(v for v, a in answers.items() if a is True),
                frozenset(v for v, a in answers.items() if a is False),
            )
            self.tables.store(self._verdict_sets, key, found)
        return found

    def verdicts(
        self, rule_id: str, target: str, known: tuple[tuple[str, Scalar], ...]
    ) -> tuple[frozenset[Scalar], frozenset[Scalar]]:
        """The values of `target` that keep the rule whatever its fields outside `known` hold,
        and those that break it whatever they hold (see `_verdicts`)."""
        return self._verdicts(self._cons[rule_id].constraint, target, known)

    def _checks(self, cons: Iterable[_Con], local: dict[Any, tuple[Scalar, ...]]) -> dict[int, _Check]:
        """Each constraint's check for arc consistency, by the id of its python-constraint object.

        The supports found for the pack's own rules are kept for the life of the pack under the
        rule id; those of a query's ad-hoc conditions (`Extra`, built per query) only in `local`,
        for that query: keyed by anything shared, a later query's condition could be served a
        support found for another one."""
        shared = self._cons
        return {
            id(con.constraint): (con.holds, con.key, self._residues if shared.get(con.key) is con else local)
            for con in cons
        }

    def _index(self, cons: Sequence[_Con]) -> dict[str, list[_Con]]:
        out: dict[str, list[_Con]] = {}
        for con in cons:
            for name in con.fields:
                out.setdefault(name, []).append(con)
        return out

    def allowed(self, rule_id: str, name: str, values: Mapping[str, Scalar]) -> frozenset[Scalar]:
        """The values of `name` that satisfy the rule when its other fields hold `values`
        (remembered per rule, the same table forward checking uses)."""
        con = self._cons[rule_id]
        at = con.fields.index(name)
        return con.allowed(at, tuple([values[f] for f in con.fields if f != name]))

    def rules_reading(self, name: str) -> list[str]:
        return [con.key for con in self._all_by_field.get(name, ())]

    # -- queries ---------------------------------------------------------------------------
    def start(
        self,
        pins: Mapping[str, Scalar],
        *,
        rules: Collection[str] | None = None,
        allowed: Mapping[str, Collection[Scalar]] | None = None,
        extra: Sequence[Extra] = (),
    ) -> State | None:
        """The propagated state of a query, or None when propagation alone refutes it."""
        wanted: set[str] | None = None
        if rules is not None:
            wanted = {r for r in rules if r in self._cons}
            if len(wanted) == len(self._cons):
                wanted = None  # every rule: the same query as without `rules`
        if wanted is None:
            state = self._start_from_root(pins, allowed)
            if not extra or state is None:
                return state  # (more constraints can only refute sooner)
            return self._with_extra(state, extra)
        # A copy of the shared full domains, then the pinned and restricted fields: the lists are
        # never changed in place (narrowing replaces them), and explanations start thousands of
        # small queries, where a pass building every field's list would cost the most.
        domains = dict(self._full)
        for name, value in pins.items():
            if name in domains:
                domains[name] = [value] if value in self.domains[name] else []
        if allowed is not None:
            for name, keep in allowed.items():
                if name in domains and name not in pins:
                    domains[name] = [v for v in self.domains[name] if v in keep]
        if any(not domains[name] for name in (*pins, *(allowed or ())) if name in domains):
            return None
        # In pack order, without a pass over every rule (explanations ask many times).
        cons = [self._cons[r] for r in sorted(wanted, key=self.rule_index.__getitem__)]
        cons += self._extra_cons(extra)
        by_field = self._index(cons)
        # A rule that reads no field is a constant: it holds everywhere or nowhere.
        if any(not c.fields and not c.holds(()) for c in cons):
            return None
        state = State(domains, {c.key: c for c in cons if c.fields}, by_field)
        return state if state._propagate(list(by_field)) else None

    def _extra_cons(self, extra: Sequence[Extra]) -> list[_Con]:
        return [
            _Con(
                f"#extra{i}",
                item.fields,
                _memoized(_spread(item.holds)),
                _LazyConstraint(item.holds),
                tuple(self.domains[f] for f in item.fields),
            )
            for i, item in enumerate(extra)
        ]

    def _with_extra(self, state: State, extra: Sequence[Extra]) -> State | None:
        """`state` (every rule, propagated) with ad-hoc conditions added and propagated: the
        same state as propagating all of them from scratch (the fixpoint does not depend on the
        order), with the conditions after the rules, as `start` orders them."""
        cons = self._extra_cons(extra)
        if any(not c.fields and not c.holds(()) for c in cons):
            return None
        by_field = dict(state.by_field)
        for con in cons:
            if con.fields:
                state.open[con.key] = con
            for name in con.fields:
                by_field[name] = [*by_field.get(name, ()), con]
        state.by_field = by_field
        return state if state._propagate([f for c in cons for f in c.fields]) else None

    def _root(self) -> State | None:
        """Every rule with no pin, propagated once for the life of the pack (None: the pack has
        no solution at all). Forward checking to a fixpoint gives the same domains and open
        rules whatever order the narrowings come in, so a query can start from this state and
        propagate only what its pins change, instead of every rule of the pack again."""
        if self._root_state is _UNSET:
            cons = self._cons.values()
            if any(not c.fields and not c.holds(()) for c in cons):
                self._root_state = None  # a rule that reads no field and fails
            else:
                state = State(dict(self._full), {c.key: c for c in cons if c.fields}, self._all_by_field)
                self._root_state = state if state._propagate(list(self._all_by_field)) else None
        return self._root_state  # type: ignore[return-value]

    def _start_from_root(
        self, pins: Mapping[str, Scalar], allowed: Mapping[str, Collection[Scalar]] | None
    ) -> State | None:
        root = self._root()
        if root is None:
            return None
        domains = dict(root.domains)
        changed: list[str] = []
        for name, value in pins.items():
            current = domains.get(name)
            if current is None:
                continue
            if value not in current:
                return None  # not in the domain, or excluded by the rules alone
            if len(current) > 1:
                domains[name] = [value]
                changed.append(name)
        if allowed is not None:
            for name, keep in allowed.items():
                current = domains.get(name)
                if current is None or name in pins:
                    continue
                narrowed = [v for v in current if v in keep]
                if not narrowed:
                    return None
                if len(narrowed) != len(current):
                    domains[name] = narrowed
                    changed.append(name)
        state = State(domains, dict(root.open), self._all_by_field)
        return state if state._propagate(changed) else None

    def within(self, budget: Budget) -> CompiledPack:
        """This compiled pack charging its searches to `budget` (one command's, or one call's):
        a shallow copy sharing everything else, so it costs nothing to make per request."""
        bound = copy.copy(self)
        bound.budget = budget
        return bound

    def search(
        self,
        state: State,
        *,
        budget: int | None = None,
        task: str = "checking a request",
        trace: SearchTrace | None = None,
        hint: Mapping[str, Scalar] | None = None,
        around: Sequence[str] | None = None,
    ) -> Assignment | None:
        """A solution extending `state`, or None. The open constraints are split into independent
        groups (they share no free field) and each is searched on its own, smallest domain first,
        so a dead end in one group never makes the search re-try the choices of another.

        `hint` is an earlier solution (a witness): a group it still satisfies is taken from it
        without a search, and the searched groups try its values first. When one field of a
        solved request changes, only the group around that field is searched again.
        `around`: the fields whose domains changed since `hint` was a complete solution (see
        `State.assign`); the hint is then only checked there.
        `budget`: steps for this search (at most its `Budget`'s, see `within`); the steps used are
        charged to that `Budget`, and running out raises `SolverBudgetExceeded` (or the command's
        `CommandBudgetExceeded` when the command's total is what ran out).
        """
        meter = self.budget if self.budget is not None else Budget()
        allowed = meter.allowance(budget)
        counter = trace if trace is not None else SearchTrace()
        found = self._search(state, meter, allowed, task, counter, hint, around)
        meter.spend(counter.steps)
        return found

    def _search(
        self,
        state: State,
        meter: Budget,
        allowed: int,
        task: str,
        trace: SearchTrace,
        hint: Mapping[str, Scalar] | None,
        around: Sequence[str] | None,
    ) -> Assignment | None:
        domains = state.domains
        steps = 0
        if hint is not None:
            # The hint (usually the last witness with one value changed) is often a solution
            # already, or one after a few fields around the change are decided again.
            repaired, steps = _repair(state, hint, around)
            if steps > allowed:
                raise meter.exhausted(task, allowed)
            if repaired is not None:
                trace.steps = steps
                return repaired
        groups = _independent_groups(state)
        solution = _starting_values(domains, hint)
        remaining = allowed - steps
        query_residues: dict[Any, tuple[Scalar, ...]] = {}
        for cons in groups:
            if hint is not None and _fits(hint, domains, cons):
                continue  # `solution` already holds the hint's values for this group
            names = sorted({f for c in cons for f in c.fields}, key=lambda n: (len(domains[n]), n))
            # A cheap descent (`_dive`) solves most groups of a possible request; arc consistency
            # alone refutes most impossible ones; the backtracking search that keeps arc
            # consistency at every step decides what is left.
            if hint is None:
                # No guess to start from (refutations for explanations, mostly): straight to
                # the search that keeps arc consistency.
                dived, used, refuted = None, 0, False
            else:
                dived, used, refuted = _dive(state, names, cons, hint, remaining)
            steps += used
            remaining -= used
            if remaining < 0:
                raise meter.exhausted(task, allowed)
            if dived is not None:
                solution.update(dived)
                continue
            if refuted:
                trace.steps = steps
                return None
            local = {n: _pc().Domain(_hint_first(domains[n], hint, n)) for n in names}
            vcons: dict[str, list[tuple[Any, tuple[str, ...]]]] = {n: [] for n in names}
            for con in cons:
                for name in con.fields:
                    vcons[name].append((con.constraint, con.fields))
            counter = SearchTrace()
            holds = self._checks(cons, query_residues)
            try:
                found = _new_search(remaining, task, counter, holds, self._verdicts).getSolution(
                    local, None, vcons
                )
            except SolverBudgetExceeded:
                # Name the whole budget, not what was left of it for this group.
                raise meter.exhausted(task, allowed) from None
            steps += counter.steps
            remaining -= counter.steps
            if found is None:
                trace.steps = steps
                return None
            solution.update(found)
        trace.steps = steps
        return solution

    def mend(
        self, state: State, solution: Mapping[str, Scalar], name: str, value: Scalar
    ) -> Assignment | None:
        """A solution of `state` with `name = value`, made from `solution` (a solution of
        `state`) by deciding again only the fields of the rules the new value breaks, without
        propagating it; None when that small repair does not find one (not a refutation).

        Sound because every rule `state` has closed is kept by any values of its domains, and
        the open rules that do not read `name` or a field decided again keep `solution`'s values.
        Costs a few rule checks where `assign` + `search` costs a propagation of the new value.
        """
        if value not in state.domains[name]:
            return None
        light = State(dict(state.domains), state.open, state.by_field)
        light.domains[name] = [value]
        mended, _ = _repair(light, {**solution, name: value}, [name])
        return mended

    def mend_in_place(
        self, state: State, solution: dict[str, Scalar], name: str, value: Scalar, *, rounds: int = 1
    ) -> list[str] | None:
        """`mend`, changing `solution` in place: `name = value` and the few fields around the
        rules that breaks decided again. The fields changed (`name` first), or None with
        `solution` as it was. Costs the rules around `name`, never a pass over every field, so
        a sweep can walk one solution through every value of a large pack.

        `rounds`: how many times the region may grow by a ring of neighbours. One by default: a
        sweep leaves what it cannot mend to a search anyway, and on the SGLang pack's page
        sessions 97 % of the mends that a second or third ring made work failed all the same
        (1,772 failures at ~1.6 ms each against 106 late successes)."""
        if value not in state.domains[name]:
            return None
        old = solution[name]
        solution[name] = value
        region: set[str] = set()
        for con in state.by_field.get(name, ()):
            if con.key in state.open and not con.holds(tuple(solution[f] for f in con.fields)):
                free = [f for f in con.fields if f != name and len(state.domains[f]) > 1]
                if not free:
                    solution[name] = old
                    return None
                region.update(free)
        if not region:
            return [name]
        before = dict(solution)
        kept = state.domains[name]
        state.domains[name] = [value]
        try:
            # As `_repair`: the fields of the broken rules first, then a ring of neighbours
            # more (a neighbour that must change may break a rule further out), a few times.
            for _ in range(rounds):
                if len(region) > _SWEEP_FIELDS:
                    break
                if _redecide(state, solution, sorted(region)):
                    return [name, *(f for f in sorted(region) if solution[f] != before[f])]
                grown = set(region)
                for field_ in region:
                    for con in state.by_field.get(field_, ()):
                        if con.key in state.open:
                            grown.update(f for f in con.fields if f != name and len(state.domains[f]) > 1)
                if grown == region:
                    break
                region = grown
        finally:
            state.domains[name] = kept
        solution[name] = old
        return None

    def solve(
        self,
        pins: Mapping[str, Scalar],
        *,
        rules: Collection[str] | None = None,
        allowed: Mapping[str, Collection[Scalar]] | None = None,
        extra: Sequence[Extra] = (),
        trace: SearchTrace | None = None,
        budget: int | None = None,
        task: str = "checking a request",
        hint: Mapping[str, Scalar] | None = None,
    ) -> Assignment | None:
        """A solution under `pins` (and `allowed` value sets), or None.

        `rules` limits the hard rules taken into account (default: all); `extra` adds ad-hoc
        conditions. Pins are folded in first, then independent groups are searched separately
        (`hint`: see `search`).
        """
        state = self.start(pins, rules=rules, allowed=allowed, extra=extra)
        if state is None:
            return None
        return self.search(state, budget=budget, task=task, trace=trace, hint=hint)

    def satisfiable(
        self,
        pins: Mapping[str, Scalar],
        *,
        without_rules: Collection[str] = (),
        extra: Sequence[Extra] = (),
        allowed: Mapping[str, Collection[Scalar]] | None = None,
        task: str = "checking a request",
    ) -> Assignment | None:
        """A witness that `pins` can hold under the rules (minus `without_rules`), or None."""
        rules = None if not without_rules else [r for r in self.rule_ids if r not in without_rules]
        return self.solve(pins, rules=rules, extra=extra, allowed=allowed, task=task)

    def solutions(
        self,
        pins: Mapping[str, Scalar],
        *,
        rules: Collection[str] | None = None,
        allowed: Mapping[str, Collection[Scalar]] | None = None,
        budget: int | None = None,
    ) -> Iterator[Assignment]:
        """Every solution under `pins` (for counting, tests and brute-force checks)."""
        domains = {
            name: _pc().Domain(
                [pins[name]]
                if name in pins
                else [v for v in values if allowed is None or name not in allowed or v in allowed[name]]
            )
            for name, values in self.domains.items()
        }
        if any(not d for d in domains.values()):
            return iter(())
        vconstraints: dict[str, list[tuple[Any, tuple[str, ...]]]] = {n: [] for n in domains}
        for rid in self.rule_ids:
            if rules is None or rid in rules:
                rule = self.rules[rid]
                for name in rule.fields:
                    vconstraints[name].append((rule.constraint, rule.fields))
        holds = self._checks(self._cons.values(), {})
        # An iterator: its steps are bounded (by `budget`, else the pack's Budget), not charged.
        steps = (self.budget if self.budget is not None else Budget()).allowance(budget)
        solver = _new_search(steps, "enumerating solutions", None, holds, self._verdicts)
        found: Iterator[Assignment] = solver.getSolutionIter(domains, None, vconstraints)
        return found


def _spread(holds: Callable[..., bool]) -> Callable[[tuple[Scalar, ...]], bool]:
    """An ad-hoc condition (called with one argument per field) as a check over a value tuple."""

    def check(values: tuple[Scalar, ...]) -> bool:
        return bool(holds(*values))

    return check


def _constraint(holds: Callable[[tuple[Scalar, ...]], bool]) -> Any:
    def check(*values: Scalar) -> bool:
        return holds(values)

    return _LazyConstraint(check)


_MEMO_LIMIT = 1 << 16


def _memoized(
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
            elif len(table) < _MEMO_LIMIT:
                table[values] = known
        return known

    return check


# Compiled packs by digest, the most recently used kept: a widened pack (a request's unlisted
# value of an open field) has a digest of its own, so a table that never forgets grows with
# every distinct request of that kind.
_COMPILED: Lru[str, CompiledPack] = Lru(PACKS_KEPT)


def compile_pack(pack: Pack) -> CompiledPack:
    """The compiled form of a pack, cached by the pack's content digest."""
    key = pack.digest or str(id(pack))
    compiled = _COMPILED.get(key)
    if compiled is None or (compiled.pack is not pack and not pack.digest):
        compiled = CompiledPack(pack)
        _COMPILED.put(key, compiled)
    return compiled
