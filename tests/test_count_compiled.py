"""Laws of the compiled count (`solver.engine.ddnnf`): the diagram counter's search of a whole pack
written down once, then any count under pins answered by a pass that gives the excluded values
weight 0. Its counts equal brute force under any pins and splits (fields sharing one domain,
sparse packs, generated packs), read back from its bytes too; a file that is not one it wrote is
a miss, never a count; and `count` (search first, compile past `SEARCH_FIRST` steps, then passes;
bounds when the compile cannot finish) gives the oracle's numbers on either path."""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from generated import Oracle, packs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_count_diagrams import NAMES, SHARED, WIDE, shared_domain_checks, sparse_checks

from solver.engine import count as count_module
from solver.engine.count import CountLimitReached, Limit, count
from solver.engine.ddnnf import CompiledCount, compile_count
from solver.engine.diagrams import DiagramCounter
from solver.pack.expr import Condition

FEW = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


def models(names: Sequence[str], checks: list[Condition]) -> list[dict[str, int]]:
    """Every assignment of `names` over SHARED that satisfies every check (brute force)."""
    rows = (dict(zip(names, row, strict=True)) for row in itertools.product(SHARED, repeat=len(names)))
    return [r for r in rows if all(c.holds([r[f] for f in c.fields]) for c in checks)]


def brute(found: list[dict[str, int]], pins: Mapping[str, Any]) -> int:
    return sum(1 for r in found if all(r[n] == v for n, v in pins.items()))


def every_query(names: Sequence[str]) -> list[dict[str, int]]:
    """No pin, each single pin, and a few pairs and triples (as `--by` passes ask)."""
    singles = [{n: v} for n in names for v in SHARED]
    pairs = [{a: u, b: v} for a, b in itertools.combinations(names, 2) for u in SHARED for v in SHARED]
    return [{}, *singles, *pairs[::5], {names[0]: 1, names[1]: 2, names[-1]: 0}]


def compiled_both_ways(names: Sequence[str], checks: list[Condition]) -> tuple[CompiledCount, CompiledCount]:
    """The compiled count in memory, and the same read back from its bytes."""
    compiled = compile_count(DiagramCounter(dict.fromkeys(names, SHARED), checks))
    return compiled, CompiledCount.from_bytes(compiled.to_bytes())


@pytest.mark.property
@FEW
@given(checks=shared_domain_checks())
def test_compiled_counts_equal_brute_force_where_fields_share_a_domain(checks: list[Condition]) -> None:
    """Compiled once with no pin, the pass under any pins gives the brute-force count (the
    three-valued fields share a domain, so a key that confused two fields would show), and
    the split by any field (one pass down) each value's."""
    domains, found = dict.fromkeys(NAMES, SHARED), models(NAMES, checks)
    for compiled in compiled_both_ways(NAMES, checks):
        for pins in every_query(NAMES):
            assert compiled.count(domains, pins)[0] == brute(found, pins), pins
        splits_equal_brute_force(compiled, NAMES, found)


def splits_equal_brute_force(
    compiled: CompiledCount, names: Sequence[str], found: list[dict[str, int]]
) -> None:
    """`split` by every field, under no pin and under one pin on each other field (or the same
    field), gives each value's brute-force count."""
    domains = dict.fromkeys(names, SHARED)
    for by in names:
        for pins in [{}, *({n: 1} for n in names)]:
            parts, _ = compiled.split(domains, pins, by)
            kept = [v for v in SHARED if pins.get(by, v) == v]
            assert parts == [brute(found, {**pins, by: v}) if v in kept else 0 for v in SHARED]


@pytest.mark.property
@FEW
@given(checks=sparse_checks())
def test_compiled_counts_equal_brute_force_on_sparse_packs(checks: list[Condition]) -> None:
    """On sparse packs of six fields (components that fall apart after a branch, parts counted
    once for several values, one- and two-field parts kept as value masks, free fields), every
    pin the pass weighs gives the brute-force count, and every split its values' counts."""
    domains, found = dict.fromkeys(WIDE, SHARED), models(WIDE, checks)
    for compiled in compiled_both_ways(WIDE, checks):
        for pins in every_query(WIDE):
            assert compiled.count(domains, pins)[0] == brute(found, pins), pins
        splits_equal_brute_force(compiled, WIDE, found)


