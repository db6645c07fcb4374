"""A decided request written up as a `Resolution` (`resolve_planned`): each field's provenance (who
decided it and why, the preferred values rejected with their minimal reasons), the adjustments,
the warnings, the facts assumed, and where the search departs from the launcher's own picks.

`resolve_unexplained` is resolution without the diagnosis of a failure (a bare `Unsatisfiable`):
what verifying a repair needs, so that `solver.reasoning.diagnose` does not import the resolver
that imports it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from solver import frozen
from solver.budget import Budget
from solver.engine.csp import SearchTrace
from solver.engine.opendomain import query_pack
from solver.errors import Unsatisfiable
from solver.inputs.flagwords import flag_words
from solver.model import (
    AdjustmentRecord,
    AssumedRecord,
    DepartureRecord,
    Pack,
    Pin,
    Preference,
    Provenance,
    ProvenanceKind,
    Rejection,
    Resolution,
    Scalar,
    WarningRecord,
    given_key,
    given_marks,
)
from solver.pack.loader import semantics
from solver.reasoning.decide import (
    ChainFailed,
    RequestFails,
    Settled,
    Untypable,
    apply_adjustments,
    bare_conflict,
    settle,
)
from solver.reasoning.departures import (
    LauncherPicks,
    asks_unset,
    departed_fields,
    departures_of,
    launcher_picks,
    refusal_possible,
    typed_refusals,
)
from solver.reasoning.forcing import FactsAlone, deeply_forced, facts_alone, facts_force, forcing_rules
from solver.reasoning.guess import first_search, follows_chain
from solver.reasoning.plan import Plan, plan_for
from solver.reasoning.required import check_required
from solver.values import show as _show

__all__ = ["decided_values", "resolve_planned", "resolve_unexplained", "resolved_values"]

_Values = Mapping[str, Scalar]
_Pins = Mapping[str, Pin]

_FACT_DEFAULT = "not given; the first value of its domain — set it if it differs"
_ASSUMED_WITH = "not given; the value the rest of the answer leaves it — set it if it differs"
# A fact `settle` assumed before the options (`assume.assumed_first`): its chain failed under
# their first picks, and the options were then decided around it. Its chain under the final
# picks may read another value (tests/test_laws_trust.py,
# `test_a_fact_assumed_first_says_so`): "the value the rest of the answer leaves it" was not so.
_ASSUMED_FIRST = (
    "not given; assumed before the options were decided (under their first picks no value of its"
    " default chain worked): the first value of that chain the request allows — set it if it differs"
)
_ASSUMED_FIRST_FORCED = (
    "not given; assumed before the options were decided (under their first picks no value of its"
    " default chain worked): the one value the facts then decided leave it — set it if it differs"
)


def assumed_facts(
    plan: Plan, pins: Mapping[str, Pin], solution: Mapping[str, Scalar], provenance: Mapping[str, Provenance]
) -> list[AssumedRecord]:
    """Facts nobody gave that a preference or the domain's order filled (not those the rules
    force: those follow from what was given)."""
    out = []
    for name, spec in plan.pack.fields.items():
        prov = provenance[name]
        if spec.kind != "fact" or name in pins or prov.kind not in ("preference", "default"):
            continue
        out.append(AssumedRecord(field=name, value=solution[name], because=prov.because or ""))
    return out


def provenance_of(
    plan: Plan,
    name: str,
    solution: Mapping[str, Scalar],
    pins: Mapping[str, Pin],
    adjustments: Mapping[str, tuple[Scalar, str]],
    trace: SearchTrace,
    log: Mapping[str, tuple[list[Scalar], dict[Scalar, Preference]]],
    reasons: bool,
    predict: bool = False,
    marks: Mapping[str, bool] | None = None,
    alone: FactsAlone | None = None,
    first: Mapping[str, str] | None = None,
) -> Provenance:
    """Who decided `name` and why. `marks`: `given_marks(pins)`, when the caller asks for every
    field of one request (made here otherwise). `alone`: `facts_alone(plan, pins)`, when the
    caller has it. `first`: the facts `settle` assumed before the options, each with the text
    that says so (`resolve_planned`)."""
    pack = plan.pack
    if name in adjustments:
        rule = pack.rule(adjustments[name][1])
        return Provenance(kind="adjusted", source="user", rule=rule.id, because=rule.because, rejected=[])
    pin = pins.get(name)
    if pin is not None:
        kind: ProvenanceKind = "user" if pin.source == "user" else "fact"
        return Provenance(kind=kind, source=pin.source, rule=None, because=None, rejected=[])
    value = solution[name]
    field = pack.fields[name]
    if marks is None:
        marks = given_marks(pins)
    narrowed = len(trace.domains.get(name, ())) <= 1
    if narrowed and field.kind != "fact":
        return _said_forced(plan, name, solution)
    if field.kind == "fact" and facts_force(plan, name, solution, pins, alone=alone):
        # A fact the facts decide is the rules' doing, whether or not propagation left it one
        # value at its turn: propagation does not narrow through a rule over many fields
        # (arch-deepseek-is-mla's seven), so the architecture's `not is_hybrid` was decided as
        # its chain's first value and said ASSUMED ("first value that works"), though the
        # model decides it. Propagation from the facts alone goes through the options they
        # force (`facts_force` reads an option nobody typed at the values it leaves).
        return _said_forced(plan, name, solution)
    if narrowed:
        # An unset fact the search may not choose, narrowed only through the user's options
        # (a kernel flag that needs a dense model): the flags never decide a fact, so it is
        # the chain's assumption (the decisions fail otherwise), said under ASSUMED. So is a
        # fact the search chooses that options nobody typed narrowed (a launcher default
        # that needs the fact at one value): the answer holds only if the fact is so.
        # The chain is read as `_decide` read it, with the fields before this one: read with
        # the whole answer, a preference whose `when` reads the fact itself (`f2 == true`)
        # applied, and was named as the reason for a value a rule forced.
        chain, pref = plan.chain(name, _read_before(plan, name, solution, pins, marks))
        if value != chain[0]:  # (a fact assumed first, `settle`, or an option, made it so)
            because = (first or {}).get(name, _ASSUMED_WITH)
            return Provenance(kind="default", source=None, rule=None, because=because, rejected=[])
        if pref is not None:
            return Provenance(kind="preference", source=None, rule=pref.id, because=pref.because, rejected=[])
        return Provenance(kind="default", source=None, rule=None, because=_FACT_DEFAULT, rejected=[])
    ranked, origin = log.get(name, ([value], {}))
    at = ranked.index(value) if value in ranked else 0
    rejected = [_rejection(plan, name, v, solution, pins, reasons) for v in ranked[:at]] if at else []
    chained = follows_chain(field, predict)  # the launcher's chain, or a fact's assumed default
    if not chained:
        flagged = _flagged_rejections(
            plan,
            name,
            value,
            solution,
            pins,
            ranked,
            marks,
            trace.forced.get(name),
            trace.flagged.get(name),
        )
        if flagged:
            rejected += flagged
    pref = origin.get(value)
    if pref is not None:
        return Provenance(
            kind="preference", source=None, rule=pref.id, because=pref.because, rejected=rejected
        )
    if chained:
        # A fact has no flag: its chain's end is the domain's first value, said as such.
        return Provenance(
            kind="default",
            source=None,
            rule=None,
            rejected=rejected,
            because=(
                _FACT_DEFAULT if field.kind == "fact" else f"{pack.name}'s default when the flag is not given"
            ),
        )
    because = (
        "not given; the first value of the domain that works — set it if it differs"
        if field.kind == "fact"
        else "the first value of the domain that works"
    )
    return Provenance(kind="default", source=None, rule=None, because=because, rejected=rejected)


def _said_forced(plan: Plan, name: str, solution: Mapping[str, Scalar]) -> Provenance:
    """The provenance of a value the rules leave alone: the rules that exclude the others."""
    forcing, because = forcing_rules(plan, name, solution)
    return Provenance(
        kind="rule", source=None, rule=forcing[0] if forcing else None, because=because, rejected=[]
    )


def _read_before(
    plan: Plan, name: str, solution: Mapping[str, Scalar], pins: Mapping[str, Pin], marks: Mapping[str, bool]
) -> dict[str, Scalar]:
    """What `_decide` read to rank `name`: the values its ranking reads of the fields decided
    before it (earlier in the plan's order, or pinned), and the request's `given(FIELD)` marks."""
    here = plan.position(name)
    assigned: dict[str, Scalar] = {
        f: solution[f]
        for f in plan.ranking_reads(name)
        if f in solution and f != name and (f in pins or plan.position(f) < here)
    }
    assigned.update(marks)
    return assigned


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
    # In the plan's order, then the pins': a set's order changes with the process's hash seed, and
    # the reason's pins come out in the order they go in (the same request printed them in two
    # orders in two processes).
    position = plan.order.index(name)
    earlier = dict.fromkeys([*plan.order[:position], *pins])
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
    marks: Mapping[str, bool],
    forced: Mapping[str, Scalar] | None = None,
    exact: Mapping[Scalar, str] | None = None,
) -> list[Rejection]:
    """Values the preferences ranked above the chosen one that a warn rule moved to the end: the
    warn rule and the decided (or forced: `forced`, as `_decide` saw them) values it read are the
    reason. `marks`: `given_marks(pins)`. `exact`: the values `_decide` found the rule broken in
    every solution though it read open fields (`steering.first_unwarned`), with that rule."""
    if not plan.warn_rules.get(name):
        return []  # no warn rule reads the field: nothing can have been moved
    # The decided values the ranking read: the same ranking as `_decide`'s.
    assigned = _read_before(plan, name, solution, pins, marks)
    preferred, flagged = plan.preferred_flagged(name, assigned, forced)
    if exact:
        flagged = {**exact, **flagged}
    if forced:
        assigned = {**forced, **assigned}
    if not flagged:
        return []  # (most fields: nothing flagged, nothing moved)
    better = preferred[: preferred.index(value)] if value in preferred else []
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
        out.append(Rejection(value=v, because=[*reads, rid]))
    return out


def warnings_of(
    plan: Plan, solution: Mapping[str, Scalar], broken: list[str] | None = None
) -> list[WarningRecord]:
    """The answer's warnings; `broken`: the warn rules it breaks, if known (`SearchTrace.broken`)."""
    if broken is None:
        broken = [rid for rid, (pick, holds) in plan.warn_checks.items() if not holds(pick(solution))]
    models = plan.compiled.models
    return [WarningRecord.model_construct(rule=rid, message=models[rid].because) for rid in broken]


def resolve_planned(
    pack: Pack,
    plan: Plan,
    pins: Mapping[str, Pin],
    *,
    strict: bool,
    reasons: bool,
    predict: bool,
    departures: bool = True,
    witness: Mapping[str, Scalar] | None = None,
    base: Pack | None = None,
) -> Resolution:
    """Resolve validated pins of `pack` (already widened by them) with its `plan`: the
    `Resolution`, or `RequestFails` / `ChainFailed` (data, explained one layer up).

    For a caller that reads only the values (a repair's verification): `departures=False`
    leaves out the launcher's own picks (a second pass of decisions), and `witness`, a solution
    of `pins` the caller already has, spares the first search. Neither changes a value: each
    decision is the first ranked value that keeps the request solvable, whatever the witness.

    `base`: the pack before `given(FIELD)` of its rules was answered for `pins` (the caller's,
    before `query_pack`). With it, the search departs from the launcher's own pick of a flag only
    to a value the launcher takes typed: a departure a rule refuses typed is skipped and the
    request decided again (`_typable`), the refusal said as the value's rejection."""
    settled, picks, refused = _decided(
        plan, pins, strict=strict, predict=predict, departures=departures, witness=witness, base=base
    )
    pins, adjustments, solution, trace, log = (
        settled.pins,
        settled.adjustments,
        settled.solution,
        settled.trace,
        settled.log,
    )
    marks = given_marks(pins)
    alone = facts_alone(plan, pins)
    first = {
        name: _ASSUMED_FIRST_FORCED if name in settled.assumed_forced else _ASSUMED_FIRST
        for name in settled.assumed
    }
    provenance = {
        name: provenance_of(
            plan, name, solution, pins, adjustments, trace, log, reasons, predict, marks, alone, first
        )
        for name in pack.fields
    }
    # A fact the facts decide only through a search is the rules' doing too, not an assumption
    # (`deeply_forced`: asked only of the facts that would be listed ASSUMED).
    unforced = [
        name
        for name in plan.order
        if name not in pins
        and pack.fields[name].kind == "fact"
        and provenance[name].kind in ("preference", "default")
    ]
    for name in deeply_forced(plan, solution, pins, unforced):
        provenance[name] = _said_forced(plan, name, solution)
    for name, values in refused.items():
        provenance[name] = _said_refused(provenance[name], name, values)
    departed: list[DepartureRecord] = []
    if not predict and departures:
        departed = departures_of(plan, solution, picks, provenance)
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
            # In the pack's field order, not the order they fired in: which adjustment the
            # fixpoint tries first can depend on facts the answer assumed, and giving those
            # facts must not change the answer (tests/test_laws_shipped.py, "assumed").
            for name in pack.fields
            if name in adjustments
            for requested, rule_id in [adjustments[name]]
        ],
        warnings=warnings_of(plan, solution, trace.broken),
        mode="predict" if predict else "search",
        assumed=assumed_facts(plan, pins, solution, provenance),
        departures=departed,
    )


