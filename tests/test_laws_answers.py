"""Answers without repairs: `resolve(..., repairs=False)` (and `check`) answer exactly as with
repairs, the repairs left out. The laws over random requests that read only the answer
(tests/test_laws_shipped.py) ask without them: on vLLM most draws conflict, and searching a
conflict's repairs was most of its cost (round 22: ~0.7 s CPU a failure, 85 % of it repairs).

The law: for seeded random requests on both shipped packs, in both modes, the same answer: a
`Resolution` equal field for field (values, provenance, adjustments, departures, assumed,
warnings), or an `Unsatisfiable` with the same conflict (pins and rules), the same launcher
default that fails, the same request and adjustments, and the same text up to the repairs;
without repairs, none and `repairs_searched` False.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import jsonschema
import pytest
from test_laws_shipped import DRAWS, _answer, _count, _pack, requests

from solver import check, load_pack, resolve
from solver.errors import Unsatisfiable
from solver.inputs.pins import collect_pins
from solver.model import Resolution, Scalar
from solver.reasoning.resolution import resolve_pins
from solver.render.schema import output_schema

pytestmark = pytest.mark.property

# The last line before the repairs (`solver.render.text.conflict_message`).
_REPAIRS_START = ("What you can change", "No change of the given inputs", "Repairs were not searched")


def _before_repairs(message: str) -> str:
    lines = message.splitlines()
    cut = next((i for i, line in enumerate(lines) if line.startswith(_REPAIRS_START)), len(lines))
    return "\n".join(lines[:cut])


def _law_the_answer_is_the_same_without_repairs(name: str, count: int) -> None:
    """`resolve` and `check` with and without repairs: the same answer (see the module). Drawn
    until it has met a resolution, a request that conflicts and a launcher default that fails
    (of at most DRAWS x `count` requests)."""
    met: set[str] = set()
    for drawn, (pack, options, facts) in enumerate(requests(name, "answer-only", DRAWS * count)):
        if drawn >= count and len(met) == 3:
            break
        for fn in (resolve, check):
            full = _answer(fn, pack, options, facts, repairs=True)
            bare = _answer(fn, pack, options, facts, repairs=False)
            said = (fn.__name__, options, facts)
            assert type(full) is type(bare), (*said, str(full)[:300], str(bare)[:300])
            if isinstance(full, Resolution):
                met.add("resolved")
                assert bare.model_dump() == full.model_dump(), said
                continue
            met.add("launcher default" if full.launcher_default else "conflict")
            assert full.repairs_searched and not bare.repairs_searched and bare.repairs == [], said
            assert bare.conflict.model_dump() == full.conflict.model_dump(), said
            assert bare.launcher_default == full.launcher_default, said
            assert (bare.request, bare.adjusted, bare.lead) == (full.request, full.adjusted, full.lead), said
            assert _before_repairs(bare.message) == _before_repairs(full.message), said
    assert met == {"resolved", "conflict", "launcher default"}, (name, met)


@pytest.mark.parametrize("name", ["sglang", "vllm"])
def test_the_answer_is_the_same_without_repairs(name: str) -> None:
    _law_the_answer_is_the_same_without_repairs(name, _count())


@pytest.mark.long
@pytest.mark.parametrize("name", ["sglang", "vllm"])
def test_the_answer_is_the_same_without_repairs_for_many_requests(name: str) -> None:
    _law_the_answer_is_the_same_without_repairs(name, _count(long=True))


def test_the_law_fails_where_no_repairs_means_no_explanation(monkeypatch: pytest.MonkeyPatch) -> None:
    """Mutant: `repairs=False` taken as the fast path `resolve_pins` already has
    (`explain_failure=False`: a bare conflict, no launcher default). The law fails on it."""

    def mutated(fn: Callable[..., Any]) -> Callable[..., Any]:
        def answer(pack: Any, options: Any, facts: Any, *, repairs: bool = True) -> Any:
            if repairs:
                return fn(pack, options, facts)
            pins = collect_pins(pack, options, facts)
            return resolve_pins(pack, pins, predict=fn is check, explain_failure=False)

        return answer

    module = sys.modules[__name__]
    monkeypatch.setattr(module, "resolve", mutated(resolve))
    monkeypatch.setattr(module, "check", mutated(check))
    with pytest.raises(AssertionError):
        _law_the_answer_is_the_same_without_repairs("vllm", _count())


_B200_E5M2: tuple[dict[str, Scalar], dict[str, Scalar]] = (
    {"kv_cache_dtype": "fp8_e5m2"},
    {"platform": "cuda", "gpu_arch": "sm100", "architecture": "DeepseekV3ForCausalLM"},
)


@pytest.mark.parametrize("fn", [resolve, check], ids=["conflict", "launcher-default"])
def test_a_conflict_without_repairs_says_they_were_not_searched(fn: Callable[..., Any]) -> None:
    """Without repairs, the text and the JSON say none were searched, not that none exists (an
    empty list alone reads "No change of the given inputs makes this request solvable"); the
    JSON is a conflict document of `confsolve schema`."""
    pack = load_pack("sglang")
    options, facts = _B200_E5M2
    if fn is resolve:  # (`resolve` departs from the backend; a typed one it cannot leave conflicts)
        options = {**options, "attention_backend": "trtllm_mla"}
    with pytest.raises(Unsatisfiable) as caught:
        fn(pack, options, facts, repairs=False)
    exc = caught.value
    assert (exc.launcher_default is not None) == (fn is check)
    assert exc.repairs == [] and exc.to_json()["repairs_searched"] is False
    jsonschema.Draft202012Validator(output_schema()).validate(exc.to_json())
    assert "Repairs were not searched" in exc.message and "No change of the given" not in exc.message
    full = _answer(fn, _pack("sglang"), options, facts, repairs=True)
    assert isinstance(full, Unsatisfiable) and full.repairs and "repairs_searched" not in full.to_json()
