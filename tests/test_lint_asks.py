"""Which of lint's questions reach a search: a known solution or propagation answers first.

A question a known solution already answers (an adjustment's value where its `when` holds) asks
nothing; a whole-pack question with pins only that propagation refutes (a fact combination with
no configuration) is refuted before a repair of a known solution is tried, which can only fail.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from solver import load_pack
from solver.budget import Budget
from solver.lint.checks import lint
from solver.lint.oracle import PackOracle
from solver.model import Pack
from tests.test_lint import FACTS_ONLY_PACK, write_pack

# The facts-only pack of test_lint, its first rule an adjustment (quant=fp8 on an fp8 checkpoint).
ADJUSTING = {
    **FACTS_ONLY_PACK,
    "rules.toml": FACTS_ONLY_PACK["rules.toml"].replace(
        "require = \"quant == 'fp8'\"\n",
        'require = "quant == \'fp8\'"\nadjusts = "quant"\nadjust_to = ["fp8"]\n',
        1,
    ),
}


def _pack(tmp_path: Path) -> Pack:
    pack = load_pack(str(write_pack(tmp_path / "pack", ADJUSTING)))
    assert pack.rule("quant-follows-ckpt").adjusts == "quant"
    return pack


def test_an_adjustment_a_known_solution_fires_asks_no_question(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The values check meets ckpt=fp8 with quant=fp8 (the rule forces it): the adjustment's
    # question (quant=fp8 where ckpt == 'fp8') is answered by that solution, with no search.
    asked: list[str] = []
    solve = PackOracle.solve

    def spy(self: PackOracle, pins: Any, **kwargs: Any) -> Any:
        asked.append(kwargs["what"])
        return solve(self, pins, **kwargs)

    monkeypatch.setattr(PackOracle, "solve", spy)
    report = lint(_pack(tmp_path))
    assert any(w.startswith("value ckpt=") for w in asked)
    assert not [w for w in asked if w.startswith("adjustment")]
    assert not [f for f in report.findings if f.code == "CS114"]


def test_a_combination_propagation_refutes_is_not_repaired(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # gpu=a100 with ckpt=fp8: fp8-ckpt-needs-h100 (and quant-follows-ckpt, fp8-quant-needs-h100)
    # exclude it. Neither pin is dead on its own (the root keeps both), so only the pins'
    # propagation refutes it; a repair of a known solution can only fail there.
    oracle = PackOracle(_pack(tmp_path), samples=10, seed=0, budget=Budget(10_000))
    assert oracle.solve({}, what="the whole pack", ids=["facts-only"])
    assert oracle.pool and not oracle.refuted_at_root({"gpu": "a100", "ckpt": "fp8"})
    repairs: list[object] = []
    repair = PackOracle.repair

    def spy(self: PackOracle, *args: Any) -> Any:
        repairs.append(args[0])
        return repair(self, *args)

    monkeypatch.setattr(PackOracle, "repair", spy)
    assert oracle.query({"gpu": "a100", "ckpt": "fp8"}, oracle.cp.rule_ids, []) is None
    assert repairs == []
    # A combination with a configuration is still answered by a repair of a known one.
    assert oracle.query({"gpu": "h100", "ckpt": "fp8"}, oracle.cp.rule_ids, []) is not None
    assert repairs == [{"gpu": "h100", "ckpt": "fp8"}]
