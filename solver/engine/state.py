"""The propagation state of one query: each field's remaining values, the constraints still open,
and forward checking to a fixpoint.

`State` holds the domains and the open constraints (`solver.engine.constraint.Constraint`: a
rule of the pack, or a query's own condition, with the engine's tables for it), and
`State.propagate` is the engine's forward checking (the one loop `CompiledPack.start`, the cheap
descent of `solver.engine.localsearch` and every resolution step run). Knows no pack: the compiled
pack (`solver.engine.csp`) builds these.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, Protocol

# `Constraint` and its helpers live in their own module; named here too, where the engine's
# callers have always imported them from.
from solver.engine.constraint import MEMO_LIMIT, Constraint, ResidueCheck, RuleConstraint, memoized, picker
from solver.engine.satisfied import NEVER, Satisfied, close_satisfied
from solver.model import Scalar

__all__ = [
    "MEMO_LIMIT",
    "Constraint",
    "Observer",
    "Pause",
    "ResidueCheck",
    "RuleConstraint",
    "State",
    "Verdict",
    "memoized",
    "picker",
    "undo_trail",
]

# `State.extended`'s name for the constraints it adds, queued as if they read one field (field
# names are identifiers: none is empty).
_ADDED = ""
# `State.dead_end` tries each value of a constraint's smallest free field: past this many it is
# not worth the evaluations.
_DEAD_END_WIDTH = 8


class State:
    """Domains after propagation, and the constraints still open (two or more free fields).

    Copy-on-write: `assign` returns a new state, so a resolution can fix one field after another
    and each step propagates only what the new value touches. `fix` / `undo` do the same in
    place, for callers that walk many fields: a copy costs a pass over every field and rule.
    (`open` is copied with `.copy()`: propagation deletes the rules it closes, and `dict(open)`
    of a table with a deleted entry inserts the rest one by one, where `.copy()` copies the
    block while at most a third is deleted, ~6x faster.)
    """

    __slots__ = ("_trails", "by_field", "closing", "domains", "open")

    def __init__(
        self,
        domains: dict[str, list[Scalar]],
        open_: dict[str, Constraint],
        by_field: dict[str, list[Constraint]],
        closing: Satisfied = NEVER,  # the rules a fixed field satisfies alone, closed early
    ) -> None:
        self.domains, self.open, self.by_field, self.closing = domains, open_, by_field, closing
        self._trails: list[list[tuple[Any, str, Any]]] = []

    def fix(self, name: str, value: Scalar, changed: list[str] | None = None) -> bool:
        """`assign` in place: True when `name = value` propagates without wiping out a field (then
        `undo` takes it back), False with the state unchanged. `changed` as in `assign`."""
        domains = self.domains
        current = domains[name]
        if value not in current:
            return False
        if len(current) == 1:
            # Already down to it: a propagated state has folded it into every rule that reads
            # it (as `pinned` takes for granted), so there is nothing to propagate. Unsearched
            # facts and options reach their turn so in most requests (~16 per SGLang request).
            # (Its trail restores the same list: it names the field for `last_changed`.)
            self._trails.append([(domains, name, current)])
            if changed is not None:
                changed.append(name)
            return True
        trail: list[tuple[Any, str, Any]] = [(domains, name, current)]
        domains[name] = [value]
        if not self.propagate([name], trail):
            undo_trail(trail, 0)
            return False
        self._trails.append(trail)
        if changed is not None:
            # `name` first: the trail starts with it.
            changed.extend([key for table, key, _ in trail if table is domains])
        return True

    def last_changed(self) -> list[str]:
        """The fields the last `fix` that succeeded narrowed, the fixed field first: its
        `changed`, for a caller that needs them only sometimes (a resolution's decision, when
        the witness lacks the value: a list built per decision was work mostly not read)."""
        domains = self.domains
        return [key for table, key, _ in self._trails[-1] if table is domains]

    def fix_all(self, pairs: Sequence[tuple[str, Scalar]]) -> bool:
        """`fix` of several fields as one step: each set to its value, then one propagation of
        them all (forward checking reaches one fixpoint whatever the order, so the state is that
        of fixing them one by one). True when nothing is wiped out (then one `undo` takes them all
        back), False with the state unchanged. For decisions already proven together (values a
        solution holds): one pass where a `fix` each paid a propagation's setup and revisited
        the rules between them while their other fields were still free."""
        domains = self.domains
        trail: list[tuple[Any, str, Any]] = []
        changed: list[str] = []
        for name, value in pairs:
            current = domains[name]
            if value not in current:
                undo_trail(trail, 0)
                return False
            if len(current) > 1:
                trail.append((domains, name, current))
                domains[name] = [value]
                changed.append(name)
        if not self.propagate(changed, trail):
            undo_trail(trail, 0)
            return False
        self._trails.append(trail)
        return True

    def undo(self) -> None:
        """Take back the last `fix` that succeeded."""
        undo_trail(self._trails.pop(), 0)

    def domain(self, name: str) -> list[Scalar]:
        return self.domains[name]

    def open_index(self) -> dict[str, list[Constraint]]:
        """`by_field` with only the constraints still open here, in the same order: the index
        for every state derived from this one (a constraint once closed stays closed, and
        every walk over `by_field` skips closed ones), built once where it is shared by many.
        A request's facts close about half the SGLang pack's rules (716 index entries -> 435),
        which each propagation would otherwise visit to find them closed."""
        open_ = self.open
        index: dict[str, list[Constraint]] = {}
        for name, cons in self.by_field.items():
            kept = [con for con in cons if con.key in open_]
            if kept:
                index[name] = kept
        return index

    def dead_end(self, names: list[str], never: Verdict) -> bool:
        """One step past forward checking, over the open constraints reading `names`: True when
        one of them cannot hold whatever its smallest free field takes, its other free fields
        left undecided (the condition's three-valued form). Sound: False from that form means no
        completion holds. Forward checking waits for a constraint's last free field, so a rule
        such as "any of three backends is X requires the architecture to be Y" stays open while
        two backends are free, and refuting X took a search (7-18 ms per value on a platform's
        choices); this asks a few evaluations instead.

        `never`: the values of a field that break a constraint whatever its fields outside the
        given ones hold, remembered (`CompiledPack.never`, the verdicts reason tracing asks the
        same questions of)."""
        domains, seen = self.domains, set()
        for name in names:
            for con in self.by_field.get(name, ()):
                if con.key in seen:
                    continue
                seen.add(con.key)
                free = [f for f in con.fields if len(domains[f]) > 1]
                if len(free) < 2:
                    continue
                pick = min(free, key=lambda f: len(domains[f]))
                if len(domains[pick]) > _DEAD_END_WIDTH:
                    continue
                fixed = tuple((f, domains[f][0]) for f in con.fields if len(domains[f]) == 1)
                if never(con, pick, fixed).issuperset(domains[pick]):
                    return True
        return False

    def strengthen(
        self,
        never: Verdict,
        changed: list[str] | None = None,
        trail: list[tuple[Any, str, Any]] | None = None,
    ) -> bool:
        """Propagation one step past forward checking, in place: every open constraint with a
        fixed field also loses the values `never` names (those that break it whatever its free
        fields hold: the revise step reason tracing adds, as `propagate`'s observer), and what
        that fixes is propagated, to a fixpoint. Sound: only values no solution has go. False on
        a wipe-out (no solution). Forward checking waits for a rule's last free field, so "an
        FA4 backend on SM100 needs --page-size 128" stays open while the prefill and decode
        backends are free, and a descent that fixes the page size first, at 1, dead-ends at the
        backends only after deciding dozens of fields (`localsearch.dive`).

        From the `changed` fields of a state that was such a fixpoint before they changed (a
        descent's step), else from every fixed field of a state forward checking left (`propagate`'s
        `settled` either way: the revise step reads only fixed fields, and each rule with one
        queued is revised when that field is popped); `trail` as in `propagate`."""
        if changed is None:
            changed = [name for name, values in self.domains.items() if len(values) == 1]
        # (A new observer per run: its remembered fixed fields are of the run's domains.)
        return self.propagate(changed, trail, _Revise(self.domains, never), settled=True)

    def refutes(self, name: str, value: Scalar, never: Verdict) -> bool:
        """Whether propagating `name = value` in place (taken back), then one step past it
        (`dead_end`, `never` as there), proves that no solution of this state has it.

        `dead_end` over the rules reading `name` only: over every field propagation narrowed,
        choices' refutations cost cold choices ~20 % (prepare_choices 192 -> 246 ms) for no
        further refutation measured."""
        if not self.fix(name, value):
            return True
        dead = self.dead_end([name], never)
        self.undo()
        return dead

    def assign(self, name: str, value: Scalar, changed: list[str] | None = None) -> State | None:
        """A new state with `name` fixed to `value`, propagated; None when that wipes out a field.

        `changed`, when given, receives the fields whose domains this narrowed (`name` first):
        a solution of the old state can only break at rules reading them (see `search`).
        """
        if value not in self.domains[name]:
            return None
        new = State(dict(self.domains), self.open.copy(), self.by_field, self.closing)
        new.domains[name] = [value]
        trail: list[tuple[Any, str, Any]] | None = None if changed is None else []
        if not new.propagate([name], trail):
            return None
        if changed is not None and trail is not None:
            changed.append(name)
            changed.extend(key for table, key, _ in trail if table is new.domains)
        return new

    def pinned(
        self, pins: Mapping[str, Scalar], allowed: Mapping[str, Collection[Scalar]] | None = None
    ) -> State | None:
        """A copy of this propagated state with `pins` fixed and narrowed to the `allowed` value
        sets, propagated; None on a wipe-out or a pin its field no longer allows. The domains'
        lists are shared with this state until narrowed (never changed in place)."""
        domains = dict(self.domains)
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
        state = State(domains, self.open.copy(), self.by_field, self.closing)
        return state if state.propagate(changed) else None

    def extended(
        self, pins: Mapping[str, Scalar], cons: Sequence[Constraint], changed: list[str]
    ) -> State | None:
        """A copy of this propagated state with `pins` fixed and `cons` (constraints it does not
        have) added, propagated: the fixpoint `CompiledPack.start` reaches with all of them
        (forward checking's does not depend on the order). For a question that grows an earlier
        one (QuickXplain's backgrounds grow within a branch): a start from scratch indexed and
        propagated every constraint again. None on a wipe-out. `changed` receives the pinned
        and narrowed fields and those `cons` read: a solution of this state breaks only rules
        reading them (`CompiledPack.search`'s `around`)."""
        domains = dict(self.domains)
        queue: dict[str, None] = {}
        for name, value in pins.items():
            current = domains.get(name)
            if current is None:
                continue
            if value not in current:
                return None
            if len(current) > 1:
                domains[name] = [value]
                queue[name] = None
        open_ = self.open.copy()
        added: dict[str, list[Constraint]] = {}
        revise: list[Constraint] = []
        for con in cons:
            if not con.fields:
                if not con.holds(()):
                    return None
                continue
            open_[con.key] = con
            revise.append(con)
            for name in con.fields:
                added.setdefault(name, []).append(con)
        # Each field's readers made once, the old then the added in order (a list made anew per
        # added reader was quadratic in a hub's readers: QuickXplain adds hundreds at once).
        by_field = dict(self.by_field)
        for name, more in added.items():
            by_field[name] = [*by_field.get(name, ()), *more]
        state = State(domains, open_, by_field, self.closing)
        trail: list[tuple[Any, str, Any]] = []
        # The pinned fields are revised with all their readers; of the rest only the added
        # constraints need a look (this state was a fixpoint of the old ones, and a field's
        # domain has not changed by a reader's coming): they are queued under a name no field
        # has, read as one field's readers, not each of their fields with all of its readers
        # (QuickXplain's questions add hundreds of rules over most of the pack's fields, and
        # every old reader of those was visited to find it still open or closed). The same
        # fixpoint; a narrowing then queues its field as any other.
        by_field[_ADDED] = revise
        try:
            if not state.propagate([_ADDED, *queue], trail):
                return None
        finally:
            del by_field[_ADDED]
        for name in added:
            queue[name] = None
        changed.extend(queue)
        changed.extend(key for table, key, _ in trail if table is domains and key not in queue)
        return state

    def propagate(
        self,
        changed: list[str],
        trail: list[tuple[Any, str, Any]] | None = None,
        observer: Observer | None = None,
        *,
        settled: bool = False,
        pause: Pause | None = None,
    ) -> bool:
        """Fold fixed fields into the open constraints until nothing changes (forward checking
        to a fixpoint): a constraint with no free field is checked, one with a single free field
        filters that field's domain. With a `trail`, every change is logged there so that
        `undo_trail` can take it back (a probe that tries values in place, without copying).

        With an `observer` (`Observer`: the reason recorder of `solver.engine.tracing`), each
        narrowing and wipe-out is shown to it first, and a constraint with several free fields
        also loses the values the observer says break it whatever those fields hold (its
        stronger revise step). Without one (every resolution step) the loop does only forward
        checking: the observer costs a test where a constraint stays open or a domain changes.

        `settled` (with an observer): the state was a fixpoint of this propagation before the
        `changed` fields were narrowed. Then a field popped while still free revises only the
        rules one of whose fixed fields waits in the queue: the observer's revise step reads
        only fixed fields (which values break a rule whatever its free fields hold), so a rule
        revised since its last field was fixed loses nothing more (its free fields only
        narrowed), and at a fixpoint no open rule has one free field. Such a revision changes
        nothing; skipped, every change comes in the same order (a traced state of ~475 pins at
        5,000 synthetic fields: -30 %).

        `pause` (with an observer): the queue is `pause`'s own (`changed` is not read), and once
        the observer sets `pause.due` the run stops before the next field it would pop, its
        queue left in `pause`: called again with it, the run goes on from there, so a run
        stopped and resumed makes every change of an unstopped one, in the same order (a traced
        state asked why one value went: its reason is written when it goes, and the rest of the
        run is not needed for it). `pause.done` once the run has ended."""
        domains, open_, by_field = self.domains, self.open, self.by_field
        # Last in, first out, each field queued once: a field narrowed again while it waits is
        # revised once, with its latest domain (the recorder's reasons are those of that order).
        queue = list(changed) if pause is None else pause.queue
        queued = set(queue) if pause is None else pause.queued
        while queue:
            if pause is not None and pause.due:
                pause.due = False
                return True  # (stopped: the rest of the run is `pause`'s queue)
            name = queue.pop()
            queued.discard(name)
            quiet = settled and len(domains[name]) > 1
            close_satisfied(self.closing if observer is None else NEVER, name, domains, open_, trail)
            for con in by_field.get(name, ()):
                key = con.key
                if key not in open_:
                    continue
                if quiet and not any(f in queued and len(domains[f]) == 1 for f in con.fields):
                    continue  # (nothing to revise: see `settled`)
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
                            # (Read as: its first field's value broke it.)
                            return _wiped_out(observer, pause, con, 0)
                        continue
                    current = domains[target]
                    others = tuple(fixed)
                    allowed = con.cuts.get((at, others))  # (`allowed`'s table, read without a call)
                    if allowed is None:
                        allowed = con.allowed(at, others)
                    if allowed.issuperset(current):
                        continue  # (most filters: a set test in C, not a list built)
                    kept = [v for v in current if v in allowed]
                    if not kept:
                        return _wiped_out(observer, pause, con, at)
                    if observer is not None:
                        observer.narrowing(con, at, kept)
                    if trail is not None:
                        trail.append((domains, target, current))
                    domains[target] = kept
                    # Forward checking reads a field's domain only as fixed or free: a field
                    # narrowed but still free changes no rule (each open rule keeps two free
                    # fields), so only one fixed by this is revised. The observer's revise
                    # step reads the free fields' values too.
                    if target not in queued and (len(kept) == 1 or observer is not None):
                        queue.append(target)
                        queued.add(target)
                    continue
                if observer is not None and not self._revise_open(con, observer, queue, queued, trail):
                    return _wiped_out(None, pause, con, 0)  # (`_revise_open` showed the observer)
        return True

    def _revise_open(
        self,
        con: Constraint,
        observer: Observer,
        queue: list[str],
        queued: set[str],
        trail: list[tuple[Any, str, Any]] | None,
    ) -> bool:
        """The observer's revise step for a constraint with several free fields: each free field
        loses the values `observer.never` names (the constraint stays open). False on a wipe-out.
        A narrowing is written out here as in `propagate`, not shared through a call: there it is
        the hot path of every resolution step."""
        domains = self.domains
        for at, target in enumerate(con.fields):
            current = domains[target]
            if len(current) <= 1:
                continue
            never = observer.never(con, at)
            if never.isdisjoint(current):
                continue  # (mostly: a set test in C, not a list built)
            kept = [v for v in current if v not in never]
            if not kept:
                observer.wiped_out(con, at)
                return False
            if len(kept) != len(current):
                observer.narrowing(con, at, kept)
                if trail is not None:
                    trail.append((domains, target, current))
                domains[target] = kept
                if target not in queued:
                    queue.append(target)
                    queued.add(target)
        return True


class Pause:
    """The queue of a propagation that may stop part way (`State.propagate`'s `pause`): the
    fields still to revise, and `due`, which the observer sets when the run is to stop."""

    __slots__ = ("due", "queue", "queued")

    def __init__(self, changed: list[str]) -> None:
        self.due = False
        self.queue = list(changed)
        self.queued = set(self.queue)

    @property
    def done(self) -> bool:
        """The run ended (a fixpoint or a wipe-out): nothing is left to go on with."""
        return not self.queue


def _wiped_out(observer: Observer | None, pause: Pause | None, con: Constraint, at: int) -> bool:
    """`State.propagate`'s answer on a wipe-out (False), shown to the observer, the run ended."""
    if observer is not None:
        observer.wiped_out(con, at)
    if pause is not None:
        pause.queue.clear()
        pause.queued.clear()
    return False


Verdict = Callable[[Constraint, str, tuple[tuple[str, Scalar], ...]], frozenset[Scalar]]
"""For a constraint, one of its fields and the values of some others: the values of that field
that break the constraint whatever the rest hold (`State.dead_end`'s `never`)."""


class Observer(Protocol):
    """What `State.propagate` shows a reason recorder, and the stronger revise step it adds."""

    def narrowing(self, con: Constraint, at: int, kept: list[Scalar]) -> None:
        """`con` is about to narrow its field `at` to `kept` (a shorter, non-empty list); the
        state's domains are still those before."""

    def wiped_out(self, con: Constraint, at: int) -> None:
        """`con` leaves its field `at` no value (propagation then stops and answers False)."""

    def never(self, con: Constraint, at: int) -> frozenset[Scalar]:
        """For a constraint with several free fields: the values of field `at` that break it
        whatever its other free fields hold."""
        ...


class _Revise:
    """`State.strengthen`'s observer: the revise step alone, no reasons recorded."""

    __slots__ = ("_asked", "_known", "domains", "verdict")

    def __init__(self, domains: dict[str, list[Scalar]], verdict: Verdict) -> None:
        self.domains, self.verdict = domains, verdict
        # The rule last asked about and its fixed fields then: `propagate` asks about each free
        # field of a rule in turn, and only a narrowing can fix another in between.
        self._asked: Constraint | None = None
        self._known: tuple[tuple[str, Scalar], ...] = ()

    def narrowing(self, con: Constraint, at: int, kept: list[Scalar]) -> None:
        self._asked = None

    def wiped_out(self, con: Constraint, at: int) -> None:
        pass

    def never(self, con: Constraint, at: int) -> frozenset[Scalar]:
        if self._asked is not con:
            domains = self.domains
            self._known = tuple([(f, domains[f][0]) for f in con.fields if len(domains[f]) == 1])
            self._asked = con
        return self.verdict(con, con.fields[at], self._known)


def undo_trail(trail: list[tuple[Any, str, Any]], mark: int) -> None:
    while len(trail) > mark:
        table, key, old = trail.pop()
        table[key] = old
