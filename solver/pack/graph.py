"""The field dependency graph: the only module that imports networkx.

Edges say "decide this field first": from `depends_on`, from every field a preference's condition
(or `same_as`) reads to the field it ranks, and from the fields an adjustment's condition reads to
the field it may replace. Hard rules add no edges: `A => B` is the same rule as `not B => not A`.
Strongly connected fields are condensed and decided together, in declaration order.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import networkx as nx

from solver.model import Pack
from solver.pack.loader import semantics

__all__ = ["GraphInfo", "analyse", "build", "export"]


@dataclass(frozen=True)
class GraphInfo:
    """What resolution needs from the graph, computed once per pack (no networkx inside)."""

    order: tuple[str, ...]
    components: tuple[tuple[str, ...], ...]
    edges: tuple[tuple[str, str, str], ...]


def build(pack: Pack) -> Any:
    """The field graph as a networkx DiGraph; each edge has a `why` list (ids or `depends_on`)."""
    sem = semantics(pack)
    graph = nx.DiGraph()
    for index, (name, field) in enumerate(pack.fields.items()):
        graph.add_node(name, kind=field.kind, index=index, group=field.group)

    def add(src: str, dst: str, why: str) -> None:
        if src == dst:
            return
        if graph.has_edge(src, dst):
            graph.edges[src, dst]["why"].append(why)
        else:
            graph.add_edge(src, dst, why=[why])

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
        if rule.adjusts is None:
            continue
        for src in sem.rules[rule.id].fields:
            add(src, rule.adjusts, rule.id)
    return graph


def analyse(pack: Pack) -> GraphInfo:
    """Order (lexicographic topological order of the condensation), cycles and edges."""
    graph = build(pack)
    index = {name: i for i, name in enumerate(pack.fields)}
    condensed = nx.condensation(graph)
    members = condensed.graph["mapping"]
    groups: dict[int, list[str]] = {}
    for name, comp in members.items():
        groups.setdefault(comp, []).append(name)
    for names in groups.values():
        names.sort(key=index.__getitem__)
    first = {comp: index[names[0]] for comp, names in groups.items()}
    order: list[str] = []
    for comp in nx.lexicographical_topological_sort(condensed, key=first.__getitem__):
        order += groups[comp]
    components = tuple(tuple(names) for names in groups.values() if len(names) > 1)
    edges = tuple((src, dst, ",".join(data["why"])) for src, dst, data in sorted(graph.edges(data=True)))
    return GraphInfo(order=tuple(order), components=components, edges=edges)


def export(pack: Pack, fmt: str) -> str:
    """The graph as Graphviz DOT, Mermaid or JSON text."""
    info = analyse(pack)
    cycle_nodes = {name for comp in info.components for name in comp}
    if fmt == "json":
        doc = {
            "schema": 1,
            "status": "graph",
            "order": list(info.order),
            "components": [list(c) for c in info.components],
            "nodes": [
                {"name": n, "kind": pack.fields[n].kind, "group": pack.fields[n].group} for n in info.order
            ],
            "edges": [{"from": s, "to": d, "why": w.split(",")} for s, d, w in info.edges],
        }
        return json.dumps(doc, indent=2, sort_keys=True)
    if fmt == "mermaid":
        lines = ["flowchart LR"]
        for name in info.order:
            shape = f"{name}[({name})]" if pack.fields[name].kind == "fact" else f"{name}[{name}]"
            lines.append(f"    {shape}")
        lines += [f"    {s} --> {d}" for s, d, _ in info.edges]
        lines += [f"    style {n} stroke:#c00,stroke-width:2px" for n in sorted(cycle_nodes)]
        return "\n".join(lines) + "\n"
    if fmt == "dot":
        title = pack.name.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ")
        lines = [f'digraph "{title}" {{', "  rankdir=LR;"]
        for name in info.order:
            attrs = ["shape=ellipse" if pack.fields[name].kind == "fact" else "shape=box"]
            if name in cycle_nodes:
                attrs.append("color=red")
            lines.append(f'  "{name}" [{", ".join(attrs)}];')
        for src, dst, why in info.edges:
            lines.append(f'  "{src}" -> "{dst}" [tooltip="{why}"];')
        lines.append("}")
        return "\n".join(lines) + "\n"
    raise ValueError(f"unknown graph format {fmt!r}; use dot, mermaid or json")
