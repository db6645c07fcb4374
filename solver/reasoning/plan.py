"""What resolution needs that depends only on the pack (`Plan`), computed once per pack digest.

The compiled pack, the decision order (the field graph's, from the on-disk cache when it has it),
the preferences by field and their rankings under the values decided so far, the warn rules by
field, and the launcher's default chain of each option (`Plan.chain`). `plan_for` keeps the
latest few plans (widened packs come and go).
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterator, Mapping, Sequence
from typing import Any

from solver import frozen
from solver.bounded import digest_family
from solver.budget import Budget
from solver.engine.constraint import projected
from solver.engine.csp import CompiledPack, RuleConstraint, compile_pack
from solver.engine.state import State, memoized, picker
from solver.frozen import Frozen, field, frozen_type
from solver.model import (
    Pack,
    Preference,
    Rule,
    Scalar,
    given_key,
)
from solver.pack.loader import semantics

__all__ = ["Plan", "facts_narrowed", "plan_for"]


_Ranking = tuple[list[Scalar], dict[Scalar, Preference], list[Scalar], dict[Scalar, str]]
"""A field's ranking, which preference ranked each value, the preferences' order (`preferred`),
and the values of it a warn rule flags (`flagged`)."""

_Reading = tuple[str, RuleConstraint, int, tuple[str, ...]]
"""A rule reading a field: its id, its constraint, the field's position in its fields, the others."""


