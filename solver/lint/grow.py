"""QuickXplain's questions grown from an earlier question's propagated state (`Backgrounds`).

QuickXplain asks whether a background of items (rules, pins) is consistent, then that background
with more items: within a branch of its recursion a background only grows. Each question was a
search started from scratch (`CompiledPack.start`: every rule of the question indexed and
propagated again, a pass over hundreds of rules at 1,000 synthetic fields); here it starts from
the propagated state of the longest earlier question that is a prefix of it and had a solution,
and the search starts from that question's solution, looking only where the new items can break
it (`CompiledPack.search`'s `around`). Exact: the same fixpoint (`State.extended`), and a search
proves its "no" whatever its hint.

Imports only the standard library at module level.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from solver.engine.csp import CompiledPack
    from solver.engine.state import State
    from solver.model import Scalar
    from solver.pack.expr import Condition
    from solver.reasoning.conflicts import Item

__all__ = ["Backgrounds", "Grown"]

KEPT = 64

Grown = tuple["State | None", "list[str] | None", "dict[str, Scalar] | None"]
"""A question's propagated state (None: propagation refutes it), the fields where the hint may
break (None: anywhere) and the hint, a solution of a prefix of the question (None: none known)."""


class Backgrounds:
    """The questions of one QuickXplain run that had a solution: each as its items (by identity),
    its propagated state when one was made, and the solution that answered it."""

    def __init__(self, cp: CompiledPack, fixed: Mapping[str, Scalar], extras: Sequence[Condition]) -> None:
        self.cp = cp
        self.fixed = fixed
        self.extras = extras
        self.kept: list[tuple[tuple[int, ...], State | None, dict[str, Scalar]]] = []
        self._root: list[State | None] = []

    def root(self) -> State | None:
        """The state with no item: the fixed pins and the conditions alone."""
        if not self._root:
            self._root.append(self.cp.start(self.fixed, rules=[], extra=self.extras))
        return self._root[0]

    def grow(self, chosen: Sequence[Item]) -> Grown:
        """The question `chosen`, grown from the longest kept prefix with a state (else the root
        state), with the solution of the longest kept prefix as its hint. That prefix is at least
        as long as the state's (every kept state has its solution), so the fields the growth
        pinned, narrowed or added rules over are the only places the hint can break."""
        ids = tuple(map(id, chosen))
        base: State | None = None
        base_len = 0
        hint: dict[str, Scalar] | None = None
        hint_len = -1
        for key, state, solution in self.kept:
            size = len(key)
            if size > len(ids) or (size and ids[size - 1] != key[-1]) or ids[:size] != key:
                continue
            if size > hint_len:
                hint, hint_len = solution, size
            if state is not None and size >= base_len:
                base, base_len = state, size
        if base is None:
            base, base_len = self.root(), 0
            if base is None:
                return None, None, None
        pins: dict[str, Scalar] = {}
        rules = []
        constraints = self.cp.constraints
        for item in chosen[base_len:]:
            if item.kind == "pin":
                pins[item.name] = item.value  # type: ignore[assignment]
            elif item.name in constraints:
                rules.append(constraints[item.name])
        around: list[str] = []
        state = base.extended(pins, rules, around)
        return state, around if hint is not None else None, hint

    def keep(self, chosen: Sequence[Item], state: State | None, solution: dict[str, Scalar]) -> None:
        """Remember that `chosen` has `solution` (and its propagated `state`, when one was made)."""
        self.kept.append((tuple(map(id, chosen)), state, solution))
        del self.kept[:-KEPT]
