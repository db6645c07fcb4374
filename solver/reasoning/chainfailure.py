"""The error when the launcher's own default for a flag left unset fails (`chain_failure`), and
its repairs (`_chain_repairs`): set the flag, or change or drop one of the user's values of the
conflict, each verified by resolving again in the same mode; a fact nobody gave is stated
otherwise (`solver.reasoning.factrepairs`). The conflict of a request no configuration
satisfies is `solver.reasoning.diagnose`'s (whose limits on repairs these share).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from itertools import islice

from solver.engine.csp import DESCENT_FIRST
from solver.errors import Unsatisfiable
from solver.model import Pack, Pin, Repair, Scalar
from solver.reasoning.conflicts import conflict_report, minimal_conflict
from solver.reasoning.decide import ChainFailed, launcher_view
from solver.reasoning.diagnose import MAX_ALTERNATIVES_PER_FIELD, MAX_REPAIRS, changes_setup, nearest_first
from solver.reasoning.givenrepairs import with_given_repairs
from solver.reasoning.plan import Plan
from solver.reasoning.verify import as_typed, try_resolve

__all__ = ["chain_failure"]

# How many other values of a field a predict-mode repair tries (each is a full prediction).
_SET_TRIALS = 8


def chain_failure(
    plan: Plan,
    pins: Mapping[str, Pin],
    failed: ChainFailed,
    *,
    predict: bool = True,
    made_on: Pack | None = None,
    with_repairs: bool = True,
) -> Unsatisfiable:
    """The error when the launcher's own default for a flag left unset fails: in predict mode
    (`check`) for any option, in search mode for an option the search may not choose
    (`search = false`).

    The conflict is taken over the request as the launcher sees it (`launcher_view`); the
    repairs say which flag to set, or which of the user's values to change, each verified by
    resolving again in the same mode. A fact of the conflict nobody gave, at the value the
    answer assumed, is repaired by stating it otherwise (`fact_repairs`: the model or machine
    may differ), after the user's flags; at least one such repair is kept. `made_on`: the pack
    the request was made on (default: the plan's). `with_repairs=False`: none searched (the
    conflict and the text before the repairs are the same: they are found before them)."""
    from solver.render.text import conflict_explained, conflict_message, describe_pin

    pack = plan.pack
    name, default = failed.field, failed.chain[0]
    view = launcher_view(plan, pins, failed)
    found = minimal_conflict(plan.compiled, view)
    core_pins, core_rules = found if found is not None else ([], [])
    report = conflict_report(plan.compiled, core_pins, core_rules)
    fixes = _chain_repairs(plan, pins, failed, view, found, predict, made_on) if with_repairs else None
    fact = pack.fields[name].kind == "fact"
    pref = failed.preference
    chain = " then ".join(str(v) for v in failed.chain)
    own = f"{describe_pin(pack, name, default, 'user')} is " + (
        "assumed" if fact else f"{pack.name}'s own default here"
    )
    own += f" (preference {pref.id}: {pref.because}; it tries {chain})" if pref and not fact else ""
    own += f" (preference {pref.id}: {pref.because})" if pref and fact else ""
    if fact:
        lead = (
            f"{name} was not given, and a fact is never searched to make the rules hold: {own}, and "
            f"it cannot hold with the rest of the request. If it differs, --set {name}=VALUE (or read "
            "it with --model-config)."
        )
    elif predict:
        lead = (
            f"As typed, {pack.name} would fail: left unset, {own}, and it cannot hold with "
            "the rest of the request."
        )
    else:
        lead = (
            f"{pack.fields[name].cli_flag} is not searched (the solver never picks it to make "
            f"other flags work): left unset, {own}, and it cannot hold with the rest of the "
            "request."
        )
    explained = conflict_explained(plan, pins, report, lead=lead, adjusted=failed.adjustments)
    message = conflict_message(plan, pins, report, fixes, adjusted=failed.adjustments, explained=explained)
    exc = Unsatisfiable(
        report,
        fixes,
        message,
        repairs_searched=with_repairs,
        launcher_default={
            "field": name,
            "value": default,
            "chain": list(failed.chain),
            "preference": pref.id if pref else None,
        },
    )
    exc.request, exc.lead, exc.adjusted = dict(pins), lead, dict(failed.adjustments)
    exc.explained = (plan.pack.digest, explained)
    return exc


def _chain_repairs(
    plan: Plan,
    pins: Mapping[str, Pin],
    failed: ChainFailed,
    view: Mapping[str, Pin],
    found: tuple[Sequence[Pin], Sequence[str]] | None,
    predict: bool,
    made_on: Pack | None,
) -> list[Repair]:
    """`chain_failure`'s repairs of the conflict `found` over `view` (the request as the launcher
    sees it): the flags first, then the facts nobody gave stated otherwise, then `given()`'s."""
    from solver.reasoning.factrepairs import fact_repairs

    pack = plan.pack
    name, default = failed.field, failed.chain[0]
    core_pins = found[0] if found is not None else []
    ranked_fixes: list[tuple[tuple[bool, bool, bool, int], Repair]] = []
    # The last repair's answer, where the next verification's first search starts: the repairs
    # differ from each other in a pin or two, so it mostly solves the next one at once, without
    # the guess at a resolution (`likely_values`): -9 % of the verifications' CPU over the 32
    # slowest benchmark requests (round 29). Only a start: a resolution's values are the same
    # whatever its witness (`resolve_planned`).
    hint: dict[str, Scalar] | None = None
    # The default that fails is a setup choice left out (SGLang's --disaggregation-mode null:
    # aggregated serving; --quantization none): setting it turns on what the user did not ask for
    # (a PD decode server, which needs a prefill server beside it; a quantization method), so the
    # user's own flags come first and it comes after (a0ebea6 offered `--disaggregation-mode
    # decode` first to fit a MoRI all-to-all). A default the launcher picks (a backend, a cache
    # dtype) and a size left out (a request cap the refusing rule asks for) still come first.
    turns_on = default == pack.fields[name].absent and changes_setup(pack, [name])
    fact = pack.fields[name].kind == "fact"
    # The facts of the conflict nobody gave (the failing one first): stated otherwise below.
    assumed = [(name, default)] if fact else []
    assumed += [
        (p.field, p.value)
        for p in core_pins
        if p.source == "assumed"
        and p.field != name
        and p.field not in pins
        and pack.fields[p.field].kind == "fact"
    ]
    for pin in core_pins:
        # The launcher's own pick, or the assumed value of a fact the search may not choose (the
        # failing field itself): set it; a user's value: change or drop it.
        picked = pin.source == "launcher-default" or (pin.source == "assumed" and pin.field == name)
        if (not picked and pin.source not in ("user", "adjusted")) or (fact and pin.field == name):
            continue
        base = {n: p for n, p in pins.items() if n != pin.field}
        if not picked:
            values = try_resolve(plan, base, predict=predict, departures=False, witness=hint)
            if values is not None:
                hint = values
                ranked_fixes.append(
                    (
                        (False, True, changes_setup(pack, [pin.field]), 0),
                        Repair.model_construct(
                            set={}, unset=[pin.field], values=values, changes=1, rank_loss=0
                        ),
                    )
                )
        # Values that fit the rest of the request as the launcher sees it, best-ranked first;
        # each is verified by resolving (a few at most: each is a full resolution). Asked as
        # the loop goes, not all first: it stops at its few trials.
        fitting = _fitting(plan, view, pin, failed)
        worked = 0
        for tried, value in enumerate(islice(fitting, _SET_TRIALS)):
            if worked >= MAX_ALTERNATIVES_PER_FIELD:
                break
            # Values only (`departures=False`): the launcher's own picks are a second pass of
            # decisions that changes no value.
            values = try_resolve(
                plan,
                {**base, pin.field: Pin(field=pin.field, value=value, source="user")},
                predict=predict,
                departures=False,
                witness=hint,
            )
            if values is not None:
                hint = values
                worked += 1
                # Setting the flag whose default fails comes first: it is the direct answer,
                # unless that default is the flag left out (`turns_on`).
                ranked_fixes.append(
                    (
                        (
                            pin.field == name and turns_on,
                            pin.field != name,
                            changes_setup(pack, [pin.field]),
                            tried,
                        ),
                        Repair.model_construct(
                            set={pin.field: value}, unset=[], values=values, changes=1, rank_loss=tried
                        ),
                    )
                )
    ranked_fixes.sort(key=lambda item: item[0])
    # Setting the failing flag itself stays offered when it comes after the user's own flags.
    own = next((repair for key, repair in ranked_fixes if key[0]), None)
    fixes = _first([repair for _, repair in ranked_fixes], MAX_REPAIRS, own)
    if assumed:  # an assumed fact is corrected only when the model differs: the user's flags first
        room = max(1, MAX_REPAIRS - len(fixes))
        stated = fact_repairs(plan, made_on or pack, pins, assumed, predict=predict, limit=room)
        fixes = _first(fixes, MAX_REPAIRS - len(stated), own) + stated
    if failed.adjustments:  # the launcher's own overrides replaced typed pins on the way
        fixes = as_typed(plan, pins, failed.adjustments, fixes, predict)
    return with_given_repairs(fixes, plan, pins, failed.adjustments, found, (), predict, limit=MAX_REPAIRS)


