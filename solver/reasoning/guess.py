"""A resolution's first guess: each free field's likely value, and the first search from it.

`likely_values` guesses the resolution (each free field's best-ranked value, in graph order, with
what the rules force and the guesses before it), `first_search` searches a solution of the request
from that guess, with a second guess checked against the rules where no solution is near the first
one. Apart from `decide` because it is the search's start, not a decision: choices' first witness
and the diagnosis read it without deciding anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, overload

from solver.engine.csp import CompiledPack, Constraint, State
from solver.model import Field, Scalar, given_marks
from solver.reasoning.plan import Plan

__all__ = ["first_search", "follows_chain", "likely_values", "marked"]


def marked(values: Mapping[str, Scalar]) -> dict[str, Scalar]:
    """`values` with the marks of the fields they give: what a preference's `when` reads."""
    return {**given_marks(values), **values}


def follows_chain(spec: Field, predict: bool) -> bool:
    """Whether an unset field takes its chain (the first applicable preference's values, else its
    default) instead of the search's best value: an option in predict mode, and any field the
    search may not choose (`search = false`: resources, precision, a model's shape facts)."""
    return not spec.search or (predict and spec.kind == "option")


def first_search(
    plan: Plan,
    values: Mapping[str, Scalar],
    *,
    hint: Mapping[str, Scalar] | None = None,
    task: str = "checking the request",
) -> tuple[State | None, dict[str, Scalar] | None]:
    """A resolution's first step: the request's propagated state (None on a wipe-out) and a
    solution of its pins searched from `hint` (default: `likely_values`, the guess at the
    resolution), or None when the pins as given have none. A caller that needs only some
    solution of the pins (choices' first witness) stops here: the decisions after it are most
    of a resolution (at 5,000 synthetic fields ~0.4 s of a choices call)."""
    cp = plan.compiled
    state = cp.start(values)
    if state is None:
        return None, None
    start = likely_values(plan, values, state) if hint is None else hint
    # Where no solution is near that start, the guess made again with each value checked
    # against the rules (`checked`), before a descent through the whole group.
    return state, cp.search(
        state, task=task, hint=start, retry=lambda: likely_values(plan, values, state, checked=True)
    )


@overload
def likely_values(
    plan: Plan, values: Mapping[str, Scalar], state: State | None = None, *, checked: Literal[False] = False
) -> dict[str, Scalar]: ...
@overload
def likely_values(
    plan: Plan, values: Mapping[str, Scalar], state: State | None = None, *, checked: bool
) -> dict[str, Scalar] | None: ...
def likely_values(
    plan: Plan, values: Mapping[str, Scalar], state: State | None = None, *, checked: bool = False
) -> dict[str, Scalar] | None:
    """Each free field's best-ranked value, a guess at the resolution that the first search tries
    first, so its witness mostly agrees with the greedy decisions (each agreement saves a search)
    and packs whose preferences point at working values need no backtracking to find it.

    With the request's propagated `state`, the guess follows the decisions more closely: fields in
    graph order, each ranked with the values the rules force and the guesses before it (as
    `_decide` ranks it with the decided values), and only values the state still allows. A
    preference that reads a derived fact (SM100's TensorRT-LLM MHA for a model the architecture
    makes MHA) then points the witness at its value, where a guess from the request alone missed
    it and the decision of that field needed the backtracking search.

    `checked` (with `state`; a search's second guess, where no solution was near the first):
    each field takes the first value, of its ranking and then of the rest of its domain, that
    breaks no open rule it reads: neither one whose fields are all known (fixed in `state` or
    guessed before it) nor, by the rule's three-valued form (`CompiledPack.never`), one whose
    other fields are not guessed yet. Forward checking leaves "an FA4 backend on SM100 needs
    --page-size 128" open while the prefill and decode backends are free, so the plain guess
    took page size 1, and a model the architecture makes DSA is_dsa false (a fact's chain is
    its default alone); the search's repair of such a guess gave up past its step limit and the
    strengthened descent through the whole group took ~1.5-2 ms (r18-gemma4, D-b200-Llama-fa4,
    r18-lfm2, o6-dsa-learnable-sinks, r18-hyv4). None at the first field no value fits: a
    guess that breaks a rule anyway is mostly no nearer a solution than the plain one, and
    past the first misfit the checks were wasted (the 1,000-field synthetic request's first
    misfit comes at its 69th of 905 fields: the whole guess, 11.6 ms, and its failed repair,
    2.4 ms, were spent before the same descent)."""
    if state is None:
        read = marked(values)
        return {name: plan.ranking(name, read)[0][0] for name in plan.order if name not in values}
    guess: dict[str, Scalar] = marked(values)
    out: dict[str, Scalar] = {}
    known = _Known(state) if checked else None
    for name in plan.order:
        if name in values:
            continue
        current = state.domain(name)
        if len(current) == 1:
            guess[name] = current[0]
            continue
        spec = plan.pack.fields[name]
        ranked = plan.chain(name, guess)[0] if follows_chain(spec, False) else plan.best_first(name, guess)
        allowed = set(current)
        first = next((v for v in ranked if v in allowed), current[0])
        if known is not None:
            fits = _fitting_guess(plan.compiled, state, name, [*ranked, *current], allowed, known)
            if fits is None:
                return None
            known.guessed(name, fits)
            first = fits
        out[name] = guess[name] = first
    return out


