"""Whether the rules force a field's value, and which: the test that tells a value the rules
leave alone (said as the rules' doing) from one the answer assumed (said under ASSUMED). Read by
provenance (`solver.reasoning.provenance`), each answer kept under the compiled pack's entry
budget: every unset fact asks on every request.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeAlias

from solver.budget import within_cap
from solver.engine.constraint import projected
from solver.engine.state import State, picker
from solver.frozen import Frozen, frozen_type
from solver.model import Pin, Scalar
from solver.reasoning.plan import Plan, facts_narrowed

__all__ = [
    "FactsAlone",
    "deeply_forced",
    "facts_alone",
    "facts_force",
    "facts_force_walk",
    "forcing_rules",
]

_Values = Mapping[str, Scalar]
_Pins = Mapping[str, Pin]
_Alone: TypeAlias = "FactsAlone | None"  # (a text: `Optional["..."]` compiled it at import)


@frozen_type
class FactsAlone(Frozen):
    """The domains propagation leaves from a request's facts alone (`facts_alone`)."""

    facts: tuple[tuple[str, str, Scalar], ...]
    """The facts given (name, type, value): what the domains depend on (`facts_force` remembers
    by it)."""
    domains: Mapping[str, Sequence[Scalar]]


def facts_alone(plan: Plan, pins: Mapping[str, Pin]) -> FactsAlone | None:
    """The domains propagation leaves from the facts among `pins` alone, narrowed further by the
    rules over facts (`plan.facts_narrowed`), None when they conflict; kept per set of facts
    under the compiled pack's entry budget (requests come about a few machines and models).
    (Not through the options' rules, though sound here: that doubled a first call's cost; a fact
    forced only through them is `deeply_forced`'s.)"""
    fields, cp = plan.pack.fields, plan.compiled
    facts = {n: p.value for n, p in pins.items() if fields[n].kind == "fact"}
    # (By type too: `1` and `true` are equal keys.)
    key = tuple(sorted((n, type(v).__name__, v) for n, v in facts.items()))
    kept: dict[Any, FactsAlone | None] | None = cp.memo.get("facts-alone")
    if kept is None:
        kept = cp.memo["facts-alone"] = cp.tables.table()
    found = kept.get(key, kept)  # (one lookup: another thread's flush may empty the table)
    if found is not kept:
        return found  # type: ignore[return-value]
    # (Through the rules over several facts too, which propagation leaves open: a DeepSeek-V2's
    # MLA traits through its architecture's rule, then its head size through theirs.)
    state = cp.start(facts)
    made = None if state is None else FactsAlone(key, facts_narrowed(plan, state))
    cp.tables.store(kept, key, made)
    return made


@frozen_type
class _Reads(Frozen):
    """The fields the rules reading a field read besides it, as `_reads_kept` keeps them."""

    fields: tuple[str, ...]
    pick: Callable[[Mapping[str, Scalar]], tuple[Scalar, ...]]
    """Their values in a mapping, one call (`picker`): every unset fact asks on every request."""
    names: frozenset[str]


def _reads_kept(plan: Plan, name: str, kind: str) -> tuple[dict[Any, Any], _Reads]:
    """The compiled pack's table (under its entry budget) of answers about `name` of one `kind`,
    and the fields the rules reading `name` read besides it: what such an answer depends on,
    with the field's own value. One table per kind, the fields shared by both kinds."""
    cp = plan.compiled
    kept: tuple[dict[str, dict[Any, Any]], dict[str, _Reads]] | None = cp.memo.get("provenance-answers")
    if kept is None:
        kept = cp.memo["provenance-answers"] = ({}, {})
    answers, reads = kept
    table = answers.get(kind)
    if table is None:
        table = answers[kind] = cp.tables.table()
    found = reads.get(name)
    if found is None:
        around = (f for _, _, _, others in plan.reading(name) for f in others)
        fields = tuple(dict.fromkeys(around))
        found = reads[name] = _Reads(fields, picker(fields), frozenset(fields))
    return table, found


def forcing_rules(plan: Plan, name: str, solution: Mapping[str, Scalar]) -> tuple[tuple[str, ...], str]:
    """Rules that, with the other fields as resolved, exclude the field's other values, and the
    provenance's text for them (their `because`s, each once; or that the domain has one value).

    A greedy cover: the rule excluding the most values first, until every other value is
    accounted for (or no rule alone excludes what is left: propagation through several rules).
    A rule that excludes nothing is never chosen, so it is not kept.

    Remembered (under the compiled pack's entry budget) by the field's value and the values of
    the fields those rules read: each request's forced facts come out of the same few hardware
    and model combinations, and the walk over a field's rules (up to 80) was a third of
    provenance.
    """
    answers, reads = _reads_kept(plan, name, "forcing")
    key = (name, solution[name], reads.pick(solution))
    found = answers.get(key)
    if found is None:
        forcing = tuple(_greedy_forcing(plan, name, solution))
        models = plan.compiled.models
        because = (
            "; ".join(dict.fromkeys(models[r].because for r in forcing))
            if forcing
            else "the only value the rules allow"
        )
        found = (forcing, because)
        plan.compiled.tables.store(answers, key, found)
    return found


