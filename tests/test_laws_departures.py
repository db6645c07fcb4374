"""Departures from a launcher's pick that works, on the shipped packs: `resolve` avoids a value a
warn rule flags (the launcher takes it and only warns), and says so.

The check-then-resolve law (tests/test_laws_shipped.py) holds `resolve` to list every option
where it leaves `check`'s value, but no draw of it reaches a true/false option `resolve` leaves
while the launcher's pick works: none caught an engine mutated to drop the departures from such a
pick (round 21's mutant M3: a `DepartureRecord` with a `launcher` value on a true/false field
left out of `departures`), nor did 480 requests drawn around the warn rules (each breaking one,
the option it reads left unset; seed 2230002, round 22). The request below is such a departure
(shared-experts fusion following the MoE runner `resolve` takes instead of the launcher's); it
fails on the mutant. (Round 22 also pinned DP attention turned on to avoid a warned split; DP
attention is no longer searched, so `resolve` keeps the launcher's pick there and warns.)

vLLM 0.33.0's pack has no such departure to reach: its two warn rules flag `--moe-backend` on a
dense model and chunked prefill turned off, neither a pick of the launcher's own; no rule adjusts
one of its true/false options; and its rules make a default of theirs fail (expert parallelism
off under `--enable-eplb`, prefix caching on for a hybrid model under `--no-enable-chunked-prefill`)
only where a typed flag makes the launcher's pick fail too: a departure from a failing pick, which
the mutant keeps. So the mutant changes none of its answers.
"""

from __future__ import annotations

import pytest
from test_laws_shipped import _answer, _pack

from solver import check, resolve
from solver.model import Resolution

pytestmark = pytest.mark.property

# Requests where `resolve` leaves the launcher's working pick of a true/false option.
_BOOLEAN_DEPARTURES = {
    # An MXFP8 MoE on an MI300: SGLang's own MoE runner there is flashinfer_trtllm, which needs
    # FlashInfer (`moe-flashinfer-needs-flashinfer`: a warning on ROCm) and turns shared-experts
    # fusion off (`moe-runner-disables-shared-fusion`); `resolve` takes triton, which keeps it on.
    "shared-fusion": (
        {"quantization": "mxfp8"},
        {
            "platform": "hip",
            "gpu_arch": "gfx942",
            "is_moe": True,
            "architecture": "PixtralForConditionalGeneration",
        },
        "disable_shared_experts_fusion",
    ),
}


@pytest.mark.parametrize("case", _BOOLEAN_DEPARTURES)
def test_resolve_says_where_it_leaves_a_working_boolean_pick(case: str) -> None:
    """The check-then-resolve law on one request each: `check` takes it (the launcher's pick of
    the true/false option works, with a warning), `resolve` takes the other value and lists the
    departure, with the launcher's pick. Fails on the engine mutated to drop such departures
    (M3); no drawn request of the shipped laws' default or long runs reached one."""
    options, facts, field = _BOOLEAN_DEPARTURES[case]
    pack = _pack("sglang")
    predicted = _answer(check, pack, options, facts)
    searched = _answer(resolve, pack, options, facts)
    assert isinstance(predicted, Resolution) and isinstance(searched, Resolution)
    assert searched.values[field] != predicted.values[field]
    departure = next((d for d in searched.departures if d.field == field), None)
    assert departure is not None, (field, searched.departures)
    assert departure.launcher == predicted.values[field] and departure.resolved == searched.values[field]
