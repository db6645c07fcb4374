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
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from solver.engine.csp import CompiledPack
    from solver.engine.state import Constraint, State
    from solver.model import Scalar
    from solver.pack.expr import Condition
    from solver.reasoning.conflicts import Item

__all__ = ["Backgrounds", "Grown"]

KEPT = 64

Grown = tuple["State | None", "list[str] | None", "dict[str, Scalar] | None"]
"""A question's propagated state (None: propagation refutes it), the fields where the hint may
break (None: anywhere) and the hint, a solution of a prefix of the question (None: none known)."""


def _longest_first(entry: list[Any]) -> int:
    return -len(entry[0])


class Backgrounds:
    """The questions of one QuickXplain run that had a solution: each as its items (by position
    in the run's items, `seed`), its propagated state when one was made, and the solution that
    answered it."""

    def __init__(
        self,
        cp: CompiledPack,
        fixed: Mapping[str, Scalar],
        extras: Sequence[Condition],
        shared: dict[tuple[str, ...], tuple[State, dict[str, Scalar]]] | None = None,
    ) -> None:
        self.cp = cp
        self.fixed = fixed
        self.extras = extras
        # [items' positions, propagated state (None: not made yet), solution]
        self.kept: list[list[Any]] = []
        self._root: list[State | None] = []
        # The states of questions of rules alone, by the rules' names, kept across the reasons
        # that fix no pin and add no condition (`seed`): the same question in each of them.
        self.shared = shared if not fixed and not extras else None
        # Each item's pin (name, value) and rule's constraint, and each item's name, by the item's
        # position (`seed`).
        self._pin_of: dict[int, tuple[str, Scalar | None]] = {}
        self._rule_of: dict[int, Constraint] = {}
        self._names: list[str] = []

    def seed(self, items: Sequence[Item]) -> None:
        """Keep the questions of rules alone, prefixes of `items`, that an earlier reason made a
        state for. The totality check explains each fact combination over the same first layer
        of rules, its pins last: QuickXplain's first questions (the first half of the rules, then
        three quarters, ...) are the same in every reason, and each grew its state from the root
        (synthetic 1,000: 186 of them, 1.2 s of the totality check at load 23). Also makes the
        tables of the items by position (`_grown`, `_share`): called first, with every item; the
        questions are then asked by the items' positions."""
        constraints = self.cp.constraints
        self._pin_of = {p: (i.name, i.value) for p, i in enumerate(items) if i.kind == "pin"}
        self._rule_of = {
            p: constraints[i.name] for p, i in enumerate(items) if i.kind == "rule" and i.name in constraints
        }
        self._names = [i.name for i in items]
        if not self.shared:
            return
        names: list[str] = []
        for item in items:
            if item.kind != "rule":
                break
            names.append(item.name)
        # (Those found move to the end, so the questions every reason asks are the last let go:
        # ~5 new ones a reason, 59 reasons at 1,000 synthetic fields, `KEPT` kept.)
        found = [key for key in self.shared if len(key) <= len(names) and tuple(names[: len(key)]) == key]
        for key in found:
            state, solution = self.shared[key] = self.shared.pop(key)
            self.kept.append([tuple(range(len(key))), state, solution])

    def _share(self, chosen: Sequence[int], state: State | None, solution: dict[str, Scalar]) -> None:
        if self.shared is not None and state is not None and self._pin_of.keys().isdisjoint(chosen):
            self.shared[tuple(map(self._names.__getitem__, chosen))] = (state, solution)
            if len(self.shared) > KEPT:
                del self.shared[next(iter(self.shared))]

    def root(self) -> State | None:
        """The state with no item: the fixed pins and the conditions alone."""
        if not self._root:
            self._root.append(self.cp.start(self.fixed, rules=[], extra=self.extras))
        return self._root[0]

    def answered(self, ids: tuple[int, ...]) -> dict[str, Scalar] | None:
        """The solution of a kept question with exactly these items (positions), if one is
        kept: then it answers the question again. QuickXplain's first questions of a totality
        reason (the first half of the rules, then three quarters, ...) are kept from earlier
        reasons (`seed`), and each was answered again, by a search from its kept state (its
        groups split anew) or a witness testing each rule it was not known to keep: 1-11 ms
        each at 1,000 synthetic fields, ~15 ms a reason over 3,037 items."""
        size = len(ids)
        return next((e[2] for e in self.kept if len(e[0]) == size and e[0] == ids), None)

    def grow(self, chosen: Sequence[int], ids: tuple[int, ...] | None = None) -> Grown:
        """The question `chosen` (items' positions), grown from the longest kept question that is
        a prefix of it (else the root state), with that question's solution as its hint: the
        fields the growth pinned, narrowed or added rules over are the only places the hint can
        break. `ids`: `chosen` as a tuple, when the caller has it."""
        if ids is None:
            ids = tuple(chosen)
        around: list[str] = []
        state, hint = self._grown(chosen, ids, len(ids) + 1, around)
        return state, around if hint is not None else None, hint

    def _grown(
        self, chosen: Sequence[int], ids: tuple[int, ...], below: int, around: list[str]
    ) -> tuple[State | None, dict[str, Scalar] | None]:
        """`chosen`'s state grown from the longest kept prefix shorter than `below`, and that
        prefix's solution. A prefix answered by a known solution has no state yet: it is grown
        now, once, and kept (without it the questions after it grew from the root: at 1,000
        synthetic fields 118 of the totality check's questions, each of all its ~1,500 items)."""
        # The longest kept prefix (the earliest kept of equal ones), compared item by item only
        # from the longest candidate down: each kept ancestor of a question is a prefix of it,
        # and a comparison of each was a pass over its ~1,000 items (synthetic 1,000's totality).
        ends = min(len(ids), below - 1)
        candidates = [
            entry
            for entry in self.kept
            if (size := len(entry[0])) <= ends and (not size or ids[size - 1] == entry[0][-1])
        ]
        candidates.sort(key=_longest_first)
        best: list[Any] | None = next((e for e in candidates if ids[: len(e[0])] == e[0]), None)
        if best is None:
            base, size, hint = self.root(), 0, None
            if base is None:
                return None, None
        else:
            size, hint = len(best[0]), best[2]
            if best[1] is None:
                # (It had a solution: propagation cannot refute it.)
                best[1] = self._grown(chosen[:size], ids[:size], size, [])[0]
                self._share(chosen[:size], best[1], best[2])
            base = best[1]
        # The items past the prefix, read by position in C (`seed`'s tables).
        added = ids[size:]
        pins: dict[str, Scalar] = dict(filter(None, map(self._pin_of.get, added)))  # type: ignore[arg-type]
        rules = list(filter(None, map(self._rule_of.get, added)))
        return base.extended(pins, rules, around), hint

    def keep(
        self,
        chosen: Sequence[int],
        state: State | None,
        solution: dict[str, Scalar],
        ids: tuple[int, ...] | None = None,
    ) -> None:
        """Remember that `chosen` (items' positions) has `solution` (and its propagated `state`,
        when one was made); `ids` as in `grow`."""
        self.kept.append([tuple(chosen) if ids is None else ids, state, solution])
        del self.kept[:-KEPT]
        self._share(chosen, state, solution)
