"""What to do about an impossible request, and which values are still open.

- `unsatisfiable_for`: the `Unsatisfiable` error with a preferred minimal conflict and ranked,
  verified repairs (each carries the full configuration it leads to);
- `repairs`: minimal sets of user pins to change (FastDiag's diagnoses, all of the smallest
  sizes) with, for each changed field, the values that work (RangeFix);
- `valid_choices`: for each option, the values still possible (exact: each is backed by a
  solution) and, for each excluded value, its minimal reason;
- `prepare_choices`: the work every later `valid_choices` on a pack starts from, done up front
  (a server calls it once when it loads a pack).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
from solver.resolution import Plan, plan_for, resolve_pins
from solver.supports import Supports, supports_for
from solver.tracing import traced_base

__all__ = ["Choices", "prepare_choices", "repairs", "unsatisfiable_for", "valid_choices"]

MAX_REPAIRS = 5
MAX_ALTERNATIVES_PER_FIELD = 3


def unsatisfiable_for(
    plan: Plan, pins: Mapping[str, Pin], adjustments: Mapping[str, tuple[Scalar, str]] | None = None
) -> Unsatisfiable:
    """The error for a request with no solution: minimal conflict, repairs, and the text."""
    from solver.text import conflict_message

    found = minimal_conflict(plan.compiled, pins)
    core_pins, core_rules = found if found is not None else ([], [])
    report = conflict_report(plan.compiled, core_pins, core_rules)
    fixes = repairs(plan, pins, conflict=[p.field for p in core_pins] if found is not None else None)
    message = conflict_message(plan, pins, report, fixes)
    return Unsatisfiable(report, fixes, message)


def repairs(plan: Plan, pins: Mapping[str, Pin], limit: int = MAX_REPAIRS,
            conflict: Sequence[str] | None = None) -> list[Repair]:
    """Ranked repairs: fewest changed user pins first, then the least preference rank lost.

    `conflict`: the pins of a minimal conflict of this request, if known: every repair must
    change one of them, which spares the search for the sets of changes that do not."""
    cp = plan.compiled
    known = [set(conflict)] if conflict is not None else []
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

    def witness(self, name: str, value: Scalar, near: Mapping[str, Scalar] | None = None,
                then: Mapping[str, Scalar] | None = None) -> Mapping[str, Scalar] | None:
        """A solution with `name = value` (None if there is none); `near`: a solution to start
        from; `then`: a solution (of fewer pins) to search from when mending `near` fails."""
        if (self.state is None or self.traced.failed is not None
                or value not in self.traced.domains[name]):
            return None
        # A solution of every rule within this state's domains solves the state: then only the
        # rules around what the new value narrows can break, and the repair looks only there.
        base = self.state.domains
        solves = near is not None and len(near) == len(base) and all(
            near[n] in values for n, values in base.items())
        if solves and near is not None:
            mended = self.cp.mend(self.state, near, name, value)
            if mended is not None:
                return mended
        if then is not None:
            near, solves = then, False
        changed: list[str] | None = [] if solves else None
        state = self.state.assign(name, value, changed)
        if state is None:
            return None
        return self.cp.search(state, task=f"{self.task} for {name}",
                              hint={**(near or {}), name: value}, around=changed)


def _unproven(cp: CompiledPack, supports: Supports, names: Sequence[str],
              values: Mapping[str, Scalar], name: str, value: Scalar) -> dict[str, Scalar]:
    """For the fields after `name` without a pin: a value no known solution of `values` proves
    yet (`value` itself where a field takes it: fields of one domain tend to go together)."""
    keeping = supports.keeping(values)
    out: dict[str, Scalar] = {}
    for other in names[names.index(name) + 1:]:
        if other in values:
            continue
        domain = cp.domains[other]
        proven = set(supports.proven(other, domain, keeping))
        if len(proven) == len(domain):
            continue
        same = [v for v in domain if v == value and type(v) is type(value) and v not in proven]
        out[other] = same[0] if same else next(v for v in domain if v not in proven)
    return out


def _try_resolve(plan: Plan, pins: Mapping[str, Pin]) -> dict[str, Scalar] | None:
    """Verify a repair by resolving it; None when it does not resolve."""
    try:
        res = resolve_pins(plan.pack, pins, reasons=False, explain_failure=False)
    except (Unsatisfiable, InvalidInput):
        return None
    return dict(res.values)


@dataclass
class Choices:
    """Per field: the values still possible, and for each excluded value a minimal reason."""

    possible: dict[str, list[Scalar]] = field(default_factory=dict)
    excluded: dict[str, dict[Scalar, list[Item]]] = field(default_factory=dict)

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
    # Every solution met so far on this compiled pack (by earlier questions too) proves each of
    # its values possible for every request whose pins it keeps (`solver.supports`); only the
    # values none of them proves, and no earlier refutation excludes, are searched for.
    supports = supports_for(cp)
    if not supports.keeping(values)[1]:
        # The resolution of the request is a solution found by the ordered search, which is much
        # cheaper than a satisfiability search from nothing; an adjusted pin makes it no witness.
        # (When it does not resolve, even with adjustments, the pins as given have no solution.)
        first: Mapping[str, Scalar] | None = _try_resolve(plan, pins)
        if first is not None and any(first[n] != v for n, v in values.items()):
            first = cp.satisfiable(values, task="listing choices")
        if first is not None:
            supports.add(first)
    # The other inputs are the same for every field without a pin of its own: one base for them.
    bases: dict[str | None, _Options] = {}
    last: Mapping[str, Scalar] | None = supports.last
    for name in names:
        others = {n: v for n, v in values.items() if n != name}
        key = name if name in values else None
        domain = cp.domains[name]
        keeping = supports.keeping(others)
        possible = set(supports.proven(name, domain, keeping))
        last = supports.example(keeping) or last
        refuted = supports.refuted(others) if len(possible) < len(domain) else set()
        for value in domain:
            if value in possible or (name, supports.tag(value)) in refuted:
                continue
            if key not in bases:
                bases[key] = _Options(cp, others, "listing choices")
            # First a known solution with the value put in and the rules it breaks mended; else
            # a search that starts from a known solution with the value (a model that alone
            # takes some backend is found again, not searched for) and tries first the values
            # of later fields that nothing proves yet, so one search proves several of them.
            start = supports.closest(name, value, others) or last or {}
            witness = bases[key].witness(name, value, last, then={
                **start, **_unproven(cp, supports, names, values, name, value)})
            if witness is None:
                supports.refute(others, name, value)
                continue
            possible.add(value)
            supports.add(witness)
            last = witness
        out.possible[name] = [v for v in domain if v in possible]
        excluded = [v for v in domain if v not in possible]
        if reasons:
            out.excluded[name] = {
                v: minimal_reason(cp, name, v, others, sources,
                                  near=last or None) or []
                for v in excluded
            }
        else:
            out.excluded[name] = {v: [] for v in excluded}
    return out


def prepare_choices(pack: Pack) -> int:
    """Find a solution for every value of every field with no input, once per compiled pack.

    The solutions are kept with the compiled pack (`solver.supports`), where every later
    `valid_choices` on the same pack starts from them: a page that opens with no input, then adds
    one pin per click, mostly asks what they answer already. Safe to call again (it is then
    quick) and from several threads. Returns how many solutions are kept.
    """
    plan = plan_for(pack)
    valid_choices(pack, fields=list(pack.fields), reasons=False)
    return supports_for(plan.compiled).size
