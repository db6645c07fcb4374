"""A minimal conflict's QuickXplain starts from the refutation propagation already names
(solver/reasoning/conflicts.py, `_seed_refutation`): when propagating the request's pins wipes a
field out, the rules and pins its recorded reasons name (made minimal) are a known refutation, and
no question holding all of them is searched. The conflict found stays the reference's (QuickXplain
over the group with every question searched), as `test_conflict_groups` checks on generated packs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from solver.engine.csp import CompiledPack
from solver.engine.tracing import traced_base
from solver.errors import Unsatisfiable
from solver.model import Pin, Scalar
from solver.pack.loader import load_directory
from solver.reasoning import chainfailure, conflicts, diagnose
from solver.reasoning.conflicts import Item, minimal_conflict, quickxplain
from solver.reasoning.consistency import Checks
from solver.reasoning.resolution import resolve

ROOT = Path(__file__).resolve().parents[1]


def _asked(monkeypatch: pytest.MonkeyPatch, facts: Mapping[str, Scalar], options: Mapping[str, Scalar]):  # type: ignore[no-untyped-def]
    """The compiled pack and pins the refusal of a request asks its minimal conflict of."""
    pack = load_directory(ROOT / "constraints" / "sglang")
    asked: list[tuple[CompiledPack, dict[str, Pin]]] = []
    real = conflicts.minimal_conflict

    def recorded(cp: CompiledPack, pins: Mapping[str, Pin], **kwargs: object) -> object:
        asked.append((cp, dict(pins)))
        return real(cp, pins, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(diagnose, "minimal_conflict", recorded)
    monkeypatch.setattr(chainfailure, "minimal_conflict", recorded)
    with pytest.raises(Unsatisfiable):
        resolve(pack, dict(options), dict(facts), reasons=False)
    monkeypatch.undo()
    assert asked
    return asked[0]


def _holds(
    pins: Mapping[str, Scalar], rules: Sequence[str], known: tuple[dict[str, Scalar], set[str]]
) -> bool:
    known_pins, known_rules = known
    return known_rules <= set(rules) and all(n in pins and pins[n] == v for n, v in known_pins.items())


@pytest.mark.parametrize(
    ("facts", "options"),
    [
        # tests/cases/sglang/d19-lfm2-no-buffer-page-conflict.toml
        ({"platform": "cuda", "gpu_arch": "sm90", "architecture": "Lfm2ForCausalLM"}, {"page_size": 64}),
    ],
)
def test_no_question_holding_the_traced_refutation_is_searched(
    monkeypatch: pytest.MonkeyPatch, facts: dict[str, Scalar], options: dict[str, Scalar]
) -> None:
    cp, pins = _asked(monkeypatch, facts, options)
    values = {n: p.value for n, p in pins.items()}
    failed = traced_base(cp, values).failed
    assert failed, "propagation no longer refutes the request: pick another"
    reason = [Item(kind, name, values.get(name)) for kind, name in sorted(failed)]
    core = quickxplain(conflicts._oracle(cp, {}, "law"), reason)
    known = (
        {i.name: values[i.name] for i in core if i.kind == "pin"},
        {i.name for i in core if i.kind == "rule"},
    )
    searched: list[tuple[dict[str, Scalar], list[str]]] = []
    real = Checks.searched

    def recorded(self: Checks, asked: Mapping[str, Scalar], rules: list[str]) -> Mapping[str, Scalar] | None:
        searched.append((dict(asked), list(rules)))
        return real(self, asked, rules)

    monkeypatch.setattr(Checks, "searched", recorded)
    found = minimal_conflict(cp, pins)
    monkeypatch.undo()
    assert searched, "no question was searched: the law says nothing here"
    # (The questions over the traced reason's own rules are those that make it minimal.)
    traced = {name for kind, name in failed if kind == "rule"}
    holding = [
        len(rules) for asked, rules in searched if _holds(asked, rules, known) and not traced >= set(rules)
    ]
    assert not holding, f"{len(holding)} of {len(searched)} searches hold a known refutation"
    # The same conflict as QuickXplain over the group with every question asked of `Checks`.
    group = next(g for g in conflicts._components(cp, values) if set(known[1]) <= set(g))
    read = {name for rid in group for name in cp.rules[rid].fields}
    items = [Item("rule", rid) for rid in group]
    pin_items = [Item("pin", n, p.value, p.source) for n, p in pins.items() if n in read]
    pin_items.sort(key=lambda it: conflicts._pin_rank(it.source))
    want = quickxplain(conflicts._oracle(cp, {}, "law"), items + pin_items)
    assert found == (
        [pins[i.name] for i in want if i.kind == "pin"],
        [i.name for i in want if i.kind == "rule"],
    )
