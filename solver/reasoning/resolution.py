"""Resolution: validate -> order -> pin -> adjust -> prefer -> Resolution with provenance.

Tiers: hard rules and facts > user pins > preferences and defaults. A user pin is only ever
replaced by a declared adjustment, and that replacement is reported. Auto fields are decided in
graph order, each taking the best-ranked value that keeps the request solvable; one ordered search
finds exactly that configuration (the lexicographically best one), so no value is tried twice.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from solver.bounded import PACKS_KEPT, Lru
from solver.budget import Budget
from solver.engine.csp import CompiledPack, Extra, SearchTrace, State, compile_pack
from solver.engine.opendomain import base_digest, widened
from solver.errors import InputIssue, InvalidInput, Unsatisfiable
from solver.inputs.pins import collect_pins
from solver.model import (
    AdjustmentRecord,
    AssumedRecord,
    DepartureRecord,
    Field,
    Pack,
    Pin,
    Preference,
    Provenance,
    Rejection,
    Resolution,
    Rule,
    Scalar,
    WarningRecord,
)
from solver.pack.loader import semantics
from solver.values import show as _show

__all__ = ["ChainFailed", "Plan", "deny", "launcher_view", "plan_for", "resolve", "resolve_pins"]


@dataclass(frozen=True)
class Plan:
    """Everything resolution needs that depends only on the pack, computed once."""

    compiled: CompiledPack
    order: tuple[str, ...]
    preferences: dict[str, tuple[Preference, ...]]
    # Warn rules by the fields they read: an auto value that breaks one ranks last (see `flagged`).
    warn_rules: dict[str, tuple[str, ...]]
    # Rankings already computed, by field and the values of the fields its ranking reads.
    _rankings: dict[tuple[str, tuple[Any, ...]], tuple[list[Scalar], dict[Scalar, Preference]]] = field(
        default_factory=dict, compare=False, repr=False
    )
    _reads: dict[str, tuple[str, ...]] = field(default_factory=dict, compare=False, repr=False)
    _adjusters: dict[str, tuple[Rule, ...]] = field(default_factory=dict, compare=False, repr=False)

    @property
    def pack(self) -> Pack:
        return self.compiled.pack

    def within(self, budget: Budget | None) -> Plan:
        """This plan with its searches charged to `budget` (None: this plan); the caches shared."""
        if budget is None:
            return self
        return dataclasses.replace(self, compiled=self.compiled.within(budget))

    def ranking(
        self, name: str, assigned: Mapping[str, Scalar]
    ) -> tuple[list[Scalar], dict[Scalar, Preference]]:
        """The field's values, best first, given the decided fields; and which preference ranked each.

        Values a warn rule flags come last, whatever the preferences say: a warn rule marks a
        combination SGLang accepts but that is expected to fail, which a user may choose and then
        gets the warning, but which auto never takes while another value works.

        Depends only on the decided values of the fields the field's preferences and warn rules
        read, so it is remembered by those (a resolution asks for each field several times).
        """
        reads = self._reads.get(name)
        if reads is None:
            reads = self._reads[name] = self._ranking_reads(name)
        key = (name, tuple([assigned.get(f, _UNDECIDED) for f in reads]))
        found = self._rankings.get(key)
        if found is None:
            ranked, origin = self.preferred(name, assigned)
            flagged = self.flagged(name, assigned, ranked)
            if flagged:
                ranked = [v for v in ranked if v not in flagged] + [v for v in ranked if v in flagged]
            found = (ranked, origin)
            if len(self._rankings) < _RANKINGS_KEPT:
                self._rankings[key] = found
        return list(found[0]), dict(found[1])

    def _ranking_reads(self, name: str) -> tuple[str, ...]:
        sem = semantics(self.pack)
        reads: set[str] = set()
        for pref in self.preferences.get(name, ()):
            cond = sem.preferences[pref.id]
            if cond is not None:
                reads.update(cond.fields)
            if pref.same_as is not None:
                reads.add(pref.same_as)
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
        for rid in self.warn_rules.get(name, ()):
            partial = rules[rid].partial
            for value in values:
                if partial({**assigned, name: value}) is False:
                    out.setdefault(value, []).append(rid)
        return {value: out[value] for value in values if value in out}

    def settled(self, assigned: Mapping[str, Scalar]) -> dict[str, Scalar]:
        """`assigned` and every value the rules force from it (propagation leaves one value): what
        a warn rule may read of a request whose other fields are not decided yet (choices, matrix).
        A warn rule over a derived fact (`has_aiter`, forced by the platform) flags a value then,
        as `check` of the same request warns."""
        state = self.compiled.start(dict(assigned))
        if state is None:
            return dict(assigned)
        forced = {n: d[0] for n, d in state.domains.items() if len(d) == 1}
        return {**forced, **assigned}

    def chain(self, name: str, assigned: Mapping[str, Scalar]) -> tuple[list[Scalar], Preference | None]:
        """The launcher's own default chain for an unset field: the values of its first
        applicable preference (pack authors keep that list equal to the launcher's real
        fallback chain), or, when no preference applies, the field's default (its first value).
        Warn rules are not applied: the launcher does not avoid what it only warns about."""
        values, pref = self._first_preference(name, assigned)
        return values or [self.pack.fields[name].domain[0]], pref

    def replacements(self, name: str, assigned: Mapping[str, Scalar], value: Scalar) -> list[Scalar] | None:
        """What the launcher's own overrides (adjustment rules, SGLang's FORCE) put in place of
        its pick `value` when that breaks one of them given `assigned`: their `adjust_to`
        values in declaration order, `[]` when one names none (then: the best value that
        works); None when no adjustment rule fires."""
        adjusters = self._adjusters.get(name)
        if adjusters is None:
            adjusters = self._adjusters[name] = tuple(r for r in self.pack.rules if r.adjusts == name)
        out: list[Scalar] | None = None
        for rule in adjusters:
            if self.compiled.rules[rule.id].condition.partial({**assigned, name: value}) is False:
                out = out or []
                out += [v for v in rule.adjust_to if v not in out]
        return out

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


_PLANS: Lru[str, Plan] = Lru(PACKS_KEPT)  # as the compiled packs: widened packs come and go
_UNDECIDED = object()
_RANKINGS_KEPT = 1 << 15


def plan_for(pack: Pack) -> Plan:
    """The cached plan of a pack (compiled CSP, field order, preferences per field)."""
    plan = _PLANS.get(pack.digest) if pack.digest else None
    if plan is None:
        prefs: dict[str, list[Preference]] = {}
        for pref in pack.preferences:
            prefs.setdefault(pref.field, []).append(pref)
        compiled = compile_pack(pack)
        warn: dict[str, list[str]] = {}
        for rid, cond in compiled.warn_rules.items():
            for name in cond.fields:
                warn.setdefault(name, []).append(rid)
        plan = Plan(
            compiled=compiled,
            order=_field_order(pack),
            preferences={k: tuple(v) for k, v in prefs.items()},
            warn_rules={k: tuple(v) for k, v in warn.items()},
        )
        if pack.digest:
            _PLANS.put(pack.digest, plan)
    return plan


def _field_order(pack: Pack) -> tuple[str, ...]:
    """The graph order, from the on-disk cache when it has it: the graph needs networkx, whose
    import alone would cost a launcher's start-up more than the whole resolution."""
    from solver.pack import cache

    # A widened copy (open domains) has the graph of its base pack: domains add no edges.
    entry = cache.read(base_digest(pack.digest)) if pack.digest else None
    order = entry.get("order") if entry is not None else None
    if isinstance(order, list) and len(order) == len(pack.fields) and set(order) == set(pack.fields):
        return tuple(order)
    from solver.pack.graph import analyse

    found = analyse(pack).order
    if pack.digest:
        cache.write(base_digest(pack.digest), order=list(found))
    return found


