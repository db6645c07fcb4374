"""What to do about an impossible request, and which values are still open.

- `unsatisfiable_for`: the `Unsatisfiable` error with a preferred minimal conflict and ranked,
  verified repairs (each carries the full configuration it leads to);
- `repairs`: minimal sets of user pins to change (FastDiag's diagnoses, all of the smallest
  sizes) with, for each changed field, the values that work (RangeFix);
- `valid_choices`: for each option, the values still possible (exact: each is backed by a
  solution) and, for each excluded value, its minimal reason.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from solver.engine import CompiledPack
from solver.errors import InvalidInput, Unsatisfiable
from solver.explain import (
    Item,
    conflict_report,
    diagnoses,
    minimal_conflict,
    minimal_reason,
)
from solver.inputs import collect_pins
from solver.model import Pack, Pin, Repair, Scalar
from solver.opendomain import widened
from solver.resolution import ChainFailed, Plan, plan_for, resolve_pins
from solver.tracing import traced_base

__all__ = ["Choices", "chain_failure", "repairs", "unsatisfiable_for", "valid_choices"]

MAX_REPAIRS = 5
MAX_ALTERNATIVES_PER_FIELD = 3


def unsatisfiable_for(
    plan: Plan, pins: Mapping[str, Pin], adjustments: Mapping[str, tuple[Scalar, str]] | None = None,
    *, keep: Collection[str] = (),
) -> Unsatisfiable:
    """The error for a request with no solution: minimal conflict, repairs, and the text.
    `keep`: user pins the repairs leave alone when they can (see `repairs`)."""
    from solver.text import conflict_message

    found = minimal_conflict(plan.compiled, pins)
    core_pins, core_rules = found if found is not None else ([], [])
    report = conflict_report(plan.compiled, core_pins, core_rules)
    fixes = repairs(plan, pins, conflict=[p.field for p in core_pins] if found is not None else None,
                    keep=keep)
    message = conflict_message(plan, pins, report, fixes)
    exc = Unsatisfiable(report, fixes, message)
    exc.request = dict(pins)
    return exc


def repairs(plan: Plan, pins: Mapping[str, Pin], limit: int = MAX_REPAIRS,
            conflict: Sequence[str] | None = None, keep: Collection[str] = ()) -> list[Repair]:
    """Ranked repairs: fewest changed user pins first, then the least preference rank lost.

    `conflict`: the pins of a minimal conflict of this request, if known: every repair must
    change one of them, which spares the search for the sets of changes that do not.
    `keep`: user pins to leave alone (a configurator's choice just made, which a repair should not
    quietly take back): the repairs change only the other user pins, and only when no such repair
    exists are the kept pins changed too (`Repair.unset` / `.set` then name them)."""
    cp = plan.compiled
    known = [set(conflict)] if conflict is not None else []
    found: list[tuple[str, ...]] = []
    if keep:
        # Held like facts, the kept pins are never among the user pins a diagnosis removes.
        held = {n: p.model_copy(update={"source": "fact"}) if n in keep else p
                for n, p in pins.items()}
        found = diagnoses(cp, held, conflicts=known)
    if not found:
        found = diagnoses(cp, pins, conflicts=known)
    tier = "user"
    if not found:
        # No change of the user's own choices helps: say which facts would (a what-if).
        tier = "facts"
        as_user = {n: p.model_copy(update={"source": "user"}) for n, p in pins.items()}
        found = diagnoses(cp, as_user, max_size=2, conflicts=known)
    candidates: list[tuple[tuple[int, int, int], Repair]] = []
    for diagnosis in found:
        base = {n: p for n, p in pins.items() if n not in diagnosis}
        auto = _try_resolve(plan, base)
        if auto is None:
            continue
        alternatives: dict[str, list[Scalar]] = {}
        open_to = _Options(cp, {n: p.value for n, p in base.items()}, "looking for repairs")
        for name in diagnosis:
            ranked, _ = plan.ranking(name, auto)
            alternatives[name] = [v for v in ranked if open_to.witness(name, v, auto) is not None]
        if tier == "user":
            candidates.append(((len(diagnosis), 0, 0), Repair.model_construct(
                set={}, unset=list(diagnosis), values=auto, alternatives=alternatives,
                changes=len(diagnosis), rank_loss=0)))
        if len(diagnosis) != 1:
            continue
        name = diagnosis[0]
        best = auto[name]
        options = [v for v in alternatives[name] if tier == "facts" or v != best]
        for rank, value in enumerate(options[:MAX_ALTERNATIVES_PER_FIELD]):
            values = _try_resolve(plan, {**base, name: Pin(field=name, value=value,
                                                           source=pins[name].source)})
            if values is None:
                continue
            loss = alternatives[name].index(value)
            candidates.append(((1, loss, 1 + rank), Repair.model_construct(
                set={name: value}, unset=[], values=values, alternatives=alternatives,
                changes=1, rank_loss=loss)))
    candidates.sort(key=lambda c: c[0])
    return [repair for _, repair in candidates[:limit]]


class _Options:
    """Answers "can `name` be `value`?" for one set of other pins, one value at a time.

    The pins are propagated once, recording why each value goes (`solver.tracing`, whose states
    the explanations of excluded values reuse), which rules out most impossible values without a
    search; each remaining value is added to the engine's propagated state and searched from a
    known solution with the new value (often one already, or after a few changes nearby).
    """

    def __init__(self, cp: CompiledPack, pins: Mapping[str, Scalar], task: str) -> None:
        self.cp = cp
        self.task = task
        self.state = cp.start(pins)
        self.traced = traced_base(cp, pins)

    def witness(self, name: str, value: Scalar,
                near: Mapping[str, Scalar] | None = None) -> Mapping[str, Scalar] | None:
        """A solution with `name = value` (None if there is none); `near`: a solution to start from."""
        if (self.state is None or self.traced.failed is not None
                or value not in self.traced.domains[name]):
            return None
        # A solution of every rule within this state's domains solves the state: then only the
        # rules around what the new value narrows can break, and the repair looks only there.
        base = self.state.domains
        solves = near is not None and len(near) == len(base) and all(
            near[n] in values for n, values in base.items())
        changed: list[str] | None = [] if solves else None
        state = self.state.assign(name, value, changed)
        if state is None:
            return None
        return self.cp.search(state, task=f"{self.task} for {name}",
                              hint={**(near or {}), name: value}, around=changed)


def chain_failure(plan: Plan, pins: Mapping[str, Pin], failed: ChainFailed) -> Unsatisfiable:
    """Predict mode's error: the launcher's own default for a flag left unset fails.

    The conflict is taken over the request as the launcher sees it (what was given, its own
    earlier picks, its default here); the repairs say which flag to set, or which of the user's
    values to change, each verified by predicting again."""
    from solver.text import conflict_message, describe_pin

    pack = plan.pack
    name, default = failed.field, failed.chain[0]
    seen = dict(pins)
    for other, value in failed.decided.items():
        if other not in seen:
            option = pack.fields[other].kind == "option"
            seen[other] = Pin(field=other, value=value,
                              source="launcher-default" if option else "assumed")
    seen[name] = Pin(field=name, value=default, source="launcher-default")
    found = minimal_conflict(plan.compiled, seen)
    core_pins, core_rules = found if found is not None else ([], [])
    report = conflict_report(plan.compiled, core_pins, core_rules)
    ranked_fixes: list[tuple[tuple[bool, bool, int], Repair]] = []
    for pin in core_pins:
        if pin.source not in ("user", "adjusted", "launcher-default"):
            continue
        base = {n: p for n, p in pins.items() if n != pin.field}
        if pin.source != "launcher-default":
            values = _try_resolve(plan, base, predict=True)
            if values is not None:
                ranked_fixes.append(((True, False, 0), Repair.model_construct(
                    set={}, unset=[pin.field], values=values, changes=1, rank_loss=0)))
        ranked, _ = plan.ranking(pin.field, failed.decided)
        tried = worked = 0
        for value in ranked:
            if value == pin.value or (pin.field == name and value in failed.chain):
                continue
            if tried >= _SET_TRIALS or worked >= MAX_ALTERNATIVES_PER_FIELD:
                break
            tried += 1
            values = _try_resolve(plan, {**base, pin.field: Pin(field=pin.field, value=value,
                                                                  source="user")}, predict=True)
            if values is not None:
                worked += 1
                # Setting the flag whose default fails comes first: it is the direct answer.
                ranked_fixes.append(((pin.field != name, False, tried), Repair.model_construct(
                    set={pin.field: value}, unset=[], values=values, changes=1,
                    rank_loss=tried - 1)))
    ranked_fixes.sort(key=lambda item: item[0])
    fixes = [repair for _, repair in ranked_fixes]
    pref = failed.preference
    chain = " then ".join(str(v) for v in failed.chain)
    lead = (f"As typed, {pack.name} would fail: left unset, "
            f"{describe_pin(pack, name, default, 'user')} is its own default here"
            + (f" (preference {pref.id}: {pref.because}; it tries {chain})" if pref else "")
            + ", and it cannot hold with the rest of the request.")
    message = conflict_message(plan, pins, report, fixes[:MAX_REPAIRS], lead=lead)
    exc = Unsatisfiable(report, fixes[:MAX_REPAIRS], message, launcher_default={
        "field": name, "value": default, "chain": list(failed.chain),
        "preference": pref.id if pref else None})
    exc.request, exc.lead = dict(pins), lead
    return exc


# How many other values of a field a predict-mode repair tries (each is a full prediction).
_SET_TRIALS = 8


def _try_resolve(plan: Plan, pins: Mapping[str, Pin], *, predict: bool = False
                 ) -> dict[str, Scalar] | None:
    """Verify a repair by resolving it; None when it does not resolve."""
    try:
        res = resolve_pins(plan.pack, pins, reasons=False, explain_failure=False, predict=predict)
    except (Unsatisfiable, InvalidInput):
        return None
    return dict(res.values)


@dataclass
class Choices:
    """Per field: the values still possible, and for each excluded value a minimal reason."""

    possible: dict[str, list[Scalar]] = field(default_factory=dict)
    excluded: dict[str, dict[Scalar, list[Item]]] = field(default_factory=dict)
    # Open fields (`solver.opendomain`): the range beyond the values listed above, in words.
    # Those values were not tried; each is checked when a request names it.
    open: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, values in self.possible.items():
            excluded = {}
            for value, items in self.excluded.get(name, {}).items():
                excluded[_key(value)] = {
                    "pins": [{"field": i.name, "value": i.value, "source": i.source}
                             for i in items if i.kind == "pin"],
                    "rules": [i.name for i in items if i.kind == "rule"],
                }
            out[name] = {"possible": list(values), "excluded": excluded}
            if name in self.open:
                out[name]["open"] = self.open[name]
        return {"schema": 1, "status": "choices", "choices": out}


def _key(value: Scalar) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def valid_choices(
    pack: Pack,
    options: Any = None,
    facts: Any = None,
    *,
    fields: Sequence[str] | None = None,
    reasons: bool = True,
) -> Choices:
    """The values each option (or each of `fields`) can still take given the other inputs.

    Exact, not just arc-consistent: a value is possible only if a whole configuration has it. A
    field's own pin is left out when its choices are computed (they answer "what else could I set").
    """
    pins = collect_pins(pack, options, facts)
    pack = widened(pack, pins)
    plan = plan_for(pack)
    cp = plan.compiled
    names = list(fields) if fields is not None else pack.options
    unknown = [n for n in names if n not in pack.fields]
    if unknown:
        from solver.inputs import _unknown_field

        raise InvalidInput([_unknown_field(pack, n, None) for n in unknown])
    values = {n: p.value for n, p in pins.items()}
    sources = {n: p.source for n, p in pins.items()}
    out = Choices()
    # A solution that keeps every pin proves each of its values possible for every field at once,
    # so most values never need a query of their own.
    proven: dict[str, set[Scalar]] = {n: set() for n in pack.fields}

    def learn(witness: Mapping[str, Scalar]) -> None:
        if all(witness[n] == v for n, v in values.items()):
            for n, v in witness.items():
                proven[n].add(v)

    # The resolution of the request is a solution found by the ordered search, which is much
    # cheaper than a satisfiability search from nothing; an adjusted pin makes it no witness.
    # (When it does not resolve, even with adjustments, the pins as given have no solution.)
    first: Mapping[str, Scalar] | None = _try_resolve(plan, pins)
    if first is not None and any(first[n] != v for n, v in values.items()):
        first = cp.satisfiable(values, task="listing choices")
    if first is not None:
        learn(first)
    # The other inputs are the same for every field without a pin of its own: one base for them.
    bases: dict[str | None, _Options] = {}
    last: Mapping[str, Scalar] = first or {}
    for name in names:
        others = {n: v for n, v in values.items() if n != name}
        key = name if name in values else None
        if key not in bases:
            bases[key] = _Options(cp, others, "listing choices")
        possible: set[Scalar] = set(proven[name])
        for value in cp.domains[name]:
            if value in possible:
                continue
            witness = bases[key].witness(name, value, last)
            if witness is not None:
                possible.add(value)
                learn(witness)
                last = witness
        out.possible[name] = [v for v in cp.domains[name] if v in possible]
        opened = pack.fields[name].open
        if opened is not None:
            out.open[name] = opened.text()
        excluded = [v for v in cp.domains[name] if v not in possible]
        if reasons:
            out.excluded[name] = {
                v: minimal_reason(cp, name, v, others, sources,
                                  near=last or None) or []
                for v in excluded
            }
        else:
            out.excluded[name] = {v: [] for v in excluded}
    return out
