"""A multi-rule conflict told as steps, PubGrub's way: "Because A and B, X must be ...; because
X ... and C, the request cannot hold." Each step is one rule of the conflict, applied to what the
conflict's pins and the earlier steps leave of the fields it reads; the last one refutes.

A field the request itself gives (a typed flag, a given fact) that is no pin of the conflict and
is the one field a rule has left to decide is said as given where the rule fails with it, not
derived ("platform must be nothing" of a given platform=cuda; in round 22, "tensor_parallel_size
must be 1 or 2 or 3 ..." of a typed `-tp 2`, told over the wrong copy of the pack).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from solver.model import ConflictReport, Pack, Pin, Scalar
from solver.values import show as _show

if TYPE_CHECKING:
    from solver.reasoning.resolution import Plan

__all__ = ["conflict_steps", "describe_pin"]

# The sources of pins the user gave: said as theirs.
_GIVEN_SOURCES = ("user", "fact")


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
    pack = plan.pack
    if len(report.rules) < 2:
        return ""  # one rule: its `because`, listed above, already says it all
    cp = plan.compiled
    given = {n: [p.value] for n, p in pins.items() if p.source in _GIVEN_SOURCES}
    known: dict[str, list[Scalar]] = {p.field: [p.value] for p in report.pins}
    remaining = [r.id for r in report.rules]
    steps: list[str] = []
    while remaining:
        progressed = False
        for rid in list(remaining):
            free = [f for f in cp.rules[rid].fields if f not in known]
            refutes = False
            if len(free) == 1 and free[0] in given:
                # The one field left is the request's own: said as given when the rule fails
                # with it (the step that refutes), else narrowed for a later rule as before.
                trial = {**known, free[0]: given[free[0]]}
                refutes = not _solves(plan, trial, [rid])
                if refutes:
                    known, free = trial, []
            if len(free) > 1 and len(remaining) > 1:
                continue
            premises = [f for f in cp.rules[rid].fields if f in known]
            said = " and ".join(_describe_known(pack, f, known[f]) for f in premises)
            because = pack.rule(rid).because.rstrip(".")
            if len(free) == 1:
                target = free[0]
                allowed = [v for v in cp.domains[target] if _solves(plan, known, [rid], {target: v})]
                known[target] = allowed
                shown = " or ".join(_show(v) for v in allowed) if allowed else "nothing"
                steps.append(f"Because {said} and rule {rid} ({because}), {target} must be {shown}")
            else:
                steps.append(f"because {said} and rule {rid} ({because}), the request cannot hold")
                if refutes:  # (the rules left, if any, are listed above the steps)
                    return ";\n".join(steps) + "."
            remaining.remove(rid)
            progressed = True
            break
        if not progressed:
            return ""
    return ";\n".join(steps) + "."


def _describe_known(pack: Pack, name: str, values: Sequence[Scalar]) -> str:
    if len(values) == 1:
        return describe_pin(pack, name, values[0], "user")
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
