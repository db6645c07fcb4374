"""The decisions of one request: adjustments, then each auto field in graph order.

`settle` takes a request that has a solution and decides every field the user did not pin, in the
plan's order, each to the best-ranked value that keeps the request solvable (or, in predict mode,
the launcher's own default chain, `ChainFailed` when none of it works); declared adjustments replace
user pins only when the request as given has no solution (`apply_adjustments`), or when the
launcher's own picks trigger them (`launcher_view`). Failures are raised as data (`RequestFails`,
`ChainFailed`): explaining them is `solver.reasoning.diagnose`'s job, one layer up.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from solver.engine.csp import CompiledPack, SearchTrace, State
from solver.frozen import Frozen, frozen_type
from solver.model import (
    Pin,
    Preference,
    Scalar,
)
from solver.pack.loader import semantics
from solver.reasoning.assume import WarnReads, assumed_first, assumed_values, forced_by_facts
from solver.reasoning.guess import first_search, follows_chain, marked
from solver.reasoning.plan import Plan
from solver.reasoning.steering import first_unwarned, first_working, kept_by, steering_matters

__all__ = [
    "ChainFailed",
    "RequestFails",
    "Settled",
    "Untypable",
    "apply_adjustments",
    "bare_conflict",
    "launcher_view",
    "settle",
]


@frozen_type
class Settled(Frozen):
    """The decisions of a request (`settle`), and the state they were fixed in."""

    pins: dict[str, Pin]
    adjustments: dict[str, tuple[Scalar, str]]
    solution: dict[str, Scalar]
    trace: SearchTrace
    log: dict[str, tuple[list[Scalar], dict[Scalar, Preference]]]
    state: State
    """The request's state (its final pins) with every decision in it: one `State.fix` per name
    of `fixed`, so `State.undo` takes the last ones back."""
    fixed: list[str]
    """The fields whose decision was fixed in `state`, in the plan's order (not the fields that
    had one value left when their turn came)."""
    assumed: dict[str, Scalar]
    """Unset facts assumed before the decisions (`assume.assumed_first`), in `state` from the start."""
    assumed_forced: frozenset[str] = frozenset()
    """Those of `assumed` at the one value the facts decided then left them (`AssumedFirst.forced`)."""


def settle(
    plan: Plan,
    pins: dict[str, Pin],
    adjustments: dict[str, tuple[Scalar, str]],
    state: State,
    witness: Mapping[str, Scalar],
    *,
    strict: bool,
    predict: bool,
    values_only: bool = False,
    assumed: Mapping[str, Scalar] | None = None,
    skipped: Mapping[str, Collection[Scalar]] | None = None,
    decided_before: int = 0,
) -> Settled:
    """The decisions (`_decide`) for a satisfiable request. When the launcher's chain for a field
    fails, its own picks may be what makes it override a user value (SGLang's FORCE:
    --enable-dp-attention with its default --dp-size 1 is turned off): those adjustments are
    applied and the decisions start over. When an unset fact's chain fails because options
    decided before it took its value away, the fact is assumed first and the decisions start
    over (`assume.assumed_first`). Raises `ChainFailed` (with `.pins`) when none helps,
    `RequestFails` when the adjusted request has no solution. `values_only`: see `_decide`. `assumed`: facts
    already assumed first (in `state`), by an earlier `settle` of the same request. `skipped`:
    values a searched field never takes (see `_decide`). `decided_before` (with `values_only`):
    the first so many fields of the plan's order are decided as `witness` has them and fixed in
    `state` already (`departures.launcher_picks`: the prefix predict mode decides as the search
    did); the decisions start after them, or from the first field when they start over."""
    adjustments = dict(adjustments)
    assumed = dict(assumed or {})
    forced: set[str] = set()
    while True:
        values = {name: pin.value for name, pin in pins.items()}
        fixed: list[str] = []
        try:
            # Warn steering is made exact only where it can matter (`steering_matters`): the
            # decisions without it mostly give an answer that shows it would change nothing.
            hint = witness
            for exact in (values_only, True):
                solution, trace, log = _decide(
                    plan,
                    values,
                    state,
                    hint,
                    fixed,
                    predict=predict,
                    values_only=values_only,
                    assumed=assumed,
                    skipped=skipped,
                    exact=exact,
                    decided_before=decided_before if values_only else 0,
                )
                if exact or not steering_matters(plan, solution, fixed, trace, values, assumed):
                    break
                for _ in fixed:
                    state.undo()
                fixed.clear()
                # (The answer is a solution of the request whose values the exact decisions
                # take up to the first that can differ: those need no search.)
                hint = solution
            return Settled(pins, adjustments, solution, trace, log, state, fixed, assumed, frozenset(forced))
        except ChainFailed as failed:
            first = assumed_first(plan, {**values, **assumed}, failed.field, failed.chain, failed.decided)
            if first is not None:
                assumed[failed.field], state, witness = first.value, first.state, first.witness
                decided_before = 0  # (a new state: every decision made again)
                if first.forced:
                    forced.add(failed.field)
                continue
            more = None if strict else _launcher_adjustments(plan, pins, failed)
            if more is None:
                failed.pins, failed.adjustments = pins, adjustments
                raise
            pins, fired = more
            adjustments.update(fired)
            values = {name: pin.value for name, pin in pins.items()}
            started, found = first_search(plan, {**values, **assumed})
            if started is None or found is None:
                raise RequestFails(pins, adjustments) from None
            state, witness = started, found
            decided_before = 0


class RequestFails(Exception):
    def __init__(self, pins: dict[str, Pin], adjustments: dict[str, tuple[Scalar, str]]) -> None:
        super().__init__("the adjusted request has no solution")
        self.pins = pins
        self.adjustments = adjustments


class Untypable(Exception):
    """Every value of a searched field that works is one `settle` was told to skip."""


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
        self.adjustments: dict[str, tuple[Scalar, str]] = {}  # those adjustments (`settle`)


def launcher_view(plan: Plan, pins: Mapping[str, Pin], failed: ChainFailed) -> dict[str, Pin]:
    """The request as the launcher sees it when its chain for `failed.field` fails: what was
    given, its own earlier picks, its default for the field, and the launcher defaults of the
    other unset options the search may not choose (source `launcher-default`; facts decided on
    the way: `assumed`)."""
    fields = plan.pack.fields
    view = dict(pins)
    for name, value in failed.decided.items():
        if name not in view and name in fields:  # not a `given_key` mark
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
    for name, value in resource_defaults(plan, {n: p.value for n, p in view.items()}).items():
        view[name] = Pin(field=name, value=value, source="launcher-default")
    return view


def _launcher_adjustments(
    plan: Plan, pins: Mapping[str, Pin], failed: ChainFailed
) -> tuple[dict[str, Pin], dict[str, tuple[Scalar, str]]] | None:
    """User pins the launcher overrides because of its own picks (adjustments that fire on
    `launcher_view`); None when none does."""
    adjusted_pins, fired = apply_adjustments(plan, launcher_view(plan, pins, failed), given=pins.keys())
    if not fired:
        return None
    return {n: p for n, p in adjusted_pins.items() if n in pins}, fired


def _decide(
    plan: Plan,
    values: Mapping[str, Scalar],
    state: State,
    witness: Mapping[str, Scalar],
    fixed: list[str],
    *,
    predict: bool = False,
    values_only: bool = False,
    assumed: Mapping[str, Scalar] | None = None,
    skipped: Mapping[str, Collection[Scalar]] | None = None,
    exact: bool = True,
    decided_before: int = 0,
) -> tuple[dict[str, Scalar], SearchTrace, dict[str, tuple[list[Scalar], dict[Scalar, Preference]]]]:
    """Greedy pinning in graph order with a satisfiability oracle: each field takes the first value
    of its ranking that keeps the request solvable. Never dead-ends, and gives the
    lexicographically best configuration. The last witness is reused: when a field's best value is
    the one the witness already has, no check is needed; otherwise only the part of the witness
    the new value touches is searched again. Each decision stays fixed in `state`; `fixed`
    receives the fields that took one `State.fix` (every field not already down to one value).

    `predict`: an unset option takes the first value of the launcher's own default chain
    (`Plan.chain`) that works. When none does, the only value the rules leave possible is taken
    if no preference applies or an adjustment sets the field here (the pack states SGLang's own
    derivations as rules); otherwise `ChainFailed` (the launcher would pick a value that fails).

    `values_only`: for a caller that reads the decided values alone (the launcher's own picks,
    `solver.reasoning.provenance.departures_of`), not `trace`, `log`, `state` nor `fixed`. A field
    whose first value (of its chain, or of its ranking) the witness has takes it without a
    propagation: the witness holds every decision so far, so the value is in the field's domain,
    works, and is what the full step decides (forced or not). Those decisions are fixed in
    `state` only when a later field departs from the witness and needs the state to test its
    values; `state` may then lack the last ones.

    `assumed`: unset facts assumed before the decisions (`settle`), fixed in `state`: decided
    like given values, but not marked given for a preference's `given(FIELD)`.

    `skipped`: values a searched field does not take though they work (kept in its logged
    ranking, so its provenance lists them rejected): departures a rule refuses typed
    (`solver.reasoning.departures.typed_refusals`). `Untypable` when every working value is one.

    `exact`: a value of a field with warn rules that every solution gives a warning ranks last
    even when the ranking could not see it (`steering.first_unwarned`); without it, only what
    the ranking flags (what `settle` checks the answer for first).

    `decided_before` (`values_only`): see `settle`; those fields take the witness's values
    without a step each (a launcher's picks walked ~60 agreed fields to take each from there).
    """
    fields = plan.pack.fields
    trace = SearchTrace()
    log: dict[str, tuple[list[Scalar], dict[Scalar, Preference]]] = {}
    # The fields the request gives, marked for preferences that read `given(FIELD)`.
    decided: dict[str, Scalar] = {**marked(values), **(assumed or {})}
    if assumed:
        values = {**values, **assumed}
    pending: list[tuple[str, Scalar]] = []  # (`values_only`) decided, not yet fixed in `state`
    later = WarnReads(plan, dict(decided))  # (the request: its pins, marks and facts assumed first)
    order = plan.order
    if decided_before:
        decided.update({name: witness[name] for name in order[:decided_before]})
        order = order[decided_before:]
    for name in order:
        if values_only:
            if name in values:
                decided[name] = state.domain(name)[0]  # (a pin is fixed in `state` from the start)
                continue
            taken = _witness_first(plan, state, pending, later, witness, name, decided, predict)
            if taken is not None:
                decided[name] = taken[0]
                pending.append((name, taken[0]))
                continue
            _catch_up(state, pending)
        current = state.domain(name)
        trace.domains[name] = tuple(current)
        spec = fields[name]
        if name not in values and follows_chain(spec, predict):
            chain, pref = plan.chain(name, decided)
            log[name] = (chain, dict.fromkeys(chain, pref) if pref else {})
            found = first_working(plan, state, witness, name, chain, current)
            replacing = plan.replacements(name, decided, chain[0], values) if found is None else None
            if replacing is not None:  # the launcher's own override of its default
                if not replacing:
                    replacing = plan.ranking(name, decided)[0]
                found = first_working(plan, state, witness, name, replacing, current)
            if found is None and pref is None:
                # The field's default fails: the pack states the launcher's derivation of
                # it as rules, which here leave one value (else there is no telling). A fact's
                # derivation reads the facts alone: the user's flags never tell what the model
                # or the machine is, else a fact nobody gave would quietly become whatever
                # makes the flags work (a block size making the model hybrid).
                if spec.kind == "fact":
                    only = forced_by_facts(plan, decided, name)
                    found = None
                    if only is not None:
                        found = first_working(plan, state, witness, name, [only], current)
                else:
                    found = _only_working(plan, state, witness, name, current)
                if found is not None:
                    trace.domains[name] = (found[0],)
            if found is None:
                raise ChainFailed(name, chain, pref, dict(decided))
        elif len(current) == 1:
            decided[name] = current[0]
            continue
        else:
            forced = later.known(name, state, decided) if plan.warn_rules.get(name) else None
            if forced:
                trace.forced[name] = forced
            ranked, origin = plan.ranking(name, decided, forced)
            skip = skipped.get(name) if skipped else None
            tried = [v for v in ranked if v not in skip] if skip else ranked
            if exact and plan.warn_rules.get(name):
                found, ranked = first_unwarned(
                    plan, state, witness, name, tried, current, decided, forced, trace
                )
            else:
                found = first_working(plan, state, witness, name, tried, current)
            log[name] = (ranked, origin)
            if found is None and skip:
                raise Untypable(name)
            if found is None:  # pragma: no cover - a satisfiable state always has a working value
                raise RuntimeError(f"no value of {name} keeps the request solvable")
        decided[name], witness = found
        fixed.append(name)
    return {n: decided[n] for n in plan.pack.fields}, trace, log


def _witness_first(
    plan: Plan,
    state: State,
    pending: list[tuple[str, Scalar]],
    later: WarnReads,
    witness: Mapping[str, Scalar],
    name: str,
    decided: Mapping[str, Scalar],
    predict: bool,
) -> tuple[Scalar] | None:
    """(`values_only`) The field's first value (of its chain, or of its ranking) when the
    witness has it, as the full step would decide it; None when the full step must run."""
    if follows_chain(plan.pack.fields[name], predict):
        first = plan.chain(name, decided)[0][0]
        return (first,) if witness.get(name) == first else None
    if not plan.warn_rules.get(name):
        first = plan.best_first(name, decided)[0]
        return (first,) if witness.get(name) == first else None
    _catch_up(state, pending)  # its warn rules read what the state forces
    read = later.known(name, state, decided)
    first = plan.best_first(name, decided, read)[0]
    # (A warn rule the witness breaks: the full step asks whether some solution keeps it.)
    if witness.get(name) != first or not kept_by(plan, name, first, witness, decided, read):
        return None
    return (first,)


def _catch_up(state: State, pending: list[tuple[str, Scalar]]) -> None:
    """Fix the decisions `_decide` took from the witness without a propagation (`values_only`),
    as one step (`State.fix_all`: `values_only` callers never undo them one by one)."""
    if pending and not state.fix_all(pending):
        # (never: a solution holds every one of them, and propagation keeps its values)
        raise RuntimeError(f"{pending}, taken from a solution, fail propagation")
    pending.clear()


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
        found = first_working(plan, state, witness, name, [value], current)
        if found is not None:
            state.undo()
            working.append(value)
    if len(working) != 1:
        return None
    return first_working(plan, state, witness, name, working, current)


def bare_conflict() -> Any:
    from solver.model import ConflictReport

    return ConflictReport(pins=[], rules=[])


def apply_adjustments(
    plan: Plan, pins: dict[str, Pin], given: Collection[str] | None = None, *, refuted: bool = False
) -> tuple[dict[str, Pin], dict[str, tuple[Scalar, str]]]:
    """Replace user pins that a declared adjustment overrides (SGLang's FORCE), to a fixpoint.

    An adjustment fires when the user's value breaks the rule while the other inputs make the
    rule's `when` certain. The new value is the first `adjust_to` value that works, else the first
    `adjust_to` value (the request then fails with it), else (no `adjust_to`) auto.
    `given`: the fields the request gives (a `typed_only` adjustment reads only those), by
    default every pin's field; `launcher_view`'s pins add the launcher's own picks, which are
    not given, so that caller passes the request's fields. `refuted`: the caller's search has
    just shown that `pins` as given have no solution, so that first check is not asked again
    (a search that refutes: repair, then the descent, ~0.2-0.6 ms on the SGLang pack).
    """
    cp = plan.compiled
    # Every pin of the request is given, whatever its source: typed with --set, read from the
    # environment or a model config, or a what-if (`--assume`, source `assumed`, the same
    # source `launcher_view` gives the launcher's own picks of facts: hence the parameter).
    typed = frozenset(pins if given is None else given)
    sem = semantics(plan.pack)
    adjusted: dict[str, tuple[Scalar, str]] = {}
    changed = True
    while changed:
        changed = False
        values = {n: p.value for n, p in pins.items()}
        if not refuted and cp.satisfiable(values, task="checking the request") is not None:
            break
        refuted = False  # (the pins an adjustment changed are asked)
        # The launcher reads its own defaults for the resources nobody gave (a default
        # --dp-size 1 can turn DP attention off): they decide each rule's `when` too. Typed
        # values are never defaulted, so a target's own default never decides its rule.
        given_all = {**resource_defaults(plan, values), **values}
        assumed: dict[str, dict[str, Scalar]] = {}  # target -> the facts assumed without it
        for rule in plan.pack.rules:
            target = rule.adjusts
            if target is None or target in adjusted:
                continue
            pin = pins.get(target)
            if pin is None or pin.source != "user":
                continue
            if rule.typed_only and not plan.when_given(rule, typed):
                continue
            given = {n: v for n, v in given_all.items() if n != target}
            # The facts nobody gave that the search may not choose (a model's shape) are read
            # at the values the answer names as ASSUMED: an adjustment the launcher makes for
            # the model's real head size fires for the assumed one, said as assumed, instead
            # of the request failing for every value the fact could have.
            if target not in assumed:
                assumed[target] = assumed_values(plan, given) or _assumed_before_adjusting(plan, pins, given)
            given.update(assumed[target])
            if not entailed(cp, given, sem.whens.get(rule.id)):
                continue
            if not violated(cp, {**given, target: pin.value}, rule.id):
                continue
            # A replacement must work under the launcher's defaults for the resources nobody
            # gave too (the search may not pick another -tp to make it work).
            replacement = next(
                (
                    w
                    for w in rule.adjust_to
                    if cp.satisfiable({**given, target: w}, task="adjusting a value") is not None
                ),
                None,
            )
            if replacement is None and rule.adjust_to:
                # The launcher sets its value whether or not the rest then works: the request
                # fails with it, it is not quietly left to the launcher's default.
                replacement = rule.adjust_to[0]
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


def _assumed_before_adjusting(
    plan: Plan, pins: Mapping[str, Pin], given: Mapping[str, Scalar]
) -> dict[str, Scalar]:
    """The facts assumed without the typed values that adjustments target (replaced ones included),
    for a request that holds no value of the facts with them all (`assumed_values` is then empty).

    Two typed values that each need their own adjustment leave nothing to assume, so an adjustment
    that reads an assumed fact could not fire and the other one chose its value against the first
    (V1520002-0173: FA3 typed on a B300 for Qwen3-Next's head size 256, and --block-size 256 under an
    fp8 cache: the block size took its list's first value and the request failed, where vLLM runs
    FA2 and raises the block to 1280). The model's facts do not follow the user's flags, so they are
    assumed from the rest of the request; empty when that does not decide them either."""
    targets = plan.adjust_targets
    rest = {n: v for n, v in given.items() if not (n in targets and n in pins and pins[n].source == "user")}
    return assumed_values(plan, rest) if len(rest) < len(given) else {}


def resource_defaults(plan: Plan, values: Mapping[str, Scalar]) -> dict[str, Scalar]:
    """The launcher's default (first value of its chain) of each unset option the search may not
    choose (`search = false`: the resources and the precision), as `launcher_view` takes them."""
    assigned = dict(values)
    out: dict[str, Scalar] = {}
    for name in plan.order:
        spec = plan.pack.fields[name]
        if name not in assigned and spec.kind == "option" and not spec.search:
            out[name] = assigned[name] = plan.chain(name, assigned)[0][0]
    return out


def entailed(cp: CompiledPack, pins: Mapping[str, Scalar], cond: Any) -> bool:
    if cond is None:
        return True
    known = cond.partial(pins)
    if known is not None:
        return bool(known)
    return cp.satisfiable(pins, extra=[cond.negated()], task="testing an adjustment") is None


def violated(cp: CompiledPack, pins: Mapping[str, Scalar], rule_id: str) -> bool:
    """Whether `pins` break the rule, read where its fields are not all given: the request fails
    with the rule and holds without it; or, when the request fails without it too (another rule
    refuses something else), the facts and the values of the fields the rule reads do so alone.
    The launcher fires an adjustment on the values the rule reads (vLLM lowers a typed FA4 to FA2
    for a head size its kernel lacks, whatever else then fails); its failure is the adjusted
    request's to explain, not a conflict with the adjusting rule (a FLASH_ATTN_DIFFKV request
    named `fa-large-heads-on-blackwell-is-fa2` and hid the block rule that refuses it)."""
    cond = cp.rules[rule_id].condition
    known = cond.partial(pins)
    if known is not None:
        return not known

    def broken(values: Mapping[str, Scalar]) -> bool | None:
        """True: fails with the rule, holds without it; False: holds; None: fails either way."""
        if cp.satisfiable(values, task="testing an adjustment") is not None:
            return False
        if cp.satisfiable(values, without_rules=[rule_id], task="testing an adjustment") is not None:
            return True
        return None

    found = broken(pins)
    if found is not None:
        return found
    fields = cp.pack.fields
    own = {n: v for n, v in pins.items() if n in cond.fields or fields[n].kind == "fact"}
    return len(own) < len(pins) and bool(broken(own))
