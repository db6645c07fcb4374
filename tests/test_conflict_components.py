"""Law of the groups a minimal conflict checks one at a time (solver/reasoning/conflicts.py,
`_components`, made from each free field's readers by `connected_positions`): they are the
connected components of the rules linked by the fields they share that no pin fixes, in the order
of their first rule, each in pack order (`connected_groups` over each rule's free fields, as they
were made before), against generated packs and the SGLang benchmark's refusals' requests.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from generated import Case, cases
from hypothesis import HealthCheck, given, settings

from solver.engine.csp import CompiledPack, compile_pack
from solver.engine.groups import connected_groups
from solver.model import Scalar
from solver.pack.loader import load_directory
from solver.reasoning.conflicts import _components


def _reference(cp: CompiledPack, pins: Mapping[str, Scalar]) -> list[list[str]]:
    rule_ids = list(cp.rule_ids)
    free = [[f for f in cp.rules[rid].fields if f not in pins] for rid in rule_ids]
    return connected_groups(rule_ids, free)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
def test_groups_are_the_free_fields_components(case: Case) -> None:
    cp = compile_pack(case.pack)
    pins = {n: v for n, (v, _) in case.pins().items()}
    assert _components(cp, pins) == _reference(cp, pins)
    assert _components(cp, {}) == _reference(cp, {})


def test_groups_of_sglang_requests() -> None:
    """Requests of the SGLang pack that split it into one big group and ~100-200 rules alone."""
    cp = compile_pack(load_directory(Path(__file__).resolve().parents[1] / "constraints" / "sglang"))
    requests: list[dict[str, Scalar]] = [
        {},
        {"platform": "cuda", "gpu_arch": "sm90", "architecture": "Lfm2ForCausalLM", "page_size": 64},
        {"platform": "cpu", "cpu_has_amx": False, "architecture": "LlamaForCausalLM", "quantization": "gptq"},
        {name: cp.domains[name][0] for name in list(cp.domains)[::2]},
        {name: cp.domains[name][-1] for name in cp.domains},
    ]
    for pins in requests:
        pins = {n: v for n, v in pins.items() if n in cp.domains}
        assert _components(cp, pins) == _reference(cp, pins)