def resolve(
    pack: Pack,
    options: Any = None,
    facts: Any = None,
    *,
    strict: bool = False,
    reasons: bool = True,
    predict: bool = False,
    deny_warnings: bool = False,
    budget: Budget | None = None,
) -> Resolution:
    """Resolve a configuration: user choices kept, auto options filled by preference.

    `deny_warnings=True`: warnings are a conflict (`Unsatisfiable`), like `-D warnings`.

    `options` and `facts` are mappings or an `argparse.Namespace` (`None` = unset). Raises
    `InvalidInput` for unknown fields or values, `Unsatisfiable` (with a minimal conflict and
    ranked repairs) when no configuration exists. `reasons=False` skips the minimal reasons for
    rejected preferred values (the launcher's fast path).

    `predict=True` answers what the launcher itself does with the request as typed: each unset
    option takes the launcher's own default chain (`Plan.chain`), never another value, and when
    that chain fails the error is `Unsatisfiable` naming the default that fails
    (`.launcher_default`). Without it the search finds the best working configuration and lists
    where it departs from the launcher's own picks (`Resolution.departures`).

    `budget`: the search steps this call may spend (`solver.budget.Budget`; default: each
    search bounded on its own); running out raises `SolverBudgetExceeded`.
    """
    pins = collect_pins(pack, options, facts)
    res = resolve_pins(pack, pins, strict=strict, reasons=reasons, predict=predict, budget=budget)
    if deny_warnings:
        deny(pack, pins, res)
    return res


