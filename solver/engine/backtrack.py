"""The backtracking search that maintains arc consistency: the only module that uses python-constraint.

`new_search` makes a python-constraint `Solver` whose search (`getSolutionIter`) decides the
field with the smallest domain relative to its rules' failures (dom/wdeg) and keeps every rule
generalised-arc-consistent after each assignment, with three-valued verdicts and remembered
supports (residues). It is what refutations need; most satisfiable queries are answered before
it by propagation and local search (`solver.engine.localsearch`). python-constraint is imported on
first use (`domain`, `LazyConstraint`, `new_search`).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from solver.engine.state import MEMO_LIMIT, ResidueCheck
from solver.errors import SolverBudgetExceeded
from solver.frozen import Mutable, field, mutable_type
from solver.model import Scalar

__all__ = ["NO_VERDICTS", "LazyConstraint", "SearchTrace", "Verdicts", "domain", "new_search", "no_verdicts"]

Assignment = dict[str, Scalar]


@mutable_type
class SearchTrace(Mutable):
    """What the ordered search saw on its final path: each field's domain when it was decided."""

    domains: dict[str, tuple[Scalar, ...]] = field(default_factory=dict)
    steps: int = 0
    # Per field: the values propagation forced, of fields decided after it, that its warn rules
    # read when it was ranked (`Plan.warn_forced`), so its explanation reads the same.
    forced: dict[str, dict[str, Scalar]] = field(default_factory=dict)
    # Per field: the values a warn rule flags though some decision after it was still open (every
    # solution with the value breaks the rule: `solver.reasoning.steering`), with that rule.
    flagged: dict[str, dict[Scalar, str]] = field(default_factory=dict)
    # The warn rules the answer breaks, once the decisions are settled (None: not known yet).
    broken: list[str] | None = None


def _pc() -> Any:
    """python-constraint, imported on first use: it costs a launcher ~25 ms of start-up (most of
    it `concurrent.futures` for its ParallelSolver), and the common queries are answered by
    propagation and a short descent before any backtracking search is needed."""
    import constraint

    return constraint


class LazyConstraint:
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


def new_search(*args: Any) -> Any:
    """A `_Search` that is also a python-constraint `Solver` (the class is made on first use)."""
    global _SEARCH_CLASS
    if _SEARCH_CLASS is None:
        _SEARCH_CLASS = type("_Search", (_Search, _pc().Solver), {})
    return _SEARCH_CLASS(*args)


