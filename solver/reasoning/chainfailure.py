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
    streams: list[_PinRepairs] = []
    for pin in core_pins:
        # The launcher's own pick, or the assumed value of a fact the search may not choose (the
        # failing field itself): set it; a user's value: change or drop it.
        picked = pin.source == "launcher-default" or (pin.source == "assumed" and pin.field == name)
        if (not picked and pin.source not in ("user", "adjusted")) or (fact and pin.field == name):
            continue
        streams.append(
            _PinRepairs(
                plan,
                pin,
                {n: p for n, p in pins.items() if n != pin.field},
                drop=not picked,
                # Setting the flag whose default fails comes first: it is the direct answer,
                # unless that default is the flag left out (`turns_on`).
                rank=(pin.field == name and turns_on, pin.field != name, changes_setup(pack, [pin.field])),
                # Values that fit the rest of the request as the launcher sees it, best-ranked
                # first; asked as the candidates are reached, not all first.
                fitting=_fitting(plan, view, pin, failed),
                order=len(streams),
            )
        )
    # Verified only as far as they are shown (`_InRank`): the first MAX_REPAIRS of every repair
    # in rank order, where setting the failing flag itself (`own`'s first) takes the last place
    # when it ranks after (`_first`), then one place for the facts nobody gave stated otherwise.
    ranked = _InRank(streams, predict)
    ranked.verify(MAX_REPAIRS - 2)  # (shown either way; before `own`: each is the next's start)
    ranked.verify_own(1)
    shown = MAX_REPAIRS - 1 if ranked.own else MAX_REPAIRS  # (the most of `flags` shown)
    ranked.verify(shown - 1)
    stated: list[Repair] | None = None
    if len(ranked.flags) >= shown - 1:
        # With that many, the facts' room is one (`room` below: `fixes` has 4 or 5) whether a
        # flag is left or not; a fact repair takes the place of the last flag's, unverified.
        if assumed:
            stated = fact_repairs(plan, made_on or pack, pins, assumed, predict=predict, limit=1)
        if not stated:
            ranked.verify(shown)
    if ranked.own and ranked.exhausted:  # (fewer flags: `own`'s next ones are shown too)
        ranked.verify_own(MAX_REPAIRS - len(ranked.flags))
    own = ranked.own[0] if ranked.own else None
    # Setting the failing flag itself stays offered when it comes after the user's own flags.
    fixes = _first(ranked.flags + ranked.own, MAX_REPAIRS, own)
    if assumed:  # an assumed fact is corrected only when the model differs: the user's flags first
        if stated is None:
            room = max(1, MAX_REPAIRS - len(fixes))
            stated = fact_repairs(plan, made_on or pack, pins, assumed, predict=predict, limit=room)
        fixes = _first(fixes, MAX_REPAIRS - len(stated), own) + stated
    if failed.adjustments:  # the launcher's own overrides replaced typed pins on the way
        fixes = as_typed(plan, pins, failed.adjustments, fixes, predict)
    return with_given_repairs(fixes, plan, pins, failed.adjustments, found, (), predict, limit=MAX_REPAIRS)


# A repair's place among `_chain_repairs`' (compared first): setting the failing flag when its
# default is the flag left out, changing another flag than the failing one, changing the user's
# setup (`changes_setup`), the rank of the value among those that fit (0 for dropping the flag).
_Rank = tuple[bool, bool, bool, int]