class _Known:
    """(`likely_values`, `checked`) The values fixed in `state` or guessed so far, and for each
    open rule asked about, those of its fields as `CompiledPack.never` reads them: made at the
    rule's first question (its fields' order) and grown by each later guess of one of its fields.
    A guess asks every open rule reading the field (~400 questions per SGLang request, fewer
    than one in ten answered with a value): a tuple made anew per question from every field of
    the rule was half of the guess."""

    __slots__ = ("by_rule", "state", "values")

    def __init__(self, state: State) -> None:
        self.state = state
        self.values = {n: d[0] for n, d in state.domains.items() if len(d) == 1}
        self.by_rule: dict[str, tuple[tuple[str, Scalar], ...]] = {}

    def of(self, con: Constraint) -> tuple[tuple[str, Scalar], ...]:
        found = self.by_rule.get(con.key)
        if found is None:
            values = self.values
            found = self.by_rule[con.key] = tuple([(f, values[f]) for f in con.fields if f in values])
        return found

    def guessed(self, name: str, value: Scalar) -> None:
        self.values[name] = value
        by_rule = self.by_rule
        for con in self.state.by_field.get(name, ()):
            found = by_rule.get(con.key)
            if found is not None:
                by_rule[con.key] = (*found, (name, value))


def _fitting_guess(
    cp: CompiledPack,
    state: State,
    name: str,
    ranked: list[Scalar],
    allowed: set[Scalar],
    known: _Known,
) -> Scalar | None:
    """(`likely_values`, `checked`) The first of `ranked` that `state` allows and that breaks no
    open rule reading `name`, with `known` the values fixed or guessed so far; None if none.
    One verdict per rule (`CompiledPack.never`, remembered): with every other field of a rule
    known it names exactly the values that break it.

    Mostly the first allowed value of the ranking fits: it is checked alone, and a rule that
    value keeps whatever the rule's other fields hold (`_kept_alone`) is not asked, since a
    verdict from more known values never breaks a value the rule keeps with fewer (three-valued
    evaluation only decides more as more is known): about half of the ~400 questions of an
    SGLang request's guess. Only when it is broken are all the rules asked, as before."""
    open_ = state.open
    kept = cp.verdicts_kept()  # (read here: a call per question was a fifth of the guess)
    first = next((v for v in ranked if v in allowed), None)
    if first is None:
        return None
    alone = _kept_alone(cp, name)
    for con in state.by_field.get(name, ()):
        if con.key not in open_:
            continue
        keeps = alone.get(con.key)
        if keeps is not None and keeps[0] is con and first in keeps[1]:
            continue
        asked = known.of(con)
        found = kept.get((id(con.constraint), name, asked))
        if first in (found[1] if found is not None else cp.never(con, name, asked)):
            break
    else:
        return first
    broken: set[Scalar] = set()
    for con in state.by_field.get(name, ()):
        if con.key in open_:
            asked = known.of(con)
            found = kept.get((id(con.constraint), name, asked))
            broken.update(found[1] if found is not None else cp.never(con, name, asked))
    return next((v for v in ranked if v in allowed and v not in broken), None)


def _kept_alone(cp: CompiledPack, name: str) -> dict[str, tuple[Constraint, frozenset[Scalar]]]:
    """For each rule of the pack reading `name`, by id: the rule and the values of `name` that
    keep it whatever its other fields hold (`CompiledPack.verdicts` with nothing else known),
    remembered per compiled pack and field (under its memo budget: the same for every request)."""
    memo = cp.memo.get("kept-alone")
    if memo is None:
        memo = cp.memo["kept-alone"] = cp.tables.table()
    found: dict[str, tuple[Constraint, frozenset[Scalar]]] | None = memo.get(name)
    if found is None:
        found = {
            con.key: (con, cp.verdicts(con.key, name, ())[0])
            for con in cp.constraints_by_field.get(name, ())
            if con.key in cp.rules
        }
        cp.tables.store(memo, name, found)
    return found