def facts_force(
    plan: Plan,
    name: str,
    solution: Mapping[str, Scalar],
    pins: Mapping[str, Pin],
    *,
    alone: FactsAlone | None = None,
) -> bool:
    """Whether rules reading only facts besides `name` exclude every other value of `name` as
    resolved: the value then follows from the facts, not from the flags. A fact counts at its
    value when given or before `name` in the plan's order; one after it nobody gave counts as
    any value of its domain (else two facts nobody gave that a rule ties, `f1 == f5`, would
    each follow from the other, and neither be said as assumed: tests/test_laws.py,
    `_TIED_FACTS`). A fact the search chooses (the platform) also follows from the options the
    user typed (`--attention-backend fa3` is CUDA's); other options count as any value of their
    domain (never at the value the search gave them): a typed `f0 = true` under `when f0
    require f0 == f2 and f1 == 'p'` forces `f2` whatever `f1` is (tests/test_laws.py,
    `_FORCED_THROUGH_AN_OPTION`). With `alone` (`facts_alone`), a field not counted is any value
    propagation from the given facts leaves it: an option a rule forces whatever is given
    (explore seed 1830002: `f0 = q`) then forces a fact through another rule.

    Remembered like `forcing_rules`, by the values of the fields the rules read, which of them
    are given and the given facts `alone` read (all it depends on: the rest is the pack's): ~15
    forced facts per request,
    each a walk over the rules reading it (8 % of a resolution)."""
    answers, reads = _reads_kept(plan, name, "facts")
    if alone is not None and len(alone.domains[name]) == 1:
        return True  # (propagation from the given facts leaves it one value)
    given = alone.facts if alone is not None else None
    key = (name, solution[name], reads.pick(solution), reads.names.intersection(pins), given)
    found: bool | None = answers.get(key)
    if found is None:
        found = facts_force_walk(plan, name, solution, pins, alone)
        plan.compiled.tables.store(answers, key, found)
    return found


def facts_force_walk(plan: Plan, name: str, solution: _Values, pins: _Pins, alone: _Alone = None) -> bool:
    """`facts_force`, computed."""
    fields = plan.pack.fields
    domains = plan.compiled.domains if alone is None else alone.domains
    here = plan.position(name)
    searched = fields[name].search
    left = {v for v in domains[name] if v != solution[name]}
    for _, con, at, others in plan.reading(name):
        if not left:
            break
        if left <= con.allowed(at, tuple([solution[f] for f in others])):
            continue  # (most rules: excludes nothing even with every field as resolved)
        counted = [
            f
            for f in others
            if (f in pins and (searched or fields[f].kind == "fact"))
            or (fields[f].kind == "fact" and plan.position(f) < here)
        ]
        read: dict[str, Sequence[Scalar]] = {f: (solution[f],) for f in counted}
        free = [f for f in con.fields if f not in read]
        read.update((f, domains[f]) for f in free if f != name)
        read[name] = list(left)
        supported = projected(con, free, read)
        if supported is not None:
            left &= supported[name]
    return not left


# The steps one search may take to show that the facts decide a fact (`deeply_forced`): past
# them the fact stays under ASSUMED, loud and never wrong. A search from the answer with the fact
# changed mostly ends in a few steps (SGLang's oracle scenarios: each fact under ASSUMED takes
# one; a fact the facts decide, a refutation, a few hundred).
_DEEP_STEPS = 4000


def deeply_forced(
    plan: Plan, solution: Mapping[str, Scalar], pins: Mapping[str, Pin], names: Sequence[str]
) -> frozenset[str]:
    """Of `names` (facts nobody gave that provenance would list ASSUMED: neither propagation
    from the facts nor a rule alone, `facts_force`, decides them), those no other value holds for
    with the fields `facts_force` counts (the facts given, each fact before it in the plan's
    order at its value, and for a fact the search chooses the options typed), as a search shows
    (SGLang: on mps with moe_experts_w4a16 no all-to-all backend that reads
    a2a_dispatch_budget_raised works, so it is false; only a search shows it).

    Mostly the answer with the fact changed is a solution too (`_changes_alone`: ~95 % of them
    on SGLang's oracle scenarios). The others take one state per request, each fact fixed at its
    value after its turn, and each other value one search from the answer (`_DEEP_STEPS` at most:
    a search that runs out leaves the fact ASSUMED, loud and never wrong). Each answer is
    remembered (under the compiled pack's entry budget) by the fact, its value and the values of
    the fields counted: all it depends on. A search per fact from the facts alone was ~10 ms,
    ~27 of them per SGLang request."""
    fields = plan.pack.fields
    asked = [n for n in names if not _changes_alone(plan, solution, n)]
    if not asked:
        return frozenset()
    cp = plan.compiled
    kept: tuple[tuple[str, ...], dict[Any, bool]] | None = cp.memo.get("deeply-forced")
    if kept is None:
        facts = tuple(n for n in plan.order if fields[n].kind == "fact")
        kept = cp.memo["deeply-forced"] = (facts, cp.tables.table())
    facts, table = kept
    given = tuple(sorted((n, type(p.value).__name__, p.value) for n, p in pins.items()))
    given_facts = tuple(g for g in given if fields[g[0]].kind == "fact")
    keys: dict[str, Any] = {}
    # Each fact's (type, value) made once, each key's earlier facts a slice of them (the same
    # keys): a pair per earlier fact per fact asked was 14,571 tuples per call at 5,000 synthetic
    # fields (34 facts asked, ~430 earlier each; 767 pairs now), alive together until the keys
    # were read, and explain asks four times: 3-4 more young collections per explain (11-13
    # against 7-9), each a walk over what is alive, and the tuples' making besides.
    typed = [(type(solution[f]).__name__, solution[f]) for f in facts]
    for name in asked:
        earlier = tuple(typed[: facts.index(name)])
        counted = given if fields[name].search else given_facts
        keys[name] = (name, type(solution[name]).__name__, solution[name], counted, earlier)
    known = {n: table.get(k) for n, k in keys.items()}
    todo = [n for n, found in known.items() if found is None]
    if todo:
        for name, found in _deeply_forced_walk(plan, solution, pins, todo).items():
            known[name] = found
            cp.tables.store(table, keys[name], found)
    return frozenset(n for n, found in known.items() if found)


