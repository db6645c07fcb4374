"""Required fields a request must name: `check_required` after an answer, and
`check_required_before_failing` before a failed launcher chain is called a conflict. An answer
never rests on a value the search gave a required fact (a GPU nobody named); the message lists
exactly the values the given inputs allow (`_possible_given`), computed on this error path only.
"""

from __future__ import annotations

from collections.abc import Mapping

from solver.engine.csp import CompiledPack, SearchTrace
from solver.errors import InputIssue, InvalidInput
from solver.model import Pin, Scalar
from solver.reasoning.decide import ChainFailed
from solver.reasoning.plan import Plan

__all__ = ["check_required", "check_required_before_failing"]


def check_required(plan: Plan, pins: Mapping[str, Pin], trace: SearchTrace) -> None:
    """`InvalidInput` naming every required field the request leaves open: the answer would
    otherwise rest on a value the search picked for it (a GPU nobody named)."""
    open_fields = [
        name
        for name, spec in plan.pack.fields.items()
        if spec.required and name not in pins and len(trace.domains.get(name, ())) > 1
    ]
    _require({name: _possible_given(plan.compiled, pins, name) for name in open_fields})


def check_required_before_failing(plan: Plan, failed: ChainFailed) -> None:
    """`check_required` for a launcher chain that failed: the required fields left open that the
    decisions had already given a value when it failed. The failure may rest on those values
    (`check` of a DeepSeek FP8 checkpoint with no GPU named failed on an assumed T4), so the
    request must name them before a conflict is an answer, as it must before an answer that
    works. Only on the failure path: costs a working request nothing."""
    given = [
        name
        for name, spec in plan.pack.fields.items()
        if spec.required and name not in failed.pins and name in failed.decided
    ]
    allowed = {name: _possible_given(plan.compiled, failed.pins, name) for name in given}
    _require({name: values for name, values in allowed.items() if len(values) > 1})


def _require(undecided: Mapping[str, tuple[Scalar, ...]]) -> None:
    """`InvalidInput` naming each field of `undecided` with the values the inputs allow it."""
    issues = []
    for name, allowed in undecided.items():
        shown = ", ".join(str(v) for v in allowed[:16])
        issues.append(
            InputIssue(
                field=name,
                value=None,
                allowed=allowed,
                message=(
                    f"{name} is not given and the other inputs do not decide it: "
                    f"pass --set {name}=VALUE (one of {shown}) or --detect"
                ),
            )
        )
    if issues:
        raise InvalidInput(issues)


def _possible_given(cp: CompiledPack, pins: Mapping[str, Pin], name: str) -> tuple[Scalar, ...]:
    """The values of `name` that some configuration of the given inputs takes: the list a
    missing required field's message offers. Not the values the search's own decisions left
    (those assume it picked a platform: a ROCm user was offered only CUDA architectures)."""
    values = {n: p.value for n, p in pins.items()}
    start = cp.start(values)
    if start is None:
        return ()
    return tuple(
        v
        for v in start.domain(name)
        if cp.satisfiable({**values, name: v}, task="listing a required field's values") is not None
    )
