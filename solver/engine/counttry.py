"""The first-value try of a model counter's search node (`FirstValues`): each field at its first
value in the search's value order, remembered per field for the search.

Imports only the standard library.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from solver.model import Scalar

__all__ = ["FirstValues"]


class FirstValues:
    """Each field's first value in `rank` order, kept per field with the domain it was taken from.

    A search's nodes ask it for every field of their open checks, and a branch leaves most
    domains as they were (the same tuple objects: `ModelCounter._find` narrows by replacing a
    domain): asked again, a field whose domain is that object answers from here. `rank` is a
    pure function of the field and its domain for the life of one search, so this is the value
    `rank(name, domain)[0]` gives (a sort per field per node was a fifth of a node's CPU over a
    component of ~1,000 fields).
    """

    __slots__ = ("_kept", "rank")

    def __init__(self, rank: Callable[[str, tuple[Scalar, ...]], Sequence[Scalar]]) -> None:
        self.rank = rank
        self._kept: dict[str, tuple[tuple[Scalar, ...], Any]] = {}

    def fill(
        self, into: dict[str, Scalar], names: Iterable[str], doms: Mapping[str, tuple[Scalar, ...]]
    ) -> None:
        """`into[name]` = the first value of `doms[name]`, for each of `names` not in `into`."""
        kept, rank = self._kept, self.rank
        for name in names:
            if name in into:
                continue
            domain = doms[name]
            hit = kept.get(name)
            if hit is None or hit[0] is not domain:
                hit = kept[name] = (domain, rank(name, domain)[0])
            into[name] = hit[1]
