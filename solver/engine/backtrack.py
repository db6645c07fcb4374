"""The backtracking search that maintains arc consistency: the only module that uses python-constraint.

`new_search` makes a python-constraint `Solver` whose search (`getSolutionIter`) decides the
field with the smallest domain relative to its rules' failures (dom/wdeg) and keeps every rule
generalised-arc-consistent after each assignment, with three-valued verdicts and remembered
supports (residues). It is what refutations need; most satisfiable queries are answered before
it by propagation and local search (`solver.engine.localsearch`). python-constraint is imported on
first use (`domain`, `LazyConstraint`, `new_search`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from solver.engine.state import MEMO_LIMIT, ResidueCheck
from solver.errors import SolverBudgetExceeded
from solver.model import Scalar

__all__ = ["NO_VERDICTS", "LazyConstraint", "SearchTrace", "Verdicts", "domain", "new_search", "no_verdicts"]

Assignment = dict[str, Scalar]


@dataclass
class SearchTrace:
    """What the ordered search saw on its final path: each field's domain when it was decided."""

    domains: dict[str, tuple[Scalar, ...]] = field(default_factory=dict)
    steps: int = 0


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
                # A step saves, checks and restores the domain of every open field: on a large
                # problem it costs a step per 64 of them, so the budget bounds time at any size
                # (the shipped packs' problems have fewer than 64 fields: a step each, as before).
                steps += max(1, len(pushed) // 64)
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


Verdicts = tuple[frozenset[Scalar], frozenset[Scalar]]
NO_VERDICTS: Verdicts = (frozenset(), frozenset())


def no_verdicts(constraint: Any, target: str, known: tuple[tuple[str, Scalar], ...]) -> Verdicts:
    return NO_VERDICTS


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
    """A python-constraint `Domain` of `values` (what `new_search` searches over)."""
    return _pc().Domain(values)
