"""The launcher's own picks of a searched answer (`departures.launcher_picks`) start from the
search's state with only the decisions after the agreed prefix taken back (`_agreed_prefix`): up
to the first option the search chooses whose launcher chain does not start with its value. A field
the search may not choose follows its chain in both modes, so it ends no prefix, even where the
rules leave it another value than its chain's first (HYV4's is_mla and is_dsa).

- law: over the SGLang case files, the picks from the prefix are those predict mode makes from
  the request's state with every decision taken back (no prefix);
- r18-hyv4's prefix runs past is_mla: failed on 0af9c80 (it stopped there, and predict mode
  decided ~60 fields again).
"""

from __future__ import annotations

import contextlib
import tomllib
from pathlib import Path
from typing import Any

import pytest

import solver.reasoning.departures as departures
from solver import load_pack, resolve
from solver.errors import Unsatisfiable
from solver.model import Pack

_ROOT = Path(__file__).resolve().parents[1]
_LAUNCHER_PICKS = departures.launcher_picks
_CASES = Path(__file__).parent / "cases" / "sglang"


@pytest.fixture(scope="module")
def sglang() -> Pack:
    return load_pack(_ROOT / "constraints" / "sglang")


def _request(stem: str) -> dict[str, Any]:
    return dict(tomllib.loads((_CASES / f"{stem}.toml").read_text())["request"])


def _picks(pack: Pack, request: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Each launcher pick made while resolving the request (search mode), as plain data."""
    made: list[Any] = []
    picks = _LAUNCHER_PICKS

    def recorded(*args: Any, **kwargs: Any) -> Any:
        found = picks(*args, **kwargs)
        made.append(
            ("agrees", dict(args[1].solution))  # (nothing departs: the picks are the answer)
            if found is None
            else (dict(found.predicted), found.failed.field if found.failed is not None else None)
        )
        return found

    monkeypatch.setattr(departures, "launcher_picks", recorded)
    import solver.reasoning.provenance as provenance

    monkeypatch.setattr(provenance, "launcher_picks", recorded)
    with contextlib.suppress(Unsatisfiable):
        resolve(
            pack, request.get("options", {}), request.get("facts", {}), strict=request.get("strict", False)
        )
    return made


def test_the_picks_from_the_prefix_are_those_made_from_no_prefix(
    sglang: Pack, monkeypatch: pytest.MonkeyPatch
) -> None:
    stems = sorted(p.stem for p in _CASES.glob("*.toml"))
    got = {stem: _picks(sglang, _request(stem), monkeypatch) for stem in stems}
    # No prefix: predict mode decides every field again (nothing departs only if each agrees).
    monkeypatch.setattr(departures, "_agreed_prefix", lambda plan, values, solution: 0)
    for stem in stems:
        again = _picks(sglang, _request(stem), monkeypatch)
        for first, second in zip(got[stem], again, strict=True):
            if first[0] == "agrees":  # predict mode from no prefix decides the answer itself
                assert second == (first[1], None), stem
            else:
                assert first == second, stem


def test_a_field_the_search_may_not_choose_ends_no_prefix(sglang: Pack) -> None:
    from solver.engine.opendomain import query_pack
    from solver.inputs.pins import collect_pins
    from solver.reasoning.plan import plan_for
    from solver.reasoning.provenance import _settled

    request = _request("r18-hyv4-dsa-sinks-default-flashmla-sparse")
    pins = collect_pins(sglang, request.get("options", {}), request.get("facts", {}))
    plan = plan_for(query_pack(sglang, pins))
    settled = _settled(plan, pins, strict=False, predict=False, witness=None)
    values = {n: p.value for n, p in settled.pins.items()}
    agreed = departures._agreed_prefix(plan, values, settled.solution)
    # is_mla: not given, a chain of its default (false), true by the architecture's rules.
    assert settled.solution["is_mla"] is True
    assert agreed > plan.position("is_mla")