def _deeply_forced_walk(
    plan: Plan, solution: Mapping[str, Scalar], pins: Mapping[str, Pin], names: Sequence[str]
) -> dict[str, bool]:
    """`deeply_forced`, computed for each of `names`: a pass over the plan's order for the facts
    the search may not choose (the given facts pinned), another for those it chooses (every pin)."""
    fields = plan.pack.fields
    out: dict[str, bool] = {}
    for searched in (False, True):
        todo = {n for n in names if fields[n].search is searched}
        if not todo:
            continue
        given = {n: p.value for n, p in pins.items() if searched or fields[n].kind == "fact"}
        state = plan.compiled.start(given)
        if state is None:
            continue  # (never: the answer holds them)
        before: list[tuple[str, Scalar]] = []  # the facts before the next one asked, to fix
        for name in plan.order:
            if not todo:
                break
            if name in given or fields[name].kind != "fact":
                continue
            if name in todo:
                todo.discard(name)
                # (One propagation for the facts since the last one asked: a `fix` each was
                # most of the walk.)
                if before and not state.fix_all(before):
                    break  # (never: the answer holds every fact at its value)
                before.clear()
                out[name] = _no_other_value(plan, state, solution, name)
            before.append((name, solution[name]))
    return out


def _changes_alone(plan: Plan, solution: Mapping[str, Scalar], name: str) -> bool:
    """Whether every rule reading `name` allows another of its values with the other fields as
    in `solution`: then `solution` with that value is a solution too (the fields `deeply_forced`
    counts at theirs), and `name` is not forced. Remembered like `forcing_rules`, by the values
    of the fields those rules read (~25 facts asked per SGLang request)."""
    answers, reads = _reads_kept(plan, name, "alone")
    key = (name, solution[name], reads.pick(solution))
    found: bool | None = answers.get(key)
    if found is None:
        value = solution[name]
        left = {v for v in plan.compiled.domains[name] if v != value}
        for _, con, at, others in plan.reading(name):
            left &= con.allowed(at, tuple([solution[f] for f in others]))
            if not left:
                break
        found = bool(left)
        plan.compiled.tables.store(answers, key, found)
    return found


def _no_other_value(plan: Plan, state: State, solution: Mapping[str, Scalar], name: str) -> bool:
    """Whether no value of `name` but the answer's holds in `state` (left as it was)."""
    value = solution[name]
    for other in state.domain(name):
        if other == value or not state.fix(name, other):
            continue
        try:
            # (From the answer with the fact changed: mostly only the rules around it are redone.)
            found = within_cap(
                plan.compiled.search,
                state,
                task="telling an assumed fact",
                hint={**solution, name: other},
                around=state.last_changed(),
                budget=_DEEP_STEPS,
            )
        finally:
            state.undo()
        if found is not None:
            return False  # (or not shown within the cap: said assumed, as before)
    return True


def _greedy_forcing(plan: Plan, name: str, solution: Mapping[str, Scalar]) -> list[str]:
    """`forcing_rules`, computed."""
    value = solution[name]
    left = {v for v in plan.compiled.domains[name] if v != value}
    if not left:
        return []
    excluded_by: dict[str, set[Scalar]] = {}
    for rid, con, at, others in plan.reading(name):
        excluded = left - con.allowed(at, tuple([solution[f] for f in others]))
        if excluded:
            excluded_by[rid] = excluded
    chosen: list[str] = []
    while left:
        best = max(excluded_by, key=lambda r: len(excluded_by[r] & left), default=None)
        if best is None or not excluded_by[best] & left:
            break
        chosen.append(best)
        left -= excluded_by.pop(best)
    return chosen
