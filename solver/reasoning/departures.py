"""Where a searched answer departs from the launcher's own picks, and whether a command can type
each departure.

`launcher_picks`: what the launcher decides by itself for the same request (predict mode over
the searched decisions' state); `departures_of`: the options where the answer differs, each with
why.

A departure is typed: left out, the flag takes the launcher's own pick. A rule may refuse a value
when its flag is typed (`given(FIELD)`, `solver.pack.given`), while the search made the answer
with the field not given (its rules read `given(FIELD)` as false): an answer that departs to such
a value is one no command gives (`typed_refusals`). `solver.reasoning.provenance` then decides
again with those values skipped (tests/test_given_rules.py,
`test_resolve_departs_only_to_a_value_a_command_can_type`).
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Mapping
from typing import Any

from solver.engine.csp import CompiledPack
from solver.frozen import Frozen, frozen_type
from solver.inputs.flagwords import flag_words
from solver.model import DepartureRecord, Pack, Pin, Provenance, Scalar, given_key, given_marks, typed_key
from solver.pack.expr import Condition
from solver.pack.given import given_fields, refusing
from solver.pack.loader import semantics
from solver.reasoning.decide import ChainFailed, RequestFails, Settled, settle
from solver.reasoning.guess import follows_chain, marked
from solver.reasoning.plan import Plan
from solver.values import show as _show

__all__ = [
    "LauncherPicks",
    "asks_unset",
    "departed_fields",
    "departures_of",
    "launcher_picks",
    "refusal_possible",
    "typed_refusals",
]


@frozen_type
class LauncherPicks(Frozen):
    """The launcher's own decisions of a request (`launcher_picks`)."""

    predicted: Mapping[str, Scalar]
    """Its values (up to the field whose chain fails, when one does)."""
    own: Mapping[str, Pin]
    """The pins it decided with (the request's, after the launcher's own adjustments)."""
    failed: ChainFailed | None
    """Its chain that fails here, if one does."""


def launcher_picks(plan: Plan, settled: Settled, strict: bool) -> LauncherPicks | None:
    """What the launcher decides by itself for `settled`'s request (predict mode); None when it
    decides as the search did (nothing departs) or its adjusted request has no solution. Takes
    back decisions from `settled.state`: asked once per settled request."""
    pins, solution = settled.pins, settled.solution
    values = {n: p.value for n, p in pins.items()}
    agreed = _agreed_prefix(plan, values, solution)
    if agreed == len(plan.order):
        return None  # the launcher's own picks are the resolution's: nothing departs
    # Up to the first option whose chain does not start with the resolved value, predict mode
    # decides what the search decided (the solution proves each of those values works), so its
    # decisions start from the search's state with the later decisions taken back: the same
    # fixpoint as the pins and the agreed values propagated, without propagating them again.
    state = settled.state
    later = set(plan.order[agreed:])
    for name in reversed(settled.fixed):
        if name not in later:
            break
        state.undo()
    # The searched solution keeps every final pin, so it is already a witness for them: no
    # second search for one.
    try:
        predicting = settle(
            plan,
            dict(pins),
            settled.adjustments,
            state,
            solution,
            strict=strict,
            predict=True,
            values_only=True,
            assumed=settled.assumed,
            decided_before=agreed,
        )
    except ChainFailed as exc:
        # Without its traceback: this frame holding the exception that holds this frame is a
        # reference cycle, which kept every caller's frame and locals (a choices call's whole
        # working state) alive until the garbage collector found it.
        return LauncherPicks(exc.decided, exc.pins, exc.with_traceback(None))
    except RequestFails:
        return None
    return LauncherPicks(predicting.solution, predicting.pins, None)