def _decided(
    plan: Plan,
    pins: Mapping[str, Pin],
    *,
    strict: bool,
    predict: bool,
    departures: bool,
    witness: Mapping[str, Scalar] | None,
    base: Pack | None,
) -> tuple[Settled, LauncherPicks | None, dict[str, dict[Scalar, list[str]]]]:
    """`resolve_planned`'s decisions, every value of the answer: the request settled, the
    launcher's picks when asked for or needed, the departures refused typed (`_typable`); raises
    as `resolve_planned` does (`RequestFails`, `ChainFailed`, a required field left open)."""
    settled = _settled(plan, pins, strict=strict, predict=predict, witness=witness)
    picks: LauncherPicks | None = None
    refused: dict[str, dict[Scalar, list[str]]] = {}
    if not predict:
        typable = (
            base is not None
            and asks_unset(base, pins)
            and refusal_possible(plan, base, pins, settled.solution)
        )
        if departures or typable:
            picks = launcher_picks(plan, settled, strict)
        if typable:
            assert base is not None
            settled, picks, refused = _typable(plan, base, pins, settled, picks, strict)
    check_required(plan, settled.pins, settled.trace)
    return settled, picks, refused


def _settled(
    plan: Plan,
    pins: Mapping[str, Pin],
    *,
    strict: bool,
    predict: bool,
    witness: Mapping[str, Scalar] | None,
    skipped: Mapping[str, Collection[Scalar]] | None = None,
) -> Settled:
    """The request's decisions (`settle`), after the adjustments it needs; `skipped`: see `settle`."""
    pins = dict(pins)
    adjustments: dict[str, tuple[Scalar, str]] = {}
    values = {name: pin.value for name, pin in pins.items()}
    # One check serves three purposes: whether adjustments are needed (only when the request as
    # given has no solution), whether it resolves, and the start of the greedy decisions.
    state, witness = first_search(plan, values, hint=witness)
    if witness is None and not strict:
        pins, adjustments = apply_adjustments(plan, pins, refuted=True)
        if adjustments:
            # (From the guess at the resolution too: the adjusted request mostly resolves, and
            # its witness only speeds the decisions, which are the same whatever it is.)
            state, witness = first_search(plan, {name: pin.value for name, pin in pins.items()})
    if state is None or witness is None:
        raise RequestFails(pins, adjustments)
    return settle(plan, pins, adjustments, state, witness, strict=strict, predict=predict, skipped=skipped)


