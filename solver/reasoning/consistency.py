"""Whether pins can hold under a subset of a pack's rules: QuickXplain's consistency checks.

`Checks` answers them without a search when it can (three-valued evaluation, earlier witnesses,
the solutions stored for the pack, one rule tried alone) and otherwise with a search over the
fields those rules read (`solve_within`). The one home of these checks: `solver.reasoning.conflicts`
(minimal conflicts and the reasons of excluded values) asks them.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence

from solver.engine.csp import DESCENT_FIRST, CompiledPack
from solver.engine.state import State
from solver.engine.supports import Supports
from solver.model import Scalar

__all__ = ["Changed", "Checks", "solve_within"]


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
        hint = self.witnesses[0] if self.witnesses else DESCENT_FIRST
        rules = [rid for rid in rules if rid in open_set]
        found = solve_within(cp, pins, rules, self.task, hint)
        if found is None:
            self.refuted.append((tuple(pins.items()), frozenset(rules)))
            return False
        self.witnesses.insert(0, found)
        # It keeps every rule it was searched under (a solution of them): known kept from the
        # start, not checked again rule by rule at the next question (a far layer's searches
        # are of thousands of rules, and the next question mostly asks the same ones).
        self._keeps.insert(0, (set(rules), set()))
        del self.witnesses[self.KEEP :], self._keeps[self.KEEP :]
        return True


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
