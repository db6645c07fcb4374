"""A multi-rule conflict told as steps, PubGrub's way: "Because A and B, X must be ...; because
X ... and C, the request cannot hold." Each step is one rule of the conflict, applied to what the
conflict's pins and the earlier steps leave of the fields it reads; the last one refutes.

A step's consequence is what its rule, alone, leaves of its fields given its premises (the pins
and what the earlier steps narrowed): a field it narrows is said as the values left ("X must be
..."), and only a rule that no values of its premises satisfy says "the request cannot hold".
Several rules may narrow one field in turn, each step saying what is left after it (round 26's
three kv-scheme rules over one field told every step after the first as "the request cannot
hold"). A rule that narrows nothing yet waits for a later step; a chain whose steps cannot reach
the refutation this way is not told (the rules and pins listed above it say the conflict).

When no rule narrows anything more that way, a rule reading several fields nobody knows yet
narrows those another rule of the conflict reads (what it leaves of each, the others free). When
that stalls too, the conflict may hold only by cases (vLLM's Qwen3-Next block size: each attention
backend fails it for its own reason): one field the steps narrowed to a few values, or a yes/no
nobody knows, is split, and each of its values is told as its own steps to a refutation
("whichever X is, the request cannot hold: if X=a, because ...; if X=b, because ..."). A chain
that needs more than one split is not told.

A field the request itself gives (a typed flag, a given fact) that is no pin of the conflict and
is the one field a rule has left to decide is said as given where the rule fails with it, not
derived ("platform must be nothing" of a given platform=cuda; in round 22, "tensor_parallel_size
must be 1 or 2 or 3 ..." of a typed `-tp 2`, told over the wrong copy of the pack).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING

from solver.engine.constraint import projected, supported
from solver.frozen import Frozen, field, frozen_type
from solver.model import ConflictReport, Pack, Pin, Scalar
from solver.values import show as _show

if TYPE_CHECKING:
    from solver.reasoning.resolution import Plan

__all__ = ["Chain", "Step", "chain_of_steps", "conflict_steps", "describe_pin"]

# The sources of pins the user gave: said as theirs.
_GIVEN_SOURCES = ("user", "fact")


@frozen_type
class Step(Frozen):
    """One rule applied: its premises (field -> the values known before it, one value: a pin or
    a given field) and its consequence (field -> the values left after it; empty: it refutes)."""

    rule: str
    premises: dict[str, tuple[Scalar, ...]]
    consequence: dict[str, tuple[Scalar, ...]]


def describe_pin(pack: Pack, name: str, value: Scalar, source: str) -> str:
    """`--quantization fp8` for an option; `gpu_arch=sm120 (Blackwell consumer (SM120))` for a fact."""
    field = pack.fields[name]
    label = field.label(value)
    if field.kind == "option":
        return f"{field.cli_flag} {_show(value)}"
    extra = f" ({label})" if label != _show(value) else ""
    return f"{name}={_show(value)}{extra}"


@frozen_type
class Chain(Frozen):
    """A conflict's steps: `steps` to the refutation, or, when `split` names a field, `steps`
    narrow it and each of `cases` (a value of it, and its own steps) refutes."""

    steps: list[Step]
    split: str | None = None
    cases: list[tuple[Scalar, list[Step]]] = field(default_factory=list)


# A split is tried over a field with at most this many values left, and over at most this many
# fields (each try is a propagation per value).
_SPLIT_VALUES = 4
_SPLIT_TRIES = 3


def conflict_steps(plan: Plan, report: ConflictReport, pins: Mapping[str, Pin]) -> str:
    """The steps of `report` (a minimal conflict of the request `pins`), or "" when one rule says
    it all or no order of its rules reaches the refutation."""
    if len(report.rules) < 2:
        return ""  # one rule: its `because`, listed above, already says it all
    chain = chain_of_steps(plan, report, pins)
    if chain is None:
        return ""
    pack = plan.pack
    domains = plan.compiled.domains
    # A field the conflict pins, or one the request pins at the value a step says, is said as
    # typed or given (`--kv-cache-dtype fp8`); a value the steps derived, as such
    # (`backend=triton`), not as the flag the user would have typed (`--backend triton`): the
    # split's cases over a flag the user typed with another value read "if --attention-backend
    # FLASH_ATTN" of a typed TRITON_FLASHINFER.
    conflict = {p.field for p in report.pins}

    def known(name: str, values: Sequence[Scalar]) -> str:
        typed = name in pins and name != chain.split and list(values) == [pins[name].value]
        return _describe_known(pack, name, values, name in conflict or typed, domains[name])

    quoted: set[str] = set()  # the rules whose `because` a step said already

    def told(step: Step, first: bool) -> str:
        said = " and ".join(known(f, v) for f, v in step.premises.items())
        # Each rule's `because` once: a split's cases apply the same rules again, and a rule
        # told again read its whole `because` each time (2,000 of 11,800 characters, vLLM's
        # Qwen3-Next block size).
        because = "see above" if step.rule in quoted else pack.rule(step.rule).because.rstrip(".")
        quoted.add(step.rule)
        if step.consequence:
            then = " and ".join(
                _narrowing(f, step.premises.get(f, domains[f]), left) for f, left in step.consequence.items()
            )
        else:
            then = "the request cannot hold"
        # (A rule reading no field of the request's but `given(FIELD)`, answered in the request's
        # copy of the pack, has no premise to say: its `because` names the flag.)
        said = f"{said} and rule" if said else "rule"
        return f"{'Because' if first else 'because'} {said} {step.rule} ({because}), {then}"

    lines = [told(step, number == 0) for number, step in enumerate(chain.steps)]
    if chain.split is None:
        return ";\n".join(lines) + "."
    split = chain.split
    whichever = f"{'W' if not lines else 'w'}hichever {split} is, the request cannot hold"
    if split in pins and split not in conflict:
        # The request typed it, yet it is no pin of the conflict: every value fails, so the
        # cases are its values, not what was typed, and another value alone does not help.
        whichever += f" (another {pack.fields[split].cli_flag or split} alone does not help)"
    lines.append(whichever)
    text = ";\n".join(lines) + ":"
    for value, steps in chain.cases:
        case = f"if {known(split, [value])}, "
        text += "\n  " + case + ";\n    ".join(told(step, False) for step in steps) + ";"
    return text[:-1] + "."


def chain_of_steps(plan: Plan, report: ConflictReport, pins: Mapping[str, Pin]) -> Chain | None:
    """The steps of `report` in order, the last one refuting, or its cases; None when no order
    of its rules reaches the refutation by one rule at a time and at most one split."""
    given = {n: [p.value] for n, p in pins.items() if p.source in _GIVEN_SOURCES}
    known: dict[str, list[Scalar]] = {p.field: [p.value] for p in report.pins}
    rules = [r.id for r in report.rules]
    fields = {rid: plan.compiled.rules[rid].fields for rid in rules}
    # What a step may say it narrows: a field another rule of the conflict reads.
    relevant = {rid: {f for other in rules if other != rid for f in fields[other]} for rid in rules}
    asked: dict[tuple[object, ...], Step | None] = {}  # (a rule, what is known of its fields): its step
    steps, refuted = _propagate(plan, rules, relevant, known, given, set(), asked)
    if refuted:
        return Chain(steps)
    used = {step.rule for step in steps}
    # By cases: a field the steps narrowed to a few values, else a yes/no two rules read; the
    # fewest values first.
    read = [f for rid in rules for f in fields[rid] if f not in known or len(known[f]) > 1]
    shared = {f for f in read if read.count(f) > 1}
    candidates = sorted(
        (f for f in dict.fromkeys(read) if f in shared or f in known),
        key=lambda f: len(known.get(f, plan.compiled.domains[f])),
    )
    for split in [f for f in candidates if 2 <= len(known.get(f, plan.compiled.domains[f])) <= _SPLIT_VALUES][
        :_SPLIT_TRIES
    ]:
        cases = []
        for value in known.get(split, plan.compiled.domains[split]):
            case, refuted = _propagate(
                plan, rules, relevant, {**known, split: [value]}, given, set(used), asked
            )
            if not refuted:
                break
            cases.append((value, case))
        else:
            return Chain(steps, split, cases)
    return None


def _propagate(
    plan: Plan,
    rules: Sequence[str],
    relevant: Mapping[str, set[str]],
    known: dict[str, list[Scalar]],
    given: Mapping[str, list[Scalar]],
    used: set[str],
    asked: dict[tuple[object, ...], Step | None],
) -> tuple[list[Step], bool]:
    """Rules applied one at a time from `known` (updated in place): the steps, and whether the
    last refutes. A rule reading at most one field not known first (round 27's chains); one
    reading several only when none such narrows. `asked`: each rule's step by what is known of
    its fields (the loop asks every rule again after each step; most read nothing new)."""
    steps: list[Step] = []
    # Each step narrows a field or refutes, so the fields' values only shrink and the loop ends.
    while True:
        step = None
        # The rules not told yet first, in the conflict's order; then a told one again, when
        # what later steps narrowed lets it narrow more (propagation, one rule at a time).
        order = [r for r in rules if r not in used] + [r for r in rules if r in used]
        for several in (False, True):
            for rid in order:
                last = len(used) == len(rules) - 1 and rid not in used
                fields = plan.compiled.rules[rid].fields
                key = (rid, last, several, *(tuple(known[f]) if f in known else None for f in fields))
                if key not in asked:
                    asked[key] = _apply(plan, rid, known, given, last, relevant[rid] if several else None)
                step = asked[key]
                if step is not None:
                    break
            if step is not None:
                break
        if step is None:
            return steps, False  # no rule narrows or refutes
        steps.append(step)
        if not step.consequence:
            return steps, True  # refuted (the rules left, if any, are listed above the steps)
        used.add(step.rule)
        known.update({f: list(v) for f, v in step.consequence.items()})


def _apply(
    plan: Plan,
    rid: str,
    known: Mapping[str, list[Scalar]],
    given: Mapping[str, list[Scalar]],
    last: bool,
    several: Collection[str] | None = None,
) -> Step | None:
    """Rule `rid` as a step given `known`, or None when it says nothing yet: it reads more than
    one field not known (unless it is the last rule, or `several` names the fields it may say it
    narrows then), or it narrows nothing and refutes nothing."""
    fields = plan.compiled.rules[rid].fields
    free = [f for f in fields if f not in known]
    if len(free) == 1 and free[0] in given:
        # The one field left is the request's own: said as given when the rule fails with it
        # (the step that refutes), else narrowed for a later rule as before.
        trial = {**known, free[0]: given[free[0]]}
        if not _solves(plan, trial, rid):
            return Step(rid, {f: tuple(trial[f]) for f in fields if f in trial}, {})
    premises = {f: tuple(known[f]) for f in fields if f in known}
    if len(free) > 1 and not last and several is None:
        return None
    if not _solves(plan, known, rid):
        return Step(rid, premises, {})
    if len(free) > 1 and several is None:
        return None  # the last rule holds with its other fields free: no chain reaches the refutation
    # It holds for some values: what it leaves of each field it reads that is not a pin (the one
    # field not known yet, and those earlier steps narrowed), said where it narrows.
    domains = plan.compiled.domains
    asked = [
        name
        for name in fields
        if len(premises.get(name, domains[name])) > 1
        and (several is None or len(free) < 2 or name in several)
    ]
    narrowed: dict[str, tuple[Scalar, ...]] = {}
    for name, left in _left(plan, known, rid, asked).items():
        before = premises.get(name, tuple(domains[name]))
        if left != before:
            narrowed[name] = left
    return Step(rid, premises, narrowed) if narrowed else None


def _left(
    plan: Plan, known: Mapping[str, Sequence[Scalar]], rid: str, names: Sequence[str]
) -> dict[str, tuple[Scalar, ...]]:
    """What rule `rid` alone leaves of each of `names` within `known`: the values some solution
    of it holds, in `known`'s order (a rule with no solution there leaves none)."""
    supported = _supported(plan, known, rid, names) or {}
    domains = plan.compiled.domains
    return {
        name: tuple(v for v in known.get(name, domains[name]) if v in supported.get(name, ()))
        for name in names
    }


def _solves(plan: Plan, known: Mapping[str, Sequence[Scalar]], rid: str) -> bool:
    """Whether rule `rid` holds for some values within `known` (one value: a pin)."""
    return _supported(plan, known, rid, ()) is not None


# The most combinations of a rule's fields a step reads off the rule itself (`projected`: ~1 us
# each once its answers are remembered); past it, one search per value not yet seen in a solution
# (~0.5 ms each). Same run, vLLM's Qwen3-Next block-size splits: 1,024 110-170 ms, 4,096 50-120,
# every combination (98,230 for triton-flashinfer-kv-dtype) 570-680 ms the first time.
_COMBINATIONS = 4096


def _supported(
    plan: Plan, known: Mapping[str, Sequence[Scalar]], rid: str, names: Sequence[str]
) -> dict[str, Collection[Scalar]] | None:
    """Rule `rid` alone within `known` (the pack's other rules left out), as a query over it would
    find it (`CompiledPack.solve(..., rules=[rid])`): None when it has no solution there, else
    each of `names` with the values some solution holds. Read off the rule's combinations within
    `known` (`projected`, the same answer), which a search per value cost ~0.5 ms each of (the
    chains of 636 conflicts asked 106,000: 83 % of their cost)."""
    cp = plan.compiled
    domains = cp.domains
    within: dict[str, list[Scalar]] = {}
    for name, values in known.items():
        # As the query starts: a pin or a value set outside the field's domain leaves it none.
        if name in domains:
            within[name] = list(values) if len(values) == 1 else [v for v in domains[name] if v in values]
            if (len(values) == 1 and values[0] not in domains[name]) or not within[name]:
                return None
    con = cp.rules[rid]
    reads = {f: within.get(f, domains[f]) for f in con.fields}
    free = [f for f in con.fields if len(reads[f]) > 1]
    if not free:
        return {f: reads[f] for f in names} if con.holds(tuple(reads[f][0] for f in con.fields)) else None
    found = projected(con, free, reads, limit=_COMBINATIONS)
    if found is None:
        found = supported(con, free, reads)
    if found is None:
        return _searched(plan, known, rid, names)
    if not all(found.values()):
        return None
    return {f: found[f] if f in found else reads[f] for f in names}


def _searched(
    plan: Plan, known: Mapping[str, Sequence[Scalar]], rid: str, names: Sequence[str]
) -> dict[str, Collection[Scalar]] | None:
    """`_supported` by searches, for a rule over too many combinations: one per value no solution
    found yet holds (every solution found is a witness for each of its values at once)."""
    cp = plan.compiled
    pins = {n: v[0] for n, v in known.items() if len(v) == 1}
    allowed = {n: v for n, v in known.items() if len(v) != 1}
    state = cp.start(pins, rules=[rid], allowed=allowed)
    if state is None or cp.solve(pins, rules=[rid], allowed=allowed) is None:
        return None
    seen: set[tuple[str, Scalar]] = set()
    found: dict[str, Collection[Scalar]] = {}
    for name in names:
        left = []
        for value in known.get(name, cp.domains[name]):
            if value not in state.domains[name]:
                continue
            if (name, value) not in seen:
                solution = cp.solve({**pins, name: value}, rules=[rid], allowed=allowed)
                if solution is None:
                    continue
                seen.update((f, solution[f]) for f in names if f in solution)
            left.append(value)
        found[name] = left
    return found


def _narrowing(name: str, before: Sequence[Scalar], left: Sequence[Scalar]) -> str:
    """What a step leaves of a field: the values left, or those it removes when fewer."""
    removed = [v for v in before if v not in left]
    if len(left) > len(removed) > 0:
        return f"{name} cannot be {' or '.join(_show(v) for v in removed)}"
    return f"{name} must be {' or '.join(_show(v) for v in left) if left else 'nothing'}"


def _describe_known(
    pack: Pack, name: str, values: Sequence[Scalar], stated: bool, domain: Sequence[Scalar]
) -> str:
    """A premise: a pin as typed or given, a derived value as `name=value`, a narrowed field by
    the values left, or by those gone when fewer."""
    if len(values) == 1:
        if stated or pack.fields[name].kind != "option":
            return describe_pin(pack, name, values[0], "user")
        return f"{name}={_show(values[0])}"
    gone = [v for v in domain if v not in values]
    if len(values) > len(gone) > 0:
        return f"{name} not in [{', '.join(_show(v) for v in gone)}]"
    return f"{name} in [{', '.join(_show(v) for v in values)}]"
