"""Explanations: minimal conflicts (QuickXplain), minimal reasons for excluded values, repairs,
and the values still possible for each field.

Everything here works on a compiled pack through `CompiledPack.solve` and the reasons
`solver.engine.tracing` records while propagating; it never imports python-constraint or networkx
itself. The consistency checks are kept small by splitting the request into the parts that can
interact (pinned fields are constants, so two rules only interact through fields left free) and,
for an excluded value, by minimising within the few rules and pins propagation blamed for it.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from solver.engine.csp import DESCENT_FIRST, CompiledPack
from solver.engine.groups import connected_positions
from solver.engine.supports import supports_for
from solver.engine.tracing import (
    Because,
    Traced,
    excluded,
    excluded_by_split,
    keep_base,
    paused_base,
    traced_base,
)
from solver.model import ConflictReport, Pin, PinRef, RuleRef, Scalar
from solver.reasoning.consistency import Changed, Checks, Positions
from solver.reasoning.peel import peel
from solver.reasoning.quickxplain import quickxplain, quickxplain_bits
from solver.values import show as _show

__all__ = [
    "Item",
    "Reasons",
    "minimal_conflict",
    "minimal_reason",
    "quickxplain",
    "quickxplain_bits",
    "relevant_rules",
    "render_reason",
    "rule_layers",
    "rule_rings",
]


@dataclass(frozen=True)
class Item:
    """One member of a conflict: a pin (field = value, with its source) or a rule."""

    kind: str  # "pin" | "rule"
    name: str
    value: Scalar | None = None
    source: str = ""

    def label(self) -> str:
        return f"{self.name}={_show(self.value)}" if self.kind == "pin" else self.name


def relevant_rules(
    cp: CompiledPack, pins: Mapping[str, Scalar], start: Sequence[str], rules: Sequence[str] | None = None
) -> list[str]:
    """Rules that can interact with the fields in `start`: reachable through unpinned fields (the
    rules of every ring of `rule_rings`), in pack order."""
    chosen: set[str] = set()
    for ring in rule_rings(cp, start, pins, rules):
        chosen.update(ring)
    return [rid for rid in cp.rule_ids if rid in chosen]


def rule_layers(
    cp: CompiledPack, start: Sequence[str], pins: Mapping[str, Scalar], rules: Sequence[str] | None = None
) -> Iterator[list[str]]:
    """Ever larger sets of rules around the `start` fields (each the rings so far, in pack order):
    most exclusions are one or two rules away, so an explanation searches the first layer that
    already has no solution instead of every rule that could interact."""
    order = cp.rule_index
    chosen: list[str] = []
    for ring in rule_rings(cp, start, pins, rules):
        chosen += ring
        yield sorted(chosen, key=order.__getitem__)


def rule_rings(
    cp: CompiledPack, start: Sequence[str], pins: Mapping[str, Scalar], rules: Sequence[str] | None = None
) -> Iterator[list[str]]:
    """The one walk of "the rules around a field, layer by layer": first the rules reading a
    `start` field, then those reading a field the previous ring reads that is not pinned, and so
    on; each rule once, only those in `rules` (default: all)."""
    pool = None if rules is None else set(rules)
    chosen: set[str] = set()
    seen = set(start)
    frontier = list(dict.fromkeys(start))
    while frontier:
        fresh = list(
            dict.fromkeys(
                rid
                for name in frontier
                for rid in cp.rules_reading(name)
                if rid not in chosen and (pool is None or rid in pool)
            )
        )
        if not fresh:
            return
        chosen.update(fresh)
        yield fresh
        frontier = []
        for rid in fresh:
            for other in cp.rules[rid].fields:
                if other not in seen and other not in pins:
                    seen.add(other)
                    frontier.append(other)


def _components(cp: CompiledPack, pins: Mapping[str, Scalar]) -> list[list[str]]:
    """Groups of rules that interact (share a free field); each group is checked on its own.

    One pass over the free fields' readers (`connected_positions`), not one search per rule; the
    groups come in the order of their first rule, and each lists its rules in pack order. (Made
    from each free field's readers, kept per compiled pack, where each rule's list of free fields
    was made per request: 0.13-0.32 -> 0.05-0.19 ms per SGLang refusal, 37 -> 21 ms at 5,000
    synthetic fields.)
    """
    ids = cp.rule_ids
    readers = _rules_by_field(cp)
    groups = connected_positions(len(ids), [reading for name, reading in readers.items() if name not in pins])
    return [[ids[at] for at in group] for group in groups]


def _rules_by_field(cp: CompiledPack) -> dict[str, list[int]]:
    """The rules reading each field, as their positions in pack order, once per compiled pack."""
    found: dict[str, list[int]] | None = cp.memo.get("conflict-readers")
    if found is None:
        made: dict[str, list[int]] = {}
        for at, rid in enumerate(cp.rule_ids):
            for name in dict.fromkeys(cp.rules[rid].fields):
                made.setdefault(name, []).append(at)
        found = cp.memo.setdefault("conflict-readers", made)
    return found


_KIND = operator.attrgetter("kind")
_NAME = operator.attrgetter("name")


def _oracle(
    cp: CompiledPack, fixed: Mapping[str, Scalar], task: str, checks: Checks | None = None
) -> Callable[[Sequence[Item]], bool]:
    check = checks or Checks(cp, task)

    def consistent(items: Sequence[Item]) -> bool:
        pins = dict(fixed)
        # The items sorted into pins and rules by passes in C (`map`, `compress`): a far layer's
        # QuickXplain asks ~120 questions of ~4,900 items at 5,000 synthetic fields, and a test
        # per item in Python was a sixth of the question's time.
        kinds = list(map(_KIND, items))
        if "pin" not in kinds:
            return check(pins, list(map(_NAME, items)))
        for item in itertools.compress(items, map("pin".__eq__, kinds)):
            if item.name in pins and pins[item.name] != item.value:
                return False
            pins[item.name] = item.value  # type: ignore[assignment]
        return check(pins, list(map(_NAME, itertools.compress(items, map("pin".__ne__, kinds)))))

    return consistent


# Blame what the user typed first, then what was decided on their behalf, then the facts of the
# machine and model, which are the hardest to change.
_RANKS = {"user": 0, "adjusted": 0, "preference": 1, "default": 1, "rule": 1, "launcher-default": 1}


def _pin_rank(source: str) -> int:
    return _RANKS.get(source, 2)


def minimal_conflict(
    cp: CompiledPack,
    pins: Mapping[str, Pin],
    *,
    task: str = "explaining a conflict",
    solved: dict[str, Scalar] | None = None,
) -> tuple[list[Pin], list[str]] | None:
    """A minimal set of pins and rules that cannot hold together, or None if the pins are fine.
    `solved`, when given, receives the values of the groups solved before the conflict's (a start
    for a search of nearly the same request: `diagnoses`' `hint`)."""
    values = {name: pin.value for name, pin in pins.items()}
    # (A pin outside its field's domain fails every group reading it, which only a search says.)
    listed = all(value in cp.domains[name] for name, value in values.items() if name in cp.domains)
    for group in _components(cp, values):
        decided = _decided_group(cp, values, group) if listed else None
        if decided is True and solved is None:
            continue  # (most groups: one rule the pins decide, whose fields are not asked for)
        read = {name for rid in group for name in cp.rules[rid].fields}
        if decided is True:
            if solved is not None:  # (the search's answer: the pins, each free field's first value)
                first = cp.domains
                solved.update({name: values[name] if name in values else first[name][0] for name in read})
            continue
        if listed and decided is None and solved is None and _holds_at_first_values(cp, values, group, read):
            continue
        # (try a descent before the search that keeps arc consistency: `DESCENT_FIRST`)
        solution = None if decided is False else cp.solve(values, rules=group, task=task, hint=DESCENT_FIRST)
        if solution is not None:
            if solved is not None:  # (groups share no free field: their values never disagree)
                solved.update({name: solution[name] for name in read})
            continue
        items = [Item("rule", rid) for rid in group]
        pin_items = [Item("pin", n, p.value, p.source) for n, p in pins.items() if n in read]
        pin_items.sort(key=lambda it: _pin_rank(it.source))
        # (Asked by position, `_minimal`: the same questions as `quickxplain(_oracle(cp, {}, task),
        # ...)` and so the same answer, each a few `and`s of ints where the lists' sets of ~270
        # rule ids per question were half of the QuickXplain of the SGLang conflicts' big groups.)
        checks = Checks(cp, task)
        if decided is None:
            _seed_refutation(checks, values, items + pin_items)
        core = _minimal(checks, {}, items + pin_items)
        core_pins = [pins[it.name] for it in core if it.kind == "pin"]
        core_rules = [it.name for it in core if it.kind == "rule"]
        return core_pins, core_rules
    # Only reachable when a pin is outside its own domain, which inputs rule out.
    return None


