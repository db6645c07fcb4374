"""A repair verified by resolving it: only a repair the next answer takes is shown.

- `try_resolve`: the values a request resolves to, or None;
- `as_typed`: repairs found on a request an adjustment changed, checked on what the user typed;
- `typed_request`: a request's pins as typed, before any adjustment.
"""

from __future__ import annotations

from collections.abc import Mapping

from solver.engine.opendomain import origin, query_pack
from solver.errors import InvalidInput, Unsatisfiable
from solver.model import Pin, Repair, Scalar
from solver.reasoning.plan import Plan
from solver.reasoning.provenance import resolved_values

__all__ = ["as_typed", "try_resolve", "typed_request"]


def try_resolve(
    plan: Plan,
    pins: Mapping[str, Pin],
    *,
    predict: bool = False,
    witness: Mapping[str, Scalar] | None = None,
    departures: bool = True,
) -> dict[str, Scalar] | None:
    """Verify a repair by resolving it; None when it does not resolve. Only the values are
    read: `departures=False` leaves out the launcher's own picks (a second pass of decisions);
    `witness`: a solution of `pins` already found (it spares the first search).

    Resolved as a request of its own, on the pack the request's copy was made from: the copy
    answers each `given(FIELD)` as the request typed it, and a repair types other values (SGLang
    0.5.23+24: a repair that unset a typed `--attention-backend` promised the FP8 cache the typed
    backend's rule had set, where the repaired request resolves to `auto`)."""
    base = origin(plan.pack)
    copy = query_pack(base, pins)
    if copy.digest != plan.pack.digest:
        witness = None  # (found under the request's answers to given(), not the repair's)
    try:
        return resolved_values(
            base,
            pins,
            copy=copy,
            predict=predict,
            budget=plan.compiled.budget,
            departures=departures,
            witness=witness,
        )
    except (Unsatisfiable, InvalidInput):
        return None


def as_typed(
    plan: Plan,
    pins: Mapping[str, Pin],
    adjustments: Mapping[str, tuple[Scalar, str]],
    fixes: list[Repair],
    predict: bool,
) -> list[Repair]:
    """The repairs of a request an adjustment changed were found on the adjusted request, but
    the user applies them to what they typed (`--ep-size 8`, not the 1 the launcher put in its
    place). Each is resolved so: its `values` are that answer; when it holds only with an
    adjusted value, that value joins `set` as a change of its own (typed, so nothing the user
    set changes unsaid); a repair that holds neither way is dropped."""
    typed = typed_request(pins, adjustments)
    out = []
    for fix in fixes:
        base = {n: p for n, p in typed.items() if n not in fix.unset}
        base.update(
            {
                n: Pin(field=n, value=v, source=base[n].source if n in base else "user")
                for n, v in fix.set.items()
            }
        )
        values = try_resolve(plan, base, departures=False, predict=predict)
        if values is None:
            # The values the adjusted request resolved them to (a pin's, or auto's pick).
            kept = {n: fix.values[n] for n in adjustments if n not in fix.unset and n not in fix.set}
            base.update({n: Pin(field=n, value=v, source="user") for n, v in kept.items()})
            values = try_resolve(plan, base, departures=False, predict=predict) if kept else None
            if values is None:
                continue
            fix = fix.model_copy(update={"set": {**fix.set, **kept}, "changes": fix.changes + len(kept)})
        out.append(fix.model_copy(update={"values": values}))
    return out


def typed_request(
    pins: Mapping[str, Pin], adjustments: Mapping[str, tuple[Scalar, str]] | None
) -> dict[str, Pin]:
    """The request as the user typed it: `pins` (as resolved) with each pin an adjustment replaced
    back at its typed value (`adjustments`: field -> (typed value, rule)). An adjustment to auto
    leaves no pin: the field is back as typed."""
    typed = dict(pins)
    typed.update({n: Pin(field=n, value=v, source="user") for n, (v, _) in (adjustments or {}).items()})
    return typed
