"""Items that share a name, grouped (union-find): the one union-find of solver/.

The engine splits open constraints into groups that share no free field and searches each on its
own (`solver.engine.localsearch.independent_groups`); explanations check groups of interacting
rules one at a time (`solver.reasoning.conflicts`). Both are "connected components of items
linked by the names they share", answered here in one pass with path compression.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

__all__ = ["connected_groups"]

Item = TypeVar("Item")


def connected_groups(items: Sequence[Item], names: Sequence[Sequence[str]]) -> list[list[Item]]:
    """`items` grouped so that two items sharing a name (`names[i]` are the names of `items[i]`)
    are in the same group. The groups come in the order of their first item, each with its items
    in the given order; an item with no name is a group of its own.

    >>> connected_groups(["r1", "r2", "r3", "r4"], [["a", "b"], ["c"], ["b", "c"], []])
    [['r1', 'r2', 'r3'], ['r4']]
    >>> connected_groups(["r1", "r2"], [["a"], ["b"]])
    [['r1'], ['r2']]
    """
    parent: dict[str, str] = {}

    def find(name: str) -> str:
        root = name
        while (up := parent.get(root, root)) != root:
            root = up
        while name != root:  # path compression: every name on the way points at the root
            parent[name], name = root, parent[name]
        return root

    for own in names:
        if own:
            root = find(own[0])
            for other in own[1:]:
                found = find(other)
                if found != root:
                    parent[found] = root
    groups: dict[str, list[Item]] = {}
    out: list[list[Item]] = []
    for item, own in zip(items, names, strict=True):
        if not own:
            out.append([item])
            continue
        root = find(own[0])
        group = groups.get(root)
        if group is None:
            group = groups[root] = []
            out.append(group)
        group.append(item)
    return out
