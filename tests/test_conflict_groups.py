"""Laws of how `minimal_conflict` finds the group of rules that fails (solver/reasoning/conflicts.py):

- the answer, and the values of the groups solved before the failing one (`solved`, where the
  repairs' searches start), are those of a search of every group in turn, against generated packs;
- a group three-valued evaluation decides under the pins (every rule true whatever its free fields
  hold, or one false whatever they hold) is answered without a search: on the SGLang pack, a
  conflict's request splits into ~100 groups, almost all one rule its pins decide.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest
from generated import Case, cases
from hypothesis import HealthCheck, given, settings

from solver.engine.csp import DESCENT_FIRST, CompiledPack, compile_pack
from solver.errors import Unsatisfiable
from solver.model import Pin, Scalar
from solver.pack.loader import load_directory
from solver.reasoning import chainfailure, conflicts
from solver.reasoning.conflicts import Item, minimal_conflict, quickxplain
from solver.reasoning.resolution import resolve


def _searched(
    cp: CompiledPack, pins: Mapping[str, Pin], solved: dict[str, Scalar]
) -> tuple[list[Pin], list[str]] | None:
    """`minimal_conflict` as it was made before groups were decided without a search: each group
    searched in turn (the reference)."""
    values = {name: pin.value for name, pin in pins.items()}
    for group in conflicts._components(cp, values):
        read = {name for rid in group for name in cp.rules[rid].fields}
        solution = cp.solve(values, rules=group, hint=DESCENT_FIRST)
        if solution is not None:
            solved.update({name: solution[name] for name in read})
            continue
        items = [Item("rule", rid) for rid in group]
        pin_items = [Item("pin", n, p.value, p.source) for n, p in pins.items() if n in read]
        pin_items.sort(key=lambda it: conflicts._pin_rank(it.source))
        core = quickxplain(conflicts._oracle(cp, {}, "explaining a conflict"), items + pin_items)
        rules = [it.name for it in core if it.kind == "rule"]
        return [pins[it.name] for it in core if it.kind == "pin"], rules
    return None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
def test_minimal_conflict_is_the_group_by_group_search(case: Case) -> None:
    """The conflict and the solved groups' values are the reference's, pins in or out of their
    domains (a generated request may type a value a field does not list)."""
    cp = compile_pack(case.pack)
    pins = {n: Pin(field=n, value=v, source=s) for n, (v, s) in case.pins().items()}  # type: ignore[arg-type]
    got_solved: dict[str, Scalar] = {}
    want_solved: dict[str, Scalar] = {}
    got = minimal_conflict(cp, pins, solved=got_solved)
    want = _searched(cp, pins, want_solved)
    assert got == want
    assert got_solved == want_solved


def test_groups_the_pins_decide_are_not_searched(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A conflict on the SGLang pack (tests/cases/sglang/r22-cpu-gptq-act-order-refused.toml: a GPTQ
    act-order checkpoint on a CPU without AMX): its minimal conflict makes fewer searches than
    there are groups its pins decide (it made one per group before the failing one)."""
    root = Path(__file__).resolve().parents[1]
    pack = load_directory(root / "constraints" / "sglang")
    facts = {
        "platform": "cpu",
        "cpu_has_amx": False,
        "architecture": "LlamaForCausalLM",
        "checkpoint_quant": "gptq",
        "gptq_desc_act": True,
    }
    asked: list[tuple[CompiledPack, dict[str, Pin]]] = []
    searches: list[int] = []
    search = CompiledPack.search

    def counted(self: CompiledPack, *args: object, **kwargs: object) -> object:
        searches.append(1)
        return search(self, *args, **kwargs)  # type: ignore[arg-type]

    def recorded(cp: CompiledPack, pins: Mapping[str, Pin], **kwargs: object) -> object:
        asked.append((cp, dict(pins)))
        monkeypatch.setattr(CompiledPack, "search", counted)
        try:
            return minimal_conflict(cp, pins, **kwargs)  # type: ignore[arg-type]
        finally:
            monkeypatch.setattr(CompiledPack, "search", search)

    monkeypatch.setattr(chainfailure, "minimal_conflict", recorded)
    with pytest.raises(Unsatisfiable) as raised:
        resolve(pack, {}, facts, predict=True, reasons=False)
    assert [r.id for r in raised.value.conflict.rules] == ["quant-gptq-cpu-act-order"]
    assert len(asked) == 1
    cp, pins = asked[0]
    values = {n: p.value for n, p in pins.items()}
    # The groups before the one that fails, which a search of each group in turn searched.
    before = []
    for group in conflicts._components(cp, values):
        if cp.solve(values, rules=group, hint=DESCENT_FIRST) is None:
            break
        before.append(group)
    decided = sum(all(cp.rules[rid].condition.partial(values) is True for rid in group) for group in before)
    assert decided > 10, "the request no longer has groups its pins decide before the failing one"
    assert len(searches) < decided, (len(searches), decided)