# The most times a request is decided again for departures refused typed (each time skips more
# values; SGLang's rules refuse one or two flags typed).
_RETRIES = 4


def _typable(
    plan: Plan,
    base: Pack,
    pins: Mapping[str, Pin],
    settled: Settled,
    picks: LauncherPicks | None,
    strict: bool,
) -> tuple[Settled, LauncherPicks | None, dict[str, dict[Scalar, list[str]]]]:
    """`settled` when a command can type each of its departures; otherwise the request decided
    again, each departed value a rule refuses typed skipped (what a search that read the departed
    field as given would do), with the launcher's picks and the values skipped, each with the
    refusing rules. When the values left fail, the first answer is kept: no command gives it,
    which the launch command's writer says (`solver.reasoning.minimal.command_options`)."""
    first = (settled, picks)
    refused: dict[str, dict[Scalar, list[str]]] = {}
    for _ in range(_RETRIES):
        departed = departed_fields(plan, settled.solution, picks)
        found = typed_refusals(base, pins, settled.solution, departed)
        if not found:
            return settled, picks, refused
        if _refused_again(plan, base, settled, picks, departed, found):
            break  # (each decision again would end as the retries run out: the first answer)
        for name, rules in found.items():
            refused.setdefault(name, {})[settled.solution[name]] = rules
        try:
            # (The last answer is a solution of the request to start from: the values decide
            # the same whatever the witness, `resolve_planned`.)
            settled = _settled(
                plan, pins, strict=strict, predict=False, witness=settled.solution, skipped=refused
            )
        except (ChainFailed, RequestFails, Untypable):
            break
        picks = launcher_picks(plan, settled, strict)
    return (*first, {})