class _PinRepairs:
    """The repairs through one pin of the conflict, in their rank: drop it (a user's value:
    `drop`), then each value of `fitting` in turn (its first `_SET_TRIALS`, until
    `MAX_ALTERNATIVES_PER_FIELD` resolve). Each is verified only when `_InRank`
    reaches it. `rank`: the first three parts of `_Rank` for a value set; `order`: the pin's
    place in the conflict, which orders repairs of the same rank."""

    def __init__(
        self,
        plan: Plan,
        pin: Pin,
        base: dict[str, Pin],
        *,
        drop: bool,
        rank: tuple[bool, bool, bool],
        fitting: Iterator[Scalar],
        order: int,
    ) -> None:
        self.plan, self.pin, self.base, self.drop, self.rank = plan, pin, base, drop, rank
        self.fitting = islice(fitting, _SET_TRIALS)
        self.order = order
        self.tried = 0  # values of `fitting` taken
        self.worked = 0  # of them, those that resolved
        self.done = False

    def next_rank(self) -> tuple[_Rank, tuple[int, int]] | None:
        """The rank of the next repair (and its place among repairs of that rank); None: none left.
        Each pin's next repair ranks after its last: the merge in `_InRank` verifies
        the repairs of every pin in the order they are ranked."""
        if self.drop:
            return (False, True, self.rank[2], 0), (self.order, 0)
        if self.done or self.worked >= MAX_ALTERNATIVES_PER_FIELD:
            return None
        return (*self.rank, self.tried), (self.order, 1 + self.tried)

    def verify_next(self, predict: bool, hint: dict[str, Scalar] | None) -> Repair | None:
        """The next repair, verified by resolving it in the mode of the request (values only,
        `departures=False`: the launcher's own picks are a second pass of decisions that changes
        no value), from `hint` (an answer of a repair, a pin or two away); None when it does not
        resolve, or when `fitting` has no value left (`done`)."""
        field = self.pin.field
        if self.drop:
            self.drop = False
            values = try_resolve(self.plan, self.base, predict=predict, departures=False, witness=hint)
            if values is None:
                return None
            return Repair.model_construct(set={}, unset=[field], values=values, changes=1, rank_loss=0)
        value = next(self.fitting, None)  # (no value is None: `Scalar`)
        if value is None:
            self.done = True
            return None
        tried = self.tried
        self.tried += 1
        request = {**self.base, field: Pin(field=field, value=value, source="user")}
        values = try_resolve(self.plan, request, predict=predict, departures=False, witness=hint)
        if values is None:
            return None
        self.worked += 1
        return Repair.model_construct(set={field: value}, unset=[], values=values, changes=1, rank_loss=tried)


class _InRank:
    """The repairs of `streams` that resolve, in their rank (ties: the pins' order, dropping a
    pin before setting it), verified only as far as `_chain_repairs` shows them: those ranked
    after are never verified, where each is a full resolution and a chain failure ranked up to
    10 more than it showed (r25-megamoe: 15 resolutions for 5 shown). The same repairs as
    verifying every one and sorting them: the merge takes each pin's repairs in their rank, so
    the next one verified is always the best left.

    `flags`: those of every pin but the one whose repairs set the failing flag when its default
    is the flag left out (`_Rank`'s first part); `own`: that pin's, which rank after all of
    `flags` (so every repair in rank order is `flags + own`)."""

    def __init__(self, streams: list[_PinRepairs], predict: bool) -> None:
        self.predict = predict
        self.streams = [stream for stream in streams if not stream.rank[0]]
        self.own_stream = [stream for stream in streams if stream.rank[0]]
        self.flags: list[Repair] = []
        self.own: list[Repair] = []
        self.exhausted = False  # (no repair of `flags` is left to verify)
        # The last repair's answer, where the next verification's first search starts: the
        # repairs differ from each other in a pin or two, so it mostly solves the next one at
        # once, without the guess at a resolution (`likely_values`): -9 % of the verifications'
        # CPU over the 32 slowest benchmark requests (round 29). Only a start: a resolution's
        # values are the same whatever its witness (`resolve_planned`).
        self.hint: dict[str, Scalar] | None = None

    def verify(self, count: int) -> None:
        """Verify `flags` in rank order until `count` resolve (or none is left)."""
        while len(self.flags) < count and not self.exhausted:
            self.exhausted = not self._step(self.streams, self.flags)

    def verify_own(self, count: int) -> None:
        """Verify `own` in rank order until `count` resolve (or none is left)."""
        while len(self.own) < count and self._step(self.own_stream, self.own):
            pass

    def _step(self, streams: list[_PinRepairs], found: list[Repair]) -> bool:
        """Verify the best-ranked repair left of `streams` (into `found` when it resolves);
        False when none is left."""
        ranked = [(at, stream) for stream in streams if (at := stream.next_rank()) is not None]
        if not ranked:
            return False
        _, stream = min(ranked, key=lambda item: item[0])
        repair = stream.verify_next(self.predict, self.hint)
        if repair is not None:
            self.hint = repair.values
            found.append(repair)
        return True


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