def resolve_pins(
    pack: Pack,
    pins: Mapping[str, Pin],
    *,
    strict: bool = False,
    reasons: bool = True,
    explain_failure: bool = True,
    predict: bool = False,
    budget: Budget | None = None,
) -> Resolution:
    """Resolve already validated pins (see `resolve`); `predict`: the launcher's own choices;
    `budget`: the steps its searches may spend."""
    pack = widened(pack, pins)  # an unlisted value of an open field joins this query's domain
    plan = plan_for(pack).within(budget)
    cp = plan.compiled
    pins = dict(pins)
    adjustments: dict[str, tuple[Scalar, str]] = {}
    values = {name: pin.value for name, pin in pins.items()}
    # One check serves three purposes: whether adjustments are needed (only when the request as
    # given has no solution), whether it resolves, and the start of the greedy decisions.
    state = cp.start(values)
    witness = (
        cp.search(state, task="checking the request", hint=_likely(plan, values))
        if state is not None
        else None
    )
    if witness is None and not strict:
        pins, adjustments = _apply_adjustments(plan, pins)
        if adjustments:
            values = {name: pin.value for name, pin in pins.items()}
            state = cp.start(values)
            witness = cp.search(state, task="checking the request") if state is not None else None
    if state is None or witness is None:
        if not explain_failure:
            raise Unsatisfiable(_bare_conflict())
        from solver.reasoning.diagnose import unsatisfiable_for

        raise unsatisfiable_for(plan, pins, adjustments)
    try:
        pins, adjustments, solution, trace, log = _settle(
            plan, pins, adjustments, state, witness, strict=strict, predict=predict
        )
    except ChainFailed as failed:
        if not explain_failure:
            raise Unsatisfiable(_bare_conflict()) from None
        from solver.reasoning.diagnose import chain_failure

        raise chain_failure(plan, failed.pins, failed, predict=predict) from None
    except _RequestFails as fails:
        if not explain_failure:
            raise Unsatisfiable(_bare_conflict()) from None
        from solver.reasoning.diagnose import unsatisfiable_for

        raise unsatisfiable_for(plan, fails.pins, fails.adjustments) from None
    _check_required(plan, pins, trace)
    provenance = {
        name: _provenance(plan, name, solution, pins, adjustments, trace, log, reasons, predict)
        for name in pack.fields
    }
    departures: list[DepartureRecord] = []
    if not predict:
        departures = _departures(plan, pins, adjustments, strict, solution, provenance)
    return Resolution.model_construct(
        pack={"name": pack.name, "version": pack.version},
        values={name: solution[name] for name in pack.fields},
        provenance=provenance,
        adjustments=[
            AdjustmentRecord.model_construct(
                field=name,
                requested=requested,
                resolved=solution[name],
                rule=rule_id,
                because=pack.rule(rule_id).because,
            )
            for name, (requested, rule_id) in adjustments.items()
        ],
        warnings=_warnings(plan, solution),
        mode="predict" if predict else "search",
        assumed=_assumed(plan, pins, solution, provenance),
        departures=departures,
    )