def _refused_again(
    plan: Plan,
    base: Pack,
    settled: Settled,
    picks: LauncherPicks | None,
    departed: list[str],
    found: Mapping[str, list[str]],
) -> bool:
    """Whether every decision again of `_typable` is refused typed as this one is, so that its
    retries run out and it keeps the first answer (r23-megamoe-awq-marlin: four decisions
    again, ~1 ms each, of a request whose runner no command can type). So when the one departure
    is the field whose launcher chain fails (`picks.failed`) and a rule refuses it typed: a
    decision again skips values of that field only, so it changes no field before it; the
    launcher's picks are then the same up to it and fail there again, and the field is again the
    one departure, at a value of its domain at its turn (`trace.domains`). Each of those values
    is typed (a flag, no launcher rewrite that leaves the field ungiven), and a refusing rule is
    broken by the pins and the fields decided before it alone with the field typed, whatever
    else a command types (its other `given()` left unknown): refused again, every time."""
    if picks is None or picks.failed is None:
        return False
    name = picks.failed.field
    if departed != [name] or name not in found:
        return False
    field = base.fields.get(name)
    domain = settled.trace.domains.get(name)
    if field is None or field.env or domain is None:
        return False
    if any(not flag_words(field, v) or _show(v) in field.rewrites for v in domain):
        return False
    solution = settled.solution
    known: dict[str, Scalar | bool] = {n: solution[n] for n in plan.order[: plan.position(name)]}
    known.update({n: pin.value for n, pin in settled.pins.items()})
    known[given_key(name)] = True
    rules = semantics(base).rules
    return any(rules[rid].partial(known) is False for rid in found[name])


