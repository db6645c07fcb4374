"""What the answer assumes of the facts nobody gave that the search may not choose
(`search = false`: a model's shape, the GPU count, an installed kernel, an environment
variable): never chosen to make the user's flags work, only read from the facts.

- `forced_by_facts`: the one value the facts decided so far leave a fact;
- `assumed_first`: a fact whose chain failed at its turn, assumed before the options decide;
- `assumed_values`: the value each such fact is assumed at, as the decisions assume it;
- `WarnReads`: what a field's warn rules read of later fields, those facts among them.
"""

from __future__ import annotations

from collections.abc import Mapping

from solver.engine.csp import DESCENT_FIRST, CompiledPack
from solver.engine.state import State
from solver.frozen import Frozen, frozen_type
from solver.model import Scalar
from solver.reasoning.plan import Plan

__all__ = ["AssumedFirst", "WarnReads", "assumed_first", "assumed_values", "forced_by_facts"]


def forced_by_facts(plan: Plan, decided: Mapping[str, Scalar], name: str) -> Scalar | None:
    """The one value of fact `name` that the facts decided so far (given or assumed) leave
    possible, the user's options aside; None when they leave more (or none)."""
    fields = plan.pack.fields
    facts = {n: v for n, v in decided.items() if n in fields and fields[n].kind == "fact" and n != name}
    cp = plan.compiled
    # Remembered (under the pack's memo budget) by the field and the facts: requests share their
    # hardware and model, and a start from the facts alone was a seventh of a resolve.
    memo = cp.memo.get("forced-by-facts")
    if memo is None:
        memo = cp.memo["forced-by-facts"] = cp.tables.table()
    key = (name, tuple(facts.items()))
    known = memo.get(key, memo)  # (one lookup: another thread's flush may empty the table)
    if known is not memo:
        return known  # type: ignore[no-any-return]
    only = _forced_by_facts_computed(cp, facts, name)
    cp.tables.store(memo, key, only)
    return only


def _forced_by_facts_computed(cp: CompiledPack, facts: Mapping[str, Scalar], name: str) -> Scalar | None:
    """`forced_by_facts`, computed."""
    start = cp.start(facts)
    if start is None:
        return None
    left = start.domain(name)
    if len(left) == 1:
        return left[0]  # propagation of the facts alone leaves one (the architecture's MLA trait)
    possible: list[Scalar] = []
    for value in left:
        if cp.satisfiable({**facts, name: value}, task="deriving a fact") is not None:
            possible.append(value)
            if len(possible) > 1:
                return None
    return possible[0] if possible else None


@frozen_type
class AssumedFirst(Frozen):
    """A fact assumed before the options decide (`assumed_first`)."""

    value: Scalar
    state: State
    """The request's state with the fact at `value`."""
    witness: Mapping[str, Scalar]
    """A solution that has it."""
    forced: bool
    """The facts decided so far leave it that one value (else: its chain's first that holds)."""


def assumed_first(
    plan: Plan, values: Mapping[str, Scalar], name: str, chain: list[Scalar], decided: Mapping[str, Scalar]
) -> AssumedFirst | None:
    """When the `chain` of `name`, an unset fact the search may not choose, fails at its turn
    (given what was `decided`), it is mostly because an option decided before it in the plan's
    order (an unsearched option's default, a searched option's best value) took its value
    away: a fact is assumed from the facts alone, never from the flags, so it is assumed first
    and the options decide around it. The value is the one the facts force, else the first of
    its chain that holds with the request (`values`); with the state and a solution that has
    it. None when the field is no such fact, or no value holds: the request then fails for the
    fact as assumed, and says so.

    The value is kept when the options then take another way, even where the fact's chain would
    read another value under their final picks: giving the fact at its assumed value must give
    the same answer (tests/test_laws.py, `test_giving_the_facts_an_answer_assumed_changes_nothing`),
    and taking the chain's new value would move the options back to their first picks. The
    answer says so (`provenance`, "assumed before the options were decided")."""
    spec = plan.pack.fields[name]
    if spec.kind != "fact" or spec.search or name in values:
        return None
    cp = plan.compiled
    only = forced_by_facts(plan, decided, name)
    for value in chain if only is None else [only]:
        state = cp.start({**values, name: value})
        # (A descent first: the request mostly holds with the value, and the witness only starts
        # the decisions, which are the same whatever it is.)
        witness = (
            cp.search(state, task="resolving the request", hint=DESCENT_FIRST) if state is not None else None
        )
        if state is not None and witness is not None:
            return AssumedFirst(value, state, witness, only is not None)
    return None