class _Search:
    """Backtracking that maintains arc consistency, smallest domain first (a python-constraint
    `Solver`: instances come from `new_search`).

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
        holds: Mapping[int, ResidueCheck] | None = None,
        verdicts: Callable[[Any, str, tuple[tuple[str, Scalar], ...]], Verdicts] | None = None,
    ) -> None:
        self._verdicts = verdicts or no_verdicts
        self._budget = budget
        self._task = task
        self._trace = trace
        self._holds = holds or {}
        self._weights: dict[int, int] = {}
        # The rule that emptied a domain in `_consistent`, and its fields.
        self._culprit: tuple[Any, Sequence[str]] = (None, ())

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
                # Whether an earlier target of this rule was narrowed to one value here (the free
                # fields had two or more when listed, and only this loop narrows them): a flag,
                # where a scan of the free fields per target was ~12 % of a search's time.
                singled = False
                for target in free:
                    dom = domains[target]
                    before = len(dom)
                    if singled:
                        # An earlier target of this rule was narrowed to one value: it is known now.
                        known = tuple(
                            (f, assigned[f] if f in assigned else domains[f][0])
                            for f in fields
                            if f != target and (f in assigned or len(domains[f]) == 1)
                        )
                    always, never = passes(constraint, target, known)
                    if always.issuperset(dom):
                        continue  # every value keeps the rule whatever the rest hold (one C call)
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
                        self._culprit = (constraint, fields)
                        return False
                    if len(dom) != before:
                        singled = singled or len(dom) == 1
                        if target not in queued:
                            queue.append(target)
                            queued.add(target)
        return True

    def getSolutionIter(
        self, domains: dict[str, Any], constraints: Any, vconstraints: dict[str, Any]
    ) -> Iterator[Assignment]:
        assignments: Assignment = {}
        # (variable, values left to try, trail mark before its assignment, open fields then)
        stack: list[tuple[str, list[Scalar], int, int]] = []
        steps = 0
        trace = self._trace
        pick = _Picker(domains, vconstraints, self._weights, assignments)
        trail = pick.trail
        if not self._consistent(domains, assignments, vconstraints, list(domains)):
            return
        while True:
            variable = pick.next()
            if variable is None:
                if trace is not None:
                    trace.steps = steps
                yield dict(assignments)
                if not stack:
                    return
                variable, values, mark, width = stack.pop()
                pick.undo(mark)
            else:
                values = list(reversed(domains[variable]))  # pop() takes the first value first
                width = len(domains) - len(assignments) - 1  # the other open fields
            while True:
                if not values:
                    # Nothing left for this variable: go back to the previous one.
                    pick.unassign(variable)
                    back = self._backtrack(stack, pick)
                    if back is None:
                        if trace is not None:
                            trace.steps = steps
                        return
                    variable, values, mark, width = back
                assignments[variable] = values.pop()
                # A step is charged a step per 64 open fields, as when every step saved and
                # restored each open field's domain, so that a budget means what it meant (the
                # shipped packs' problems have fewer than 64 fields: a step each).
                steps += max(1, width // 64)
                if steps > self._budget:
                    raise SolverBudgetExceeded(self._task, self._budget)
                mark = len(trail)
                failed: Any = None
                failed_fields: Sequence[str] = ()
                for constraint, variables in vconstraints[variable]:
                    # (forward checking on: python-constraint narrows the open fields' domains)
                    if not constraint(variables, domains, assignments, width > 0):
                        failed, failed_fields = constraint, variables
                        break
                else:
                    if self._consistent(domains, assignments, vconstraints, [variable]):
                        break
                    failed, failed_fields = self._culprit
                if failed is not None:
                    self._weights[id(failed)] = self._weights.get(id(failed), 1) + 1
                    pick.reweigh(failed_fields)
                pick.undo(mark)
            stack.append((variable, values, mark, width))

    @staticmethod
    def _backtrack(
        stack: list[tuple[str, list[Scalar], int, int]], pick: _Picker
    ) -> tuple[str, list[Scalar], int, int] | None:
        """Unwind `stack` to the latest variable with values left to try (restoring the domains
        each level narrowed and dropping the assignments of exhausted levels); None when there
        is none."""
        while stack:
            entry = stack.pop()
            pick.undo(entry[2])
            if entry[1]:
                return entry
            pick.unassign(entry[0])
        return None

    def getSolution(
        self, domains: dict[str, Any], constraints: Any, vconstraints: dict[str, Any]
    ) -> Assignment | None:
        return next(self.getSolutionIter(domains, constraints, vconstraints), None)


class _Domain(list):  # type: ignore[type-arg]
    """A field's remaining values in a search: a list whose `hideValue` (what python-constraint's
    forward checking and `_consistent` call to remove a value) logs the removal on the search's
    trail, so that a backtrack restores only what its step removed."""

    __slots__ = ("name", "trail")

    def __init__(self, values: Sequence[Scalar]) -> None:
        super().__init__(values)
        self.name = ""
        self.trail: list[tuple[_Domain, Scalar]] = []

    def hideValue(self, value: Scalar) -> None:  # (python-constraint calls it by this name)
        list.remove(self, value)
        self.trail.append((self, value))


class _Picker:
    """The search's variable order, dom/wdeg (the smallest domain relative to how often the
    field's rules have failed; a field down to one value first, in the domains' order), and its
    trail of removed values.

    Plain smallest-domain-first picks the many unrelated two-valued fields first, and a dead end
    among the big attention fields is then re-proved under every combination of them; weighting
    rules by their failures moves the fields that cause dead ends to the front.

    Kept in two heaps, brought up to date with the fields whose domain or weight changed since
    the last pick, so a step costs what it changed rather than a scan of every field (which made
    a search over n fields cost n^2: explain on a 2,500-field pack spent 34 of 93 profiled
    seconds in that scan and 23 in saving and restoring every open domain per step). The pick
    is the same field the scan made: the lowest (score, position), ties to the first in order.
    """

    def __init__(
        self,
        domains: dict[str, Any],
        vconstraints: dict[str, Any],
        weights: dict[int, int],
        assigned: Assignment,
    ) -> None:
        self.domains = domains
        self.vconstraints = vconstraints
        self.weights = weights
        self.assigned = assigned
        self.trail: list[tuple[_Domain, Scalar]] = []
        self.order = {name: i for i, name in enumerate(domains)}
        for name, dom in domains.items():
            dom.name, dom.trail = name, self.trail
        self.wdeg: dict[str, int] = {}
        self.singles: list[tuple[int, str]] = []  # (position, field): a domain of one value
        self.scores: list[tuple[float, int, str]] = []  # (size / wdeg, position, field)
        self.seen = -1  # trail entries up to here are in the heaps (-1: heaps not built yet)
        self.dirty: set[str] = set()

    def _score(self, name: str) -> float:
        wdeg = self.wdeg.get(name)
        if wdeg is None:
            weights = self.weights
            wdeg = self.wdeg[name] = 1 + sum(weights.get(id(c), 1) for c, _ in self.vconstraints[name])
        return len(self.domains[name]) / wdeg

    def _rebuild(self) -> None:
        domains, assigned, order = self.domains, self.assigned, self.order
        free = [name for name in domains if name not in assigned]
        self.singles = [(order[n], n) for n in free if len(domains[n]) <= 1]
        self.scores = [(self._score(n), order[n], n) for n in free]
        heapq.heapify(self.scores)  # (singles is in order already: a sorted list is a heap)
        self.seen = len(self.trail)
        self.dirty.clear()

    def next(self) -> str | None:
        """The field to decide next, or None when every field is decided."""
        domains, assigned = self.domains, self.assigned
        if self.seen < 0 or len(self.scores) > 8 * len(domains) + 64:
            self._rebuild()
        else:
            dirty = self.dirty
            trail = self.trail
            if self.seen < len(trail):
                dirty.update(dom.name for dom, _ in trail[self.seen :])
            self.seen = len(trail)
            order = self.order
            for name in dirty:
                if name not in assigned:
                    heapq.heappush(self.scores, (self._score(name), order[name], name))
                    if len(domains[name]) <= 1:
                        heapq.heappush(self.singles, (order[name], name))
            dirty.clear()
        singles = self.singles
        while singles:
            name = singles[0][1]
            if name in assigned or len(domains[name]) > 1:
                heapq.heappop(singles)  # out of date: decided, or its values came back
                continue
            return name
        scores = self.scores
        while scores:
            score, _, name = scores[0]
            if name in assigned or score != self._score(name):
                heapq.heappop(scores)  # out of date
                continue
            return name
        return None

    def undo(self, mark: int) -> None:
        """Put back the values removed since the trail had `mark` entries, each domain's in the
        order they were removed (as python-constraint's `Domain.popState` does: the order the
        next values are tried in depends on it)."""
        trail = self.trail
        if len(trail) <= mark:
            return
        dirty = self.dirty
        for dom, value in trail[mark:]:
            list.append(dom, value)
            dirty.add(dom.name)
        del trail[mark:]
        if self.seen > mark:
            self.seen = mark

    def unassign(self, name: str) -> None:
        self.assigned.pop(name, None)
        self.dirty.add(name)

    def reweigh(self, fields: Sequence[str]) -> None:
        """A rule over `fields` failed (its weight has grown): their scores change."""
        for name in fields:
            self.wdeg.pop(name, None)
            self.dirty.add(name)


_GAC_LIMIT = 256


Verdicts = tuple[frozenset[Scalar], frozenset[Scalar]]
NO_VERDICTS: Verdicts = (frozenset(), frozenset())


def no_verdicts(constraint: Any, target: str, known: tuple[tuple[str, Scalar], ...]) -> Verdicts:
    return NO_VERDICTS


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
            if len(residues) < MEMO_LIMIT or key in residues:
                residues[key] = combo
            return True
    return False


def domain(values: Sequence[Scalar]) -> Any:
    """A domain of `values` for `new_search` (python-constraint's constraints narrow it)."""
    return _Domain(values)