@frozen_type
class Plan(Frozen):
    """Everything resolution needs that depends only on the pack, computed once."""

    compiled: CompiledPack
    order: tuple[str, ...]
    preferences: dict[str, tuple[Preference, ...]]
    # Warn rules by the fields they read: an auto value that breaks one ranks last (see `flagged`).
    warn_rules: dict[str, tuple[str, ...]]
    # Each warn rule's check over its fields' values, answers remembered under the compiled
    # pack's entry budget (every resolution checks every warn rule on its answer).
    warn_checks: dict[
        str,
        tuple[Callable[[Mapping[str, Scalar]], tuple[Scalar, ...]], Callable[[tuple[Scalar, ...]], bool]],
    ] = field(compare=False, repr=False)
    # The fields adjustment rules target (`Rule.adjusts`): what a request's adjustments may replace,
    # read on every adjusting pass (`decide._assumed_before_adjusting`).
    adjust_targets: frozenset[str] = field(compare=False, repr=False)
    # Rankings already computed, by field and the values of the fields its ranking reads: the
    # ranking, which preference ranked each value, the preferences' own order and the values a
    # warn rule flags (what provenance asks again for the same decided values).
    _rankings: dict[tuple[Any, ...], _Ranking] = field(default_factory=dict, compare=False, repr=False)
    _reads: dict[str, tuple[str, ...]] = field(default_factory=dict, compare=False, repr=False)
    # Default chains already computed, by field and the values its preferences read.
    _chains: dict[tuple[str, tuple[Any, ...]], tuple[tuple[Scalar, ...], Preference | None]] = field(
        default_factory=dict, compare=False, repr=False
    )
    _chain_reads: dict[str, tuple[str, ...]] = field(default_factory=dict, compare=False, repr=False)
    _reading: dict[str, tuple[_Reading, ...]] = field(default_factory=dict, compare=False, repr=False)
    _position: dict[str, int] = field(default_factory=dict, compare=False, repr=False)
    _adjusters: dict[str, tuple[Rule, ...]] = field(default_factory=dict, compare=False, repr=False)
    _when_reads: dict[str, tuple[str, ...]] = field(default_factory=dict, compare=False, repr=False)

    @property
    def pack(self) -> Pack:
        return self.compiled.pack

    def within(self, budget: Budget | None) -> Plan:
        """This plan with its searches charged to `budget` (None: this plan); the caches shared."""
        if budget is None:
            return self
        return frozen.replace(self, compiled=self.compiled.within(budget))

    def ranking(
        self, name: str, assigned: Mapping[str, Scalar], forced: Mapping[str, Scalar] | None = None
    ) -> tuple[list[Scalar], dict[Scalar, Preference]]:
        """The field's values, best first, given the decided fields; and which preference ranked each.

        Values a warn rule flags come last, whatever the preferences say: a warn rule marks a
        combination SGLang accepts but that is expected to fail, which a user may choose and then
        gets the warning, but which auto never takes while another value works.

        `forced`: values propagation left one of, of fields not decided yet (`warn_forced`): a
        warn rule reads them (a value it flags is flagged whatever is decided later), the
        preferences do not (a preference applies on decided values only).

        Depends only on the decided values of the fields the field's preferences and warn rules
        read, so it is remembered by those (a resolution asks for each field several times).
        """
        found = self._ranked(name, assigned, forced)
        return list(found[0]), dict(found[1])

    def best_first(
        self, name: str, assigned: Mapping[str, Scalar], forced: Mapping[str, Scalar] | None = None
    ) -> Sequence[Scalar]:
        """`ranking`'s values alone, read-only (shared with later calls): for a caller that only
        walks them (the guess of `likely_values` asks for every free field of every request)."""
        return self._ranked(name, assigned, forced)[0]

    def preferred_flagged(
        self, name: str, assigned: Mapping[str, Scalar], forced: Mapping[str, Scalar] | None = None
    ) -> tuple[Sequence[Scalar], Mapping[Scalar, str]]:
        """`preferred` (its ranking) and `flagged` over all of it, as `ranking` computed them for
        the same decided values (read-only: shared with later calls)."""
        found = self._ranked(name, assigned, forced)
        return found[2], found[3]

    def warn_forced(self, name: str, state: State, assigned: Mapping[str, Scalar]) -> dict[str, Scalar]:
        """The fields `name`'s warn rules read that `assigned` lacks and `state` (propagated)
        leaves one value of, at that value: a rule that forces a field decided later makes a
        value of `name` break a warn rule as surely as a decided one (tests/test_laws_trust.py,
        `_WARNED_BY_A_FORCED_LATER_FIELD`)."""
        out: dict[str, Scalar] = {}
        rules = self.compiled.warn_rules
        for rid in self.warn_rules.get(name, ()):
            for f in rules[rid].fields:
                if f != name and f not in assigned and f not in out:
                    domain = state.domain(f)
                    if len(domain) == 1:
                        out[f] = domain[0]
        return out

    def _ranked(
        self, name: str, assigned: Mapping[str, Scalar], forced: Mapping[str, Scalar] | None
    ) -> _Ranking:
        reads = self.ranking_reads(name)
        key: tuple[Any, ...] = (name, tuple([assigned.get(f, _UNDECIDED) for f in reads]))
        if forced:
            key += tuple(sorted(forced.items()))
        found = self._rankings.get(key)
        if found is None:
            preferred, origin = self.preferred(name, assigned)
            flagged = self.flagged(name, {**forced, **assigned} if forced else assigned, preferred)
            ranked = preferred
            if flagged:
                ranked = [v for v in preferred if v not in flagged] + [v for v in preferred if v in flagged]
            found = (ranked, origin, preferred, flagged)
            if len(self._rankings) < _RANKINGS_KEPT:
                self._rankings[key] = found
        return found

    def reading(self, name: str) -> tuple[_Reading, ...]:
        """The hard rules that read `name`, each as (rule id, its constraint, the position of
        `name` in its fields, its other fields): what asking which values of `name` a rule allows
        given the others needs, without finding the position each time."""
        found = self._reading.get(name)
        if found is None:
            cons = self.compiled.constraints
            found = self._reading[name] = tuple(
                (rid, con, con.fields.index(name), tuple(f for f in con.fields if f != name))
                for rid, con in ((r, cons[r]) for r in self.compiled.rules_reading(name))
            )
        return found

    def position(self, name: str) -> int:
        """Where `name` is in the decision order."""
        if not self._position:
            self._position.update({n: i for i, n in enumerate(self.order)})
        return self._position[name]

    def ranking_reads(self, name: str) -> tuple[str, ...]:
        """The fields a field's ranking reads: its preferences' and its warn rules' fields."""
        reads = self._reads.get(name)
        if reads is None:
            reads = self._reads[name] = self._ranking_reads(name)
        return reads

    def _preference_reads(self, name: str) -> set[str]:
        """The fields the field's preferences read (their `when` and `same_as`)."""
        sem = semantics(self.pack)
        reads: set[str] = set()
        for pref in self.preferences.get(name, ()):
            cond = sem.preferences[pref.id]
            if cond is not None:
                reads.update(cond.fields)
                # `given(FIELD)` reads the request's mark, so rankings are kept apart by it too.
                reads.update(given_key(name) for name in cond.given)
            if pref.same_as is not None:
                reads.add(pref.same_as)
        return reads

    def _ranking_reads(self, name: str) -> tuple[str, ...]:
        reads = self._preference_reads(name)
        for rid in self.warn_rules.get(name, ()):
            reads.update(self.compiled.warn_rules[rid].fields)
        return tuple(sorted(reads))

    def flagged(self, name: str, assigned: Mapping[str, Scalar], values: list[Scalar]) -> dict[Scalar, str]:
        """Those of `values` that break a warn rule (see `warned`), each with the first such rule."""
        return {value: rules[0] for value, rules in self.warned(name, assigned, values).items()}

    def warned(
        self, name: str, assigned: Mapping[str, Scalar], values: list[Scalar]
    ) -> dict[Scalar, list[str]]:
        """Those of `values` that break a warn rule whatever its undecided fields will hold
        (three-valued evaluation with `assigned`), each with every such rule in declaration order.

        Not only once every other field of the rule is decided: the split attention backends are
        decided after `attention_backend` and follow it, so a rule over all three would never
        flag the choice that matters."""
        out: dict[Scalar, list[str]] = {}
        rules = self.compiled.warn_rules
        partials = [(rid, rules[rid].partial) for rid in self.warn_rules.get(name, ())]
        if not partials:
            return out
        # One copy of `assigned` with each value put in turn, not one per rule and value: a
        # request's assignment holds every field, and those copies were most of a ranking's
        # first call (a resolve's first call ranks a few dozen fields).
        probe = dict(assigned)
        for value in values:
            probe[name] = value
            for rid, partial in partials:
                if partial(probe) is False:
                    out.setdefault(value, []).append(rid)
        return out

    def settled(self, assigned: Mapping[str, Scalar]) -> dict[str, Scalar]:
        """`assigned` and every value the rules force from it (propagation leaves one value, or
        a rule over open facts does: `facts_narrowed`): what a warn rule may read of a request
        whose other fields are not decided yet (choices, matrix). A warn rule over a derived fact
        (`has_aiter`, forced by the platform; vLLM's `is_moe`, forced by a dense architecture)
        flags a value then, as `check` of the same request warns."""
        state = self.compiled.start(dict(assigned))
        if state is None:
            return dict(assigned)
        domains = facts_narrowed(self, state)
        forced = {n: d[0] for n, d in domains.items() if len(d) == 1}
        return {**forced, **assigned}

    def chain(self, name: str, assigned: Mapping[str, Scalar]) -> tuple[list[Scalar], Preference | None]:
        """The launcher's own default chain for an unset field: the values of its first
        applicable preference (pack authors keep that list equal to the launcher's real
        fallback chain), or, when no preference applies, the field's default (its first value).
        Warn rules are not applied: the launcher does not avoid what it only warns about."""
        reads = self._chain_reads.get(name)
        if reads is None:
            reads = self._chain_reads[name] = tuple(sorted(self._preference_reads(name)))
        key = (name, tuple([assigned.get(f, _UNDECIDED) for f in reads]))
        found = self._chains.get(key)
        if found is None:
            values, pref = self._first_preference(name, assigned)
            found = (tuple(values or [self.pack.fields[name].domain[0]]), pref)
            if len(self._chains) < _RANKINGS_KEPT:
                self._chains[key] = found
        return list(found[0]), found[1]

    def replacements(
        self, name: str, assigned: Mapping[str, Scalar], value: Scalar, given: Container[str] = ()
    ) -> list[Scalar] | None:
        """What the launcher's own overrides (adjustment rules, SGLang's FORCE) put in place of
        its pick `value` when that breaks one of them given `assigned`: their `adjust_to`
        values in declaration order, `[]` when one names none (then: the best value that
        works); None when no adjustment rule fires. A `typed_only` rule fires only when the
        fields its `when` reads are `given` (in the request)."""
        adjusters = self._adjusters.get(name)
        if adjusters is None:
            adjusters = self._adjusters[name] = tuple(r for r in self.pack.rules if r.adjusts == name)
        out: list[Scalar] | None = None
        for rule in adjusters:
            if rule.typed_only and not self.when_given(rule, given):
                continue
            if self.compiled.rules[rule.id].condition.partial({**assigned, name: value}) is False:
                out = out or []
                out += [v for v in rule.adjust_to if v not in out]
        return out

    def when_given(self, rule: Rule, given: Container[str]) -> bool:
        """Whether every field `rule`'s `when` reads is in `given` (a `typed_only` adjustment
        reads the request as given, never a decision)."""
        reads = self._when_reads.get(rule.id)
        if reads is None:
            cond = semantics(self.pack).whens.get(rule.id)
            reads = self._when_reads[rule.id] = tuple(cond.fields) if cond is not None else ()
        return all(f in given for f in reads)

    def _first_preference(
        self, name: str, assigned: Mapping[str, Scalar]
    ) -> tuple[list[Scalar], Preference | None]:
        domain = self.compiled.domains[name]
        for pref, values in self._applicable(name, assigned):
            values = [v for v in dict.fromkeys(values) if v in domain]
            if values:
                return values, pref
        return [], None

    def _applicable(
        self, name: str, assigned: Mapping[str, Scalar]
    ) -> Iterator[tuple[Preference, list[Scalar]]]:
        """The field's preferences whose `when` holds, in declaration order, with their values
        (a `same_as` field's value first)."""
        sem = semantics(self.pack)
        for pref in self.preferences.get(name, ()):
            cond = sem.preferences[pref.id]
            if cond is not None and cond.partial(assigned) is not True:
                continue
            values: list[Scalar] = []
            if pref.same_as is not None and pref.same_as in assigned:
                values.append(assigned[pref.same_as])
            yield pref, values + list(pref.prefer)

    def preferred(
        self, name: str, assigned: Mapping[str, Scalar]
    ) -> tuple[list[Scalar], dict[Scalar, Preference]]:
        """The ranking the preferences give, then the rest of the domain (warn rules not applied)."""
        ranked: list[Scalar] = []
        origin: dict[Scalar, Preference] = {}
        for pref, values in self._applicable(name, assigned):
            for value in values:
                if value not in origin and value in self.compiled.domains[name]:
                    origin[value] = pref
                    ranked.append(value)
        seen = set(ranked)
        ranked += [v for v in self.compiled.domains[name] if v not in seen]
        return ranked, origin