def _settle(
    plan: Plan,
    pins: dict[str, Pin],
    adjustments: dict[str, tuple[Scalar, str]],
    state: State,
    witness: Mapping[str, Scalar],
    *,
    strict: bool,
    predict: bool,
) -> tuple[
    dict[str, Pin],
    dict[str, tuple[Scalar, str]],
    dict[str, Scalar],
    SearchTrace,
    dict[str, tuple[list[Scalar], dict[Scalar, Preference]]],
]:
    """The decisions (`_decide`) for a satisfiable request. When the launcher's chain for a field
    fails, its own picks may be what makes it override a user value (SGLang's FORCE:
    --enable-dp-attention with its default --dp-size 1 is turned off): those adjustments are
    applied and the decisions start over. Raises `ChainFailed` (with `.pins`) when none helps,
    `_RequestFails` when the adjusted request has no solution."""
    cp = plan.compiled
    adjustments = dict(adjustments)
    while True:
        values = {name: pin.value for name, pin in pins.items()}
        try:
            solution, trace, log = _decide(plan, values, state, witness, predict=predict)
            return pins, adjustments, solution, trace, log
        except ChainFailed as failed:
            more = None if strict else _launcher_adjustments(plan, pins, failed)
            if more is None:
                failed.pins = pins
                raise
            pins, fired = more
            adjustments.update(fired)
            values = {name: pin.value for name, pin in pins.items()}
            started = cp.start(values)
            found = cp.search(started, task="checking the request") if started is not None else None
            if started is None or found is None:
                raise _RequestFails(pins, adjustments) from None
            state, witness = started, found


class _RequestFails(Exception):
    def __init__(self, pins: dict[str, Pin], adjustments: dict[str, tuple[Scalar, str]]) -> None:
        super().__init__("the adjusted request has no solution")
        self.pins = pins
        self.adjustments = adjustments


class ChainFailed(Exception):
    """Predict mode: no value of the launcher's own default chain for `field` works, given the
    request and the launcher's earlier picks (`decided`). Internal: `resolve_pins` turns it into
    `Unsatisfiable`."""

    def __init__(
        self, field: str, chain: list[Scalar], preference: Preference | None, decided: dict[str, Scalar]
    ) -> None:
        super().__init__(field)
        self.field = field
        self.chain = chain
        self.preference = preference
        self.decided = decided
        self.pins: dict[str, Pin] = {}  # the request when it failed (after any adjustments)


def launcher_view(plan: Plan, pins: Mapping[str, Pin], failed: ChainFailed) -> dict[str, Pin]:
    """The request as the launcher sees it when its chain for `failed.field` fails: what was
    given, its own earlier picks, its default for the field, and the launcher defaults of the
    other unset options the search may not choose (source `launcher-default`; facts decided on
    the way: `assumed`)."""
    fields = plan.pack.fields
    view = dict(pins)
    for name, value in failed.decided.items():
        if name not in view:
            view[name] = Pin(
                field=name,
                value=value,
                source=("launcher-default" if fields[name].kind == "option" else "assumed"),
            )
    view[failed.field] = Pin(
        field=failed.field,
        value=failed.chain[0],
        source="launcher-default" if fields[failed.field].kind == "option" else "assumed",  # a fact
    )
    for name, value in _resource_defaults(plan, {n: p.value for n, p in view.items()}).items():
        view[name] = Pin(field=name, value=value, source="launcher-default")
    return view


def _launcher_adjustments(
    plan: Plan, pins: Mapping[str, Pin], failed: ChainFailed
) -> tuple[dict[str, Pin], dict[str, tuple[Scalar, str]]] | None:
    """User pins the launcher overrides because of its own picks (adjustments that fire on
    `launcher_view`); None when none does."""
    adjusted_pins, fired = _apply_adjustments(plan, launcher_view(plan, pins, failed))
    if not fired:
        return None
    return {n: p for n, p in adjusted_pins.items() if n in pins}, fired


def deny(pack: Pack, pins: Mapping[str, Pin], res: Resolution) -> None:
    """`deny_warnings` (`--deny-warnings`, like `-D warnings`): a resolution with warnings is a
    conflict naming the warn rules and the pins they read."""
    if not res.warnings:
        return
    from solver.model import ConflictReport, PinRef, RuleRef

    rules = [pack.rule(w.rule) for w in res.warnings]
    read = set(semantics(pack).rules[rules[0].id].fields) if rules else set()
    for rule in rules[1:]:
        read |= set(semantics(pack).rules[rule.id].fields)
    report = ConflictReport(
        pins=[PinRef(field=n, value=p.value, source=p.source) for n, p in pins.items() if n in read],
        rules=[RuleRef(id=r.id, because=r.because, source=r.source) for r in rules],
    )
    lines = ["Warnings denied (--deny-warnings): the request resolves, but:"]
    lines += [f"  - WARNING ({w.rule}): {w.message}" for w in res.warnings]
    raise Unsatisfiable(report, [], "\n".join(lines))


