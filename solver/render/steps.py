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

A field the request itself gives (a typed flag, a given fact) that is no pin of the conflict and
is the one field a rule has left to decide is said as given where the rule fails with it, not
derived ("platform must be nothing" of a given platform=cuda; in round 22, "tensor_parallel_size
must be 1 or 2 or 3 ..." of a typed `-tp 2`, told over the wrong copy of the pack).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from solver.frozen import Frozen, frozen_type
from solver.model import ConflictReport, Pack, Pin, Scalar
from solver.values import show as _show

if TYPE_CHECKING:
    from solver.reasoning.resolution import Plan

__all__ = ["Step", "chain_of_steps", "conflict_steps", "describe_pin"]

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


def conflict_steps(plan: Plan, report: ConflictReport, pins: Mapping[str, Pin]) -> str:
    """The steps of `report` (a minimal conflict of the request `pins`), or "" when one rule says
    it all or no order of its rules reaches the refutation."""
    if len(report.rules) < 2:
        return ""  # one rule: its `because`, listed above, already says it all
    chain = chain_of_steps(plan, report, pins)
    if not chain:
        return ""
    pack = plan.pack
    # A field neither the conflict nor the request pins is one the steps derived: said as such
    # (`backend=triton`), not as the flag the user would have typed (`--backend triton`).
    stated = {p.field for p in report.pins} | set(pins)
    lines: list[str] = []
    for number, step in enumerate(chain):
        said = " and ".join(
            _describe_known(pack, f, v, f in stated, plan.compiled.domains[f])
            for f, v in step.premises.items()
        )
        because = pack.rule(step.rule).because.rstrip(".")
        if step.consequence:
            then = " and ".join(
                _narrowing(f, step.premises.get(f, plan.compiled.domains[f]), left)
                for f, left in step.consequence.items()
            )
        else:
            then = "the request cannot hold"
        # (A rule reading no field of the request's but `given(FIELD)`, answered in the request's
        # copy of the pack, has no premise to say: its `because` names the flag.)
        said = f"{said} and rule" if said else "rule"
        lines.append(f"{'Because' if number == 0 else 'because'} {said} {step.rule} ({because}), {then}")
    return ";\n".join(lines) + "."


def chain_of_steps(plan: Plan, report: ConflictReport, pins: Mapping[str, Pin]) -> list[Step]:
    """The steps of `report` in order, the last one refuting; [] when no order of its rules
    reaches the refutation by one rule at a time."""
    given = {n: [p.value] for n, p in pins.items() if p.source in _GIVEN_SOURCES}
    known: dict[str, list[Scalar]] = {p.field: [p.value] for p in report.pins}
    rules = [r.id for r in report.rules]
    used: set[str] = set()
    steps: list[Step] = []
    # Each step narrows a field or refutes, so the fields' values only shrink and the loop ends.
    while True:
        step = None
        # The rules not told yet first, in the conflict's order; then a told one again, when
        # what later steps narrowed lets it narrow more (propagation, one rule at a time).
        for rid in [r for r in rules if r not in used] + [r for r in rules if r in used]:
            step = _apply(plan, rid, known, given, last=len(used) == len(rules) - 1 and rid not in used)
            if step is not None:
                break
        if step is None:
            return []  # no rule narrows or refutes: no chain to tell
        steps.append(step)
        if not step.consequence:
            return steps  # refuted (the rules left, if any, are listed above the steps)
        used.add(step.rule)
        known.update({f: list(v) for f, v in step.consequence.items()})


def _apply(
    plan: Plan,
    rid: str,
    known: Mapping[str, list[Scalar]],
    given: Mapping[str, list[Scalar]],
    last: bool,
) -> Step | None:
    """Rule `rid` as a step given `known`, or None when it says nothing yet: it reads more than
    one field not known (unless it is the last rule), or it narrows nothing and refutes nothing."""
    fields = plan.compiled.rules[rid].fields
    free = [f for f in fields if f not in known]
    if len(free) == 1 and free[0] in given:
        # The one field left is the request's own: said as given when the rule fails with it
        # (the step that refutes), else narrowed for a later rule as before.
        trial = {**known, free[0]: given[free[0]]}
        if not _solves(plan, trial, [rid]):
            return Step(rid, {f: tuple(trial[f]) for f in fields if f in trial}, {})
    premises = {f: tuple(known[f]) for f in fields if f in known}
    if len(free) > 1 and not last:
        return None
    if not _solves(plan, known, [rid]):
        return Step(rid, premises, {})
    if len(free) > 1:
        return None  # the last rule holds with its other fields free: no chain reaches the refutation
    # It holds for some values: what it leaves of each field it reads that is not a pin (the one
    # field not known yet, and those earlier steps narrowed), said where it narrows.
    domains = plan.compiled.domains
    narrowed: dict[str, tuple[Scalar, ...]] = {}
    for name in fields:
        before = premises.get(name, tuple(domains[name]))
        if len(before) < 2:
            continue
        left = tuple(v for v in before if _solves(plan, known, [rid], {name: v}))
        if left != before:
            narrowed[name] = left
    return Step(rid, premises, narrowed) if narrowed else None


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


def _solves(
    plan: Plan,
    known: Mapping[str, Sequence[Scalar]],
    rules: Sequence[str],
    extra: Mapping[str, Scalar] | None = None,
) -> bool:
    """Whether `rules` hold for some values within `known` (one value: a pin) and `extra`."""
    pins = {n: v[0] for n, v in known.items() if len(v) == 1}
    allowed = {n: v for n, v in known.items() if len(v) != 1}
    return plan.compiled.solve({**pins, **(extra or {})}, rules=rules, allowed=allowed) is not None