@pytest.mark.property
@FEW
@given(spec=packs(), data=st.data())
def test_count_through_the_compiled_form_equals_the_oracle(spec, data) -> None:  # type: ignore[no-untyped-def]
    """With `SEARCH_FIRST` at one step every count of a generated pack compiles it and answers
    by a pass (the next one from the kept form): totals under up to three pins and a split by
    any field are the oracle's, and a step limit the compile cannot finish in gives bounds that
    hold the exact count."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(count_module, "SEARCH_FIRST", 1)
        patch.setattr(count_module, "_COMPILED", type(count_module._COMPILED)(8))
        patch.setenv("CONFSOLVE_NO_CACHE", "1")
        through_the_compiled_form(spec, data)


def through_the_compiled_form(spec, data) -> None:  # type: ignore[no-untyped-def]
    oracle = Oracle(spec)
    names = list(oracle.domains)
    steps = data.draw(st.integers(2, 30))
    exact = sum(1 for _ in oracle.solutions({}))
    try:
        assert count(spec.pack, {}, limit=Limit(steps=steps)).count == exact
    except CountLimitReached as stop:
        assert stop.upper is not None and stop.lower <= exact <= stop.upper
    chosen = data.draw(st.lists(st.sampled_from(names), unique=True, max_size=3))
    pins = {n: data.draw(st.sampled_from(oracle.domains[n])) for n in chosen}
    by = data.draw(st.sampled_from(names))
    for _ in range(2):  # compiled by the first, kept for the second
        assert count(spec.pack, pins).count == sum(1 for _ in oracle.solutions(pins))
        split = count(spec.pack, pins, by=by)
        assert split.by == {
            v: sum(1 for _ in oracle.solutions({**pins, by: v}))
            for v in oracle.domains[by]
            if by not in pins or pins[by] == v
        }


TOY = str(Path(__file__).parent / "fixtures" / "packs" / "toy")


def test_the_compiled_count_is_kept_on_disk_and_a_bad_file_is_a_miss(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A count past `SEARCH_FIRST` writes the compiled form next to the pack cache; a process
    without it in memory reads it and answers with a pass (no search step); a file altered
    (a record not of numbers, or with a negative number, one short, cut short, not zlib) is never a
    wrong count: refused when read (the search answers), or the altered part not needed."""
    from solver import load_pack

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("CONFSOLVE_NO_CACHE", raising=False)
    monkeypatch.setattr(count_module, "SEARCH_FIRST", 1)
    monkeypatch.setattr(count_module, "_COMPILED", type(count_module._COMPILED)(8))
    pack = load_pack(TOY)
    pins = {"quant": "fp8"}
    expected = count(pack, pins, by="gpu")
    (written,) = (tmp_path / "confsolve").glob("*.count")
    count_module._COMPILED.clear()
    with pytest.MonkeyPatch.context() as patch:  # neither a search nor a compile may answer

        def refuse(*args: object, **kwargs: object) -> None:
            raise AssertionError("searched")

        patch.setattr(DiagramCounter, "count", refuse)
        patch.setattr(count_module, "compile_count", refuse)
        patch.setattr(count_module, "QUICK_SEARCH", 0)
        assert count(pack, pins, by="gpu").by == expected.by
    good = written.read_bytes()
    text = zlib.decompress(good)
    lines = text.split(b"\n")
    altered = [
        zlib.compress(b"\n".join([*lines[:2], b"0 1 0 0 zz", *lines[3:]])),  # a record not of numbers
        zlib.compress(b"\n".join(lines[:-2]) + b"\n"),  # a record short
        zlib.compress(b"\n".join([*lines[:2], b"0 -1 5 0", *lines[3:]])),  # a negative number
        good[: len(good) // 2],  # cut short
        b"not zlib at all",
    ]
    for data in altered:
        written.write_bytes(data)
        count_module._COMPILED.clear()
        monkeypatch.setattr(count_module, "SEARCH_FIRST", 10**9)  # the search answers alone
        assert count(pack, pins, by="gpu").by == expected.by
        monkeypatch.setattr(count_module, "SEARCH_FIRST", 1)
    # Written for another pack (a file name holds only the start of a digest): never read.
    written.write_bytes(zlib.compress(text.replace(pack.digest.encode(), b"0" * len(pack.digest), 1)))
    count_module._COMPILED.clear()
    assert count_module._compiled(pack) is None
    written.write_bytes(good)
    assert count_module._compiled(pack) is not None


def test_a_record_pointing_forward_is_refused() -> None:
    """A child must be finished before its parent (what keeps a pass from looping): a record
    naming a later node is refused when read."""
    checks = [
        Condition.over(("a", "b"), lambda v: v[0] != v[1]),
        Condition.over(("b", "c"), lambda v: v[0] <= v[1]),
    ]
    compiled = compile_count(DiagramCounter(dict.fromkeys("abc", SHARED), checks))
    lines = compiled.to_bytes().split(b"\n")
    first = lines[2].split()
    level, reads, total, _, mask, free = first[:6]
    forward = b" ".join([level, reads, total, b"1", mask, free, b"1", b"99", b"0"])
    loaded = CompiledCount.from_bytes(b"\n".join([*lines[:2], forward, *lines[3:]]))
    with pytest.raises(ValueError, match="child"):
        loaded.records[0]