def _assumed(
    plan: Plan, pins: Mapping[str, Pin], solution: Mapping[str, Scalar], provenance: Mapping[str, Provenance]
) -> list[AssumedRecord]:
    """Facts nobody gave that a preference or the domain's order filled (not those the rules
    force: those follow from what was given)."""
    out = []
    for name, spec in plan.pack.fields.items():
        prov = provenance[name]
        if spec.kind != "fact" or name in pins or prov.kind not in ("preference", "default"):
            continue
        out.append(
            AssumedRecord.model_construct(field=name, value=solution[name], because=prov.because or "")
        )
    return out


def _departures(
    plan: Plan,
    pins: dict[str, Pin],
    adjustments: dict[str, tuple[Scalar, str]],
    strict: bool,
    solution: Mapping[str, Scalar],
    provenance: Mapping[str, Provenance],
) -> list[DepartureRecord]:
    """The options the launcher decides by itself (predict mode over the same request) where the
    searched `solution` differs from its own picks, in graph order up to the first whose chain
    fails, each with why."""
    pack = plan.pack
    cp = plan.compiled
    state = cp.start({n: p.value for n, p in pins.items()})
    if state is None:
        return []
    # The searched solution keeps every final pin, so it is already a witness for them: no
    # second search for one.
    witness = solution
    failed: ChainFailed | None = None
    try:
        own, _, predicted, _, _ = _settle(
            plan, dict(pins), adjustments, state, witness, strict=strict, predict=True
        )
    except ChainFailed as exc:
        failed, predicted, own = exc, exc.decided, exc.pins
    except _RequestFails:
        return []
    out = []
    for name in plan.order:
        if name in own or pack.fields[name].kind != "option":
            continue
        resolved = solution[name]
        if failed is not None and name == failed.field:
            value = failed.chain[0]
            why = _rejected_because(provenance[name], value)
            out.append(
                DepartureRecord.model_construct(
                    field=name,
                    launcher=None,
                    resolved=resolved,
                    rule=failed.preference.id if failed.preference else None,
                    because=(
                        f"{pack.name}'s own default {_show(value)} fails here"
                        + (f" ({why})" if why else "")
                        + f"; chose {_show(resolved)}"
                    ),
                )
            )
            break
        if name not in predicted or predicted[name] == resolved:
            continue
        value = predicted[name]
        why = _rejected_because(provenance[name], value)
        out.append(
            DepartureRecord.model_construct(
                field=name,
                launcher=value,
                resolved=resolved,
                rule=None,
                because=(
                    f"{pack.name} would pick {_show(value)} by itself"
                    + (f" ({why})" if why else "")
                    + f"; chose {_show(resolved)}"
                ),
            )
        )
    return out


def _rejected_because(prov: Provenance, value: Scalar) -> str:
    for rej in prov.rejected:
        if rej.value == value:
            return ", ".join(rej.because)
    return ""


def _likely(plan: Plan, values: Mapping[str, Scalar]) -> dict[str, Scalar]:
    """Each free field's best-ranked value given only the request: a guess at the resolution that
    the first search tries first, so its witness mostly agrees with the greedy decisions (each
    agreement saves a search) and packs whose preferences point at working values need no
    backtracking to find it."""
    return {name: plan.ranking(name, values)[0][0] for name in plan.order if name not in values}


