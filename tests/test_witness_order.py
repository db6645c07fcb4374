"""Laws of the order in which a choices witness tries a value (round 30, issue #18's 5,000-field
choices row), against brute force on generated packs (tests/generated.py):

- `Witnesses.witness` answers what brute force answers whichever it tries first, the mend of a
  known solution or the refutation (`State.refutes`): a value a mend puts in is not propagated
  at all (at 5,000 synthetic fields 94 % of the refutations tried first refuted nothing), and a
  field whose value was refuted has its next value refuted before any mend;
- `WithoutEach`'s states record no reasons, and none of them is kept where `traced_domains`
  hands states out (its callers may read their reasons: `solver.reasoning.givenchoices`).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from generated import Case, Oracle, cases
from hypothesis import HealthCheck, given, settings

from solver.engine.csp import compile_pack
from solver.engine.state import State
from solver.engine.tracing import Untraced, WithoutEach
from solver.model import Scalar
from solver.reasoning.witness import Witnesses

pytestmark = pytest.mark.property

LAW = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _same(x: Scalar, y: Scalar) -> bool:
    return type(x) is type(y) and x == y


class _Propagations:
    """Counts the values `State.fix` and `State.refutes` are asked to propagate, while on."""

    def __init__(self, patch: pytest.MonkeyPatch) -> None:
        self.count = 0
        fix, refutes = State.fix, State.refutes

        def counted_fix(state: State, *args: object, **kwargs: object) -> bool:
            self.count += 1
            return fix(state, *args, **kwargs)  # type: ignore[arg-type]

        def counted_refutes(state: State, *args: object, **kwargs: object) -> bool:
            self.count += 1
            return refutes(state, *args, **kwargs)  # type: ignore[arg-type]

        patch.setattr(State, "fix", counted_fix)
        patch.setattr(State, "refutes", counted_refutes)


def _pins(case: Case) -> dict[str, Scalar]:
    return {name: value for name, (value, _) in case.pins().items()}


def _values(cp_domains: dict[str, list[Scalar]], pins: dict[str, Scalar]) -> Iterator[tuple[str, Scalar]]:
    for name, domain in cp_domains.items():
        if name not in pins:
            for value in domain:
                yield name, value


@LAW
@given(case=cases())
def test_a_witness_is_brute_forces_answer_and_a_mended_value_is_never_propagated(case: Case) -> None:
    """Each value of each field without a pin: the witness is a configuration with the pins and
    the value exactly when brute force has one; when a mend of the known solution puts it in,
    no value was propagated (fails on 487ea0a, which refuted every value first); after a value
    a propagation refuted, the field's next value is refuted before anything else."""
    oracle = Oracle(case.spec)
    cp = compile_pack(case.pack)
    pins = _pins(case)
    near = cp.solve(pins, task="testing witnesses")
    if near is None:
        return
    witnesses = Witnesses(cp, pins, "testing witnesses", mend_first=True)
    state = witnesses.state
    assert state is not None
    with pytest.MonkeyPatch.context() as patch:
        counted = _Propagations(patch)
        for name, value in _values(cp.domains, pins):
            possible = any(_same(value, v) for v in oracle.possible(name, pins))
            refuted_first = name in witnesses._refuting
            mends = value in witnesses.traced.domains[name] and cp.mend(state, near, name, value) is not None
            counted.count = 0
            found = witnesses.witness(name, value, near, keeps=True)
            assert (found is not None) == possible, (name, value, pins)
            if found is not None:
                assert _same(found[name], value) and all(_same(found[n], v) for n, v in pins.items())
                assert oracle.sat(dict(found)), (name, value, found)
            if mends and not refuted_first:
                assert counted.count == 0, (name, value)
            if refuted_first and value in witnesses.traced.domains[name]:
                assert counted.count >= 1, (name, value)  # (the refutation came first)


@LAW
@given(case=cases())
def test_the_states_without_each_pin_are_untraced_and_never_handed_out_as_traced(case: Case) -> None:
    """`WithoutEach`'s states record no reasons (fails on 487ea0a, whose states recorded every
    narrowing's), and `traced_domains`' kept states, whose reasons a typed copy's choices read,
    are never one of them."""
    cp = compile_pack(case.pack)
    pins = _pins(case)
    names = sorted(case.pack.fields)
    halves = WithoutEach(cp, pins, names)
    asked = [n for n in names if n in pins]
    for name in asked:
        state = halves(name)
        if len(asked) > 1:  # (one pin asked about: its state is the seed's, `traced_domains`')
            assert isinstance(state, Untraced) and not any(state.removed.values()), name
    kept = cp.memo.get("traced-domains", {})
    assert not any(isinstance(state, Untraced) for state in kept.values())
