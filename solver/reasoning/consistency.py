"""Whether pins can hold under a subset of a pack's rules: QuickXplain's consistency checks.

`Checks` answers them without a search when it can (three-valued evaluation, earlier witnesses,
the solutions stored for the pack, one rule tried alone) and otherwise with a search over the
fields those rules read (`solve_within`). The one home of these checks: `solver.reasoning.conflicts`
(minimal conflicts and the reasons of excluded values) asks them.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, cast

from solver.engine.csp import DESCENT_FIRST, CompiledPack
from solver.engine.state import State
from solver.engine.supports import Supports
from solver.model import Scalar

__all__ = ["Changed", "Checks", "Positions", "positions", "solve_within"]


class Checks:
    """Whether pins can hold under a subset of the rules, answered without a search when it can.

    QuickXplain asks many such questions about overlapping sets. A rule that three-valued
    evaluation already finds false under the pins refutes the set at once, one it finds true is
    left out of the question (whatever the free fields hold, it holds), and a solution found
    for an earlier question proves a later one whenever it keeps those pins and satisfies those
    rules (it was found under fewer rules, or other ones); only the rest needs a search.
    """

    KEEP = 8

    def __init__(
        self,
        cp: CompiledPack,
        task: str,
        witnesses: Sequence[Mapping[str, Scalar]] = (),
        known: Supports | None = None,
    ) -> None:
        self.cp = cp
        self.task = task
        # Solutions of every rule met before (`solver.engine.supports`): one that keeps a
        # question's pins answers it, whatever rules it asks about, without a search.
        self.known = known
        self.witnesses: list[Mapping[str, Scalar]] = list(witnesses)
        # Per witness (the same place in the list): the rules it keeps and those it breaks, of
        # those asked about so far. QuickXplain over the thousands of rules of a far layer asks
        # ~100 questions of mostly the same rules; a rule is checked against a witness once,
        # not per question, and a question is tested against what is known by set operations.
        self._keeps: list[tuple[set[str], set[str]]] = [(set(), set()) for _ in self.witnesses]
        # The three-valued verdict of each rule with no pin (the same for every question), as
        # the sets of rules it finds false and undecided, and every rule it was asked of: kept
        # with the compiled pack (`_no_pin_verdicts`), where each `Checks` made them again, a
        # far layer's thousands of rules once per excluded value explained.
        self._seen, self._false, self._open = _no_pin_verdicts(cp)
        # Questions answered "no": any question that asks for at least those pins and rules
        # has the same answer (more pins or rules can only make it harder).
        self.refuted: list[tuple[tuple[tuple[str, Scalar], ...], frozenset[str]]] = []

    def __call__(self, pins: Mapping[str, Scalar], rules: Sequence[str]) -> bool:
        cp = self.cp
        # A rule no pin touches has its verdict with no pin; one a pin touches, its verdict
        # under the pins. False refutes the question; undecided rules are what it asks (one the
        # pins satisfy whatever its free fields hold cannot matter). Computed by sets over the
        # rules asked, not a test per rule: at 5,000 synthetic fields a far layer's QuickXplain
        # asks ~100 questions of ~2,700 rules each, and that loop was half of its time.
        seen = self._seen
        asked = set(rules)
        if not seen.issuperset(asked):
            for rid in [rid for rid in rules if rid not in seen]:
                verdict = cp.rules[rid].condition.partial({})
                if verdict is False:
                    self._false.add(rid)
                elif verdict is None:
                    self._open.add(rid)
                seen.add(rid)  # (last: a thread that finds it seen finds its verdict too)
        touched = _reading(cp, pins)
        if not self._false.isdisjoint(asked) and any(
            rid not in touched for rid in self._false.intersection(asked)
        ):
            return False
        undecided: set[str] = set()
        for rid in touched.intersection(asked):
            verdict = cp.rules[rid].condition.partial(pins)
            if verdict is False:
                return False
            if verdict is None:
                undecided.add(rid)
        # The rules the question is about, as a set (what is known is tested by set operations;
        # the list in the caller's order is made only for a search: of a far layer's ~100
        # questions of thousands of rules, ~1 in 8 searches).
        open_set = undecided.union(self._open.intersection(asked).difference(touched))
        if not open_set:
            return True
        if self.refuted:
            for known_pins, known_rules in self.refuted:
                if known_rules <= asked and all(n in pins and pins[n] == v for n, v in known_pins):
                    return False
        for witness, keeps in zip(self.witnesses, self._keeps, strict=True):
            if _has_pins(witness, pins) and _keeps(cp, witness, keeps, open_set):
                return True
        if len(open_set) == 1:
            # One rule: whether some values of its free fields keep it, by trying them (most
            # checks QuickXplain makes on a two-item reason are of this kind).
            alone = _one_rule(cp, next(iter(open_set)), pins)
            if alone is not None:
                if not alone:
                    self.refuted.append((tuple(pins.items()), frozenset(open_set)))
                return alone
        if self.known is not None and self.known.keeping(pins)[1]:
            return True
        # (No witness yet: a descent first all the same. Half the questions have a solution, and
        # the search that keeps arc consistency found one for the first question of six of the
        # SGLang benchmark's conflicts at 25-50 ms where the descent, made one step past forward
        # checking where it dead-ends, takes ~2 ms; a refuted question mostly ends in
        # propagation.)
        return self.searched(pins, [rid for rid in rules if rid in open_set]) is not None

    def searched(self, pins: Mapping[str, Scalar], rules: list[str]) -> Mapping[str, Scalar] | None:
        """A solution of `rules` with `pins` by a search (`solve_within`), kept as a witness for
        later questions; None (the question kept as refuted) when there is none."""
        hint = self.witnesses[0] if self.witnesses else DESCENT_FIRST
        found = solve_within(self.cp, pins, rules, self.task, hint)
        if found is None:
            self.refuted.append((tuple(pins.items()), frozenset(rules)))
            return None
        self.witnesses.insert(0, found)
        # It keeps every rule it was searched under (a solution of them): known kept from the
        # start, not checked again rule by rule at the next question (a far layer's searches
        # are of thousands of rules, and the next question mostly asks the same ones).
        self._keeps.insert(0, (set(rules), set()))
        del self.witnesses[self.KEEP :], self._keeps[self.KEEP :]
        return found


class Positions:
    """`Checks` for QuickXplain's questions over a list of rules and pins asked about by their
    positions, each question an int with bit i set for the item at position i
    (`solver.reasoning.conflicts.quickxplain_bits`), `fixed` pins in every question.

    What `Checks` keeps as sets of rule ids is kept here as masks over the positions: the rules
    false and undecided with no pin, the rules each pin's field is read by, what each witness
    is known to keep and break, the questions refuted; and per set of pins asked (QuickXplain
    asks the same pins with many sets of rules) the pins as a mapping and each rule's verdict
    under them, as they are met. A question is then a few `and`s of ints in C where it was a
    set of thousands of rule ids made and intersected (the far value's explanation at 5,000
    synthetic fields: ~120 questions of ~3,400 rules and ~200 pins each). Yes and no answers are
    `Checks`' (each proved: a witness, or a search, or a refutation), whose witnesses, stored
    solutions and refutations it starts from and whose searches it shares."""

    def __init__(
        self, checks: Checks, items: Sequence[tuple[str, str, Scalar | None]], fixed: Mapping[str, Scalar]
    ) -> None:
        cp = self.cp = checks.cp
        self.checks = checks
        self.fixed = fixed
        # (kind, name, value) per position: "rule" with a rule id, "pin" with a field and value.
        self.rule_at = {at: name for at, (kind, name, _) in enumerate(items) if kind == "rule"}
        # (A pin's value is a field's value, never None: `Item`'s None is a rule's.)
        self.pin_at = {
            at: (name, cast(Scalar, value)) for at, (kind, name, value) in enumerate(items) if kind == "pin"
        }
        self.pin_mask = sum(1 << at for at in self.pin_at)
        seen, false, undecided = _no_pin_verdicts(cp)
        self.false = self.open = 0
        for at, rid in self.rule_at.items():
            if rid not in seen:
                verdict = cp.rules[rid].condition.partial({})
                if verdict is False:
                    false.add(rid)
                elif verdict is None:
                    undecided.add(rid)
                seen.add(rid)  # (last, as `Checks` does)
            if rid in false:
                self.false |= 1 << at
            elif rid in undecided:
                self.open |= 1 << at
        at_rule = {rid: at for at, rid in self.rule_at.items()}
        self._at_rule = at_rule
        # The rules (as positions) reading each field (made as pins ask for them).
        self._reading: dict[str, int] = {}
        # Per set of pins asked (their bits): the pins with `fixed`, the rules their fields are
        # read by, and among those the rules whose verdict under them is known, false, undecided.
        self._pins: dict[int, _Pinned] = {}
        # Witnesses (`Checks`' own first), each with the positions it keeps and breaks.
        self.witnesses: list[list[Any]] = [
            [witness, self._mask(kept), self._mask(broken)]
            for witness, (kept, broken) in zip(checks.witnesses, checks._keeps, strict=True)
        ]
        # Refuted questions as masks: a question holding every position of one is refuted too
        # (`Checks`' own, where each of its pins is `fixed` or an item and its rules are items).
        self.refuted: list[int] = []
        at_pin = {pin: at for at, pin in self.pin_at.items()}
        for pins, rules in checks.refuted:
            mask = self._mask(rules)
            for pin in pins:
                if pin in at_pin:
                    mask |= 1 << at_pin[pin]
                elif pin[0] not in fixed or fixed[pin[0]] != pin[1]:
                    break
            else:
                if all(rid in at_rule for rid in rules):
                    self.refuted.append(mask)

    def _mask(self, rules: Iterable[str]) -> int:
        at = self._at_rule
        return sum(1 << at[rid] for rid in rules if rid in at)

    def _pinned(self, bits: int) -> _Pinned:
        pins = dict(self.fixed)
        clash = False
        touched = 0
        reading = self._reading
        cp = self.cp
        for name in [*self.fixed, *(self.pin_at[at][0] for at in positions(bits))]:
            found = reading.get(name)
            if found is None:
                found = reading[name] = self._mask(cp.rules_reading(name))
            touched |= found
        for at in positions(bits):
            name, value = self.pin_at[at]
            if name in pins and pins[name] != value:
                clash = True
            pins[name] = value
        made = self._pins[bits] = _Pinned(pins, touched, clash)
        return made

    def __call__(self, asked: int) -> bool:
        cp = self.cp
        bits = asked & self.pin_mask
        pinned = self._pins.get(bits) or self._pinned(bits)
        if pinned.clash:
            return False
        pins, touched = pinned.pins, pinned.touched
        rules = asked & ~self.pin_mask
        if self.false & rules & ~touched:
            return False
        # The verdicts under the pins of the rules their fields are read by, as questions ask.
        todo = touched & rules & ~pinned.known
        if todo:
            for at in positions(todo):
                verdict = cp.rules[self.rule_at[at]].condition.partial(pins)
                if verdict is False:
                    pinned.false |= 1 << at
                elif verdict is None:
                    pinned.open |= 1 << at
            pinned.known |= todo
        if pinned.false & rules:
            return False
        open_ = (pinned.open & rules) | (self.open & rules & ~touched)
        if not open_:
            return True
        if any(known & asked == known for known in self.refuted):
            return False
        for known in self.witnesses:
            witness, kept, broken = known
            if broken & open_ or not _has_pins(witness, pins):
                continue
            for at in positions(open_ & ~kept):
                rule = cp.rules[self.rule_at[at]]
                if not rule.holds(rule.pick(witness)):
                    known[2] = broken | 1 << at
                    break
            else:
                known[1] = kept | open_
                return True
        ids = [self.rule_at[at] for at in positions(open_)]
        if len(ids) == 1:
            alone = _one_rule(cp, ids[0], pins)
            if alone is not None:
                if not alone:
                    self.refuted.append(bits | open_)
                return alone
        checks = self.checks
        if checks.known is not None and checks.known.keeping(pins)[1]:
            return True
        found = checks.searched(pins, ids)
        if found is None:
            self.refuted.append(bits | open_)
            return False
        self.witnesses.insert(0, [found, open_, 0])
        del self.witnesses[Checks.KEEP :]
        return True


class _Pinned:
    """One set of pins `Positions` was asked with: the pins, the rules (positions) their fields
    are read by, whether two of them disagree, and the verdicts under them known so far."""

    __slots__ = ("clash", "false", "known", "open", "pins", "touched")

    def __init__(self, pins: dict[str, Scalar], touched: int, clash: bool) -> None:
        self.pins, self.touched, self.clash = pins, touched, clash
        self.known = self.false = self.open = 0


def positions(mask: int) -> list[int]:
    """The positions of the bits set in `mask`, lowest first (read off its binary text in C)."""
    text = bin(mask)[:1:-1]
    out = []
    at = text.find("1")
    while at >= 0:
        out.append(at)
        at = text.find("1", at + 1)
    return out


def _no_pin_verdicts(cp: CompiledPack) -> tuple[set[str], set[str], set[str]]:
    """The rules whose verdict with no pin is known, those found false, and those undecided: one
    table per compiled pack (a rule's verdict with no pin is its own), filled as `Checks` meet
    rules. Only ever added to, a rule's verdict before the rule is marked seen (sets are
    changed under the interpreter's lock one call at a time, so threads read it safely)."""
    found: tuple[set[str], set[str], set[str]] | None = cp.memo.get("no-pin-verdicts")
    if found is None:
        found = cp.memo.setdefault("no-pin-verdicts", (set(), set(), set()))
    return found


def _reading(cp: CompiledPack, pins: Mapping[str, Scalar]) -> set[str]:
    """The rules reading any of the `pins`' fields (each field's set made once per compiled pack)."""
    by_field: dict[str, frozenset[str]] = cp.memo.setdefault("rules-reading", {})
    out: set[str] = set()
    for name in pins:
        found = by_field.get(name)
        if found is None:
            found = by_field[name] = frozenset(cp.rules_reading(name))
        out |= found
    return out


def solve_within(
    cp: CompiledPack,
    pins: Mapping[str, Scalar],
    rules: Sequence[str],
    task: str,
    hint: Mapping[str, Scalar] | None,
) -> Mapping[str, Scalar] | None:
    """`cp.solve(pins, rules=rules, hint=hint)` searched over the fields those rules read and the
    pins only, every other field then taken from `hint` (or its first value): no rule asked about
    reads them (a search over every field per question was most of QuickXplain's cost)."""
    state = cp.start(pins, rules=rules)
    if state is None:
        return None
    domains = state.domains
    read = [f for f in (*state.by_field, *pins) if f in domains]
    within = State({f: domains[f] for f in read}, state.open, state.by_field)
    found = cp.search(within, task=task, hint=hint)
    if found is None:
        return None
    if isinstance(hint, Changed):
        return {**hint.solution, hint.field: hint.value, **found}  # (C-level copies only)
    if hint is None or len(hint) != len(domains):
        # Each field's first value, once per compiled pack.
        hint = cp.memo.get("first-values") or cp.memo.setdefault(
            "first-values", {n: v[0] for n, v in cp.domains.items() if v}
        )
    return {**hint, **found}


def _has_pins(witness: Mapping[str, Scalar], pins: Mapping[str, Scalar]) -> bool:
    """Whether `witness` holds every pin's value, compared by the mappings' item views (in C
    for dicts): a far layer's question has hundreds of pins, asked of up to `KEEP` witnesses
    each, and a test per pin in Python was a fifth of its checks at 5,000 synthetic fields."""
    if isinstance(witness, Changed):
        # Its solution's items but the changed field's, whose pin is checked on its own.
        field = witness.field
        if field in pins:
            if witness.value != pins[field]:
                return False
            pins = dict(pins)  # (a copy in C, less that pin)
            del pins[field]
        return pins.items() <= witness.solution.items()
    return pins.items() <= witness.items()


def _keeps(
    cp: CompiledPack, witness: Mapping[str, Scalar], known: tuple[set[str], set[str]], rules: set[str]
) -> bool:
    """Whether `witness` keeps every one of `rules`, remembered in `known` (the witness's own
    sets of rules kept and broken): each rule not known yet is checked until one breaks. (In the
    set's order: the answer is the same in any; ordering thousands of rules per question cost
    more than the checks it could spare.)"""
    kept, broken = known
    if not broken.isdisjoint(rules):
        return False
    for rid in rules.difference(kept):
        rule = cp.rules[rid]
        if not rule.holds(rule.pick(witness)):
            broken.add(rid)
            return False
        kept.add(rid)
    return True


class Changed(Mapping[str, Scalar]):
    """`{**solution, field: value}` without a copy of every field (made per explained value)."""

    __slots__ = ("field", "solution", "value")

    def __init__(self, solution: Mapping[str, Scalar], field: str, value: Scalar) -> None:
        self.solution, self.field, self.value = solution, field, value

    def __getitem__(self, name: str) -> Scalar:
        return self.value if name == self.field else self.solution[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.solution)

    def __len__(self) -> int:
        return len(self.solution)


_ONE_RULE_TRIES = 4096
# The three-valued steps `_one_rule_descent` takes before it leaves the question to a search.
_DESCENT_STEPS = 256


def _one_rule(cp: CompiledPack, rid: str, pins: Mapping[str, Scalar]) -> bool | None:
    """Whether the rule can hold with `pins` and its other fields free; None: too many to try."""
    rule = cp.rules[rid]
    choices: list[Sequence[Scalar]] = []
    size = 1
    for f in rule.fields:
        if f in pins:
            choices.append((pins[f],))
        else:
            size *= len(cp.domains[f])
            if size > _ONE_RULE_TRIES:
                return _one_rule_descent(cp, rid, pins)
            choices.append(cp.domains[f])
    return any(rule.holds(combo) for combo in itertools.product(*choices))


def _one_rule_descent(cp: CompiledPack, rid: str, pins: Mapping[str, Scalar]) -> bool | None:
    """`_one_rule` for a rule with too many combinations of free values to try them all: its
    free fields set one after another in pack order, each value tried in domain order, a branch
    left as soon as three-valued evaluation finds the rule false there and the answer yes as
    soon as it finds it true whatever the fields still free hold (both as `Checks` reads them).
    None after `_DESCENT_STEPS` values tried (then a search answers). (A platform's choices
    asked ~9 such questions, each a search of ~1.3 ms for what a few steps decide: a backend
    needing an SM90+ GPU is possible with `gpu_arch` free.)"""
    rule = cp.rules[rid]
    partial = rule.condition.partial
    free = [f for f in rule.fields if f not in pins]
    known = dict(pins)
    trail = [iter(cp.domains[free[0]])]
    steps = 0
    while trail:
        at = len(trail) - 1
        value = next(trail[-1], None)
        if value is None:  # (a domain holds no None: values are str, int, bool)
            trail.pop()
            known.pop(free[at], None)
            continue
        known[free[at]] = value
        steps += 1
        if steps > _DESCENT_STEPS:
            return None
        verdict = partial(known)
        if verdict is True:
            return True
        if verdict is None:
            if at + 1 < len(free):
                trail.append(iter(cp.domains[free[at + 1]]))
            elif rule.holds(rule.pick(known)):
                return True
    return False