def _decide(
    plan: Plan,
    values: Mapping[str, Scalar],
    state: State,
    witness: Mapping[str, Scalar],
    *,
    predict: bool = False,
) -> tuple[dict[str, Scalar], SearchTrace, dict[str, tuple[list[Scalar], dict[Scalar, Preference]]]]:
    """Greedy pinning in graph order with a satisfiability oracle: each field takes the first value
    of its ranking that keeps the request solvable. Never dead-ends, and gives the
    lexicographically best configuration. The last witness is reused: when a field's best value is
    the one the witness already has, no check is needed; otherwise only the part of the witness
    the new value touches is searched again.

    `predict`: an unset option takes the first value of the launcher's own default chain
    (`Plan.chain`) that works. When none does, the only value the rules leave possible is taken
    if no preference applies or an adjustment sets the field here (the pack states SGLang's own
    derivations as rules); otherwise `ChainFailed` (the launcher would pick a value that fails).
    """
    fields = plan.pack.fields
    trace = SearchTrace()
    log: dict[str, tuple[list[Scalar], dict[Scalar, Preference]]] = {}
    decided: dict[str, Scalar] = dict(values)
    for name in plan.order:
        current = state.domain(name)
        trace.domains[name] = tuple(current)
        spec = fields[name]
        if name not in values and _chained(spec, predict):
            chain, pref = plan.chain(name, decided)
            log[name] = (chain, dict.fromkeys(chain, pref) if pref else {})
            found = _first_working(plan, state, witness, name, chain, current)
            replacing = plan.replacements(name, decided, chain[0]) if found is None else None
            if replacing is not None:  # the launcher's own override of its default
                if not replacing:
                    replacing = plan.ranking(name, decided)[0]
                found = _first_working(plan, state, witness, name, replacing, current)
            if found is None and pref is None:
                # The field's default fails: the pack states the launcher's derivation of
                # it as rules, which here leave one value (else there is no telling).
                found = _only_working(plan, state, witness, name, current)
                if found is not None:
                    trace.domains[name] = (found[0],)
            if found is None:
                raise ChainFailed(name, chain, pref, dict(decided))
        elif len(current) == 1:
            decided[name] = current[0]
            continue
        else:
            ranked, origin = plan.ranking(name, decided)
            log[name] = (ranked, origin)
            found = _first_working(plan, state, witness, name, ranked, current)
            if found is None:  # pragma: no cover - a satisfiable state always has a working value
                raise RuntimeError(f"no value of {name} keeps the request solvable")
        decided[name], witness = found
    return {n: decided[n] for n in plan.pack.fields}, trace, log


def _first_working(
    plan: Plan,
    state: State,
    witness: Mapping[str, Scalar],
    name: str,
    ranked: list[Scalar],
    current: list[Scalar],
) -> tuple[Scalar, Mapping[str, Scalar]] | None:
    """The first of `ranked` that keeps the request solvable, fixed in `state`, with a solution
    that has it; None (state unchanged) when none does."""
    allowed = set(current)
    for value in ranked:
        if value not in allowed:
            continue
        changed: list[str] = []
        if not state.fix(name, value, changed):
            continue
        # The witness satisfies every decision so far; if it already has this value, it proves
        # the value works.
        if witness.get(name) != value:
            # The old witness with the new value is often still a solution, or one after a few
            # fields around the change are redone: then no search of the whole pack.
            found = plan.compiled.search(
                state, task="resolving the request", hint={**witness, name: value}, around=changed
            )
            if found is None:
                state.undo()
                continue
            witness = found
        return value, witness
    return None


def _only_working(
    plan: Plan,
    state: State,
    witness: Mapping[str, Scalar],
    name: str,
    current: list[Scalar],
) -> tuple[Scalar, Mapping[str, Scalar]] | None:
    """The value of `name` when exactly one keeps the request solvable (fixed in `state`)."""
    working = []
    for value in current:
        found = _first_working(plan, state, witness, name, [value], current)
        if found is not None:
            state.undo()
            working.append(value)
    if len(working) != 1:
        return None
    return _first_working(plan, state, witness, name, working, current)


def _bare_conflict() -> Any:
    from solver.model import ConflictReport

    return ConflictReport(pins=[], rules=[])


def _apply_adjustments(
    plan: Plan, pins: dict[str, Pin]
) -> tuple[dict[str, Pin], dict[str, tuple[Scalar, str]]]:
    """Replace user pins that a declared adjustment overrides (SGLang's FORCE), to a fixpoint.

    An adjustment fires when the user's value breaks the rule while the other inputs make the
    rule's `when` certain. The new value is the first `adjust_to` value that works, else auto.
    """
    cp = plan.compiled
    sem = semantics(plan.pack)
    adjusted: dict[str, tuple[Scalar, str]] = {}
    changed = True
    while changed:
        changed = False
        values = {n: p.value for n, p in pins.items()}
        if cp.satisfiable(values, task="checking the request") is not None:
            break
        # The launcher reads its own defaults for the resources nobody gave (a default
        # --dp-size 1 can turn DP attention off): they decide each rule's `when` too. Typed
        # values are never defaulted, so a target's own default never decides its rule.
        given_all = {**_resource_defaults(plan, values), **values}
        for rule in plan.pack.rules:
            target = rule.adjusts
            if target is None or target in adjusted:
                continue
            pin = pins.get(target)
            if pin is None or pin.source != "user":
                continue
            others = {n: v for n, v in values.items() if n != target}
            given = {n: v for n, v in given_all.items() if n != target}
            if not _entailed(cp, given, sem.whens.get(rule.id)):
                continue
            if not _violated(cp, given_all, rule.id):
                continue
            replacement = next(
                (
                    w
                    for w in rule.adjust_to
                    if cp.satisfiable({**others, target: w}, task="adjusting a value") is not None
                ),
                None,
            )
            del pins[target]
            if replacement is not None:
                pins[target] = Pin(field=target, value=replacement, source="user")
            adjusted[target] = (pin.value, rule.id)
            changed = True
            break
    if adjusted:
        # An adjusted value is no longer the user's own choice; keep its pin, marked as such.
        pins = {
            n: (p.model_copy(update={"source": "adjusted"}) if n in adjusted else p) for n, p in pins.items()
        }
    return pins, adjusted


