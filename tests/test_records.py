"""Records built from well-typed pack data without pydantic (`Record.model_validate`'s exact-type
path) are the records pydantic builds from the same data, and whatever pydantic refuses or would
convert goes to pydantic."""

from __future__ import annotations

import random
from typing import Any

import pytest

import solver
from solver.model import Field, Launcher, OpenRange, Preference, Record, RecordInvalid, Rule
from solver.records import _exact_record
from solver.validation import validate

_JUNK: list[Any] = [None, True, False, 0, 1, -3, 2.0, 1.5, "", "x", "fact", "value", []]
_JUNK += [[1, "a"], [True], ["a", "b"], {}, {"a": "b"}, {"a": 1}, {"min": 1}, {"min": True}, (1, 2), b"x"]


def _samples() -> list[tuple[type[Record], dict[str, Any]]]:
    out: list[tuple[type[Record], dict[str, Any]]] = []
    for name in ("sglang", "vllm"):
        pack = solver.load_pack(name)
        out += [(Field, f.model_dump(mode="json")) for f in pack.fields.values()]
        out += [(Rule, r.model_dump(mode="json")) for r in pack.rules]
        out += [(Preference, p.model_dump(mode="json")) for p in pack.preferences]
        if pack.launcher is not None:
            out.append((Launcher, pack.launcher.model_dump(mode="json")))
    out.append((OpenRange, {"min": 2, "max": None}))
    return out


def _by_pydantic(cls: type[Record], data: Any) -> Record | None:
    try:
        return validate(cls, data)
    except RecordInvalid:
        return None


def test_shipped_packs_build_the_same_records_without_pydantic() -> None:
    samples = _samples()
    assert len(samples) > 500
    for cls, data in samples:
        fast = _exact_record(cls, data)
        assert fast is not None, (cls.__name__, data)
        assert fast == _by_pydantic(cls, data)


@pytest.mark.property
def test_damaged_records_are_left_to_pydantic_or_built_the_same() -> None:
    rng = random.Random(18)
    samples = _samples()
    for _ in range(3000):
        cls, data = rng.choice(samples)
        data = dict(data)
        for _ in range(rng.randint(1, 3)):
            action = rng.random()
            if action < 0.15 and data:
                del data[rng.choice(sorted(data))]
            elif action < 0.25:
                data[rng.choice(["extra", "nmae", "min"])] = rng.choice(_JUNK)
            else:
                data[rng.choice(sorted(data) or ["id"])] = rng.choice(_JUNK)
        fast = _exact_record(cls, data)
        if fast is not None:
            assert fast == _by_pydantic(cls, data), (cls.__name__, data)
