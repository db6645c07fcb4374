"""A pack's compiled conditions on disk (solver/pack/condcache.py): a later start reads them instead
of parsing and compiling, gets conditions that answer as freshly parsed ones do, compiles every
shape once (the first reading) and nothing after; a damaged or foreign file is a miss."""

from __future__ import annotations

import builtins
import itertools
import marshal
from pathlib import Path
from typing import Any

import pytest

from solver import load_pack, resolve
from solver.bounded import Lru
from solver.engine import csp
from solver.errors import pack_problems
from solver.pack import cache, codegen, condcache, loader
from solver.pack.crosscheck import parse_conditions

TOY = Path(__file__).parent / "fixtures" / "packs" / "toy"


@pytest.fixture
def fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("CONFSOLVE_NO_CACHE", raising=False)
    # A table of its own for the compiled packs (and the plans kept in them) `_forget` clears:
    # the process's own (what other tests made) are left as they were.
    monkeypatch.setattr(csp, "_COMPILED", Lru(csp._COMPILED.size))
    _forget()
    return tmp_path / "confsolve"


def _forget() -> None:
    """What a new process would not have: the in-memory packs, entries and conditions."""
    loader._CACHE.clear()
    loader._SEMANTICS.clear()
    cache._entries.clear()
    # Nor how often a shape was made or which were compiled: an earlier test loading the toy
    # pack would have compiled its shapes at once, and a first start writes them all.
    codegen._SEEN.clear()
    codegen._CODE.clear()
    # Nor the compiled packs and plans, kept by digest: a plan an earlier test made of the toy
    # pack holds the conditions of that test's reading, and a resolve here called those (some
    # not compiled yet: "the code came from the file" failed in full runs, by test order).
    csp._COMPILED.clear()  # (the plans are kept in the compiled packs' memos)


def _side_file(directory: Path) -> Path:
    (found,) = directory.glob(f"*{condcache.SUFFIX}")
    return found


def _compiles(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []

    def counting(source: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(source)
        return builtins.compile(source, *args, **kwargs)

    monkeypatch.setattr(codegen, "compile", counting, raising=False)
    return seen


@pytest.mark.parametrize("planned_before", [False, True])
def test_a_later_start_reads_conditions_that_answer_as_parsed_ones(
    fresh: Path, monkeypatch: pytest.MonkeyPatch, planned_before: bool
) -> None:
    if planned_before:
        # What an earlier test in the same process may leave: the toy pack's plan, made from a
        # reading without the disk cache and only partly called (its other shapes not compiled).
        with monkeypatch.context() as scoped:
            scoped.setenv("CONFSOLVE_NO_CACHE", "1")
            resolve(load_pack(TOY), {"kernel": "triton"}, {"gpu": "a100"})
        loader._CACHE.clear()
        loader._SEMANTICS.clear()
        cache._entries.clear()
    pack = load_pack(TOY)
    written = _side_file(fresh).read_bytes()
    parsed = parse_conditions(pack, pack_problems(pack.name))
    codegen._CODE.clear()
    compiled = _compiles(monkeypatch)
    _forget()
    again = load_pack(TOY)
    found = loader.semantics(again)  # the first reading: compiles every shape, writes them
    assert compiled and _side_file(fresh).read_bytes() != written
    for group, fresh_group in (
        (found.rules, parsed.rules),
        (found.whens, parsed.whens),
        (found.preferences, parsed.preferences),
    ):
        assert group.keys() == fresh_group.keys()
        for key, cond in group.items():
            other = fresh_group[key]
            if cond is None or other is None:
                assert cond is other
                continue
            assert (cond.text, cond.fields, cond.given) == (other.text, other.fields, other.given)
            assert cond.literals == other.literals  # every parse names a named set's literals
            for values in itertools.product(*(pack.fields[f].domain for f in cond.fields)):
                known = dict(zip(cond.fields, values, strict=True))
                assert cond.holds(values) is other.holds(values), (key, values)
                assert cond.partial(known) is other.partial(known), (key, values)
                for name in cond.fields[1:]:
                    known.pop(name)
                    assert cond.partial(known) is other.partial(known), (key, known)
    compiled.clear()
    _forget()
    codegen._CODE.clear()
    third = load_pack(TOY)
    assert resolve(third, {}, {"gpu": "h100"}, reasons=False) is not None
    assert not compiled  # the code came from the file


def test_a_damaged_or_foreign_side_file_is_a_miss(fresh: Path) -> None:
    pack = load_pack(TOY)
    side = _side_file(fresh)
    expected = {k: c.text for k, c in loader.semantics(pack).rules.items()}
    good = side.read_bytes()
    doc = marshal.loads(good)
    for damaged in (
        good[: len(good) // 2],  # cut short
        b"not marshal at all",
        marshal.dumps((doc[0], "0" * 64, doc[2])),  # another pack's
        marshal.dumps(("confsolve-conditions-0", *doc[1:])),  # another format
        marshal.dumps((doc[0], doc[1], ((("r", (1, 2, 3)),), (), ()))),  # a record not of its shape
    ):
        side.write_bytes(damaged)
        assert condcache.recall(pack.digest) is None
        _forget()
        again = load_pack(TOY)
        assert {k: c.text for k, c in loader.semantics(again).rules.items()} == expected


def test_a_pack_of_very_many_shapes_is_not_compiled_whole_at_a_start(
    fresh: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past `COMPILE_ALL_MAX` shapes the first reading leaves them to their first calls (and the
    file as it was): compiling all would cost a start more than what it calls."""
    load_pack(TOY)
    written = _side_file(fresh).read_bytes()
    _forget()
    monkeypatch.setattr(condcache, "COMPILE_ALL_MAX", 1)
    compiled = _compiles(monkeypatch)
    found = loader.semantics(load_pack(TOY))
    assert not compiled and _side_file(fresh).read_bytes() == written
    rule = next(iter(found.rules.values()))
    rule.holds(tuple(load_pack(TOY).fields[f].domain[0] for f in rule.fields))
    assert len(compiled) == 1  # compiled at its first call