def _seed_refutation(checks: Checks, values: Mapping[str, Scalar], items: list[Item]) -> None:
    """Give `checks` a refutation of the conflict's group before its QuickXplain over `items`:
    the rules and pins that propagation's recorded reasons name for the request's wipe-out
    (`traced_base`'s `failed`), made minimal first (QuickXplain over those few items, cheap).
    Every question of the group's QuickXplain holding all of them is then answered "no" without
    a search: d19-lfm2's 26 searches -> 8, r19-deepseek-v4's 28 -> 13. (None when propagation
    alone does not refute the request, or its reasons reach outside the group.)"""
    # (A state of its own, not kept with the pack's traced bases: those serve `why`'s tiers.)
    traced = paused_base(checks.cp, values)
    traced.finish()
    failed = traced.failed
    if not failed:
        return
    named = [item for item in items if (item.kind, item.name) in failed]
    if len(named) != len(failed):
        return
    core = _minimal(checks, {}, named)
    pinned = tuple((item.name, values[item.name]) for item in core if item.kind == "pin")
    checks.refuted.append((pinned, frozenset(item.name for item in core if item.kind == "rule")))


def _holds_at_first_values(
    cp: CompiledPack, values: Mapping[str, Scalar], group: Sequence[str], read: Collection[str]
) -> bool:
    """Whether every rule of `group` holds with the pins and each free
    field it reads at the first value of its domain: one assignment that satisfies the group,
    so a search would find one too (the pins inside their domains: `listed`; a pin outside fails
    every group reading it). Asked before that search where only the verdict is read
    (no `solved` values): 23 of the 27 undecided groups searched before the failing one over
    the 26 SGLang refusals hold so, each search a propagation of the group (0.2-0.4 ms)."""
    domains = cp.domains
    assignment = dict(values)
    for name in read:
        if name not in assignment:
            listed = domains.get(name)
            if not listed:
                return False
            assignment[name] = listed[0]
    return _decided_group(cp, assignment, group) is True


