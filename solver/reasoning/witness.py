"""Witnesses for valid choices and repairs: a solution with one field's value, found near a known one.

- `Witnesses`: "can `name` be `value`?" under one set of other pins, one value at a time;
- `sweep`: one solution of the pins walked through every value of the fields without a pin;
- `search_start`: where a search for a value starts when nothing near is found.

The one home of how `solver.reasoning.diagnose` proves values possible; it imports only the engine.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from types import MappingProxyType

from solver.engine.csp import CompiledPack
from solver.engine.localsearch import SWEEP_FIELDS, Mended, redecide
from solver.engine.state import State
from solver.engine.supports import PinSet, Supports
from solver.engine.tracing import Traced, traced_domains
from solver.model import Scalar

__all__ = ["Witnesses", "search_start", "sweep", "transplanted"]


class Witnesses:
    """Answers "can `name` be `value`?" for one set of other pins, one value at a time.

    The pins are propagated once, recording why each value goes (`solver.engine.tracing`, whose states
    the explanations of excluded values reuse), which rules out most impossible values without a
    search; each remaining value is added to the engine's propagated state and searched from a
    known solution with the new value (often one already, or after a few changes nearby).
    """

    def __init__(
        self,
        cp: CompiledPack,
        pins: Mapping[str, Scalar],
        task: str,
        traced: Traced | None = None,
        *,
        mend_first: bool = False,
        owned: bool = False,
    ) -> None:
        self.cp = cp
        self.task = task
        self.pinned = [n for n in pins if n in cp.domains]
        # The last `near` asked with, the mapping used for it (a dict), and whether it keeps the
        # pins (callers never change one).
        self._near: tuple[Mapping[str, Scalar] | None, Mapping[str, Scalar] | None, bool] = (
            None,
            None,
            False,
        )
        # (Only its domains are read here. `traced`: that state, made by the caller: choices
        # makes the states of its pins but one option's by halves, `WithoutEach`.)
        self.traced = traced if traced is not None else traced_domains(cp, pins)
        # Its state (tighter than forward checking: sound removals only), a copy of our own:
        # `refutes` and the sweep work on it in place, and put back what they change. `owned`:
        # the caller hands `traced` over (a state of `WithoutEach`, one pinned option's), so
        # its state is worked on, not a copy (at 5,000 synthetic fields, 84 copies of a table
        # of every field and one of every open rule per choices question).
        made = self.traced.state
        # (`open.copy()`: a block copy of a table propagation deleted from; see `Traced.copy`.)
        self.state: State | None = None
        if not self.traced.failed:
            self.state = made if owned else State(dict(made.domains), made.open.copy(), made.by_field)
        # `mend_first`: the caller's `near` is always a solution of every rule of `cp` (choices'
        # stored solutions and witnesses), so a mend of it may come before a refutation (see
        # `witness`). Not a repair's: its `near` is a resolution of the request less the pins
        # it changes, which may break a rule reading what the user typed (`given`) in `cp`.
        self.mend_first = mend_first
        # The fields whose last value asked was refuted: their next value is refuted first.
        self._refuting: set[str] = set()

    def witness(
        self,
        name: str,
        value: Scalar,
        near: Mapping[str, Scalar] | None = None,
        then: Callable[[], Mapping[str, Scalar]] | None = None,
        *,
        keeps: bool = False,
        stored: Callable[[State], Mapping[str, Scalar] | None] | None = None,
    ) -> Mapping[str, Scalar] | None:
        """A solution with `name = value` (None if there is none); `near`: a solution of every
        rule to start from (read, never changed, by the caller either); `then`: makes the values
        to descend from when none is found near; `keeps`: the caller knows `near` keeps the pins
        (a witness found under them, or under more); `stored`: a solution with the value the
        caller knows of made a solution in the pins' state, else None (`transplanted`), tried
        before any mend."""
        state = self.state
        if state is None or self.traced.failed is not None or value not in self.traced.domains[name]:
            return None
        # A value is refuted in place (`State.refutes`: its propagation, no copy of the state),
        # and put in by a mend of a known solution: with `mend_first`, in either order, as a
        # refutation is sound and a mend of a solution of every rule or a stored solution is a
        # solution, so at most one of them answers, and each answers the same alone. The order
        # is the cost: a mend that cannot work costs more than a refutation (most of a
        # platform's choices on the SGLang pack, a backend's values impossible one after
        # another), and a refutation that refutes nothing costs a propagation where a working
        # mend costs a few rule checks (94 % of the refutations at 5,000 synthetic fields,
        # where most values mend in). So a field whose last value was refuted has its next one
        # refuted first; the others are mended first, and refuted only before their search,
        # whose propagation of the value is the refutation's.
        refuted_first = not self.mend_first or name in self._refuting
        if refuted_first:
            if state.refutes(name, value, self.cp.never):
                return None
            self._refuting.discard(name)
        if stored is not None and (found := stored(state)) is not None:
            return found
        # A solution of every rule (what `near` is) that keeps the pins solves the state: then
        # only the rules around what the new value narrows can break, and the repair looks there.
        # (Asked again for the same `near`, mostly, or told: a check of every pin per value was a
        # pass over ~460 pins at 5,000 fields.)
        if near is not self._near[0]:
            given = near
            if isinstance(near, MappingProxyType):
                # A stored solution handed out read-only (`Supports.example`), copied once here:
                # the mend and the search each copy their hint, and a copy through the proxy
                # costs ten of a dict's (~1.2 ms at 5,000 fields, for ~460 values per call).
                near = near.copy()
            elif type(near) is dict:
                # (A solution met last, stored: what is mended from it is stored as its changes.)
                near = Mended(near)
            base = state.domains
            self._near = (
                given,
                near,
                near is not None
                and (keeps or (len(near) == len(base) and all(near[n] in base[n] for n in self.pinned))),
            )
        near, solves = self._near[1], self._near[2]
        if solves and near is not None:
            mended = self.cp.mend(state, near, name, value)
            if mended is not None:
                return mended
        # Not mended: `search` follows the change along the rules it breaks (`chase`), mostly a
        # solution a few rules away or a refutation, before a descent from `then`'s start.
        changed: list[str] | None = [] if solves else None
        # In place and taken back (`search` leaves a state as it found it): a copy of the state
        # per value searched was a pass over every field and open rule. The fix and the step
        # past it are `refutes`' own, when it did not run first.
        if not state.fix(name, value, changed):
            self._refuting.add(name)
            return None
        if not refuted_first and state.dead_end([name], self.cp.never):
            state.undo()
            self._refuting.add(name)
            return None
        if not solves and then is not None:
            near, then = then(), None  # (where the search starts, made once it will run)
        # (As a `Mended` of `near`: a solution `repair` makes of it is stored as its changes.)
        hint = Mended(near or {})
        hint[name] = value
        hint.changed.append(name)
        try:
            return self.cp.search(
                state,
                task=f"{self.task} for {name}",
                hint=hint,
                around=changed,
                then=None if then is None else lambda: {**then(), name: value},
            )
        finally:
            state.undo()


def sweep(
    cp: CompiledPack,
    supports: Supports,
    bases: dict[str | None, Witnesses],
    names: Sequence[str],
    values: Mapping[str, Scalar],
    keep: Collection[str] = (),
    under: PinSet | None = None,
) -> dict[str, set[Scalar]]:
    """Values of the fields without a pin proven possible by walking one solution of the pins
    through them: each value is put in and the rules it breaks mended around it
    (`CompiledPack.mend_in_place`), so every step is a solution and proves the values it
    changed. Costs the rules around each value, not a pass over every field per value, which is
    what keeps choices on a pack of thousands of fields from growing as the square of its size.
    The values a step cannot mend in are left to the search; the last solution is kept, and so
    is each step that put in a value of a field of `keep` (a witness someone will ask for:
    `solver.reasoning.givenchoices`). `under`: `values` as `Supports.pin_set` makes them, if
    the caller has made it (the very set its own refutations are kept under: a refutation
    stored under an equal set of another object compares the two, ~475 pins, per refutation)."""
    if under is None:
        under = supports.pin_set(values)
    keeping = supports.keeping(under)
    start = supports.example(keeping)
    if start is None or not names:
        return {}
    if None not in bases:
        bases[None] = Witnesses(cp, values, "listing choices", mend_first=True)
    state = bases[None].state
    if state is None:
        return {}
    walk = dict(start)
    proven: dict[str, set[Scalar]] = {n: {walk[n]} for n in names}
    # Values an earlier question proved impossible under fewer pins: a mend of one cannot work
    # (and a failed mend costs several times a working one).
    refuted = supports.refuted(under)
    failed: dict[str, int] = {}
    for name in names:
        known = proven[name]
        known.update(supports.proven(name, cp.domains[name], keeping))
        for value in state.domains[name]:
            if value in known or (refuted and (name, supports.tag(value)) in refuted):
                continue
            if failed.get(name, 0) > 2 and state.refutes(name, value, cp.never):
                # Three values of a field in a row that would not mend: the next is mostly
                # impossible too (a platform's missing backends), and a refutation costs less
                # than a failed mend (npu 68 -> 55 ms; refuting every value: others +30-60 %).
                supports.refute(under, name, value)
                continue
            changed = cp.mend_in_place(state, walk, name, value)
            failed[name] = failed.get(name, 0) + 1 if changed is None else 0
            if changed is not None and name in keep:
                supports.add(dict(walk))  # (a copy: the walk goes on changing)
            for other in changed or ():
                if other in proven:
                    proven[other].add(walk[other])
    supports.add(walk)
    return proven


# The stored solutions `transplanted` tries, the pins it puts into one at most (each costs the
# rules reading it), and the rules those may break that it mends (a few fields each).
_TRANSPLANT_ROWS = 3
_TRANSPLANT_PINS = 2
_TRANSPLANT_BROKEN = 3


def transplanted(
    cp: CompiledPack,
    supports: Supports,
    pins: Mapping[str, Scalar],
    name: str,
    value: Scalar,
    state: State | None = None,
) -> dict[str, Scalar] | None:
    """A stored solution with `name = value` and the `pins` it lacks put in, with the fields of
    the few rules that breaks decided again in `state` (`redecide`; `state`: the pins'
    propagated state, None to decide nothing again), when every rule reading a field it changed
    then holds (every other rule it kept already): a solution of every rule. Else None. The
    newest stored ones keeping the most pins (`Supports.latest`): a value possible on one
    platform's page is mostly possible on the next one's by a configuration of the last one
    (SGLang's `moe_a2a_backend` values `deepep_v2`, `pplx`, `flashinfer_megamoe` off CUDA: a
    failed mend and a search, ~3 ms each, on every platform asked after the first)."""
    by_field = cp.constraints_by_field
    for row in supports.latest(name, value, pins, _TRANSPLANT_ROWS):
        # (The same type as well: a stored `1` is not the pin `True`, which rules may tell apart.)
        moved = [n for n, v in pins.items() if n in row and not (row[n] == v and type(row[n]) is type(v))]
        if len(moved) > _TRANSPLANT_PINS:
            continue
        row.update((n, pins[n]) for n in moved)
        broken = [rule for n in moved for rule in by_field.get(n, ()) if not rule.holds(rule.pick(row))]
        if not broken:
            return row
        if state is None or len(broken) > _TRANSPLANT_BROKEN:
            continue
        # Their fields the state leaves free decided again (the pins and the value are fixed
        # there), then every rule reading a changed field checked: whatever the state closed
        # or left open, and whatever stored values its propagation has removed since.
        domains = state.domains
        region = sorted({f for rule in broken for f in rule.fields if f != name and len(domains[f]) > 1})
        if not region or len(region) > SWEEP_FIELDS:
            continue
        kept = domains[name]
        domains[name] = [value]
        try:
            decided = redecide(state, row, region)
        finally:
            domains[name] = kept
        if decided and all(
            rule.holds(rule.pick(row)) for n in (*moved, *region) for rule in by_field.get(n, ())
        ):
            return row
    return None


def search_start(
    supports: Supports,
    values: Mapping[str, Scalar],
    name: str,
    value: Scalar,
    last: Mapping[str, Scalar] | None,
) -> dict[str, Scalar]:
    """Where a search for `name = value` starts: a known solution with that value keeping as
    many of the other pins as it can (else the last solution met). (Putting in as well a value
    no solution proves yet for each later field cost more than it saved: benchmarks/README.md.)"""
    others = {n: v for n, v in values.items() if n != name}
    return dict(supports.closest(name, value, others) or last or {})
