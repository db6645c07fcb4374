"""The values a chain failure's repairs try (`chainfailure._fitting`): exactly the values of the
pin's field that the rest of the request, as the launcher sees it, can hold (what
`CompiledPack.satisfiable` answers for each), found from one propagation of that rest per pin
rather than one per value (solver/reasoning/chainfailure.py)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from solver.engine.csp import CompiledPack
from solver.errors import Unsatisfiable
from solver.model import Pin, Scalar
from solver.pack.loader import load_directory
from solver.reasoning import chainfailure
from solver.reasoning.decide import ChainFailed
from solver.reasoning.plan import Plan
from solver.reasoning.resolution import resolve

# tests/cases/sglang/r22-cpu-gptq-act-order-refused.toml: a GPTQ act-order checkpoint on a CPU
# without AMX, no flag; SGLang's own scheme choice fails (a chain failure in predict mode).
_FACTS = {
    "platform": "cpu",
    "cpu_has_amx": False,
    "architecture": "LlamaForCausalLM",
    "checkpoint_quant": "gptq",
    "gptq_desc_act": True,
}


def test_fitting_values_are_those_the_rest_can_hold(monkeypatch: pytest.MonkeyPatch) -> None:
    pack = load_directory(Path(__file__).resolve().parents[1] / "constraints" / "sglang")
    fitting = chainfailure._fitting
    asked: list[tuple[list[Scalar], list[Scalar], int]] = []
    starts: list[int] = []
    start = CompiledPack.start

    def counted(self: CompiledPack, *args: Any, **kwargs: Any) -> Any:
        starts.append(1)
        return start(self, *args, **kwargs)

    def checked(plan: Plan, view: Mapping[str, Pin], pin: Pin, failed: ChainFailed) -> Iterator[Scalar]:
        del starts[:]
        monkeypatch.setattr(CompiledPack, "start", counted)
        try:
            got = list(fitting(plan, view, pin, failed))
        finally:
            monkeypatch.setattr(CompiledPack, "start", start)
        made = len(starts)
        others = {n: p.value for n, p in view.items() if n != pin.field}
        ranked = chainfailure.nearest_first(plan.pack, pin, plan.ranking(pin.field, failed.decided)[0])
        want = [
            value
            for value in ranked
            if value != pin.value
            and not (pin.field == failed.field and value in failed.chain)
            and plan.compiled.satisfiable({**others, pin.field: value}) is not None
        ]
        asked.append((got, want, made))
        return iter(got)

    monkeypatch.setattr(chainfailure, "_fitting", checked)
    with pytest.raises(Unsatisfiable):
        resolve(pack, {}, _FACTS, predict=True, reasons=False)
    assert asked, "the request no longer fails by its launcher's default"
    assert any(len(want) > 1 for _, want, _ in asked), "no pin with several values to try"
    for got, want, made in asked:
        assert got == want
        assert made <= 1, f"{made} propagations of the request for {len(want)} values"