def _decided_group(cp: CompiledPack, values: Mapping[str, Scalar], group: Sequence[str]) -> bool | None:
    """Whether a group of rules can hold under `values` (pins inside their domains), when
    three-valued evaluation decides it without a search: True when it finds every rule true
    whatever the free fields hold, False when it finds one false whatever they hold; else None.
    Of the ~100 groups a conflict's request splits into on the SGLang pack, almost all are one
    rule the pins already decide, and a search of each (a propagated state, a repair from each
    field's first value) was two thirds of the minimal conflict (2,221 of 2,271 searches over
    the 30 slowest benchmark requests)."""
    rules = cp.rules
    verdict: bool | None = True
    for rid in group:
        answer = rules[rid].condition.partial(values)
        if answer is False:
            return False
        if answer is None:
            verdict = None
    return verdict


def minimal_reason(
    cp: CompiledPack,
    field: str,
    value: Scalar,
    pins: Mapping[str, Scalar],
    sources: Mapping[str, str],
    *,
    task: str = "explaining an excluded value",
    near: Mapping[str, Scalar] | None = None,
    trace: bool = True,
) -> list[Item] | None:
    """Why `field` cannot be `value` given `pins`: a minimal set of pins and rules, or None if it can.

    `near`: a solution of `pins` (its value of `field` aside), if the caller has one.
    `trace`: start from propagation's recorded reasons (`solver.engine.tracing`). Its states are kept
    per set of pins, which pays when many values are explained under the same pins (choices, a
    matrix); a caller whose every question has other pins (the rejected values of a resolution,
    each under the fields decided before it) costs a propagation of the whole pack per question
    that way, and searches outwards from the field instead. Many values under the same pins:
    `Reasons`."""
    others = {n: v for n, v in pins.items() if n != field}
    return Reasons(cp, others, sources, task=task, trace=trace).why(field, value, near=near)


