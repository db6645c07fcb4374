"""The exact model counter behind `confsolve count`, `lint` and `diff` (`ModelCounter`).

Never a product loop over the domains. Pins and one-field rules shrink domains first (unit
propagation); rules only interact through fields left free, so the fields split into independent
components whose counts multiply; a component is counted by branching on its busiest field, after
which it often splits again, and every component count is cached by what its rules still say
(their residuals once the values they read from outside are known) and its fields' domains, so
equal sub-problems are counted once (the #SAT "component caching" idea). It can also count
*projected* configurations (how many assignments of some fields extend to a solution), which
`diff` needs for packs with different fields.

Imports the standard library, `solver.engine.countkeys` (a component's cache key),
`solver.engine.countlimit`, `solver.engine.countroot` (a root's domains), `counttry` (a node's
first-value try), `solver.engine.groups` (the one union-find), `solver.pack.expr` (a rule is
counted as its `Condition`) and `solver.values`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from itertools import chain
from typing import TYPE_CHECKING, Any, Literal

from solver.engine.countkeys import ResidualKeys
from solver.engine.countlimit import FIELDS_PER_STEP, CountLimitReached, Limit, Progress, StepMeter
from solver.engine.countroot import StartState
from solver.engine.counttry import FirstValues
from solver.engine.groups import grouped_by_readers
from solver.pack.expr import Condition
from solver.values import matching

if TYPE_CHECKING:
    from solver.model import Scalar

__all__ = ["ModelCounter"]

# A query's root: its open checks (in order, and as a set), free domains and fixed values.
_Root = tuple[list[int], dict[str, tuple["Scalar", ...]], dict[str, "Scalar"], frozenset[int]]


class ModelCounter:
    """Counts the assignments of `domains` that satisfy every check, reusing work across calls.

    With `project`, counts the assignments of the projected fields that extend to a full solution
    (the other fields are existential; `project=()` makes `count` a 0/1 satisfiability test).
    One counter answers many queries: its caches hold component counts and propagation results,
    which do not depend on the pins that led to them. `only` restricts a query to some checks
    and `extra` adds more (`add` appends a check, such as an ad-hoc condition, for later use).

    >>> c = ModelCounter({"a": (1, 2, 3), "b": (1, 2, 3), "c": ("x", "y")},
    ...                  [Condition.over(("a", "b"), lambda v: v[0] <= v[1])])
    >>> c.count({}), c.count({"c": "x"}), c.count({"a": 3}), c.count({"a": 3}, only=[])
    (12, 6, 2, 6)
    >>> c.solution({"a": 3})
    {'a': 3, 'b': 3, 'c': 'x'}
    """

    def __init__(
        self,
        domains: Mapping[str, Sequence[Scalar]],
        checks: Sequence[Condition],
        *,
        project: Collection[str] | None = None,
    ) -> None:
        self.domains = {name: tuple(values) for name, values in domains.items()}
        self.project = None if project is None else frozenset(project)
        self.checks: list[Condition] = []
        self.partials: list[Callable[[Mapping[str, Any]], bool | None] | None] = []  # None: no 3-valued form
        self.by_field: dict[str, list[int]] = {name: [] for name in self.domains}
        self._readers: dict[str, set[int]] = {name: set() for name in self.domains}  # (`_split`)
        self._fields: list[tuple[str, ...]] = []  # each check's fields, by index
        # Per check and field: the values that make the check true (`entails`: once a domain lies
        # inside, the check drops out, so the rest can split apart) or false (`refutes`: a query
        # removes them up front) on their own, e.g. every value but `fa3` for "when x == 'fa3'".
        self.entails: list[dict[str, frozenset[Any]]] = []
        self.refutes: list[dict[str, frozenset[Any]]] = []
        for check in checks:
            self.add(check)
        self._base = len(self.checks)  # what `only=None` means: the checks given here
        self.start = StartState(self.domains, self._fields, self.refutes)  # (every root's)
        self._cache: dict[tuple[Any, ...], int] = {}
        # The fields of components counted zero: `_find` keys a component (a pass over its
        # residual checks) only when one with its fields has failed, as only then can it hit.
        self._zero_shapes: set[frozenset[str]] = set()
        self._keys = ResidualKeys(self.checks, self.domains)
        self._units: dict[tuple[Any, ...], frozenset[Any]] = {}
        self._revised: dict[tuple[Any, ...], Any] = {}
        self._narrowed: dict[tuple[Any, ...], tuple[Scalar, ...]] = {}
        self._roots: dict[frozenset[int] | None, _Root | None] = {}
        self._budget = StepMeter(Limit())
        self._rank: Callable[[str, tuple[Scalar, ...]], Sequence[Scalar]] = lambda n, v: v
        self._firsts = FirstValues(self._rank)  # (`solution`'s, per search)
        self.steps = 0

    def add(self, check: Condition) -> int:
        """Append a check; its index, for `only`."""
        index = len(self.checks)
        self.checks.append(check)
        self.partials.append(partial := check.partial if check.three_valued else None)
        sure: dict[str, frozenset[Any]] = {}
        dead: dict[str, frozenset[Any]] = {}
        self._fields.append(check.fields)
        for name in check.fields:
            self.by_field[name].append(index)
            self._readers[name].add(index)
            if partial is not None:
                verdicts = {v: partial({name: v}) for v in self.domains[name]}
                sure[name] = frozenset(v for v, ok in verdicts.items() if ok is True)
                dead[name] = frozenset(v for v, ok in verdicts.items() if ok is False)
        self.entails.append(sure)
        self.refutes.append(dead)
        return index

    def count(
        self,
        pins: Mapping[str, Scalar] | None = None,
        *,
        allowed: Mapping[str, Collection[Scalar]] | None = None,
        only: Collection[int] | None = None,
        extra: Collection[int] = (),
        limit: Limit | None = None,
        progress: Progress | None = None,
    ) -> int:
        """The number of (projected) solutions with `pins` fixed and fields kept within `allowed`.

        Raises `CountLimitReached` when `limit` runs out, with exact `lower` and `upper` bounds on
        the number; `progress(steps, seconds)` is called now and then."""
        start = self._start(pins, allowed, only, extra, limit, progress)
        if start is None:
            return 0
        checks, pending, doms, values = start
        try:
            return self._solve(checks, pending, doms, values)
        finally:
            self.steps += self._budget.steps

    def solution(
        self,
        pins: Mapping[str, Scalar] | None = None,
        *,
        allowed: Mapping[str, Collection[Scalar]] | None = None,
        only: Collection[int] | None = None,
        extra: Collection[int] = (),
        limit: Limit | None = None,
        rank: Callable[[str, tuple[Scalar, ...]], Sequence[Scalar]] | None = None,
        local: bool = False,
    ) -> dict[str, Scalar] | None:
        """One assignment of every field that satisfies the checks (in use), or None.

        `rank(field, values)` orders the values tried for a field (default: domain order); a
        caller that wants varied solutions puts the values it has not seen yet first. It orders
        values, not positions: a narrowed domain in the order of the whole one. `local` (with
        `only`): the values of the fields the checks in use and `pins` read only, the search
        the same (`StartState.local_root`).
        """
        local = local and only is not None
        start = self._start(pins, allowed, only, extra, limit, local=local)
        if start is None:
            return None
        checks, pending, doms, values = start
        self._rank = rank or (lambda name, values: values)
        self._firsts = FirstValues(self._rank)
        try:
            found = self._find(checks, pending, doms, values)
        finally:
            self.steps += self._budget.steps
        return found if found is None or local else {n: found[n] for n in self.domains}

    def residual(
        self, pins: Mapping[str, Scalar] | None = None
    ) -> tuple[list[Condition], dict[str, tuple[Scalar, ...]], dict[str, Scalar]] | None:
        """What a count with `pins` starts from once propagation is done: the checks still open,
        the free fields' domains and the fixed values (None: no solution). For other methods of
        counting the same query (benchmarks/count_methods.py) and measuring its primal graph."""
        start = self._start(pins, None, None, (), None)
        if start is None:
            return None
        checks, pending, doms, values = start
        live = self._propagate(checks, pending, doms, values)
        return None if live is None else ([self.checks[c] for c in live], doms, values)

    # -- the search ------------------------------------------------------------------------
    def _start(
        self,
        pins: Mapping[str, Scalar] | None,
        allowed: Mapping[str, Collection[Scalar]] | None,
        only: Collection[int] | None,
        extra: Collection[int],
        limit: Limit | None,
        progress: Progress | None = None,
        local: bool = False,
    ) -> tuple[list[int], list[int], dict[str, tuple[Scalar, ...]], dict[str, Scalar]] | None:
        """The checks, the checks to look at, the free domains and the fixed values of a query.

        Propagating a set of checks with nothing pinned gives the same fixpoint every time, so it
        is kept per set (`only`); a query starts from it and re-examines only what its pins,
        `allowed` sets and `extra` checks touch.
        """
        self._budget = StepMeter(limit or Limit(), progress)
        if local and only is not None:  # (`local_root`'s domains are its own; every check pending)
            root = self.start.local_root(only, extra, pins)
        else:
            root = self._root(None if only is None else frozenset(only))
        if root is None:
            return None
        live, doms, values, alive = root
        if not local:
            doms, values = dict(doms), dict(values)
        extra = [c for c in sorted(set(extra)) if c not in alive]
        restrict = [name for index in extra for name, refuted in self.refutes[index].items() if refuted]
        changed: list[str] = []
        for name in {*(pins or {}), *(allowed or {}), *restrict}:
            domain = (values[name],) if name in values else doms[name]
            kept = domain
            if pins and name in pins:
                kept = matching(kept, pins[name])
            if allowed is not None and name in allowed:
                kept = tuple(v for v in kept if v in allowed[name])
            for index in extra:
                dead = self.refutes[index].get(name)
                if dead:
                    kept = tuple(v for v in kept if v not in dead)
            if not kept:
                return None
            if kept != domain:
                changed.append(name)
                if len(kept) == 1:
                    values[name] = kept[0]
                    doms.pop(name, None)
                else:
                    doms[name] = kept
        pending = extra + (
            live
            if local
            else list(dict.fromkeys(c for name in changed for c in self.by_field[name] if c in alive))
        )
        return live + extra, pending, doms, values

    def _root(self, only: frozenset[int] | None) -> _Root | None:
        if only in self._roots:
            return self._roots[only]
        checks = list(range(self._base)) if only is None else sorted(only)
        start = self.start.domains(checks)
        root: _Root | None = None
        if start is not None:
            doms, fixed, narrowed = start
            # Only the checks that act on the pack's own domains, and those reading a field the
            # refuted values narrowed, need a look: the others are at their fixpoint (forward
            # checking's does not depend on the order) until propagation narrows one of their
            # fields. A pass over every check of each root (an evaluation, then a test, each: now
            # set operations, `checks` sorted) was 7 % of lint's profile at 1,000 synthetic fields.
            chosen = set(checks)
            pending = self.start.loud_among(chosen, self._propagate)
            pending += [c for name in narrowed for c in self.by_field[name] if c in chosen]
            live = self._propagate(checks, pending, doms, fixed)
            # (Its checks as a set too, kept with it: each query read them as one, a set of
            # ~3,000 made twice per query over most of the pack at 1,000 synthetic fields.)
            root = None if live is None else (live, doms, fixed, frozenset(live))
        if len(self._roots) >= 64:
            self._roots.pop(next(iter(self._roots)))
        self._roots[only] = root
        return root

    def _weight(self, name: str, size: int) -> int:  # a field outside the projection counts once
        return size if self.project is None or name in self.project else 1

    def _split(
        self, live: list[int], doms: Mapping[str, tuple[Scalar, ...]]
    ) -> tuple[list[tuple[list[int], list[str]]], list[str]]:
        """Components (open checks, free fields), smallest first; the fields no check reads."""
        parts = grouped_by_readers(live, self._fields, self._readers, doms)
        read = {n for _, names in parts for n in names}
        # Smaller components first: a zero there saves counting the big ones.
        parts.sort(key=lambda p: len(p[1]))
        return parts, [n for n in doms if n not in read]

    def _solve(
        self,
        checks: list[int],
        pending: list[int],
        doms: dict[str, tuple[Scalar, ...]],
        values: dict[str, Scalar],
    ) -> int:
        """Count the sub-problem `checks` over the free fields `doms` (both owned by this call).

        `pending` are the checks to look at again: the others were at a fixpoint already.
        """
        live = self._propagate(checks, pending, doms, values)
        if live is None:
            return 0
        parts, loose = self._split(live, doms)
        total = 1
        for name in loose:  # read by no open check: any of its values will do
            total *= self._weight(name, len(doms[name]))
        for at, (part_checks, names) in enumerate(parts):
            try:
                sub = self._component(part_checks, names, doms, values)
            except CountLimitReached as stop:
                # The components after this one are not counted: each holds at most every
                # combination of its fields, and may hold none.
                rest = 1
                for _, others in parts[at + 1 :]:
                    rest *= self._size(others, doms)
                raise stop.bounded(
                    total * stop.lower if rest == 1 and at == len(parts) - 1 else 0,
                    total * (stop.upper or 0) * rest,
                ) from None
            if sub == 0:
                return 0
            total *= sub
        return total

    def _size(self, names: Iterable[str], doms: Mapping[str, tuple[Scalar, ...]]) -> int:
        """The number of (projected) combinations of these fields' values: an upper bound."""
        size = 1
        for name in names:
            size *= self._weight(name, len(doms[name]))
        return size

    def _find(
        self,
        checks: list[int],
        pending: list[int],
        doms: dict[str, tuple[Scalar, ...]],
        values: dict[str, Scalar],
    ) -> dict[str, Scalar] | None:
        """Like `_solve`, but the first solution (values of `doms` and `values`) or None."""
        live = self._propagate(checks, pending, doms, values)
        if live is None:
            return None
        # Each field at its first value in `rank` order, if that keeps every open check, is the
        # solution the search below finds (a solution's values survive propagation, and each
        # branch tries its first value first): taken without a split and branch per field.
        trial, firsts = dict(values), self._firsts
        firsts.fill(trial, chain.from_iterable(map(self._fields.__getitem__, live)), doms)
        self._budget.tick(1 + (len(trial) - len(values)) // FIELDS_PER_STEP)  # a step, as a branch
        if all(self.checks[c].holds(tuple([trial[n] for n in self.checks[c].fields])) for c in live):
            firsts.fill(trial, doms, doms)
            return trial
        parts, loose = self._split(live, doms)
        found = dict(values)
        firsts.fill(found, loose, doms)
        for part_checks, names in parts:
            shape = frozenset(names)
            key: tuple[Any, ...] | None = None
            if shape in self._zero_shapes:
                key, outside = self._keys.key(part_checks, names, doms, values)
                if self._cache.get(key) == 0:  # a count of zero holds in every mode
                    return None
            else:
                outside = self._keys.outside(part_checks, doms, values)
            branch = self._branch(part_checks, names, doms)
            touching = list(filter(set(part_checks).__contains__, self.by_field[branch]))
            for value in self._rank(branch, doms[branch]):
                self._budget.tick(1 + len(names) // FIELDS_PER_STEP)  # by size, as `_component`
                sub_doms = {n: doms[n] for n in names if n != branch}
                sub = self._find(part_checks, list(touching), sub_doms, {**outside, branch: value})
                if sub is not None:
                    found.update(sub)
                    break
            else:
                if key is None:
                    key = self._keys.key(part_checks, names, doms, values)[0]
                self._cache[key] = 0
                self._zero_shapes.add(shape)
                return None
        return found

    def _propagate(
        self,
        checks: list[int],
        pending: list[int],
        doms: dict[str, tuple[Scalar, ...]],
        values: dict[str, Scalar],
    ) -> list[int] | None:
        """Unit propagation and entailment to a fixpoint: the checks still open, or None."""
        live = set(checks)
        while pending:
            index = pending.pop()
            if index not in live:
                continue
            check = self.checks[index]
            names = check.fields
            free = [n for n in names if n in doms]
            if len(free) > 1:
                sure = self.entails[index]
                if any(n in sure and sure[n].issuperset(doms[n]) for n in free):
                    live.discard(index)
                    continue
                settled = None if (partial := self.partials[index]) is None else partial(values)
                if settled is True:
                    live.discard(index)
                elif settled is False:
                    return None
                elif len(free) > 2:
                    narrowed = self._narrow(index, free, doms, values)
                    if narrowed is None:
                        return None
                    for name in narrowed:
                        if len(doms[name]) == 1:
                            values[name] = doms.pop(name)[0]
                        pending += [c for c in self.by_field[name] if c in live]
                else:
                    changed = self._revise(index, free[0], free[1], doms, values)
                    if changed is None:
                        return None
                    if changed is True:
                        live.discard(index)
                    else:
                        for name in changed:
                            if len(doms[name]) == 1:
                                values[name] = doms.pop(name)[0]
                            pending += [c for c in self.by_field[name] if c in live]
                continue
            live.discard(index)
            if not free:
                if not check.holds(tuple(values[n] for n in names)):
                    return None
                continue
            target = free[0]
            allowed = self._supported(index, target, values)
            kept = tuple(v for v in doms[target] if v in allowed)
            if not kept:
                return None
            if len(kept) == len(doms[target]):
                continue
            if len(kept) == 1:
                values[target] = kept[0]
                del doms[target]
            else:
                doms[target] = kept
            pending += [c for c in self.by_field[target] if c in live]
        return [c for c in checks if c in live]

    def _narrow(
        self, index: int, free: list[str], doms: dict[str, tuple[Scalar, ...]], values: Mapping[str, Scalar]
    ) -> list[str] | None:
        """Drop the values that make a check with three or more free fields false on their own
        (three-valued evaluation with the fixed fields known): weaker than arc consistency but
        cheap, and it catches `when` cases such as "x in [...] is forced once y is fixed".
        None when a domain empties; else the fields whose domains shrank."""
        if (partial := self.partials[index]) is None:
            return []
        names = self.checks[index].fields
        known = {n: values[n] for n in names if n in values}
        outside = tuple(known.items())
        changed = []
        for name in free:
            key = (index, name, doms[name], outside)
            kept = self._narrowed.get(key)
            if kept is None:
                kept = self._narrowed[key] = tuple(
                    v for v in doms[name] if partial({**known, name: v}) is not False
                )
            if not kept:
                return None
            if len(kept) != len(doms[name]):
                doms[name] = kept
                changed.append(name)
        return changed

    def _revise(
        self, index: int, a: str, b: str, doms: dict[str, tuple[Scalar, ...]], values: Mapping[str, Scalar]
    ) -> list[str] | Literal[True] | None:
        """Arc consistency on a check with two free fields `a` and `b`.

        Removes the values with no support on the other side. Returns True when the check holds
        for every remaining pair (it can be dropped), None when a domain empties, else the fields
        whose domains shrank.
        """
        dom_a, dom_b = doms[a], doms[b]
        outside = tuple(values[n] for n in self.checks[index].fields if n != a and n != b)
        # Both field names belong in the key: the outside values are listed without names, so
        # (a, b free, c fixed) and (a, c free, b fixed) would otherwise share an entry whenever
        # b and c have equal domains.
        key = (index, a, b, dom_a, dom_b, outside)
        found = self._revised.get(key)
        if found is None:
            found = self._revised[key] = self._revise_new(index, a, b, dom_a, dom_b, values)
        if found is True or found is None:
            return found
        new_a, new_b = found
        changed = []
        if new_a != dom_a:
            doms[a] = new_a
            changed.append(a)
        if new_b != dom_b:
            doms[b] = new_b
            changed.append(b)
        return changed

    def _revise_new(
        self,
        index: int,
        a: str,
        b: str,
        dom_a: tuple[Scalar, ...],
        dom_b: tuple[Scalar, ...],
        values: Mapping[str, Scalar],
    ) -> tuple[tuple[Scalar, ...], tuple[Scalar, ...]] | Literal[True] | None:
        keep_a: list[Scalar] = []
        seen_b: set[Any] = set()
        entailed = True
        for value in dom_a:
            allowed = self._supported(index, b, values, (a, value))
            hits = [w for w in dom_b if w in allowed]
            if hits:
                keep_a.append(value)
                seen_b.update(hits)
            if len(hits) != len(dom_b):
                entailed = False
        if entailed:
            return True
        if not keep_a:
            return None
        return tuple(keep_a), tuple(w for w in dom_b if w in seen_b)

    def _supported(
        self, index: int, target: str, values: Mapping[str, Scalar], also: tuple[str, Scalar] | None = None
    ) -> frozenset[Any]:
        """The values of `target` that satisfy check `index` given the values of its other fields
        (from `values`, and `also` = one more field and its value).

        Memoised: the same check meets the same outside values in many branches.
        """
        names = self.checks[index].fields
        known = values if also is None else {**values, also[0]: also[1]}
        at = names.index(target)  # a check's fields are distinct names
        head, tail = tuple(known[n] for n in names[:at]), tuple(known[n] for n in names[at + 1 :])
        key = (index, target, head + tail)
        found = self._units.get(key)
        if found is None:  # rows by concatenation: a generator per row cost 10-15 % of a count
            holds = self.checks[index].holds
            found = self._units[key] = frozenset(v for v in self.domains[target] if holds((*head, v, *tail)))
        return found

    def _branch(self, checks: list[int], names: list[str], doms: Mapping[str, tuple[Scalar, ...]]) -> str:
        """The field to branch on: projected fields first, then the most rules per value."""
        projected = [n for n in names if self.project is None or n in self.project]
        pool = projected or names
        # (Counted in C: a loop over the fields of every check of the part was a tenth of a node.)
        degree = Counter(chain.from_iterable(map(self._fields.__getitem__, checks)))
        return max(pool, key=lambda n: (degree[n] / len(doms[n]), degree[n]))

    def _component(
        self,
        checks: list[int],
        names: list[str],
        doms: Mapping[str, tuple[Scalar, ...]],
        values: Mapping[str, Scalar],
    ) -> int:
        key, outside = self._keys.key(checks, names, doms, values)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        exists_only = self.project is not None and not any(n in self.project for n in names)
        branch = self._branch(checks, names, doms)
        touching = list(filter(set(checks).__contains__, self.by_field[branch]))
        total = 0
        options = doms[branch]
        for at, value in enumerate(options):
            sub_doms = {n: doms[n] for n in names if n != branch}
            span = self._size(sub_doms, sub_doms)  # measured now: _solve narrows sub_doms in place
            try:
                # Charged by size (a branch copies and keys its fields), a step budget bounds
                # time and memory on packs of thousands of fields too (a 5,000-field count ran
                # minutes and 2.5 GB within "20,000 steps"); a shipped pack's cost one step.
                self._budget.tick(1 + len(names) // FIELDS_PER_STEP)
                total += self._solve(checks, list(touching), sub_doms, {**outside, branch: value})
            except CountLimitReached as stop:
                # Exact so far: the branches counted, the bounds of the one cut short (none if
                # it had not started), and at most every combination for each branch left.
                started = stop.upper is not None
                left = span * (len(options) - at - started)
                lower = total + (stop.lower if started else 0)
                upper = total + (stop.upper or 0) + left
                if exists_only:
                    lower, upper = min(lower, 1), min(upper, 1)
                raise stop.bounded(lower, upper) from None
            if exists_only and total:
                total = 1
                break
        self._cache[key] = total
        if not total:
            self._zero_shapes.add(frozenset(names))
        return total