def _chained(spec: Field, predict: bool) -> bool:
    """Whether an unset field takes its chain (the first applicable preference's values, else its
    default) instead of the search's best value: an option in predict mode, and any field the
    search may not choose (`search = false`: resources, precision, a model's shape facts)."""
    return not spec.search or (predict and spec.kind == "option")


def _resource_defaults(plan: Plan, values: Mapping[str, Scalar]) -> dict[str, Scalar]:
    """The launcher's default (first value of its chain) of each unset option the search may not
    choose (`search = false`: the resources and the precision), as `launcher_view` takes them."""
    assigned = dict(values)
    out: dict[str, Scalar] = {}
    for name in plan.order:
        spec = plan.pack.fields[name]
        if name not in assigned and spec.kind == "option" and not spec.search:
            out[name] = assigned[name] = plan.chain(name, assigned)[0][0]
    return out


def _entailed(cp: CompiledPack, pins: Mapping[str, Scalar], cond: Any) -> bool:
    if cond is None:
        return True
    known = cond.partial(pins)
    if known is not None:
        return bool(known)
    negated = Extra(cond.fields, lambda *a: not cond.holds(a))
    return cp.satisfiable(pins, extra=[negated], task="testing an adjustment") is None


def _violated(cp: CompiledPack, pins: Mapping[str, Scalar], rule_id: str) -> bool:
    cond = cp.rules[rule_id].condition
    known = cond.partial(pins)
    if known is not None:
        return not known
    return (
        cp.satisfiable(pins, task="testing an adjustment") is None
        and cp.satisfiable(pins, without_rules=[rule_id], task="testing an adjustment") is not None
    )


def _check_required(plan: Plan, pins: Mapping[str, Pin], trace: SearchTrace) -> None:
    issues = []
    for name, spec in plan.pack.fields.items():
        if not spec.required or name in pins or len(trace.domains.get(name, ())) <= 1:
            continue
        shown = ", ".join(str(v) for v in trace.domains[name][:16])
        issues.append(
            InputIssue(
                field=name,
                value=None,
                allowed=tuple(trace.domains[name]),
                message=(
                    f"{name} is not given and the other inputs do not decide it: "
                    f"pass --set {name}=VALUE (one of {shown}) or --detect"
                ),
            )
        )
    if issues:
        raise InvalidInput(issues)


