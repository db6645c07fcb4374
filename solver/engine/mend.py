"""Mending a solution: a known solution of a state made to hold one more value by deciding again
only the fields of the rules that value breaks (`mend`, `mend_in_place`), without propagating it.
What choices and witnesses use to walk one solution through many values (`CompiledPack.mend`).
"""

from __future__ import annotations

from collections.abc import Mapping

from solver.engine.localsearch import SWEEP_FIELDS, redecide, repair
from solver.engine.state import State
from solver.model import Scalar

__all__ = ["mend", "mend_in_place"]


def mend(state: State, solution: Mapping[str, Scalar], name: str, value: Scalar) -> dict[str, Scalar] | None:
    """A solution of `state` with `name = value`, made from `solution` (a solution of
    `state`) by deciding again only the fields of the rules the new value breaks, without
    propagating it; None when that small repair does not find one (not a refutation).

    Sound because every rule `state` has closed is kept by any values of its domains, and
    the open rules that do not read `name` or a field decided again keep `solution`'s values.
    Costs a few rule checks where `assign` + `search` costs a propagation of the new value.
    """
    if value not in state.domains[name]:
        return None
    # The value put in place for the repair and taken back (as `mend_in_place`): a copy of
    # every field's domain per mend, and of the solution before `repair` copies it again,
    # were two passes over the pack per value choices mends in.
    kept = state.domains[name]
    state.domains[name] = [value]
    try:
        mended, _ = repair(state, solution, [name])
    finally:
        state.domains[name] = kept
    return mended


def mend_in_place(
    state: State, solution: dict[str, Scalar], name: str, value: Scalar, *, rounds: int = 1
) -> list[str] | None:
    """`mend`, changing `solution` in place: `name = value` and the few fields around the
    rules that breaks decided again. The fields changed (`name` first), or None with
    `solution` as it was. Costs the rules around `name`, never a pass over every field, so
    a sweep can walk one solution through every value of a large pack.

    `rounds`: how many times the region may grow by a ring of neighbours. One by default: a
    sweep leaves what it cannot mend to a search anyway, and on the SGLang pack's page
    sessions 97 % of the mends that a second or third ring made work failed all the same
    (1,772 failures at ~1.6 ms each against 106 late successes)."""
    if value not in state.domains[name]:
        return None
    old = solution[name]
    solution[name] = value
    region: set[str] = set()
    for con in state.by_field.get(name, ()):
        # (Not remembered: see `localsearch.repair`.)
        if con.key in state.open and not con.condition.holds(con.pick(solution)):
            free = [f for f in con.fields if f != name and len(state.domains[f]) > 1]
            if not free:
                solution[name] = old
                return None
            region.update(free)
    if not region:
        return [name]
    kept = state.domains[name]
    state.domains[name] = [value]
    try:
        # As `repair`: the fields of the broken rules first, then a ring of neighbours
        # more (a neighbour that must change may break a rule further out), a few times.
        for _ in range(rounds):
            if len(region) > SWEEP_FIELDS:
                break
            # (The region's values only: a copy of the whole solution per mend was a pass
            # over every field per value a sweep tries, ~37,000 at 5,000 fields.)
            before = {f: solution[f] for f in region}
            if redecide(state, solution, sorted(region)):
                return [name, *(f for f in sorted(region) if solution[f] != before[f])]
            grown = set(region)
            for field_ in region:
                for con in state.by_field.get(field_, ()):
                    if con.key in state.open:
                        grown.update(f for f in con.fields if f != name and len(state.domains[f]) > 1)
            if grown == region:
                break
            region = grown
    finally:
        state.domains[name] = kept
    solution[name] = old
    return None