def assumed_values(plan: Plan, given: Mapping[str, Scalar]) -> dict[str, Scalar]:
    """The value assumed for each unset fact the search may not choose (`search = false`), in
    graph order: the first of its chain that keeps `given` and the facts assumed before it
    solvable, as the decisions assume it (`_decide`); none when no value of the chain does."""
    cp = plan.compiled
    todo = [
        n
        for n in plan.order
        if n not in given and plan.pack.fields[n].kind == "fact" and not plan.pack.fields[n].search
    ]
    if not todo:  # every such fact given: nothing to assume, and no search to say so
        return {}
    # Mostly each chain's first value that propagation of `given` leaves (the values before it
    # cannot hold) holds with the others: one search says so, and the loop below would take
    # exactly these; instead of a search per fact (~40 in the SGLang pack).
    start = cp.start(given)
    heads: dict[str, Scalar] = {}
    guess = dict(given)
    for name in todo if start is not None else ():
        left = start.domain(name)  # type: ignore[union-attr]
        head = next((v for v in plan.chain(name, guess)[0] if v in left), None)
        if head is None:
            break
        guess[name] = heads[name] = head
    if len(heads) == len(todo) and cp.satisfiable(guess, task="assuming the facts") is not None:
        return heads
    witness = cp.satisfiable(given, task="assuming the facts") if start is not None else None
    if witness is None:
        return {}  # no value of any fact holds with `given` (a conflicting request's other pins)
    assigned = dict(given)
    out: dict[str, Scalar] = {}
    for name in todo:
        for value in plan.chain(name, assigned)[0]:
            # A solution of what is assigned so far that has this value proves it holds.
            found = witness if witness.get(name) == value else None
            if found is None and (start is None or value in start.domain(name)):
                found = cp.satisfiable({**assigned, name: value}, task="assuming a fact")
            if found is not None:
                out[name] = assigned[name] = value
                witness = found
                break
    return out


class WarnReads:
    """What a field's warn rules read of the fields decided after it (`Plan.warn_forced`): the
    values propagation forced, and the value the answer assumes of each unset fact the search
    may not choose (`assume.assumed_values` of the request): read from the facts alone, it is as
    certain as a forced one, and giving it at that value must not change the answer
    (tests/test_laws.py, `_WARNED_BY_A_LATER_ASSUMED_FACT`). The assumed values are computed once
    per request, and only when a warn rule reads such a fact still open."""

    __slots__ = ("_assumed", "_plan", "_request")

    def __init__(self, plan: Plan, request: Mapping[str, Scalar]) -> None:
        self._plan = plan
        self._request = request
        self._assumed: dict[str, Scalar] | None = None

    def known(self, name: str, state: State, decided: Mapping[str, Scalar]) -> dict[str, Scalar]:
        plan = self._plan
        out = plan.warn_forced(name, state, decided)
        fields = plan.pack.fields
        for rid in plan.warn_rules.get(name, ()):
            for f in plan.compiled.warn_rules[rid].fields:
                if f in out or f in decided or fields[f].kind != "fact" or fields[f].search:
                    continue
                if self._assumed is None:
                    self._assumed = assumed_values(plan, self._request)
                if f in self._assumed:
                    out[f] = self._assumed[f]
        return out
