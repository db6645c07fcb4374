"""A searched answer that departs to a value a rule refuses typed is decided again with that value
skipped (`provenance._typable`), at most `_RETRIES` times, keeping the first answer when every
decision again is refused too. Where each would be (the one departure is the field whose launcher
chain fails, and a rule refuses any typed value of it given the pins and the fields decided before
it: `_refused_again`), no decision again is made.

- on the SGLang case files (search mode, every refusal's repairs verified the same way), the
  answers with the retries skipped are those with every retry made;
- r23-megamoe-awq-marlin (AWQ Marlin MoE experts assert an untyped runner; the launcher's Marlin
  runner has no MegaMoE all-to-all) is decided once, where it was decided five times (four
  retries, ~1 ms each). Failed on 0af9c80 (five decisions).
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

import solver.reasoning.provenance as provenance
from solver import load_pack, resolve
from solver.errors import Unsatisfiable
from solver.model import Pack

_ROOT = Path(__file__).resolve().parents[1]
_CASES = Path(__file__).parent / "cases" / "sglang"


@pytest.fixture(scope="module")
def sglang() -> Pack:
    return load_pack(_ROOT / "constraints" / "sglang")


def _request(stem: str) -> dict[str, Any]:
    return dict(tomllib.loads((_CASES / f"{stem}.toml").read_text())["request"])


def _answer(pack: Pack, request: dict[str, Any]) -> Any:
    try:
        return resolve(
            pack, request.get("options", {}), request.get("facts", {}), strict=request.get("strict", False)
        ).model_dump(mode="json")
    except Unsatisfiable as exc:
        return ["unsatisfiable", str(exc)]


def test_a_request_no_command_can_type_is_decided_once(sglang: Pack, monkeypatch: pytest.MonkeyPatch) -> None:
    request = _request("r23-megamoe-awq-marlin-conflict")
    settled = provenance._settled
    calls: list[int] = []

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return settled(*args, **kwargs)

    monkeypatch.setattr(provenance, "_settled", counted)
    got = resolve(sglang, request["options"], request["facts"], strict=request.get("strict", False))
    assert len(calls) == 1
    # The answer kept is the first: the departure no command gives, which the writer says.
    assert [d.field for d in got.departures] == ["moe_runner_backend"]


def test_skipped_retries_answer_as_every_retry(sglang: Pack, monkeypatch: pytest.MonkeyPatch) -> None:
    skipping = provenance._refused_again
    fired: list[str] = []
    answers: dict[str, Any] = {}
    stems = sorted(p.stem for p in _CASES.glob("*.toml"))
    for stem in stems:
        before = len(fired)

        def recorded(*args: Any, **kwargs: Any) -> bool:
            found = skipping(*args, **kwargs)
            if found:
                fired.append(stem)  # noqa: B023 - read within this iteration
            return found

        monkeypatch.setattr(provenance, "_refused_again", recorded)
        answer = _answer(sglang, _request(stem))
        if len(fired) > before:
            answers[stem] = answer
    assert "r23-megamoe-awq-marlin-conflict" in answers
    monkeypatch.setattr(provenance, "_refused_again", lambda *args, **kwargs: False)
    for stem, answer in answers.items():
        assert _answer(sglang, _request(stem)) == answer, stem
