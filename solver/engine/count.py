"""Exact counting of valid configurations: `confsolve count` and the counter `lint` and `diff` use.

What is counted: complete configurations, i.e. one value for every field of the pack (options and
the facts not given), that satisfy every hard rule and keep every given pin. A fact the request does
not give is free, exactly as in `resolve`, so `count --set platform=cuda` counts configurations over
every CUDA GPU and every model; `--by FIELD` splits the same number by that field's value (the
parts add up to the total). Warning rules never restrict, so they are not counted against.

How: never a product loop over the domains. Pins and one-field rules shrink domains first (unit
propagation); rules only interact through fields left free, so the fields split into independent
components whose counts multiply; a component is counted by branching on its busiest field, after
which it often splits again, and every component count is cached by (rules, domains, values the
rules read from outside), so equal sub-problems are counted once (the #SAT "component caching"
idea). `ModelCounter` can also count *projected* configurations (how many assignments of some
fields extend to a solution), which `diff` needs for packs with different fields.

Imports the standard library, `solver.errors` and, inside functions, `solver.engine.csp`; never
python-constraint or networkx.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from solver import progress as _progress
from solver.errors import SolverBudgetExceeded
from solver.values import count_text

if TYPE_CHECKING:
    from solver.budget import Budget
    from solver.model import Pack, Scalar

T = TypeVar("T")

__all__ = [
    "DEFAULT_LIMIT",
    "Check",
    "CountLimitReached",
    "CountResult",
    "Limit",
    "ModelCounter",
    "Progress",
    "count",
    "metered",
    "pack_checks",
]

DEFAULT_LIMIT = 2_000_000


@dataclass(frozen=True)
class Check:
    """A rule as the counter sees it: the fields it reads, a predicate over their values (in that
    order) and, optionally, a three-valued evaluation over a partial assignment (None = unknown).

    The partial form lets a rule that is already settled drop out early: `when` false makes a rule
    true whatever its other fields are, and dropping it is what lets the rest split apart.
    """

    fields: tuple[str, ...]
    holds: Callable[[Sequence[Any]], bool]
    partial: Callable[[Mapping[str, Any]], bool | None] | None = None

    def negated(self) -> Check:
        """The check that holds exactly where this one fails."""
        holds, partial = self.holds, self.partial
        return Check(
            self.fields,
            lambda v: not holds(v),
            None if partial is None else (lambda m: None if (r := partial(m)) is None else not r),
        )


class CountLimitReached(SolverBudgetExceeded):
    """The space is too large to count exactly within the step or time limit."""

    def __init__(self, limit: Limit, steps: int) -> None:
        self.limit = limit
        self.steps = steps
        self.task = "counting"
        self.budget = limit.steps or steps
        # Exact bounds on the count, filled in as the search unwinds: what the branches already
        # counted (lower) and that plus the size of every branch not counted yet (upper).
        self.lower = 0
        self.upper: int | None = None
        self.parts: dict[Any, int] = {}  # with `count(by=...)`: the values counted exactly
        if limit.steps is not None and steps > limit.steps:
            bound = f"{limit.option} {limit.steps} steps"
        elif limit.seconds is not None:
            bound = f"--limit {limit.seconds:g}s"
        else:
            bound = "its deadline"
        Exception.__init__(
            self,
            f"too many configurations to count exactly within {bound} "
            f"({steps} branching steps done): narrow the request with --set FIELD=VALUE "
            "or raise --limit (a number of steps, or seconds such as 60s)",
        )

    def __str__(self) -> str:
        said = super().__str__()
        if self.upper is None:
            return said
        lower, upper = count_text(self.lower), count_text(self.upper)
        return f"{said}; what was counted bounds it: at least {lower}, at most {upper}"

    def bounded(self, lower: int, upper: int) -> CountLimitReached:
        """This exception with the bounds of a larger count (for re-raising as it unwinds)."""
        self.lower, self.upper = lower, upper
        return self


@dataclass(frozen=True)
class Limit:
    """A budget for one count: branching steps and/or wall-clock seconds (None = unbounded)."""

    steps: int | None = DEFAULT_LIMIT
    seconds: float | None = None
    deadline: float | None = None
    """An absolute `time.monotonic()` by which to stop (a command's whole budget), or None."""
    option: str = "--limit"
    """The option that set `steps`, for the message (`--budget` when the command's is tighter)."""

    @classmethod
    def parse(cls, text: str) -> Limit:
        """`"500000"` (steps) or `"30s"` (seconds)."""
        raw = text.strip().lower()
        try:
            if raw.endswith("s"):
                seconds = float(raw[:-1])
                if seconds > 0:
                    return cls(steps=None, seconds=seconds)
            else:
                steps = int(raw.replace("_", ""))
                if steps > 0:
                    return cls(steps=steps)
        except ValueError:
            pass
        raise ValueError(f"--limit {text!r}: give a positive number of steps or seconds like 30s")


def metered(budget: Budget, counter: ModelCounter, ask: Callable[[Limit], T], limit: Limit, task: str) -> T:
    """`ask(limit)` of `counter` within `limit` and what `budget` (a command's) has left, its
    steps charged to `budget`. When the command's total is what ran out the error is the
    command's `CommandBudgetExceeded` (it ends the command), not `CountLimitReached` (which a
    caller may report as "not counted" and go on)."""
    from solver.budget import CommandBudgetExceeded

    left, total = budget.left(), budget.total
    if left is None or total is None:
        return ask(limit)
    if left < 1:
        raise CommandBudgetExceeded(task, total)
    steps = left if limit.steps is None else min(limit.steps, left)
    before = counter.steps
    try:
        return ask(Limit(steps=steps, seconds=limit.seconds, deadline=limit.deadline))
    except CountLimitReached:
        if steps == left and counter.steps - before >= left:  # the command's steps, not the limit's
            raise CommandBudgetExceeded(task, total) from None
        raise
    finally:
        budget.spend(counter.steps - before)


Progress = Callable[[int, float], None]
"""Called now and then during a count with the branching steps and seconds so far."""

_CLOCK_EVERY = 255  # branches between looks at the clock (a branch is tens of microseconds)
_FIELDS_PER_STEP = 64  # a branch of a component costs one step per this many of its fields


@dataclass
class _Budget:
    limit: Limit
    progress: Progress | None = None
    steps: int = 0
    started: float = field(default_factory=time.monotonic)

    ticks: int = 0

    def tick(self, steps: int = 1) -> None:
        self.steps += steps
        self.ticks += 1
        _progress.advance()  # the command's progress line and deadline (nothing in a library call)
        limit = self.limit
        if limit.steps is not None and self.steps > limit.steps:
            raise CountLimitReached(limit, self.steps)
        if self.ticks & _CLOCK_EVERY:
            return
        now = time.monotonic()
        if (limit.seconds is not None and now - self.started > limit.seconds) or (
            limit.deadline is not None and now > limit.deadline
        ):
            raise CountLimitReached(limit, self.steps)
        if self.progress is not None and not self.ticks & 4095:
            self.progress(self.steps, now - self.started)


class ModelCounter:
    """Counts the assignments of `domains` that satisfy every check, reusing work across calls.

    With `project`, counts the assignments of the projected fields that extend to a full solution
    (the other fields are existential; `project=()` makes `count` a 0/1 satisfiability test).
    One counter answers many queries: its caches hold component counts and propagation results,
    which do not depend on the pins that led to them. `only` restricts a query to some checks
    and `extra` adds more (`add` appends a check, such as an ad-hoc condition, for later use).

    >>> c = ModelCounter({"a": (1, 2, 3), "b": (1, 2, 3), "c": ("x", "y")},
    ...                  [Check(("a", "b"), lambda v: v[0] <= v[1])])
    >>> c.count({}), c.count({"c": "x"}), c.count({"a": 3}), c.count({"a": 3}, only=[])
    (12, 6, 2, 6)
    >>> c.solution({"a": 3})
    {'a': 3, 'b': 3, 'c': 'x'}
    """

    def __init__(
        self,
        domains: Mapping[str, Sequence[Scalar]],
        checks: Sequence[Check],
        *,
        project: Collection[str] | None = None,
    ) -> None:
        self.domains = {name: tuple(values) for name, values in domains.items()}
        self.project = None if project is None else frozenset(project)
        self.checks: list[Check] = []
        self.by_field: dict[str, list[int]] = {name: [] for name in self.domains}
        # Per check and field: the values that settle the check on their own (true whatever the
        # other fields are), e.g. every value but `fa3` for "when attention_backend == 'fa3' ...".
        # Once a field's domain lies inside that set the check is entailed and drops out, which is
        # what lets the remaining fields split into independent components. `refutes` holds the
        # values that falsify the check on their own; a query removes them up front.
        self.entails: list[dict[str, frozenset[Any]]] = []
        self.refutes: list[dict[str, frozenset[Any]]] = []
        for check in checks:
            self.add(check)
        self._base = len(self.checks)  # what `only=None` means: the checks given here
        self._cache: dict[tuple[Any, ...], int] = {}
        self._units: dict[tuple[Any, ...], frozenset[Any]] = {}
        self._revised: dict[tuple[Any, ...], Any] = {}
        self._narrowed: dict[tuple[Any, ...], tuple[Scalar, ...]] = {}
        self._roots: dict[
            frozenset[int] | None, tuple[list[int], dict[str, tuple[Scalar, ...]], dict[str, Scalar]] | None
        ] = {}
        self._budget = _Budget(Limit())
        self._rank: Callable[[str, tuple[Scalar, ...]], Sequence[Scalar]] = lambda n, v: v
        self.steps = 0

    def add(self, check: Check) -> int:
        """Append a check; its index, for `only`."""
        index = len(self.checks)
        self.checks.append(check)
        sure: dict[str, frozenset[Any]] = {}
        dead: dict[str, frozenset[Any]] = {}
        for name in check.fields:
            self.by_field[name].append(index)
            if check.partial is not None:
                verdicts = {v: check.partial({name: v}) for v in self.domains[name]}
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
    ) -> dict[str, Scalar] | None:
        """One assignment of every field that satisfies the checks (in use), or None.

        `rank(field, values)` orders the values tried for a field (default: domain order); a
        caller that wants varied solutions puts the values it has not seen yet first.
        """
        start = self._start(pins, allowed, only, extra, limit)
        if start is None:
            return None
        checks, pending, doms, values = start
        self._rank = rank or (lambda name, values: values)
        try:
            found = self._find(checks, pending, doms, values)
        finally:
            self.steps += self._budget.steps
        return None if found is None else {n: found[n] for n in self.domains}

    # -- the search ------------------------------------------------------------------------
    def _start(
        self,
        pins: Mapping[str, Scalar] | None,
        allowed: Mapping[str, Collection[Scalar]] | None,
        only: Collection[int] | None,
        extra: Collection[int],
        limit: Limit | None,
        progress: Progress | None = None,
    ) -> tuple[list[int], list[int], dict[str, tuple[Scalar, ...]], dict[str, Scalar]] | None:
        """The checks, the checks to look at, the free domains and the fixed values of a query.

        Propagating a set of checks with nothing pinned gives the same fixpoint every time, so it
        is kept per set (`only`); a query starts from it and re-examines only what its pins,
        `allowed` sets and `extra` checks touch.
        """
        self._budget = _Budget(limit or Limit(), progress)
        root = self._root(None if only is None else frozenset(only))
        if root is None:
            return None
        live, root_doms, root_values = root
        doms, values = dict(root_doms), dict(root_values)
        extra = [c for c in sorted(set(extra)) if c not in set(live)]
        restrict: dict[str, None] = {}
        for index in extra:
            for name, refuted in self.refutes[index].items():
                if refuted:
                    restrict[name] = None
        changed: list[str] = []
        for name in {*(pins or {}), *(allowed or {}), *restrict}:
            domain = (values[name],) if name in values else doms[name]
            kept = domain
            if pins and name in pins:
                pin = pins[name]
                kept = tuple(v for v in kept if v == pin and type(v) is type(pin))
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
        alive = set(live)
        pending = extra + list(
            dict.fromkeys(c for name in changed for c in self.by_field[name] if c in alive)
        )
        return live + extra, pending, doms, values

    def _root(
        self, only: frozenset[int] | None
    ) -> tuple[list[int], dict[str, tuple[Scalar, ...]], dict[str, Scalar]] | None:
        if only in self._roots:
            return self._roots[only]
        checks = list(range(self._base)) if only is None else sorted(only)
        dead: dict[str, set[Any]] = {}
        for index in checks:
            for name, values in self.refutes[index].items():
                dead.setdefault(name, set()).update(values)
        doms: dict[str, tuple[Scalar, ...]] = {}
        fixed: dict[str, Scalar] = {}
        root: tuple[list[int], dict[str, tuple[Scalar, ...]], dict[str, Scalar]] | None = None
        for name, domain in self.domains.items():
            domain = tuple(v for v in domain if v not in dead.get(name, ()))
            if not domain:
                break
            if len(domain) == 1:
                fixed[name] = domain[0]
            else:
                doms[name] = domain
        else:
            live = self._propagate(checks, list(checks), doms, fixed)
            root = None if live is None else (live, doms, fixed)
        if len(self._roots) >= 64:
            self._roots.pop(next(iter(self._roots)))
        self._roots[only] = root
        return root

    def _weight(self, name: str, size: int) -> int:
        return size if self.project is None or name in self.project else 1

    def _split(
        self, live: list[int], doms: Mapping[str, tuple[Scalar, ...]]
    ) -> tuple[list[tuple[list[int], list[str]]], list[str]]:
        """The open checks grouped into components (checks, free fields), smallest first, and
        the free fields no open check reads."""
        parent: dict[str, str] = {}

        def find(x: str) -> str:
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        firsts: list[str] = []
        for index in live:
            free = [n for n in self.checks[index].fields if n in doms]
            for name in free:
                parent.setdefault(name, name)
            root = find(free[0])
            firsts.append(free[0])
            for name in free[1:]:
                other = find(name)
                if other != root:
                    parent[other] = root
        groups: dict[str, list[int]] = {}
        for index, first in zip(live, firsts, strict=True):
            groups.setdefault(find(first), []).append(index)
        members: dict[str, list[str]] = {}
        for name in parent:
            members.setdefault(find(name), []).append(name)
        # Smaller components first: a zero there saves counting the big ones.
        parts = sorted(((groups[r], members[r]) for r in groups), key=lambda p: len(p[1]))
        return parts, [n for n in doms if n not in parent]

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
        parts, loose = self._split(live, doms)
        found = {**values, **{name: self._rank(name, doms[name])[0] for name in loose}}
        for part_checks, names in parts:
            key, outside = self._key(part_checks, names, doms, values)
            if self._cache.get(key) == 0:  # a count of zero holds in every mode
                return None
            branch = self._branch(part_checks, names, doms)
            touching = [c for c in self.by_field[branch] if c in set(part_checks)]
            for value in self._rank(branch, doms[branch]):
                self._budget.tick(1 + len(names) // _FIELDS_PER_STEP)  # by size, as `_component`
                sub_doms = {n: doms[n] for n in names if n != branch}
                sub = self._find(part_checks, list(touching), sub_doms, {**outside, branch: value})
                if sub is not None:
                    found.update(sub)
                    break
            else:
                self._cache[key] = 0
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
                settled = None if check.partial is None else check.partial(values)
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
        partial = self.checks[index].partial
        if partial is None:
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
        key = (index, target, tuple(known[n] for n in names if n != target))
        found = self._units.get(key)
        if found is None:
            holds = self.checks[index].holds
            found = frozenset(
                v for v in self.domains[target] if holds(tuple(v if n == target else known[n] for n in names))
            )
            self._units[key] = found
        return found

    def _key(
        self,
        checks: list[int],
        names: list[str],
        doms: Mapping[str, tuple[Scalar, ...]],
        values: Mapping[str, Scalar],
    ) -> tuple[tuple[Any, ...], dict[str, Scalar]]:
        """A component's cache key (its checks, its fields' domains, the values its checks read
        from outside) and those outside values."""
        read = sorted({n for c in checks for n in self.checks[c].fields if n not in doms})
        outside = {n: values[n] for n in read}
        key = (frozenset(checks), tuple(sorted((n, doms[n]) for n in names)), tuple(outside.items()))
        return key, outside

    def _branch(self, checks: list[int], names: list[str], doms: Mapping[str, tuple[Scalar, ...]]) -> str:
        """The field to branch on: projected fields first, then the most rules per value."""
        projected = [n for n in names if self.project is None or n in self.project]
        pool = projected or names
        degree = dict.fromkeys(pool, 0)
        for c in checks:
            for n in self.checks[c].fields:
                if n in degree:
                    degree[n] += 1
        return max(pool, key=lambda n: (degree[n] / len(doms[n]), degree[n]))

    def _component(
        self,
        checks: list[int],
        names: list[str],
        doms: Mapping[str, tuple[Scalar, ...]],
        values: Mapping[str, Scalar],
    ) -> int:
        key, outside = self._key(checks, names, doms, values)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        exists_only = self.project is not None and not any(n in self.project for n in names)
        branch = self._branch(checks, names, doms)
        touching = [c for c in self.by_field[branch] if c in set(checks)]
        total = 0
        options = doms[branch]
        for at, value in enumerate(options):
            sub_doms = {n: doms[n] for n in names if n != branch}
            span = self._size(sub_doms, sub_doms)  # measured now: _solve narrows sub_doms in place
            try:
                # A branch of a large component costs more than one step: it copies and keys
                # its fields, and the recursion keeps each level's copy. Charged by size, a step
                # budget bounds time and memory on a pack of thousands of fields too (a 5,000-
                # field count ran minutes and 2.5 GB within "20,000 steps"); components of up to
                # _FIELDS_PER_STEP fields (every shipped pack's) cost one step as before.
                self._budget.tick(1 + len(names) // _FIELDS_PER_STEP)
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
        return total


# --- packs ------------------------------------------------------------------------------------


def pack_checks(pack: Pack, rule_ids: Iterable[str] | None = None) -> list[Check]:
    """The hard rules of a pack (or of `rule_ids`) as counter checks."""
    from solver.engine.csp import compile_pack

    cp = compile_pack(pack)
    ids = cp.rule_ids if rule_ids is None else [r for r in cp.rule_ids if r in set(rule_ids)]
    return [
        Check(cp.rules[r].fields, cp.rules[r].condition.holds, cp.rules[r].condition.partial) for r in ids
    ]


@dataclass(frozen=True)
class CountResult:
    """The number of valid configurations, and optionally its split by one field's value."""

    count: int
    by_field: str | None = None
    by: dict[Scalar, int] | None = None
    steps: int = 0
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        from solver.values import exact_count  # counts beyond 2**53 as digits (JavaScript)

        doc: dict[str, Any] = {"schema": 1, "status": "counted", "count": exact_count(self.count)}
        if self.by is not None and self.by_field is not None:
            doc["by"] = {self.by_field: {_key(v): exact_count(n) for v, n in self.by.items()}}
        return doc


def _key(value: Scalar) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def count(
    pack: Pack,
    pins: Mapping[str, Scalar] | None = None,
    *,
    by: str | None = None,
    limit: Limit | None = None,
    deadline: float | None = None,
    progress: Progress | None = None,
) -> CountResult:
    """The exact number of valid configurations of `pack` that keep `pins`.

    Every field not pinned is free (facts included). `by` splits the count by that field's values.
    `deadline`: an absolute `time.monotonic()` to stop by (a command's budget), on top of `limit`
    (whose seconds, if any, run from now for the whole count, its split included).
    `progress(steps, seconds)` is called now and then (a reporter for long counts).

    Raises `CountLimitReached` when the limit or the deadline comes before the count is exact;
    it carries exact bounds, `lower <= count <= upper` (what was counted; that plus at most
    every combination of what was not), and `parts`, the values of `by` counted exactly.
    """
    from solver.engine.csp import compile_pack
    from solver.engine.opendomain import widened

    pins = dict(pins or {})
    pack = widened(pack, pins)  # an open field's unlisted pinned value joins its domain
    cp = compile_pack(pack)
    started = time.monotonic()
    limit = limit or Limit()
    ends = [
        t
        for t in (deadline, limit.deadline, None if limit.seconds is None else started + limit.seconds)
        if t is not None
    ]
    limit = dataclasses.replace(limit, deadline=min(ends) if ends else None)
    counter = ModelCounter(cp.domains, pack_checks(pack))
    if by is None:
        total = counter.count(pins, limit=limit, progress=progress)
        return CountResult(total, steps=counter.steps, seconds=time.monotonic() - started)
    parts: dict[Scalar, int] = {}
    values = [pins[by]] if by in pins else list(cp.domains[by])
    for at, value in enumerate(values):
        try:
            parts[value] = counter.count({**pins, by: value}, limit=limit, progress=progress)
        except CountLimitReached as stop:
            # Each value not reached holds at most every combination of the free fields.
            free = 1
            for name, domain in cp.domains.items():
                if name != by and name not in pins:
                    free *= len(domain)
            done = sum(parts.values())
            stop.parts = dict(parts)
            raise stop.bounded(
                done + stop.lower, done + (stop.upper or 0) + free * (len(values) - at - 1)
            ) from None
    return CountResult(
        sum(parts.values()), by_field=by, by=parts, steps=counter.steps, seconds=time.monotonic() - started
    )