def departed_fields(plan: Plan, solution: Mapping[str, Scalar], picks: LauncherPicks | None) -> list[str]:
    """The options where `solution` differs from the launcher's `picks`, in graph order up to
    the first whose chain fails (that one included)."""
    if picks is None:
        return []
    fields = plan.pack.fields
    out = []
    for name in plan.order:
        if name in picks.own or fields[name].kind != "option":
            continue
        if picks.failed is not None and name == picks.failed.field:
            out.append(name)
            break
        if name in picks.predicted and picks.predicted[name] != solution[name]:
            out.append(name)
    return out


def departures_of(
    plan: Plan,
    solution: Mapping[str, Scalar],
    picks: LauncherPicks | None,
    provenance: Mapping[str, Provenance],
) -> list[DepartureRecord]:
    """`departed_fields`, each with the launcher's pick and why the search did not take it."""
    pack = plan.pack
    out = []
    for name in departed_fields(plan, solution, picks):
        assert picks is not None
        failed = picks.failed if picks.failed is not None and name == picks.failed.field else None
        if failed is None:
            value = launcher = picks.predicted[name]
            said = f"{pack.name} would pick {_show(value)} by itself"
        else:
            value, launcher = failed.chain[0], None
            said = f"{pack.name}'s own default {_show(value)} fails here"
        why = _rejected_because(provenance[name], value)
        out.append(
            DepartureRecord.model_construct(
                field=name,
                launcher=launcher,
                resolved=solution[name],
                rule=failed.preference.id if failed is not None and failed.preference else None,
                because=said + (f" ({why})" if why else "") + f"; chose {_show(solution[name])}",
            )
        )
    return out


def asks_unset(base: Pack, given: Collection[str]) -> bool:
    """Whether some rule of `base` reads `given(FIELD)` of an option the request leaves unset:
    only then can a departure be refused typed."""
    fields = base.fields
    return any(n not in given and fields[n].kind == "option" for n in given_fields(base))


def refusal_possible(
    plan: Plan, base: Pack, given: Mapping[str, Pin], solution: Mapping[str, Scalar]
) -> bool:
    """Whether typing some of the options the request leaves unset can make a hard rule reading
    their `given(...)` refuse `solution`: each such rule evaluated on it under every choice of
    those marks (the request's own marked as given; a rule asks about one or two fields). False
    spares a verification of a repair the launcher's own picks (`typed_refusals` needs the
    departures), which this cannot then refuse.

    Each rule's answer is remembered (under the entry budget of `plan.compiled`) by the values
    it reads (`_Asked`): the evaluations were most of the check (~8 % of a resolution in the
    slowest decile), and requests share their models, hardware and flags."""
    fields = base.fields
    cp = plan.compiled
    table = cp.memo.get("refusals")
    if table is None:
        table = cp.memo.setdefault("refusals", cp.tables.table())
    # The request's marks, with the values it typed (`given(FIELD) == VALUE` reads them, not the
    # solution's, where an adjustment replaced one); an option typed here types the solution's.
    marks = {**given_marks(given), **{typed_key(n): p.value for n, p in given.items()}}
    # One mapping with each choice of marks put in and taken out again, not a copy of the whole
    # solution per rule and choice (most of this check's cost).
    known = {**solution, **marks}
    for asked in _asked_rules(cp, base):
        key = (asked, asked.read(known))
        found = table.get(key)
        if found is None:
            cond = asked.cond
            open_ = [given_key(n) for n in cond.given if n not in given and fields[n].kind == "option"]
            found = _refused_typed(cond, known, open_)
            cp.tables.store(table, key, found)
        if found:
            return True
    return False


_ABSENT = object()


class _Asked:
    """A hard rule `refusal_possible` asks, as its answers' key: compared by identity (cheap,
    where a frozen `Condition`'s own hash walks its text and literals), and held by every entry
    it keys, so no other object takes its place while one is kept. Which marks are unset
    follows from the values read (a mark is set for each field the request gives), and the
    field kinds are the pack's."""

    __slots__ = ("cond", "keys")

    def __init__(self, cond: Condition) -> None:
        self.cond = cond
        # What `cond.partial` can read: its fields, and for each field it asks `given()` of, the
        # field, its mark and its typed value.
        given = cond.given
        self.keys = tuple(
            dict.fromkeys([*cond.fields, *given, *map(given_key, given), *map(typed_key, given)])
        )

    def read(self, known: Mapping[str, Any]) -> tuple[Any, ...]:
        return tuple([known.get(k, _ABSENT) for k in self.keys])