class Reasons:
    """`minimal_reason` for many values under the same `pins` (none of them the field asked
    about): what does not depend on the value (the tiers of pins, their traced states, the
    pins' order) is worked out once, not per value (at 5,000 synthetic fields and ~460 pins,
    ~3,000 excluded values each re-ranked and re-sorted every pin)."""

    def __init__(
        self,
        cp: CompiledPack,
        pins: Mapping[str, Scalar],
        sources: Mapping[str, str],
        *,
        task: str = "explaining an excluded value",
        trace: bool = True,
        domains: Mapping[str, Sequence[Scalar]] | None = None,
    ) -> None:
        self.cp = cp
        self.pins = pins
        self.sources = sources
        self.task = task
        # Each pin's rank, looked up once (the tiers and the order read it: ~475 pins per
        # pinned option at 5,000 synthetic fields).
        rank = {n: _pin_rank(sources.get(n, "")) for n in pins}
        self.tiers = _tiers(pins, rank) if trace else []
        # The domains the last tier's propagation leaves (every pin), if the caller has them
        # from a state propagated in another order (`traced_domains`: the domains of one
        # fixpoint, whatever the order; not its reasons). A value still in them is in every
        # lower tier's domains too (fewer pins narrow less), and a lower tier answers only for
        # values it removed: its state (a traced propagation of the pack, ~25 ms at 5,000
        # synthetic fields) is then not made for that value. Being a fixpoint's, they also say
        # the last tier's propagation ends in no wipe-out (`_gone` relies on it).
        self._last = domains
        self._bases: dict[int, Traced] = {}
        # The pins as QuickXplain is given them: by rank, then in the request's order (one int
        # per pin, rank first: no tuple per pin for the garbage collector to go over).
        self._order = {n: rank[n] * len(pins) + i for i, n in enumerate(pins)}

    def _base(self, tier: int) -> Traced:
        found = self._bases.get(tier)
        if found is None:
            found = self._bases[tier] = traced_base(self.cp, self.tiers[tier])
        elif not found.finished:
            keep_base(self.cp, self.tiers[tier], found)
        return found

    def _gone(self, field: str, value: Scalar) -> Because | None:
        """What `excluded` answers on the last tier's state for a value its propagation removes,
        when that needs only the part of the run up to the value's going; else None. The reason
        recorded when the value went is the answer when it is a rule and a pin or less
        (`_shortest` looks no further), and the run ends in no wipe-out: the caller's `domains`
        are its fixpoint's. (The last tier's state is a propagation of every pin, ~35 ms at
        5,000 synthetic fields; an option's excluded values mostly go a third of the way in.)"""
        top = len(self.tiers) - 1
        state = self._bases.get(top)
        if state is None:
            state = self._bases[top] = paused_base(self.cp, self.tiers[top])
        if not state.until_gone(field, value):
            return None
        reason = state.removed[field][value]
        return reason if len(reason) <= 2 else None

    def _items(self, found: Because) -> list[Item]:
        """Reasons as QuickXplain is given them: rules in pack order (without a pass over every
        rule of the pack per explained value), then pins by rank."""
        order, ranked, pins = self.cp.rule_index, self._order, self.pins
        named = sorted((n for kind, n in found if kind == "rule" and n in order), key=order.__getitem__)
        blamed = sorted((n for kind, n in found if kind == "pin" and n in ranked), key=ranked.__getitem__)
        return [Item("rule", rid) for rid in named] + [
            Item("pin", n, pins[n], self.sources.get(n, "")) for n in blamed
        ]

    def why(
        self, field: str, value: Scalar, *, near: Mapping[str, Scalar] | None = None
    ) -> list[Item] | None:
        """Why `field` cannot be `value` under the pins (see `minimal_reason`), or None if it can."""
        cp, task, sources, others = self.cp, self.task, self.sources, self.pins
        if field in others:
            return minimal_reason(
                cp, field, value, others, sources, task=task, near=near, trace=bool(self.tiers)
            )
        background = {field: value}
        # A solution with only this field changed satisfies every rule that does not read it: a
        # witness for most of the consistent subsets QuickXplain asks about, without a search.
        witnesses: tuple[Mapping[str, Scalar], ...] = ()
        if near is not None:
            witnesses = (Changed(near, field, value) if field in near else {**near, field: value},)
        # (And the solutions stored for the pack, which answer most questions without the pins
        # that exclude the value: ~60 % of the searches of a platform's choices, ~90 % of their time.)
        checks = Checks(cp, task, witnesses, supports_for(cp))
        # Propagation that records its reasons usually names a handful of rules and pins that
        # already exclude the value; a minimal conflict among them is one of the whole. Tried with
        # the rules alone, then adding the user's pins, then the rest (as QuickXplain's order
        # would): a reason that needs no fact is the one to give when there is one.
        found = None
        tiers = self.tiers
        last = self._last
        skip = last is not None and field in last and value in last[field]
        for i in range(len(tiers)):
            if skip and i < len(tiers) - 1:
                continue  # (not removed by the lower tiers: see `_last`)
            if i == len(tiers) - 1 and last is not None and not skip and field in last:
                found = self._gone(field, value)  # (removed by the last tier: see `_last`)
                if found is not None:
                    break
            # Fewer pins than the request: only what their own propagation removed (trying the
            # value there as well would cost a propagation per tier for a rare gain).
            found = excluded(cp, self._base(i), field, value, removed_only=i < len(tiers) - 1)
            if found is not None:
                break
        if found is None and tiers:
            # Not by propagation: then mostly by one case split on a field the value narrowed
            # (`excluded_by_split`), whose reasons are again a handful of items. They are not the
            # answer (QuickXplain over them can settle on another minimal reason than over the
            # rule layers below, which is the answer) but a known refutation: every question of
            # the layers' search that asks for all of them is answered "no" without a search.
            # One value of the 5,000-field synthetic pack: 23 s of refutations -> 0.1 s.
            around = [
                f
                for ring in itertools.islice(rule_rings(cp, [field], others), 2)
                for rid in ring
                for f in cp.rules[rid].fields
            ]
            split = excluded_by_split(cp, self._base(len(tiers) - 1), field, value, around)
            if split is not None:
                # Made minimal first (QuickXplain over a handful of items, cheap): the smaller a
                # known refutation, the more of the layers' questions ask for all of it.
                core = _minimal(checks, background, self._items(found=split))
                known = {i.name: others[i.name] for i in core if i.kind == "pin"}
                blamed = frozenset(i.name for i in core if i.kind == "rule")
                checks.refuted.append((tuple({**known, **background}.items()), blamed))
        if found is not None:
            return _minimal(checks, background, self._items(found))
        check = {**others, **background}
        # Grow the rule set outwards from the field (the rules reading it, then the rules reading
        # their free fields, ...) and stop at the first layer that already excludes the value: most
        # exclusions are one or two rules away, and QuickXplain then works on a few rules, not all.
        rules: list[str] | None = None
        for layer in rule_layers(cp, [field], others):
            if not checks(check, layer):
                rules = layer
                break
        if rules is None:
            # The rules around the field allow it; if the request fails anyway, the reason lies
            # elsewhere (the other inputs already conflict), so look at every rule.
            if cp.solve(check, task=task) is not None:
                return None
            rules = list(cp.rule_ids)
        # QuickXplain over the rules that can be in a minimal conflict (`peel`: its answer over
        # them is its answer over the layer; a pin read only by peeled rules is in none either,
        # as a conflict with it would have a rule reading its field). The far layer at 5,000
        # synthetic fields: 4,552 rules -> 3,392, each of ~120 questions a pass over them.
        rules = peel(cp, rules, [*others, field])
        read = {name for rid in rules for name in cp.rules[rid].fields}
        items = [Item("rule", rid) for rid in rules]
        pin_items = [Item("pin", n, v, sources.get(n, "")) for n, v in others.items() if n in read]
        pin_items.sort(key=lambda it: _pin_rank(it.source))
        return _minimal(checks, background, items + pin_items)


