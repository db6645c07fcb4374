"""The choices of a field some rule asks whether the request gives (`given(FIELD)`).

Picking a value of such a field types it, so its choices are those of the request that gives
it: `--moe-runner-backend flashinfer_cutedsl` with `--quantization` unset fails in SGLang 0.5.23,
yet `modelopt_fp4` is a choice of `quantization` there, because typing it is what mends the
request. Every other field's choices are those of the request as it is
(`solver.pack.given.for_request`).

The copy that gives the field differs from the request's own only in the rules that read
`given(FIELD)` of it, so the request's own answer mostly carries over (`_carried`): a value
possible there whose witness keeps the copy's form of those rules is possible in the copy, and a
value propagation removed there for reasons none of those rules is among is removed in the copy
too. Only a field with a value neither covers is asked of the copy itself, after the solutions
the request's pack has met that keep the copy's rules are handed over (`_hand_over`). A warn rule
that reads `given(FIELD)` restricts nothing: the values carry over as above and only what the
copy's warn rules flag among them is the copy's own (`_typed_warnings`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from solver.budget import RAN_OUT, within_cap
from solver.engine.csp import CompiledPack, Constraint, compile_pack
from solver.engine.opendomain import query_pack, widened
from solver.engine.supports import supports_for
from solver.engine.tracing import excluded as excluded_by
from solver.engine.tracing import traced_domains
from solver.model import Pack, Pin, Scalar
from solver.pack.given import for_request, given_effect, given_fields, reading_given
from solver.pack.loader import semantics
from solver.reasoning.plan import plan_for

if TYPE_CHECKING:
    from solver.reasoning.diagnose import Choices

__all__ = ["prepare_copies", "typed_apart", "typed_choices", "warmed_query_pack"]

_MARK = "handed-over"  # in a copy's compiled memo, per source digest: its supports' mark


def typed_apart(pack: Pack, pins: Mapping[str, Pin], names: Sequence[str]) -> list[str]:
    """Those of `names` a rule asks about and the request does not give."""
    asked = given_fields(pack)
    return [n for n in names if n in asked and n not in pins] if asked else []


def typed_choices(
    choices: Callable[..., Choices],
    pack: Pack,
    pins: Mapping[str, Pin],
    names: Sequence[str],
    apart: Sequence[str],
) -> Choices:
    """`choices(pack, pins, names)` (the request's own choices), each field of `apart` asked of
    the pack in which the request gives it where the request's answer does not carry over; the
    answers in the order of `names`."""
    # The fields typing may tighten need a stored witness per possible value (`_carried`): the
    # request's own sweep keeps the steps that prove theirs.
    tighten = [n for n in apart if not _effects(pack, pins, n) <= {0, 1}]
    parts = [choices(pack, pins, names, keep=tighten)]
    own = query_pack(pack, pins, typed=False)
    for name in apart:
        typed = query_pack(for_request(pack, {*pins, name}), pins, typed=False)
        if not _carried(pack, own, typed, pins, name, parts[0]):
            _hand_over(pack, own, typed)
            parts.append(choices(typed, pins, [name]))
        elif any(rid not in compile_pack(typed).rules for rid in reading_given(pack, name)):
            parts[0].warned[name] = _typed_warnings(typed, pins, name, parts[0].possible[name])
    out = parts[0]
    for part in parts[1:]:
        for table in ("possible", "excluded", "open", "warned"):
            getattr(out, table).update(getattr(part, table))
    for table in ("possible", "excluded", "open", "warned"):
        found = getattr(out, table)
        setattr(out, table, {n: found[n] for n in names if n in found})
    return out


def _carried(base: Pack, own: Pack, typed: Pack, pins: Mapping[str, Pin], name: str, answer: Choices) -> bool:
    """Whether `answer` (the request's own) is also the answer of `typed` for `name`.

    Where typing `name` only loosens the rules that read it (`given_effect`), every value
    possible before still is, and a value excluded before stays so if propagation removed it for
    reasons without those rules (a minimal reason `answer` gives naming none of them). Where it
    only tightens them, every excluded value stays excluded, and a value possible before still
    is if a stored witness keeps the tightened rules. Either check failing means: ask `typed`."""
    reading = reading_given(base, name)
    effects = _effects(base, pins, name)
    if effects == {0}:
        return True
    # (A warn rule among `reading` restricts nothing: its effect only makes these checks more
    # careful, and what it flags in the copy is listed apart, `_typed_warnings`.)
    cp = compile_pack(typed)
    values = {n: p.value for n, p in pins.items() if n != name}
    own_cp = compile_pack(own)
    possible = answer.possible.get(name, [])
    if not effects <= {0, 1} and not _witnessed(cp, own_cp, values, name, possible, reading):
        return False  # it may tighten, and some value possible before has no witness that keeps it
    excluded = answer.excluded.get(name, {})
    if effects <= {0, -1} or not excluded:  # it can only tighten: what was excluded stays so
        return True
    # Any reasons propagation recorded will do, not only the canonical ones explanations give
    # (`traced_base`, from the root): each is a set of rules and pins that alone removes the
    # value, so one without the rules typing changes removes it in the copy too. The request's
    # own listing has just made this state (its witnesses' base, `traced_domains`).
    traced = traced_domains(own_cp, values)
    # Only a rule typing may loosen can let a value back in: a reason made of rules the copy
    # keeps as they are or tightens (each allows a subset there) removes the value in the copy too.
    asked = {rid for rid in reading if given_effect(base.rule(rid), name, pins.keys()) not in (0, -1)}
    for value, items in excluded.items():
        because = excluded_by(own_cp, traced, name, value)
        if because is None or any(kind == "rule" and rid in asked for kind, rid in because):
            return False
        if any(item.kind == "rule" and item.name in asked for item in items):
            return False
    return True


def _typed_warnings(
    typed: Pack, pins: Mapping[str, Pin], name: str, possible: list[Scalar]
) -> dict[Scalar, list[str]]:
    """What the copy's warn rules flag among `possible` (the values carried over), as the copy's
    own listing of `name` flags them: a warn rule reads `given(name)`, and where it is the only
    difference that matters the values carry over and only the flags are the copy's (SGLang's
    `quantization` was listed again on its copy for one warn rule, at every click)."""
    plan = plan_for(query_pack(typed, pins, typed=False))
    if not plan.warn_rules.get(name):
        return {}
    return plan.warned(name, plan.settled({n: p.value for n, p in pins.items()}), possible)


def _effects(pack: Pack, pins: Mapping[str, Pin], name: str) -> set[int | None]:
    """How typing `name` changes each rule that reads `given(name)` (`given_effect`)."""
    return {given_effect(pack.rule(rid), name, pins.keys()) for rid in reading_given(pack, name)}


def _keeps(rules: Sequence[Constraint], row: Mapping[str, Scalar]) -> bool:
    """Whether the complete configuration `row` keeps every one of `rules`. (`pick`: the rule's
    values in one call in C, where a tuple of a generator per rule was most of `_witnessed`, the
    typed copies' check on each one-fact choices question: ~114 rows x 36 rules.)"""
    return all(rule.holds(rule.pick(row)) for rule in rules)


def _witnessed(
    cp: CompiledPack,
    own_cp: CompiledPack,
    values: Mapping[str, Scalar],
    name: str,
    possible: list[Scalar],
    reading: Sequence[str],
) -> bool:
    """Whether each of `possible` has a solution of `cp` (the copy) keeping `values`: a stored
    solution of the request's own pack that keeps the copy's rules, or one mended from such a
    solution in the copy (each one found is kept with the copy). `reading`: the rules that read
    `given(name)`."""
    own, into = supports_for(own_cp), supports_for(cp)
    # The copy's rules that can hold otherwise than the request pack's: those reading
    # `given(name)`. The copy rewrites every rule reading some `given(...)` (39 of SGLang's), but
    # one that does not read `given(name)` reads the other fields' answers as the request's pack
    # does (both copies type the request's pins), so it holds on the same rows; checking all of
    # them on each stored row was most of `_witnessed` (7 typed fields x ~15 rows x 39 rules).
    keeps = [
        cp.rules[rid]
        for rid in reading
        if rid in cp.rules and cp.rules[rid].condition is not own_cp.rules[rid].condition
    ]

    state = None
    near = own.example(own.keeping(values))
    for value in possible:
        row = own.example(own.keeping({**values, name: value}))
        if row is not None and _keeps(keeps, row):
            continue
        if state is None:
            state = cp.start(dict(values))
        if state is None:
            return False
        mended = cp.mend(state, near, name, value) if near is not None and _keeps(keeps, near) else None
        if mended is None:  # not a refutation: a short search from the stored row may find one
            mended = _searched(cp, values, name, value, row or near)
        if mended is None:
            return False
        into.add(mended)
    return True


_Row = Mapping[str, Scalar]

# The steps `_witnessed` gives one search for a witness in the copy before it asks the copy
# instead (SGLang 0.5.23+23 on cuda: typing tokenspeed_mla for HRM-Text tightens its rules, and
# the stored row for it mends in no rule's fields alone; a search from that row takes ~10 steps,
# where asking the copy was ~25 ms of each one-fact question).
_WITNESS_STEPS = 500


def _searched(
    cp: CompiledPack, values: Mapping[str, Scalar], name: str, value: Scalar, hint: _Row | None
) -> dict[str, Scalar] | None:
    """A solution of `cp` keeping `values` with `name` = `value`, by a search of at most
    `_WITNESS_STEPS` from `hint`; None when none is found within them (not a refutation)."""
    state = cp.start({**values, name: value})
    if state is None:
        return None
    found = within_cap(cp.search, state, budget=_WITNESS_STEPS, task="witnessing a typed value", hint=hint)
    return None if found is RAN_OUT else found


def warmed_query_pack(pack: Pack, pins: Mapping[str, Pin]) -> Pack:
    """The pack `pins` work on for choices (`query_pack`, each pinned field's value the one
    typed: picking a value types it, `given(FIELD) == VALUE` reads it); when it is a copy for
    what they give, it first takes over the solutions the pack itself has met that keep its rules
    (a page's first click on such a field then answers from what `prepare_choices` found)."""
    own = query_pack(pack, pins, typed=False)
    _hand_over(pack, widened(pack, pins), own)
    return own


def prepare_copies(pack: Pack) -> None:
    """For each field a rule asks about, the copy of `pack` a request typing it works on: compiled,
    its root states propagated, and the pack's solutions handed over (`prepare_choices`)."""
    for name in sorted(given_fields(pack)):
        copy = for_request(pack, {name})
        _hand_over(pack, pack, copy)
        cp = plan_for(copy).compiled
        cp.start({})
        traced_domains(cp, {})


def _hand_over(base: Pack, source: Pack, target: Pack) -> None:
    """Give `target`'s supports the solutions `source`'s have met since the last hand-over that
    keep `target`'s rules: the two differ only in the rules that read `given(...)`."""
    if source.digest == target.digest:
        return
    cp = compile_pack(target)
    changed = [cp.rules[rid] for rid, cond in semantics(base).rules.items() if cond.given and rid in cp.rules]
    key = f"{_MARK}:{source.digest}"
    mark, rows = supports_for(compile_pack(source)).rows_after(cp.memo.get(key, (-1, 0)))
    cp.memo[key] = mark
    into = supports_for(cp)
    for row in rows:
        if _keeps(changed, row):
            into.add(row)
