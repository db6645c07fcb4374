"""A pack compiled once for queries (`CompiledPack`, cached by digest): the engine's entry point.

Variables are fields, domains are their values, and each hard rule is one constraint over exactly
the fields it reads. The compiled form is shared and never mutated: every query gets fresh domains.

A query is answered in layers, cheapest first (`CompiledPack.start` then `search`):
- pins are folded in and forward checking runs to a fixpoint (`solver.engine.state`); rules whose
  fields are all fixed are checked directly, so most conflicts end here;
- a known solution (`hint`: the last witness, with the one value that changed) is kept where it
  still holds and repaired around the rules it breaks, or the change followed along those rules
  (`solver.engine.localsearch`);
- each independent group of open rules gets a short depth-first descent with forward checking,
  then, if that does not settle it, the backtracking search that maintains arc consistency
  (`solver.engine.backtrack`, over python-constraint), which is what refutations need.
Condition answers, supports and three-valued verdicts are remembered per compiled pack.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from functools import partial
from types import MappingProxyType
from typing import Any

from solver.bounded import PACKS_KEPT, Lru, Memo, digest_family, family_pool, weigh_family
from solver.budget import Budget
from solver.engine.backtrack import (
    NO_VERDICTS,
    LazyConstraint,
    SearchTrace,
    Verdicts,
    domain,
    new_search,
)
from solver.engine.constraint import Constraint, ResidueCheck, RuleConstraint, memoized
from solver.engine.localsearch import (
    dive,
    fits_hint,
    hint_first,
    independent_groups,
    settle,
    starting_values,
)
from solver.engine.mend import mend, mend_in_place
from solver.engine.satisfied import Satisfied
from solver.engine.state import State
from solver.errors import SolverBudgetExceeded
from solver.model import Pack, Scalar
from solver.pack.expr import Condition
from solver.pack.loader import semantics

__all__ = [
    "DESCENT_FIRST",
    "CompiledPack",
    "Constraint",
    "RuleConstraint",
    "SearchTrace",
    "State",
    "compile_pack",
]

Assignment = dict[str, Scalar]


# An empty hint: a search given it tries a descent with forward checking on each group before
# the search that keeps arc consistency (without a hint it goes straight there, the better order
# for a refutation). For a mostly satisfiable question (a group of a conflict's request without
# the conflict; whether a repair's value fits the rest of a request) the descent is the cheaper
# proof: at 5,000 synthetic fields, one group of ~5,000 fields, the minimal conflict 2.8 -> 0.6 s
# CPU (~5,000 arc-consistent steps -> one per field). The answer is the same (both searches are
# complete); the witness found may differ.
DESCENT_FIRST: Mapping[str, Scalar] = MappingProxyType({})

_UNSET = object()
_REFUTED = object()  # (kept for facts that propagation refutes)
_FACT_STATES_KEPT = 32  # sets of facts whose state is kept per compiled pack: ~10 KB each (SGLang)


class CompiledPack:
    """A pack compiled for queries. Thread-safe: queries never mutate it."""

    def __init__(self, pack: Pack) -> None:
        sem = semantics(pack)
        self.pack = pack
        if pack.digest:  # (a large pack's family keeps fewer copies: `bounded.family_kept`)
            weigh_family(pack.digest, len(pack.fields))
        # Every answer table kept for the life of the pack shares this one bound (`solver.bounded`)
        # with its family's (the copies requests make of one pack): a process resolving distinct
        # requests for ever must not grow.
        self.tables = Memo(pool=family_pool(pack.digest))
        self.domains: dict[str, tuple[Scalar, ...]] = {n: f.domain for n, f in pack.fields.items()}
        # The hard rules, each its `Condition` with the engine's tables (`Constraint`), by id.
        self.rules: dict[str, Constraint] = {}
        self.warn_rules: dict[str, Condition] = {}
        for rule in pack.rules:
            cond = sem.rules[rule.id]
            if rule.severity == "warn":
                self.warn_rules[rule.id] = cond
                continue
            # A rule compiled alike (the same condition object over the same domains) is the family's.
            key = (rule.id, id(cond), tuple(self.domains[f] for f in cond.fields))
            self.rules[rule.id] = self.tables.pool.share(key, partial(self.constraint_of, rule.id, cond))
        self.rule_ids: tuple[str, ...] = tuple(self.rules)
        self.rule_index = {rid: i for i, rid in enumerate(self.rule_ids)}
        self._full: dict[str, list[Scalar]] = {n: list(v) for n, v in self.domains.items()}
        # By id, for explanations of every field (`Pack.rule` scans the whole tuple).
        self.models = {rule.id: rule for rule in pack.rules}
        self._cons, self._all_by_field = self.rules, self._index(list(self.rules.values()))
        self._satisfied = Satisfied(self._all_by_field)  # (rules propagation closes early)
        # Supports found by arc consistency for the pack's rules (by rule id), shared by every
        # query on this pack: a hint only (each is re-checked against the current domains), so
        # sharing across threads is safe. Per-query conditions keep theirs per query (`_checks`).
        self._residues: dict[Any, tuple[Scalar, ...]] = self.tables.table()
        self._by_constraint = {id(r.constraint): r for r in self.rules.values()}
        self._verdict_sets: dict[tuple[int, str, tuple[tuple[str, Scalar], ...]], Verdicts] = (
            self.tables.table()
        )
        self._verdict_shapes: dict[Verdicts, Verdicts] = self.tables.table()
        self._root_state: State | object | None = _UNSET
        # The root with a request's facts propagated, by those facts (`_facts_state`).
        self._facts = frozenset(n for n, f in pack.fields.items() if f.kind == "fact")
        self._fact_states: Lru[tuple[tuple[str, str, Scalar], ...], State | object] = Lru(_FACT_STATES_KEPT)
        # What other modules compute once per compiled pack (e.g. solver.engine.tracing's root state).
        self.memo: dict[str, Any] = {}
        # The budget searches are charged to: None here (each search gets a fresh `Budget()`, the
        # per-search bound); a command's or a call's own on the copies `within` makes.
        self.budget: Budget | None = None

    @property
    def constraints(self) -> Mapping[str, Constraint]:
        """The hard rules as constraints, by rule id (read-only: shared by every query)."""
        return self._cons

    @property
    def constraints_by_field(self) -> Mapping[str, Sequence[Constraint]]:
        """The constraints reading each field."""
        return self._all_by_field

    def _verdicts(self, constraint: Any, target: str, known: tuple[tuple[str, Scalar], ...]) -> Verdicts:
        """The values of `target` that satisfy the rule whatever its other unknown fields hold,
        and those that violate it whatever they hold.

        Most values are of the first kind for most rules, so arc consistency needs no support
        search for them; the second kind it removes without one. Decided by three-valued
        evaluation, once per rule, field and known values, kept (bounded) for the pack's life.
        """
        key = (id(constraint), target, known)
        found = self._verdict_sets.get(key)
        if found is None:
            rule = self._by_constraint.get(key[0])
            if rule is None:
                return NO_VERDICTS
            given, partial = dict(known), rule.condition.partial
            answers = {v: partial({**given, target: v}) for v in self.domains[target]}
            made: Verdicts = tuple(frozenset(v for v, a in answers.items() if a is k) for k in (True, False))  # type: ignore[assignment]
            # One object per distinct answer (a pair of sets per question was ~140,000 objects
            # per choices at 5,000 fields), stored through the budget (tests/test_memory).
            found = self._verdict_shapes.get(made) or made
            if found is made:
                self.tables.store(self._verdict_shapes, made, made)
            self.tables.store(self._verdict_sets, key, found)
        return found

    def verdicts_kept(self) -> Mapping[tuple[int, str, tuple[tuple[str, Scalar], ...]], Verdicts]:
        """The verdicts made so far (read-only), by the id of a rule's python-constraint object,
        the field and the known values (`_verdicts`' key): for a caller that asks hundreds in a
        row and reads them without a call each (the checked guess, `guess.likely_values`)."""
        return self._verdict_sets

    def verdicts(
        self, rule_id: str, target: str, known: tuple[tuple[str, Scalar], ...]
    ) -> tuple[frozenset[Scalar], frozenset[Scalar]]:
        """The values of `target` that keep the rule whatever its fields outside `known` hold,
        and those that break it whatever they hold (see `_verdicts`)."""
        return self._verdicts(self._cons[rule_id].constraint, target, known)

    def never(self, con: Constraint, target: str, known: tuple[tuple[str, Scalar], ...]) -> frozenset[Scalar]:
        """The values of `target` that break `con` whatever its fields outside `known` hold
        (`verdicts` by constraint: `State.dead_end`'s `never`); none for a query's own condition."""
        return self._verdicts(con.constraint, target, known)[1]

    def _checks(
        self, cons: Iterable[Constraint], local: dict[Any, tuple[Scalar, ...]]
    ) -> dict[int, ResidueCheck]:
        """Each constraint's check for arc consistency, by the id of its python-constraint object.

        The supports found for the pack's own rules are kept for the life of the pack under the
        rule id; those of a query's own conditions (`extra`, built per query) only in `local`,
        for that query: keyed by anything shared, a later query's condition could be served a
        support found for another one."""
        shared = self._cons
        return {
            id(con.constraint): (con.holds, con.key, self._residues if shared.get(con.key) is con else local)
            for con in cons
        }

    def _index(self, cons: Sequence[Constraint]) -> dict[str, list[Constraint]]:
        out: dict[str, list[Constraint]] = {}
        for con in cons:
            for name in con.fields:
                out.setdefault(name, []).append(con)
        return out

    def allowed(self, rule_id: str, name: str, values: Mapping[str, Scalar]) -> frozenset[Scalar]:
        """The values of `name` that satisfy the rule when its other fields hold `values`
        (remembered per rule, the same table forward checking uses)."""
        con = self._cons[rule_id]
        at = con.fields.index(name)
        return con.allowed(at, tuple([values[f] for f in con.fields if f != name]))

    def constraint_of(self, key: str, cond: Condition) -> Constraint:
        """A condition of the pack (a hard rule; a warn rule some question adds) as a constraint,
        its answers remembered under the pack's entry budget."""
        tables = self.tables
        holds = memoized(cond.holds, tables)
        full = tuple(self.domains[f] for f in cond.fields)
        return Constraint(key, cond, holds, _constraint(holds), full, tables.table(), tables, tables.table())

    def rules_reading(self, name: str) -> list[str]:
        return [con.key for con in self._all_by_field.get(name, ())]

    # -- queries ---------------------------------------------------------------------------
    def start(
        self,
        pins: Mapping[str, Scalar],
        *,
        rules: Collection[str] | None = None,
        allowed: Mapping[str, Collection[Scalar]] | None = None,
        extra: Sequence[Condition] = (),
    ) -> State | None:
        """The propagated state of a query, or None when propagation alone refutes it."""
        wanted: set[str] | None = None
        if rules is not None:
            wanted = {r for r in rules if r in self._cons}
            if len(wanted) == len(self._cons):
                wanted = None  # every rule: the same query as without `rules`
        if wanted is None:
            state = self._start_from_root(pins, allowed)
            if not extra or state is None:
                return state  # (more constraints can only refute sooner)
            return self._with_extra(state, extra)
        # A copy of the shared full domains, then the pinned and restricted fields: the lists are
        # never changed in place (narrowing replaces them), and explanations start thousands of
        # small queries, where a pass building every field's list would cost the most.
        domains = dict(self._full)
        for name, value in pins.items():
            if name in domains:
                domains[name] = [value] if value in self.domains[name] else []
        if allowed is not None:
            for name, keep in allowed.items():
                if name in domains and name not in pins:
                    domains[name] = [v for v in self.domains[name] if v in keep]
        if any(not domains[name] for name in (*pins, *(allowed or ())) if name in domains):
            return None
        # In pack order, without a pass over every rule (explanations ask many times).
        cons = [self._cons[r] for r in sorted(wanted, key=self.rule_index.__getitem__)]
        cons += self._extra_cons(extra)
        by_field = self._index(cons)
        # A rule that reads no field is a constant: it holds everywhere or nowhere.
        if any(not c.fields and not c.holds(()) for c in cons):
            return None
        state = State(domains, {c.key: c for c in cons if c.fields}, by_field, self._satisfied)
        # Forward checking revises a rule once at most one of its fields is free: the fixed fields
        # and those of one-field rules reach every such rule, the same fixpoint as queueing every
        # field without a look at each rule whose fields are all free (QuickXplain's questions).
        queue = [n for n in by_field if len(domains[n]) == 1]
        queue += [c.fields[0] for c in cons if len(c.fields) == 1]
        return state if state.propagate(queue) else None

    def _extra_cons(self, extra: Sequence[Condition]) -> list[Constraint]:
        out = []
        for i, item in enumerate(extra):
            holds = memoized(item.holds)  # in a table of its own, which dies with the query
            domains = tuple(self.domains[f] for f in item.fields)
            out.append(Constraint(f"#extra{i}", item, holds, _constraint(holds), domains))
        return out

    def _with_extra(self, state: State, extra: Sequence[Condition]) -> State | None:
        """`state` (every rule, propagated) with ad-hoc conditions added and propagated: the
        same state as propagating all of them from scratch (the fixpoint does not depend on the
        order), with the conditions after the rules, as `start` orders them."""
        cons = self._extra_cons(extra)
        if any(not c.fields and not c.holds(()) for c in cons):
            return None
        by_field = dict(state.by_field)
        for con in cons:
            if con.fields:
                state.open[con.key] = con
            for name in con.fields:
                by_field[name] = [*by_field.get(name, ()), con]
        state.by_field = by_field
        return state if state.propagate([f for c in cons for f in c.fields]) else None

    def _root(self) -> State | None:
        """Every rule with no pin, propagated once for the life of the pack (None: the pack has
        no solution at all). Forward checking to a fixpoint gives the same domains and open
        rules whatever order the narrowings come in, so a query can start from this state and
        propagate only what its pins change, instead of every rule of the pack again."""
        if self._root_state is _UNSET:
            cons = {c.key: c for c in self._cons.values() if c.fields}
            if not all(c.fields or c.holds(()) for c in self._cons.values()):
                self._root_state = None  # a rule that reads no field and fails
            else:
                state = State(dict(self._full), cons, self._all_by_field, self._satisfied)
                self._root_state = state if state.propagate(list(self._all_by_field)) else None
        return self._root_state  # type: ignore[return-value]

    def _facts_state(self, pins: Mapping[str, Scalar]) -> State | None:
        """The root with the facts among `pins` propagated (None: refuted), kept for the latest sets
        of facts: requests come about a few machines and models, and each fact forces a chain of
        derived ones. One fixpoint whatever the pins' order, so `pinned` of the rest from here is
        the state all pins give from the root; callers get copies (`State.pinned`)."""
        root = self._root()
        facts = sorted((n, type(v).__name__, v) for n, v in pins.items() if n in self._facts)
        if root is None or not facts:
            return root
        key = tuple(facts)
        found = self._fact_states.get(key)
        if found is None:
            found = root.pinned({n: v for n, _, v in facts}) or _REFUTED
            if isinstance(found, State):
                found.by_field = found.open_index()
            self._fact_states.put(key, found)
        return found if isinstance(found, State) else None

    def _start_from_root(
        self, pins: Mapping[str, Scalar], allowed: Mapping[str, Collection[Scalar]] | None
    ) -> State | None:
        base = self._facts_state(pins)
        return None if base is None else base.pinned(pins, allowed)

    def within(self, budget: Budget) -> CompiledPack:
        """This compiled pack charging its searches to `budget` (one command's, or one call's):
        a shallow copy sharing everything else, so it costs nothing to make per request."""
        bound = self.sharing()
        bound.budget = budget
        return bound

    def sharing(self) -> CompiledPack:
        """A shallow copy that shares every table (what `copy.copy` makes of this class, without
        importing `copy` and `copyreg` on a `check`'s path: ~0.3 ms of its start)."""
        copied = object.__new__(type(self))
        copied.__dict__.update(self.__dict__)
        return copied

    def search(
        self,
        state: State,
        *,
        budget: int | None = None,
        task: str = "checking a request",
        trace: SearchTrace | None = None,
        hint: Mapping[str, Scalar] | None = None,
        around: Sequence[str] | None = None,
        then: Callable[[], Mapping[str, Scalar]] | None = None,
        chase_first: bool = False,
        retry: Callable[[], Mapping[str, Scalar] | None] | None = None,
    ) -> Assignment | None:
        """A solution extending `state`, or None. The open constraints are split into independent
        groups (they share no free field) and each is searched on its own, smallest domain first,
        so a dead end in one group never makes the search re-try the choices of another.

        `hint` is an earlier solution (a witness): a group it still satisfies is taken from it
        without a search, and the searched groups try its values first. When one field of a
        solved request changes, only the group around that field is searched again.
        `around`: the fields whose domains changed since `hint` was a complete solution (see
        `State.assign`); the hint is then only checked there. `then`: the hint for the groups'
        search when none is found near `hint` (asked only then). `chase_first`: `settle`'s order.
        `retry`: a second hint, asked only when none is found near `hint` (a better guess that
        costs more to make; None: none better): tried near first (`repair`), and the groups'
        search starts from it.
        `budget`: steps for this search (at most its `Budget`'s, see `within`); the steps used are
        charged to that `Budget`, and running out raises `SolverBudgetExceeded` (or the command's
        `CommandBudgetExceeded` when the command's total is what ran out).
        """
        meter = self.budget if self.budget is not None else Budget()
        allowed = meter.allowance(budget)
        counter = trace if trace is not None else SearchTrace()
        found = self._search(state, meter, allowed, task, counter, hint, around, then, chase_first, retry)
        meter.spend(counter.steps)
        return found

    def _search(
        self,
        state: State,
        meter: Budget,
        allowed: int,
        task: str,
        trace: SearchTrace,
        hint: Mapping[str, Scalar] | None,
        around: Sequence[str] | None,
        then: Callable[[], Mapping[str, Scalar]] | None = None,
        chase_first: bool = False,
        retry: Callable[[], Mapping[str, Scalar] | None] | None = None,
    ) -> Assignment | None:
        domains = state.domains
        steps = 0
        if hint is not None:
            # The hint (usually the last witness with one value changed) is often a solution
            # already, or one after a few fields around the change are decided again; else the
            # change is followed along the rules it breaks (`settle`).
            # With a second hint to try (a resolution's first search), the first is repaired in
            # all of `repair`'s regions, in the order the broken rules read their fields: a guess
            # that breaks a rule about a fact the architecture decides (HYV4's is_dsa and is_mla)
            # is mended in the second or third (~0.1 ms more), where the checked second guess and
            # its repair cost ~0.6 ms (o6-dsa-learnable-sinks, r18-hyv4).
            found, steps, decided = settle(
                state, hint, around, allowed, chase_first, in_rule_order=retry is not None
            )
            second = retry() if not decided and retry is not None and steps <= allowed else None
            if second is not None:
                hint = second
                found, used, decided = settle(state, hint, None, allowed - steps, False)
                steps += used
            if steps > allowed:
                raise meter.exhausted(task, allowed)
            if decided:
                trace.steps = steps
                return found
            hint = hint if then is None else then()
        # Smallest groups first: a value that cannot work is mostly refuted in a small group
        # around it, before a descent through a group of thousands of fields (each group is
        # solved on its own, so the order changes no solution, only what a refutation costs).
        groups = sorted(independent_groups(state), key=len)
        solution = starting_values(domains, hint)
        remaining = allowed - steps
        query_residues: dict[Any, tuple[Scalar, ...]] = {}
        for cons in groups:
            if hint is not None and fits_hint(hint, domains, cons):
                continue  # `solution` already holds the hint's values for this group
            names = sorted({f for c in cons for f in c.fields}, key=lambda n: (len(domains[n]), n))
            # A cheap descent (`dive`) solves most groups of a possible request; arc consistency
            # alone refutes most impossible ones; the backtracking search that keeps arc
            # consistency at every step decides what is left.
            if hint is None:
                # No guess to start from (refutations for explanations, mostly): straight to
                # the search that keeps arc consistency.
                dived, used, refuted = None, 0, False
            else:
                dived, used, refuted = dive(state, names, cons, hint, remaining, self.never)
            steps += used
            remaining -= used
            if remaining < 0:
                raise meter.exhausted(task, allowed)
            if dived is not None:
                solution.update(dived)
                continue
            if refuted:
                trace.steps = steps
                return None
            local = {n: domain(hint_first(domains[n], hint, n)) for n in names}
            vcons: dict[str, list[tuple[Any, tuple[str, ...]]]] = {n: [] for n in names}
            for con in cons:
                for name in con.fields:
                    vcons[name].append((con.constraint, con.fields))
            counter = SearchTrace()
            holds = self._checks(cons, query_residues)
            try:
                found = new_search(remaining, task, counter, holds, self._verdicts).getSolution(
                    local, None, vcons
                )
            except SolverBudgetExceeded:
                # Name the whole budget, not what was left of it for this group.
                raise meter.exhausted(task, allowed) from None
            steps += counter.steps
            remaining -= counter.steps
            if found is None:
                trace.steps = steps
                return None
            solution.update(found)
        trace.steps = steps
        return solution

    # Mending needs no compiled table: the functions live in `solver.engine.mend`.
    mend = staticmethod(mend)
    mend_in_place = staticmethod(mend_in_place)

    def solve(
        self,
        pins: Mapping[str, Scalar],
        *,
        rules: Collection[str] | None = None,
        allowed: Mapping[str, Collection[Scalar]] | None = None,
        extra: Sequence[Condition] = (),
        trace: SearchTrace | None = None,
        budget: int | None = None,
        task: str = "checking a request",
        hint: Mapping[str, Scalar] | None = None,
    ) -> Assignment | None:
        """A solution under `pins` (and `allowed` value sets), or None.

        `rules` limits the hard rules taken into account (default: all); `extra` adds ad-hoc
        conditions. Pins are folded in first, then independent groups are searched separately
        (`hint`: see `search`).
        """
        state = self.start(pins, rules=rules, allowed=allowed, extra=extra)
        if state is None:
            return None
        return self.search(state, budget=budget, task=task, trace=trace, hint=hint)

    def satisfiable(
        self,
        pins: Mapping[str, Scalar],
        *,
        without_rules: Collection[str] = (),
        extra: Sequence[Condition] = (),
        allowed: Mapping[str, Collection[Scalar]] | None = None,
        task: str = "checking a request",
    ) -> Assignment | None:
        """A witness that `pins` can hold under the rules (minus `without_rules`), or None.

        A yes-or-no question (every caller reads only whether there is a witness), so its
        search starts with a descent (`DESCENT_FIRST`): a yes is then about one step per field,
        where the search that keeps arc consistency from no hint was 3-15 ms per yes on the
        SGLang pack (a conflict's repairs ask dozens: ~half of a conflict answer's time)."""
        rules = None if not without_rules else [r for r in self.rule_ids if r not in without_rules]
        return self.solve(pins, rules=rules, extra=extra, allowed=allowed, task=task, hint=DESCENT_FIRST)

    def solutions(
        self,
        pins: Mapping[str, Scalar],
        *,
        rules: Collection[str] | None = None,
        allowed: Mapping[str, Collection[Scalar]] | None = None,
        budget: int | None = None,
    ) -> Iterator[Assignment]:
        """Every solution under `pins` (for counting, tests and brute-force checks)."""
        domains = {
            name: domain(
                [pins[name]]
                if name in pins
                else [v for v in values if allowed is None or name not in allowed or v in allowed[name]]
            )
            for name, values in self.domains.items()
        }
        if any(not d for d in domains.values()):
            return iter(())
        vconstraints: dict[str, list[tuple[Any, tuple[str, ...]]]] = {n: [] for n in domains}
        for rid in self.rule_ids:
            if rules is None or rid in rules:
                rule = self.rules[rid]
                for name in rule.fields:
                    vconstraints[name].append((rule.constraint, rule.fields))
        holds = self._checks(self._cons.values(), {})
        # An iterator: its steps are bounded (by `budget`, else the pack's Budget), not charged.
        steps = (self.budget if self.budget is not None else Budget()).allowance(budget)
        solver = new_search(steps, "enumerating solutions", None, holds, self._verdicts)
        found: Iterator[Assignment] = solver.getSolutionIter(domains, None, vconstraints)
        return found


def _constraint(holds: Callable[[tuple[Scalar, ...]], bool]) -> Any:
    def check(*values: Scalar) -> bool:
        return holds(values)

    return LazyConstraint(check)


# Compiled packs by digest, the most recently used kept: a widened pack (a request's unlisted
# value of an open field) has a digest of its own, so a table that never forgets grows with
# every distinct request of that kind. Kept by family (a pack and the copies requests make of
# it): a pack's typed copies no longer push another pack out.
_COMPILED: Lru[str, CompiledPack] = Lru(PACKS_KEPT, family=digest_family, sized=True)


def compile_pack(pack: Pack) -> CompiledPack:
    """The compiled form of a pack, cached by the pack's content digest."""
    key = pack.digest or str(id(pack))
    compiled = _COMPILED.get(key)
    if compiled is None or (compiled.pack is not pack and not pack.digest):
        compiled = CompiledPack(pack)
        _COMPILED.put(key, compiled)
    return compiled