def _minimal(checks: Checks, fixed: Mapping[str, Scalar], items: list[Item]) -> list[Item]:
    """QuickXplain over `items` with `fixed` pinned, its questions asked by position
    (`quickxplain_bits`, `Positions`): `quickxplain(_oracle(cp, fixed, task, checks), items)`'s
    answer, as the same questions get the same answers."""
    ask = Positions(checks, [(item.kind, item.name, item.value) for item in items], fixed)
    return [items[at] for at in quickxplain_bits(ask, len(items))]


def _tiers(pins: Mapping[str, Scalar], rank: Mapping[str, int]) -> list[dict[str, Scalar]]:
    """No pins, then the pins most willing to be blamed (the lowest `rank`), then more, up to
    all of them."""
    ranks = sorted(set(rank.values()))
    out: list[dict[str, Scalar]] = [{}]
    for below in ranks[1:]:
        out.append({n: v for n, v in pins.items() if rank[n] < below})
    if pins:
        out.append(dict(pins))
    return out


def render_reason(items: Sequence[Item]) -> list[str]:
    """Rule ids and `field=value` pins, as the JSON `because` lists show them."""
    return [it.label() for it in items]


def conflict_report(cp: CompiledPack, core_pins: Sequence[Pin], core_rules: Sequence[str]) -> ConflictReport:
    pack = cp.pack
    return ConflictReport(
        pins=[PinRef(field=p.field, value=p.value, source=p.source) for p in core_pins],
        rules=[RuleRef(id=r, because=pack.rule(r).because, source=pack.rule(r).source) for r in core_rules],
    )


