"""`CompiledPack.satisfiable`, the engine's yes-or-no question: the law on generated packs (its
answer is brute force's, its witness a solution), and what a yes costs on the SGLang pack."""

from __future__ import annotations

import pytest
from generated import Oracle, PackSpec, packs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import solver
from solver.engine import csp
from solver.engine.csp import compile_pack
from solver.model import Scalar


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=packs(), data=st.data())
def test_satisfiable_answers_as_brute_force_with_a_witness_that_holds(
    spec: PackSpec, data: st.DataObject
) -> None:
    """`satisfiable(pins, without_rules=...)` is not None exactly when some configuration keeps
    the pins under those rules, and what it returns is one: the pins, a value of every field's
    domain, every rule taken into account kept."""
    oracle = Oracle(spec)
    cp = compile_pack(spec.pack)
    names = sorted(oracle.domains)
    pinned = data.draw(st.lists(st.sampled_from(names), unique=True, max_size=3))
    pins: dict[str, Scalar] = {n: data.draw(st.sampled_from(oracle.domains[n])) for n in pinned}
    hard = [r.id for r in oracle.hard]
    dropped = data.draw(st.lists(st.sampled_from(hard), unique=True, max_size=2)) if hard else []
    kept = [r for r in oracle.hard if r.id not in dropped]
    witness = cp.satisfiable(pins, without_rules=dropped)
    assert (witness is not None) == oracle.sat(pins, [r.id for r in kept])
    if witness is not None:
        assert set(witness) == set(names)
        assert all(witness[n] == v for n, v in pins.items())
        assert all(witness[n] in oracle.domains[n] for n in names)
        assert all(oracle.holds(rule, witness) for rule in kept), witness


@pytest.mark.parametrize(
    "pins",
    [
        pytest.param({}, id="no-pin"),
        pytest.param({"gpu_arch": "sm100", "moe_runner_backend": "flashinfer_cutlass"}, id="a-repair-value"),
    ],
)
def test_a_yes_on_the_sglang_pack_needs_no_arc_consistent_search(
    pins: dict[str, Scalar], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A conflict's repairs ask `satisfiable` of dozens of values (does this value fit the rest of
    the request?); a yes used to be a search that keeps arc consistency from no hint, 3-15 ms
    each on this pack. A descent from each field's first value finds most witnesses in about
    one step per field: the arc-consistent search is for what the descent cannot settle."""
    cp = compile_pack(solver.load_pack("sglang"))
    started: list[str] = []
    real = csp.new_search

    def counted(*args: object, **kwargs: object) -> object:
        started.append(str(args[1]))
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(csp, "new_search", counted)
    assert cp.satisfiable(pins) is not None
    assert started == []
