"""A decision's value: the first of a ranking that works (`first_working`), and, for a field with
warn rules, the first that works without a warning some solution avoids (`first_unwarned`).

Auto never takes a value a warn rule flags while another works (constraints/README.md, "Warn
rules"). The ranking (`Plan.ranking`) flags a value when the rule fails on the decided values and
those propagation forced; a rule can also be broken in every solution because the rules force a
later field only through a search (`b = q` needs `c = p` and `c != p`: no single rule narrows `b`),
which the ranking cannot see (tests/test_laws_trust.py,
`_WARNED_BY_A_LATER_FIELD_ONLY_SEARCH_FORCES`).

`broken_everywhere` answers that exactly for the value a decision is about to take: the solution
that proved the value works (the witness) mostly keeps every warn rule, which settles it without a
search; only a rule the witness breaks costs a search, of the state with the rule added.

Even that is mostly spared: `settle` decides with the ranking alone first, and the answer is a
witness for every decision at once (`steering_matters`): only when it breaks a warn rule that was
still open when a field it reads was decided (2 of 255 decisions of the SGLang benchmark requests)
are the decisions made again, exactly.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from solver.engine.csp import SearchTrace, State
from solver.engine.state import Constraint
from solver.model import Scalar, given_key
from solver.pack.expr import Condition
from solver.reasoning.plan import Plan

__all__ = ["broken_everywhere", "first_unwarned", "first_working", "kept_by", "steering_matters"]


def kept_by(
    plan: Plan,
    name: str,
    value: Scalar,
    witness: Mapping[str, Scalar],
    decided: Mapping[str, Scalar],
    forced: Mapping[str, Scalar],
) -> bool:
    """Whether `witness` (a solution with `name` at `value`) shows that each warn rule of `name`
    that the decided and `forced` values leave open can hold (see `broken_everywhere`): False when
    some rule needs a look."""
    return next(_needing_a_look(plan, name, value, witness, decided, forced), None) is None


def _needing_a_look(
    plan: Plan,
    name: str,
    value: Scalar,
    witness: Mapping[str, Scalar],
    decided: Mapping[str, Scalar],
    forced: Mapping[str, Scalar],
) -> Iterator[str]:
    """The warn rules of `name`, in the pack's order, that the witness breaks and the decided and
    `forced` values leave open: only these can be broken in every solution."""
    rules = plan.compiled.warn_rules
    for rid in plan.warn_rules.get(name, ()):
        cond = rules[rid]
        if not _keeps(cond, witness, forced) and _read(cond, name, value, decided, forced) is None:
            yield rid


def broken_everywhere(
    plan: Plan,
    state: State,
    name: str,
    value: Scalar,
    witness: Mapping[str, Scalar],
    decided: Mapping[str, Scalar],
    forced: Mapping[str, Scalar],
) -> str | None:
    """The first warn rule of `name` (in the pack's order) that no solution of `state` keeps,
    with `name` fixed at `value` in `state` and `witness` a solution of it; None when each can
    hold. `forced`: the values of later fields the ranking read (propagation forced them, or
    facts nobody gave at their assumed values, which a solution must keep too). A rule the
    decided and forced values decide is the ranking's (`Plan.warned`), not asked again."""
    cp = plan.compiled
    # (Mostly the witness keeps each rule: no more to ask.)
    for rid in _needing_a_look(plan, name, value, witness, decided, forced):
        changed: list[str] = []
        pins = {f: forced[f] for f in cp.warn_rules[rid].fields if f in forced}
        extended = state.extended(pins, [_warn_constraint(plan, rid)], changed)
        if extended is None:
            return rid
        # (The witness breaks only the rule and what `pins` changed: the search starts there.)
        found = cp.search(extended, task="resolving the request", hint=witness, around=changed)
        if found is None:
            return rid
    return None


def _warn_constraint(plan: Plan, rule_id: str) -> Constraint:
    """The warn rule as a constraint, made once per compiled pack."""
    cp = plan.compiled
    made: dict[str, Constraint] = cp.memo.setdefault("warn-constraints", {})
    con = made.get(rule_id)
    if con is None:
        con = made[rule_id] = cp.constraint_of(rule_id, cp.warn_rules[rule_id])
    return con


def _keeps(cond: Condition, witness: Mapping[str, Scalar], forced: Mapping[str, Scalar]) -> bool:
    """The witness keeps the rule, at the values `forced` says (a fact assumed later may differ
    in it; the decided and propagated ones cannot)."""
    if forced and any(f in forced and forced[f] != witness[f] for f in cond.fields):
        return False
    return bool(cond.holds(tuple([witness[f] for f in cond.fields])))


def _read(
    cond: Condition, name: str, value: Scalar, decided: Mapping[str, Scalar], forced: Mapping[str, Scalar]
) -> bool | None:
    """The rule three-valued on what is known with `name` at `value` (the ranking's reading)."""
    known: dict[str, Scalar] = {name: value}
    for f in cond.fields:
        if f in forced:
            known[f] = forced[f]
        elif f in decided and f != name:
            known[f] = decided[f]
    for g in cond.given:  # (the request's marks, as `_decide` marks them)
        mark = given_key(g)
        if mark in decided:
            known[mark] = decided[mark]
    return cond.partial(known)


def steering_matters(
    plan: Plan,
    solution: Mapping[str, Scalar],
    fixed: list[str],
    trace: SearchTrace,
    values: Mapping[str, Scalar],
    assumed: Mapping[str, Scalar],
) -> bool:
    """Whether exact warn steering could decide otherwise than the ranking did: the answer
    breaks a warn rule that was still open (three-valued) when a field it reads was decided, or
    differs from a later value some ranking read (a fact assumed at its turn at another value).
    Else the answer itself shows, at each decision, that the value taken keeps every warn rule
    of the field some solution keeps, or that the ranking had flagged it: the exact decisions
    are the same."""
    for forced in trace.forced.values():
        if any(solution[f] != v for f, v in forced.items()):
            return True
    # (The warn rules the answer breaks are its warnings: kept for them, `trace.broken`.)
    broken = trace.broken = [
        rid for rid, (pick, holds) in plan.warn_checks.items() if not holds(pick(solution))
    ]
    if broken:
        decided = set(fixed)
        for rid in broken:
            cond = plan.compiled.warn_rules[rid]
            for name in cond.fields:
                if name in decided and _open_at(plan, cond, name, solution, trace, values, assumed):
                    return True
    return False


def _open_at(
    plan: Plan,
    cond: Condition,
    name: str,
    solution: Mapping[str, Scalar],
    trace: SearchTrace,
    values: Mapping[str, Scalar],
    assumed: Mapping[str, Scalar],
) -> bool:
    """Whether warn rule `cond` was undecided (three-valued) on what the ranking of `name` read
    with its value: the request, the fields before it, the later ones it read (`trace.forced`)."""
    here = plan.position(name)
    known = {f: solution[f] for f in cond.fields if f in values or f in assumed or plan.position(f) <= here}
    known.update(trace.forced.get(name, {}))
    known.update({given_key(g): True for g in cond.given if g in values})
    return cond.partial(known) is None


def first_working(
    plan: Plan,
    state: State,
    witness: Mapping[str, Scalar],
    name: str,
    ranked: list[Scalar],
    current: list[Scalar],
) -> tuple[Scalar, Mapping[str, Scalar]] | None:
    """The first of `ranked` that keeps the request solvable, fixed in `state`, with a solution
    that has it; None (state unchanged) when none does."""
    # Mostly the first value is taken: a short domain is searched as it is, not made a set.
    allowed = current if len(current) <= 8 else set(current)
    for value in ranked:
        if value not in allowed:
            continue
        if not state.fix(name, value):
            continue
        # The witness satisfies every decision so far; if it already has this value, it proves
        # the value works.
        if witness.get(name) != value:
            # The old witness with the new value is often still a solution, or one after a few
            # fields around the change are redone: then no search of the whole pack.
            found = plan.compiled.search(
                state,
                task="resolving the request",
                hint={**witness, name: value},
                around=state.last_changed(),
            )
            if found is None:
                state.undo()
                continue
            witness = found
        return value, witness
    return None


def first_unwarned(
    plan: Plan,
    state: State,
    witness: Mapping[str, Scalar],
    name: str,
    tried: list[Scalar],
    current: list[Scalar],
    decided: Mapping[str, Scalar],
    forced: Mapping[str, Scalar] | None,
    trace: SearchTrace,
) -> tuple[tuple[Scalar, Mapping[str, Scalar]] | None, list[Scalar]]:
    """`first_working` for a field with warn rules, with the flags made exact: a value the
    ranking left unflagged that every solution gives a warning (`broken_everywhere`) is
    moved among the flagged ones (recorded in `trace.flagged`) and the next is tried. Also the
    ranking as it ends up (the flagged values last, in the preferences' order)."""
    preferred, flagged = plan.preferred_flagged(name, decided, forced)
    read = forced or {}
    moved: dict[Scalar, str] = {}
    for value in tried:
        if value in flagged:
            continue
        found = first_working(plan, state, witness, name, [value], current)
        if found is None:
            continue
        rid = broken_everywhere(plan, state, name, value, found[1], decided, read)
        if rid is None:
            if moved:
                trace.flagged[name] = moved
            return found, _flagged_last(preferred, flagged, moved)
        state.undo()
        witness, moved[value] = found[1], rid
    if moved:
        trace.flagged[name] = moved
    ranked = _flagged_last(preferred, flagged, moved)
    rest = [v for v in ranked if v in tried and (v in flagged or v in moved)]
    return first_working(plan, state, witness, name, rest, current), ranked


def _flagged_last(
    preferred: Sequence[Scalar], flagged: Mapping[Scalar, str], moved: Mapping[Scalar, str]
) -> list[Scalar]:
    if not moved:
        return [v for v in preferred if v not in flagged] + [v for v in preferred if v in flagged]
    out = [v for v in preferred if v not in flagged and v not in moved]
    return out + [v for v in preferred if v in flagged or v in moved]