def diagnoses(
    cp: CompiledPack,
    pins: Mapping[str, Pin],
    *,
    limit: int = 6,
    max_size: int = 3,
    task: str = "looking for repairs",
    conflicts: Sequence[Collection[str]] = (),
    witnesses: dict[tuple[str, ...], Mapping[str, Scalar]] | None = None,
    hint: Mapping[str, Scalar] | None = None,
) -> list[tuple[str, ...]]:
    """Minimal sets of user pins whose removal makes the request solvable, smallest first.

    Exhaustive by size (FastDiag's answers, all of them): a set is reported only if no subset of
    it was. User pins are few, so this stays small; `max_size` bounds it. `conflicts`: pin names
    of known conflicts; a set that removes none of a conflict's pins leaves it standing, so it
    is skipped without a search. `witnesses`, when given, receives per set found the solution
    that proved it (a solution of the request without those pins). `hint`: values that solve
    most of the request (`minimal_conflict`'s `solved`), where each trial's search starts.
    """
    user = [n for n, p in pins.items() if p.source in ("user", "adjusted")]
    fixed = {n: p.value for n, p in pins.items()}
    found: list[tuple[str, ...]] = []
    # Every trial is "the other pins, minus some user pins": the other pins propagated once.
    base = cp.start({n: v for n, v in fixed.items() if n not in user})
    # Known conflicts, and the kept pins of every trial whose pins wiped out a field as they
    # were fixed: a later trial that keeps all of those fails the same way (forward checking
    # only narrows further with more pins), so it is skipped (3,400 of 3,500 trials at 5,000
    # synthetic fields).
    known = [set(conflict) for conflict in conflicts]
    for size in range(1, min(max_size, len(user)) + 1):
        for combo in _hitting(user, size, known[0] if known else None):
            if base is None:
                return found
            if any(set(d) <= set(combo) for d in found):
                continue
            if any(conflict.isdisjoint(combo) for conflict in known):
                continue
            added = 0
            kept: set[str] = set()
            for name in user:
                if name not in combo:
                    kept.add(name)
                    if not base.fix(name, fixed[name]):
                        known.append(kept)
                        break
                    added += 1
            else:
                # (From `hint` it mends the conflict's rules, not a descent through every group.)
                solution = cp.search(base, task=task, hint=hint or DESCENT_FIRST)
                if solution is not None:
                    found.append(combo)
                    if witnesses is not None:
                        witnesses[combo] = solution
            for _ in range(added):
                base.undo()
            if len(found) >= limit:
                return found
    return found


def _hitting(names: Sequence[str], size: int, conflict: Collection[str] | None) -> Iterable[tuple[str, ...]]:
    """The sets of `size` of `names` that take at least one of `conflict`'s (all of them when
    None), in `itertools.combinations`' order: made from each member's sets, not filtered out of
    every set (C(85, 3) = 98,770 sets, against 2 x C(84, 2) = 6,972 for a two-pin conflict)."""
    if conflict is None:
        return itertools.combinations(names, size)
    index = {name: i for i, name in enumerate(names)}
    made: set[tuple[int, ...]] = set()
    for member in conflict:
        if member not in index:
            continue
        at = index[member]
        rest = [i for i in range(len(names)) if i != at]
        for others in itertools.combinations(rest, size - 1):
            made.add(tuple(sorted((at, *others))))
    return [tuple(names[i] for i in picked) for picked in sorted(made)]
