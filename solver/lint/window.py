"""Questions the latest known solutions of a pack answer (`Window`), for lint's `PackOracle`.

A solution met on the way (the pool) proves many values and conditions possible: these tests
read the latest `SEEN` of them, or the values every one of them has shown. A False answer proves
nothing: the question then goes to a search.

Imports only the standard library at module level.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from solver.model import Scalar
    from solver.pack.expr import Condition

__all__ = ["LATEST", "SEEN", "Window"]

SEEN = 1024
LATEST = 16


class Window:
    """The pool of known solutions of a pack and the values each field has shown in them."""

    pool: list[dict[str, Scalar]]
    proven: dict[str, set[Scalar]]

    def seen(self, test: Callable[[dict[str, Scalar]], bool]) -> bool:
        """Whether one of the latest solutions met passes `test` (False proves nothing).

        Only the latest `SEEN`: the pool grows with the pack (about nine solutions a field), and
        a scan of all of it per question made these checks grow as n^2. Fewer (64, 256) cost the
        SGLang pack 0.5 s more questions; an older solution is rarely the only one that passes,
        and the question then goes to `solve`."""
        return any(test(w) for w in reversed(self.pool[-SEEN:]))

    def seen_where(self, pins: Mapping[str, Scalar], cond: Condition | None) -> bool:
        """`seen` of "has `pins` (==) and satisfies `cond`", each distinct row of those fields
        evaluated once (a scan finding none evaluated every solution: synthetic 1,000 1.2 s)."""
        names = list(dict.fromkeys([*pins, *(cond.fields if cond is not None else ())]))
        window = self.pool[-SEEN:]
        if not names:  # a condition on no field: constant
            return bool(window) and (cond is None or bool(cond.holds(())))
        if len(names) == 1:
            # One field: the values every known solution has shown (`proven`), the whole pool
            # and not the latest `SEEN` only, with no scan (synthetic 1,000: ~1,800 such `when`s).
            rows = {(value,) for value in self.proven[names[0]]}
        else:
            if self._latest(pins, cond):
                return True
            rows = set(map(operator.itemgetter(*names), window))
        if not pins and cond is not None and len(names) == len(cond.fields):
            return any(map(cond.holds, rows))  # (each row is the condition's own tuple)
        wanted = [(names.index(n), v) for n, v in pins.items()]
        at = [] if cond is None else [names.index(n) for n in cond.fields]
        return any(
            all(row[i] == v for i, v in wanted) and (cond is None or cond.holds(tuple([row[i] for i in at])))
            for row in rows
        )

    def _latest(self, pins: Mapping[str, Scalar], cond: Condition | None) -> bool:
        """Whether one of the latest `LATEST` solutions has `pins` and satisfies `cond`: read
        first, as most questions a known solution answers are answered by a recent one (synthetic
        1,000: of the 1,114 with two fields or more, half by one of the latest 5, three quarters
        of the latest 16), before the rows of the whole window are collected (~0.1 ms each)."""
        wanted = list(pins.items())
        fields = () if cond is None else cond.fields
        for solution in self.pool[-1 : -LATEST - 1 : -1]:
            if all(solution[n] == v for n, v in wanted) and (
                cond is None or cond.holds(tuple([solution[f] for f in fields]))
            ):
                return True
        return False
