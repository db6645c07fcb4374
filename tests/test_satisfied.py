"""Rules closed early (solver/engine/satisfied.py): a rule one fixed field's value satisfies
whatever its other fields hold is closed by propagation, and closing it changes no domain."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import solver
from solver.engine.csp import compile_pack
from solver.engine.satisfied import NEVER
from solver.engine.state import State
from solver.pack.loader import load_directory
from tests.test_engine import toy_with

# Three fields: forward checking alone keeps it open while `ep` and `tp` are free.
RULE = """
[[rule]]
id = "trtllm-ep-within-tp"
when = "kernel == 'trtllm'"
require = "ep <= tp"
because = "toy: trtllm needs ep within tp"
source = "toy/docs"
"""


def test_a_rule_its_fixed_field_satisfies_is_closed(tmp_path: Path) -> None:
    cp = compile_pack(load_directory(toy_with(tmp_path, RULE)))
    made = cp.start({"kernel": "triton"})
    assert made is not None
    assert "trtllm-ep-within-tp" not in made.open  # (its `when` is false: nothing left to filter)
    assert made.domain("ep") == [1, 2, 4, 8] and made.domain("tp") == [1, 2, 4, 8]
    kept = cp.start({"kernel": "trtllm"})
    assert kept is not None and "trtllm-ep-within-tp" in kept.open  # (it still filters here)
    assert kept.fix("tp", 2) and kept.domain("ep") == [1, 2]


@pytest.mark.parametrize("seed", range(3))
def test_closing_changes_no_domain_on_the_sglang_pack(seed: int) -> None:
    """The same pins from the same root, with and without early closing: equal domains, and
    each rule closed only with it holds whatever its free fields hold."""
    pack = solver.load_pack("sglang")
    cp = compile_pack(pack)
    root = cp.start({})
    assert root is not None
    rng = random.Random(2530000 + seed)
    names = sorted(pack.fields)
    for _ in range(40):
        pins = {}
        for name in rng.sample(names, rng.randint(1, 12)):
            pins[name] = rng.choice(root.domain(name))
        closed = root.pinned(pins)
        plain = State(dict(root.domains), root.open.copy(), root.by_field, NEVER).pinned(pins)
        assert (closed is None) == (plain is None), pins
        if closed is None or plain is None:
            continue
        assert closed.domains == plain.domains, pins
        assert set(closed.open) <= set(plain.open)
        for key in set(plain.open) - set(closed.open):
            con = plain.open[key]
            fixed = {f: plain.domain(f)[0] for f in con.fields if len(plain.domain(f)) == 1}
            assert con.condition.partial(fixed) is True, (key, pins)
