"""Propagation that remembers why: which rules and pins removed each value.

The engine's own propagation (`State.propagate`, forward checking) with a `Traced` state as its
observer: for rules with several free fields it adds the values three-valued evaluation says break
them whatever those fields hold, and every narrowing of a field records the rule that did it and
the removals it rested on. When a value is wiped out, the reasons collected are a set of rules and
pins that alone reproduce the wipe-out: an inconsistent subset, usually a handful of items out of
hundreds. Explanations then make it minimal with QuickXplain, which needs few checks on so few
items (a minimal conflict within a subset is a minimal conflict of the whole).

Sound but incomplete: when propagation does not refute a value (a search is needed), `excluded`
answers None and the caller looks for a reason the general way. Never imports python-constraint
or networkx; every list it stores is replaced, never changed in place, so states share them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from solver.engine.csp import CompiledPack
from solver.engine.state import Constraint, Pause, State
from solver.model import Scalar
from solver.values import same

__all__ = [
    "Because",
    "Traced",
    "Untraced",
    "WithoutEach",
    "excluded",
    "excluded_by_split",
    "keep_base",
    "paused_base",
    "traced_base",
    "traced_domains",
]

Because = frozenset[tuple[str, str]]
"""Reasons as ("rule", rule id) and ("pin", field name) pairs."""

_NONE: Because = frozenset()
_BASES_KEPT = 32
# Propagations `excluded_by_split` may spend on one value before the caller searches instead.
_SPLIT_TRIES = 256


class Traced:
    """Domains after propagation, why each removed value was removed, and the open rules: the
    observer of `State.propagate` (`solver.engine.state.Observer`) that records reasons.

    `removed[f]` maps each value no longer in `f`'s domain to the rules and pins that removed it;
    `total[f]` is the union of those (why the domain is what it is). Both tables are replaced
    per field when it narrows, never changed in place, so copies share them."""

    __slots__ = ("_asked", "_known", "_pause", "_wanted", "cp", "failed", "removed", "state", "total")

    def __init__(
        self,
        cp: CompiledPack,
        state: State,
        removed: dict[str, dict[Scalar, Because]],
        total: dict[str, Because],
        failed: Because | None = None,
    ) -> None:
        self.cp = cp
        self.state = state
        self.removed = removed
        self.total = total
        self.failed = failed
        # The rule `never` was last asked about and its fixed fields then (see `never`).
        self._asked: Constraint | None = None
        self._known: tuple[tuple[str, Scalar], ...] = ()
        # A propagation not run to its end (`until_gone`), and the value it stops at.
        self._pause: Pause | None = None
        self._wanted: tuple[str, Scalar] | None = None

    @property
    def finished(self) -> bool:
        """Propagated to its end (every state but one `until_gone` stopped)."""
        return self._pause is None

    @property
    def domains(self) -> dict[str, list[Scalar]]:
        return self.state.domains

    def copy(self) -> Traced:
        self.finish()  # (a copy is of the whole propagation)
        made = self.state
        # (`.copy()`, not `dict(...)`: propagation deletes the rules it closes from `open`, and
        # `dict(table)` of a table with any entry deleted inserts the rest one by one, where
        # `table.copy()` copies the block while at most a third of it is deleted: ~0.25 ->
        # 0.04 ms at 12,000 open rules, per copy. That made a dense copy of each state's table
        # at its first copy, a slow copy per state, ~165 per choices question at 5,000 fields.)
        state = State(dict(made.domains), made.open.copy(), made.by_field)
        return Traced(self.cp, state, dict(self.removed), dict(self.total), self.failed)

    def propagate(self, changed: list[str], *, settled: bool = True) -> bool:
        """The engine's propagation from the `changed` fields, recording why; False on a wipe-out
        (then `failed` holds its reasons). `settled`: the state was propagated before those fields
        changed (every state but the root's first: `State.propagate`)."""
        self._asked = None
        return self.state.propagate(changed, observer=self, settled=settled)

    def until_gone(self, name: str, value: Scalar) -> bool:
        """Go on with the propagation `paused_base` left until `name = value` goes (True: the run
        stopped there, or before) or the run ends (False: `finished`). The value's reason is then
        the one the whole run records: a run stopped and resumed makes the same changes in the
        same order (`State.propagate`'s `pause`), and a value's reason is written once, when it
        goes."""
        pause = self._pause
        if pause is not None and value in self.state.domains[name]:
            self._wanted, self._asked = (name, value), None
            try:
                self.state.propagate([], observer=self, settled=True, pause=pause)
            finally:
                self._wanted = None
            if pause.done:
                self._pause = None
        return self._pause is not None  # (a run stops early only when the value goes)

    def finish(self) -> None:
        """Propagate to the end what `paused_base` or `until_gone` left."""
        pause = self._pause
        if pause is not None:
            self._asked = None
            self.state.propagate([], observer=self, settled=True, pause=pause)
            self._pause = None

    # -- the observer (`solver.engine.state.Observer`) -------------------------------------
    def narrowing(self, con: Constraint, at: int, kept: list[Scalar]) -> None:
        self._asked = None  # (a field may be fixed now: `never`'s fixed fields are made again)
        target = con.fields[at]
        gone = _gone_all(self.cp, con, self, at, [v for v in self.state.domains[target] if v not in kept])
        self.removed[target] = {**self.removed[target], **gone}
        self.total[target] = self.total[target].union(*gone.values())
        wanted = self._wanted
        if wanted is not None and wanted[0] == target and wanted[1] in gone and self._pause is not None:
            self._pause.due = True

    def wiped_out(self, con: Constraint, at: int) -> None:
        self.failed = _wiped_out(self.cp, con, self, at)

    def never(self, con: Constraint, at: int) -> frozenset[Scalar]:
        # Several free fields: the values that break the rule whatever the other free fields
        # hold (three-valued evaluation, remembered per rule by the engine). Searching supports
        # among the free fields as well (full arc consistency) removed next to nothing more on
        # the SGLang pack and cost a quarter of the time of listing choices with their reasons.
        # The rule's fixed fields, made once per revision of the rule: `propagate` asks about
        # each of its free fields in turn (the target is free, so never among them), and only a
        # narrowing (shown to `narrowing` first) can fix another in between.
        if self._asked is not con:
            domains = self.state.domains
            self._known = tuple([(f, domains[f][0]) for f in con.fields if len(domains[f]) == 1])
            self._asked = con
        return self.cp.never(con, con.fields[at], self._known)


class Untraced(Traced):
    """A `Traced` that records no reasons: the same propagation with the same revise step
    (`Traced.never`), so the same domains and the same wipe-outs, for states whose domains alone
    are read (`WithoutEach`'s). `removed` and `total` stay empty; `failed` names only the rule or
    pin that wiped a field out. Never kept where `traced_domains` looks (its callers may read
    reasons: `solver.reasoning.givenchoices`)."""

    __slots__ = ()

    def copy(self) -> Untraced:
        self.finish()
        made = self.state
        state = State(dict(made.domains), made.open.copy(), made.by_field)
        return Untraced(self.cp, state, {}, {}, self.failed)

    def narrowing(self, con: Constraint, at: int, kept: list[Scalar]) -> None:
        self._asked = None  # (a field may be fixed now: `never`'s fixed fields are made again)

    def wiped_out(self, con: Constraint, at: int) -> None:
        self.failed = frozenset({("rule", con.key)})


def _narrowed(cp: CompiledPack, pins: Mapping[str, Scalar], start: Traced) -> Untraced:
    """`_base(cp, pins, start)`'s domains and wipe-out, recording no reasons (`Untraced`): at
    5,000 synthetic fields `WithoutEach` makes ~180 states per choices question, each of whose
    narrowings recorded its reasons (a dict and sets per narrowed field, ~17,000 frozensets that
    outlived the call) and copied four tables of every field where two are read."""
    start.finish()
    made = start.state
    state = Untraced(cp, State(dict(made.domains), made.open.copy(), made.by_field), {}, {}, start.failed)
    if state.failed is not None:
        return state
    domains = state.domains
    changed = []
    for name, value in pins.items():
        current = domains.get(name)
        if current is None:
            continue
        if value not in current:
            state.failed = frozenset({("pin", name)})
            return state
        if len(current) > 1:
            domains[name] = [value]
            changed.append(name)
    state.propagate(changed)
    return state


def _root(cp: CompiledPack) -> Traced:
    """Every rule propagated with no pin, once per compiled pack."""
    found: Traced | None = cp.memo.get("traced-root")
    if found is None:
        cons = cp.constraints
        state = Traced(
            cp,
            State(
                {n: list(v) for n, v in cp.domains.items()},
                {key: con for key, con in cons.items() if con.fields},
                {n: list(cons) for n, cons in cp.constraints_by_field.items()},
            ),
            {n: {} for n in cp.domains},
            dict.fromkeys(cp.domains, _NONE),
        )
        constant = [key for key, con in cons.items() if not con.fields and not con.holds(())]
        if constant:
            state.failed = frozenset(("rule", key) for key in constant)
        else:
            state.propagate(list(cp.domains), settled=False)
            # Made compact once (every base is a copy of it; see `copy`).
            state.state.open = dict(state.state.open)
        found = cp.memo["traced-root"] = state
    return found


def traced_base(cp: CompiledPack, pins: Mapping[str, Scalar]) -> Traced:
    """The root state with `pins` fixed (each its own reason) and propagated.

    The last few are kept per compiled pack (a matrix or a `why` asks about many values under
    the same pins); callers must not change what they get (`excluded` works on a copy)."""
    key = tuple(sorted(pins.items(), key=lambda item: item[0]))
    kept: dict[tuple[tuple[str, Scalar], ...], Traced] = cp.memo.setdefault("traced-bases", {})
    found = kept.get(key)
    if found is None:
        found = _base(cp, pins)
        if len(kept) >= _BASES_KEPT:
            kept.clear()
        kept[key] = found
    return found


def traced_domains(cp: CompiledPack, pins: Mapping[str, Scalar]) -> Traced:
    """The domains and the wipe-out of `traced_base(cp, pins)`, for callers that read nothing
    else: made from the kept state of the largest subset of `pins` asked before, propagating
    only the pins it lacks (a page adds one pin per click; from the root, each of the click's
    states propagated every pin again).

    Propagation narrows to one fixpoint whatever order the pins come in, so the domains and
    whether a field is wiped out are `traced_base`'s; the reasons recorded on the way depend on
    the order, and are not for explanations (they stay apart from `traced_base`'s)."""
    key = tuple(sorted(pins.items(), key=lambda item: item[0]))
    kept: dict[tuple[tuple[str, Scalar], ...], Traced] = cp.memo.setdefault("traced-domains", {})
    found = kept.get(key)
    if found is not None:
        return found
    start: Traced | None = None
    have: tuple[tuple[str, Scalar], ...] = ()
    for other, state in list(kept.items()):
        if len(have) < len(other) < len(key) and all(
            name in pins and same(pins[name], value) for name, value in other
        ):
            start, have = state, other
    if start is None and len(pins) <= 1:
        # From the root with one pin, the state is `traced_base`'s own (with several, the
        # reasons it records follow the pins' order, which `traced_base` keeps from its first
        # caller): one propagation for both, where a page's first question on a fact lists
        # choices from it and explains the excluded values with it.
        found = traced_base(cp, pins)
    else:
        given = dict(have)
        found = _base(cp, {n: v for n, v in pins.items() if n not in given}, start)
    _keep(cp, key, found)
    return found


class WithoutEach:
    """`traced_domains(cp, pins minus one)` for each pin of `names` (the other pins' domains, one
    per pinned option a choices question asks about), made by halves: the state without a pin
    comes from the state of the half of `names` that holds it, with the other half's pins
    propagated. So n such states cost ~n log n pin propagations instead of n - 1 each (at 5,000
    synthetic fields, 84 options pinned: ~7,000 -> ~600).

    The domains only: propagation reaches one fixpoint whatever order the pins come in (see
    `traced_domains`), so each is that state's; the states below the seed's record no reasons
    (`Untraced`), and are not kept for `traced_domains`. Made when first asked; a state both of
    whose halves are made is let go."""

    def __init__(self, cp: CompiledPack, pins: Mapping[str, Scalar], names: Sequence[str]) -> None:
        self.cp = cp
        self.pins = pins
        self._order = [n for n in dict.fromkeys(names) if n in pins]
        self._at = {name: i for i, name in enumerate(self._order)}
        self.seed = {n: v for n, v in pins.items() if n not in self._at}
        # By the slice of `_order` whose pins a state lacks: the whole order, the seed's.
        self._made: dict[tuple[int, int], Traced] = {(0, len(self._order)): traced_domains(cp, self.seed)}

    def __call__(self, name: str) -> Traced:
        """The domains of every pin but `name`'s (one of `names`), and whether they wipe out."""
        at, made, order = self._at[name], self._made, self._order
        # The halves holding `name`, from the whole order down to `name` alone.
        path = [(0, len(order))]
        while path[-1][1] - path[-1][0] > 1:
            lo, hi = path[-1]
            mid = (lo + hi) // 2
            path.append((lo, mid) if at < mid else (mid, hi))
        # A state is let go only once both its halves are made, so the deepest one made on the
        # path is there to start from; every state below it on the path is made from it.
        depth = max(i for i, node in enumerate(path) if node in made)
        for (lo, hi), (first, last) in zip(path[depth:], path[depth + 1 :], strict=False):
            adds = order[last:hi] if first == lo else order[lo:first]
            made[first, last] = _narrowed(self.cp, {n: self.pins[n] for n in adds}, made[lo, hi])
            if ((lo, first) if first > lo else (last, hi)) in made:
                del made[lo, hi]
        return made[path[-1]]


def _keep(cp: CompiledPack, key: tuple[tuple[str, Scalar], ...], found: Traced) -> None:
    """Keep a state of `traced_domains` (only its domains read) under its sorted pins."""
    kept: dict[tuple[tuple[str, Scalar], ...], Traced] = cp.memo.setdefault("traced-domains", {})
    if len(kept) >= _BASES_KEPT * 2:
        kept.clear()
    kept[key] = found


def paused_base(cp: CompiledPack, pins: Mapping[str, Scalar]) -> Traced:
    """`traced_base(cp, pins)` not propagated yet: `until_gone` runs it as far as a value asks
    (a reason that needs no more of it), `finish` to its end. A caller that knows the run ends
    in no wipe-out (else every value's reason is the wipe-out's). The kept state if there is one."""
    key = tuple(sorted(pins.items(), key=lambda item: item[0]))
    found = cp.memo.setdefault("traced-bases", {}).get(key)
    return found if found is not None else _base(cp, pins, paused=True)


def keep_base(cp: CompiledPack, pins: Mapping[str, Scalar], state: Traced) -> None:
    """Keep a state `paused_base` made, finished, as `traced_base`'s for later callers."""
    state.finish()
    key = tuple(sorted(pins.items(), key=lambda item: item[0]))
    kept: dict[tuple[tuple[str, Scalar], ...], Traced] = cp.memo.setdefault("traced-bases", {})
    if key not in kept:
        if len(kept) >= _BASES_KEPT:
            kept.clear()
        kept[key] = state


def _base(
    cp: CompiledPack, pins: Mapping[str, Scalar], start: Traced | None = None, *, paused: bool = False
) -> Traced:
    """`start` (default: the root) with `pins` fixed and propagated (`paused`: not yet, see
    `paused_base`)."""
    state = (start or _root(cp)).copy()
    if state.failed is not None:
        return state
    changed = []
    for name, value in pins.items():
        if name not in state.domains:
            continue
        current = state.domains[name]
        if value not in current:
            state.failed = state.removed[name].get(value, _NONE) | {("pin", name)}
            return state
        if len(current) > 1:
            _fix(state, name, value, frozenset({("pin", name)}))
            changed.append(name)
    if paused:
        state._pause = Pause(changed)
    else:
        state.propagate(changed)
    return state


def excluded(
    cp: CompiledPack, base: Traced, name: str, value: Scalar, *, removed_only: bool = False
) -> Because | None:
    """Rules and pins of `base` that rule out `name = value` by propagation alone, or None.

    `name` itself is not among the reasons: it is the value being explained. `removed_only`:
    answer only if `base` already removed the value (no propagation of the value itself)."""
    if base.failed is not None:
        return base.failed
    if value not in base.domains[name]:
        return _shortest(cp, base, name, value)
    if removed_only or len(base.domains[name]) == 1:
        return None
    state = base.copy()
    # The other values go because of the value explained, which is no reason to give.
    _fix(state, name, value, _NONE)
    if state.propagate([name]):
        return None
    return state.failed


def excluded_by_split(
    cp: CompiledPack,
    base: Traced,
    name: str,
    value: Scalar,
    near: Sequence[str],
    *,
    tries: int = _SPLIT_TRIES,
) -> Because | None:
    """Rules and pins of `base` that rule out `name = value` by one case split, or None: with the
    value propagated, some field (those it narrowed, then `near`, within `tries` propagations)
    fails under each of its values left. The reasons are those of every branch's wipe-out and
    why that field had only those values left: an inconsistent subset (the field takes some
    value in any solution), found without a search. For a value propagation alone cannot refute
    (`excluded` answers None), this stands in for the refutation of the rules around it, layer
    by layer, which on the 5,000-field synthetic pack took one value 23 s of searches.

    `name` itself is not among the reasons (as in `excluded`)."""
    if base.failed is not None or value not in base.domains[name] or len(base.domains[name]) == 1:
        return None
    state = base.copy()
    _fix(state, name, value, _NONE)
    if not state.propagate([name]):
        return state.failed
    domains = state.domains
    # The fields the value narrowed first (what it touched, tightest first), then the others.
    before = base.domains
    touched = sorted(
        (f for f, d in domains.items() if d is not before[f] and len(d) > 1), key=lambda f: len(domains[f])
    )
    for field in dict.fromkeys([*touched, *near]):
        current = domains.get(field)
        if field == name or current is None or len(current) < 2 or len(current) > tries:
            continue
        decided = frozenset({("decision", field)})
        found: set[tuple[str, str]] = set(state.total[field])
        for option in current:
            tries -= 1
            branch = state.copy()
            _fix(branch, field, option, decided)
            if branch.propagate([field]):
                break
            found |= branch.failed or _NONE
        else:
            found.discard(("decision", field))
            return frozenset(found)
        if tries <= 0:
            return None
    return None


def _fix(state: Traced, name: str, value: Scalar, because: Because) -> None:
    """Fix `name` to `value` for `because` alone (a pin, or the value being explained): that is
    the whole reason its domain is one value, whatever removed the others before."""
    # (The values removed before, then the domain's, in that order, as one dict built in C: a
    # test per value in Python was a tenth of a choices call at 5,000 synthetic fields, ~40,000
    # pins fixed by the tiers' states.)
    removed = dict.fromkeys(state.removed[name], because)
    removed.update(dict.fromkeys(state.domains[name], because))
    removed.pop(value, None)
    state.domains[name] = [value]
    state.removed[name] = removed
    state.total[name] = because


def _shortest(cp: CompiledPack, state: Traced, name: str, value: Scalar) -> Because:
    """The shortest reason among the rules reading `name` that exclude the value as the state
    stands (propagation kept the first rule that did; a later one may need fewer pins)."""
    best = state.removed[name][value]
    if len(best) <= 2:
        return best  # a rule and one pin, or less: nothing is shorter
    domains = state.domains
    for con in cp.constraints_by_field.get(name, ()):
        at = con.fields.index(name)
        known = tuple((f, domains[f][0]) for f in con.fields if f != name and len(domains[f]) == 1)
        if value not in cp.verdicts(con.key, name, known)[1]:
            continue
        reason = _gone(cp, con, state, at, value)
        if len(reason) < len(best):
            best = reason
    return best


def _gone(cp: CompiledPack, con: Constraint, state: Traced, at: int, value: Scalar) -> Because:
    """Why the rule has no support left for `fields[at] = value` (`_gone_all` for one value)."""
    return _gone_all(cp, con, state, at, [value])[value]


def _gone_all(
    cp: CompiledPack, con: Constraint, state: Traced, at: int, values: list[Scalar]
) -> dict[Scalar, Because]:
    """Why the rule has no support left for each of `values` at `fields[at]`: the rule, and the
    reasons of the removed values of its other fields that could have been part of one.

    Every combination that satisfies the rule with this value uses some removed value (else it
    would still be a support), and such a value is one three-valued evaluation does not rule
    out next to this one: so these reasons suffice, without the history of every field. What
    does not depend on the value (the fields fixed, the values each alone rules out) is looked
    up once per narrowing, not once per value: a narrowing removes tens of values at once (an
    attention backend fixed leaves few architectures), and on `platform=npu`'s choices these
    reasons were a third of the question."""
    target = con.fields[at]
    rule = frozenset({("rule", con.key)})
    domains = state.domains
    # Usually one field narrowed to one value already breaks the rule with this value (a pinned
    # fact, mostly): then why that field holds only its value is the whole reason.
    fixed = [f for f in con.fields if f != target and len(domains[f]) == 1]
    alone = [(cp.verdicts(con.key, target, ((f, domains[f][0]),))[1], state.total[f]) for f in fixed]
    together = (
        cp.verdicts(con.key, target, tuple((f, domains[f][0]) for f in fixed))[1] if fixed else frozenset()
    )
    out: dict[Scalar, Because] = {}
    for value in values:
        reasons = [total for never, total in alone if value in never]
        if reasons:
            out[value] = rule | min(reasons, key=len)
        elif value in together:
            out[value] = rule.union(*(state.total[f] for f in fixed))
        else:
            found = set(rule)
            for f in con.fields:
                if f == target:
                    continue
                removed = state.removed[f]
                if not removed:
                    continue
                never = cp.verdicts(con.key, f, ((target, value),))[1]
                for u, why in removed.items():
                    if u not in never:
                        found |= why
            out[value] = frozenset(found)
    return out


def _wiped_out(cp: CompiledPack, con: Constraint, state: Traced, at: int) -> Because:
    """Why `fields[at]` has no value left: each of its values went for its own reason."""
    target = con.fields[at]
    out = {("rule", con.key)}
    removed = state.removed[target]
    left = []
    for value in con.full[at]:
        if value in removed:
            out |= removed[value]
        else:
            left.append(value)
    for why in _gone_all(cp, con, state, at, left).values():
        out |= why
    return frozenset(out)