def _first(fixes: list[Repair], limit: int, kept: Repair | None) -> list[Repair]:
    """The first `limit` of `fixes`, the last of them replaced by `kept` when it is left out."""
    first = fixes[:limit]
    if kept is not None and kept in fixes and kept not in first and first:
        first[-1] = kept
    return first


def _fitting(plan: Plan, view: Mapping[str, Pin], pin: Pin, failed: ChainFailed) -> Iterator[Scalar]:
    """The other values of `pin`'s field that some configuration keeps with the rest of `view`
    (the request as the launcher sees it), best-ranked first (a size the user typed: nearest
    it first, `nearest_first`); for the field whose default failed, none of its default chain.

    The rest of the request is propagated once and each value fixed in that state and taken
    back, where a search from the root per value propagated every pin again (a chain failure
    tries ~25 values, a tenth of the answer's time): the same answers, as forward checking
    reaches one fixpoint whatever order the pins come in and the search is complete."""
    cp = plan.compiled
    state = cp.start({n: p.value for n, p in view.items() if n != pin.field})
    if state is None:
        return  # (the rest alone has no solution: no value fits)
    ranked = nearest_first(plan.pack, pin, plan.ranking(pin.field, failed.decided)[0])
    for value in ranked:
        if value == pin.value or (pin.field == failed.field and value in failed.chain):
            continue
        if not state.fix(pin.field, value):
            continue
        try:
            found = cp.search(state, task="looking for repairs", hint=DESCENT_FIRST)
        finally:
            state.undo()
        if found is not None:
            yield value