def _asked_rules(cp: CompiledPack, base: Pack) -> list[_Asked]:
    """The hard rules of `base` that read `given()` (a tenth of the SGLang pack's: the loop over
    every rule was half of the check once the answers were remembered), kept with the compiled
    pack for the latest `base` (the pack a request's copy was made from)."""
    kept: tuple[Pack, list[_Asked]] | None = cp.memo.get("refusal-rules")
    if kept is None or kept[0] is not base:
        conds = semantics(base).rules
        asked = [_Asked(conds[r.id]) for r in base.rules if r.severity == "error" and conds[r.id].given]
        kept = cp.memo["refusal-rules"] = (base, asked)
    return kept[1]


def _refused_typed(cond: Condition, known: dict[str, Any], open_: list[str]) -> bool:
    """Whether `cond` is false under some choice of the unset marks `open_` (put into `known`
    and taken out again: `known` is left as it was)."""
    before = {key: known[key] for key in open_ if key in known}
    try:
        for chosen in itertools.product((False, True), repeat=len(open_)) if open_ else ():
            known.update(zip(open_, chosen, strict=True))
            if cond.partial(known) is False:
                return True
        return False
    finally:
        for key in open_:
            known.pop(key, None)
        known.update(before)


def typed_refusals(
    base: Pack, given: Mapping[str, Pin], solution: Mapping[str, Scalar], departed: Collection[str]
) -> dict[str, list[str]]:
    """The departed options a rule refuses typed: each with the ids of the hard rules reading
    its `given(...)` that the answer breaks once the command types the departures (the request's
    own fields `given`, and each departure its launcher flag writes; `base`: the pack before
    `given(FIELD)` was answered for the request)."""
    asked = given_fields(base)
    fields = base.fields
    typed = [
        n
        for n in departed
        if n in asked and n not in given and not fields[n].env and flag_words(fields[n], solution[n])
    ]
    if not typed:
        return {}
    rules = semantics(base).rules
    out: dict[str, list[str]] = {}
    # What the command types: the request's own values as typed, and each departure's value.
    command = {**{n: p.value for n, p in given.items()}, **{n: solution[n] for n in typed}}
    for rule in refusing(base, solution, command):
        for name in rules[rule.id].given:
            if name in typed and rule.id not in out.get(name, ()):
                out.setdefault(name, []).append(rule.id)
    return out


def _agreed_prefix(plan: Plan, values: Mapping[str, Scalar], solution: Mapping[str, Scalar]) -> int:
    """How many fields of the plan's order predict mode decides as the search did: up to the first
    unset option (or chain-following fact) whose launcher chain does not start with the resolved
    value. Every field before it is decided alike: pinned, forced, ranked by the same decided
    values, or its chain's first value, which the solution proves works."""
    fields = plan.pack.fields
    decided: dict[str, Scalar] = marked(values)
    for at, name in enumerate(plan.order):
        spec = fields[name]
        # A field the search may not choose follows its chain in both modes (`follows_chain`):
        # decided alike by the same values before it, whether or not its chain's first value
        # is the one the rules leave (a model's is_mla that its architecture makes true).
        chained = name not in values and spec.search and follows_chain(spec, True)
        if chained and plan.chain(name, decided)[0][0] != solution[name]:
            return at
        decided[name] = solution[name]
    return len(plan.order)


def _rejected_because(prov: Provenance, value: Scalar) -> str:
    for rej in prov.rejected:
        if rej.value == value:
            return ", ".join(rej.because)
    return ""
