"""A repair that states a fact nobody gave (solver/reasoning/factrepairs.py) is verified by the
decisions of the request with the facts given, and only its values are read: no provenance of
every field is made for it (~0.4 of each 1.3-1.5 ms verification). Its values are the values
the request with those facts resolves to.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from solver.errors import Unsatisfiable
from solver.model import Repair
from solver.pack.loader import load_directory
from solver.reasoning import factrepairs, provenance
from solver.reasoning.resolution import resolve

ROOT = Path(__file__).resolve().parents[1]

# tests/cases/sglang/i13-mori-h100-chunk-over-budget-conflict.toml: MoRI's chunk over its budget
# on an H100, the model's hidden size assumed; one repair states it otherwise.
FACTS = {"platform": "cuda", "gpu_arch": "sm90", "architecture": "Qwen3MoeForCausalLM"}
OPTIONS = {"moe_a2a_backend": "mori", "tp_size": 4}


@pytest.mark.parametrize("predict", [False, True])
def test_fact_repairs_read_values_alone(monkeypatch: pytest.MonkeyPatch, predict: bool) -> None:
    pack = load_directory(ROOT / "constraints" / "sglang")
    made: list[Repair] = []
    asked: list[str] = []
    real_repairs, real_provenance = factrepairs.fact_repairs, provenance.provenance_of
    inside = [False]

    def repairs(*args: Any, **kwargs: Any) -> list[Repair]:
        inside[0] = True
        try:
            found = real_repairs(*args, **kwargs)
        finally:
            inside[0] = False
        made.extend(found)
        return found

    def provenance_of(*args: Any, **kwargs: Any) -> Any:
        if inside[0]:
            asked.append(args[1])
        return real_provenance(*args, **kwargs)

    monkeypatch.setattr(factrepairs, "fact_repairs", repairs)
    monkeypatch.setattr(provenance, "provenance_of", provenance_of)
    with pytest.raises(Unsatisfiable):
        resolve(pack, OPTIONS, FACTS, predict=predict)
    monkeypatch.undo()
    assert made, "no fact repair is offered here: the test says nothing"
    assert asked == []
    for fix in made:
        assert fix.values == resolve(pack, OPTIONS, {**FACTS, **fix.set}, predict=predict).values
