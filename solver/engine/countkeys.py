"""A component's cache key for the model counter (`ResidualKeys`): what its checks still say
about its free fields, and those fields' domains.

Equal residuals count alike, so equal sub-problems share one entry of `ModelCounter`'s cache (as
#SAT counters key on the residual formula). Imports only the standard library.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from solver.model import Scalar
    from solver.pack.expr import Condition

__all__ = ["ResidualKeys"]

_TABLE_CELLS = 4096  # a residual check up to this many free combinations is keyed by its truth table
_FREE = object()  # a field a residual check leaves free
_FIELDS = operator.attrgetter("fields")


class ResidualKeys:
    """Component keys over `checks` (the counter's own list: checks added later are keyed too)."""

    def __init__(self, checks: Sequence[Condition], domains: Mapping[str, tuple[Scalar, ...]]) -> None:
        self.checks = checks
        self.domains = domains
        self._residuals: dict[tuple[int, tuple[Any, ...]], Any] = {}
        self._tables: dict[tuple[Any, ...], int] = {}

    def key(
        self,
        checks: list[int],
        names: list[str],
        doms: Mapping[str, tuple[Scalar, ...]],
        values: Mapping[str, Scalar],
    ) -> tuple[tuple[Any, ...], dict[str, Scalar]]:
        """A component's cache key (residual checks, domains) and the values its checks read."""
        outside = self.outside(checks, doms, values)
        residuals = frozenset(self.residual(c, doms, values) for c in checks)
        key = (residuals, tuple(sorted((n, doms[n]) for n in names)))
        return key, outside

    def outside(
        self, checks: list[int], doms: Mapping[str, tuple[Scalar, ...]], values: Mapping[str, Scalar]
    ) -> dict[str, Scalar]:
        """The fixed values a component's checks read (by name, sorted)."""
        # (The set made in C: a pass per node over every field of a component's checks.)
        read = set(
            itertools.chain.from_iterable(map(_FIELDS, map(self.checks.__getitem__, checks)))
        ).difference(doms)
        return {n: values[n] for n in sorted(read)}

    def residual(self, index: int, doms: Mapping[str, Any], values: Mapping[str, Scalar]) -> Any:
        """What check `index` still says about its free fields given its fixed ones. A small one
        is its interned truth table; a large one, the check and its fixed values."""
        names = self.checks[index].fields
        fixed = tuple(values[n] if n not in doms else _FREE for n in names)
        found = self._residuals.get((index, fixed))
        if found is not None:
            return found
        free = [n for n, v in zip(names, fixed, strict=True) if v is _FREE]
        size = 1
        for name in free:
            size *= len(self.domains[name])
        if size > _TABLE_CELLS:
            found = (index, fixed)
        else:
            # The product over every position (a fixed one has its one value) yields the rows in
            # the order of the free fields' product, already as the check's argument tuples.
            holds = self.checks[index].holds
            cells = itertools.product(
                *(self.domains[n] if v is _FREE else (v,) for n, v in zip(names, fixed, strict=True))
            )
            table = (tuple(free), tuple(map(holds, cells)))
            found = self._tables.setdefault(table, len(self._tables))
        self._residuals[(index, fixed)] = found
        return found
