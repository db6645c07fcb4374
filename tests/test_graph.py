"""The field graph's order and cycles (`solver.pack.graph.analyse`, standard library) against networkx's
condensation and lexicographic topological sort, which it replaced on the `check` path."""

from __future__ import annotations

import random

import networkx as nx
import pytest

import solver
from solver.model import Pack
from solver.pack.graph import _strong_components, analyse, build


def _by_networkx(pack: Pack) -> tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]:
    graph = build(pack)
    index = {name: i for i, name in enumerate(pack.fields)}
    condensed = nx.condensation(graph)
    groups: dict[int, list[str]] = {}
    for name, comp in condensed.graph["mapping"].items():
        groups.setdefault(comp, []).append(name)
    for names in groups.values():
        names.sort(key=index.__getitem__)
    first = {comp: index[names[0]] for comp, names in groups.items()}
    order: list[str] = []
    for comp in nx.lexicographical_topological_sort(condensed, key=first.__getitem__):
        order += groups[comp]
    return tuple(order), tuple(tuple(n) for n in groups.values() if len(n) > 1)


@pytest.mark.parametrize("name", ["sglang", "vllm"])
def test_pack_order_and_cycles_match_networkx(name: str) -> None:
    pack = solver.load_pack(name)
    info = analyse(pack)
    assert (info.order, info.components) == _by_networkx(pack)
    graph = build(pack)
    assert info.edges == tuple((s, d, ",".join(w["why"])) for s, d, w in sorted(graph.edges(data=True)))


def test_strong_components_in_networkx_order_on_random_graphs() -> None:
    rng = random.Random(18)
    for _ in range(1500):
        nodes = [f"n{i}" for i in range(rng.randint(1, 12))]
        rng.shuffle(nodes)
        succ: dict[str, list[str]] = {n: [] for n in nodes}
        graph = nx.DiGraph()
        graph.add_nodes_from(nodes)
        for _ in range(rng.randint(0, 30)):
            a, b = rng.choice(nodes), rng.choice(nodes)
            if a != b and b not in succ[a]:
                succ[a].append(b)
                graph.add_edge(a, b)
        mine = [set(c) for c in _strong_components(nodes, succ)]
        assert mine == [set(c) for c in nx.strongly_connected_components(graph)]