# A pack's plan is kept in its compiled pack's memo, not in a table of its own: the two were
# LRU tables of PACKS_KEPT each, and a compiled pack dropped from one while its plan stayed in
# the other was compiled again, so `compile_pack(pack)` and `plan_for(pack).compiled` were two
# objects with two memos. The solutions a choices question stored in the plan's were then not
# the ones `givenchoices` read (from `compile_pack`'s, empty), and every typed field was asked
# again of its copy (SGLang's one-fact choices: 31 -> 80 ms, round 18). Kept together, they are
# dropped together.
_PLAN = "plan"

_UNDECIDED = object()

_RANKINGS_KEPT = 1 << 15


def plan_for(pack: Pack) -> Plan:
    """The cached plan of a pack (compiled CSP, field order, preferences per field)."""
    compiled = compile_pack(pack)
    plan: Plan | None = compiled.memo.get(_PLAN) if pack.digest else None
    if plan is not None and plan.pack.directory != pack.directory:
        # Kept by content: the same bytes from another directory answer alike, but what the plan
        # says of its pack (a conflict's `--pack DIR`) names the directory asked about, not the
        # first one this process read. A shallow copy sharing the rest, as `within`'s.
        named = plan.compiled.sharing()
        named.pack = pack
        return frozen.replace(plan, compiled=named)
    if plan is None:
        prefs: dict[str, list[Preference]] = {}
        for pref in pack.preferences:
            prefs.setdefault(pref.field, []).append(pref)
        warn: dict[str, list[str]] = {}
        for rid, cond in compiled.warn_rules.items():
            for name in cond.fields:
                warn.setdefault(name, []).append(rid)
        plan = Plan(
            compiled=compiled,
            order=_field_order(pack),
            preferences={k: tuple(v) for k, v in prefs.items()},
            warn_rules={k: tuple(v) for k, v in warn.items()},
            warn_checks={
                rid: (picker(cond.fields), memoized(cond.holds, compiled.tables))
                for rid, cond in compiled.warn_rules.items()
            },
            adjust_targets=frozenset(r.adjusts for r in pack.rules if r.adjusts is not None),
        )
        if pack.digest:
            compiled.memo[_PLAN] = plan
    return plan