def _provenance(
    plan: Plan,
    name: str,
    solution: Mapping[str, Scalar],
    pins: Mapping[str, Pin],
    adjustments: Mapping[str, tuple[Scalar, str]],
    trace: SearchTrace,
    log: Mapping[str, tuple[list[Scalar], dict[Scalar, Preference]]],
    reasons: bool,
    predict: bool = False,
) -> Provenance:
    pack = plan.pack
    if name in adjustments:
        rule = pack.rule(adjustments[name][1])
        return Provenance.model_construct(
            kind="adjusted", source="user", rule=rule.id, because=rule.because, rejected=[]
        )
    pin = pins.get(name)
    if pin is not None:
        kind = "user" if pin.source == "user" else "fact"
        return Provenance.model_construct(kind=kind, source=pin.source, rule=None, because=None, rejected=[])
    value = solution[name]
    if len(trace.domains.get(name, ())) <= 1:
        forcing = _forcing_rules(plan.compiled, name, solution)
        models = plan.compiled.models
        because = (
            "; ".join(dict.fromkeys(models[r].because for r in forcing))
            if forcing
            else "the only value the rules allow"
        )
        return Provenance.model_construct(
            kind="rule", source=None, rule=forcing[0] if forcing else None, because=because, rejected=[]
        )
    ranked, origin = log.get(name, ([value], {}))
    before = ranked[: ranked.index(value)] if value in ranked else []
    rejected = [_rejection(plan, name, v, solution, pins, reasons) for v in before]
    field = pack.fields[name]
    chained = _chained(field, predict)  # the launcher's chain, or a fact's assumed default
    if not chained:
        rejected += _flagged_rejections(plan, name, value, solution, pins, ranked)
    pref = origin.get(value)
    if pref is not None:
        return Provenance.model_construct(
            kind="preference", source=None, rule=pref.id, because=pref.because, rejected=rejected
        )
    if chained:
        return Provenance.model_construct(
            kind="default",
            source=None,
            rule=None,
            rejected=rejected,
            because=f"{pack.name}'s default when the flag is not given",
        )
    because = (
        "not given; the first value of the domain that works — set it if it differs"
        if field.kind == "fact"
        else "the first value of the domain that works"
    )
    return Provenance.model_construct(
        kind="default", source=None, rule=None, because=because, rejected=rejected
    )


def _rejection(
    plan: Plan,
    name: str,
    value: Scalar,
    solution: Mapping[str, Scalar],
    pins: Mapping[str, Pin],
    reasons: bool,
) -> Rejection:
    if not reasons:
        return Rejection.model_construct(value=value, because=[])
    from solver.reasoning.conflicts import minimal_reason

    # The background is every field decided before this one (pins and earlier choices).
    position = plan.order.index(name)
    earlier = set(plan.order[:position]) | set(pins)
    fixed = {n: solution[n] for n in earlier if n != name}
    sources = {n: (pins[n].source if n in pins else "preference") for n in fixed}
    items = minimal_reason(plan.compiled, name, value, fixed, sources, trace=False)
    return Rejection.model_construct(value=value, because=[it.label() for it in items or []])


def _flagged_rejections(
    plan: Plan,
    name: str,
    value: Scalar,
    solution: Mapping[str, Scalar],
    pins: Mapping[str, Pin],
    ranked: list[Scalar],
) -> list[Rejection]:
    """Values the preferences ranked above the chosen one that a warn rule moved to the end: the
    warn rule and the decided values it read are the reason."""
    if not plan.warn_rules.get(name):
        return []  # no warn rule reads the field: nothing can have been moved
    position = plan.order.index(name)
    assigned = {n: solution[n] for n in set(plan.order[:position]) | set(pins) if n != name}
    preferred, _ = plan.preferred(name, assigned)
    better = preferred[: preferred.index(value)] if value in preferred else []
    flagged = plan.flagged(name, assigned, better)
    out = []
    for v in better:
        rid = flagged.get(v)
        if rid is None or v in ranked[: ranked.index(value)]:
            continue
        reads = [
            f"{f}={_show(assigned[f])}"
            for f in plan.compiled.warn_rules[rid].fields
            if f != name and f in assigned
        ]
        out.append(Rejection.model_construct(value=v, because=[*reads, rid]))
    return out


def _forcing_rules(cp: CompiledPack, name: str, solution: Mapping[str, Scalar]) -> list[str]:
    """Rules that, with the other fields as resolved, exclude the field's other values.

    A greedy cover: the rule excluding the most values first, until every other value is
    accounted for (or no rule alone excludes what is left: propagation through several rules).
    """
    value = solution[name]
    left = {v for v in cp.domains[name] if v != value}
    excluded_by: dict[str, set[Scalar]] = {}
    for rid in cp.rules_reading(name):
        excluded_by[rid] = left - cp.allowed(rid, name, solution)
    chosen: list[str] = []
    while left:
        best = max(excluded_by, key=lambda r: len(excluded_by[r] & left), default=None)
        if best is None or not excluded_by[best] & left:
            break
        chosen.append(best)
        left -= excluded_by.pop(best)
    return chosen


def _warnings(plan: Plan, solution: Mapping[str, Scalar]) -> list[WarningRecord]:
    out = []
    for rid, cond in plan.compiled.warn_rules.items():
        if not cond.evaluate(solution):
            out.append(WarningRecord.model_construct(rule=rid, message=plan.compiled.models[rid].because))
    return out
