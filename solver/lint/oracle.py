"""Satisfiability questions about one pack, for lint's semantic checks (`PackOracle`).

Every semantic check is a question "is there a configuration with ...", answered in steps: a
known solution of the pack, repaired by a few min-conflicts moves (`solver.engine.localsearch`),
answers most "yes" questions (one solution proves many values and conditions alive); then a
local exact step searches and refutes within the rings of rules around the question's fields
(`solver.lint.rings.around`), so a question costs what its neighbourhood holds, not the pack;
a question with a condition (a rule's checks) then pins, in turn, the small cases that make the
condition true (`solver.lint.rings.by_cases`); then the engine's `CompiledPack.solve` and the exact search of
`solver.engine.count` take turns, short tries first, then each the whole budget. The "no" answers,
which the findings rest on, are always proved by an exact search, and their minimal reasons come
from QuickXplain (`PackOracle.reason`, a layer of its own: `solver.lint.reasons`).

Imports only the standard library at module level; the engine, the counter and the reasoning are
imported inside functions (the CLI imports lint at start-up).
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from solver import progress as _progress
from solver.budget import RAN_OUT, Budget, within_cap
from solver.lint.codes import Finding
from solver.lint.moves import (
    SMALL_PRODUCT,
    OneChange,
    known_first,
    nearest_change,
    small_solution,
)
from solver.lint.reasons import Reasons
from solver.lint.rings import around, by_cases
from solver.lint.shapes import Shapes
from solver.lint.turns import turns
from solver.lint.walks import Walks
from solver.lint.window import SEEN
from solver.values import show as _show

if TYPE_CHECKING:
    from solver.engine.count import Limit
    from solver.engine.csp import CompiledPack
    from solver.engine.minconflicts import Place
    from solver.engine.state import State
    from solver.model import Pack, Scalar
    from solver.pack.expr import Condition
    from solver.reasoning.conflicts import Item

__all__ = ["PackOracle", "pins_text"]

REPAIR_STEPS = 4
ONE_CHANGE_FIRST = 64


def pins_text(values: Mapping[str, Scalar]) -> str:
    return ", ".join(f"{n}={_show(v)}" for n, v in values.items())


class PackOracle(Reasons):
    """A pack's satisfiability questions, the solutions met on the way, and the findings so far."""

    def __init__(self, pack: Pack, *, samples: int, seed: int, budget: Budget) -> None:
        from solver.engine.csp import compile_pack
        from solver.pack.loader import semantics

        self.pack = pack
        # Every search is charged to the lint's Budget: per-search steps, and a total when given.
        self.meter = budget
        self.cp: CompiledPack = compile_pack(pack).within(budget)
        self.sem = semantics(pack)
        self.samples = samples
        self.seed = seed
        self.budget = budget.per_search
        self.findings: list[Finding] = []
        self.pool: list[dict[str, Scalar]] = []  # solutions of the whole pack, found on the way
        self.proven: dict[str, set[Scalar]] = {n: set() for n in pack.fields}
        self.dead: set[tuple[str, Scalar]] = set()
        self.solves = 0
        self.stats: dict[str, Any] = {}
        self._dominance: dict[tuple[str, Scalar, Scalar], bool] = {}
        import random

        self.rng = random.Random(seed)
        self.repaired = 0
        from solver.engine.count import ModelCounter, pack_checks

        # The exact search of what local repair cannot answer (nothing projected; rules switchable).
        self.oracle = ModelCounter(self.cp.domains, pack_checks(pack), project=())
        self.index = {rid: i for i, rid in enumerate(self.cp.rule_ids)}
        self._every = frozenset(range(len(self.index)))  # `indices`
        self.fact_names = set(pack.facts)  # (`world`: the hard rules over facts alone)
        self.world = [r for r in self.cp.rule_ids if set(self.cp.rules[r].fields) <= self.fact_names]
        self._added: dict[int, tuple[int, Condition]] = {}
        self._extras: dict[tuple[str, bool], Condition] = {}
        self._implied: dict[tuple[str, str], bool] = {}
        self._narrowed: dict[tuple[int, ...], dict[str, frozenset[Scalar]] | None] = {}
        self._prefixes: dict[tuple[str, ...], tuple[State, dict[str, Scalar]]] | None = {}  # (`seed`)
        self._layers: dict[tuple[str, ...], State | None] = {}  # `_refuted_within`
        self.shapes = Shapes()  # the totality reasons' conflicts so far (`reason`)
        self.walks = Walks(self.cp)  # (`reason`'s layers of rules)
        # Each rule as (fields, holds) and its constraint by index; the rules reading a field.
        self._cons = [self.cp.rules[r] for r in self.cp.rule_ids]
        self._checks = [(con.fields, con.holds) for con in self._cons]
        self._root: list[State | None] | None = None  # `refuted_at_root`, made when first asked
        self._repaired: tuple[dict[str, Scalar], list[str]] | None = None  # (found, fields it may differ in)
        self._firsts = {n: d[0] for n, d in self.cp.domains.items()}  # any value, for `alone`
        self._places: dict[tuple[int, str], Place] = {}  # (`repair`'s walks: `min_conflicts`)
        self._changes = OneChange(self.cp)  # (`one_change`'s tables, kept for the whole lint)
        self._rule_items: dict[str, Item] = {}  # `reason`'s, one per rule (one per reason: 0.1 s of SGLang's)
        self._reading: dict[str, list[int]] = {}
        for index, (names, _) in enumerate(self._checks):
            for name in names:
                self._reading.setdefault(name, []).append(index)

    # -- solver access ---------------------------------------------------------------------
    def add(self, code: str, ids: Sequence[str], message: str, **extra: Any) -> None:
        self.findings.append(Finding(code, list(ids), message, **extra))

    def solve(
        self,
        pins: Mapping[str, Scalar],
        *,
        extra: Sequence[Condition] = (),
        rules: Iterable[str] | None = None,
        what: str,
        ids: Sequence[str],
        left_out: str | None = None,
    ) -> dict[str, Scalar] | bool | None:
        """A solution, None when there is none, False when the budget ran out (reported).

        A known solution, repaired by a short local search, answers most of these questions; only
        when that fails does the exact search decide (and prove the "no" answers the findings
        rest on). `left_out`: the rule the question leaves out and `extra[0]` wants broken or its
        `when` true (is it implied, can its `when` hold): first tried by `one_change`.
        """
        from solver.engine.count import CountLimitReached

        _progress.advance()
        # (The pack's own tuple when every rule is asked: not a copy per question, one per value.)
        rule_ids = self.cp.rule_ids if rules is None else list(rules)
        found = None if left_out is None else self.one_change(left_out, extra[0], 0, ONE_CHANGE_FIRST)
        try:
            if found is None and rule_ids:
                found = self.query(pins, rule_ids, extra, cases=True, left_out=left_out)
            elif found is None:
                found = self.alone(pins, extra)
        except CountLimitReached:
            self.add("CS190", ids, f"{what}: the search budget of {self.budget} steps ran out")
            return False
        if found is not None and rules is None:
            self.learn(found)
        return found

    def query(
        self,
        pins: Mapping[str, Scalar],
        rule_ids: Sequence[str],
        extra: Sequence[Condition],
        *,
        cases: bool = False,
        local: bool = True,
        near: Mapping[str, Scalar] | None = None,
        grown: tuple[State, list[str] | None] | None = None,
        left_out: str | None = None,
        started: State | None = None,
    ) -> dict[str, Scalar] | None:
        """A solution of `rule_ids` and `extra` with `pins`, or None (proved by an exact search).

        `cases`: before the exact search, try the cases that make each condition of `extra`
        true whatever its other fields hold, as pins (`solver.lint.rings.by_cases`). Worth it
        when a solution is likely (a rule's checks); QuickXplain's questions, mostly without one,
        skip it.
        `local`: first repair a known solution (`repair`). QuickXplain's questions skip that too:
        about half have no solution, where a repair always fails, and those with one are over
        a few rules, which the exact search answers at once (SGLang's totality check: 17.9 ->
        9.6 s wall, the same findings). `left_out`: as in `solve`, whose `one_change` tried the
        latest `ONE_CHANGE_FIRST` solutions; the older ones are tried after `around`.
        `started`: the question's propagated state, the engine's searches start from it."""
        whole = len(rule_ids) == len(self.index)
        # (Fact combinations propagated before a repair: SGLang's 96 of 188 with none each failed one.)
        if whole and self.refuted_at_root(pins, propagated=local and not extra and len(pins) > 1):
            return None
        # The counter's subset of the rules (None: every rule), made when first needed: a
        # QuickXplain question's (~1,800 rules at 1,000 fields) mostly ends before its turn.
        subset: list[frozenset[int] | None] = [None] if whole else []
        if local:
            if not whole:
                subset.append(self.indices(rule_ids, left_out))
            found = self.repair(pins, subset[0], extra)
            if found is not None:
                return found

        self.solves += 1
        indices = [self.oracle_index(c) for c in extra]
        # The engine's searches start with the conditions' fields narrowed to the values each
        # condition leaves possible: forward checking waits for a condition's last free field,
        # so `f00121 == 32 and f00133 != 1 and not f00114 in [...]` (synthetic 1,000, r000224
        # broken) narrowed nothing and the search with no hint took 116,000 steps (2.5 s); with
        # the narrowing 7,400 (0.6 s), from a known solution 987 (12 ms).
        narrowed = self.narrowed(indices)

        if whole and local and not extra:
            # Repair could not answer: the engine's start (the pins propagated from the root)
            # refutes most with no solution before `around` walks its rings, and the engine's
            # tries search from it, from the root with the fields it narrows (`moved`), where alone
            # a known solution can break a rule (synthetic 1,000's values: 17 -> 1 ms).
            root, moved = self._root[0] if self._root else None, list[str]()
            started = self.cp.start(pins) if root is None else root.extended(pins, [], moved)
            if started is None:
                return None
            grown = None if root is None else (started, moved)  # (`_engine`: the hint's `around`)

        engine = self._engine(pins, None if whole else rule_ids, extra, narrowed, grown, near, started)

        # `near`: the solution of a like question (QuickXplain's latest witness for the reason),
        # where the searches start; it keeps more of its rules and pins than the latest whole-pack
        # solution (SGLang's totality reasons: 2,218 -> 2,030 searches).
        hint = near if near is not None else self.pool[-1] if self.pool else None
        # A whole-pack question's solution is learned: values not seen yet first prove more. A
        # QuickXplain question's is not, and a known solution keeps every rule of its subset: its
        # values first leave the search to mend only what the question's pins and conditions
        # break (synthetic 400: lint's counter steps 18,128 -> 10,643).
        rank = self.rank if local or hint is None else known_first(hint)

        def counter(steps: int) -> dict[str, Scalar] | None:
            if not subset:
                subset.append(self.indices(rule_ids, left_out))
            only = subset[0]

            def ask(limit: Limit) -> dict[str, Scalar] | None:
                return self.oracle.solution(pins, only=only, extra=indices, limit=limit, rank=rank)

            return self.counted(self.oracle, ask, steps)

        if local:
            found, refuted = around(self, pins, rule_ids, extra, indices)
            if found is not None or refuted:
                return found
        if left_out is not None:
            # The rest of `one_change`'s scan, after the local steps: at synthetic 1,000 its
            # hits were 3,098 of 3,147 in the latest 64 solutions, and its 646 misses, each a
            # scan of 1,024, took 3.8 s, where `around` answers most first (the rules check
            # 17.5 -> 13.7 s CPU at load 17; right after `repair` 16.8 s).
            found = self.one_change(left_out, extra[0], ONE_CHANGE_FIRST, SEEN)
            if found is not None:
                return found
        if cases and extra:
            found = by_cases(self, pins, rule_ids, extra)
            if found is not None:
                return found
        if not local and extra and grown is None and self.cp.start(pins, rules=rule_ids, extra=extra) is None:
            return None  # (a QuickXplain question with a condition: propagation refutes many)
        asks = turns(engine, counter, hint, condition=bool(extra), quickxplain=not local, budget=self.budget)
        for steps, ask in asks:
            answer = within_cap(ask, min(steps, self.budget))
            if answer is not RAN_OUT:
                return answer
        return counter(self.budget)

    def refuted_at_root(self, pins: Mapping[str, Scalar], *, propagated: bool = False) -> bool:
        """Whether a pin's value is gone from its field in the whole pack's propagated state
        with no pin (forward checking of every rule, once per lint): then no configuration has
        it (exact), with no question asked (every dead value of synthetic 400 and 1,000: 371 at
        1,000); with `propagated`, also whether the pins propagated from that state leave none."""
        if self._root is None:
            self._root = [self.cp.start({})]
        root = self._root[0]
        if root is None:
            return False  # (the pack has no solution: the checks stop at the first question)
        domains = root.domains
        if any(name in domains and value not in domains[name] for name, value in pins.items()):
            return True
        return propagated and root.extended(pins, [], []) is None

    def _engine(
        self,
        pins: Mapping[str, Scalar],
        rule_ids: Sequence[str] | None,
        extra: Sequence[Condition],
        narrowed: Mapping[str, frozenset[Scalar]] | None,
        grown: tuple[State, list[str] | None] | None,
        near: Mapping[str, Scalar] | None,
        started: State | None,
    ) -> Callable[[int, Mapping[str, Scalar] | None], dict[str, Scalar] | None]:
        """The engine's search of a question (`query`'s turns): `engine(steps, hint)`."""
        from solver.engine.localsearch import Kept

        def engine(steps: int, hint: Mapping[str, Scalar] | None) -> dict[str, Scalar] | None:
            if hint is not None and near is None and not extra:
                hint = Kept(hint)  # (a known solution of the pack, and no condition: `Kept`)
            if started is not None:
                where = grown[1] if grown is not None and hint is not None else None
                return self.cp.search(started, budget=steps, task="linting", hint=hint, around=where)
            if grown is not None:
                # A QuickXplain question grown from an earlier one's state (`Backgrounds`): its
                # hint, `near`, breaks only around the fields the growth touched.
                state, around = grown
                where = around if hint is near else None
                return self.cp.search(
                    state, budget=steps, task="linting", hint=hint, around=where, chase_first=True
                )
            return self.cp.solve(
                pins, rules=rule_ids, budget=steps, task="linting", hint=hint, extra=extra, allowed=narrowed
            )

        return engine

    def counted(
        self, counter: Any, ask: Callable[[Limit], dict[str, Scalar] | None], steps: int
    ) -> dict[str, Scalar] | None:
        """`ask(limit)` of an exact counter within `steps`, charged to the lint's Budget."""
        from solver.engine.count import Limit, metered

        return metered(self.meter, counter, ask, Limit(steps=steps), "linting")

    def alone(self, pins: Mapping[str, Scalar], extra: Sequence[Condition]) -> dict[str, Scalar] | None:
        """A question about conditions alone (no rules): every combination of their values when
        there are few (a counter's search of them takes up to twice as many steps: within the
        budget, the same answer), else a small search of its own."""
        from solver.engine.count import ModelCounter

        decided, found = small_solution(extra, pins, self.cp.domains, min(SMALL_PRODUCT, self.budget // 2))
        if not decided:
            names = {n for c in extra for n in c.fields} | set(pins)
            counter = ModelCounter({n: self.cp.domains[n] for n in names}, extra, project=())
            found = self.counted(counter, lambda limit: counter.solution(pins, limit=limit), self.budget)
        return None if found is None else {**self._firsts, **found}

    def oracle_index(self, check: Condition) -> int:
        key = id(check)
        if key not in self._added:
            self._added[key] = (self.oracle.add(check), check)
        return self._added[key][0]

    def narrowed(self, indices: Sequence[int]) -> dict[str, frozenset[Scalar]] | None:
        """The values of the conditions' fields each condition leaves possible on its own (those
        its three-valued form refutes removed: exact), for the engine's searches; None when no
        value is removed."""
        key = tuple(indices)
        if key not in self._narrowed:
            out: dict[str, frozenset[Scalar]] = {}
            for index in indices:
                for name, dead in self.oracle.refutes[index].items():
                    if dead:
                        out[name] = out.get(name, frozenset(self.cp.domains[name])) - dead
            self._narrowed[key] = out or None
        return self._narrowed[key]

    def closest(self, pins: Mapping[str, Scalar], k: int) -> list[dict[str, Scalar]]:
        """The `k` latest known solutions (of the last 32) that keep most of `pins`: where a local
        step (a repair, a ring's witness) starts.

        The order of a stable sort by the pins kept, most first: with one pin (every value's
        question) those that keep it, then the others, each in the pool's order (a key per
        solution was a tenth of synthetic 1,000's values check)."""
        window = self.pool[-32:]
        if len(pins) == 1:
            ((name, value),) = pins.items()
            keep = [w for w in window if w[name] == value]
            if len(keep) < k:
                keep += [w for w in window if w[name] != value]
            return keep[:k]
        if not pins:
            return window[:k]
        read, wanted = operator.itemgetter(*pins), tuple(pins.values())
        return sorted(window, key=lambda w: -sum(map(operator.eq, read(w), wanted)))[:k]

    def indices(self, rule_ids: Sequence[str], left_out: str | None = None) -> frozenset[int]:
        """The indices of `rule_ids` (for the counter's `only` and `repair`). Every rule but
        `left_out` (a rule's checks: is it implied, can its `when` hold) is the set of all
        indices less one, made in C: a comprehension over the pack's rules per question was a
        pass growing as n^2 (synthetic 1,000: ~5,500 such questions, two passes each)."""
        at = None if left_out is None else self.index.get(left_out)
        if at is not None and len(rule_ids) == len(self.index) - 1 and left_out not in rule_ids:
            return self._every - {at}
        return frozenset(map(self.index.__getitem__, rule_ids))

    def repair(
        self, pins: Mapping[str, Scalar], wanted: frozenset[int] | None, extra: Sequence[Condition]
    ) -> dict[str, Scalar] | None:
        """A solution made from a known one, or None: pins applied, each ad-hoc condition met by
        changing as few of its fields as possible, then a few min-conflicts steps.

        Sound by construction: an answer is returned only when every check holds on it. A known
        solution satisfies every rule, so only the rules reading a field it no longer holds need
        a look, not the whole pack (which made each question cost the pack's size).
        """
        if not self.pool:
            return None
        from solver.engine.minconflicts import min_conflicts

        for start in self.closest(pins, 2):
            current = {**start, **pins}
            moved = dict.fromkeys(pins)
            for check in extra:
                if not check.holds(tuple(current[n] for n in check.fields)):
                    near = nearest_change(check, current, pins, self.cp.domains)
                    if near is None:
                        return None  # the condition cannot hold with these pins at all
                    current.update(near)
                    moved.update(dict.fromkeys(near))
            # (Only the pinned and changed fields can differ: a pass over every field, 0.5 s at 1,000.)
            changed = [n for n in moved if start[n] != current[n]]
            walked: list[str] = []  # (`learn`)
            found = min_conflicts(
                self.cp.domains,
                self._checks,
                self._cons,
                self._reading,
                wanted,
                [(c.fields, c.holds) for c in extra],
                pins,
                current,
                changed,
                self.rng,
                REPAIR_STEPS,
                walked,
                self._places,
            )
            if found is not None:
                self.repaired += 1
                self._repaired = (found, [*changed, *walked])  # (for `learn`)
                return found
        return None

    def one_change(
        self, rule_id: str, wanted: Condition, first: int = 0, stop: int = SEEN
    ) -> dict[str, Scalar] | None:
        """One of the known solutions `first` to `stop` (the latest first) with one field of
        `rule_id` changed to a value that breaks the rule, keeps every other hard rule and makes
        `wanted` hold; None proves nothing (`solver.lint.moves.OneChange`: SGLang answers 217 of
        its 301 "is r implied" so)."""
        return self._changes.find(itertools.islice(reversed(self.pool), first, stop), rule_id, wanted)

    def learn(self, solution: dict[str, Scalar]) -> None:
        self.pool.append(solution)
        proven = self.proven
        repaired = self._repaired
        if repaired is not None and repaired[0] is solution:
            # Of a repair (from proven values) only the fields pinned, changed or walked are new.
            for name in repaired[1]:
                proven[name].add(solution[name])
            return
        for name, value in solution.items():
            proven[name].add(value)

    def extra(self, cond: Condition, *, negate: bool = False) -> Condition:
        """A condition or its negation, one object per text (so the exact search, which keeps
        each object it is given, sees each condition once)."""
        key = (cond.text, negate)
        found = self._extras.get(key)
        if found is None:
            found = cond.negated() if negate else cond
            self._extras[key] = found
        return found

    def rank(self, name: str, values: tuple[Scalar, ...]) -> list[Scalar]:
        """Values not yet seen in a solution first (keyed in C), so each new solution proves more."""
        return sorted(values, key=self.proven[name].__contains__)

    def others(self, rule_id: str) -> list[str]:
        """Every hard rule but `rule_id`, in pack order (two slices: a comparison per rule for
        each of the pack's rules was a pass growing as n^2, 0.35 s at 1,000 synthetic fields)."""
        ids, at = self.cp.rule_ids, self.index.get(rule_id)
        return list(ids) if at is None else [*ids[:at], *ids[at + 1 :]]
