"""A request whose first search has just refuted it is not asked again before its adjustments
(`decide.apply_adjustments`'s `refuted`): the same answer, one search fewer (a refutation on the
SGLang pack: a failed repair, then the descent, ~0.2-0.6 ms). Failed on 487ea0a: the request's
own pins were asked twice (first_search, then apply_adjustments' first check)."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from solver import load_pack, resolve
from solver.engine.csp import CompiledPack

_CASE = Path(__file__).parent / "cases" / "sglang" / "a-m6-mxfp8-gfx950-aiter-adjusted.toml"


def test_an_adjusted_request_is_refuted_once(monkeypatch: pytest.MonkeyPatch) -> None:
    request = tomllib.loads(_CASE.read_text())["request"]
    pack = load_pack("sglang")
    before = resolve(pack, request["options"], request["facts"], reasons=False)
    assert [a.field for a in before.adjustments] == ["moe_runner_backend"]  # (an adjusted request)
    asked: list[dict[str, Any]] = []
    real = CompiledPack.satisfiable

    def recording(self: CompiledPack, pins: Any, **kwargs: Any) -> Any:
        asked.append(dict(pins))
        return real(self, pins, **kwargs)

    monkeypatch.setattr(CompiledPack, "satisfiable", recording)
    again = resolve(pack, request["options"], request["facts"], reasons=False)
    assert again.values == before.values and again.adjustments == before.adjustments
    typed = {**request["options"], **request["facts"]}
    assert typed not in asked  # (first_search refuted it already)
