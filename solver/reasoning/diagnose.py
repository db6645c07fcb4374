"""What to do about an impossible request, and which values are still open.

- `unsatisfiable_for`: the `Unsatisfiable` error with a preferred minimal conflict and ranked,
  verified repairs (each carries the full configuration it leads to);
- `repairs`: minimal sets of user pins to change (FastDiag's diagnoses, all of the smallest
  sizes) with, for each changed field, the values that work (RangeFix);
- `valid_choices`: per option, the values still possible (each backed by a solution), why not the rest;
- `prepare_choices`: the work every later `valid_choices` on a pack starts from, done up front
  (a server calls it once when it loads a pack).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from solver.budget import Budget
from solver.engine.collector import fewer_collections
from solver.engine.csp import CompiledPack
from solver.engine.opendomain import query_pack
from solver.engine.supports import Keeping, PinSet, Supports, supports_for
from solver.engine.tracing import WithoutEach, traced_domains
from solver.errors import InvalidInput, Unsatisfiable
from solver.inputs.pins import collect_pins
from solver.model import AssumedRecord, Field, Pack, Pin, Repair, Scalar
from solver.reasoning.conflicts import (
    Item,
    Reasons,
    conflict_report,
    diagnoses,
    minimal_conflict,
)
from solver.reasoning.givenchoices import prepare_copies, typed_apart, typed_choices, warmed_query_pack
from solver.reasoning.givenrepairs import with_given_repairs
from solver.reasoning.guess import first_search
from solver.reasoning.plan import Plan, plan_for
from solver.reasoning.verify import as_typed, try_resolve
from solver.reasoning.witness import Witnesses, search_start, sweep, transplanted
from solver.values import show as _key

__all__ = [
    "Choices",
    "changes_setup",
    "nearest_first",
    "prepare_choices",
    "remember_solution",
    "repairs",
    "unsatisfiable_for",
    "valid_choices",
]

MAX_REPAIRS = 5
MAX_ALTERNATIVES_PER_FIELD = 3


def nearest_first(pack: Pack, pin: Pin, ranked: Sequence[Scalar]) -> list[Scalar]:
    """The values a repair offers for `pin`'s field, in the order it offers them: `ranked` (the
    preferences' order), except for a size the user typed (an option whose listed values are all
    numbers: a request cap, a batch, a page, a parallel size): nearest the typed value first, as
    a user who typed `--max-running-requests 300` wants the working size closest to it, not the
    first listed (the largest); of two as near, the smaller (it asks less of the machine); the
    value that spells the flag left out (`absent`, e.g. 0) last, since it is no size (dropping
    the flag is a repair of its own). A suggestion the user takes or not: nothing is set by it."""
    field = pack.fields[pin.field]
    typed = pin.value
    if pin.source != "user" or not _is_size(field) or not _is_number(typed):
        return list(ranked)
    sizes = [v for v in ranked if v != field.absent]
    # (`sorted` is stable: values equally near and equal keep the preferences' order.)
    nearest = sorted(sizes, key=lambda v: (abs(float(v) - float(typed)), float(v)))
    return nearest + [v for v in ranked if v == field.absent]


def changes_setup(pack: Pack, changed: Sequence[str]) -> bool:
    """Whether a repair changes a choice of the user's setup: an option the solver never picks
    (`search = false`) whose values are not sizes (a model's or cache's precision, a parallel
    layout or serving mode). Of repairs of one kind (dropping a flag, or typing another value)
    changing as many of the user's choices, those that keep these come first (each repair is a
    suggestion, the user's to take): FP8 weights refused with `--moe-runner-backend cutlass
    --ep-size 8` are repaired by the runner before the weights' precision (a1e60f3 offered "leave
    --quantization on auto" first, and `--quantization bitsandbytes` before another runner). A
    size (a request cap, a batch, a parallel size) is not one: lowering it is often the repair
    the refusing rule names, at the nearest size that fits (`nearest_first`)."""
    for name in changed:
        field = pack.fields[name]
        if field.kind == "option" and not field.search and not _is_size(field):
            return True
    return False


def _is_size(field: Field) -> bool:
    """Whether `field` is a size (`nearest_first`, `changes_setup`): an option whose listed values
    are all numbers."""
    return field.kind == "option" and bool(field.domain) and all(_is_number(v) for v in field.domain)


def _is_number(value: Scalar) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def unsatisfiable_for(
    plan: Plan,
    pins: Mapping[str, Pin],
    adjustments: Mapping[str, tuple[Scalar, str]] | None = None,
    *,
    keep: Collection[str] = (),
    repairs_given: Callable[[], list[Repair] | None] | None = None,
    predict: bool = False,
    with_repairs: bool = True,
) -> Unsatisfiable:
    """The error for a request with no solution: minimal conflict, repairs, and the text.
    `keep`: user pins the repairs leave alone when they can (see `repairs`). `repairs_given`:
    the result of `repairs(plan, pins, keep=keep)` computed elsewhere meanwhile (the configurator
    asks its helper process, beside the minimal conflict here), or None to compute them here.
    `predict`: the request was `check`'s, so each repair is one `check` accepts. `adjustments`:
    field -> (the user's value, rule) of the pins an adjustment replaced in `pins`; each repair is
    then checked on the request as typed (`_as_typed`). `with_repairs=False`: none searched
    (the conflict is the same: it is found before them)."""
    from solver.render.text import conflict_explained, conflict_message

    # (Young collections made rare for the call, put back after it: `solver.engine.collector`;
    # at 5,000 synthetic fields an explain made ~500 young and two full collections.)
    with fewer_collections():
        solved: dict[str, Scalar] = {}  # (the rest of the request solved: where the repairs start)
        found = minimal_conflict(plan.compiled, pins, solved=solved)
        core_pins, core_rules = found if found is not None else ([], [])
        report = conflict_report(plan.compiled, core_pins, core_rules)
        fixes: list[Repair] | None = None  # (None: not searched, `with_repairs=False`)
        if with_repairs:
            fixes = repairs_given() if repairs_given is not None else None
            if fixes is None:
                hint = [p.field for p in core_pins] if found is not None else None
                fixes = repairs(plan, pins, conflict=hint, keep=keep, start=solved, predict=predict)
            if adjustments:
                fixes = as_typed(plan, pins, adjustments, fixes, predict)
            fixes = with_given_repairs(
                fixes, plan, pins, adjustments, found, keep, predict, limit=MAX_REPAIRS
            )
        explained = conflict_explained(plan, pins, report, adjusted=adjustments)
        message = conflict_message(plan, pins, report, fixes, adjusted=adjustments, explained=explained)
    exc = Unsatisfiable(report, fixes, message, repairs_searched=with_repairs)
    exc.request = dict(pins)
    exc.adjusted = dict(adjustments or {})
    exc.explained = (plan.pack.digest, explained)
    return exc


def repairs(
    plan: Plan,
    pins: Mapping[str, Pin],
    limit: int = MAX_REPAIRS,
    conflict: Sequence[str] | None = None,
    keep: Collection[str] = (),
    start: Mapping[str, Scalar] | None = None,
    predict: bool = False,
) -> list[Repair]:
    """Ranked repairs: fewest changed user pins first, then the least preference rank lost.
    `predict`: each verified as `check` (the launcher's own defaults for what it unsets).

    `conflict`: the pins of a minimal conflict of this request, if known: every repair must
    change one of them, which spares the search for the sets of changes that do not.
    `keep`: user pins to leave alone (a configurator's choice just made, which a repair should not
    quietly take back): the repairs change only the other user pins, and only when no such repair
    exists are the kept pins changed too (`Repair.unset` / `.set` then name them). `start`: values
    that solve most of the request (`minimal_conflict`'s `solved`), where the searches start."""
    with fewer_collections():  # (as `unsatisfiable_for`'s; a server's helper asks this alone)
        return _repairs(plan, pins, limit, conflict, keep, start, predict)


def _repairs(
    plan: Plan,
    pins: Mapping[str, Pin],
    limit: int,
    conflict: Sequence[str] | None,
    keep: Collection[str],
    start: Mapping[str, Scalar] | None,
    predict: bool = False,
) -> list[Repair]:
    cp = plan.compiled
    known = [set(conflict)] if conflict is not None else []
    found: list[tuple[str, ...]] = []
    # The solution that proved each diagnosis: its verification starts from it (a search of the
    # whole pack fewer per repair).
    proofs: dict[tuple[str, ...], Mapping[str, Scalar]] = {}
    if keep:
        # Held like facts, the kept pins are never among the user pins a diagnosis removes.
        held = {n: p.model_copy(update={"source": "fact"}) if n in keep else p for n, p in pins.items()}
        found = diagnoses(cp, held, conflicts=known, witnesses=proofs, hint=start)
    if not found:
        found = diagnoses(cp, pins, conflicts=known, witnesses=proofs, hint=start)
    tier = "user"
    if not found:
        # No change of the user's own choices helps: say which facts would (a what-if).
        tier = "facts"
        as_user = {n: p.model_copy(update={"source": "user"}) for n, p in pins.items()}
        found = diagnoses(cp, as_user, max_size=2, conflicts=known, witnesses=proofs, hint=start)
    # Ranked by: fewest changes; dropping a flag before typing another value; keeping the user's
    # precision and layout (`changes_setup`); the least preference rank lost. Each is verified by
    # a full resolution only when the ranking reaches it (`_verified_first`): the diagnoses of one
    # flag are verified dropped first, since their values are ranked after that answer.
    candidates: list[_Candidate] = []
    for at, diagnosis in enumerate(found):
        base = {n: p for n, p in pins.items() if n not in diagnosis}
        setup = changes_setup(plan.pack, diagnosis)
        if len(diagnosis) != 1:
            if tier == "user":  # (dropped only: with the facts, a change of several is none)
                dropped = partial(_dropped, plan, pins, diagnosis, base, proofs.get(diagnosis), predict)
                candidates.append(((len(diagnosis), 0, setup, 0, 0), (at, 0), dropped))
            continue
        # (Only values are read: no departures, half of a verification on a large pack.)
        auto = try_resolve(plan, base, departures=False, witness=proofs.get(diagnosis), predict=predict)
        # (Unset, a field can fail where a value set for it works: one the search may not choose,
        # or a fact the search picks before a model trait it cannot pick fails its assumed value.)
        alternatives, witnesses = _alternatives(plan, pins, diagnosis, base, auto)
        if tier == "user" and auto is not None:
            repair = Repair.model_construct(
                set={}, unset=list(diagnosis), values=auto, alternatives=alternatives, changes=1, rank_loss=0
            )
            candidates.append(((1, 0, setup, 0, 0), (at, 0), repair))
        name = diagnosis[0]
        best = auto[name] if auto is not None else None
        options = [v for v in alternatives[name] if tier == "facts" or v != best]
        for rank, value in enumerate(options[:MAX_ALTERNATIVES_PER_FIELD]):
            request = {**base, name: Pin(field=name, value=value, source=pins[name].source)}
            loss = alternatives[name].index(value)
            typed = partial(
                _typed, plan, request, name, value, alternatives, loss, witnesses[name, value], predict
            )
            candidates.append(((1, 1, setup, loss, 1 + rank), (at, 1 + rank), typed))
    return _verified_first(candidates, limit)


# A repair of `_repairs` before it is verified: its rank (fewest changes, dropping before typing,
# keeping the user's setup, the least preference rank lost, the value's place), its place among
# those of that rank (the diagnosis's, then dropping before each value), and the repair (verified
# already) or what verifies it (None: it does not resolve).
_Candidate = tuple[tuple[int, int, bool, int, int], tuple[int, int], "Repair | Callable[[], Repair | None]"]


def _verified_first(candidates: list[_Candidate], limit: int) -> list[Repair]:
    """The first `limit` of `candidates` in their rank that resolve, each verified only when
    reached: the same repairs as verifying every one and sorting them, without the resolutions
    of those ranked after (a-m12-cutlass-fp8-ep: 4 of 9, each ~1 ms)."""
    out: list[Repair] = []
    for _, _, repair in sorted(candidates, key=lambda candidate: candidate[:2]):
        if len(out) >= limit:
            break
        made = repair if isinstance(repair, Repair) else repair()
        if made is not None:
            out.append(made)
    return out


def _alternatives(
    plan: Plan,
    pins: Mapping[str, Pin],
    diagnosis: tuple[str, ...],
    base: Mapping[str, Pin],
    auto: Mapping[str, Scalar] | None,
) -> tuple[dict[str, list[Scalar]], dict[tuple[str, Scalar], Mapping[str, Scalar]]]:
    """Per field of `diagnosis`, the values some configuration keeps with the rest of the request
    (`base`), in the order a repair offers them (`nearest_first` of the ranking given `auto`, the
    request's answer with the diagnosis dropped, else `base`), and the solution that shows each."""
    alternatives: dict[str, list[Scalar]] = {}
    given = {n: p.value for n, p in base.items()}
    open_to = Witnesses(plan.compiled, given, "looking for repairs")
    witnesses: dict[tuple[str, Scalar], Mapping[str, Scalar]] = {}
    for name in diagnosis:
        ranked = nearest_first(plan.pack, pins[name], plan.ranking(name, auto or given)[0])
        alternatives[name] = []
        for v in ranked:
            proof = open_to.witness(name, v, auto)
            if proof is not None:
                alternatives[name].append(v)
                witnesses[name, v] = proof
    return alternatives, witnesses


def _dropped(
    plan: Plan,
    pins: Mapping[str, Pin],
    diagnosis: tuple[str, ...],
    base: Mapping[str, Pin],
    proof: Mapping[str, Scalar] | None,
    predict: bool,
) -> Repair | None:
    """The repair that drops every flag of `diagnosis` (several), verified; None if it fails."""
    auto = try_resolve(plan, base, departures=False, witness=proof, predict=predict)
    if auto is None:
        return None
    alternatives, _ = _alternatives(plan, pins, diagnosis, base, auto)
    return Repair.model_construct(
        set={},
        unset=list(diagnosis),
        values=auto,
        alternatives=alternatives,
        changes=len(diagnosis),
        rank_loss=0,
    )


def _typed(
    plan: Plan,
    request: Mapping[str, Pin],
    name: str,
    value: Scalar,
    alternatives: dict[str, list[Scalar]],
    loss: int,
    witness: Mapping[str, Scalar],
    predict: bool,
) -> Repair | None:
    """The repair that types `value` for `name` (`request`), verified; None if it fails."""
    values = try_resolve(plan, request, witness=witness, departures=False, predict=predict)
    if values is None:
        return None
    return Repair.model_construct(
        set={name: value}, unset=[], values=values, alternatives=alternatives, changes=1, rank_loss=loss
    )


@dataclass
class Choices:
    """Per field: the values still possible, and for each excluded value a minimal reason."""

    possible: dict[str, list[Scalar]] = field(default_factory=dict)
    excluded: dict[str, dict[Scalar, list[Item]]] = field(default_factory=dict)
    # Open fields (`solver.engine.opendomain`): the range beyond the values listed above, in words.
    # Those values were not tried; each is checked when a request names it.
    open: dict[str, str] = field(default_factory=dict)
    # Possible values that a warn rule flags given the other inputs (the launcher accepts them
    # and they are expected to fail): value -> the warn rules' ids, in declaration order.
    warned: dict[str, dict[Scalar, list[str]]] = field(default_factory=dict)
    # The facts nobody gave that these choices take as the resolution assumes them (pinned,
    # source `assumed`: `solver.reasoning.assumedchoices`); empty when every value of them counts.
    assumed: list[AssumedRecord] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, values in self.possible.items():
            excluded = {}
            for value, items in self.excluded.get(name, {}).items():
                excluded[_key(value)] = {
                    "pins": [
                        {"field": i.name, "value": i.value, "source": i.source}
                        for i in items
                        if i.kind == "pin"
                    ],
                    "rules": [i.name for i in items if i.kind == "rule"],
                }
            warned = {_key(v): {"rules": list(rules)} for v, rules in self.warned.get(name, {}).items()}
            out[name] = {"possible": list(values), "excluded": excluded, "warned": warned}
            if name in self.open:
                out[name]["open"] = self.open[name]
        doc: dict[str, Any] = {"schema": 1, "status": "choices", "choices": out}
        if self.assumed:
            doc["assumed"] = [a.model_dump(mode="json") for a in self.assumed]
        return doc


def valid_choices(
    pack: Pack,
    options: Any = None,
    facts: Any = None,
    *,
    fields: Sequence[str] | None = None,
    reasons: bool = True,
    budget: Budget | None = None,
) -> Choices:
    """The values each option (or each of `fields`) can still take given the other inputs.

    Exact, not just arc-consistent: a value is possible only if a whole configuration has it. A
    field's own pin is left out when its choices are computed (they answer "what else could I set").
    `budget`: the search steps the call may spend (see `solver.budget`).
    """
    pins = collect_pins(pack, options, facts)
    names = list(fields) if fields is not None else pack.options
    ask = partial(_request_choices, reasons=reasons, budget=budget)
    # (Young collections made rare for the call, put back after it: `solver.engine.collector`.)
    with fewer_collections():
        if apart := typed_apart(pack, pins, names):  # picking one types it: solver.reasoning.givenchoices
            return typed_choices(ask, pack, pins, names, apart)
        return ask(pack, pins, names)


def _request_choices(
    pack: Pack,
    pins: Mapping[str, Pin],
    names: Sequence[str],
    *,
    reasons: bool,
    budget: Budget | None,
    keep: Collection[str] = (),
) -> Choices:
    """`valid_choices` of the request as it is (what it gives, given; see `typed_choices`)."""
    pack = warmed_query_pack(pack, pins)  # its copy of the pack starts from the pack's solutions
    plan = plan_for(pack).within(budget)
    cp = plan.compiled
    unknown = [n for n in names if n not in pack.fields]
    if unknown:
        from solver.inputs.pins import _unknown_field

        raise InvalidInput([_unknown_field(pack, n, None) for n in unknown])
    values = {n: p.value for n, p in pins.items()}
    sources = {n: p.source for n, p in pins.items()}
    out = Choices()
    # Every solution met so far on this compiled pack (by earlier questions too) proves each of
    # its values possible for every request whose pins it keeps (`solver.engine.supports`); only the
    # values none of them proves, and no earlier refutation excludes, are searched for.
    supports = supports_for(cp)
    if not supports.keeping(values)[1]:
        # A solution of the pins, searched from the guess at their resolution (a resolution's
        # first step, without its decisions: any solution proves its values, and none means the
        # pins as given have none, as a resolution that needed adjustments would say).
        first = first_search(plan, values, task="listing choices")[1]
        if first is not None:
            supports.add(first)
    # The other inputs are the same for every field without a pin of its own: one base for them.
    bases: dict[str | None, Witnesses] = {}
    settled: dict[str | None, dict[str, Scalar]] = {}  # the other inputs and what they force
    explain: dict[str | None, Reasons] = {}  # why values are excluded under the other inputs
    # The other inputs as refutations are kept under them: all the pins made once, each pinned
    # option's as that set less its own pin (a set difference in C, where a set made of the
    # other pins was a pass over ~475 pins per option at 5,000 synthetic fields; the stored
    # solutions that keep them are found from it as well).
    all_pins = supports.pin_set(values)
    unders: dict[str | None, PinSet] = {None: all_pins}
    last: Mapping[str, Scalar] | None = supports.last
    found_under: object = _UNKNOWN  # the key `last` was found under
    # With several options pinned, the bases' states (every pin but one option's) are made by
    # halves from the pins of the fields not asked about (`WithoutEach`), which the base without
    # (the sweep's, every pin) starts from too.
    halves = WithoutEach(cp, values, names) if sum(1 for n in names if n in values) > 1 else None
    swept = sweep(cp, supports, bases, [n for n in names if n not in values], values, keep, all_pins)
    # What the stored solutions and refutations say under all the pins, for the fields without
    # one (most of them): taken once and brought up to date with each witness stored, instead of
    # a pass over every pin per field.
    keeping_all: Keeping | None = None
    refuted_all = supports.refuted(all_pins)
    for name in names:
        key = name if name in values else None
        others = values if key is None else {n: v for n, v in values.items() if n != name}
        domain = cp.domains[name]
        if key is None:
            if keeping_all is None or keeping_all[0] != supports.generation:
                keeping_all = supports.keeping(all_pins)
            keeping = keeping_all
        else:
            if key not in unders:
                unders[key] = all_pins.difference(((name, supports.tag(values[name])),))
            keeping = supports.keeping(unders[key])
        possible = set(supports.proven(name, domain, keeping)) | swept.get(name, set())
        refuted: set[tuple[str, Any]] = set()
        if len(possible) < len(domain):
            last = _start(supports, keeping, last, found_under, key)
            refuted = refuted_all if key is None else supports.refuted(unders[key])
        for value in domain:
            if value in possible or (refuted and (name, supports.tag(value)) in refuted):
                continue
            if key not in bases:
                # (Its `near`s are stored solutions and witnesses: solutions of every rule. A
                # state of `halves` is this option's alone: its witnesses work on it, no copy.)
                traced = None if halves is None or key is None else halves(key)
                bases[key] = Witnesses(
                    cp, others, "listing choices", traced, mend_first=True, owned=traced is not None
                )
            # First a known solution with the value put in and the rules it breaks mended; else
            # a search that starts from a known solution with the value (a model that alone
            # takes some backend is found again, not searched for).
            witness = bases[key].witness(
                name,
                value,
                last,
                then=partial(search_start, supports, values, name, value, last),
                keeps=found_under is None or found_under == key,
                stored=partial(transplanted, cp, supports, others, name, value),
            )
            if witness is None:
                supports.refute(unders[key], name, value)
                continue
            possible.add(value)
            row = supports.added(witness)
            if key is None and keeping_all is not None:
                keeping_all = supports.joined(keeping_all, row)
            last, found_under = witness, key
        out.possible[name] = [v for v in domain if v in possible]
        if plan.warn_rules.get(name):
            # (What the other inputs force, for the warn rules to read: none to read, no
            # propagation per pinned option asked about.)
            if key not in settled:
                settled[key] = plan.settled(others)
            out.warned[name] = plan.warned(name, settled[key], out.possible[name])
        else:
            out.warned[name] = {}
        opened = pack.fields[name].open
        if opened is not None:
            out.open[name] = opened.text()
        excluded = [v for v in domain if v not in possible]
        if reasons and excluded:
            if key not in explain:
                # (The domains of the other inputs, as the witnesses' state has them: see `Reasons`.)
                known = bases[key].traced if key in bases else None
                domains = known.domains if known is not None and known.failed is None else None
                explain[key] = Reasons(cp, others, sources, domains=domains)
            why = explain[key].why
            out.excluded[name] = {v: why(name, v, near=last or None) or [] for v in excluded}
        else:
            out.excluded[name] = {v: [] for v in excluded}
    return out


_UNKNOWN = object()


def _start(
    supports: Supports,
    keeping: Keeping,
    last: Mapping[str, Scalar] | None,
    found_under: object,
    key: str | None,
) -> Mapping[str, Scalar] | None:
    """Where a field's witnesses start: the last witness when it keeps the field's other inputs
    (found under all the pins, or under the same ones), else the first stored solution that
    does. (The last one mended in is stored as its changes: `solver.engine.localsearch.Mended`.)"""
    if found_under is None or found_under == key:
        return last
    return supports.example(keeping) or last


def remember_solution(pack: Pack, pins: Mapping[str, Pin], values: Mapping[str, Scalar]) -> bool:
    """Keep a complete configuration met elsewhere (a resolution of `pins`, which holds every
    hard rule) as a known solution for later `valid_choices` on the same request: a server that
    has just resolved a click's request then lists its choices without resolving it again.
    False when it was known already."""
    return supports_for(plan_for(query_pack(pack, pins)).compiled).add(values)


def prepare_choices(pack: Pack) -> int:
    """Find a solution for every value of every field with no input, once per compiled pack.

    The solutions are kept with the compiled pack (`solver.engine.supports`), where every later
    `valid_choices` on the same pack starts from them: a page that opens with no input, then adds
    one pin per click, mostly asks what they answer already. Safe to call again (it is then
    quick) and from several threads. Returns how many solutions are kept.

    It leaves the garbage collector alone: a library must not freeze its host's heap. A server
    that owns its process does that after it (`solver.serve.api.prepare`).
    """
    plan = plan_for(pack)
    valid_choices(pack, fields=list(pack.fields), reasons=False)
    prepare_copies(pack)  # and the copies a request typing one field a rule asks about works on
    for name, value in _first_clicks(pack, plan.compiled):
        traced_domains(plan.compiled, {name: value})
    return supports_for(plan.compiled).size


# A page's first click is mostly one searched fact (the platform, the GPU). The traced state of
# each of their values is what that question lists and explains its choices from, and what every
# later click's state starts from (`traced_domains`); made first there, it was about a fifth of
# the question (its verdict tables too). `prepare_choices` makes at most this many (a compiled
# pack keeps 32 traced states: `solver.engine.tracing`).
_FIRST_CLICKS = 24


def _first_clicks(pack: Pack, cp: CompiledPack) -> list[tuple[str, Scalar]]:
    """The searched facts' values, fact by fact in pack order, while they fit in `_FIRST_CLICKS`."""
    out: list[tuple[str, Scalar]] = []
    for name, spec in pack.fields.items():
        values = cp.domains.get(name, ())
        if spec.kind == "fact" and spec.search and len(out) + len(values) <= _FIRST_CLICKS:
            out += [(name, value) for value in values]
    return out