def _field_order(pack: Pack) -> tuple[str, ...]:
    """The graph order, from the on-disk cache when it has it: the graph needs networkx, whose
    import alone would cost a launcher's start-up more than the whole resolution."""
    from solver.pack import cache

    # A widened copy (open domains) has the graph of its base pack: domains add no edges.
    entry = cache.read(digest_family(pack.digest)) if pack.digest else None
    order = entry.get("order") if entry is not None else None
    if isinstance(order, list) and len(order) == len(pack.fields) and set(order) == set(pack.fields):
        return tuple(order)
    from solver.pack.graph import analyse

    found = analyse(pack).order
    if pack.digest:
        cache.write(digest_family(pack.digest), order=list(found))
    return found


def facts_narrowed(plan: Plan, state: State) -> dict[str, list[Scalar]]:
    """`state`'s domains, the facts' narrowed further by the rules over facts alone: a fact keeps
    the values some combination of the rule's other open facts supports, to a fixpoint.
    Forward checking leaves a rule with two open fields open, so the architecture's rule over
    seven traits (vLLM's arch-dense: `not is_moe and not is_hybrid and ...`) forced none of
    them, and a warn rule reading `is_moe` flagged no MoE backend for a dense model in choices
    while `check` warned. Options are left alone (the values asked about).

    Remembered by the facts' domains in `state` (all the answer depends on), under the compiled
    pack's entry budget: a page asks its choices again and again about the same facts (with no
    input, the projections were a third of the listing)."""
    fields, cp = plan.pack.fields, plan.compiled
    kept: tuple[tuple[str, ...], tuple[RuleConstraint, ...], dict[Any, Any]] | None = cp.memo.get(
        "facts-narrowed"
    )
    if kept is None:
        facts = tuple(n for n, spec in fields.items() if spec.kind == "fact")
        # (A rule over one field: forward checking narrowed it already.)
        over = tuple(
            con
            for con in cp.rules.values()
            if len(con.fields) > 1 and all(fields[f].kind == "fact" for f in con.fields)
        )
        kept = cp.memo["facts-narrowed"] = (facts, over, cp.tables.table())
    facts, over, table = kept
    domains = dict(state.domains)
    key = tuple([tuple(domains[f]) for f in facts])
    found: dict[str, list[Scalar]] | None = table.get(key)
    if found is None:
        found = _narrowed({f: domains[f] for f in facts}, over)
        cp.tables.store(table, key, found)
    domains.update(found)
    return domains


def _narrowed(domains: dict[str, list[Scalar]], rules: Sequence[RuleConstraint]) -> dict[str, list[Scalar]]:
    """`facts_narrowed`, computed over the facts' `domains`: the facts it narrows. A worklist:
    a rule is projected again only when a field it reads was narrowed (a pass over every rule
    per change was most of a one-fact listing)."""
    reading: dict[str, list[int]] = {}
    for i, con in enumerate(rules):
        for f in con.fields:
            reading.setdefault(f, []).append(i)
    out: dict[str, list[Scalar]] = {}
    queue = list(range(len(rules)))
    queued = set(queue)
    while queue:
        at = queue.pop()
        queued.discard(at)
        con = rules[at]
        free = [f for f in con.fields if len(domains[f]) > 1]
        supported = projected(con, free, domains) if free else None
        if supported is None:
            continue
        for name, seen in supported.items():
            kept = [v for v in domains[name] if v in seen]
            if kept and len(kept) < len(domains[name]):  # (none kept: no solution; left as is)
                domains[name] = out[name] = kept
                for other in reading[name]:
                    if other not in queued:
                        queue.append(other)
                        queued.add(other)
    return out