def _said_refused(prov: Provenance, name: str, values: Mapping[Scalar, list[str]]) -> Provenance:
    """`prov` with each of `values` (skipped: refused typed) rejected because typing `name` at
    it breaks the rules named."""
    rejected = [
        Rejection.model_construct(value=r.value, because=[f"given({name})", *values[r.value]])
        if r.value in values
        else r
        for r in prov.rejected
    ]
    return frozen.replace(prov, rejected=rejected)


def resolve_unexplained(
    pack: Pack,
    pins: Mapping[str, Pin],
    *,
    strict: bool = False,
    reasons: bool = True,
    predict: bool = False,
    budget: Budget | None = None,
    departures: bool = True,
    witness: Mapping[str, Scalar] | None = None,
    copy: Pack | None = None,
) -> Resolution:
    """`resolve_pins` without explaining a failure: a bare `Unsatisfiable` (no conflict, no
    repairs) when the request has no resolution. `departures`, `witness`: see `resolve_planned`;
    `copy`: `query_pack(pack, pins)` when the caller has made it."""
    # Open domains widened, `given(FIELD)` of rules answered.
    base, pack = pack, query_pack(pack, pins) if copy is None else copy
    plan = plan_for(pack).within(budget)
    try:
        return resolve_planned(
            pack,
            plan,
            pins,
            strict=strict,
            reasons=reasons,
            predict=predict,
            departures=departures,
            witness=witness,
            base=base,
        )
    except (ChainFailed, RequestFails):
        raise Unsatisfiable(bare_conflict()) from None


def resolved_values(
    pack: Pack,
    pins: Mapping[str, Pin],
    *,
    predict: bool = False,
    budget: Budget | None = None,
    departures: bool = True,
    witness: Mapping[str, Scalar] | None = None,
    copy: Pack | None = None,
) -> dict[str, Scalar]:
    """The values `resolve_unexplained` (not strict) answers, raising as it does, from its decisions
    alone (provenance, warnings and departures were a quarter of a repair's check at 5,000 fields)."""
    try:
        return decided_values(
            pack, pins, predict=predict, budget=budget, departures=departures, witness=witness, copy=copy
        )
    except (ChainFailed, RequestFails):
        raise Unsatisfiable(bare_conflict()) from None


def decided_values(
    pack: Pack,
    pins: Mapping[str, Pin],
    *,
    predict: bool = False,
    budget: Budget | None = None,
    departures: bool = True,
    witness: Mapping[str, Scalar] | None = None,
    copy: Pack | None = None,
) -> dict[str, Scalar]:
    """`resolved_values` raising `ChainFailed` / `RequestFails` as the decisions do (`factrepairs`
    mends the request from the failing field). `copy`: `query_pack(pack, pins)`, made already."""
    base, pack = pack, query_pack(pack, pins) if copy is None else copy
    plan = plan_for(pack).within(budget)
    kept = _decided(
        plan, pins, strict=False, predict=predict, departures=departures, witness=witness, base=base
    )
    return {name: kept[0].solution[name] for name in pack.fields}
