"""The field dependency graph: the only module that imports networkx (`build`, on demand).

Edges say "decide this field first": from `depends_on`, from every field a preference's condition
(or `same_as`) reads to the field it ranks, and from the fields an adjustment's condition reads to
the field it may replace (not for a `typed_only` adjustment, whose condition reads given values).
Hard rules add no edges: `A => B` is the same rule as `not B => not A`.
Strongly connected fields are condensed and decided together, in declaration order.

`analyse` (what resolution, lint and the CLI need) runs on the standard library: importing networkx
cost a first `check` after an install ~250 ms of CPU, more than the rest of its start-up. The graph
is drawn (DOT, Mermaid, JSON, SVG) by `solver/render/graph.py`.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Any

from solver.model import Pack
from solver.pack.loader import semantics

__all__ = ["GraphInfo", "analyse", "build"]


@dataclass(frozen=True)
class GraphInfo:
    """What resolution needs from the graph, computed once per pack (no networkx inside)."""

    order: tuple[str, ...]
    components: tuple[tuple[str, ...], ...]
    edges: tuple[tuple[str, str, str], ...]


def _edges(pack: Pack) -> dict[tuple[str, str], list[str]]:
    """Every edge (src, dst) with its reasons (rule or preference ids, or `depends_on`), in the
    order they are first met."""
    sem = semantics(pack)
    edges: dict[tuple[str, str], list[str]] = {}

    def add(src: str, dst: str, why: str) -> None:
        if src != dst:
            edges.setdefault((src, dst), []).append(why)

    for name, field in pack.fields.items():
        for dep in field.depends_on:
            add(dep, name, "depends_on")
    for pref in pack.preferences:
        cond = sem.preferences.get(pref.id)
        for src in cond.fields if cond is not None else ():
            add(src, pref.field, pref.id)
        if pref.same_as is not None:
            add(pref.same_as, pref.field, pref.id)
    for rule in pack.rules:
        if rule.adjusts is None or rule.typed_only:
            continue
        for src in sem.rules[rule.id].fields:
            add(src, rule.adjusts, rule.id)
    return edges


def build(pack: Pack) -> Any:
    """The field graph as a networkx DiGraph; each edge has a `why` list (ids or `depends_on`)."""
    import networkx as nx

    graph = nx.DiGraph()
    for index, (name, field) in enumerate(pack.fields.items()):
        graph.add_node(name, kind=field.kind, index=index, group=field.group)
    for (src, dst), why in _edges(pack).items():
        graph.add_edge(src, dst, why=list(why))
    return graph


def _strong_components(nodes: list[str], succ: dict[str, list[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components, iteratively: roots in `nodes` order, successors
    in edge order, each component when it completes (the order networkx yields them in)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(succ[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for nxt in successors:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(succ[nxt])))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component: list[str] = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    found.append(component)
    return found


def analyse(pack: Pack) -> GraphInfo:
    """Order (lexicographic topological order of the condensation), cycles and edges."""
    edges = _edges(pack)
    index = {name: i for i, name in enumerate(pack.fields)}
    succ: dict[str, list[str]] = {name: [] for name in pack.fields}
    for src, dst in edges:
        succ[src].append(dst)
    groups = _strong_components(list(pack.fields), succ)
    for names in groups:
        names.sort(key=index.__getitem__)
    comp_of = {name: at for at, names in enumerate(groups) for name in names}
    # Kahn's algorithm on the condensation, always taking the ready component whose first field
    # comes first in the pack (what makes the order stable and readable).
    after: list[set[int]] = [set() for _ in groups]
    waiting = [0] * len(groups)
    for src, dst in edges:
        a, b = comp_of[src], comp_of[dst]
        if a != b and b not in after[a]:
            after[a].add(b)
            waiting[b] += 1
    ready = [(index[names[0]], at) for at, names in enumerate(groups) if not waiting[at]]
    heapq.heapify(ready)
    order: list[str] = []
    while ready:
        _, at = heapq.heappop(ready)
        order += groups[at]
        for nxt in after[at]:
            waiting[nxt] -= 1
            if not waiting[nxt]:
                heapq.heappush(ready, (index[groups[nxt][0]], nxt))
    components = tuple(tuple(names) for names in groups if len(names) > 1)
    listed = tuple((src, dst, ",".join(why)) for (src, dst), why in sorted(edges.items()))
    return GraphInfo(order=tuple(order), components=components, edges=listed)
