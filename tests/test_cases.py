"""Replay every scenario file under tests/cases/ (see tests/cases/README.md for the format)."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from solver import InvalidInput, Unsatisfiable, load_pack, resolve

CASES = Path(__file__).parent / "cases"
FILES = sorted(CASES.rglob("*.toml"))


def _pack_for(case: dict[str, Any], path: Path) -> Any:
    name = case.get("pack", "sglang")
    local = path.parent / name
    return load_pack(local if local.is_dir() else name)


@pytest.mark.parametrize("path", FILES, ids=[str(f.relative_to(CASES)) for f in FILES])
def test_case(path: Path) -> None:
    case = tomllib.loads(path.read_text())
    assert case.get("description") and case.get("source"), "a case says what it checks and why"
    pack = _pack_for(case, path)
    request = case["request"]
    expect = case["expect"]
    status = expect["status"]
    try:
        res = resolve(
            pack,
            request.get("options", {}),
            request.get("facts", {}),
            strict=request.get("strict", False),
            predict=request.get("predict", False),
        )
    except Unsatisfiable as exc:
        assert status == "conflict", f"expected {status}, got a conflict:\n{exc}"
        rules = {r.id for r in exc.conflict.rules}
        missing = set(expect.get("conflict_rules", [])) - rules
        assert not missing, f"conflict lacks rules {missing}; it names {sorted(rules)}"
        if "conflict_pins" in expect:
            assert sorted(p.field for p in exc.conflict.pins) == sorted(expect["conflict_pins"])
        assert exc.repairs or expect.get("no_repairs"), "a conflict offers repairs"
        return
    except InvalidInput as exc:
        assert status == "invalid", f"expected {status}, got invalid input:\n{exc}"
        named = {issue.field for issue in exc.issues}
        assert set(expect.get("invalid_fields", [])) <= named
        return
    assert status == "resolved", f"expected {status}, but it resolved"
    for name, value in expect.get("values", {}).items():
        assert res.values[name] == value, (
            f"{name}: expected {value!r}, resolved {res.values[name]!r} "
            f"({res.provenance[name].kind} {res.provenance[name].rule})"
        )
    for name, kind in expect.get("provenance", {}).items():
        assert res.provenance[name].kind == kind, f"{name}: {res.provenance[name]}"
    for name, rule in expect.get("rules", {}).items():
        assert res.provenance[name].rule == rule, f"{name}: {res.provenance[name]}"
    if "adjusted" in expect:
        assert sorted(a.field for a in res.adjustments) == sorted(expect["adjusted"])
    fired = {w.rule for w in res.warnings}
    missing = set(expect.get("warnings", [])) - fired
    assert not missing, f"warnings {missing} did not fire; fired: {sorted(fired)}"
