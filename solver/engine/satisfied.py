"""Rules closed early: those a fixed field's value satisfies whatever their other fields hold.

Forward checking keeps a rule open until at most one of its fields is free, and visits it at
every fix of its other fields on the way. A rule whose `when` one field's value makes false
(most SGLang rules open with a runner, a backend or a platform: `moe_runner_backend ==
'flashinfer_cutlass' and ...`) holds whatever the rest hold, so it can filter nothing: a
quarter of a resolve's visits were to such rules (round 25). `State.propagate` closes them
when it pops the field fixed at that value (logged on the trail like any closing), which
changes no domain and no order of changes, so every fixpoint, wipe-out and answer is the same.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from solver.model import Scalar

if TYPE_CHECKING:
    from solver.engine.constraint import Constraint

__all__ = ["NEVER", "Satisfied", "close_satisfied"]

# (Entries by field and value: an open field's values are unbounded.)
_KEPT = 1 << 14


class Satisfied:
    """The constraints of a compiled pack that one field's value satisfies alone (three-valued
    `partial` True with only that field known), by field and value, found on first asking."""

    __slots__ = ("_by_field", "_found")

    def __init__(self, by_field: Mapping[str, Sequence[Constraint]]) -> None:
        self._by_field = by_field
        self._found: dict[tuple[str, type, Scalar], tuple[Constraint, ...]] = {}

    def by(self, name: str, value: Scalar) -> tuple[Constraint, ...]:
        key = (name, type(value), value)  # (by type too: `1` and `True` are equal keys)
        found = self._found.get(key)
        if found is None:
            readers = self._by_field.get(name, ())
            found = tuple(c for c in readers if c.condition.partial({name: value}) is True)
            if len(self._found) < _KEPT:
                self._found[key] = found
        return found


# Closes nothing: a state made without a compiled pack's table, or propagated with an observer.
NEVER = Satisfied({})


def close_satisfied(
    closing: Satisfied,
    name: str,
    domains: Mapping[str, Sequence[Scalar]],
    open_: dict[str, Constraint],
    trail: list[tuple[Any, str, Any]] | None,
) -> None:
    """Close the open rules that `name`, when fixed, satisfies alone: each only if it is the
    state's own object (a typed copy's rewritten rule is another object under the same key)."""
    domain = domains.get(name)  # (none: `State.extended`'s name for the rules it adds)
    if domain is None or len(domain) != 1:
        return
    for con in closing.by(name, domain[0]):
        key = con.key
        if open_.get(key) is con:
            if trail is not None:
                trail.append((open_, key, con))
            del open_[key]
